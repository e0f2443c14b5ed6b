/*
 * codec.c - -o codec=PROG: the view of a value is what `PROG decode`
 * writes given the raw value, and a save stores what `PROG encode` makes
 * of the edited text (etcd-io/auger's calling convention)
 *
 * Which keys: every key of the mount, or those under -o codec_prefix=
 * (fs->cfg.codec_prefix, relative to the mount's prefix).
 *
 * Reading: an open of such a key (file.c) gives the handle the view of
 * the revision it read, decoded once per revision and kept with the value
 * in the mirror (tree.h's struct node_view: counted against the value
 * budget, dropped with the value).  The program runs without fs->lock
 * held and is killed after the request timeout, so a hung codec delays
 * that open alone.  Where it fails (non-zero exit, killed, more than
 * CODEC_VIEW_MAX bytes), the raw value is shown, and that is logged once
 * per key.  Such handles read around the kernel's pages (direct_io),
 * since st_size is not the view's until the view is known: stat, ls and
 * find never run the program, and show the raw size until an open of the
 * revision decoded it, then the view's (codec_fill_attr; the kernel's
 * attributes are dropped when that changes the size).
 *
 * Saving: every value committed to such a key (commit.c's fs_commit_value:
 * a close, a rename of a temp file over it, a truncation, a new file) is
 * the encoding of what was written; where `PROG encode` fails, the save
 * fails with EINVAL, nothing is sent, and its standard error is logged.
 * The encoded value then goes through the same compare-and-swap on the
 * revision the text was read at as any save.
 *
 * What it cannot do: map a decoded file shared (direct_io: ENODEV), or
 * save a raw value the codec refuses (a key shown raw is read-only in
 * effect unless `PROG encode` accepts its bytes).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "fs_i.h"
#include "k8s_codec.h"

bool codec_key(struct fs *fs, const char *key, size_t key_len)
{
	const char *p = fs->cfg.codec_prefix ? fs->cfg.codec_prefix : "";
	size_t plen = strlen(p);

	return (fs->cfg.codec || fs->cfg.k8s) && key && key_len >= plen &&
	       (!plen || memcmp(key, p, plen) == 0);
}

/* A copy of @key for a message; NULL when out of memory. */
static char *key_dup(const char *key, size_t len)
{
	char *k = malloc(len + 1);

	if (k) {
		memcpy(k, key, len);
		k[len] = '\0';
	}
	return k;
}

/*
 * Why the program failed, for a message: its exit, then the start of its
 * standard error on one line.
 */
static void why_failed(const struct codec_result *r, int ret, char *buf,
		       size_t size)
{
	const char *e = r->err.data ? r->err.data : "";
	size_t i, n;
	int at;

	if (ret == -ETIMEDOUT)
		at = snprintf(buf, size, "killed after the request timeout");
	else if (ret == -EFBIG)
		at = snprintf(buf, size, "killed: its output is too large");
	else if (ret == -ECHILD && r->status > 128)
		at = snprintf(buf, size, "killed by signal %d",
			      r->status - 128);
	else if (ret == -ECHILD)
		at = snprintf(buf, size, "exit status %d", r->status);
	else
		at = snprintf(buf, size, "cannot run it: %s", strerror(-ret));
	if (at < 0 || (size_t)at >= size || !*e)
		return;
	n = (size_t)at;
	for (i = 0; e[i] && n + 4 < size; i++) {
		if (i == 0) {
			memcpy(buf + n, ": ", 2);
			n += 2;
		}
		/* one line in the log, whatever it wrote */
		buf[n++] = (unsigned char)e[i] < ' ' ? ' ' : e[i];
	}
	while (n > (size_t)at && buf[n - 1] == ' ')
		n--;
	buf[n] = '\0';
}

/*
 * -o k8s: the view of @raw (@len bytes) by the codec built in, as
 * codec_run() gives a program's: 0 with it in @r->out, -ENODATA for a
 * value that is no protobuf object (JSON, encrypted: shown as it is),
 * else the codec's error with its message in @why.
 */
static int k8s_view(struct fs *fs, const char *raw, size_t len,
		    struct codec_result *r, char *why, size_t why_size)
{
	struct k8s_error err;
	int ret;

	memset(r, 0, sizeof(*r));
	if (!k8s_is_object(raw, len))
		return -ENODATA;
	ret = k8s_decode(raw, len,
			 fs->cfg.k8s_yaml ? K8S_FORMAT_YAML : K8S_FORMAT_JSON,
			 &r->out.data, &r->out.len, &err);
	if (ret == 0 && r->out.len > CODEC_VIEW_MAX) {
		snprintf(why, why_size, "its text is over %u bytes",
			 CODEC_VIEW_MAX);
		return -EFBIG;
	}
	if (ret)
		snprintf(why, why_size, "%s", err.message);
	else
		r->out.cap = r->out.len + 1;
	return ret;
}

/*
 * -o k8s: what to store for @text, a save of @key read at revision
 * @base.  The value it replaces (etcd's now: if it is no longer the one
 * at @base, the save's compare-and-swap fails anyway) says how: no
 * protobuf object, or one shown raw, takes the text as it is; an object
 * takes its encoding, which keeps its kind and refuses to drop fields
 * this build does not know.  A new key is encoded where the text is an
 * object of a kind built in, else stored as it is.
 */
static int k8s_save(struct fs *fs, const char *key, size_t key_len,
		    int64_t base, const char *text, size_t len, char **out,
		    size_t *out_len, char *why, size_t why_size)
{
	enum k8s_format fmt = fs->cfg.k8s_yaml ? K8S_FORMAT_YAML :
						 K8S_FORMAT_JSON;
	struct store_kv kv = { 0 };
	struct store_error serr;
	struct k8s_error err;
	char *view = NULL;
	size_t view_len;
	void *enc;
	size_t enc_len;
	bool as_is = false, have = false;
	int ret;

	if (base > 0) {
		ret = store_get(fs->store, key, key_len,
				fs->cfg.quorum ? STORE_READ_QUORUM : 0, &kv,
				&serr);
		if (ret && ret != STORE_ENOTFOUND)
			return fs_errno(ret);
		have = ret == 0;
	}
	if (have && (!k8s_is_object(kv.value, kv.value_len) ||
		     k8s_decode(kv.value, kv.value_len, fmt, &view, &view_len,
				&err) != 0))
		as_is = true;	/* its view was the raw value */
	free(view);
	if (!as_is) {
		ret = k8s_encode(text, len, fmt, have ? kv.value : NULL,
				 have ? kv.value_len : 0, &enc, &enc_len, &err);
		if (ret == 0) {
			*out = enc;
			*out_len = enc_len;
		} else if (have) {
			snprintf(why, why_size, "%s", err.message);
			store_kv_release(&kv);
			return ret == -EPROTONOSUPPORT ? ret : -EINVAL;
		} else {
			as_is = true;
		}
	}
	store_kv_release(&kv);
	if (as_is) {
		*out = malloc(len + 1);
		if (!*out)
			return -ENOMEM;
		memcpy(*out, text, len);
		(*out)[len] = '\0';
		*out_len = len;
	}
	return 0;
}

/*
 * Makes @h's copy (of revision h->base) the view: the node's if it has
 * it, else the program's, kept with the value if the node still has that
 * revision.  @h->lock held (a truncation by path may look for the
 * opener's writer before the open is answered: fs_truncate_path).
 */
static int view_open(struct fs *fs, struct handle *h, fuse_ino_t ino)
{
	struct node *n = h->node;
	const struct node_view *v;
	struct codec_result r;
	struct node_view *nv = NULL;
	char why[CODEC_STDERR_MAX + 128], *key, *buf;
	size_t len;
	bool inval = false, log_it = false;
	int64_t base;
	int ret;

	pthread_mutex_lock(&fs->lock);
	/* a rename may change h->base meanwhile (node_writers_moved) */
	base = h->base;
	if (base <= 0) {
		/* a new file, not in etcd yet: nothing to decode */
		pthread_mutex_unlock(&fs->lock);
		return 0;
	}
	v = node_view(n);
	if (v && v->rev == base) {
		buf = v->raw ? NULL : malloc(v->len + 1);
		if (!v->raw && !buf) {
			pthread_mutex_unlock(&fs->lock);
			return -ENOMEM;
		}
		if (buf) {
			memcpy(buf, v->data, v->len + 1);
			free(h->buf);
			h->buf = buf;
			h->len = v->len;
			h->cap = v->len + 1;
		}
		pthread_mutex_unlock(&fs->lock);
		return 0;
	}
	key = key_dup(n->key, n->key_len);
	pthread_mutex_unlock(&fs->lock);
	if (!key)
		return -ENOMEM;

	if (fs->cfg.k8s)
		ret = k8s_view(fs, h->buf, h->len, &r, why, sizeof(why));
	else
		ret = codec_run(fs->cfg.codec, "decode", h->buf, h->len,
				fs->cfg.request_timeout_ms, CODEC_VIEW_MAX,
				&r);
	len = ret ? 0 : r.out.len;
	nv = malloc(sizeof(*nv) + len + 1);
	if (!nv) {
		codec_result_release(&r);
		free(key);
		return -ENOMEM;
	}
	nv->rev = base;
	nv->raw = ret != 0;
	nv->len = len;
	if (len)
		memcpy(nv->data, r.out.data, len);
	nv->data[len] = '\0';
	if (!ret) {
		/* the program's output is the copy now */
		buf = r.out.data ? r.out.data : calloc(1, 1);
		if (!buf) {
			free(nv);
			free(key);
			return -ENOMEM;
		}
		r.out.data = NULL;
		free(h->buf);
		h->buf = buf;
		h->len = len;
		h->cap = len + 1;
	} else if (!fs->cfg.k8s) {
		why_failed(&r, ret, why, sizeof(why));
	}
	codec_result_release(&r);

	pthread_mutex_lock(&fs->lock);
	/* -o k8s: a value that is no protobuf object is no failure */
	if (ret && ret != -ENODATA && node_rare(n) &&
	    !n->rare->codec_logged) {
		n->rare->codec_logged = true;
		log_it = true;
	}
	/*
	 * kept only for the program's own verdict: a timeout or a failure
	 * to start it (EMFILE, EAGAIN, ENOMEM) shows raw for this open alone
	 */
	if (n->value && !n->removed && !n->local &&
	    n->mod_revision == nv->rev &&
	    (!ret || ret == -ECHILD || ret == -EFBIG || fs->cfg.k8s)) {
		/* stat shows the view's size from now on */
		inval = !nv->raw && nv->len != n->size && n->nlookup;
		node_set_view(&fs->tree, n, nv);
	} else {
		free(nv);
	}
	pthread_mutex_unlock(&fs->lock);
	if (log_it && fs->cfg.k8s)
		fuse_log(FUSE_LOG_WARNING, "etcdfs: '%s' shown raw: %s\n", key,
			 why);
	else if (log_it)
		fuse_log(FUSE_LOG_WARNING, "etcdfs: '%s' shown raw: '%s decode' "
			 "failed (%s)\n", key, fs->cfg.codec, why);
	free(key);
	if (inval)
		fs_notify_inval_inode(fs, ino, -1, 0);
	return 0;
}

int codec_view_open(struct fs *fs, struct handle *h, fuse_ino_t ino)
{
	int ret;

	pthread_mutex_lock(&h->lock);
	ret = view_open(fs, h, ino);
	pthread_mutex_unlock(&h->lock);
	return ret;
}

int codec_encode(struct fs *fs, const char *key, size_t key_len,
		 int64_t base, const char *text, size_t len, char **out,
		 size_t *out_len)
{
	char why[CODEC_STDERR_MAX + 128], *k;
	size_t max = store_max_value_size(fs->store);
	struct codec_result r;
	int ret;

	if (fs->cfg.k8s) {
		why[0] = '\0';
		ret = k8s_save(fs, key, key_len, base, text, len, out, out_len,
			       why, sizeof(why));
		if (ret == -EINVAL || ret == -EPROTONOSUPPORT) {
			k = key_dup(key, key_len);
			fuse_log(FUSE_LOG_ERR, "etcdfs: '%s' not saved: %s\n",
				 k ? k : "?", why);
			free(k);
		}
		return ret;
	}

	ret = codec_run(fs->cfg.codec, "encode", text, len,
			fs->cfg.request_timeout_ms, max, &r);
	if (!ret) {
		*out = r.out.data ? r.out.data : calloc(1, 1);
		*out_len = r.out.len;
		r.out.data = NULL;
		codec_result_release(&r);
		return *out ? 0 : -ENOMEM;
	}
	why_failed(&r, ret, why, sizeof(why));
	codec_result_release(&r);
	k = key_dup(key, key_len);
	fuse_log(FUSE_LOG_ERR, "etcdfs: '%s' not saved: '%s encode' failed "
		 "(%s)\n", k ? k : "?", fs->cfg.codec, why);
	free(k);
	/* an encoding past the cluster's limit is what a write would get */
	return ret == -EFBIG ? -EFBIG : -EINVAL;
}

void codec_fill_attr(const struct node *n, struct stat *st)
{
	const struct node_view *v = node_view(n);

	if (v && !v->raw) {
		st->st_size = (off_t)v->len;
		st->st_blocks = (st->st_size + 511) / 512;
	}
}

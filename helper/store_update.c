/*
 * store_update.c - the store's writes: create, delete with preconditions,
 * the guaranteed update, rename (helper/store.h)
 *
 * The guaranteed update is the Kubernetes etcd helper's GuaranteedUpdate:
 * read the key (or take the caller's suggestion), let the caller compute
 * the new value, compare-and-swap on mod_revision, and on a lost race go
 * again from the state the failed transaction returned.  It is split into
 * its read (update_read), one attempt (update_attempt) and the retry loop
 * (store_guaranteed_update).  Every request that writes goes through
 * store_settle.c, which finds out what became of a write whose answer was
 * lost.
 *
 * What it cannot do: multi-key transactions other than the rename.
 */
#include <stdlib.h>
#include <string.h>

#include "store_i.h"
#include "store_settle.h"

/* EINVAL unless @pre is made of revisions, STORE_REV_ABSENT or 0. */
static bool store_pre_ok(const struct store_preconditions *pre)
{
	return !pre || ((pre->mod_revision >= 0 ||
			 pre->mod_revision == STORE_REV_ABSENT) &&
			pre->create_revision >= 0);
}

/* True if @pre holds for @cur (NULL: the key is absent). */
static bool store_pre_holds(const struct store_preconditions *pre,
			    const struct store_kv *cur)
{
	if (!pre)
		return true;
	if (pre->mod_revision == STORE_REV_ABSENT)
		return !cur;
	if (pre->mod_revision > 0 &&
	    (!cur || cur->mod_revision != pre->mod_revision))
		return false;
	if (pre->create_revision > 0 &&
	    (!cur || cur->create_revision != pre->create_revision))
		return false;
	return true;
}

/* Counts a write refused because the key changed (store_stats). */
static int store_conflict_rc(struct store *s, int rc)
{
	if (rc == STORE_EPRECONDITION || rc == STORE_ECONFLICT)
		store_note_conflict(s);
	return rc;
}

int store_create(struct store *s, const char *key, size_t key_len,
		 const char *value, size_t value_len, int64_t lease,
		 int64_t *rev, struct store_error *err)
{
	struct store_settle st;
	struct store_kv cur = { 0 };
	char *full;
	size_t full_len;
	int64_t newrev = 0;
	int rc;

	store_refresh_maybe(s);
	full = store_full_key(s, key, key_len, &full_len);
	if (!full)
		return store_enomem(err, key, key_len);
	if (full_len == 0) {
		rc = store_fail(err, STORE_EINVAL, NULL, 0, 0, "empty key");
		goto out;
	}
	if (value_len > s->cfg.max_value_size) {
		rc = store_fail_too_large(err, full, full_len, value_len,
					  s->cfg.max_value_size);
		goto out;
	}
	if (lease < 0) {
		rc = store_fail(err, STORE_EINVAL, full, full_len, 0,
				"bad lease %lld", (long long)lease);
		goto out;
	}
	store_settle_lock(s, &st, full, full_len);
	rc = store_settle_cas(&st, full, full_len, 0, value ? value : "",
			      value_len, lease, NULL, &newrev, &cur, err);
	store_settle_unlock(&st, rc == 0 ? newrev : 0);
	if (rc == STORE_EPRECONDITION)
		rc = store_fail(err, STORE_EEXISTS, full, full_len,
				cur.mod_revision, "key exists");
	else if (rc == 0 && rev)
		*rev = newrev;
	store_kv_release(&cur);
out:
	free(full);
	return rc;
}

int store_delete(struct store *s, const char *key, size_t key_len,
		 const struct store_preconditions *pre, struct store_kv *prev,
		 int64_t *rev, struct store_error *err)
{
	struct store_settle st;
	struct store_kv tmp = { 0 };
	int64_t expect_mod = -1, expect_create = 0, newrev = 0;
	char *full;
	size_t full_len;
	int rc;

	store_refresh_maybe(s);
	if (prev)
		memset(prev, 0, sizeof(*prev));
	full = store_full_key(s, key, key_len, &full_len);
	if (!full)
		return store_enomem(err, key, key_len);
	if (full_len == 0) {
		rc = store_fail(err, STORE_EINVAL, NULL, 0, 0, "empty key");
		goto out;
	}
	if (!store_pre_ok(pre) ||
	    (pre && pre->mod_revision == STORE_REV_ABSENT)) {
		rc = store_fail(err, STORE_EINVAL, full, full_len, 0,
				"bad precondition for a delete");
		goto out;
	}
	if (pre && pre->mod_revision > 0)
		expect_mod = pre->mod_revision;
	if (pre)
		expect_create = pre->create_revision;
	store_settle_lock(s, &st, full, full_len);
	rc = store_settle_del(&st, full, full_len, expect_mod, expect_create,
			      &tmp, &newrev, err);
	store_settle_unlock(&st, rc == 0 ? newrev : 0);
	if (rc == 0 || rc == STORE_EPRECONDITION) {
		if (tmp.key && !store_strip(s, &tmp))
			store_kv_release(&tmp);
		if (rc == STORE_EPRECONDITION && err)
			err->revision = tmp.mod_revision;
		if (prev) {
			*prev = tmp;
			memset(&tmp, 0, sizeof(tmp));
		}
	}
	if (rc == 0 && rev)
		*rev = newrev;
	store_kv_release(&tmp);
out:
	free(full);
	return store_conflict_rc(s, rc);
}

/* One guaranteed update, from its read to its last attempt. */
struct update {
	struct store *s;
	const char *key;
	size_t key_len;
	char *full;
	size_t full_len;
	bool ignore_not_found;
	const struct store_preconditions *pre;
	store_try_update_fn try_update;
	void *arg;
	struct store_kv *out;
	struct store_error *err;

	struct store_kv cur;	/* the state the next attempt is based on */
	bool exists;		/* cur is a key (else: absent) */
	bool current;		/* cur was read, not suggested */
	int attempts;
};

/* update_attempt's verdicts, beside 0 and a negative enum store_err */
#define UPDATE_AGAIN	1

/*
 * Reads the key's current state into u->cur, linearizably: an update that
 * finds the value it would write already there returns 0 without writing,
 * which only a read of the cluster's latest state may decide (a member's
 * own serializable answer can be behind another client's commit).
 */
static int update_read(struct update *u)
{
	store_kv_release(&u->cur);
	u->current = true;
	return store_read(u->s, u->full, u->full_len, STORE_READ_QUORUM,
			  &u->cur, &u->exists, u->err);
}

/* The caller's suggestion as u->cur, or a read if there is none. */
static int update_start(struct update *u,
			const struct store_kv *suggestion)
{
	if (!suggestion)
		return update_read(u);
	u->exists = suggestion->mod_revision > 0;
	u->current = false;
	if (!u->exists)
		return 0;
	/* Checked by the transaction's compare like any state. */
	if (store_kv_copy(&u->cur, suggestion) < 0)
		return store_enomem(u->err, u->full, u->full_len);
	free(u->cur.key);
	u->cur.key = store_memdup(u->key, u->key_len);
	if (!u->cur.key)
		return store_enomem(u->err, u->full, u->full_len);
	u->cur.key_len = u->key_len;
	return 0;
}

/* Why the update cannot be based on u->cur (it is current). */
static int update_refused(struct update *u)
{
	if (!u->exists && !u->ignore_not_found)
		return store_fail(u->err, STORE_ENOTFOUND, u->full,
				  u->full_len, 0, "key not found");
	if (u->exists)
		return store_fail(u->err, STORE_EPRECONDITION, u->full,
				  u->full_len, u->cur.mod_revision,
				  "precondition failed: the key is at revision "
				  "%lld", (long long)u->cur.mod_revision);
	return store_fail(u->err, STORE_EPRECONDITION, u->full, u->full_len,
			  0, "precondition failed: the key does not exist");
}

/* The key as written into u->out (if any): value @value_own stolen. */
static int update_written(struct update *u, char *value_own, size_t len,
			  int64_t lease, int64_t newrev)
{
	struct store_kv *out = u->out;
	char *value;

	if (!out) {
		free(value_own);
		return 0;
	}
	/* The caller's buffer may lack the NUL a store_kv has. */
	value = realloc(value_own, len + 1);
	if (!value) {
		free(value_own);
		/* Written, but it cannot be told: say so. */
		return store_enomem(u->err, u->full, u->full_len);
	}
	value[len] = '\0';
	out->key = store_memdup(u->key, u->key_len);
	if (!out->key) {
		free(value);
		return store_enomem(u->err, u->full, u->full_len);
	}
	out->key_len = u->key_len;
	out->value = value;
	out->value_len = len;
	out->create_revision = u->exists ? u->cur.create_revision : newrev;
	out->mod_revision = newrev;
	out->version = !u->exists ? 1 : u->cur.version ? u->cur.version + 1 :
		       0;
	out->lease = lease;
	return 0;
}

/* Takes the state a lost compare-and-swap returned, @next, as u->cur. */
static int update_lost_race(struct update *u, struct store_kv *next)
{
	store_kv_release(&u->cur);
	u->current = true;
	u->exists = next->key != NULL && next->mod_revision > 0;
	if (!u->exists) {
		store_kv_release(next);
		return UPDATE_AGAIN;
	}
	if (next->key_len != u->full_len ||
	    memcmp(next->key, u->full, u->full_len) != 0 ||
	    !store_strip(u->s, next)) {
		store_kv_release(next);
		return store_fail(u->err, STORE_EBADREPLY, u->full,
				  u->full_len, 0,
				  "the server answered another key");
	}
	store_kv_move(&u->cur, next);
	return UPDATE_AGAIN;
}

/*
 * Sends @upd (stolen) as a compare-and-swap on u->cur, settled: 0 (done),
 * UPDATE_AGAIN (a lost race: u->cur is the winner's state) or an error.
 */
static int update_send(struct update *u, struct store_update *upd,
		       int64_t lease)
{
	struct store_settle st;
	struct store_kv next = { 0 };
	int64_t newrev = 0;
	int rc;

	store_settle_lock(u->s, &st, u->full, u->full_len);
	rc = store_settle_cas(&st, u->full, u->full_len,
			      u->exists ? u->cur.mod_revision : 0,
			      upd->value ? upd->value : "", upd->value_len,
			      lease, u->exists ? &u->cur : NULL, &newrev,
			      &next, u->err);
	store_settle_unlock(&st, rc == 0 ? newrev : 0);
	if (rc == STORE_EPRECONDITION) {
		free(upd->value);
		return update_lost_race(u, &next);
	}
	store_kv_release(&next);
	if (rc < 0) {
		free(upd->value);
		return rc;
	}
	return update_written(u, upd->value, upd->value_len, lease, newrev);
}

/*
 * One attempt: checks the preconditions on u->cur, asks the caller for
 * the new value and sends it.  0 (done), UPDATE_AGAIN or an error.
 */
static int update_attempt(struct update *u)
{
	struct store_update upd = { NULL, 0, -1 };
	int64_t lease;
	int rc;

	if ((!u->exists && !u->ignore_not_found) ||
	    !store_pre_holds(u->pre, u->exists ? &u->cur : NULL)) {
		/* The caller's suggestion may be stale: only the current
		 * state can fail the update. */
		if (u->current)
			return update_refused(u);
		rc = update_read(u);
		return rc < 0 ? rc : UPDATE_AGAIN;
	}
	if (u->attempts >= u->s->cfg.max_update_retries)
		return store_fail(u->err, STORE_ECONFLICT, u->full, u->full_len,
				  u->exists ? u->cur.mod_revision : 0,
				  "gave up after %d conflicting updates",
				  u->attempts);
	if (u->attempts)
		store_note_retry(u->s);	/* after a conflict */
	u->attempts++;

	rc = u->try_update(u->arg, u->exists ? &u->cur : NULL, &upd);
	if (rc != 0) {
		free(upd.value);
		if (rc > 0)
			rc = STORE_EINTERNAL;
		return store_fail(u->err, rc, u->full, u->full_len,
				  u->exists ? u->cur.mod_revision : 0,
				  "update stopped: %s", store_strerror(rc));
	}
	lease = upd.lease == -1 ? (u->exists ? u->cur.lease : 0) : upd.lease;
	if ((upd.value_len && !upd.value) || lease < 0) {
		free(upd.value);
		return store_fail(u->err, STORE_EINVAL, u->full, u->full_len, 0,
				  "bad update: no value or bad lease");
	}
	if (upd.value_len > u->s->cfg.max_value_size) {
		free(upd.value);
		return store_fail_too_large(u->err, u->full, u->full_len,
					    upd.value_len,
					    u->s->cfg.max_value_size);
	}
	if (u->exists && upd.value_len == u->cur.value_len &&
	    (upd.value_len == 0 ||
	     memcmp(upd.value, u->cur.value, upd.value_len) == 0) &&
	    lease == u->cur.lease) {
		free(upd.value);
		if (!u->current) {
			/* Nothing to write to a state that may be stale:
			 * read the real one and try again. */
			u->attempts--;
			rc = update_read(u);
			return rc < 0 ? rc : UPDATE_AGAIN;
		}
		if (u->out)
			store_kv_move(u->out, &u->cur);
		return 0;
	}
	return update_send(u, &upd, lease);
}

int store_guaranteed_update(struct store *s, const char *key, size_t key_len,
			    bool ignore_not_found,
			    const struct store_preconditions *pre,
			    const struct store_kv *suggestion,
			    store_try_update_fn try_update, void *arg,
			    struct store_kv *out, struct store_error *err)
{
	struct update u = {
		.s = s, .key = key, .key_len = key_len,
		.ignore_not_found = ignore_not_found, .pre = pre,
		.try_update = try_update, .arg = arg, .out = out, .err = err,
	};
	int rc;

	store_refresh_maybe(s);
	if (out)
		memset(out, 0, sizeof(*out));
	u.full = store_full_key(s, key, key_len, &u.full_len);
	if (!u.full)
		return store_enomem(err, key, key_len);
	if (u.full_len == 0 || !try_update || !store_pre_ok(pre)) {
		rc = store_fail(err, STORE_EINVAL, u.full, u.full_len, 0,
				u.full_len ? "bad precondition or update "
				"function" : "empty key");
		goto out;
	}
	rc = update_start(&u, suggestion);
	if (rc == 0)
		do
			rc = update_attempt(&u);
		while (rc == UPDATE_AGAIN);
out:
	store_kv_release(&u.cur);
	free(u.full);
	return store_conflict_rc(s, rc);
}

/* What a rename whose answer was lost left in etcd. */
enum move_state {
	MOVE_APPLIED,		/* the source gone, the target new */
	MOVE_UNCHANGED,		/* both as the preconditions saw them */
	MOVE_OTHER,		/* anything else: cannot tell */
};

/*
 * Reads both keys of a rename again.  Applied: the source is gone and the
 * target is newer than any write of this store to either key before this
 * rename (with @value, holding it; made anew if it had to be absent);
 * its revision in *@rev.
 */
static enum move_state move_state(struct store *s,
				  const struct store_settle *st,
				  const char *ffull, size_t ffull_len,
				  const struct store_preconditions *pre_from,
				  const char *tfull, size_t tfull_len,
				  const struct store_preconditions *pre_to,
				  const char *value, size_t value_len,
				  int64_t *rev)
{
	struct store_error e = { 0 };
	struct store_kv from, to;
	bool from_there, to_there;
	enum move_state ms = MOVE_OTHER;

	if (store_settle_read(s, ffull, ffull_len, &from, &from_there, &e) < 0)
		return MOVE_OTHER;
	if (store_settle_read(s, tfull, tfull_len, &to, &to_there, &e) < 0) {
		store_kv_release(&from);
		return MOVE_OTHER;
	}
	if (!from_there && to_there && to.mod_revision > st->floor &&
	    (!value || (to.value_len == value_len &&
			!memcmp(to.value, value, value_len))) &&
	    (!pre_to || pre_to->mod_revision != STORE_REV_ABSENT ||
	     to.create_revision == to.mod_revision)) {
		*rev = to.mod_revision;
		ms = MOVE_APPLIED;
	} else if (from_there && store_pre_holds(pre_from, &from) &&
		   store_pre_holds(pre_to, to_there ? &to : NULL)) {
		ms = MOVE_UNCHANGED;
	}
	store_kv_release(&from);
	store_kv_release(&to);
	return ms;
}

/*
 * be_ops->move under both keys' stripes, settled as store_settle_cas
 * settles a put: sent once more if nothing was applied, done if the
 * rename is what etcd holds, else EUNKNOWN.
 */
static int move_settled(struct store *s, const char *ffull, size_t ffull_len,
			const struct store_preconditions *pre_from,
			const char *tfull, size_t tfull_len,
			const struct store_preconditions *pre_to,
			const char *value, size_t value_len, int64_t *rev,
			struct store_error *err)
{
	struct store_settle a, b;
	bool two;
	enum move_state ms = MOVE_OTHER;
	int rc, tries;

	two = store_settle_lock2(s, &a, &b, ffull, ffull_len, tfull,
				 tfull_len);
	rc = s->be_ops->move(s, ffull, ffull_len, pre_from, tfull, tfull_len,
			     pre_to, value, value_len, rev, err);
	for (tries = 0; store_err_unknown_outcome(rc) && tries < 2; tries++) {
		ms = move_state(s, &a, ffull, ffull_len, pre_from, tfull,
				tfull_len, pre_to, value, value_len, rev);
		if (ms == MOVE_APPLIED) {
			rc = 0;
		} else if (ms == MOVE_UNCHANGED && tries == 0) {
			rc = s->be_ops->move(s, ffull, ffull_len, pre_from,
					     tfull, tfull_len, pre_to, value,
					     value_len, rev, err);
			/* the first copy may be what the checks met */
			if ((rc == STORE_EPRECONDITION ||
			     rc == STORE_ENOTFOUND) &&
			    move_state(s, &a, ffull, ffull_len, pre_from,
				       tfull, tfull_len, pre_to, value,
				       value_len, rev) == MOVE_APPLIED)
				rc = 0;
			continue;
		} else {
			rc = store_fail(err, STORE_EUNKNOWN, ffull, ffull_len,
					0, "the rename may have been applied: "
					"%s", err ? err->msg : "answer lost");
		}
		break;
	}
	if (store_err_unknown_outcome(rc))
		rc = store_fail(err, STORE_EUNKNOWN, ffull, ffull_len, 0,
				"the rename may have been applied: %s",
				err ? err->msg : "answer lost");
	store_settle_unlock2(&a, &b, two, rc == 0 ? *rev : 0);
	return rc;
}

int store_move(struct store *s, const char *from, size_t from_len,
	       const struct store_preconditions *pre_from,
	       const char *to, size_t to_len,
	       const struct store_preconditions *pre_to,
	       const char *value, size_t value_len, int64_t *rev,
	       struct store_error *err)
{
	char *ffull, *tfull = NULL;
	size_t ffull_len, tfull_len;
	int64_t newrev = 0;
	int rc;

	store_refresh_maybe(s);
	if (!s->be_ops->move)
		return store_fail(err, STORE_ENOTSUP, from, from_len, 0,
				  "the %s backend cannot rename atomically",
				  s->be_ops->name);
	ffull = store_full_key(s, from, from_len, &ffull_len);
	if (!ffull)
		return store_enomem(err, from, from_len);
	tfull = store_full_key(s, to, to_len, &tfull_len);
	if (!tfull) {
		rc = store_enomem(err, to, to_len);
		goto out;
	}
	if (ffull_len == 0 || tfull_len == 0) {
		rc = store_fail(err, STORE_EINVAL, NULL, 0, 0, "empty key");
		goto out;
	}
	if (!store_pre_ok(pre_from) || !store_pre_ok(pre_to) ||
	    (pre_from && pre_from->mod_revision == STORE_REV_ABSENT)) {
		rc = store_fail(err, STORE_EINVAL, ffull, ffull_len, 0,
				"bad precondition for a rename");
		goto out;
	}
	if (value && value_len > s->cfg.max_value_size) {
		rc = store_fail_too_large(err, tfull, tfull_len, value_len,
					  s->cfg.max_value_size);
		goto out;
	}
	rc = move_settled(s, ffull, ffull_len, pre_from, tfull, tfull_len,
			  pre_to, value, value_len, &newrev, err);
	if (rc == 0 && rev)
		*rev = newrev;
out:
	free(tfull);
	free(ffull);
	return store_conflict_rc(s, rc);
}

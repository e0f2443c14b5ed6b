/*
 * store_members.c - the cluster's members (store_members), and the
 * endpoint list that follows them (store_refresh_endpoints and
 * refresh_endpoints_ms of helper/store.h)
 *
 * There is no thread for it (the daemon forks after the store is made,
 * and a thread would not survive the fork): the calls that talk to etcd,
 * and the watch when it lost its connection, first check whether a
 * refresh is due (the interval passed, or every endpoint failed since the
 * last one); one thread refreshes, the others go on with the list there
 * is.  An idle mount with a connected watch does not refresh: nothing
 * uses the list then.
 *
 * What it cannot do: follow a member whose client URL is not a plain
 * http:// or https:// URL; the endpoints given stay on the list, last.
 */
#include <stdlib.h>
#include <string.h>

#include "endpoint.h"
#include "store_i.h"
#include "thread.h"

/*
 * After every endpoint failed, the members are asked again at most this
 * often: with a cluster that is down, each try costs a connect timeout
 * per endpoint, which a request should not pay every time.
 */
#define STORE_REFRESH_RETRY_MS		1000

static bool store_list_has(char *const *list, size_t n, const char *ep)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(list[i], ep) == 0)
			return true;
	return false;
}

int store_members(struct store *s, struct store_member **members, size_t *n,
		  struct store_error *err)
{
	*members = NULL;
	*n = 0;
	if (!s->be_ops->members)
		return store_fail(err, STORE_ENOTSUP, NULL, 0, 0,
				  "the %s backend cannot list members",
				  s->be_ops->name);
	return store_read_rc(s->be_ops->members(s, members, n, err), err);
}

int store_refresh_endpoints(struct store *s, size_t *n_out,
			    struct store_error *err)
{
	struct store_priv *p = store_priv(s);
	struct store_member *m = NULL;
	size_t nm = 0, i, k, cap = 0, n = 0, len;
	char **list = NULL, *ep;
	int rc;

	if (n_out)
		*n_out = 0;
	rc = store_members(s, &m, &nm, err);
	if (rc < 0)
		return rc;
	for (i = 0; i < nm; i++)
		cap += m[i].n_client_urls;
	cap += p->n_endpoints;
	list = calloc(cap ? cap : 1, sizeof(*list));
	if (!list) {
		rc = store_enomem(err, NULL, 0);
		goto out;
	}
	/*
	 * A member added but not started has no client URL yet; one that
	 * advertises something that is no URL is skipped rather than
	 * trusted: the list is what every later request goes to.
	 */
	for (i = 0; i < nm; i++) {
		for (k = 0; k < m[i].n_client_urls; k++) {
			len = strlen(m[i].client_urls[k]);
			while (len > 0 && m[i].client_urls[k][len - 1] == '/')
				len--;
			ep = store_memdup(m[i].client_urls[k], len);
			if (!ep) {
				rc = store_enomem(err, NULL, 0);
				goto out;
			}
			if (!endpoint_url_ok(ep) ||
			    store_list_has(list, n, ep)) {
				free(ep);
				continue;
			}
			list[n++] = ep;
		}
	}
	if (n == 0) {
		rc = store_fail(err, STORE_EBADREPLY, NULL, 0, 0,
				"no member of the cluster has a usable client "
				"URL; keeping the endpoints there are");
		goto out;
	}
	/*
	 * The endpoints given stay, last: a name or a proxy that leads to
	 * whatever members there will be is the way back when all of these
	 * are gone.
	 */
	for (i = 0; i < p->n_endpoints; i++) {
		if (store_list_has(list, n, p->endpoints[i]))
			continue;
		list[n] = strdup(p->endpoints[i]);
		if (!list[n]) {
			rc = store_enomem(err, NULL, 0);
			goto out;
		}
		n++;
	}
	rc = s->be_ops->set_endpoints ?
		s->be_ops->set_endpoints(s, (const char *const *)list, n, err) :
		transport_set_endpoints(s->tr, (const char *const *)list, n,
					err);
	if (rc == 0 && n_out)
		*n_out = n;
out:
	if (list)
		for (i = 0; i < n; i++)
			free(list[i]);
	free(list);
	store_members_free(m, nm);
	return rc;
}

/* Requests that found no endpoint, by the backend's transport. */
static uint64_t store_unreachable_count(struct store *s)
{
	if (s->be_ops->unreachable_count)
		return s->be_ops->unreachable_count(s);
	return transport_unreachable_count(s->tr);
}

/*
 * Refreshes the endpoints if a refresh is due (see the top of this file).
 * Its outcome is not the caller's: on failure the list stays as it was,
 * and the caller's own request says what it meets.
 */
void store_refresh_maybe(struct store *s)
{
	struct store_priv *p = store_priv(s);
	uint64_t fails;
	int64_t now;
	bool failed;

	if (s->cfg.refresh_endpoints_ms <= 0)
		return;
	now = thread_now_ms();
	fails = store_unreachable_count(s);
	failed = fails != __atomic_load_n(&p->refresh_seen, __ATOMIC_ACQUIRE);
	if (!failed && now < __atomic_load_n(&p->refresh_next_ms,
					     __ATOMIC_ACQUIRE))
		return;
	/* Another thread refreshes: use the list there is meanwhile. */
	if (pthread_mutex_trylock(&p->refresh_lock) != 0)
		return;
	failed = fails != p->refresh_seen;
	if ((failed && p->refresh_last_ms &&
	     now - p->refresh_last_ms < STORE_REFRESH_RETRY_MS) ||
	    (!failed && now < p->refresh_next_ms)) {
		pthread_mutex_unlock(&p->refresh_lock);
		return;
	}
	store_refresh_endpoints(s, NULL, NULL);
	/* The refresh's own failures are no reason for another one. */
	__atomic_store_n(&p->refresh_seen, store_unreachable_count(s),
			 __ATOMIC_RELEASE);
	p->refresh_last_ms = thread_now_ms();
	__atomic_store_n(&p->refresh_next_ms,
			 p->refresh_last_ms + s->cfg.refresh_endpoints_ms,
			 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&p->refresh_lock);
}

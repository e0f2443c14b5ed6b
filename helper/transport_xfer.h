/*
 * transport_xfer.h - what a transfer of the transport hands back: the
 * reply, and the function that frees it (transport_xfer.c)
 *
 * Below transport.c, which includes it through transport.h: the
 * transfer fills the reply, so the reply's type lives with it.
 *
 * What it cannot do: send anything; transport.h has the calls.
 */
#ifndef ETCDFS_TRANSPORT_XFER_H
#define ETCDFS_TRANSPORT_XFER_H

#include <stddef.h>

struct transport_reply {
	long status;		/* the HTTP status */
	char *body;		/* owned, NUL-terminated past len */
	size_t len;
};

/* Frees @r's body and empties it; @r may be NULL. */
void transport_reply_release(struct transport_reply *r);

#endif /* ETCDFS_TRANSPORT_XFER_H */

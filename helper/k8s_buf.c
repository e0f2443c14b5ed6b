/*
 * k8s_buf.c - the k8s codec's growable buffer and its one-line errors,
 * below every other file of the codec
 *
 * A buffer that cannot grow (out of memory, or past SIZE_MAX / 2) marks
 * itself failed and takes nothing more; its users look at b->err once, at
 * the end.  An error keeps its first, innermost message.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_codec.h"
#include "k8s_i.h"

void k8s_buf_add(struct k8s_buf *b, const void *p, size_t n)
{
	if (b->err)
		return;
	if (b->cap - b->len <= n) {
		size_t cap = b->cap ? b->cap : 256;
		char *np;

		while (cap - b->len <= n) {
			if (cap > SIZE_MAX / 2) {
				b->err = true;
				return;
			}
			cap *= 2;
		}
		np = realloc(b->p, cap);
		if (!np) {
			b->err = true;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void k8s_buf_addc(struct k8s_buf *b, char c)
{
	k8s_buf_add(b, &c, 1);
}

void k8s_buf_adds(struct k8s_buf *b, const char *s)
{
	k8s_buf_add(b, s, strlen(s));
}

void k8s_err(struct k8s_error *err, const char *fmt, ...)
{
	va_list ap;
	char *p;

	if (!err || err->message[0])
		return; /* the first, innermost message stays */
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	/* one line: names and keys quoted from a value may hold anything */
	for (p = err->message; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

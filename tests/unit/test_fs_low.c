/*
 * test_fs_low.c - the lower layers of fs/ (leaves, tree, kernel, mirror,
 * echo: fs/meson.build's fs_low_lib) linked alone, whole
 *
 * Every object of those layers is linked in (link_whole), without the
 * FUSE operations, the handles, the gates and fs.c above them: a call
 * from one of them up into a higher layer is an undefined symbol, and
 * fails the build before this program runs.  It then checks what the
 * leaves do alone: the one translation of the store's errors to errno
 * (the README's table) and the invalidation lists.  It does not start a
 * mirror (that needs a mount: tests/fs/).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "errno_map.h"
#include "inval.h"
#include "tap.h"

static bool test_errno_map(void)
{
	static const struct {
		int store_err;
		int err;
	} map[] = {
		{ STORE_OK, 0 },
		{ STORE_ENOTFOUND, -ENOENT },
		{ STORE_EEXISTS, -EEXIST },
		{ STORE_ECONFLICT, -ESTALE },
		{ STORE_EPRECONDITION, -ESTALE },
		{ STORE_EUNREACHABLE, -ENOTCONN },
		{ STORE_ETIMEOUT, -ETIMEDOUT },
		{ STORE_EUNKNOWN, -ETIMEDOUT },
		{ STORE_EUNAUTHENTICATED, -EACCES },
		{ STORE_EPERMISSION, -EACCES },
		{ STORE_ETOOLARGE, -EFBIG },
		{ STORE_EINVAL, -EINVAL },
		{ STORE_ENOTSUP, -ENOTSUP },
		{ STORE_EINTERNAL, -ENOMEM },
		{ STORE_ECOMPACTED, -EIO },
		{ STORE_EBADREPLY, -EIO },
		{ -1000, -EIO },
	};
	size_t i;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (fs_errno(map[i].store_err) != map[i].err)
			tap_diag("store error %d: %d, not %d", map[i].store_err,
				 fs_errno(map[i].store_err), map[i].err);
		CHECK(fs_errno(map[i].store_err) == map[i].err);
	}
	return true;
}

static bool test_inval_list(void)
{
	struct inval_list l = { 0 };

	CHECK(inval_add(NULL, true, 1, "a", 1) == 0);
	CHECK(inval_add(&l, true, 1, "name", 4) == 0);
	CHECK(inval_add(&l, false, 7, NULL, 0) == 0);
	CHECK(inval_add(&l, true, 7, "b", 1) == 0);
	CHECK(l.n == 3);
	CHECK(l.v[0].entry && l.v[0].id == 1 && l.v[0].name_len == 4 &&
	      strcmp(l.v[0].name, "name") == 0);
	CHECK(!l.v[1].entry && l.v[1].id == 7 && !l.v[1].name);
	inval_drop_entries(&l);
	CHECK(l.n == 1 && !l.v[0].entry && l.v[0].id == 7);
	inval_release(&l);
	CHECK(l.n == 0 && !l.v);
	return true;
}

int main(void)
{
	TAP_RUN(test_errno_map);
	TAP_RUN(test_inval_list);
	return tap_done(0);
}

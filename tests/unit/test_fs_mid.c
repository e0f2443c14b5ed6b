/*
 * test_fs_mid.c - the middle layers of fs/ (open files, pins, commits,
 * codecs, directory moves, the quorum barrier: fs/meson.build's
 * fs_mid_lib) linked whole with the lower ones, and nothing above
 *
 * As test_fs_low.c one layer up: a call from one of them into the gate,
 * delay_connect, the FUSE operations or fs.c is an undefined symbol, and
 * fails the build.  Then it checks what the pins do on a filesystem that
 * has none.  It does not open files (that needs a mount: tests/fs/).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "fs_i.h"
#include "tap.h"

static bool test_no_pins(void)
{
	struct fs *fs = calloc(1, sizeof(*fs));
	int64_t rev = 7;

	CHECK(fs);
	CHECK(!pin_take(fs, "/k", 2, getpid(), &rev) && rev == 7);
	CHECK(!pin_peek(fs, "/k", 2, getpid(), &rev) && rev == 7);
	CHECK(!pin_remove(fs, "/k", 2, getpid()));
	pins_free(fs);
	CHECK(fs->npins == 0 && !fs->pins);
	free(fs);
	return true;
}

int main(void)
{
	TAP_RUN(test_no_pins);
	return tap_done(0);
}

/*
 * fuzz_object.c - libFuzzer target for helper/object.c, the TypeMeta of a
 * Kubernetes value
 *
 * Each input is a value.  object_meta() must return 0, -ENODATA or
 * -EBADMSG (never read past the input: ASan sees to that), hold nothing
 * after an error, say -ENODATA exactly for what object_maybe() rejects
 * or for JSON that is not an object, never -ENODATA for the Kubernetes
 * magic, and give strings terminated at their length; of a protobuf value
 * each string is bytes of the input.  It cannot find out-of-memory paths.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "object.h"

static void check_string(const char *s, size_t len, const uint8_t *data,
			 size_t size, bool protobuf)
{
	if (!s)
		return;
	check(s[len] == '\0');
	if (protobuf)
		check(len == 0 || memmem(data, size, s, len) != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *val = (const char *)data;
	bool magic = size >= OBJECT_K8S_MAGIC_LEN &&
		     memcmp(data, OBJECT_K8S_MAGIC, OBJECT_K8S_MAGIC_LEN) == 0;
	struct object_meta m;
	int rc;

	rc = object_meta(val, size, &m);
	check(rc == 0 || rc == -ENODATA || rc == -EBADMSG);
	if (rc) {
		check(!m.api_version && !m.kind);
		check(rc != -ENODATA || !magic);
		check(rc != -EBADMSG || magic);
		check(object_maybe(val, size) || rc == -ENODATA);
		return 0;
	}
	check(object_maybe(val, size));
	check_string(m.api_version, m.api_version_len, data, size, magic);
	check_string(m.kind, m.kind_len, data, size, magic);
	object_meta_release(&m);
	check(!m.api_version && !m.kind);
	return 0;
}

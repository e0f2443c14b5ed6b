/*
 * fuzz_k8s_decode.c - libFuzzer target for the k8s codec's decoding
 * (helper/k8s_codec.h)
 *
 * Each input is a value as etcd would hold it.  k8s_decode() must answer
 * 0, -EBADMSG (not a valid object) or -ENOENT (a kind not built in), with
 * a message of one line on error, never read past the input (ASan sees to
 * that), and on success give text of exactly its length.  What decodes is
 * text the codec takes back, its JSON and its YAML, and saves of it
 * settle after one (saves_settle()).  It cannot find out-of-memory
 * paths.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "k8s_codec.h"

/*
 * A view @text saved gives a value whose view, saved again, gives the
 * same value, and the same view: saves settle after one.  (The first
 * save may change the view: a pointer to a RawExtension or FieldsV1 on
 * the wire without bytes is a non-nil pointer Go writes as null, and
 * null reads back as no pointer, as in Go.  And the JSON and the YAML
 * view may save differently: embedded JSON keeps its keys' order through
 * JSON and has them sorted through YAML, as with sigs.k8s.io/yaml.)
 */
static void saves_settle(const char *text, size_t len, enum k8s_format fmt)
{
	struct k8s_error err;
	void *pb1, *pb2;
	char *view1, *view2;
	size_t len1, len2, vlen1, vlen2;

	if (k8s_encode(text, len, fmt, NULL, 0, &pb1, &len1, &err))
		fuzz_fail(__FILE__, __LINE__, err.message);
	if (k8s_decode(pb1, len1, fmt, &view1, &vlen1, &err))
		fuzz_fail(__FILE__, __LINE__, err.message);
	if (k8s_encode(view1, vlen1, fmt, pb1, len1, &pb2, &len2, &err))
		fuzz_fail(__FILE__, __LINE__, err.message);
	check(len1 == len2 && memcmp(pb1, pb2, len1) == 0);
	if (k8s_decode(pb2, len2, fmt, &view2, &vlen2, &err))
		fuzz_fail(__FILE__, __LINE__, err.message);
	check(vlen1 == vlen2 && memcmp(view1, view2, vlen1) == 0);
	free(view2);
	free(view1);
	free(pb2);
	free(pb1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct k8s_error err;
	char *json, *yaml;
	size_t jlen, ylen;
	int rc;

	rc = k8s_decode(data, size, K8S_FORMAT_JSON, &json, &jlen, &err);
	check(rc == 0 || rc == -EBADMSG || rc == -ENOENT);
	if (rc) {
		fuzz_check_msg(err.message, sizeof(err.message));
		check(k8s_decode(data, size, K8S_FORMAT_YAML, &yaml, &ylen,
				 &err) == rc);
		return 0;
	}
	check(json[jlen] == '\0' && strlen(json) == jlen);
	rc = k8s_decode(data, size, K8S_FORMAT_YAML, &yaml, &ylen, &err);
	check(rc == 0);
	check(yaml[ylen] == '\0' && strlen(yaml) == ylen);

	saves_settle(json, jlen, K8S_FORMAT_JSON);
	saves_settle(yaml, ylen, K8S_FORMAT_YAML);
	free(yaml);
	free(json);
	return 0;
}

/*
 * fuzz_k8s_encode.c - libFuzzer target for the k8s codec's encoding
 * (helper/k8s_codec.h)
 *
 * Each input is text a user saves: JSON when it starts with '{' (after
 * blanks), else YAML.  k8s_encode() must answer 0 or -EINVAL, with a
 * message of one line on error, and never read past the text; what it
 * encodes must decode, and encode again to the same value (the codec's
 * own output is a fixed point).  It cannot find out-of-memory paths.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "k8s_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum k8s_format fmt = K8S_FORMAT_YAML;
	struct k8s_error err;
	const char *text = (const char *)data;
	void *pb, *pb2;
	char *json;
	size_t i, len, len2, jlen;
	int rc;

	for (i = 0; i < size && strchr(" \t\r\n", text[i]) && text[i]; i++)
		;
	if (i < size && text[i] == '{')
		fmt = K8S_FORMAT_JSON;
	rc = k8s_encode(text, size, fmt, NULL, 0, &pb, &len, &err);
	check(rc == 0 || rc == -EINVAL);
	if (rc) {
		fuzz_check_msg(err.message, sizeof(err.message));
		return 0;
	}
	check(k8s_is_object(pb, len));
	rc = k8s_decode(pb, len, K8S_FORMAT_JSON, &json, &jlen, &err);
	if (rc)
		fuzz_fail(__FILE__, __LINE__, err.message);
	rc =
	    k8s_encode(json, jlen, K8S_FORMAT_JSON, pb, len, &pb2, &len2, &err);
	if (rc)
		fuzz_fail(__FILE__, __LINE__, err.message);
	check(len == len2 && memcmp(pb, pb2, len) == 0);
	free(pb2);
	free(json);
	free(pb);
	return 0;
}

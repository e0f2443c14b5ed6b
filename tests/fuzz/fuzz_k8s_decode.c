/*
 * fuzz_k8s_decode.c - libFuzzer target for the k8s codec's decoding
 * (helper/k8s_codec.h)
 *
 * Each input is a value as etcd would hold it.  k8s_decode() must answer
 * 0, -EBADMSG (not a valid object) or -ENOENT (a kind not built in), with
 * a message of one line on error, never read past the input (ASan sees to
 * that), and on success give text of exactly its length.  What decodes is
 * text the codec takes back: its JSON and its YAML each encode to a value
 * that decodes to the same text again.  It cannot find out-of-memory
 * paths.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "k8s_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct k8s_error err;
	char *json, *yaml, *again;
	void *pb, *pb2;
	size_t jlen, ylen, alen, len, len2;
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

	rc = k8s_encode(json, jlen, K8S_FORMAT_JSON, NULL, 0, &pb, &len, &err);
	if (rc)
		fuzz_fail(__FILE__, __LINE__, err.message);
	rc =
	    k8s_encode(yaml, ylen, K8S_FORMAT_YAML, NULL, 0, &pb2, &len2, &err);
	if (rc)
		fuzz_fail(__FILE__, __LINE__, err.message);
	/*
	 * Each view is a fixed point of a save.  The two values may differ:
	 * embedded JSON (a RawExtension) keeps its keys' order through JSON
	 * and has them sorted through YAML, as with sigs.k8s.io/yaml.
	 */
	check(k8s_decode(pb, len, K8S_FORMAT_JSON, &again, &alen, &err) == 0);
	check(alen == jlen && memcmp(again, json, jlen) == 0);
	free(again);
	check(k8s_decode(pb2, len2, K8S_FORMAT_YAML, &again, &alen, &err) ==
	      0);
	check(alen == ylen && memcmp(again, yaml, ylen) == 0);
	free(again);
	free(pb2);
	free(pb);
	free(yaml);
	free(json);
	return 0;
}

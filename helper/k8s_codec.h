/*
 * k8s_codec.h - Kubernetes objects as text: protobuf <-> JSON and YAML
 *
 * The API server stores most objects in etcd as protobuf: the 4 bytes
 * "k8s\0", then a runtime.Unknown envelope (apiVersion, kind, the object's
 * own protobuf).  This codec turns such a value into the JSON that
 * Kubernetes' Go types encode (encoding/json of the typed object, two
 * spaces of indent, Go's field order) or the YAML sigs.k8s.io/yaml writes
 * (keys sorted), and text of either back into the value, as the API
 * server's Go code would write it, envelope included.  The kinds it knows
 * are the built-in kinds of the k8s.io/api release the build read
 * (helper/k8s_gen.py); it knows no FUSE and no store.
 *
 * What it cannot do: custom resources (JSON in etcd already) and encrypted
 * values ("k8s:enc:..."): k8s_is_object() says no and they stay as they
 * are.  A value whose envelope names no kind (a WatchEvent's) or a kind
 * the release does not have, and one whose raw bytes have a content
 * encoding, are not decoded.  A resource.Quantity is made canonical as Go
 * does where it fits Go's int64 arithmetic (18 digits, nothing finer than
 * a nano), else goes through as written.  Embedded JSON (RawExtension,
 * FieldsV1) is saved compact, its numbers as Go's encoding/json writes an
 * int64 or a float64, not as the text had them.  A map key with a NUL
 * byte, which no text can hold, makes a value not decodable.
 *
 * Fields on the wire that the schema does not know (an object written by
 * a newer API server) are left out of the text; k8s_encode() given such a
 * value as @orig refuses to replace it (-EPROTONOSUPPORT), so that a save
 * never drops them.  A caller that saves text over a stored value
 * therefore passes, as @orig, the value the text was decoded from.
 *
 * All functions are thread-safe (the tables are constant).
 */
#ifndef ETCDFS_K8S_CODEC_H
#define ETCDFS_K8S_CODEC_H

#include <stdbool.h>
#include <stddef.h>

enum k8s_format {
	K8S_FORMAT_JSON,
	K8S_FORMAT_YAML,
};

/* What went wrong, filled only on error: a line, lower case. */
struct k8s_error {
	char message[256];
};

/* Whether this build holds the schema; without it, all else is -ENOTSUP. */
bool k8s_built_in(void);

/* The release of k8s.io/api the schema was read from ("" if none). */
const char *k8s_schema_version(void);

/*
 * Whether @val (@len bytes) starts as a protobuf object does ("k8s\0"), as
 * opposed to JSON, an encrypted value or anything else.  Says nothing of
 * whether it decodes.
 */
bool k8s_is_object(const void *val, size_t len);

/*
 * Decodes the protobuf object @val (@len bytes) into text of format @fmt.
 * On success *@out is a new NUL-terminated buffer of *@out_len bytes (the
 * caller frees it).  Returns 0, -ENOTSUP (not built in), -ENOENT (a kind
 * the schema does not know: show the value raw), -EBADMSG (not a valid
 * object: a hostile or damaged value), or -ENOMEM.
 */
int k8s_decode(const void *val, size_t len, enum k8s_format fmt, char **out,
	       size_t *out_len, struct k8s_error *err);

/*
 * Encodes @text (@len bytes, format @fmt) into a protobuf object with its
 * envelope.  @orig (@orig_len bytes), if not NULL, is the value the text
 * replaces: the text's kind and apiVersion must be its, and a value with
 * fields the schema does not know is not replaced.  On success *@out is a
 * new buffer of *@out_len bytes (the caller frees it).  Returns 0,
 * -ENOTSUP (not built in), -EINVAL (not a valid object of its kind: the
 * message names the field), -EPROTONOSUPPORT (@orig holds fields this
 * build does not know), or -ENOMEM.
 */
int k8s_encode(const char *text, size_t len, enum k8s_format fmt,
	       const void *orig, size_t orig_len, void **out, size_t *out_len,
	       struct k8s_error *err);

#endif /* ETCDFS_K8S_CODEC_H */

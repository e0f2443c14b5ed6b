/*
 * object.h - what kind of object a value is: the TypeMeta of a Kubernetes
 * value, protobuf or JSON
 *
 * Kubernetes stores its objects under /registry either as protobuf, the
 * magic "k8s\0" followed by a runtime.Unknown envelope whose field 1 is
 * the TypeMeta {1 apiVersion, 2 kind}, or as a JSON object with top-level
 * "apiVersion" and "kind" strings.  object_meta() reads those two from
 * either, defensively: any byte string is a valid input.
 *
 * What it cannot do: decode the object itself (the envelope's raw field is
 * the type's own protobuf, whose schema etcdfs does not have).
 */
#ifndef ETCDFS_OBJECT_H
#define ETCDFS_OBJECT_H

#include <stdbool.h>
#include <stddef.h>

/* The 4 bytes that open a Kubernetes protobuf value. */
#define OBJECT_K8S_MAGIC	"k8s\0"
#define OBJECT_K8S_MAGIC_LEN	4

struct object_meta {
	char *api_version;	/* NULL if the object has none */
	size_t api_version_len;
	char *kind;		/* NULL if the object has none */
	size_t kind_len;
};

/*
 * Reads the TypeMeta of the value @val (@len bytes) into @m, whose strings
 * are the caller's to release with object_meta_release() (NUL-terminated,
 * and their length given, as protobuf strings may hold a NUL).  Returns 0
 * if @val is an object (either string may still be missing), -ENODATA if
 * it is neither a Kubernetes protobuf value nor a JSON object, -EBADMSG if
 * it opens with the Kubernetes magic but its envelope is malformed, or
 * -ENOMEM.  On error @m holds nothing.
 */
int object_meta(const char *val, size_t len, struct object_meta *m);
void object_meta_release(struct object_meta *m);

/*
 * Whether @val may be an object, from its first bytes alone (the magic, or
 * a '{' after white space): what listing the attributes can afford.
 */
bool object_maybe(const char *val, size_t len);

#endif /* ETCDFS_OBJECT_H */

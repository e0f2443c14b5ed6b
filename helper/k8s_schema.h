/*
 * k8s_schema.h - the tables the k8s codec walks, generated at build time
 *
 * helper/k8s_gen.py writes them (k8s_schema.c in the build dir) from the Go
 * types of k8s.io/api and k8s.io/apimachinery: one struct k8s_message for
 * each Go struct the built-in kinds use, its fields in Go's order (the
 * order encoding/json writes them in), and each message's fields again in
 * field-number order (the order the protobuf code writes them in).  Private
 * to the codec (helper/k8s_*.c).
 */
#ifndef ETCDFS_K8S_SCHEMA_H
#define ETCDFS_K8S_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

/* What a field holds, or each element of a repeated field or map. */
enum k8s_type {
	K8S_T_STRING,
	K8S_T_BOOL,
	K8S_T_INT32,
	K8S_T_INT64,
	K8S_T_BYTES,	 /* []byte: base64 in JSON */
	K8S_T_MESSAGE,	 /* a struct: k8s_field.msg */
	K8S_T_TIME,	 /* metav1.Time: RFC 3339, seconds */
	K8S_T_MICROTIME, /* metav1.MicroTime: RFC 3339, microseconds */
	K8S_T_DURATION,	 /* metav1.Duration: Go's duration string */
	K8S_T_QUANTITY,	 /* resource.Quantity: its string */
	K8S_T_INTSTR,	 /* intstr.IntOrString: a number or a string */
	K8S_T_RAWEXT,	 /* runtime.RawExtension: embedded JSON */
	K8S_T_FIELDSV1,	 /* metav1.FieldsV1: embedded JSON */
	K8S_T_STRLIST,	 /* a named []string with a message of its own */
};

#define K8S_F_OMITEMPTY 0x01 /* json:",omitempty" */
#define K8S_F_INLINE	0x02 /* an embedded struct, flattened in JSON */
#define K8S_F_POINTER	0x04 /* *T: written only when set */
#define K8S_F_REPEATED	0x08 /* []T */
#define K8S_F_MAP	0x10 /* map[string]T, T the field's type */

struct k8s_field {
	const char *json; /* the JSON name (the Go name when untagged) */
	uint32_t number;  /* the protobuf field number; 0: not on the wire */
	uint8_t type;	  /* enum k8s_type */
	uint8_t flags;	  /* K8S_F_* */
	int16_t msg;	  /* K8S_T_MESSAGE: index in k8s_messages */
};

struct k8s_message {
	const char *name; /* Go package path, a dot, the type's name */
	uint16_t first;	  /* its first field in k8s_fields */
	uint16_t nfields;
	uint16_t wire; /* its first entry in k8s_wire_order */
	uint16_t nwire;
};

/* A kind the API server stores: what the envelope names. */
struct k8s_kind {
	const char *api_version; /* "v1", "apps/v1" */
	const char *kind;
	uint16_t msg;
};

extern const struct k8s_field k8s_fields[];
extern const struct k8s_message k8s_messages[];
/* per message, the indices (from its first field) of its wire fields */
extern const uint16_t k8s_wire_order[];
extern const struct k8s_kind k8s_kinds[]; /* sorted */
extern const size_t k8s_nkinds;
extern const size_t k8s_nmessages;
/* the release of k8s.io/api read ("0.32.3"), "unknown" if it said none */
extern const char k8s_schema_release[];

#endif /* ETCDFS_K8S_SCHEMA_H */

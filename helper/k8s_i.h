/*
 * k8s_i.h - what the k8s codec's files share (helper/k8s_*.c)
 *
 * The codec meets in the middle: a protobuf object decodes into a jansson
 * tree in Go's field order (k8s_pb_dec.c), which k8s_json.c and
 * k8s_yaml.c write as text; text parses into a jansson tree (jansson, or
 * libyaml in k8s_yaml.c), which k8s_pb_enc.c encodes.  k8s_pb.c holds the
 * wire format they share.
 */
#ifndef ETCDFS_K8S_I_H
#define ETCDFS_K8S_I_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "k8s_codec.h"

/* A growable byte buffer; err is set once an allocation failed. */
struct k8s_buf {
	char *p;
	size_t len;
	size_t cap;
	bool err;
};

void k8s_buf_add(struct k8s_buf *b, const void *p, size_t n);
void k8s_buf_addc(struct k8s_buf *b, char c);
void k8s_buf_adds(struct k8s_buf *b, const char *s);

__attribute__((format(printf, 2, 3))) void k8s_err(struct k8s_error *err,
						   const char *fmt, ...);

/* The largest nesting a value or a text may have. */
#define K8S_MAX_DEPTH 100

/* Go's zero time.Time, in Unix seconds: what IsZero() tests for. */
#define GO_ZERO_TIME (-62135596800LL)

/* k8s_pb.c: one field of a message as found on the wire. */
struct k8s_wire {
	uint32_t field;	  /* index from the message's first field */
	uint8_t wt;	  /* wire type */
	uint64_t v;	  /* varint; a length */
	const uint8_t *p; /* length-delimited: the bytes */
	size_t len;
};

/* k8s_pb.c: a varint at *@p, before @end; 0 or -1. */
int k8s_pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v);
/*
 * k8s_pb.c: the next key and value at *@p (its number in *@num), 0 or -1
 * when the wire format is broken (a group, a length past @end, field 0).
 */
int k8s_pb_field(const uint8_t **p, const uint8_t *end, uint64_t *num,
		 struct k8s_wire *w);
void k8s_pb_put_varint(struct k8s_buf *b, uint64_t v);
void k8s_pb_put_key(struct k8s_buf *b, uint32_t num, int wt);
void k8s_pb_put_len(struct k8s_buf *b, uint32_t num, const void *p, size_t n);

/* k8s_pb.c: base64's standard alphabet. */
extern const char k8s_b64[];

/* A map's key and value, sorted as Go sorts keys (bytes, then length). */
struct k8s_map_key {
	const char *key;
	size_t len;
	json_t *val; /* borrowed */
};

int k8s_map_key_cmp(const void *a, const void *b);

/*
 * k8s_pb_dec.c: the object's protobuf @raw (@len bytes) of message @msg as a
 * new tree; @api_version and @kind fill its TypeMeta.  NULL on error,
 * *@unknown counts the fields the schema does not know.
 */
json_t *k8s_pb_decode(int msg, const uint8_t *raw, size_t len,
		      const char *api_version, const char *kind,
		      size_t *unknown, struct k8s_error *err);

/*
 * k8s_pb_enc.c: appends the protobuf of @obj (borrowed), an object of message
 * @msg, to @out.  @from_yaml: scalars may come as YAML resolved them.
 * Returns 0 or -EINVAL (with the field's path in @err).
 */
int k8s_pb_encode(int msg, json_t *obj, bool from_yaml, struct k8s_buf *out,
		  struct k8s_error *err);

/* k8s_json.c: @v as Go's json.MarshalIndent(v, "", "  ") writes it. */
void k8s_json_write(struct k8s_buf *b, json_t *v);
/* k8s_json.c: @v as Go's json.Marshal writes it (compact). */
void k8s_json_write_compact(struct k8s_buf *b, json_t *v);

/* k8s_yaml.c: @v as sigs.k8s.io/yaml writes it; 0 or -ENOMEM. */
int k8s_yaml_write(struct k8s_buf *b, json_t *v);
/* k8s_yaml.c: strconv.FormatFloat(@f, 'g', -1, @f32 ? 32 : 64). */
void k8s_yaml_float(double f, bool f32, char *out, size_t size);
/* k8s_yaml.c: a YAML text as a new tree, or NULL (message in @err). */
json_t *k8s_yaml_parse(const char *text, size_t len, struct k8s_error *err);

/*
 * k8s_quantity.c: appends the canonical form of resource.Quantity @s (@len
 * bytes) to @out: 0, 1 when it went through as written (valid, past the
 * int64 arithmetic), or -EINVAL when Kubernetes would refuse it.
 */
int k8s_quantity(const char *s, size_t len, struct k8s_buf *out);

/* k8s_time.c: times and durations as Go formats and parses them. */
void k8s_time_format(struct k8s_buf *b, int64_t sec, int32_t nsec, bool micro);
int k8s_time_parse(const char *s, size_t len, int64_t *sec, int32_t *nsec);
void k8s_duration_format(struct k8s_buf *b, int64_t ns);
int k8s_duration_parse(const char *s, size_t len, int64_t *ns);

#endif /* ETCDFS_K8S_I_H */

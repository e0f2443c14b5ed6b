/*
 * test_object.c - unit tests of helper/object.c, the TypeMeta of a value
 *
 * Kubernetes protobuf envelopes made byte by byte as the apiserver writes
 * them (magic, runtime.Unknown {1 TypeMeta, 2 raw, 3 contentEncoding,
 * 4 contentType}), then the same with fields reordered, repeated and
 * unknown ones added; every cut of an envelope; malformed ones; JSON
 * objects and what is not one.  It cannot test out-of-memory paths.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "object.h"
#include "tap.h"

#define S(lit) lit, sizeof(lit) - 1

/* A Pod as the apiserver stores it (raw shortened to 3 bytes). */
static const char pod[] =
	"k8s\0"
	"\x0a\x09"			/* 1: TypeMeta, 9 bytes */
	"\x0a\x02v1"			/*   1: apiVersion */
	"\x12\x03Pod"			/*   2: kind */
	"\x12\x03\x0a\x01x"		/* 2: raw */
	"\x1a\x00"			/* 3: contentEncoding */
	"\x22\x00";			/* 4: contentType */

static bool is(const char *s, size_t len, const char *want)
{
	return s && len == strlen(want) && memcmp(s, want, len) == 0 &&
	       s[len] == '\0';
}

static bool meta_is(const char *val, size_t len, const char *api,
		    const char *kind)
{
	struct object_meta m;
	bool ok;

	if (object_meta(val, len, &m) != 0)
		return false;
	ok = (api ? is(m.api_version, m.api_version_len, api) :
		    !m.api_version) &&
	     (kind ? is(m.kind, m.kind_len, kind) : !m.kind);
	if (!ok)
		tap_diag("got apiVersion '%s', kind '%s'",
			 m.api_version ? m.api_version : "(none)",
			 m.kind ? m.kind : "(none)");
	object_meta_release(&m);
	return ok;
}

static int rc_of(const char *val, size_t len)
{
	struct object_meta m;
	int rc = object_meta(val, len, &m);

	if (rc)
		/* nothing held on error */
		if (m.api_version || m.kind)
			return 1;
	object_meta_release(&m);
	return rc;
}

static bool test_protobuf(void)
{
	/* apps/v1 Deployment: raw first, an unknown varint and fixed64 */
	static const char deploy[] =
		"k8s\0"
		"\x12\x02\x08\x01"
		"\x28\x96\x01"
		"\x31\x01\x02\x03\x04\x05\x06\x07\x08"
		"\x0a\x15\x0a\x07" "apps/v1" "\x12\x0a" "Deployment"
		"\x22\x00";
	/* TypeMeta twice: merged, the last kind wins */
	static const char twice[] =
		"k8s\0"
		"\x0a\x04\x0a\x02v1"
		"\x0a\x06\x12\x04Node"
		"\x0a\x05\x12\x03Pod";
	/* a NUL inside the kind is kept, and counted */
	static const char nul[] = "k8s\0\x0a\x05\x12\x03" "a\0b";
	struct object_meta m;

	CHECK(meta_is(pod, sizeof(pod) - 1, "v1", "Pod"));
	CHECK(meta_is(deploy, sizeof(deploy) - 1, "apps/v1", "Deployment"));
	CHECK(meta_is(twice, sizeof(twice) - 1, "v1", "Pod"));
	/* the magic alone, and an envelope without TypeMeta: no fields */
	CHECK(meta_is(S("k8s\0"), NULL, NULL));
	CHECK(meta_is(S("k8s\0\x12\x01z"), NULL, NULL));
	CHECK(object_meta(nul, sizeof(nul) - 1, &m) == 0);
	CHECK(m.kind && m.kind_len == 3 && memcmp(m.kind, "a\0b", 3) == 0);
	CHECK(!m.api_version);
	object_meta_release(&m);
	return true;
}

/* Every cut of the Pod: an envelope that reads, or EBADMSG; never more. */
static bool test_every_cut(void)
{
	size_t cut;

	for (cut = 0; cut < sizeof(pod) - 1; cut++) {
		char *part = malloc(cut ? cut : 1);
		int rc;

		CHECK(part);
		memcpy(part, pod, cut);
		rc = rc_of(part, cut);
		free(part);
		if (cut < 4)
			CHECK(rc == -ENODATA);
		else if (cut == 4 || cut == 4 + 2 + 9 || cut == 4 + 2 + 9 + 5 ||
			 cut == 4 + 2 + 9 + 5 + 2)
			/* at a field's boundary: the fields before it read */
			CHECK(rc == 0);
		else
			/* inside a field: its tag, length or bytes cut */
			CHECK(rc == -EBADMSG);
	}
	/* the cuts at field boundaries read what they hold */
	CHECK(meta_is(pod, 4 + 2 + 9, "v1", "Pod"));
	CHECK(rc_of(pod, 4 + 2 + 9 + 1) == -EBADMSG);
	return true;
}

static bool test_malformed(void)
{
	/* a group (wire type 3) */
	CHECK(rc_of(S("k8s\0\x0b\x0c")) == -EBADMSG);
	/* field number 0 */
	CHECK(rc_of(S("k8s\0\x02\x00")) == -EBADMSG);
	/* an 11-byte varint, and a tenth byte over 64 bits */
	CHECK(rc_of(S("k8s\0\x28\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"
		      "\x01")) == -EBADMSG);
	CHECK(rc_of(S("k8s\0\x28\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02")) ==
	      -EBADMSG);
	/* the largest varint is fine (field 5, unknown) */
	CHECK(rc_of(S("k8s\0\x28\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01")) ==
	      0);
	/* a length past the end, and a huge one */
	CHECK(rc_of(S("k8s\0\x0a\x08\x0a\x02v1")) == -EBADMSG);
	CHECK(rc_of(S("k8s\0\x0a\xff\xff\xff\xff\x0f")) == -EBADMSG);
	/* TypeMeta as a varint; its kind as a varint */
	CHECK(rc_of(S("k8s\0\x08\x01")) == -EBADMSG);
	CHECK(rc_of(S("k8s\0\x0a\x02\x10\x01")) == -EBADMSG);
	/* a fixed64 cut short */
	CHECK(rc_of(S("k8s\0\x31\x01\x02")) == -EBADMSG);
	return true;
}

static bool test_json(void)
{
	CHECK(meta_is(S("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
			"\"data\":{\"a\":\"b\"}}"),
		      "v1", "ConfigMap"));
	CHECK(meta_is(S(" \n\t{\"kind\": \"Namespace\", \"apiVersion\": "
			"\"v1\"}\n"),
		      "v1", "Namespace"));
	/* a nested kind is not the object's */
	CHECK(meta_is(S("{\"spec\":{\"kind\":\"Pod\"}}"), NULL, NULL));
	/* not strings: absent */
	CHECK(meta_is(S("{\"kind\":3,\"apiVersion\":null}"), NULL, NULL));
	/* not objects */
	CHECK(rc_of(S("[1,2]")) == -ENODATA);
	CHECK(rc_of(S("{not json")) == -ENODATA);
	CHECK(rc_of(S("{\"kind\":\"Pod\"} trailing")) == -ENODATA);
	CHECK(rc_of(S("{\"kind\":\"a\",\"kind\":\"b\"}")) == -ENODATA);
	CHECK(rc_of(S("hello")) == -ENODATA);
	CHECK(rc_of(S("")) == -ENODATA);
	CHECK(rc_of(S("k8s")) == -ENODATA);
	CHECK(rc_of(S("k8s ")) == -ENODATA);
	return true;
}

static bool test_maybe(void)
{
	CHECK(object_maybe(pod, sizeof(pod) - 1));
	CHECK(object_maybe(S("k8s\0")));
	CHECK(object_maybe(S("  {")));
	CHECK(!object_maybe(S("k8s")));
	CHECK(!object_maybe(S("")));
	CHECK(!object_maybe(S("x{")));
	CHECK(!object_maybe(S("   ")));
	return true;
}

int main(void)
{
	TAP_RUN(test_protobuf);
	TAP_RUN(test_every_cut);
	TAP_RUN(test_malformed);
	TAP_RUN(test_json);
	TAP_RUN(test_maybe);
	return tap_done(0);
}

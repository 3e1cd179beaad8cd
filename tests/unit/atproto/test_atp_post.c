/*
 * test_atp_post — the pure half of adapters/atproto: facets with UTF-8 BYTE
 * offsets (emoji, CJK, combining marks before the facet), the detection
 * rules of §5.5 (trailing punctuation, bare links, anchoring, cashtags,
 * hashtags), the 300-grapheme and 3000-byte limits (refused, never cut),
 * reply refs, langs, createdAt, the chain and key fields, identifiers,
 * JWT exp, the outbound target keys and the query encoder.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "adapters/atproto/atproto.h"
#include "adapters/atproto/post.h"
#include "common/json.h"
#include "modules/bluesky/port.h"

#define T0 ((int64_t)1800000000000) /* 2027-01-15T08:00:00.000Z */

/* The substring a facet covers, for comparing against what a reader sees. */
static char *covered(const char *text, const struct atp_facet *f)
{
	return strndup(text + f->byte_start, f->byte_end - f->byte_start);
}

static const struct atp_facet *find_kind(const struct atp_facets *fs, enum atp_facet_kind k,
                                         size_t nth)
{
	for (size_t i = 0; i < fs->n; i++)
		if (fs->items[i].kind == k && nth-- == 0)
			return &fs->items[i];
	return NULL;
}

static void test_byte_offsets_after_emoji_and_cjk(void **state)
{
	(void)state;
	/* 👋🏽 is 8 bytes (2 code points, 4 UTF-16 units), 日本語 9 bytes. */
	const char *t =
	        "👋🏽 日本語 hi @alice.bsky.social see https://example.com/a?b=1. #café? "
	        "#rust_lang $ABC!";
	struct atp_facets fs;
	atp_facets_detect(t, strlen(t), &fs);
	const struct atp_facet *m = find_kind(&fs, ATP_FACET_MENTION, 0);
	assert_non_null(m);
	size_t at = (size_t)(strstr(t, "@alice") - t);
	assert_int_equal(m->byte_start, at);
	assert_int_equal(at, 8 + 1 + 9 + 1 + 3); /* bytes, not UTF-16 units (which give 15) */
	char *s = covered(t, m);
	assert_string_equal(s, "@alice.bsky.social");
	free(s);
	assert_string_equal(m->value, "alice.bsky.social");
	const struct atp_facet *l = find_kind(&fs, ATP_FACET_LINK, 0);
	assert_non_null(l);
	s = covered(t, l);
	assert_string_equal(s, "https://example.com/a?b=1"); /* the final '.' trimmed */
	free(s);
	assert_string_equal(l->value, "https://example.com/a?b=1");
	/* #café: 'é' is not [A-Za-z0-9_-] and is not in the follow set: no
	 * tag (the spec's ASCII rule); #rust_lang and $ABC are tags. */
	const struct atp_facet *t1 = find_kind(&fs, ATP_FACET_TAG, 0);
	const struct atp_facet *t2 = find_kind(&fs, ATP_FACET_TAG, 1);
	assert_non_null(t1);
	assert_non_null(t2);
	assert_null(find_kind(&fs, ATP_FACET_TAG, 2));
	assert_string_equal(t1->value, "rust_lang");
	assert_string_equal(t2->value, "ABC");
	s = covered(t, t2);
	assert_string_equal(s, "$ABC");
	free(s);
	atp_facets_free(&fs);
}

static void test_facets_json_sorted_and_resolved_only(void **state)
{
	(void)state;
	const char *t = "@bob.test and github.com/o/r) and @ghost.test #tag";
	struct atp_facets fs;
	atp_facets_detect(t, strlen(t), &fs);
	assert_int_equal(fs.n, 4);
	assert_int_equal(atp_facets_set_did(&fs, "BOB.test", "did:plc:bob123"), 1);
	assert_int_equal(atp_facets_set_did(&fs, "bob.test", "not-a-did"), 0);
	cJSON *arr = atp_facets_json(&fs);
	assert_non_null(arr);
	/* ghost is unresolved: left out; the rest sorted by byteStart. */
	assert_int_equal(cJSON_GetArraySize(arr), 3);
	const cJSON *f0 = cJSON_GetArrayItem(arr, 0);
	const cJSON *idx = cJSON_GetObjectItem(f0, "index");
	assert_int_equal(json_int_or(idx, "byteStart", -1), 0);
	assert_int_equal(json_int_or(idx, "byteEnd", -1), 9);
	const cJSON *feat = cJSON_GetArrayItem(cJSON_GetObjectItem(f0, "features"), 0);
	assert_string_equal(json_string_or(feat, "$type", ""), "app.bsky.richtext.facet#mention");
	assert_string_equal(json_string_or(feat, "did", ""), "did:plc:bob123");
	const cJSON *f1 = cJSON_GetArrayItem(arr, 1);
	feat = cJSON_GetArrayItem(cJSON_GetObjectItem(f1, "features"), 0);
	assert_string_equal(json_string_or(feat, "$type", ""), "app.bsky.richtext.facet#link");
	/* bare link: https:// added, ')' not part of it */
	assert_string_equal(json_string_or(feat, "uri", ""), "https://github.com/o/r");
	idx = cJSON_GetObjectItem(f1, "index");
	assert_int_equal(json_int_or(idx, "byteEnd", -1) - json_int_or(idx, "byteStart", -1),
	                 (int64_t)strlen("github.com/o/r"));
	const cJSON *f2 = cJSON_GetArrayItem(arr, 2);
	feat = cJSON_GetArrayItem(cJSON_GetObjectItem(f2, "features"), 0);
	assert_string_equal(json_string_or(feat, "tag", ""), "tag");
	cJSON_Delete(arr);
	atp_facets_free(&fs);
}

static void test_detection_rules(void **state)
{
	(void)state;
	struct atp_facets fs;
	/* not anchored: mail@example.com, a#b, x$ABC; not a handle: @nodot */
	const char *t = "mail@example.com a#b x$ABC @nodot $TOOLONG #1abc (@carol.test) "
	                "(https://x.org/p).";
	atp_facets_detect(t, strlen(t), &fs);
	const struct atp_facet *m = find_kind(&fs, ATP_FACET_MENTION, 0);
	assert_non_null(m);
	assert_string_equal(m->value, "carol.test");
	assert_null(find_kind(&fs, ATP_FACET_MENTION, 1));
	assert_null(find_kind(&fs, ATP_FACET_TAG, 0));
	const struct atp_facet *l = find_kind(&fs, ATP_FACET_LINK, 0);
	assert_non_null(l);
	assert_string_equal(l->value, "https://x.org/p"); /* ")." trimmed */
	assert_null(find_kind(&fs, ATP_FACET_LINK, 1));
	atp_facets_free(&fs);
	/* a mention inside a URL is not a mention; a bare host inside a URL
	 * is not a second link */
	t = "https://bsky.app/profile/@dan.test https://github.com/x/y";
	atp_facets_detect(t, strlen(t), &fs);
	assert_int_equal(fs.n, 2);
	assert_null(find_kind(&fs, ATP_FACET_MENTION, 0));
	atp_facets_free(&fs);
	/* invalid UTF-8 inside a URL: no facet over the bad bytes */
	const char bad[] = "see https://a.b/\xff\xfe end";
	atp_facets_detect(bad, sizeof bad - 1, &fs);
	assert_int_equal(fs.n, 0);
	atp_facets_free(&fs);
}

static char *repeat(const char *unit, size_t n)
{
	size_t u = strlen(unit);
	char *s = malloc(u * n + 1);
	for (size_t i = 0; i < n; i++)
		memcpy(s + i * u, unit, u);
	s[u * n] = '\0';
	return s;
}

static void test_grapheme_and_byte_limits(void **state)
{
	(void)state;
	struct ga_err err = {{0}};
	/* a family emoji is 7 code points, 25 bytes, ONE grapheme */
	const char *family = "👨‍👩‍👧‍👦";
	char *s = repeat("a", 300);
	assert_int_equal(atp_post_check_text(s, strlen(s), &err), 0);
	free(s);
	s = repeat("a", 301);
	assert_int_equal(atp_post_check_text(s, strlen(s), &err), -1);
	assert_non_null(strstr(err.msg, "301 graphemes"));
	assert_non_null(strstr(err.msg, "300"));
	free(s);
	s = repeat(family, 100); /* 100 graphemes, 2500 bytes: fine */
	assert_int_equal(atp_post_check_text(s, strlen(s), &err), 0);
	free(s);
	s = repeat(family, 121); /* 121 graphemes, 3025 bytes: over the byte limit */
	assert_int_equal(atp_post_check_text(s, strlen(s), &err), -1);
	assert_non_null(strstr(err.msg, "3025 bytes"));
	free(s);
	assert_int_equal(atp_post_check_text("", 0, &err), -1);
	assert_int_equal(atp_post_check_text("\xc3", 1, &err), -1);
	assert_non_null(strstr(err.msg, "UTF-8"));
}

static void test_post_record(void **state)
{
	(void)state;
	struct ga_err err = {{0}};
	struct atp_reply_ref rr = {
	        .root = {"at://did:plc:root/app.bsky.feed.post/3kroot", "bafyreiroot1234"},
	        .parent = {"at://did:plc:par/app.bsky.feed.post/3kpar", "bafyreipar12345"},
	};
	const char *langs[] = {"en", "pt-BR"};
	const char *text = "hello @bob.test";
	struct atp_facets fs;
	atp_facets_detect(text, strlen(text), &fs);
	atp_facets_set_did(&fs, "bob.test", "did:plc:bob");
	struct atp_post_in in = {.text = text,
	                         .text_len = strlen(text),
	                         .reply = &rr,
	                         .facets = &fs,
	                         .langs = langs,
	                         .n_langs = 2,
	                         .created_at_ms = T0 + 5,
	                         .chain = 2,
	                         .idem_key = "k-123"};
	cJSON *rec = atp_post_record(&in, &err);
	assert_non_null(rec);
	assert_string_equal(json_string_or(rec, "$type", ""), "app.bsky.feed.post");
	assert_string_equal(json_string_or(rec, "text", ""), text);
	assert_string_equal(json_string_or(rec, "createdAt", ""), "2027-01-15T08:00:00.005Z");
	const cJSON *reply = cJSON_GetObjectItem(rec, "reply");
	assert_string_equal(json_string_or(cJSON_GetObjectItem(reply, "root"), "uri", ""),
	                    rr.root.uri);
	assert_string_equal(json_string_or(cJSON_GetObjectItem(reply, "parent"), "cid", ""),
	                    rr.parent.cid);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(rec, "langs")), 2);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(rec, "facets")), 1);
	assert_int_equal(atp_record_chain(rec), 2);
	assert_string_equal(atp_record_key(rec), "k-123");
	struct atp_reply_ref back;
	assert_int_equal(atp_reply_ref_from_json(reply, &back, &err), 0);
	assert_string_equal(back.root.uri, rr.root.uri);
	cJSON_Delete(rec);

	/* no chain, no key, no reply: none of the fields */
	in.reply = NULL;
	in.chain = -1;
	in.idem_key = NULL;
	in.n_langs = 0;
	rec = atp_post_record(&in, &err);
	assert_non_null(rec);
	assert_null(cJSON_GetObjectItem(rec, "reply"));
	assert_null(cJSON_GetObjectItem(rec, ATP_FIELD_CHAIN));
	assert_null(cJSON_GetObjectItem(rec, ATP_FIELD_KEY));
	assert_null(cJSON_GetObjectItem(rec, "langs"));
	assert_int_equal(atp_record_chain(rec), -1);
	cJSON_Delete(rec);

	/* refusals name what was wrong */
	const char *bad_langs[] = {"english!"};
	in.langs = bad_langs;
	in.n_langs = 1;
	assert_null(atp_post_record(&in, &err));
	assert_non_null(strstr(err.msg, "english!"));
	const char *four[] = {"en", "de", "fr", "es"};
	in.langs = four;
	in.n_langs = 4;
	assert_null(atp_post_record(&in, &err));
	assert_non_null(strstr(err.msg, "at most 3"));
	in.n_langs = 0;
	struct atp_reply_ref badref = rr;
	snprintf(badref.parent.uri, sizeof badref.parent.uri, "https://bsky.app/x");
	in.reply = &badref;
	assert_null(atp_post_record(&in, &err));
	assert_non_null(strstr(err.msg, "parent"));
	badref = rr;
	badref.root.cid[0] = '\0';
	assert_null(atp_post_record(&in, &err));
	assert_non_null(strstr(err.msg, "root"));
	atp_facets_free(&fs);
}

static void test_reply_ref_for(void **state)
{
	(void)state;
	struct ga_err err = {{0}};
	struct atp_strong_ref parent = {"at://did:plc:p/app.bsky.feed.post/3kp", "bafyreiparent1"};
	struct atp_reply_ref out;
	/* a top-level parent is its own root */
	assert_int_equal(atp_reply_ref_for(&parent, NULL, &out, &err), 0);
	assert_string_equal(out.root.uri, parent.uri);
	assert_string_equal(out.parent.cid, parent.cid);
	/* a parent that is itself a reply carries the thread's root */
	cJSON *rec = cJSON_Parse("{\"text\":\"x\",\"reply\":{\"root\":{\"uri\":\"at://did:plc:r/"
	                         "app.bsky.feed.post/3kr\",\"cid\":\"bafyreiroot01\"},\"parent\":"
	                         "{\"uri\":\"at://did:plc:r/app.bsky.feed.post/3kr\",\"cid\":"
	                         "\"bafyreiroot01\"}}}");
	assert_int_equal(atp_reply_ref_for(&parent, rec, &out, &err), 0);
	assert_string_equal(out.root.uri, "at://did:plc:r/app.bsky.feed.post/3kr");
	assert_string_equal(out.parent.uri, parent.uri);
	cJSON_Delete(rec);
	rec = cJSON_Parse("{\"reply\":{\"root\":{\"uri\":5}}}");
	assert_int_equal(atp_reply_ref_for(&parent, rec, &out, &err), -1);
	assert_non_null(strstr(err.msg, "root"));
	cJSON_Delete(rec);
}

static void test_identifiers(void **state)
{
	(void)state;
	char did[ATP_DID_MAX], coll[128], rkey[ATP_RKEY_MAX];
	struct ga_err err = {{0}};
	assert_int_equal(atp_uri_parse("at://did:plc:abc123/app.bsky.feed.post/3kabc", did,
	                               sizeof did, coll, sizeof coll, rkey, sizeof rkey, &err),
	                 0);
	assert_string_equal(did, "did:plc:abc123");
	assert_string_equal(coll, "app.bsky.feed.post");
	assert_string_equal(rkey, "3kabc");
	assert_int_equal(atp_uri_parse("at://did:plc:abc/app.bsky.feed.post", NULL, 0, NULL, 0,
	                               NULL, 0, &err),
	                 -1);
	assert_int_equal(atp_uri_parse("http://x/y/z", NULL, 0, NULL, 0, NULL, 0, &err), -1);
	assert_true(atp_valid_did("did:plc:ewvi7nxzyoun6zhxrhs64oiz"));
	assert_true(atp_valid_did("did:web:example.com"));
	assert_false(atp_valid_did("did:plc:"));
	assert_false(atp_valid_did("plc:abc"));
	assert_true(atp_valid_handle("alice.bsky.social"));
	assert_false(atp_valid_handle("alice"));
	assert_false(atp_valid_handle("alice.123"));
	assert_false(atp_valid_handle("-a.test"));
	char *u = atp_post_web_url("at://did:plc:abc/app.bsky.feed.post/3kx");
	assert_string_equal(u, "https://bsky.app/profile/did:plc:abc/post/3kx");
	free(u);
	assert_null(atp_post_web_url("at://did:plc:abc/app.bsky.feed.like/3kx"));
}

static void test_jwt_exp(void **state)
{
	(void)state;
	/* header {"alg":"HS256"} . payload {"sub":"did:plc:x","exp":1800000000} . sig */
	const char *jwt =
	        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJkaWQ6cGxjOngiLCJleHAiOjE4MDAwMDAwMDB9.c2ln";
	assert_int_equal(atp_jwt_exp_ms(jwt), (int64_t)1800000000 * 1000);
	assert_int_equal(atp_jwt_exp_ms("opaque-token"), -1);
	assert_int_equal(atp_jwt_exp_ms("a.!!!.b"), -1);
	assert_int_equal(atp_jwt_exp_ms("a.e30.b"), -1); /* {} : no exp */
}

static void test_classify(void **state)
{
	(void)state;
	bool auth, rate;
	char xe[ATP_XRPC_ERROR_MAX], msg[GA_ERR_MSG_MAX];
	const char *b = "{\"error\":\"ExpiredToken\",\"message\":\"Token has expired\"}";
	assert_int_equal(atp_classify(400, "application/json", b, strlen(b), "read the thread",
	                              NULL, &auth, &rate, xe, msg, sizeof msg),
	                 ATP_ERR_AUTH);
	assert_true(auth);
	assert_string_equal(xe, "ExpiredToken");
	assert_non_null(strstr(msg, "read the thread"));
	assert_non_null(strstr(msg, "Token has expired"));
	b = "{\"error\":\"InvalidRequest\",\"message\":\"Invalid app.bsky.feed.post record: "
	    "Record/text must not be longer than 300 graphemes\"}";
	assert_int_equal(atp_classify(400, NULL, b, strlen(b), "create a post", NULL, &auth, &rate,
	                              xe, msg, sizeof msg),
	                 ATP_ERR_INVALID);
	assert_false(auth);
	assert_string_equal(msg, "Bluesky refused to create a post (400 InvalidRequest: Invalid "
	                         "app.bsky.feed.post record: Record/text must not be longer than "
	                         "300 graphemes)");
	b = "{\"error\":\"NotFound\",\"message\":\"Post not found: at://x\"}";
	assert_int_equal(atp_classify(400, NULL, b, strlen(b), "read", NULL, &auth, &rate, xe, msg,
	                              sizeof msg),
	                 ATP_ERR_NOT_FOUND);
	b = "{\"error\":\"RateLimitExceeded\",\"message\":\"Rate Limit Exceeded\"}";
	assert_int_equal(atp_classify(429, NULL, b, strlen(b), "read", "0", &auth, &rate, xe, msg,
	                              sizeof msg),
	                 ATP_ERR_RATE_LIMITED);
	assert_true(rate);
	assert_int_equal(
	        atp_classify(403, NULL, "{}", 2, "read", "0", &auth, &rate, xe, msg, sizeof msg),
	        ATP_ERR_RATE_LIMITED);
	assert_int_equal(
	        atp_classify(403, NULL, "{}", 2, "read", "12", &auth, &rate, xe, msg, sizeof msg),
	        ATP_ERR_FORBIDDEN);
	assert_int_equal(
	        atp_classify(401, NULL, "", 0, "read", NULL, &auth, &rate, xe, msg, sizeof msg),
	        ATP_ERR_AUTH);
	assert_true(auth);
	b = "<html><body>502 Bad Gateway</body></html>";
	assert_int_equal(atp_classify(502, "text/html", b, strlen(b), "read", NULL, &auth, &rate,
	                              xe, msg, sizeof msg),
	                 ATP_ERR_TRANSIENT);
	assert_non_null(strstr(msg, "HTML"));
	assert_int_equal(atp_classify(200, "text/html", b, strlen(b), "read", NULL, &auth, &rate,
	                              xe, msg, sizeof msg),
	                 ATP_ERR_TRANSIENT);
	assert_int_equal(atp_classify(200, "application/json", "{}", 2, "read", NULL, &auth, &rate,
	                              xe, msg, sizeof msg),
	                 ATP_OK);
	assert_int_equal(
	        atp_classify(501, NULL, "{}", 2, "read", NULL, &auth, &rate, xe, msg, sizeof msg),
	        ATP_ERR_REFUSED);
}

static void test_targets_and_query(void **state)
{
	(void)state;
	enum atp_target_kind k;
	char did[ATP_DID_MAX];
	struct ga_err err = {{0}};
	assert_int_equal(atp_target_parse("bluesky:post", &k, did, sizeof did, &err), 0);
	assert_int_equal(k, ATP_TARGET_POST);
	assert_string_equal(did, "");
	assert_int_equal(atp_target_parse("bluesky:reply:did:plc:abc", &k, did, sizeof did, &err),
	                 0);
	assert_int_equal(k, ATP_TARGET_REPLY);
	assert_string_equal(did, "did:plc:abc");
	assert_int_equal(atp_target_parse("bluesky:like:did:plc:abc", &k, did, sizeof did, &err),
	                 0);
	assert_int_equal(k, ATP_TARGET_LIKE);
	assert_int_equal(atp_target_parse("bluesky:reply:alice.test", &k, did, sizeof did, &err),
	                 -1);
	assert_non_null(strstr(err.msg, "DID"));
	assert_int_equal(atp_target_parse("github:issue:o/r#1", &k, did, sizeof did, &err), -1);
	char q[64] = "";
	assert_int_equal(atp_query_add(q, sizeof q, "uri", "at://did:plc:a/b c"), 0);
	assert_string_equal(q, "uri=at%3A%2F%2Fdid%3Aplc%3Aa%2Fb%20c");
	assert_int_equal(atp_query_add(q, sizeof q, "depth", "0"), 0);
	assert_string_equal(q, "uri=at%3A%2F%2Fdid%3Aplc%3Aa%2Fb%20c&depth=0");
	char small[8] = "";
	assert_int_equal(atp_query_add(small, sizeof small, "cursor", "abcdef"), -1);
	assert_string_equal(small, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_byte_offsets_after_emoji_and_cjk),
	        cmocka_unit_test(test_facets_json_sorted_and_resolved_only),
	        cmocka_unit_test(test_detection_rules),
	        cmocka_unit_test(test_grapheme_and_byte_limits),
	        cmocka_unit_test(test_post_record),
	        cmocka_unit_test(test_reply_ref_for),
	        cmocka_unit_test(test_identifiers),
	        cmocka_unit_test(test_jwt_exp),
	        cmocka_unit_test(test_classify),
	        cmocka_unit_test(test_targets_and_query),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

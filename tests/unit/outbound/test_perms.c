/*
 * perms: canonical spelling of every target form, the refusals of every
 * malformed kind, '*' matching one or more segments, the three modes, the
 * seed's refusal text with "did you mean", the file and perms_refresh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four above first */
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fsx.h"
#include "modules/outbound/perms.h"
#include "testutil.h"

struct canon_case {
	const char *in;
	bool pattern;
	const char *want; /* canonical form, or NULL: refused */
	const char *err;  /* for a refusal: a substring of the message */
};

static const struct canon_case canon_cases[] = {
        /* every form, as written */
        {"space:room", false, "space:room", NULL},
        {"bluesky:post", false, "bluesky:post", NULL},
        {"bluesky:reply:did:plc:abc234xyz", false, "bluesky:reply:did:plc:abc234xyz", NULL},
        {"bluesky:Like:DID:PLC:ABC234", false, "bluesky:like:did:plc:abc234", NULL},
        {"bluesky:like:*", true, "bluesky:like:*", NULL},
        {"bluesky:follow:did:plc:abc234", false, "bluesky:follow:did:plc:abc234", NULL},
        {"bluesky:Follow:DID:PLC:ABC234", false, "bluesky:follow:did:plc:abc234", NULL},
        {"bluesky:follow:did:web:Example.COM:User", false,
         "bluesky:follow:did:web:example.com:User", NULL},
        {"bluesky:follow:*", true, "bluesky:follow:*", NULL},
        {"bluesky:delete", false, "bluesky:delete", NULL},
        {"Bluesky:DELETE", false, "bluesky:delete", NULL},
        {"bluesky:delete", true, "bluesky:delete", NULL},
        {"*:Follow:*", true, "*:follow:*", NULL},
        {"*:DELETE", true, "*:delete", NULL},
        {"github:acme:widgets:issue:3", false, "github:acme:widgets:issue:3", NULL},
        {"github:acme:widgets:new-issue", false, "github:acme:widgets:new-issue", NULL},
        {"github:acme:widgets:pr:12", false, "github:acme:widgets:pr:12", NULL},
        /* canonical spelling */
        {"SPACE:Room", false, "space:Room", NULL},
        {"Bluesky:POST", false, "bluesky:post", NULL},
        {"bluesky:Reply:DID:PLC:ABC234", false, "bluesky:reply:did:plc:abc234", NULL},
        {"bluesky:reply:did:web:Example.COM:User", false, "bluesky:reply:did:web:example.com:User",
         NULL},
        {"GitHub:Acme:Widgets:Issue:3", false, "github:acme:widgets:issue:3", NULL},
        {"github:acme:widgets.git:issue:03", false, "github:acme:widgets:issue:3", NULL},
        {"github:acme:Widgets.GIT:PR:0012", false, "github:acme:widgets:pr:12", NULL},
        {"github:my-org:my_repo.v2:issue:2147483647", false,
         "github:my-org:my_repo.v2:issue:2147483647", NULL},
        {"github:123:456:issue:7", false, "github:123:456:issue:7", NULL},
        /* patterns */
        {"space:*", true, "space:*", NULL},
        {"*", true, "*", NULL},
        {"bluesky:*", true, "bluesky:*", NULL},
        {"bluesky:reply:*", true, "bluesky:reply:*", NULL},
        {"github:ACME:*", true, "github:acme:*", NULL},
        {"github:acme:widgets.GIT:*", true, "github:acme:widgets:*", NULL},
        {"github:*:issue:*", true, "github:*:issue:*", NULL},
        {"github:*:*:pr:*", true, "github:*:*:pr:*", NULL},
        {"*:PR:*", true, "*:pr:*", NULL},
        {"github:acme:widgets:issue:3", true, "github:acme:widgets:issue:3", NULL},
        /* refusals: bytes */
        {"", false, NULL, "empty"},
        {"space:a b", true, NULL, "whitespace"},
        {"space:a\tb", false, NULL, "whitespace"},
        {"space:a\x01", false, NULL, "control character"},
        {"space:a\x7f", false, NULL, "control character"},
        {"github:\xd0\xb0"
         "cme:widgets:issue:1",
         true, NULL, "non-ASCII"}, /* Cyrillic a */
        {"github:\xef\xbd\x81"
         "cme:widgets:issue:1",
         true, NULL, "non-ASCII"}, /* full-width a */
        {"github:acme%2fwidgets:x:issue:1", true, NULL, "percent"},
        {"github:ac%6De:widgets:issue:1", false, NULL, "percent"},
        /* refusals: segments */
        {"space::x", true, NULL, "empty segment"},
        {"space:room:", true, NULL, "empty segment"},
        {":space:room", true, NULL, "empty segment"},
        {"github:acme::issue:1", true, NULL, "empty segment"},
        {"gh*:acme", true, NULL, "whole segment"},
        {"github:acme:wid*:issue:1", true, NULL, "whole segment"},
        {"github:acme:**", true, NULL, "whole segment"},
        {"space:*", false, NULL, "only patterns"},
        {"gitlab:acme:widgets:issue:1", true, NULL, "unknown platform \"gitlab\""},
        {"slack:*", true, NULL, "unknown platform"},
        /* refusals: arity and fields */
        {"space", false, NULL, "space:<room>"},
        {"space:a:b", false, NULL, "2 segments"},
        {"bluesky", false, NULL,
         "bluesky:post, bluesky:reply:<did>, bluesky:like:<did>, bluesky:follow:<did> or "
         "bluesky:delete"},
        {"bluesky:follow:bob", false, NULL, "a follow target is bluesky:follow:<did>"},
        {"bluesky:follow", false, NULL, "a follow target is bluesky:follow:<did>"},
        {"bluesky:follow:did:plc", false, NULL, "follow target"},
        {"bluesky:delete:at:x", false, NULL, "bluesky:delete takes nothing after it"},
        {"bluesky:delete:*", true, NULL, "cannot match any target"},
        {"bluesky:like:bob", false, NULL, "like target"},
        {"bluesky:post:x", false, NULL, "takes nothing after"},
        {"bluesky:reply:alice", false, NULL, "reply target"},
        {"bluesky:reply:did:plc", false, NULL, "reply target"},
        {"bluesky:repost:x", false, NULL, "bluesky:like:<did>, bluesky:follow:<did> or"},
        {"bluesky:unfollow:did:plc:abc", false, NULL, "bluesky:follow:<did> or bluesky:delete"},
        {"github:acme:widgets", false, NULL, "a GitHub target is"},
        {"github:acme:widgets:issue", false, NULL, "exactly one number"},
        {"github:acme:widgets:issue:1:2", false, NULL, "exactly one number"},
        {"github:acme:widgets:issue:abc", false, NULL, "issue number \"abc\" is not a number"},
        {"github:acme:widgets:pr:-1", false, NULL, "is not a number"},
        {"github:acme:widgets:issue:0", false, NULL, "is not a number"},
        {"github:acme:widgets:issue:2147483648", false, NULL, "is not a number"},
        {"github:acme:widgets:issue:1e3", false, NULL, "is not a number"},
        {"github:acme:widgets:new-issue:3", false, NULL, "takes nothing after"},
        {"github:acme:widgets:comment:1", false, NULL, "unknown GitHub target kind"},
        {"github:ac_me:widgets:issue:1", false, NULL, "not a GitHub owner name"},
        {"github:-acme:widgets:issue:1", false, NULL, "not a GitHub owner name"},
        {"github:acme:wid/gets:issue:1", false, NULL, "not a GitHub repository name"},
        {"github:acme:..:issue:1", false, NULL, "not a GitHub repository name"},
        {"github:acme:.git:issue:1", false, NULL, "not a GitHub repository name"},
        {"github:*:007", true, NULL, "leading zeros"},
        {"space:*:x", true, NULL, "cannot match any target"},
        {"bluesky:post:*", true, NULL, "cannot match any target"},
        {"github:acme:widgets:new-issue:*", true, NULL, "cannot match any target"},
        {"github:acme:widgets:issue:*:*", true, NULL, "cannot match any target"},
};

static void test_canonical_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof canon_cases / sizeof *canon_cases; i++) {
		const struct canon_case *c = &canon_cases[i];
		char out[PERMS_KEY_MAX] = "";
		struct ga_err e;
		err_clear(&e);
		int rc = perms_canonical(c->in, c->pattern, out, sizeof out, &e);
		if (c->want) {
			if (rc != 0 || strcmp(out, c->want) != 0)
				fail_msg("case %zu \"%s\": want \"%s\", got rc %d \"%s\" (%s)", i,
				         c->in, c->want, rc, out, e.msg);
		} else {
			if (rc != -1 || !strstr(e.msg, c->err))
				fail_msg("case %zu \"%s\": want refusal with \"%s\", got rc %d "
				         "\"%s\"",
				         i, c->in, c->err, rc, e.msg);
		}
	}
}

static void test_too_long_and_too_many(void **state)
{
	(void)state;
	char big[PERMS_KEY_MAX + 10];
	memcpy(big, "space:", 6);
	memset(big + 6, 'r', sizeof big - 7);
	big[sizeof big - 1] = '\0';
	char out[PERMS_KEY_MAX];
	struct ga_err e;
	assert_int_equal(perms_canonical(big, false, out, sizeof out, &e), -1);
	assert_non_null(strstr(e.msg, "bytes long"));
	/* a room of 129 bytes fits the key but not the room bound */
	char room[200] = "space:";
	memset(room + 6, 'r', 129);
	room[135] = '\0';
	assert_int_equal(perms_canonical(room, false, out, sizeof out, &e), -1);
	room[134] = '\0'; /* 128 */
	assert_int_equal(perms_canonical(room, false, out, sizeof out, &e), 0);
	const char *segs17 = "bluesky:reply:did:web:a:b:c:d:e:f:g:h:i:j:k:l:m";
	assert_int_equal(perms_canonical(segs17, false, out, sizeof out, &e), -1);
	assert_non_null(strstr(e.msg, "more than 16 segments"));

	struct perms *p = perms_new();
	for (int i = 0; i < PERMS_MAX_PATTERNS; i++) {
		char pat[64];
		snprintf(pat, sizeof pat, "space:room%d", i);
		assert_int_equal(perms_add(p, PERMS_LIST_ALLOW, pat, &e), 1);
	}
	assert_int_equal(perms_add(p, PERMS_LIST_ALLOW, "space:one-more", &e), -1);
	assert_non_null(strstr(e.msg, "full"));
	assert_int_equal(perms_add(p, PERMS_LIST_ALLOW, "space:room0", &e), 0); /* already there */
	perms_free(p);
}

struct match_case {
	enum perms_mode mode;
	const char *patterns[4];
	const char *target;
	bool allowed;
	const char *pattern; /* the deciding pattern, "" none */
};

static const struct match_case match_cases[] = {
        {PERMS_ALLOWLIST, {"space:*"}, "space:room", true, "space:*"},
        {PERMS_ALLOWLIST, {"space:*"}, "bluesky:post", false, ""},
        {PERMS_ALLOWLIST, {"space:room"}, "space:Room", false, ""}, /* rooms are exact */
        {PERMS_ALLOWLIST, {"github:acme:*"}, "github:acme:widgets:issue:3", true, "github:acme:*"},
        {PERMS_ALLOWLIST,
         {"github:acme:*"},
         "github:ACME:Widgets.git:issue:03",
         true,
         "github:acme:*"},
        {PERMS_ALLOWLIST,
         {"github:Acme:Widgets:*"},
         "github:acme:widgets:new-issue",
         true,
         "github:acme:widgets:*"},
        {PERMS_ALLOWLIST, {"github:acme:*"}, "github:acme2:widgets:issue:3", false, ""},
        {PERMS_ALLOWLIST,
         {"github:acme:*:issue:*"},
         "github:acme:widgets:issue:3",
         true,
         "github:acme:*:issue:*"},
        {PERMS_ALLOWLIST, {"github:acme:*:issue:*"}, "github:acme:widgets:pr:3", false, ""},
        /* one '*' spans owner and repo: one OR MORE segments */
        {PERMS_ALLOWLIST,
         {"github:*:issue:*"},
         "github:acme:widgets:issue:3",
         true,
         "github:*:issue:*"},
        /* but never zero: four stars need four segments after github */
        {PERMS_ALLOWLIST, {"github:*:*:*:*"}, "github:acme:widgets:new-issue", false, ""},
        {PERMS_ALLOWLIST,
         {"github:*:*:*:*"},
         "github:acme:widgets:issue:9",
         true,
         "github:*:*:*:*"},
        {PERMS_ALLOWLIST, {"bluesky:*"}, "bluesky:post", true, "bluesky:*"},
        {PERMS_ALLOWLIST, {"bluesky:*"}, "bluesky:reply:did:plc:abc", true, "bluesky:*"},
        {PERMS_ALLOWLIST, {"bluesky:reply:*"}, "bluesky:post", false, ""},
        /* follows and deletes of our own records: explicit, never implied */
        {PERMS_ALLOWLIST, {"bluesky:*"}, "bluesky:follow:did:plc:abc", true, "bluesky:*"},
        {PERMS_ALLOWLIST, {"bluesky:*"}, "bluesky:delete", true, "bluesky:*"},
        {PERMS_ALLOWLIST,
         {"bluesky:post", "bluesky:reply:*", "bluesky:like:*"},
         "bluesky:follow:did:plc:abc",
         false,
         ""},
        {PERMS_ALLOWLIST,
         {"bluesky:post", "bluesky:reply:*", "bluesky:like:*"},
         "bluesky:delete",
         false,
         ""},
        {PERMS_ALLOWLIST,
         {"bluesky:follow:*"},
         "bluesky:follow:did:plc:abc",
         true,
         "bluesky:follow:*"},
        {PERMS_ALLOWLIST, {"bluesky:follow:*"}, "bluesky:reply:did:plc:abc", false, ""},
        {PERMS_ALLOWLIST, {"bluesky:delete"}, "bluesky:delete", true, "bluesky:delete"},
        {PERMS_ALLOWLIST, {"*:follow:*"}, "bluesky:follow:did:plc:abc", true, "*:follow:*"},
        {PERMS_DENYLIST,
         {"bluesky:follow:*"},
         "bluesky:follow:did:plc:abc",
         false,
         "bluesky:follow:*"},
        {PERMS_DENYLIST, {"bluesky:follow:*"}, "bluesky:delete", true, ""},
        {PERMS_DENYLIST, {"bluesky:delete"}, "bluesky:delete", false, "bluesky:delete"},
        {PERMS_BYPASS, {NULL}, "bluesky:follow:did:plc:abc", true, ""},
        {PERMS_BYPASS, {NULL}, "bluesky:delete", true, ""},
        {PERMS_BYPASS, {NULL}, "bluesky:delete:at:x", false, ""},
        {PERMS_ALLOWLIST,
         {"bluesky:reply:did:plc:abc"},
         "bluesky:reply:did:plc:ABC",
         true,
         "bluesky:reply:did:plc:abc"},
        {PERMS_ALLOWLIST, {"*"}, "github:a:b:pr:1", true, "*"},
        {PERMS_ALLOWLIST, {"*:pr:*"}, "github:a:b:pr:1", true, "*:pr:*"},
        {PERMS_ALLOWLIST, {"*:pr:*"}, "github:a:b:issue:1", false, ""},
        {PERMS_ALLOWLIST, {NULL}, "space:room", false, ""},
        {PERMS_DENYLIST,
         {"github:acme:secret:*"},
         "github:acme:secret:issue:3",
         false,
         "github:acme:secret:*"},
        {PERMS_DENYLIST,
         {"github:acme:secret:*"},
         "github:Acme:Secret.git:issue:3",
         false,
         "github:acme:secret:*"},
        {PERMS_DENYLIST, {"github:acme:secret:*"}, "github:acme:widgets:issue:3", true, ""},
        {PERMS_BYPASS, {"space:*"}, "github:acme:secret:issue:3", true, ""},
        /* a malformed target is refused in every mode */
        {PERMS_BYPASS, {NULL}, "github:acme:secret:issue:x", false, ""},
        {PERMS_DENYLIST, {NULL}, "gitlab:a:b", false, ""},
        {PERMS_BYPASS,
         {NULL},
         "github:\xd0\xb0"
         "cme:secret:issue:3",
         false,
         ""},
};

static void test_match_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof match_cases / sizeof *match_cases; i++) {
		const struct match_case *c = &match_cases[i];
		struct perms *p = perms_new();
		perms_set_mode(p, c->mode);
		struct ga_err e;
		for (size_t k = 0; k < 4 && c->patterns[k]; k++)
			assert_int_equal(perms_add(p,
			                           c->mode == PERMS_DENYLIST ? PERMS_LIST_DENY
			                                                     : PERMS_LIST_ALLOW,
			                           c->patterns[k], &e),
			                 1);
		struct perms_verdict v;
		perms_check(p, c->target, &v);
		if (v.allowed != c->allowed || strcmp(v.pattern, c->pattern) != 0)
			fail_msg("case %zu %s: want %d \"%s\", got %d \"%s\" (%s)", i, c->target,
			         c->allowed, c->pattern, v.allowed, v.pattern, v.d.reason);
		assert_string_equal(v.d.rule, "send_permission");
		assert_int_equal(v.d.verdict, c->allowed ? VERDICT_PASS : VERDICT_DROP);
		perms_free(p);
	}
}

static struct perms *seed_perms(void)
{
	struct perms *p = perms_new();
	struct ga_err e;
	perms_set_mode(p, PERMS_ALLOWLIST);
	assert_int_equal(perms_add(p, PERMS_LIST_ALLOW, "space:*", &e), 1);
	assert_int_equal(perms_add(p, PERMS_LIST_ALLOW, "github:acme:widgets:*", &e), 1);
	return p;
}

static void test_denial_text_allowlist(void **state)
{
	(void)state;
	struct perms *p = seed_perms();
	struct perms_verdict v;
	perms_check(p, "github:acme:secret:issue:3", &v);
	assert_false(v.allowed);
	char *txt = perms_denial_text(p, "ada", "github:acme:secret:issue:3", &v);
	assert_string_equal(txt, "Permission denied: agent \"ada\" cannot send to "
	                         "\"github:acme:secret:issue:3\"\n"
	                         "Send permissions: allowlist mode\n"
	                         "Allowed patterns:\n"
	                         "  - space:*\n"
	                         "  - github:acme:widgets:*\n"
	                         "Target \"github:acme:secret:issue:3\" does not match any allowed "
	                         "pattern.\n");
	free(txt);

	/* a near miss on one segment: did you mean */
	perms_check(p, "github:acme:widget:issue:3", &v);
	assert_false(v.allowed);
	assert_string_equal(v.suggestion, "github:acme:widgets:issue:3");
	txt = perms_denial_text(p, "ada", "github:acme:widget:issue:3", &v);
	assert_non_null(strstr(txt, "does not match any allowed pattern.\n"
	                            "Did you mean: github:acme:widgets:issue:3 ?\n"));
	free(txt);
	perms_check(p, "github:acme:wigdets:pr:8", &v); /* a transposition */
	assert_string_equal(v.suggestion, "github:acme:widgets:pr:8");
	perms_check(p, "spcae:room", &v); /* malformed: no suggestion, says why */
	assert_string_equal(v.suggestion, "");
	txt = perms_denial_text(p, "ada", "spcae:room", &v);
	assert_non_null(strstr(txt, "is not a valid send target"));
	assert_non_null(strstr(txt, "unknown platform"));
	free(txt);
	/* far away, or a different number: no suggestion */
	perms_check(p, "github:acme:gizmos:issue:3", &v);
	assert_string_equal(v.suggestion, "");
	perms_check(p, "github:zeta:secret:issue:3", &v);
	assert_string_equal(v.suggestion, "");
	perms_free(p);
}

static void test_denial_text_denylist(void **state)
{
	(void)state;
	struct perms *p = perms_new();
	struct ga_err e;
	perms_set_mode(p, PERMS_DENYLIST);
	assert_int_equal(perms_add(p, PERMS_LIST_DENY, "github:acme:secret:*", &e), 1);
	struct perms_verdict v;
	perms_check(p, "github:ACME:secret:issue:3", &v);
	char *txt = perms_denial_text(p, "ada", "github:ACME:secret:issue:3", &v);
	assert_string_equal(txt, "Permission denied: agent \"ada\" cannot send to "
	                         "\"github:ACME:secret:issue:3\"\n"
	                         "Send permissions: denylist mode\n"
	                         "Denied patterns:\n"
	                         "  - github:acme:secret:*\n"
	                         "Target \"github:acme:secret:issue:3\" matches denied pattern "
	                         "\"github:acme:secret:*\".\n");
	free(txt);
	perms_free(p);
}

static void test_remove_and_clear(void **state)
{
	(void)state;
	struct perms *p = seed_perms();
	struct ga_err e;
	assert_int_equal(perms_add(p, PERMS_LIST_DENY, "github:acme:widgets:*", &e), 1);
	assert_int_equal(perms_remove(p, "GITHUB:Acme:Widgets.git:*"), 2); /* both lists */
	assert_int_equal(perms_count(p, PERMS_LIST_ALLOW), 1);
	assert_int_equal(perms_remove(p, "space:nothing"), 0);
	perms_clear(p);
	assert_int_equal(perms_mode_of(p), PERMS_BYPASS);
	assert_int_equal(perms_count(p, PERMS_LIST_ALLOW), 0);
	perms_free(p);
}

static void test_file_and_refresh(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	struct ga_err e;
	err_clear(&e);
	struct perms *live = perms_open(dir, &e);
	assert_null(perms_broken(live));
	assert_int_equal(perms_mode_of(live), PERMS_BYPASS);
	assert_int_equal(perms_refresh(live, &e), 0);

	/* another process (the CLI) writes the file: the daemon picks it up */
	struct perms *cli = seed_perms();
	char *path = fsx_join(dir, PERMS_FILE_NAME);
	assert_int_equal(perms_save(cli, path, &e), 0);
	assert_int_equal(perms_refresh(live, &e), 1);
	assert_int_equal(perms_mode_of(live), PERMS_ALLOWLIST);
	assert_int_equal(perms_count(live, PERMS_LIST_ALLOW), 2);
	assert_int_equal(perms_refresh(live, &e), 0); /* unchanged: no re-read */
	struct perms_verdict v;
	perms_check(live, "bluesky:post", &v);
	assert_false(v.allowed);

	/* same size, new content, same second: the inode changes on rename */
	perms_set_mode(cli, PERMS_DENYLIST);
	assert_int_equal(perms_save(cli, path, &e), 0);
	assert_int_equal(perms_refresh(live, &e), 1);
	assert_int_equal(perms_mode_of(live), PERMS_DENYLIST);

	/* a broken file fails closed, and says how to fix it */
	tu_write(dir, PERMS_FILE_NAME, "{\"mode\":\"allowlist\",\"allowlist\":[\"gh*\"]}");
	assert_int_equal(perms_refresh(live, &e), -1);
	assert_non_null(strstr(e.msg, "whole segment"));
	assert_non_null(perms_broken(live));
	perms_check(live, "space:room", &v);
	assert_false(v.allowed);
	assert_non_null(strstr(v.d.reason, "unreadable"));
	char *txt = perms_denial_text(live, "ada", "space:room", &v);
	assert_non_null(strstr(txt, "cross clear"));
	free(txt);

	tu_write(dir, PERMS_FILE_NAME, "not json");
	assert_int_equal(perms_refresh(live, &e), -1);
	tu_write(dir, PERMS_FILE_NAME, "{\"mode\":\"open\"}");
	assert_int_equal(perms_refresh(live, &e), -1);
	assert_non_null(strstr(e.msg, "unknown mode"));
	tu_write(dir, PERMS_FILE_NAME, "{\"mode\":\"allowlist\",\"allowlist\":\"space:*\"}");
	assert_int_equal(perms_refresh(live, &e), -1);
	assert_non_null(strstr(e.msg, "array"));
	tu_write(dir, PERMS_FILE_NAME, "{\"mode\":\"allowlist\",\"allowlist\":[3]}");
	assert_int_equal(perms_refresh(live, &e), -1);

	/* removing the file is bypass */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(perms_refresh(live, &e), 1);
	assert_null(perms_broken(live));
	assert_int_equal(perms_mode_of(live), PERMS_BYPASS);

	perms_free(live);
	perms_free(cli);
	free(path);
	tu_rmrf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_canonical_table),
	        cmocka_unit_test(test_too_long_and_too_many),
	        cmocka_unit_test(test_match_table),
	        cmocka_unit_test(test_denial_text_allowlist),
	        cmocka_unit_test(test_denial_text_denylist),
	        cmocka_unit_test(test_remove_and_clear),
	        cmocka_unit_test(test_file_and_refresh),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

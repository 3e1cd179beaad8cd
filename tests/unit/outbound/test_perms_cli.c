/*
 * `general-agent cross`: each subcommand, the file it writes, usage errors
 * (64), refused patterns and targets (65), a broken file, the audit tail.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four above first */
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modules/outbound/audit.h"
#include "modules/outbound/perms.h"
#include "modules/outbound/perms_cli.h"
#include "testutil.h"

struct run {
	int rc;
	char *out, *err;
};

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

/* Runs `cross ARGS...` (NULL-terminated) against dir. */
static struct run cross(const char *dir, ...)
{
	char *argv[8] = {"cross"};
	int argc = 1;
	va_list ap;
	va_start(ap, dir);
	for (const char *a; argc < 7 && (a = va_arg(ap, const char *));)
		argv[argc++] = (char *)a;
	va_end(ap);
	struct run r = {0};
	size_t on = 0, en = 0;
	FILE *out = open_memstream(&r.out, &on);
	FILE *err = open_memstream(&r.err, &en);
	r.rc = perms_cli(dir, "ada", argc, argv, out, err);
	fclose(out);
	fclose(err);
	return r;
}

static cJSON *file_json(const char *dir)
{
	char *txt = tu_read(dir, PERMS_FILE_NAME);
	assert_non_null(txt);
	cJSON *j = cJSON_Parse(txt);
	free(txt);
	assert_non_null(j);
	return j;
}

static void test_show_empty_is_bypass(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	struct run r = cross(dir, NULL);
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "Send permissions for agent \"ada\": bypass mode"));
	assert_non_null(strstr(r.out, "Allowed patterns:\n  (none)"));
	assert_non_null(strstr(r.out, "Recent send attempts: none"));
	run_free(&r);
	tu_rmrf(dir);
	free(dir);
}

static void test_mode_allow_deny_remove_clear(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	struct run r = cross(dir, "allow", "GitHub:Acme:Widgets.git:*", NULL);
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "Allowed pattern added: github:acme:widgets:*"));
	assert_non_null(strstr(r.out, "cross mode allowlist")); /* the hint: mode is bypass */
	run_free(&r);
	r = cross(dir, "allow", "github:acme:widgets:*", NULL);
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "Already allowed"));
	run_free(&r);
	r = cross(dir, "mode", "allowlist", NULL);
	assert_int_equal(r.rc, 0);
	run_free(&r);
	r = cross(dir, "deny", "space:lobby", NULL);
	assert_int_equal(r.rc, 0);
	run_free(&r);

	cJSON *j = file_json(dir);
	assert_string_equal(cJSON_GetObjectItem(j, "mode")->valuestring, "allowlist");
	cJSON *allow = cJSON_GetObjectItem(j, "allowlist");
	assert_int_equal(cJSON_GetArraySize(allow), 1);
	assert_string_equal(cJSON_GetArrayItem(allow, 0)->valuestring, "github:acme:widgets:*");
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "denylist"), 0)->valuestring,
	                    "space:lobby");
	cJSON_Delete(j);

	r = cross(dir, NULL);
	assert_non_null(strstr(r.out,
	                       "allowlist mode\nAllowed patterns:\n  - github:acme:widgets:*\n"
	                       "Denied patterns:\n  - space:lobby\n"));
	run_free(&r);

	r = cross(dir, "check", "github:acme:widgets:issue:3", NULL);
	assert_int_equal(r.rc, PERMS_CLI_EX_OK);
	assert_non_null(strstr(r.out, "Allowed"));
	assert_non_null(strstr(r.out, "github:acme:widgets:*"));
	run_free(&r);
	r = cross(dir, "check", "github:acme:widget:issue:3", NULL);
	assert_int_equal(r.rc, PERMS_CLI_EX_DENIED);
	assert_non_null(strstr(r.out, "Permission denied: agent \"ada\""));
	assert_non_null(strstr(r.out, "Did you mean: github:acme:widgets:issue:3 ?"));
	run_free(&r);
	r = cross(dir, "check", "github:acme:widgets:issue:x", NULL);
	assert_int_equal(r.rc, PERMS_CLI_EX_DATAERR);
	assert_non_null(strstr(r.out, "is not a number"));
	run_free(&r);

	r = cross(dir, "remove", "github:ACME:widgets:*", NULL);
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "Pattern removed: github:acme:widgets:*"));
	run_free(&r);
	r = cross(dir, "remove", "space:nowhere", NULL);
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "No such pattern"));
	run_free(&r);
	j = file_json(dir);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "allowlist")), 0);
	cJSON_Delete(j);

	r = cross(dir, "clear", NULL);
	assert_int_equal(r.rc, 0);
	run_free(&r);
	j = file_json(dir);
	assert_string_equal(cJSON_GetObjectItem(j, "mode")->valuestring, "bypass");
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "denylist")), 0);
	cJSON_Delete(j);
	tu_rmrf(dir);
	free(dir);
}

static void test_usage_errors(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	const char *bad[][3] = {
	        {"frobnicate", NULL, NULL}, {"mode", NULL, NULL},   {"mode", "open", NULL},
	        {"allow", NULL, NULL},      {"allow", "a", "b"},    {"clear", "now", NULL},
	        {"check", NULL, NULL},      {"remove", NULL, NULL},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct run r = cross(dir, bad[i][0], bad[i][1], bad[i][2], NULL);
		if (r.rc != PERMS_CLI_EX_USAGE || !strstr(r.err, "usage:"))
			fail_msg("case %zu (%s): rc %d, err %s", i, bad[i][0], r.rc, r.err);
		run_free(&r);
	}
	assert_null(tu_read(dir, PERMS_FILE_NAME)); /* nothing written */
	tu_rmrf(dir);
	free(dir);
}

static void test_refused_patterns(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	const char *bad[][2] = {
	        {"gh*:acme", "whole segment"},
	        {"space::x", "empty segment"},
	        {"space:room:", "empty segment"},
	        {"gitlab:a:b:issue:1", "unknown platform"},
	        {"github:acme:widgets:issue:abc", "not a number"},
	        {"github:acme:widgets", "a GitHub target is"},
	        {"github:\xd0\xb0"
	         "cme:*",
	         "non-ASCII"},
	        {"github:acme%2F:*", "percent"},
	        {"bluesky:follow:bob", "a follow target is bluesky:follow:<did>"},
	        {"bluesky:delete:at:x", "bluesky:delete takes nothing after it"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct run r = cross(dir, "deny", bad[i][0], NULL);
		if (r.rc != PERMS_CLI_EX_DATAERR || !strstr(r.err, bad[i][1]))
			fail_msg("case %zu (%s): rc %d, err %s", i, bad[i][0], r.rc, r.err);
		run_free(&r);
	}
	struct run r = cross(dir, "remove", "a::b", NULL);
	assert_int_equal(r.rc, PERMS_CLI_EX_DATAERR);
	run_free(&r);
	assert_null(tu_read(dir, PERMS_FILE_NAME));
	tu_rmrf(dir);
	free(dir);
}

/* Follows and deletes of our own records: allowed in bypass (a default
 * install), refused in allowlist mode until a pattern names them, and the
 * usage lists both forms. */
static void test_follow_and_delete(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	struct run r = cross(dir, "check", "bluesky:follow:did:plc:peer1", NULL);
	assert_int_equal(r.rc, PERMS_CLI_EX_OK);
	assert_non_null(strstr(r.out, "bypass mode"));
	run_free(&r);
	r = cross(dir, "check", "bluesky:delete", NULL);
	assert_int_equal(r.rc, PERMS_CLI_EX_OK);
	run_free(&r);
	r = cross(dir, "allow", "bluesky:reply:*", NULL);
	assert_int_equal(r.rc, 0);
	run_free(&r);
	r = cross(dir, "mode", "allowlist", NULL);
	assert_int_equal(r.rc, 0);
	run_free(&r);
	r = cross(dir, "check", "bluesky:follow:did:plc:peer1", NULL);
	assert_int_equal(r.rc, PERMS_CLI_EX_DENIED);
	assert_non_null(strstr(r.out, "Target \"bluesky:follow:did:plc:peer1\" does not match"));
	run_free(&r);
	r = cross(dir, "check", "bluesky:delete", NULL);
	assert_int_equal(r.rc, PERMS_CLI_EX_DENIED);
	run_free(&r);
	r = cross(dir, "allow", "Bluesky:Follow:*", NULL);
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "bluesky:follow:*"));
	run_free(&r);
	r = cross(dir, "allow", "bluesky:DELETE", NULL);
	assert_int_equal(r.rc, 0);
	run_free(&r);
	r = cross(dir, "check", "bluesky:follow:did:plc:peer1", NULL);
	assert_int_equal(r.rc, PERMS_CLI_EX_OK);
	assert_non_null(strstr(r.out, "bluesky:follow:*"));
	run_free(&r);
	r = cross(dir, "check", "bluesky:delete", NULL);
	assert_int_equal(r.rc, PERMS_CLI_EX_OK);
	run_free(&r);
	r = cross(dir, "frobnicate", NULL);
	assert_non_null(strstr(r.err, "bluesky:follow:<did>, bluesky:delete"));
	run_free(&r);
	tu_rmrf(dir);
	free(dir);
}

static void test_broken_file(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	tu_write(dir, PERMS_FILE_NAME, "{\"mode\": \"allowlist\", \"allowlist\": [\"a::b\"]}");
	struct run r = cross(dir, NULL);
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "UNREADABLE"));
	run_free(&r);
	r = cross(dir, "allow", "space:*", NULL);
	assert_int_equal(r.rc, PERMS_CLI_EX_DATAERR);
	assert_non_null(strstr(r.err, "cross clear"));
	run_free(&r);
	r = cross(dir, "check", "space:room", NULL);
	assert_int_equal(r.rc, PERMS_CLI_EX_DENIED);
	run_free(&r);
	r = cross(dir, "clear", NULL);
	assert_int_equal(r.rc, 0);
	run_free(&r);
	r = cross(dir, "check", "space:room", NULL);
	assert_int_equal(r.rc, 0);
	run_free(&r);
	tu_rmrf(dir);
	free(dir);
}

static void test_show_lists_audit_tail(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	struct ga_err e;
	for (int i = 0; i < PERMS_CLI_AUDIT_SHOWN + 2; i++) {
		char target[32];
		snprintf(target, sizeof target, "space:room%d", i);
		struct audit_entry ae = {.time_ms = 1700000000000 + i,
		                         .source = "space",
		                         .target = target,
		                         .allowed = i % 2 == 0,
		                         .pattern = i % 2 ? NULL : "space:*",
		                         .reason = "test"};
		assert_int_equal(audit_append(dir, &ae, &e), 0);
	}
	struct run r = cross(dir, NULL);
	assert_non_null(strstr(r.out, "Recent send attempts (last 5):"));
	assert_null(strstr(r.out, "space:room1\n")); /* older than the last five */
	assert_non_null(strstr(r.out, "space:room6  (pattern space:*)"));
	assert_non_null(strstr(r.out, "deny   space       space:room5\n"));
	run_free(&r);
	tu_rmrf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_show_empty_is_bypass),
	        cmocka_unit_test(test_mode_allow_deny_remove_clear),
	        cmocka_unit_test(test_usage_errors),
	        cmocka_unit_test(test_refused_patterns),
	        cmocka_unit_test(test_follow_and_delete),
	        cmocka_unit_test(test_broken_file),
	        cmocka_unit_test(test_show_lists_audit_tail),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

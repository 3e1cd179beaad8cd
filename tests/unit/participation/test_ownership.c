/*
 * ownership and the policy tables: the §15.4 ownership vectors (the same
 * owner the TypeScript reference computes), order independence, the
 * capability filter, roles from the ranking (§16.14) and the reference's
 * roles, the UTF-16 key cut, and the §5.3 / §5.4 / §6.2 / §7 tables.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "modules/participation/policy.h"

static const char *const full_caps[] = {"social", "github", "code"};
static const char *const social_caps[] = {"social"};

static struct part_member full(const char *name)
{
	return (struct part_member){name, full_caps, 3, true, false};
}

static struct part_member social(const char *name)
{
	return (struct part_member){name, social_caps, 1, true, false};
}

static const char *REQ = "Create an issue for the prod checklist";
static const char *REQ174 =
        "Create a GitHub issue outlining the deployment plan for "
        "github.com/internet-development/www-lil-intdev-portfolio-compare — include env vars, "
        "caching, smoke tests and monitoring please!!";

static void test_vectors(void **state)
{
	(void)state;
	const char *names[] = {"marvin", "rebecca", "peterben"};
	struct part_member m[3] = {full("marvin"), full("rebecca"), full("peterben")};
	for (int s = 0; s < 3; s++) {
		struct part_ownership o;
		struct decision why;
		part_ownership_compute(names[s], false, m, 3, REQ, PART_MODE_ACTION, &o, &why);
		assert_true(o.computed);
		assert_string_equal(o.owner, "peterben");
		assert_int_equal(o.is_owner, s == 2);
		assert_int_equal(o.n_agents, 3);
		assert_int_equal(o.n_eligible, 3);
		assert_string_equal(why.rule, s == 2 ? "action_owner" : "not_action_owner");
	}
	/* The digests of §15.4 (first 16 hex). */
	struct part_ownership o;
	struct decision why;
	part_ownership_compute("peterben", false, m, 3, REQ, PART_MODE_ACTION, &o, &why);
	assert_string_equal(o.self_digest, "c67665d61e10cff6");
	assert_int_equal(o.rank, 0);
	part_ownership_compute("marvin", false, m, 3, REQ, PART_MODE_ACTION, &o, &why);
	assert_string_equal(o.self_digest, "cfe05cdf811d7597");
	assert_int_equal(o.rank, 1);
	part_ownership_compute("rebecca", false, m, 3, REQ, PART_MODE_ACTION, &o, &why);
	assert_string_equal(o.self_digest, "d01fbc2ad5f65e40");
	assert_int_equal(o.rank, 2);

	/* The 174-unit message: the key is its first 100 UTF-16 units. */
	char *key = part_utf16_prefix(REQ174, strlen(REQ174), PART_OWNER_KEY_UNITS);
	assert_string_equal(key, "Create a GitHub issue outlining the deployment plan for "
	                         "github.com/internet-development/www-lil-intd");
	free(key);
	part_ownership_compute("marvin", false, m, 3, REQ174, PART_MODE_ACTION, &o, &why);
	assert_string_equal(o.owner, "peterben");
	assert_memory_equal(o.self_digest, "343119ea", 8);
	part_ownership_compute("peterben", false, m, 3, REQ174, PART_MODE_ACTION, &o, &why);
	assert_memory_equal(o.self_digest, "337d3de9", 8);
	part_ownership_compute("rebecca", false, m, 3, REQ174, PART_MODE_ACTION, &o, &why);
	assert_memory_equal(o.self_digest, "846c2eae", 8);
}

static void test_reference_roles(void **state)
{
	(void)state;
	assert_int_equal(part_role_reference("marvin", REQ), PART_ROLE_OBSERVER);
	assert_int_equal(part_role_reference("rebecca", REQ), PART_ROLE_REVIEWER);
	assert_int_equal(part_role_reference("peterben", REQ), PART_ROLE_REVIEWER);
	assert_int_equal(part_role_reference("marvin", REQ174), PART_ROLE_REVIEWER);
	assert_int_equal(part_role_reference("rebecca", REQ174), PART_ROLE_ACTOR);
	assert_int_equal(part_role_reference("peterben", REQ174), PART_ROLE_REVIEWER);
}

/* Every agent, every order of the member list (self listed or not), the
 * same owner: what "two agents compute the same owner" means. */
static void test_order_independent(void **state)
{
	(void)state;
	const char *names[] = {"marvin", "rebecca", "peterben", "ada"};
	static const int perms[][4] = {{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}, {2, 0, 3, 1}};
	char first[PART_NAME_MAX] = "";
	for (int self = 0; self < 4; self++) {
		for (size_t p = 0; p < sizeof perms / sizeof perms[0]; p++) {
			struct part_member m[4];
			size_t n = 0;
			for (int k = 0; k < 4; k++) {
				int idx = perms[p][k];
				if (idx == self && p % 2 == 0)
					continue; /* half the time self is not in the list */
				m[n++] = full(names[idx]);
			}
			struct part_ownership o;
			struct decision why;
			part_ownership_compute(names[self], false, m, n, REQ, PART_MODE_ACTION, &o,
			                       &why);
			if (!first[0])
				snprintf(first, sizeof first, "%s", o.owner);
			assert_string_equal(o.owner, first);
			assert_int_equal(o.n_agents, 4);
			assert_int_equal(o.is_owner, strcmp(first, names[self]) == 0);
		}
	}
	/* Exactly one agent believes it owns the request, and roles from the
	 * ranking give exactly one actor (the owner) and one reviewer. */
	int owners = 0, actors = 0, reviewers = 0;
	struct part_member all[4] = {full("marvin"), full("rebecca"), full("peterben"),
	                             full("ada")};
	for (int self = 0; self < 4; self++) {
		struct part_ownership o;
		struct decision why;
		part_ownership_compute(names[self], false, all, 4, REQ, PART_MODE_ACTION, &o, &why);
		owners += o.is_owner;
		actors += o.role == PART_ROLE_ACTOR;
		reviewers += o.role == PART_ROLE_REVIEWER;
		if (o.is_owner)
			assert_int_equal(o.role, PART_ROLE_ACTOR);
	}
	assert_int_equal(owners, 1);
	assert_int_equal(actors, 1);
	assert_int_equal(reviewers, 1);
}

static void test_capabilities(void **state)
{
	(void)state;
	struct part_ownership o;
	struct decision why;
	/* peterben (the hash winner) is social-only: marvin is next (cfe0… < d01f…). */
	struct part_member m[3] = {full("marvin"), full("rebecca"), social("peterben")};
	part_ownership_compute("rebecca", false, m, 3, REQ, PART_MODE_ACTION, &o, &why);
	assert_string_equal(o.owner, "marvin");
	assert_int_equal(o.n_eligible, 2);
	/* The same from peterben's side, who runs social-only itself. */
	part_ownership_compute("peterben", true, m, 3, REQ, PART_MODE_ACTION, &o, &why);
	assert_string_equal(o.owner, "marvin");
	assert_false(o.is_owner);
	assert_non_null(strstr(why.reason, "social-only"));
	/* No capability list at all: eligible (§4 step 2). */
	struct part_member bare[2] = {{"peterben", NULL, 0, false, false}, full("marvin")};
	part_ownership_compute("marvin", false, bare, 2, REQ, PART_MODE_ACTION, &o, &why);
	assert_string_equal(o.owner, "peterben");
	/* An empty list is a list without github: not eligible. */
	struct part_member empty[2] = {{"peterben", NULL, 0, true, false}, full("marvin")};
	part_ownership_compute("marvin", false, empty, 2, REQ, PART_MODE_ACTION, &o, &why);
	assert_string_equal(o.owner, "marvin");
	assert_true(o.is_owner);
	/* Nobody eligible: no owner, no fallback. */
	struct part_member soc[2] = {social("marvin"), social("rebecca")};
	part_ownership_compute("peterben", true, soc, 2, REQ, PART_MODE_ACTION, &o, &why);
	assert_string_equal(o.owner, "");
	assert_false(o.is_owner);
	assert_string_equal(why.rule, "no_eligible_owner");
	/* The actor is then the first-ranked agent (peterben), to say so. */
	assert_int_equal(o.role, PART_ROLE_ACTOR);
}

static void test_defaults(void **state)
{
	(void)state;
	struct part_ownership o;
	struct decision why;
	struct part_member m[2] = {full("marvin"), full("rebecca")};
	/* No request: nobody is told it owns anything (§16.3). */
	part_ownership_compute("marvin", false, m, 2, NULL, PART_MODE_DISCUSSION, &o, &why);
	assert_false(o.is_owner);
	assert_false(o.computed);
	assert_string_equal(why.rule, "no_request");
	assert_int_equal(o.n_agents, 2);
	/* Alone: the request is mine, unless social-only. */
	part_ownership_compute("marvin", false, m, 1, REQ, PART_MODE_ACTION, &o, &why);
	assert_true(o.is_owner);
	assert_string_equal(why.rule, "alone");
	part_ownership_compute("marvin", true, m, 1, REQ, PART_MODE_ACTION, &o, &why);
	assert_false(o.is_owner);
	assert_string_equal(why.rule, "no_eligible_owner");
	/* Discussion mode: everyone is an actor. */
	part_ownership_compute("rebecca", false, m, 2, REQ, PART_MODE_DISCUSSION, &o, &why);
	assert_int_equal(o.role, PART_ROLE_ACTOR);
	/* Duplicates and over-long names count once / not at all. */
	char longname[PART_NAME_MAX + 10];
	memset(longname, 'x', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	struct part_member d[4] = {full("rebecca"), full("rebecca"), full("marvin"),
	                           full(longname)};
	part_ownership_compute("marvin", false, d, 4, REQ, PART_MODE_ACTION, &o, &why);
	assert_int_equal(o.n_agents, 2);
}

static void test_member_bound(void **state)
{
	(void)state;
	enum { N = PART_MEMBERS_MAX + 6 };
	static char names[N][16];
	struct part_member m[N];
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof names[i], "agent%03d", i);
		m[i] = full(names[i]);
	}
	struct part_ownership o;
	struct decision why;
	part_ownership_compute("self", false, m, N, REQ, PART_MODE_ACTION, &o, &why);
	assert_int_equal(o.n_agents, PART_MEMBERS_MAX + 1);
	assert_non_null(strstr(why.reason, "6 more peers ignored"));
}

static void test_utf16_prefix(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		size_t units;
		const char *out;
	} t[] = {
	        {"abc", 2, "ab"},
	        {"abc", 10, "abc"},
	        {"ab\xF0\x9F\x98\x80"
	         "c",
	         4, "ab\xF0\x9F\x98\x80"},
	        {"ab\xF0\x9F\x98\x80"
	         "c",
	         3, "ab\xEF\xBF\xBD"},                 /* half a pair → U+FFFD */
	        {"\xC3\xA9t\xC3\xA9", 2, "\xC3\xA9t"}, /* é is one unit */
	        {"a\xFF"
	         "b",
	         2, "a\xEF\xBF\xBD"},
	        {"", 5, ""},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		char *s = part_utf16_prefix(t[i].in, strlen(t[i].in), t[i].units);
		assert_string_equal(s, t[i].out);
		free(s);
	}
}

static void test_tables(void **state)
{
	(void)state;
	/* §5.3 */
	static const struct {
		enum part_role r;
		unsigned action, discussion;
	} budgets[] = {
	        {PART_ROLE_ACTOR, 3, 6}, {PART_ROLE_REVIEWER, 2, 4}, {PART_ROLE_OBSERVER, 1, 2}};
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(part_role_budget(budgets[i].r, PART_MODE_ACTION),
		                 budgets[i].action);
		assert_int_equal(part_role_budget(budgets[i].r, PART_MODE_DISCUSSION),
		                 budgets[i].discussion);
	}
	/* §5.4 */
	assert_int_equal(part_observer_threshold(PART_MODE_ACTION), 3);
	assert_int_equal(part_observer_threshold(PART_MODE_DISCUSSION), 5);
	/* §7 */
	static const struct {
		size_t n;
		unsigned as, aw, ds, dw;
	} sat[] = {{2, 6, 3, 10, 5}, {3, 7, 4, 11, 6}, {4, 8, 4, 12, 6}, {8, 12, 6, 16, 8}};
	for (size_t i = 0; i < 4; i++) {
		unsigned w;
		assert_int_equal(part_saturation_threshold(sat[i].n, PART_MODE_ACTION, &w),
		                 sat[i].as);
		assert_int_equal(w, sat[i].aw);
		assert_int_equal(part_saturation_threshold(sat[i].n, PART_MODE_DISCUSSION, &w),
		                 sat[i].ds);
		assert_int_equal(w, sat[i].dw);
	}
	/* §6.2 */
	assert_int_equal(part_escalation_level(0), PART_ESC_NONE);
	assert_int_equal(part_escalation_level(1), PART_ESC_INFO);
	assert_int_equal(part_escalation_level(2), PART_ESC_CRITICAL);
	assert_int_equal(part_escalation_level(9), PART_ESC_CRITICAL);
	assert_string_equal(part_role_name(PART_ROLE_OBSERVER), "observer");
	assert_string_equal(part_mode_name(PART_MODE_ACTION), "action");
	assert_string_equal(part_escalation_name(PART_ESC_CRITICAL), "critical");
}

static void test_intervals(void **state)
{
	(void)state;
	/* §15.4: the reference's per-agent intervals */
	static const struct {
		const char *name;
		int64_t tick, loop;
	} v[] = {{"marvin", 6834, 13209}, {"rebecca", 6470, 14554}, {"peterben", 6208, 14716}};
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(
		        part_jittered_interval_ms(v[i].name, "space-participation", 5000, 40),
		        v[i].tick);
		assert_int_equal(
		        part_jittered_interval_ms(v[i].name, "commitment-fulfillment", 15000, 12),
		        v[i].loop);
	}
	/* always within base ± spread, for any name (incl. astral and bad bytes) */
	const char *names[] = {"", "a",
	                       "\xF0\x9F\x98\x80"
	                       "bot",
	                       "x\xffy", "a-very-long-agent-name-0123"};
	for (size_t i = 0; i < 5; i++) {
		int64_t t = part_jittered_interval_ms(names[i], "space-participation", 5000, 40);
		assert_true(t >= 3000 && t <= 7000);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_vectors),           cmocka_unit_test(test_reference_roles),
	        cmocka_unit_test(test_order_independent), cmocka_unit_test(test_capabilities),
	        cmocka_unit_test(test_defaults),          cmocka_unit_test(test_member_bound),
	        cmocka_unit_test(test_utf16_prefix),      cmocka_unit_test(test_tables),
	        cmocka_unit_test(test_intervals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

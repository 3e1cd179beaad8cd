/*
 * The work a status line was said for (modules/participation/saidwork.h):
 * the salvage / owner-retry / forced-action words are said at most once per
 * piece of work, and a piece of work is its action, repository and whole
 * title — a request repeated with another ending (the 50-unit claim name
 * the same) is new work whose status line is said.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "modules/participation/participation.h"
#include "modules/participation/saidwork.h"

static const char *R7 = "Can someone write up a plan for the cache eviction policy in acme/widgets "
                        "(round 7)";
static const char *R15 =
        "Can someone write up a plan for the cache eviction policy in acme/widgets "
        "(round 15)";

/* c holds one create_issue per title (repo NULL: the detected one). */
static void issues(struct cmt_list *c, const char *const *titles, size_t n, const char *repo)
{
	memset(c, 0, sizeof *c);
	for (size_t i = 0; i < n; i++) {
		c->item[i].type = CMT_CREATE_ISSUE;
		c->item[i].title = (char *)titles[i];
		c->item[i].repo = (char *)repo;
	}
	c->n = n;
}

static void test_round_repeated_is_new_work(void **state)
{
	(void)state;
	struct part_said_work *s = calloc(1, sizeof *s);
	struct cmt_list a, b;
	issues(&a, &R7, 1, NULL);
	issues(&b, &R15, 1, NULL);
	/* the two share the room's claim name (first 50 UTF-16 units) */
	struct commit_work wa, wb;
	part_claim_work(&a.item[0], "acme/widgets", &wa);
	part_claim_work(&b.item[0], "acme/widgets", &wb);
	assert_string_equal(wa.promise_target, wb.promise_target);

	assert_false(part_said_work_all(s, &a, "acme/widgets"));
	part_said_work_note(s, &a, "acme/widgets");
	assert_true(part_said_work_all(s, &a, "acme/widgets"));  /* the same work: once */
	assert_false(part_said_work_all(s, &b, "acme/widgets")); /* round 15: new work */
	part_said_work_note(s, &b, "acme/widgets");
	assert_true(part_said_work_all(s, &b, "acme/widgets"));
	assert_int_equal(s->n, 2);
	free(s);
}

static void test_repo_and_action(void **state)
{
	(void)state;
	struct part_said_work *s = calloc(1, sizeof *s);
	struct cmt_list c;
	issues(&c, &R7, 1, "acme/widgets");
	part_said_work_note(s, &c, NULL);
	/* the repository named or detected: the same work */
	issues(&c, &R7, 1, NULL);
	assert_true(part_said_work_all(s, &c, "acme/widgets"));
	/* another repository, or none known: other work */
	assert_false(part_said_work_all(s, &c, "acme/gadgets"));
	assert_false(part_said_work_all(s, &c, NULL));
	/* the same title as a plan: other work */
	issues(&c, &R7, 1, "acme/widgets");
	c.item[0].type = CMT_CREATE_PLAN;
	assert_false(part_said_work_all(s, &c, NULL));
	/* nothing to promise: nothing said */
	memset(&c, 0, sizeof c);
	assert_false(part_said_work_all(s, &c, "acme/widgets"));
	free(s);
}

static void test_every_commitment(void **state)
{
	(void)state;
	struct part_said_work *s = calloc(1, sizeof *s);
	struct cmt_list c;
	const char *both[] = {R7, "Document the eviction metrics"};
	issues(&c, both, 1, NULL);
	part_said_work_note(s, &c, "acme/widgets");
	issues(&c, both, 2, NULL);
	assert_false(part_said_work_all(s, &c, "acme/widgets")); /* one of two is new */
	part_said_work_note(s, &c, "acme/widgets");
	assert_true(part_said_work_all(s, &c, "acme/widgets"));
	assert_int_equal(s->n, 2); /* R7 noted once */
	free(s);
}

static void test_workspace_by_org(void **state)
{
	(void)state;
	struct part_said_work *s = calloc(1, sizeof *s);
	struct cmt_list c;
	memset(&c, 0, sizeof c);
	c.item[0].type = CMT_CREATE_WORKSPACE;
	c.item[0].org = "Acme";
	c.item[0].title = "team workspace";
	c.n = 1;
	part_said_work_note(s, &c, NULL);
	c.item[0].org = "acme";
	c.item[0].title = "another name for it";
	assert_true(part_said_work_all(s, &c, NULL)); /* one workspace per organisation */
	c.item[0].org = "globex";
	assert_false(part_said_work_all(s, &c, NULL));
	free(s);
}

static void test_bound(void **state)
{
	(void)state;
	struct part_said_work *s = calloc(1, sizeof *s);
	struct cmt_list first, c;
	issues(&first, &R7, 1, NULL);
	part_said_work_note(s, &first, "acme/widgets");
	char titles[PART_SAID_WORK_MAX][64];
	for (size_t i = 0; i + 1 < PART_SAID_WORK_MAX; i++) {
		snprintf(titles[i], sizeof titles[i], "work %zu", i);
		const char *t = titles[i];
		issues(&c, &t, 1, NULL);
		part_said_work_note(s, &c, "acme/widgets");
	}
	assert_int_equal(s->n, PART_SAID_WORK_MAX);
	assert_true(part_said_work_all(s, &first, "acme/widgets")); /* still held */
	const char *more = "one more";
	issues(&c, &more, 1, NULL);
	part_said_work_note(s, &c, "acme/widgets");
	assert_int_equal(s->n, PART_SAID_WORK_MAX);
	assert_false(part_said_work_all(s, &first, "acme/widgets")); /* the oldest went */
	assert_true(part_said_work_all(s, &c, "acme/widgets"));
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_round_repeated_is_new_work),
	        cmocka_unit_test(test_repo_and_action),
	        cmocka_unit_test(test_every_commitment),
	        cmocka_unit_test(test_workspace_by_org),
	        cmocka_unit_test(test_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * modules/plan/taskstate.h: the machine markers, the fold that decides who
 * holds each task (first claim wins, only the holder moves its task, nobody
 * speaks for another account), two agents updating different tasks of one
 * plan without losing either change, claimable tasks and the choice.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "modules/plan/taskstate.h"

#define PLAN_NO 12

static const char *BODY = "# [PLAN] Three things\n\n## Goal\nDo three things.\n\n## Context\n\n"
                          "## Tasks\n\n"
                          "### Task 1: First\n**Status:** pending\n**Assignee:** (empty if "
                          "unclaimed)\n**Dependencies:** none\n\n**Description:**\nOne.\n\n---\n\n"
                          "### Task 2: Second\n**Status:** pending\n**Assignee:** (empty if "
                          "unclaimed)\n**Dependencies:** none\n\n**Description:**\nTwo.\n\n---\n\n"
                          "### Task 3: Third\n**Status:** pending\n**Assignee:** (empty if "
                          "unclaimed)\n**Dependencies:** Task 1, Task 2\n\n**Description:**\n"
                          "Three.\n\n---\n\n## Verification\n- [ ] All tasks completed\n";

/* ---- a GitHub issue as the test holds it: a body and its comments ---------------- */

#define MAX_COMMENTS 64

struct issue {
	char *body;
	struct {
		int64_t id;
		char author[PLAN_LOGIN_MAX];
		char text[512];
	} c[MAX_COMMENTS];
	size_t n;
	int64_t next_id;
};

static void issue_init(struct issue *is, const char *body)
{
	memset(is, 0, sizeof *is);
	is->body = strdup(body);
	is->next_id = 1000;
}

static int64_t comment(struct issue *is, const char *author, enum plan_mark kind, int task,
                       int attempt)
{
	struct plan_marker m = {.kind = kind, .plan = PLAN_NO, .task = task, .attempt = attempt};
	snprintf(m.agent, sizeof m.agent, "%s", author);
	char marker[PLAN_MARKER_MAX + 1];
	assert_int_equal(plan_marker_format(&m, marker, sizeof marker), 0);
	assert_true(is->n < MAX_COMMENTS);
	is->c[is->n].id = is->next_id++;
	snprintf(is->c[is->n].author, sizeof is->c[is->n].author, "%s", author);
	snprintf(is->c[is->n].text, sizeof is->c[is->n].text, "**Task %d** %s\n\n%s", task,
	         plan_mark_name(kind), marker);
	return is->c[is->n++].id;
}

/* What an agent reads: the body parsed and the markers of the comments it
 * has seen (the first `upto` comments). */
struct view {
	char *body;
	struct plan p;
	struct plan_event ev[MAX_COMMENTS];
	size_t n_ev;
	struct plan_task_state st[PLAN_MAX_TASKS];
};

static void read_issue(const struct issue *is, size_t upto, struct view *v)
{
	memset(v, 0, sizeof *v);
	v->body = strdup(is->body);
	assert_int_equal(plan_parse(NULL, v->body, &v->p, NULL), 0);
	for (size_t i = 0; i < upto && i < is->n; i++) {
		struct plan_marker m;
		if (plan_marker_parse(is->c[i].text, &m, NULL) != 1)
			continue;
		v->ev[v->n_ev++] =
		        (struct plan_event){is->c[i].id, is->c[i].author, 1000 * is->c[i].id, m};
	}
	plan_state_fold(&v->p, PLAN_NO, v->ev, v->n_ev, v->st, NULL, NULL);
}

static void view_free(struct view *v)
{
	plan_free(&v->p);
	free(v->body);
}

static const struct plan_task_state *st_of(const struct view *v, int task)
{
	return plan_state_find(v->st, v->p.n_tasks, task);
}

/* ---- markers -------------------------------------------------------------------- */

static void test_marker_roundtrip(void **state)
{
	(void)state;
	struct plan_marker m = {.kind = PLAN_MARK_PR,
	                        .plan = 12,
	                        .task = 3,
	                        .attempt = 2,
	                        .pr = 45,
	                        .agent = "ada",
	                        .branch = "task-3-login-a2"};
	char buf[PLAN_MARKER_MAX + 1];
	assert_int_equal(plan_marker_format(&m, buf, sizeof buf), 0);
	assert_string_equal(buf, "<!-- ga:pr plan=12 task=3 agent=ada attempt=2 pr=45 "
	                         "branch=task-3-login-a2 -->");
	struct plan_marker r;
	char text[400];
	snprintf(text, sizeof text, "Opened a pull request.\n<!-- ga:chain=2 key=k -->\n%s", buf);
	assert_int_equal(plan_marker_parse(text, &r, NULL), 1);
	assert_int_equal(r.kind, PLAN_MARK_PR);
	assert_int_equal(r.plan, 12);
	assert_int_equal(r.task, 3);
	assert_int_equal(r.attempt, 2);
	assert_int_equal(r.pr, 45);
	assert_string_equal(r.agent, "ada");
	assert_string_equal(r.branch, "task-3-login-a2");
	/* The brief form, keys in any order, unknown keys ignored. */
	assert_int_equal(
	        plan_marker_parse("<!-- ga:claim agent=bob task=1 plan=7 future=x -->", &r, NULL),
	        1);
	assert_int_equal(r.kind, PLAN_MARK_CLAIM);
	assert_int_equal(r.plan, 7);
	assert_int_equal(r.attempt, 0);
	/* Not a marker of ours. */
	assert_int_equal(plan_marker_parse("Claiming Task 1 <!-- ga:chain=1 -->", &r, NULL), 0);
	assert_int_equal(plan_marker_parse("<!-- ga:claimed plan=1 task=1 agent=a -->", &r, NULL),
	                 0);
	assert_int_equal(plan_marker_parse("", &r, NULL), 0);
	assert_int_equal(plan_marker_parse(NULL, &r, NULL), 0);
	/* Malformed. */
	struct ga_err err = {{0}};
	const char *bad[] = {
	        "<!-- ga:claim plan=1 task=1 -->",
	        "<!-- ga:claim plan=1 task=1 agent=a b=",
	        "<!-- ga:claim plan=x task=1 agent=a -->",
	        "<!-- ga:claim plan=1 task=0 agent=a -->",
	        "<!-- ga:claim plan=1 task=1 agent=a agent=b -->",
	        "<!-- ga:claim plan=1 task=1 agent=-bad -->",
	        "<!-- ga:claim plan=1 task=1 agent=a branch=x;rm -->",
	        "<!-- ga:claim plan=1 task=1 agent=a junk -->",
	        "<!-- ga:claim plan=99999999999 task=1 agent=a -->",
	};
	const char *why[] = {"required", "no closing", "plan=",     "task=", "twice",
	                     "agent=",   "branch=",    "key=value", "plan="};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(plan_marker_parse(bad[i], &r, &err), -1);
		if (!strstr(err.msg, why[i]))
			fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, why[i]);
	}
	m.agent[0] = '\0';
	assert_int_equal(plan_marker_format(&m, buf, sizeof buf), -1);
	snprintf(m.agent, sizeof m.agent, "ada");
	assert_int_equal(plan_marker_format(&m, buf, 20), -1);
}

/* ---- the fold ------------------------------------------------------------------- */

struct notes {
	int n;
	char last_rule[40];
};

static void note(void *ud, const struct plan_event *ev, const struct decision *d)
{
	(void)ev;
	struct notes *ns = ud;
	ns->n++;
	snprintf(ns->last_rule, sizeof ns->last_rule, "%s", d->rule);
}

static void test_first_claim_wins(void **state)
{
	(void)state;
	struct issue is;
	issue_init(&is, BODY);
	comment(&is, "ada", PLAN_MARK_CLAIM, 1, 1);
	comment(&is, "bob", PLAN_MARK_CLAIM, 1, 1);   /* too late */
	comment(&is, "bob", PLAN_MARK_START, 1, 1);   /* not the holder */
	comment(&is, "bob", PLAN_MARK_RELEASE, 1, 1); /* cannot erase ada's claim */
	comment(&is, "ada", PLAN_MARK_START, 1, 1);
	struct view v;
	read_issue(&is, is.n, &v);
	const struct plan_task_state *s = st_of(&v, 1);
	assert_int_equal(s->status, PLAN_IN_PROGRESS);
	assert_string_equal(s->assignee, "ada");
	assert_int_equal(s->attempt, 1);
	assert_int_equal(s->claim_comment_id, 1000);
	assert_true(s->from_markers);
	assert_int_equal(s->since_ms, 1000 * 1004);
	/* The same comments in another order in the array: same answer. */
	struct plan_event rev[MAX_COMMENTS];
	for (size_t i = 0; i < v.n_ev; i++)
		rev[i] = v.ev[v.n_ev - 1 - i];
	struct plan_task_state st2[PLAN_MAX_TASKS];
	struct notes ns = {0};
	assert_int_equal(plan_state_fold(&v.p, PLAN_NO, rev, v.n_ev, st2, note, &ns), 2);
	assert_int_equal(ns.n, 3);
	assert_string_equal(plan_state_find(st2, v.p.n_tasks, 1)->assignee, "ada");
	view_free(&v);
	free(is.body);
}

static void test_fold_rules(void **state)
{
	(void)state;
	struct issue is;
	issue_init(&is, BODY);
	/* Task 3 depends on 1 and 2: a claim before they are done is refused. */
	comment(&is, "carol", PLAN_MARK_CLAIM, 3, 1);
	comment(&is, "ada", PLAN_MARK_CLAIM, 1, 1);
	comment(&is, "ada", PLAN_MARK_FAILED, 1, 1);
	comment(&is, "bob", PLAN_MARK_CLAIM, 1, 2);
	comment(&is, "bob", PLAN_MARK_BLOCKED, 1, 2);
	comment(&is, "ada", PLAN_MARK_CLAIM, 1, 3);
	comment(&is, "ada", PLAN_MARK_FAILED, 1, 3);
	comment(&is, "carol", PLAN_MARK_CLAIM, 1, 4); /* three failures: refused */
	struct view v;
	read_issue(&is, is.n, &v);
	const struct plan_task_state *s1 = st_of(&v, 1), *s3 = st_of(&v, 3);
	assert_int_equal(s3->status, PLAN_PENDING);
	assert_string_equal(s3->assignee, "");
	assert_int_equal(s1->status, PLAN_BLOCKED);
	assert_int_equal(s1->failures, 3);
	assert_int_equal(s1->attempt, 3);
	assert_string_equal(s1->assignee, "");
	struct decision d;
	assert_false(plan_task_claimable(&v.p, v.st, v.p.n_tasks, 1, &d));
	assert_string_equal(d.rule, "task_retries");
	assert_false(plan_task_claimable(&v.p, v.st, v.p.n_tasks, 3, &d));
	assert_string_equal(d.rule, "task_dependencies");
	assert_true(plan_task_claimable(&v.p, v.st, v.p.n_tasks, 2, &d));
	assert_int_equal(d.verdict, VERDICT_PASS);
	view_free(&v);

	/* The owner reopens it; then a merge completes 1 and 2 and 3 opens up. */
	comment(&is, "dave", PLAN_MARK_REOPEN, 1, 0);
	comment(&is, "carol", PLAN_MARK_CLAIM, 1, 4);
	comment(&is, "carol", PLAN_MARK_PR, 1, 4);
	comment(&is, "carol", PLAN_MARK_DONE, 1, 0);
	comment(&is, "ada", PLAN_MARK_DONE, 2, 0);
	comment(&is, "ada", PLAN_MARK_RESET, 2, 0); /* a reset never reopens done work */
	read_issue(&is, is.n, &v);
	assert_int_equal(st_of(&v, 1)->status, PLAN_COMPLETED);
	assert_int_equal(st_of(&v, 1)->attempt, 4);
	assert_int_equal(st_of(&v, 2)->status, PLAN_COMPLETED);
	assert_true(plan_task_claimable(&v.p, v.st, v.p.n_tasks, 3, &d));
	view_free(&v);

	/* Spoofed and foreign markers. */
	struct plan_task_state st[PLAN_MAX_TASKS];
	struct view v2;
	struct issue is2;
	issue_init(&is2, BODY);
	read_issue(&is2, 0, &v2);
	struct plan_event ev[3] = {
	        {1,
	         "mallory",
	         1,
	         {.kind = PLAN_MARK_CLAIM, .plan = PLAN_NO, .task = 1, .agent = "ada"}},
	        {2, "ada", 2, {.kind = PLAN_MARK_CLAIM, .plan = 99, .task = 1, .agent = "ada"}},
	        {3,
	         "ada",
	         3,
	         {.kind = PLAN_MARK_CLAIM, .plan = PLAN_NO, .task = 8, .agent = "ada"}},
	};
	struct notes ns = {0};
	assert_int_equal(plan_state_fold(&v2.p, PLAN_NO, ev, 3, st, note, &ns), 0);
	assert_int_equal(ns.n, 2); /* another plan's marker is not judged */
	assert_int_equal(plan_state_find(st, v2.p.n_tasks, 1)->status, PLAN_PENDING);
	assert_false(plan_state_find(st, v2.p.n_tasks, 1)->from_markers);
	view_free(&v2);
	free(is.body);
	free(is2.body);
}

/* Two agents update different tasks of one plan at once. Each posts its
 * marker, reads, renders the state into the body and writes it; the worst
 * interleaving makes the second write carry a body that lacks the first
 * agent's change. Nothing is lost: the state is the markers, and the next
 * render repairs the view. The body-only update of the reference loses it. */
/* The body an agent rendered from the markers is read back with them:
 * the claim it shows is the markers' claim, not a second one, so the
 * attempt, the holder's claim comment and the holder's later markers keep
 * their meaning. A task no marker speaks of keeps its body state. */
static void test_rendered_view(void **state)
{
	(void)state;
	struct issue is;
	issue_init(&is, BODY);
	int64_t claim = comment(&is, "ada", PLAN_MARK_CLAIM, 1, 1);
	struct view v;
	read_issue(&is, is.n, &v);
	bool changed;
	char *rendered = plan_state_sync_body(v.body, v.st, v.p.n_tasks, &changed, NULL);
	assert_true(changed);
	view_free(&v);
	/* a person marks task 2 done by hand, in the body only */
	struct plan_update u = {.task = 2, .set_status = true, .status = PLAN_COMPLETED};
	char *edited = plan_body_update(rendered, &u, 1, NULL);
	assert_non_null(edited);
	free(rendered);
	free(is.body);
	is.body = edited;
	read_issue(&is, is.n, &v);
	const struct plan_task_state *t1 = st_of(&v, 1);
	assert_string_equal(t1->assignee, "ada");
	assert_int_equal(t1->status, PLAN_CLAIMED);
	assert_int_equal(t1->attempt, 1);
	assert_int_equal(t1->claim_comment_id, claim);
	assert_int_equal(st_of(&v, 2)->status, PLAN_COMPLETED);
	assert_false(st_of(&v, 2)->from_markers);
	view_free(&v);
	/* ada's failure frees the task though the body still shows her */
	comment(&is, "ada", PLAN_MARK_FAILED, 1, 1);
	read_issue(&is, is.n, &v);
	assert_int_equal(st_of(&v, 1)->status, PLAN_BLOCKED);
	assert_string_equal(st_of(&v, 1)->assignee, "");
	assert_int_equal(st_of(&v, 1)->failures, 1);
	view_free(&v);
	free(is.body);
}

static void test_two_writers(void **state)
{
	(void)state;
	struct issue is;
	issue_init(&is, BODY);
	comment(&is, "ada", PLAN_MARK_CLAIM, 1, 1);
	struct view a;
	read_issue(&is, is.n, &a); /* ada reads before bob's marker */
	comment(&is, "bob", PLAN_MARK_CLAIM, 2, 1);
	struct view b;
	read_issue(&is, is.n, &b);
	bool changed;
	char *b_body = plan_state_sync_body(b.body, b.st, b.p.n_tasks, &changed, NULL);
	assert_true(changed);
	free(is.body);
	is.body = b_body; /* bob writes first */
	char *a_body = plan_state_sync_body(a.body, a.st, a.p.n_tasks, &changed, NULL);
	assert_true(changed);
	free(is.body);
	is.body = a_body; /* ada's stale render overwrites bob's */
	struct plan now;
	assert_int_equal(plan_parse(NULL, is.body, &now, NULL), 0);
	assert_null(plan_task_find(&now, 2)->assignee); /* the view lost bob ... */
	plan_free(&now);
	/* ... the state did not: */
	struct view after;
	read_issue(&is, is.n, &after);
	assert_string_equal(st_of(&after, 1)->assignee, "ada");
	assert_string_equal(st_of(&after, 2)->assignee, "bob");
	assert_int_equal(st_of(&after, 2)->status, PLAN_CLAIMED);
	/* ada re-reads after her write: the view differs from the state, so
	 * she renders again; then both show. */
	char *fixed = plan_state_sync_body(after.body, after.st, after.p.n_tasks, &changed, NULL);
	assert_true(changed);
	free(is.body);
	is.body = fixed;
	assert_int_equal(plan_parse(NULL, is.body, &now, NULL), 0);
	assert_string_equal(plan_task_find(&now, 1)->assignee, "ada");
	assert_string_equal(plan_task_find(&now, 2)->assignee, "bob");
	assert_int_equal(plan_task_find(&now, 1)->status, PLAN_CLAIMED);
	plan_free(&now);
	/* Rendering a settled body changes nothing. */
	struct view settled;
	read_issue(&is, is.n, &settled);
	char *same =
	        plan_state_sync_body(settled.body, settled.st, settled.p.n_tasks, &changed, NULL);
	assert_false(changed);
	assert_string_equal(same, is.body);
	free(same);

	/* The contrast: the same interleaving with body-only updates loses
	 * bob's claim for good. */
	struct plan_update ua = {.task = 1,
	                         .set_status = true,
	                         .status = PLAN_CLAIMED,
	                         .set_assignee = true,
	                         .assignee = "ada"};
	struct plan_update ub = {.task = 2,
	                         .set_status = true,
	                         .status = PLAN_CLAIMED,
	                         .set_assignee = true,
	                         .assignee = "bob"};
	char *base = strdup(BODY);
	char *wb = plan_body_update(base, &ub, 1, NULL);
	char *wa = plan_body_update(base, &ua, 1, NULL); /* read before bob wrote */
	assert_int_equal(plan_parse(NULL, wa, &now, NULL), 0);
	assert_null(plan_task_find(&now, 2)->assignee);
	plan_free(&now);
	free(wa);
	free(wb);
	free(base);
	view_free(&a);
	view_free(&b);
	view_free(&after);
	view_free(&settled);
	free(is.body);
}

/* ---- choosing a task ---------------------------------------------------------------- */

static void test_choose(void **state)
{
	(void)state;
	struct issue p1, p2;
	issue_init(&p1, BODY);
	issue_init(&p2, BODY);
	/* Plan 1: task 1 taken, task 2 failed three times; no abandon notice. */
	comment(&p1, "ada", PLAN_MARK_CLAIM, 1, 1);
	for (int i = 0; i < 3; i++) {
		comment(&p1, "bob", PLAN_MARK_CLAIM, 2, i + 1);
		comment(&p1, "bob", PLAN_MARK_FAILED, 2, i + 1);
	}
	/* Plan 2: tasks 1 and 2 free. */
	struct view v1, v2;
	read_issue(&p1, p1.n, &v1);
	read_issue(&p2, p2.n, &v2);
	struct plan_candidate c[2] = {{40, &v2.p, v2.st}, {12, &v1.p, v1.st}};
	struct plan_choice ch;
	plan_choose(c, 2, &ch);
	/* Plan 1 has no claimable task; plan 2 has two: task 1 of plan 2. */
	assert_true(ch.found);
	assert_int_equal(ch.candidate, 0);
	assert_int_equal(ch.task, 1);
	assert_int_equal(ch.next_attempt, 1);
	assert_string_equal(ch.d.rule, "task_choice");
	assert_int_equal(ch.n_notices, 1);
	assert_int_equal(ch.notices[0].candidate, 1);
	assert_int_equal(ch.notices[0].task, 2);
	assert_int_equal(ch.notices[0].failures, 3);
	view_free(&v1);
	/* The notice given: no second one. */
	comment(&p1, "ada", PLAN_MARK_ABANDON, 2, 0);
	read_issue(&p1, p1.n, &v1);
	c[1].state = v1.st;
	c[1].plan = &v1.p;
	plan_choose(c, 2, &ch);
	assert_int_equal(ch.n_notices, 0);
	view_free(&v1);

	/* Fewer claimable first: plan 2 with one left beats plan 3 with two. */
	comment(&p2, "ada", PLAN_MARK_CLAIM, 1, 1);
	view_free(&v2);
	read_issue(&p2, p2.n, &v2);
	struct issue p3;
	issue_init(&p3, BODY);
	struct view v3;
	read_issue(&p3, p3.n, &v3);
	struct plan_candidate c2[2] = {{5, &v3.p, v3.st}, {40, &v2.p, v2.st}};
	plan_choose(c2, 2, &ch);
	assert_true(ch.found);
	assert_int_equal(ch.candidate, 1);
	assert_int_equal(ch.task, 2);
	/* Nothing at all. */
	plan_choose(c2, 0, &ch);
	assert_false(ch.found);
	assert_string_equal(ch.d.rule, "no_claimable_task");
	view_free(&v2);
	view_free(&v3);
	free(p1.body);
	free(p2.body);
	free(p3.body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_marker_roundtrip), cmocka_unit_test(test_first_claim_wins),
	        cmocka_unit_test(test_fold_rules),       cmocka_unit_test(test_two_writers),
	        cmocka_unit_test(test_choose),           cmocka_unit_test(test_rendered_view),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * §6.3 "→ false" as the engine runs it (modules/participation/reqcommits.h,
 * part_engine_commitment_failed): a commitment abandoned by the fulfilment
 * opens the host's request again only when it was enqueued for the request
 * that is still the current one; and the reference's create/fail loop
 * (§16 item 8) is closed: forced issues that keep failing are forced at
 * most PART_FORCED_MAX times for the request, not once more per failure.
 * The engine's own steps are replayed on a real part_state with part_tick
 * (room of §15.4; the owner of REQ found by the ranking first).
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
#include "modules/participation/reqcommits.h"

static const char *const full_caps[] = {"social", "github", "code"};
static const char *REQ = "Create an issue for the prod checklist in github.com/acme/site";
static const char *REQ2 = "Create an issue for the flaky deploy in github.com/acme/site";

static const struct part_member room3[3] = {
        {"marvin", full_caps, 3, true, false},
        {"rebecca", full_caps, 3, true, false},
        {"peterben", full_caps, 3, true, false},
};

static char OWN[PART_NAME_MAX];
static int64_t now_ms = 1000;

static void tick(struct part_state *st, const char *host_text, struct part_tick_out *out)
{
	struct part_event ev = {.kind = PART_EV_CHAT,
	                        .author = "host",
	                        .text = host_text,
	                        .len = host_text ? strlen(host_text) : 0};
	struct part_tick_in in = {.self = OWN,
	                          .members = room3,
	                          .nmembers = 3,
	                          .events = host_text ? &ev : NULL,
	                          .nevents = host_text ? 1 : 0,
	                          .now_ms = now_ms};
	now_ms += 5000;
	part_tick(st, &in, out);
}

/* What the engine does for a forced action that was said: counted
 * (on_said), its commitment enqueued (noted) and the request fulfilled. */
static void forced_and_enqueued(struct part_state *st, struct part_req_commits *rc, const char *id)
{
	part_note_forced(st);
	part_req_commits_note(rc, st, id);
	part_note_fulfilled(st, "commitment");
}

struct fx {
	struct part_state st;
	struct part_req_commits rc;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof *f);
	part_state_init(&f->st);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	part_state_free(&f->st);
	free(f);
	*state = NULL;
	return 0;
}

static void test_reopens_own_request_only(void **state)
{
	struct fx *f = *state;
	struct part_state *st = &f->st;
	struct part_req_commits *rc = &f->rc;
	struct part_tick_out t;
	struct decision why;
	/* no request: nothing is noted, nothing reopens */
	part_req_commits_note(rc, st, "c-0");
	assert_int_equal(rc->n, 0);

	tick(st, REQ, &t);
	assert_true(t.request_open);
	assert_true(t.own.is_owner);
	part_req_commits_note(rc, st, "c-1");
	part_req_commits_note(rc, st, "c-1"); /* the ledger's duplicate: once */
	assert_int_equal(rc->n, 1);
	part_note_fulfilled(st, "commitment");
	tick(st, NULL, &t);
	assert_false(t.request_open);

	/* another commitment (another source, or an earlier request's) */
	assert_false(part_req_commits_failed(rc, st, "c-other", &why));
	assert_string_equal(why.rule, "not_this_request");
	assert_true(st->fulfilled);

	/* this request's: open again, escalation resumes */
	assert_true(part_req_commits_failed(rc, st, "c-1", &why));
	assert_string_equal(why.rule, "request_reopened");
	assert_non_null(strstr(why.reason, "c-1"));
	assert_false(st->fulfilled);
	tick(st, NULL, &t);
	assert_true(t.request_open);
	/* told twice: the second time it is not the request's any more */
	assert_false(part_req_commits_failed(rc, st, "c-1", &why));

	/* a new request: the old one's commitment reopens nothing */
	part_req_commits_note(rc, st, "c-2");
	part_note_fulfilled(st, "commitment");
	tick(st, REQ2, &t);
	assert_true(t.request_open);
	part_note_fulfilled(st, "commitment");
	assert_false(part_req_commits_failed(rc, st, "c-2", &why));
	assert_string_equal(why.rule, "not_this_request");
	assert_true(st->fulfilled);
}

/* §16 item 8: reopened after each failed forced issue, the request is
 * forced PART_FORCED_MAX times in all, then never again. */
static void test_forced_cap_survives_reopen(void **state)
{
	struct fx *f = *state;
	struct part_state *st = &f->st;
	struct part_req_commits *rc = &f->rc;
	struct part_tick_out t;
	struct decision why;
	tick(st, REQ, &t);
	assert_true(t.own.is_owner);
	int forced = 0;
	char id[32];
	for (int round = 0; round < 2 * PART_FORCED_MAX + 2; round++) {
		tick(st, NULL, &t);
		if (!t.force_action_due)
			continue;
		assert_int_equal(part_recover_next(st, &t, false, &why), PART_RECOVER_FORCE);
		snprintf(id, sizeof id, "forced-%d", forced);
		forced_and_enqueued(st, rc, id);
		forced++;
		tick(st, NULL, &t);
		assert_false(t.request_open);
		/* its fulfilment fails three times: abandoned, the request reopens */
		assert_true(part_req_commits_failed(rc, st, id, &why));
	}
	assert_int_equal(forced, PART_FORCED_MAX);
	tick(st, NULL, &t);
	assert_true(t.request_open);
	assert_false(t.force_action_due);
	assert_int_equal(part_recover_next(st, &t, false, &why), PART_RECOVER_NONE);
	assert_non_null(strstr(why.reason, "§16.8"));
}

/* At most PART_REQ_COMMITS_MAX ids: the oldest is forgotten. */
static void test_bounded(void **state)
{
	struct fx *f = *state;
	struct part_req_commits *rc = &f->rc;
	struct part_tick_out t;
	tick(&f->st, REQ, &t);
	struct part_state *st = &f->st;
	char id[32];
	for (int i = 0; i <= PART_REQ_COMMITS_MAX; i++) {
		snprintf(id, sizeof id, "c-%d", i);
		part_req_commits_note(rc, st, id);
	}
	assert_int_equal(rc->n, PART_REQ_COMMITS_MAX);
	char big[PART_REQ_COMMIT_ID_MAX + 8];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	part_req_commits_note(rc, st, big); /* too long: not noted */
	assert_int_equal(rc->n, PART_REQ_COMMITS_MAX);
	part_note_fulfilled(st, "commitment");
	struct decision why;
	assert_false(part_req_commits_failed(rc, st, "c-0", &why));
	assert_true(part_req_commits_failed(rc, st, "c-1", &why));
	assert_false(part_req_commits_failed(NULL, st, "c-2", &why));
	assert_false(part_req_commits_failed(rc, st, NULL, &why));
}

/* The ranking's owner of REQ, from marvin's view (group setup). */
static int find_owner(void **state)
{
	struct part_tick_out t;
	snprintf(OWN, sizeof OWN, "marvin");
	setup(state);
	tick(&((struct fx *)*state)->st, REQ, &t);
	snprintf(OWN, sizeof OWN, "%s", t.own.owner);
	teardown(state);
	return OWN[0] ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_reopens_own_request_only, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_forced_cap_survives_reopen, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_bounded, setup, teardown),
	};
	return cmocka_run_group_tests(tests, find_owner, NULL);
}

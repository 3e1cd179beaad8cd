/*
 * The known agents of a workspace as the engine builds them
 * (wsp_int.h wsp_workspace_agents), the candidates for every review: us,
 * the authors of the plans' markers (this repository's plans only), and
 * the agents of the room that said their GitHub login — an idle agent
 * without a marker included. And who the status names as the one to act
 * on a pull request left to the owner (the owner's login when known). No
 * I/O: the engine is a bare struct with its plans and the room's callback.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/json.h"
#include "modules/workspace/policy.h"
#include "modules/workspace/wsp_int.h"

struct room {
	const char *logins[WSP_ROOM_AGENTS + 8];
	size_t n;
	size_t asked_cap; /* the cap the engine passed */
};

static size_t room_agents(void *ud, const char **out, size_t cap)
{
	struct room *r = ud;
	r->asked_cap = cap;
	size_t n = r->n < cap ? r->n : cap;
	for (size_t i = 0; i < n; i++)
		out[i] = r->logins[i];
	return n;
}

static struct wsp_plan *plan_with(const char *owner, const char *repo, const char *const *authors,
                                  size_t n)
{
	struct wsp_plan *p = calloc(1, sizeof *p);
	snprintf(p->owner, sizeof p->owner, "%s", owner);
	snprintf(p->repo, sizeof p->repo, "%s", repo);
	for (size_t i = 0; i < n; i++)
		wsp_agents_add(&p->agents, authors[i]);
	return p;
}

static char g_me[] = "ada-bot";

/* The engine is large (its pulls, its sends): on the heap. */
static struct wsp *engine(struct room *r)
{
	struct wsp *w = calloc(1, sizeof *w);
	w->login = g_me;
	const char *workers[] = {"ada-bot", "bob-bot"};
	const char *elsewhere[] = {"eve-bot"};
	w->plans[w->nplans++] = plan_with("acme", "web", workers, 2);
	w->plans[w->nplans++] = plan_with("acme", "other", elsewhere, 1);
	if (r) {
		w->c.room_agents = room_agents;
		w->c.ud = r;
	}
	return w;
}

static void engine_free(struct wsp *w)
{
	for (size_t i = 0; i < w->nplans; i++)
		free(w->plans[i]);
	free(w);
}

static void test_idle_room_agent(void **state)
{
	(void)state;
	struct wsp_agents ag;
	/* without a room: us and this repository's marker authors */
	struct wsp *w = engine(NULL);
	wsp_workspace_agents(w, "Acme", "Web", &ag);
	assert_int_equal(ag.n, 2);
	assert_true(wsp_agents_has(&ag, "bob-bot"));
	assert_false(wsp_agents_has(&ag, "eve-bot")); /* another repository's */
	engine_free(w);

	/* the room adds the idle agent (once, whatever the case; invalid
	 * logins are not agents) */
	struct room r = {.logins = {"Cal-Bot", "bob-bot", "-bad-", "cal-bot"}, .n = 4};
	w = engine(&r);
	wsp_workspace_agents(w, "acme", "web", &ag);
	assert_int_equal(ag.n, 3);
	assert_string_equal(ag.login[0], "ada-bot");
	assert_string_equal(ag.login[1], "bob-bot");
	assert_string_equal(ag.login[2], "cal-bot");
	assert_int_equal(r.asked_cap, WSP_ROOM_AGENTS);
	/* so the idle agent is a candidate for a PR of bob-bot's */
	const char *cand[WSP_MAX_AGENTS];
	for (size_t i = 0; i < ag.n; i++)
		cand[i] = ag.login[i];
	char who[PLAN_LOGIN_MAX];
	for (int64_t pr = 1; pr < 50; pr++) {
		assert_int_equal(wsp_designated_reviewer("acme", "web", pr, "bob-bot", cand, ag.n,
		                                         who, sizeof who, NULL),
		                 0);
		if (strcmp(who, "cal-bot") == 0)
			break;
	}
	assert_string_equal(who, "cal-bot");

	/* the room's agents alone, for a repository without plans */
	wsp_workspace_agents(w, "acme", "new", &ag);
	assert_int_equal(ag.n, 3);
	assert_true(wsp_agents_has(&ag, "cal-bot"));
	assert_false(wsp_agents_has(&ag, "eve-bot"));

	/* the agent left the room: no longer known */
	r.n = 1;
	r.logins[0] = "bob-bot";
	wsp_workspace_agents(w, "acme", "web", &ag);
	assert_int_equal(ag.n, 2);
	assert_false(wsp_agents_has(&ag, "cal-bot"));
	engine_free(w);
}

/* The same room in another member order gives the same set, bounded. */
static void test_room_order_and_bound(void **state)
{
	(void)state;
	static char names[WSP_ROOM_AGENTS + 8][16];
	struct room a = {.n = WSP_ROOM_AGENTS}, b = {.n = WSP_ROOM_AGENTS};
	for (size_t i = 0; i < WSP_ROOM_AGENTS; i++) {
		snprintf(names[i], sizeof names[i], "peer-%02zu", i);
		a.logins[i] = names[i];
		b.logins[WSP_ROOM_AGENTS - 1 - i] = names[i];
	}
	struct wsp_agents x, y;
	struct wsp *w1 = engine(&a), *w2 = engine(&b);
	wsp_workspace_agents(w1, "acme", "web", &x);
	wsp_workspace_agents(w2, "acme", "web", &y);
	assert_int_equal(x.n, WSP_MAX_AGENTS);
	assert_int_equal(y.n, WSP_MAX_AGENTS);
	for (size_t i = 0; i < x.n; i++)
		assert_string_equal(x.login[i], y.login[i]);
	/* the markers' authors are never crowded out by the room */
	assert_true(wsp_agents_has(&x, "bob-bot"));
	assert_true(wsp_agents_has(&x, "peer-00"));
	engine_free(w1);
	engine_free(w2);
}

/* pulls[].next: "" in the verdict is the owner — its login when
 * OWNER_GITHUB_USERNAME is set, else "owner"; an agent's login as is. */
static void test_next_names_the_owner(void **state)
{
	(void)state;
	struct wsp *w = engine(NULL);
	w->npulls = 2;
	snprintf(w->pulls[0].next, sizeof w->pulls[0].next, "%s", "");
	w->pulls[0].state = WSP_PR_OWNER;
	snprintf(w->pulls[1].next, sizeof w->pulls[1].next, "%s", "bob-bot");
	w->pulls[1].state = WSP_PR_AWAITING_REVIEW;
	cJSON *a = wsp_pulls_json(w);
	assert_string_equal(json_string_or(cJSON_GetArrayItem(a, 0), "next", ""), "owner");
	assert_string_equal(json_string_or(cJSON_GetArrayItem(a, 1), "next", ""), "bob-bot");
	cJSON_Delete(a);
	snprintf(w->owner_login, sizeof w->owner_login, "%s", "olive");
	a = wsp_pulls_json(w);
	assert_string_equal(json_string_or(cJSON_GetArrayItem(a, 0), "next", ""), "olive");
	assert_string_equal(json_string_or(cJSON_GetArrayItem(a, 0), "state", ""), "owner");
	assert_string_equal(json_string_or(cJSON_GetArrayItem(a, 1), "next", ""), "bob-bot");
	cJSON_Delete(a);
	engine_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_next_names_the_owner),
	        cmocka_unit_test(test_idle_room_agent),
	        cmocka_unit_test(test_room_order_and_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Pull requests end to end with real binaries (e2efix.h): three
 * general-agent processes in a real agent-space room, ghfake-server (real
 * git behind it), llmfake-server, a scripted coder in the sandbox. The
 * host asks in the room for three pages of the workspace; the owner of the
 * request writes a plan of three tasks; the agents claim them, each task
 * becomes a PR. From there every variant checks the same end (check_end):
 *
 *   - every task's PR reviewed by exactly one peer, the designated one
 *     (policy.h: the smallest SHA-256 of "<login><owner>/<repo>#<n>" among
 *     the agents but the author), who is also the one requested; one review
 *     per head commit, the last one APPROVED on the merged head;
 *   - merged by its creator, squash, "<PR title> (#n)" as the commit's
 *     title on main, the head branch deleted; no PR left open;
 *   - each task done in the plan once (one done marker); the plan closed
 *     with labels plan + plan:complete and one "Plan Complete" comment; no
 *     comment of the plan twice.
 *
 * Variants (argv[1], one ctest each):
 *   plan         just that;
 *   changes      the first review requests changes (an inline comment on
 *                the task's file): the author's coder runs again on the
 *                same branch with the review as input (it adds the line
 *                the review asks for), the reviewer approves the new head,
 *                the PR is merged with the line;
 *   conflict     tasks 1 and 2 both write shared.txt: once one is merged
 *                the other is dirty; its creator rebuilds it from the
 *                default branch as a new PR (the old one closed, linking
 *                the new), which is reviewed and merged;
 *   kill_review  the reviewer is SIGKILLed as soon as its review shows on
 *                GitHub (before it may have recorded it) and restarted;
 *   kill_merge   the creator is SIGKILLed as soon as its PR shows merged
 *                (the branch, the done marker, the plan's end still to
 *                come) and restarted;
 *   kill_done    the creator is SIGKILLed after the merge and the branch
 *                deletion, before the done marker, and restarted;
 *                in the three: no duplicate review, merge, comment or PR
 *                (the fake's own request log counts the attempts);
 *   silent       the third agent (Cal) has no coder: it takes no task, so
 *                no marker of it is on the plan, and the creators know it
 *                only from its room identity (githubLogin). The first
 *                designated reviewer never answers (its process stopped,
 *                SIGSTOP, once the review is asked of it): after
 *                GA_REVIEW_TIMEOUT_MS its PR's creator asks the next
 *                reviewer by the same hash order, who reviews; the PR is
 *                merged. Cal is one of the two: the designated one, or the
 *                next.
 *
 * Skips (77) without git; without bubblewrap's namespaces the coder runs
 * with CODER_SANDBOX=off and the rest is the same.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include <cmocka.h>

#include "adapters/github/gh_work.h"
#include "common/json.h"
#include "e2efix.h"
#include "modules/workspace/policy.h"
#include "modules/workspace/wsp_int.h"
#include "tests/fakes/github/ghfake.h"
#include "testutil.h"

#define OWNER      E2E_OWNER
#define REPO       E2E_REPO
#define REPO_P     "/repos/" OWNER "/" REPO
#define END_MS     420000 /* three tasks, three reviews, three merges on a loaded machine */
#define POLL_MS    100
#define MAX_PRS    16
#define MAX_NUMBER 32  /* issue and PR numbers the kill variants follow */
#define SLOW_MS    300 /* the fake's REST answers while a kill's stage is awaited */
#define IDLE       2   /* the silent variant's agent without a coder */

/* The coder: the task's file (the task's number from the branch,
 * task-<n>-…), committed. A run whose prompt carries the review's request
 * ("say who reviewed it") adds that line instead: a revision on the same
 * branch. With CONFLICT set, tasks 1 and 2 also write shared.txt (a
 * rebuilt branch starts from main, where the other's shared.txt is: the
 * new content is a change, not a conflict). */
static const char CODER[] =
        "set -e\n"
        "n=$(git rev-parse --abbrev-ref HEAD | sed -n 's/^task-\\([0-9]*\\)-.*/\\1/p')\n"
        "[ -n \"$n\" ] || n=$(sed -n 's/^### Task \\([0-9]*\\):.*/\\1/p' \"$1\" | head -1)\n"
        "if grep -q 'say who reviewed it' \"$1\" && [ -e \"task-$n.txt\" ]; then\n"
        "  echo \"reviewed by a peer\" >> \"task-$n.txt\"\n"
        "  git add \"task-$n.txt\"; git commit -q -m \"task($n): the review's line\"; exit 0\n"
        "fi\n"
        "echo \"task $n by $GIT_AUTHOR_NAME\" > \"task-$n.txt\"\n"
        "git add \"task-$n.txt\"\n"
        "if [ -e \"$GATE/conflict\" ] && [ \"$n\" != 3 ]; then\n"
        "  echo \"shared by task $n\" > shared.txt; git add shared.txt\n"
        "fi\n"
        "git commit -q -m \"task($n): the task's file\"\n";

/* The model. The host's request → a plan (create_plan); the classifier;
 * a review prompt (github_review_pr offered, a PR's URL in the prompt) →
 * the review of that PR; the turn after a tool call → done. REVIEW_FIRST
 * is put before the approving review (the changes variant's request). */
#define ROOM_ENTRIES                                                                               \
	"{\"match\":{\"tool_choice\":\"space_decision\",\"last_user_contains\":\"Please build "    \
	"greeting pages\"},\"tool_calls\":[{\"name\":\"space_decision\",\"arguments\":{"           \
	"\"shouldSpeak\":true,\"reason\":\"I can plan it\",\"message\":\"I'll write the plan "     \
	"for the greeting pages in " OWNER "/" REPO " now.\",\"commitments\":[{\"type\":"          \
	"\"create_plan\",\"repo\":\"" OWNER "/" REPO "\",\"title\":\"Greeting pages\","            \
	"\"description\":\"Greeting pages for the demo site.\\n1. Add the greeting: a page that "  \
	"says hello\\n2. Add the farewell: a page that says goodbye\\n3. Add the schedule: a "     \
	"page with the day's times\"}]}}]},"                                                       \
	"{\"match\":{\"tool_choice\":\"space_decision\"},\"tool_calls\":[{\"name\":"               \
	"\"space_decision\",\"arguments\":{\"shouldSpeak\":false,\"reason\":\"nothing to "         \
	"add\"}}]},"                                                                               \
	"{\"match\":{\"no_tools\":true,\"last_user_contains\":\"Message:\"},\"content\":"          \
	"\"ACTION_REQUEST\"},"
#define REVIEW_CAPTURES                                                                            \
	"\"captures\":{\"pr\":\"Review pull request #([0-9]+)\",\"file\":\"### "                   \
	"(task-[0-9]+\\\\.txt)\"},"
#define REVIEW_CALL(event, body, comments)                                                         \
	"\"tool_calls\":[{\"name\":\"github_review_pr\",\"arguments\":{\"owner\":\"" OWNER         \
	"\",\"repo\":\"" REPO "\",\"pull_number\":\"{{pr}}\",\"event\":\"" event                   \
	"\",\"body\":\"" body "\"" comments "}}]"
#define REVIEW_APPROVE(delay)                                                                      \
	"{\"match\":{\"tools\":[\"github_review_pr\"],\"after_tool\":false}," REVIEW_CAPTURES      \
	        delay REVIEW_CALL("APPROVE",                                                       \
	                          "Read the diff: the task's file says what the task asks; "       \
	                          "the tests pass.",                                               \
	                          "") "},"
#define REVIEW_CHANGES                                                                             \
	"{\"match\":{\"tools\":[\"github_review_pr\"],\"after_tool\":false},\"times\":"            \
	"1," REVIEW_CAPTURES REVIEW_CALL(                                                          \
	        "REQUEST_CHANGES",                                                                 \
	        "The file should also say who reviewed it: please add that line.",                 \
	        ",\"comments\":[{\"path\":\"{{file}}\",\"line\":1,\"body\":\"Please say who "      \
	        "reviewed it, below this line.\"}]") "},"
#define AFTER_TOOL "{\"match\":{\"after_tool\":true},\"content\":\"Done.\"},"
#define DEFAULT    "{\"content\":\"OK.\"}"

static const char SCRIPT_PLAIN[] = "[" ROOM_ENTRIES REVIEW_APPROVE("") AFTER_TOOL DEFAULT "]";
static const char SCRIPT_CHANGES[] =
        "[" ROOM_ENTRIES REVIEW_CHANGES REVIEW_APPROVE("") AFTER_TOOL DEFAULT "]";
/* The review's answer takes a while: the test stops the reviewer first. */
static const char SCRIPT_SLOW[] =
        "[" ROOM_ENTRIES REVIEW_APPROVE("\"delay_ms\":3000,") AFTER_TOOL DEFAULT "]";

/* --- the world's GitHub as the test reads it -------------------------------------------------- */

struct pr {
	int number, task;
	char author[40], head[80], head_sha[48], title[200], merged_by[40];
	bool open, merged;
	char requested[4][40]; /* review_requested events' reviewers, in order */
	int n_requested;
};

static int task_of_head(const char *head)
{
	return strncmp(head, "task-", 5) == 0 ? atoi(head + 5) : 0;
}

/* The PRs of the workspace (at most MAX_PRS), with their review requests. */
static int read_prs(struct e2e_world *w, struct pr *out)
{
	cJSON *ps = e2e_get(w, REPO_P "/pulls?state=all&per_page=100");
	int n = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, ps)
	{
		if (n == MAX_PRS)
			break;
		struct pr *p = &out[n++];
		memset(p, 0, sizeof *p);
		p->number = (int)json_int_or(it, "number", 0);
		snprintf(p->author, sizeof p->author, "%s",
		         json_string_or(cJSON_GetObjectItem(it, "user"), "login", ""));
		const cJSON *h = cJSON_GetObjectItem(it, "head");
		snprintf(p->head, sizeof p->head, "%s", json_string_or(h, "ref", ""));
		snprintf(p->head_sha, sizeof p->head_sha, "%s", json_string_or(h, "sha", ""));
		snprintf(p->title, sizeof p->title, "%s", json_string_or(it, "title", ""));
		p->task = task_of_head(p->head);
		p->open = strcmp(json_string_or(it, "state", ""), "open") == 0;
		cJSON *full = e2e_get(w, REPO_P "/pulls/%d", p->number);
		p->merged = cJSON_IsTrue(cJSON_GetObjectItem(full, "merged"));
		snprintf(p->merged_by, sizeof p->merged_by, "%s",
		         json_string_or(cJSON_GetObjectItem(full, "merged_by"), "login", ""));
		cJSON_Delete(full);
		cJSON *ev = e2e_get(w, REPO_P "/issues/%d/events?per_page=100", p->number);
		const cJSON *e;
		cJSON_ArrayForEach(e, ev)
		{
			if (strcmp(json_string_or(e, "event", ""), "review_requested") != 0 ||
			    p->n_requested == 4)
				continue;
			snprintf(p->requested[p->n_requested++], sizeof p->requested[0], "%s",
			         json_string_or(cJSON_GetObjectItem(e, "requested_reviewer"),
			                        "login", ""));
		}
		cJSON_Delete(ev);
	}
	cJSON_Delete(ps);
	return n;
}

static void designated(const struct pr *p, char *out, size_t cap)
{
	out[0] = '\0';
	assert_int_equal(wsp_designated_reviewer(OWNER, REPO, p->number, p->author, E2E_LOGINS, 3,
	                                         out, cap, NULL),
	                 0);
}

/* What the test saw of each PR, for a failure's report. */
static void report(struct e2e_world *w, int plan)
{
	struct pr prs[MAX_PRS];
	int n = read_prs(w, prs);
	fprintf(stderr, "---- the fake: plan #%d, %d PRs ----\n", plan, n);
	for (int i = 0; i < n; i++) {
		char des[40];
		designated(&prs[i], des, sizeof des);
		fprintf(stderr, "#%d %s by %s: %s%s, designated %s, requested", prs[i].number,
		        prs[i].head, prs[i].author, prs[i].open ? "open" : "closed",
		        prs[i].merged ? " merged" : "", des);
		for (int k = 0; k < prs[i].n_requested; k++)
			fprintf(stderr, " %s", prs[i].requested[k]);
		cJSON *rv = e2e_get(w, REPO_P "/pulls/%d/reviews", prs[i].number);
		const cJSON *r;
		cJSON_ArrayForEach(r, rv)
		{
			fprintf(stderr, "; review %s by %s on %.7s",
			        json_string_or(r, "state", "?"),
			        json_string_or(cJSON_GetObjectItem(r, "user"), "login", "?"),
			        json_string_or(r, "commit_id", "?"));
		}
		cJSON_Delete(rv);
		fputc('\n', stderr);
	}
	struct e2e_plan ps;
	if (plan && e2e_read_plan(w, plan, &ps)) {
		fprintf(stderr, "plan %s%s;", ps.closed ? "closed" : "open",
		        ps.complete_label ? " plan:complete" : "");
		for (size_t t = 0; t < ps.plan.n_tasks; t++)
			fprintf(stderr, " task %zu %s (%s, pr #%d)", t + 1,
			        plan_status_name(ps.st[t].status), ps.st[t].assignee, ps.st[t].pr);
		fputc('\n', stderr);
		e2e_plan_free(&ps);
	}
}

/* --- the run ---------------------------------------------------------------------------------- */

enum variant { V_PLAN, V_CHANGES, V_CONFLICT, V_KILL_REVIEW, V_KILL_MERGE, V_KILL_DONE, V_SILENT };

struct run {
	struct e2e_world w;
	enum variant v;
	int plan;
	/* the stage the kill or the stop hit: done once */
	bool hit;
	bool slowed;   /* the fake's answers slowed while the stage is awaited */
	int victim;    /* agent index */
	int victim_pr; /* the PR it concerned */
	char victim_login[40];
	char asked[MAX_NUMBER][40]; /* the reviewer last seen requested, per PR */
};

static int agent_of(const char *login)
{
	for (int i = 0; i < 3; i++)
		if (strcasecmp(login, E2E_LOGINS[i]) == 0)
			return i;
	return -1;
}

/* The state's PR (rendered as in a list): merged_at set once merged. */
static bool merged_in_state(const cJSON *pull)
{
	return cJSON_IsString(cJSON_GetObjectItem(pull, "merged_at"));
}

static const cJSON *issue_in(const cJSON *state, int number)
{
	const cJSON *repo = cJSON_GetArrayItem(cJSON_GetObjectItem(state, "repos"), 0);
	const cJSON *is;
	cJSON_ArrayForEach(is, cJSON_GetObjectItem(repo, "issues"))
	{
		if (json_int_or(is, "number", 0) == number)
			return is;
	}
	return NULL;
}

/* Task t's done markers in the plan as the state shows it. */
static int dones_in(const cJSON *state, int plan, int t)
{
	const cJSON *is = issue_in(state, plan);
	struct wsp_events e;
	wsp_events_read(&e, cJSON_GetObjectItem(is, "comment_list"));
	int n = 0;
	for (size_t i = 0; i < e.n; i++)
		n += e.ev[i].m.kind == PLAN_MARK_DONE && e.ev[i].m.task == t;
	wsp_events_free(&e);
	return n;
}

/* One look at the world for the kill and stop variants: the stage seen
 * → the kill (or the stop), once. */
static void watch(struct run *r, const cJSON *state)
{
	if (r->hit || r->v == V_PLAN || r->v == V_CHANGES || r->v == V_CONFLICT)
		return;
	const cJSON *repo = cJSON_GetArrayItem(cJSON_GetObjectItem(state, "repos"), 0);
	const cJSON *is;
	cJSON_ArrayForEach(is, cJSON_GetObjectItem(repo, "issues"))
	{
		const cJSON *pull = cJSON_GetObjectItem(is, "pull");
		if (!pull)
			continue;
		/* from the first PR on, every REST answer comes SLOW_MS after
		 * GitHub did the thing: the kill lands between the change and
		 * the agent's hearing of it */
		if (!r->slowed && r->v != V_SILENT) {
			e2e_fake_delay(&r->w, SLOW_MS);
			r->slowed = true;
		}
		int n = (int)json_int_or(is, "number", 0);
		const char *author = json_string_or(cJSON_GetObjectItem(pull, "user"), "login", "");
		const char *head = json_string_or(cJSON_GetObjectItem(pull, "head"), "ref", "");
		bool merged = merged_in_state(pull);
		int who = -1;
		const cJSON *rr =
		        cJSON_GetArrayItem(cJSON_GetObjectItem(pull, "requested_reviewers"), 0);
		if (r->v == V_KILL_REVIEW && !merged && n > 0 && n < MAX_NUMBER) {
			/* a review answers its author's request: the reviewer asked
			 * is off the list once its review is on GitHub */
			if (rr)
				snprintf(r->asked[n], sizeof r->asked[n], "%s",
				         json_string_or(rr, "login", ""));
			else if (r->asked[n][0])
				who = agent_of(r->asked[n]);
		} else if (r->v == V_KILL_MERGE && merged) {
			who = agent_of(author);
		} else if (r->v == V_KILL_DONE && merged &&
		           dones_in(state, r->plan, task_of_head(head)) == 0 &&
		           !e2e_git_has_branch(&r->w, head)) {
			who = agent_of(author);
		} else if (r->v == V_SILENT && !merged) {
			if (rr)
				who = agent_of(json_string_or(rr, "login", ""));
		}
		if (who < 0)
			continue;
		r->hit = true;
		r->victim = who;
		r->victim_pr = n;
		snprintf(r->victim_login, sizeof r->victim_login, "%s", E2E_LOGINS[who]);
		if (r->v == V_SILENT) {
			/* never answers: frozen, its model call left hanging */
			fprintf(stderr, "stopping %s, the reviewer asked on #%d\n", E2E_NAMES[who],
			        n);
			proc_signal(&r->w.a[who], SIGSTOP);
		} else {
			fprintf(stderr, "killing %s at #%d (%s)\n", E2E_NAMES[who], n,
			        r->v == V_KILL_REVIEW  ? "its review is on GitHub"
			        : r->v == V_KILL_MERGE ? "merged"
			                               : "merged, branch deleted, no done marker");
			e2e_agent_kill(&r->w, who);
			e2e_fake_delay(&r->w, 0);
			e2e_agent_start(&r->w, who, false);
		}
		return;
	}
}

/* Is the run over: the plan closed and no PR open (the silent variant:
 * the stopped reviewer's PR resolved — merged, or closed, or handed to the
 * owner, the last shown by a comment naming the owner's part). */
static bool over(struct run *r, const cJSON *state)
{
	const cJSON *plan = issue_in(state, r->plan);
	if (r->v == V_SILENT) {
		if (!r->hit)
			return false;
		const cJSON *pr = issue_in(state, r->victim_pr);
		const cJSON *pull = cJSON_GetObjectItem(pr, "pull");
		return pull && (merged_in_state(pull) ||
		                strcmp(json_string_or(pull, "state", ""), "closed") == 0);
	}
	if (!plan || strcmp(json_string_or(plan, "state", ""), "closed") != 0)
		return false;
	const cJSON *repo = cJSON_GetArrayItem(cJSON_GetObjectItem(state, "repos"), 0);
	const cJSON *is;
	cJSON_ArrayForEach(is, cJSON_GetObjectItem(repo, "issues"))
	{
		const cJSON *pull = cJSON_GetObjectItem(is, "pull");
		if (pull && strcmp(json_string_or(pull, "state", ""), "open") == 0)
			return false;
	}
	return true;
}

static void run_to_end(struct run *r)
{
	int64_t end = th_now_ms() + END_MS;
	bool done = false;
	while (!done && th_now_ms() < end) {
		cJSON *st = e2e_get(&r->w, "/_ghfake/state");
		if (st) {
			watch(r, st);
			done = over(r, st);
		}
		cJSON_Delete(st);
		if (!done)
			th_msleep(POLL_MS);
	}
	if (!done) {
		e2e_dump_all(&r->w);
		report(&r->w, r->plan);
		fail_msg("the run did not end in %d s (variant %d%s)", END_MS / 1000, r->v,
		         r->hit || r->v <= V_CONFLICT ? "" : ", its stage was never seen");
	}
}

/* --- the end every variant reaches ------------------------------------------------------------ */

static int count_reviews(struct e2e_world *w, int n, const char *by, const char *state,
                         const char *commit)
{
	cJSON *rv = e2e_get(w, REPO_P "/pulls/%d/reviews", n);
	int k = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, rv)
	{
		if ((!by || strcasecmp(json_string_or(cJSON_GetObjectItem(it, "user"), "login", ""),
		                       by) == 0) &&
		    (!state || strcmp(json_string_or(it, "state", ""), state) == 0) &&
		    (!commit || strcmp(json_string_or(it, "commit_id", ""), commit) == 0))
			k++;
	}
	cJSON_Delete(rv);
	return k;
}

/* The merged PR's squash commit on main: its title "<PR title> (#n)". */
static bool squash_on_main(struct e2e_world *w, const struct pr *p)
{
	cJSON *cs = e2e_get(w, REPO_P "/commits?sha=main&per_page=100");
	char want[260];
	snprintf(want, sizeof want, "%s (#%d)", p->title, p->number);
	bool found = false;
	const cJSON *it;
	cJSON_ArrayForEach(it, cs)
	{
		const char *msg = json_string_or(cJSON_GetObjectItem(it, "commit"), "message", "");
		size_t len = strcspn(msg, "\n");
		if (len == strlen(want) && strncmp(msg, want, len) == 0)
			found = true;
	}
	cJSON_Delete(cs);
	return found;
}

struct end_counts {
	int prs, merged, rebuilt; /* rebuilt: closed unmerged, replaced */
	int revised;              /* PRs with a review on an older head */
};

static void check_end(struct run *r, struct end_counts *c)
{
	struct e2e_world *w = &r->w;
	memset(c, 0, sizeof *c);
	report(w, r->plan); /* what is checked, in the test's log */
	struct pr prs[MAX_PRS];
	int n = read_prs(w, prs);
	c->prs = n;
	for (int i = 0; i < n; i++) {
		struct pr *p = &prs[i];
		assert_false(p->open);
		assert_true(p->task >= 1 && p->task <= 3);
		if (!p->merged) {
			/* a PR replaced by its rebuild: closed by its creator, with a
			 * comment naming the new one */
			c->rebuilt++;
			continue;
		}
		c->merged++;
		char des[40];
		designated(p, des, sizeof des);
		/* merged by its creator, squashed with the title, branch gone */
		assert_string_equal(p->merged_by, p->author);
		if (!squash_on_main(w, p))
			fail_msg("#%d: no commit \"%s (#%d)\" on main", p->number, p->title,
			         p->number);
		assert_false(e2e_git_has_branch(w, p->head));
		/* reviewed by exactly one peer: the designated one, the one asked
		 * (the silent variant: the next one, asked after the first) */
		const char *reviewer = des;
		if (r->v == V_SILENT && p->number == r->victim_pr) {
			assert_string_equal(p->requested[0], des);
			assert_true(p->n_requested >= 2);
			reviewer = p->requested[p->n_requested - 1];
			assert_string_not_equal(reviewer, des);
			assert_int_equal(count_reviews(w, p->number, des, NULL, NULL), 0);
		} else {
			/* the creator designates among the agents it knows when
			 * the PR opens (the plan's markers, the room's identities):
			 * the one asked is asked every time and is the only one to
			 * review */
			assert_true(p->n_requested >= 1);
			reviewer = p->requested[0];
			assert_string_not_equal(reviewer, p->author);
			for (int k = 0; k < p->n_requested; k++)
				assert_string_equal(p->requested[k], reviewer);
		}
		int all = count_reviews(w, p->number, NULL, NULL, NULL);
		int mine = count_reviews(w, p->number, reviewer, NULL, NULL);
		if (all != mine)
			fail_msg("#%d: reviews by someone other than %s", p->number, reviewer);
		/* the head that was merged: approved once */
		assert_int_equal(count_reviews(w, p->number, reviewer, "APPROVED", p->head_sha), 1);
		assert_int_equal(count_reviews(w, p->number, reviewer, NULL, p->head_sha), 1);
		c->revised += all > 1;
	}
	/* no open PR, one merged per task */
	assert_int_equal(c->merged, 3);
	/* the plan: every task done once, closed complete */
	struct e2e_plan ps;
	assert_true(e2e_read_plan(w, r->plan, &ps));
	assert_true(ps.closed);
	assert_true(ps.complete_label);
	assert_int_equal(ps.plan.n_tasks, 3);
	for (int t = 1; t <= 3; t++) {
		assert_int_equal(ps.st[t - 1].status, PLAN_COMPLETED);
		assert_int_equal(ps.dones[t], 1);
	}
	int complete = 0;
	const cJSON *it, *jt;
	cJSON_ArrayForEach(it, ps.comments)
	{
		const char *b = json_string_or(it, "body", "");
		complete += strstr(b, "Plan Complete") != NULL;
		/* no comment twice */
		cJSON_ArrayForEach(jt, ps.comments)
		{
			if (jt != it && strcmp(json_string_or(jt, "body", ""), b) == 0)
				fail_msg("the plan has the comment twice:\n%s", b);
		}
	}
	assert_int_equal(complete, 1);
	e2e_plan_free(&ps);
	/* what GitHub was asked: one merge per merged PR, no review
	 * posted twice, no PR opened twice */
	int merges = e2e_recorded(w, "PUT", REPO_P "/pulls/", "/merge");
	int reviews = e2e_recorded(w, "POST", REPO_P "/pulls/", "/reviews");
	int opened = e2e_recorded(w, "POST", NULL, REPO_P "/pulls");
	int posted = 0;
	for (int i = 0; i < n; i++)
		posted += count_reviews(w, prs[i].number, NULL, NULL, NULL);
	fprintf(stderr,
	        "the end: %d PRs (%d merged, %d rebuilt, %d revised); asked: %d merges, %d "
	        "reviews (%d on GitHub), %d PRs opened\n",
	        n, c->merged, c->rebuilt, c->revised, merges, reviews, posted, opened);
	if (r->v != V_CONFLICT)
		assert_int_equal(merges, c->merged);
	assert_int_equal(reviews, posted);
	assert_int_equal(opened, n);
}

/* --- the variants ----------------------------------------------------------------------------- */

static void start(struct run *r, enum variant v)
{
	memset(r, 0, sizeof *r);
	r->v = v;
	e2e_world_init(&r->w);
	snprintf(r->w.cycle_ms, sizeof r->w.cycle_ms, "1000");
	int k = 0;
	if (v == V_SILENT) {
		r->w.extra[k++] = "GA_REVIEW_TIMEOUT_MS=8000";
		r->w.no_coder[IDLE] = true;
	}
	r->w.extra[k++] = "GA_MAX_REVISIONS=2";
	/* the notifications read too (review_requested leads to the same
	 * review as the cycle's: made once) */
	r->w.extra[k++] = "GA_GITHUB_POLL_MS=3000";
	const char *script = v == V_CHANGES  ? SCRIPT_CHANGES
	                     : v == V_SILENT ? SCRIPT_SLOW
	                                     : SCRIPT_PLAIN;
	e2e_fakes(&r->w, script, CODER);
	if (v == V_CONFLICT)
		tu_write(r->w.dir, "gate/conflict", "");
	e2e_room(&r->w);
	for (int i = 0; i < 3; i++)
		e2e_agent_start(&r->w, i, false);
	th_room_host(&r->w.room, "Please build greeting pages in https://github.com/" OWNER "/" REPO
	                         ": a page that says hello, one that says goodbye, and the day's "
	                         "schedule.");
	int64_t end = th_now_ms() + 60000;
	while (!(r->plan = e2e_plan_number(&r->w)) && th_now_ms() < end)
		th_msleep(300);
	if (!r->plan) {
		e2e_dump_all(&r->w);
		fail_msg("no plan was created");
	}
}

static void finish(struct run *r)
{
	if (r->v == V_SILENT && r->hit) {
		/* the frozen reviewer ends without answering */
		e2e_agent_kill(&r->w, r->victim);
	}
	e2e_stop(&r->w);
}

/* A variant from the host's request to its end, checked. */
static void run_checked(struct run *r, enum variant v, struct end_counts *c)
{
	start(r, v);
	run_to_end(r);
	check_end(r, c);
}

static void test_plan(void **state)
{
	(void)state;
	struct run r;
	struct end_counts c;
	run_checked(&r, V_PLAN, &c);
	assert_int_equal(c.prs, 3);
	assert_int_equal(c.revised, 0);
	finish(&r);
}

static void test_changes(void **state)
{
	(void)state;
	struct run r;
	struct end_counts c;
	run_checked(&r, V_CHANGES, &c);
	/* one PR revised on its branch (no new PR), its file with the line the
	 * review asked for */
	assert_int_equal(c.prs, 3);
	assert_int_equal(c.revised, 1);
	struct pr prs[MAX_PRS];
	int n = read_prs(&r.w, prs);
	int asked = 0, revised = 0;
	for (int i = 0; i < n; i++) {
		if (count_reviews(&r.w, prs[i].number, NULL, "CHANGES_REQUESTED", NULL) == 0)
			continue;
		asked++;
		cJSON *f = e2e_get(&r.w, REPO_P "/contents/task-%d.txt?ref=main", prs[i].task);
		struct gh_content content;
		assert_int_equal(gh_content_parse(f, &content, NULL), 0);
		revised += strstr((const char *)content.data, "reviewed by a peer") != NULL;
		gh_content_clear(&content);
		cJSON_Delete(f);
	}
	assert_int_equal(asked, 1);
	assert_int_equal(revised, 1);
	finish(&r);
}

static void test_conflict(void **state)
{
	(void)state;
	struct run r;
	struct end_counts c;
	run_checked(&r, V_CONFLICT, &c);
	/* the second of tasks 1 and 2 to come was rebuilt: its first PR closed
	 * unmerged, with a comment naming the new one, which was merged */
	assert_int_equal(c.rebuilt, 1);
	assert_int_equal(c.prs, 4);
	struct pr prs[MAX_PRS];
	int n = read_prs(&r.w, prs);
	for (int i = 0; i < n; i++) {
		if (prs[i].merged)
			continue;
		assert_true(prs[i].task == 1 || prs[i].task == 2);
		int newer = 0;
		for (int k = 0; k < n; k++)
			if (prs[k].task == prs[i].task && prs[k].merged)
				newer = prs[k].number;
		assert_true(newer > prs[i].number);
		cJSON *cs = e2e_get(&r.w, REPO_P "/issues/%d/comments", prs[i].number);
		char link[32];
		snprintf(link, sizeof link, "#%d", newer);
		bool named = false;
		const cJSON *it;
		cJSON_ArrayForEach(it, cs)
		{
			char url[64];
			snprintf(url, sizeof url, "/pull/%d", newer);
			const char *b = json_string_or(it, "body", "");
			named = named || strstr(b, link) || strstr(b, url);
		}
		cJSON_Delete(cs);
		if (!named)
			fail_msg("#%d was closed without naming its rebuild #%d", prs[i].number,
			         newer);
	}
	finish(&r);
}

static void test_kill(enum variant v)
{
	struct run r;
	struct end_counts c;
	run_checked(&r, v, &c);
	assert_true(r.hit);
	assert_int_equal(c.prs, 3);
	finish(&r);
}

static void test_kill_review(void **state)
{
	(void)state;
	test_kill(V_KILL_REVIEW);
}

static void test_kill_merge(void **state)
{
	(void)state;
	test_kill(V_KILL_MERGE);
}

static void test_kill_done(void **state)
{
	(void)state;
	test_kill(V_KILL_DONE);
}

static void test_silent(void **state)
{
	(void)state;
	struct run r;
	start(&r, V_SILENT);
	run_to_end(&r);
	report(&r.w, r.plan); /* who took which task, who was asked: in the log */
	struct pr prs[MAX_PRS];
	int n = read_prs(&r.w, prs);
	const struct pr *p = NULL;
	for (int i = 0; i < n; i++)
		if (prs[i].number == r.victim_pr)
			p = &prs[i];
	assert_non_null(p);
	/* the idle agent opened no PR */
	for (int i = 0; i < n; i++)
		assert_string_not_equal(prs[i].author, E2E_LOGINS[IDLE]);
	char des[40];
	designated(p, des, sizeof des);
	assert_string_equal(des, r.victim_login);
	assert_string_equal(p->requested[0], des);
	assert_int_equal(count_reviews(&r.w, p->number, des, NULL, NULL), 0);
	if (p->merged) {
		/* the next reviewer by the hash order, asked after the timeout */
		assert_true(p->n_requested >= 2);
		const char *next = p->requested[p->n_requested - 1];
		assert_string_not_equal(next, des);
		assert_string_not_equal(next, p->author);
		/* the idle agent, known from the room alone, was one of them */
		if (strcmp(des, E2E_LOGINS[IDLE]) != 0 && strcmp(next, E2E_LOGINS[IDLE]) != 0)
			fail_msg("#%d: neither %s nor %s is the idle %s", p->number, des, next,
			         E2E_LOGINS[IDLE]);
		assert_int_equal(count_reviews(&r.w, p->number, next, "APPROVED", p->head_sha), 1);
		assert_string_equal(p->merged_by, p->author);
	} else {
		fail_msg("#%d closed unmerged: not what a silent reviewer should lead to",
		         p->number);
	}
	finish(&r);
}

int main(int argc, char **argv)
{
	if (ghfake_git_missing("test_pr_e2e"))
		return 77;
	const char *only = argc > 1 ? argv[1] : NULL;
	const struct CMUnitTest all[] = {
	        cmocka_unit_test_teardown(test_plan, th_teardown),
	        cmocka_unit_test_teardown(test_changes, th_teardown),
	        cmocka_unit_test_teardown(test_conflict, th_teardown),
	        cmocka_unit_test_teardown(test_kill_review, th_teardown),
	        cmocka_unit_test_teardown(test_kill_merge, th_teardown),
	        cmocka_unit_test_teardown(test_kill_done, th_teardown),
	        cmocka_unit_test_teardown(test_silent, th_teardown),
	};
	static const char *const names[] = {"plan",       "changes",   "conflict", "kill_review",
	                                    "kill_merge", "kill_done", "silent"};
	for (size_t i = 0; only && i < sizeof names / sizeof names[0]; i++)
		if (!strcmp(only, names[i]))
			return _cmocka_run_group_tests(names[i], &all[i], 1, NULL, NULL);
	if (only) {
		fprintf(stderr,
		        "test_pr_e2e: no variant '%s' (plan, changes, conflict, kill_review, "
		        "kill_merge, kill_done, silent)\n",
		        only);
		return 64;
	}
	return cmocka_run_group_tests(all, NULL, NULL);
}

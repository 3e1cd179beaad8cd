/*
 * modules/reflection, the pure parts and the files: which decisions are
 * experiences, the store's dedup, bounds, replay and rotation; when a
 * reflection is due; what is done with the model's answer (garbage, SOUL
 * edits and contradictions, shrinking, unchanged, changed); the voice
 * phrases' schema, defaults, generation and hot reload; peer memory
 * (counting, bounds, rendering, persistence and migration); the SELF.md
 * history and the self CLI (diff, revert).
 */
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
#include <sys/stat.h>
#include <time.h>

#include "common/fsx.h"
#include "common/xalloc.h"
#include "modules/conversation/event.h"
#include "modules/reflection/cli.h"
#include "modules/reflection/experience.h"
#include "modules/reflection/history.h"
#include "modules/reflection/peers.h"
#include "modules/reflection/reflection.h"
#include "modules/reflection/voice.h"
#include "testutil.h"

#define T0   1795000000000LL /* 2026-11-19 */
#define HOUR (60LL * 60 * 1000)
#define DAY  (24 * HOUR)

/* ---- the meaningful rule ---------------------------------------------------- */

static struct decision_record rec_of(const char *platform, enum decision_stage stage,
                                     enum decision_verdict v, const char *rule, const char *reason)
{
	struct decision_record r = {
	        .time_ms = T0,
	        .platform = platform,
	        .conversation = strcmp(platform, "owner") == 0 ? "owner:terminal" : "space:room",
	        .message_id = "m1",
	        .stage = stage};
	decision_set(&r.decision, v, rule, "%s", reason);
	return r;
}

static bool classify(const struct decision_record *r, const char *text, const char *author,
                     int kind, bool addressed, bool history, struct exp_in *in, char *buf)
{
	struct exp_source src = {.rec = r,
	                         .text = text,
	                         .author = author,
	                         .author_kind = kind,
	                         .addressed_me = addressed,
	                         .from_history = history};
	return exp_from_decision(&src, in, buf, EXP_TEXT_MAX);
}

static void test_meaningful_rule(void **state)
{
	(void)state;
	char buf[EXP_TEXT_MAX];
	struct exp_in in;
	struct decision_record r = rec_of("owner", STAGE_EVENT, VERDICT_PASS, "event",
	                                  "owner owner (chain 0): be brief");
	assert_true(
	        classify(&r, "please be brief", "owner", CONV_AUTHOR_OWNER, true, false, &in, buf));
	assert_int_equal(in.type, EXP_OWNER_GUIDANCE);
	assert_string_equal(in.what, "Owner said (terminal): \"please be brief\"");
	assert_string_equal(in.where, "owner:terminal");
	/* without the store's text, the event decision's reason gives it */
	assert_true(classify(&r, NULL, NULL, -1, false, false, &in, buf));
	assert_string_equal(in.what, "Owner said (terminal): \"be brief\"");
	/* the rest of the owner's turn is not another experience */
	r = rec_of("owner", STAGE_RECORD, VERDICT_INFO, "answered", "answered");
	assert_false(classify(&r, "x", "owner", CONV_AUTHOR_OWNER, true, false, &in, buf));

	r = rec_of("space", STAGE_RECORD, VERDICT_INFO, "answered", "answered");
	assert_true(classify(&r, "how does OAuth refresh work?", "Grace", CONV_AUTHOR_HUMAN, true,
	                     false, &in, buf));
	assert_int_equal(in.type, EXP_HELPED_SOMEONE);
	assert_string_equal(in.who, "Grace");
	assert_non_null(strstr(in.what, "how does OAuth refresh work?"));
	assert_true(classify(&r, "I disagree", "Ada", CONV_AUTHOR_PEER, false, false, &in, buf));
	assert_int_equal(in.type, EXP_CONNECTION_FORMED);
	/* our own say ("sent") and replayed history are not experiences */
	r = rec_of("space", STAGE_RECORD, VERDICT_INFO, "answered", "sent");
	assert_false(classify(&r, "x", "Grace", CONV_AUTHOR_HUMAN, true, false, &in, buf));
	r = rec_of("space", STAGE_RECORD, VERDICT_INFO, "answered", "answered");
	assert_false(classify(&r, "x", "Grace", CONV_AUTHOR_HUMAN, true, true, &in, buf));

	r = rec_of("space", STAGE_RECORD, VERDICT_INFO, "commitment",
	           "create_issue c-1 (source space) enqueued");
	assert_true(classify(&r, "file it", "host", CONV_AUTHOR_HOST, true, false, &in, buf));
	assert_int_equal(in.type, EXP_HELPED_SOMEONE);
	r = rec_of("github", STAGE_RECORD, VERDICT_SENT, "commitment",
	           "completed (created): https://github.com/o/r/issues/3");
	assert_true(classify(&r, NULL, NULL, -1, false, false, &in, buf));
	assert_int_equal(in.type, EXP_HELPED_SOMEONE);
	assert_non_null(strstr(in.what, "https://github.com/o/r/issues/3"));
	r = rec_of("github", STAGE_RECORD, VERDICT_FAIL, "commitment", "attempt 1 of 3 failed");
	assert_false(classify(&r, NULL, NULL, -1, false, false, &in, buf));
	r = rec_of("space", STAGE_VALIDATOR, VERDICT_REJECT, "echo", "restates Ada");
	assert_true(classify(&r, NULL, NULL, -1, false, false, &in, buf));
	assert_int_equal(in.type, EXP_WAS_CHALLENGED);
	r = rec_of("space", STAGE_COMPOSE, VERDICT_INFO, "declined", "nothing to add");
	assert_true(classify(&r, "@me?", "Grace", CONV_AUTHOR_HUMAN, true, false, &in, buf));
	assert_int_equal(in.type, EXP_CHOSE_SILENCE);
	assert_false(classify(&r, "chat", "Grace", CONV_AUTHOR_HUMAN, false, false, &in, buf));

	/* mechanics are not experiences */
	const char *rules[] = {"chain_length", "cooldown", "dedup", "pacing", "claim"};
	for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
		r = rec_of("space", STAGE_GATE, VERDICT_BLOCK, rules[i], "no");
		assert_false(classify(&r, "x", "Ada", CONV_AUTHOR_PEER, true, false, &in, buf));
	}
	r = rec_of("space", STAGE_OUTBOUND, VERDICT_SENT, "sent", "sent to space:room");
	assert_false(classify(&r, "x", "Ada", CONV_AUTHOR_PEER, true, false, &in, buf));
}

/* An owner conversation is an experience everywhere, not
 * only at the terminal — the owner's live post on Bluesky is owner_guidance
 * (once: a walk asked again is the same experience), the rest of its walk
 * is not another one, and a human's post is not guidance. */
static void test_owner_guidance_everywhere(void **state)
{
	(void)state;
	char buf[EXP_TEXT_MAX];
	struct exp_in in;
	static const char conv[] = "bluesky:at://did:plc:owner/app.bsky.feed.post/3kq";
	struct decision_record r = rec_of("bluesky", STAGE_EVENT, VERDICT_PASS, "event",
	                                  "owner owner.test (chain 0): ship it tomorrow");
	r.conversation = conv;
	assert_true(classify(&r, "@agent.test ship it tomorrow, not tonight", "owner.test",
	                     CONV_AUTHOR_OWNER, true, false, &in, buf));
	assert_int_equal(in.type, EXP_OWNER_GUIDANCE);
	assert_string_equal(in.what, "Owner said (bluesky): \"@agent.test ship it tomorrow, not "
	                             "tonight\"");
	assert_string_equal(in.who, "owner");
	assert_string_equal(in.where, conv);
	/* the same in the room */
	struct decision_record room = rec_of("space", STAGE_EVENT, VERDICT_PASS, "event",
	                                     "owner Sam (chain 0): keep the README short");
	assert_true(classify(&room, "keep the README short", "Sam", CONV_AUTHOR_OWNER, false, false,
	                     &in, buf));
	assert_int_equal(in.type, EXP_OWNER_GUIDANCE);
	assert_string_equal(in.what, "Owner said (space): \"keep the README short\"");
	/* replayed history is not said again; a human is not the owner */
	assert_false(
	        classify(&r, "ship it", "owner.test", CONV_AUTHOR_OWNER, true, true, &in, buf));
	assert_false(
	        classify(&r, "ship it", "human.test", CONV_AUTHOR_HUMAN, true, false, &in, buf));
	/* the rest of the owner's walk (the answer) is the same conversation */
	struct decision_record ans =
	        rec_of("bluesky", STAGE_RECORD, VERDICT_INFO, "answered", "answered");
	ans.conversation = conv;
	assert_false(
	        classify(&ans, "ship it", "owner.test", CONV_AUTHOR_OWNER, true, false, &in, buf));

	/* dedup kept: the same post walked again is one experience; another
	 * post in the same thread is another */
	char *dir = tu_tempdir();
	struct ga_err e = {{0}};
	struct exp_store *s = exp_store_open(dir, &e);
	assert_non_null(s);
	assert_true(classify(&r, "@agent.test ship it tomorrow, not tonight", "owner.test",
	                     CONV_AUTHOR_OWNER, true, false, &in, buf));
	assert_int_equal(exp_store_add(s, &in, T0, &e), 1);
	assert_int_equal(exp_store_add(s, &in, T0 + HOUR, &e), 0);
	assert_true(classify(&r, "@agent.test and tag the release v2", "owner.test",
	                     CONV_AUTHOR_OWNER, true, false, &in, buf));
	assert_int_equal(exp_store_add(s, &in, T0 + HOUR, &e), 1);
	assert_int_equal(exp_store_pending(s), 2);
	assert_int_equal(exp_store_at(s, 0)->type, EXP_OWNER_GUIDANCE);
	exp_store_free(s);
	tu_rmrf(dir);
	free(dir);
}

/* ---- the experience store -------------------------------------------------- */

static void test_store_dedup_and_replay(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	struct ga_err e = {{0}};
	struct exp_store *s = exp_store_open(dir, &e);
	assert_non_null(s);
	struct exp_in in = {.type = EXP_HELPED_SOMEONE,
	                    .what = "Helped Grace understand OAuth refresh tokens in the room",
	                    .who = "Grace",
	                    .where = "space:room",
	                    .why = "she asked"};
	assert_int_equal(exp_store_add(s, &in, T0, &e), 1);
	/* same type, same first 50 characters (case aside) within 24 h: skipped */
	struct exp_in dup = in;
	dup.what = "HELPED GRACE UNDERSTAND OAUTH REFRESH TOKENS IN THE ROOM, again";
	assert_int_equal(exp_store_add(s, &dup, T0 + HOUR, &e), 0);
	/* another type is not a duplicate; nor is the same after 24 h */
	dup.type = EXP_LEARNED_SOMETHING;
	assert_int_equal(exp_store_add(s, &dup, T0 + HOUR, &e), 1);
	dup.type = EXP_HELPED_SOMEONE;
	assert_int_equal(exp_store_add(s, &dup, T0 + DAY + 1, &e), 1);
	/* bad input is named */
	struct exp_in bad = {.type = EXP_HELPED_SOMEONE, .what = "  \n"};
	assert_int_equal(exp_store_add(s, &bad, T0, &e), -1);
	assert_non_null(strstr(e.msg, "what"));
	bad.what = "x";
	bad.type = (enum exp_type)99;
	assert_int_equal(exp_store_add(s, &bad, T0, &e), -1);
	assert_int_equal(exp_store_pending(s), 3);

	const char *ids[] = {exp_store_at(s, 0)->id};
	char first[40];
	snprintf(first, sizeof first, "%s", ids[0]);
	assert_int_equal(exp_store_mark_integrated(s, ids, 1, T0 + DAY + 2, &e), 0);
	assert_int_equal(exp_store_pending(s), 2);
	exp_store_free(s);

	/* replayed from the file: the same three, the first integrated */
	s = exp_store_open(dir, &e);
	assert_int_equal(exp_store_count(s), 3);
	assert_int_equal(exp_store_pending(s), 2);
	assert_string_equal(exp_store_at(s, 0)->id, first);
	assert_true(exp_store_at(s, 0)->integrated);
	assert_string_equal(exp_store_at(s, 0)->who, "Grace");
	assert_string_equal(exp_store_at(s, 0)->why, "she asked");
	exp_store_free(s);
	tu_rmrf(dir);
	free(dir);
}

static void test_store_bounds_and_rotation(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	struct ga_err e = {{0}};
	struct exp_store *s = exp_store_open(dir, &e);
	char what[EXP_TEXT_MAX + 200];
	/* EXP_MAX_PENDING + 10 distinct ones: the oldest pending are dropped */
	for (int i = 0; i < EXP_MAX_PENDING + 10; i++) {
		snprintf(what, sizeof what, "%04d something distinct happened", i);
		struct exp_in in = {.type = EXP_LEARNED_SOMETHING, .what = what};
		assert_int_equal(exp_store_add(s, &in, T0 + i, &e), 1);
	}
	assert_int_equal(exp_store_pending(s), EXP_MAX_PENDING);
	assert_memory_equal(exp_store_at(s, 0)->what, "0010", 4);
	/* texts are cut at EXP_TEXT_MAX */
	memset(what, 'a', sizeof what - 1);
	what[sizeof what - 1] = '\0';
	what[0] = 'Z';
	struct exp_in big = {.type = EXP_SAW_PERSPECTIVE, .what = what};
	assert_int_equal(exp_store_add(s, &big, T0 + 100, &e), 1);
	assert_true(strlen(exp_store_at(s, exp_store_count(s) - 1)->what) <= EXP_TEXT_MAX);
	/* enough lines to pass EXP_FILE_MAX_BYTES: rotated, pending kept */
	for (int i = 0; i < 1300; i++) {
		snprintf(what, sizeof what, "%05d %0900d", i, 0);
		struct exp_in in = {.type = EXP_IDEA_RESONATED, .what = what};
		assert_int_equal(exp_store_add(s, &in, T0 + 1000 + i, &e), 1);
	}
	exp_store_free(s);
	char *p1 = fsx_join(dir, EXP_FILE ".1");
	assert_true(fsx_exists(p1));
	free(p1);
	s = exp_store_open(dir, &e);
	assert_int_equal(exp_store_pending(s), EXP_MAX_PENDING);
	assert_memory_equal(exp_store_at(s, exp_store_count(s) - 1)->what, "01299", 5);
	/* integrated ones older than 30 days go */
	const char *ids[EXP_MAX_PENDING];
	for (size_t i = 0; i < EXP_MAX_PENDING; i++)
		ids[i] = exp_store_at(s, i)->id;
	assert_int_equal(exp_store_mark_integrated(s, ids, EXP_MAX_PENDING, T0 + 2000, &e), 0);
	assert_int_equal(exp_store_count(s), EXP_MAX_PENDING);
	assert_int_equal(exp_store_mark_integrated(s, NULL, 0, T0 + 31 * DAY, &e), 0);
	assert_int_equal(exp_store_count(s), 0);
	exp_store_free(s);
	tu_rmrf(dir);
	free(dir);
}

/* ---- the policy ------------------------------------------------------------ */

static void test_due(void **state)
{
	(void)state;
	struct decision d;
	struct reflect_due_in in = {.now_ms = T0, .last_attempt_ms = 0, .pending = 0};
	assert_false(reflect_due(&in, &d));
	assert_string_equal(d.rule, "idle");
	in.pending = 1;
	assert_true(reflect_due(&in, &d)); /* never reflected */
	in.last_attempt_ms = T0 - 5 * HOUR;
	assert_false(reflect_due(&in, &d));
	assert_string_equal(d.rule, "interval");
	assert_non_null(strstr(d.reason, "60 min"));
	in.last_attempt_ms = T0 - 6 * HOUR;
	assert_true(reflect_due(&in, &d));
	/* many new experiences: early, but not within the hour */
	in.last_attempt_ms = T0 - 59 * 60 * 1000;
	in.pending = REFLECT_EARLY_PENDING;
	assert_false(reflect_due(&in, &d));
	in.last_attempt_ms = T0 - HOUR;
	assert_true(reflect_due(&in, &d));
	/* an idle agent, however long since the last reflection: no call */
	in.pending = 0;
	in.last_attempt_ms = T0 - 30 * DAY;
	assert_false(reflect_due(&in, &d));
}

/* ---- the model's answer ---------------------------------------------------- */

static const char OLD[] =
        "# Ada\n\nI build small tools.\n\n## Values\n- care\n\n## Voice\nPlain.\n";

static enum reflect_outcome check(const char *args, const char *content, struct reflect_result *res)
{
	struct llm_tool_call call = {.id = "c1", .name = REFLECT_TOOL, .arguments = (char *)args};
	struct llm_response resp = {.content = (char *)content,
	                            .tool_calls = args ? &call : NULL,
	                            .n_tool_calls = args ? 1 : 0};
	reflect_check_output(&resp, OLD, res);
	return res->outcome;
}

static void test_check_output(void **state)
{
	(void)state;
	struct reflect_result res;
	assert_int_equal(check(NULL, "I feel great", &res), REFLECT_GARBAGE);
	assert_string_equal(res.why.rule, "garbage");
	assert_non_null(strstr(res.why.reason, "did not call self_update"));
	reflect_result_free(&res);
	assert_int_equal(check("{\"self_md\": \"# A", NULL, &res), REFLECT_GARBAGE);
	reflect_result_free(&res);
	assert_int_equal(check("[1,2]", NULL, &res), REFLECT_GARBAGE);
	reflect_result_free(&res);
	assert_int_equal(check("{\"summary\":\"x\"}", NULL, &res), REFLECT_GARBAGE);
	assert_non_null(strstr(res.why.reason, "missing"));
	reflect_result_free(&res);
	assert_int_equal(check("{\"self_md\":\"   \",\"summary\":\"x\"}", NULL, &res),
	                 REFLECT_GARBAGE);
	assert_non_null(strstr(res.why.reason, "blank"));
	reflect_result_free(&res);

	/* anything that reaches for SOUL.md is refused */
	assert_int_equal(check("{\"self_md\":\"# Ada\\n\\n## Values\\n- more care\\n\",\"soul_md\":"
	                       "\"I am free\",\"summary\":\"x\",\"consistent_with_soul\":true}",
	                       NULL, &res),
	                 REFLECT_REFUSED);
	assert_string_equal(res.why.rule, "soul");
	assert_non_null(strstr(res.why.reason, "soul_md"));
	assert_null(res.self_md);
	reflect_result_free(&res);
	assert_int_equal(check("{\"self_md\":\"# Ada\\n\\n## Values\\n- speed over care\\n\","
	                       "\"summary\":\"x\",\"consistent_with_soul\":false}",
	                       NULL, &res),
	                 REFLECT_REFUSED);
	assert_string_equal(res.why.rule, "soul");
	reflect_result_free(&res);
	assert_int_equal(check("{\"self_md\":\"# Ada\\n\\n## Values\\n- care\\n\\n# SOUL.md\\nnew "
	                       "soul\\n\",\"summary\":\"x\",\"consistent_with_soul\":true}",
	                       NULL, &res),
	                 REFLECT_REFUSED);
	assert_string_equal(res.why.rule, "soul");
	reflect_result_free(&res);
	/* a heading that only starts with the word is fine */
	assert_int_equal(check("{\"self_md\":\"# Ada\\n\\n## Values\\n- care\\n\\n## Soul "
	                       "searching\\nstill at it\\n\",\"summary\":\"x\","
	                       "\"consistent_with_soul\":true}",
	                       NULL, &res),
	                 REFLECT_CHANGED);
	reflect_result_free(&res);
	/* dropping every section, or 80 % of the text */
	assert_int_equal(check("{\"self_md\":\"I am Ada and I build small tools, plainly, for "
	                       "people.\",\"summary\":\"x\",\"consistent_with_soul\":true}",
	                       NULL, &res),
	                 REFLECT_REFUSED);
	assert_string_equal(res.why.rule, "shrink");
	reflect_result_free(&res);
	assert_int_equal(check("{\"self_md\":\"## V\\n\",\"summary\":\"x\","
	                       "\"consistent_with_soul\":true}",
	                       NULL, &res),
	                 REFLECT_REFUSED);
	assert_string_equal(res.why.rule, "shrink");
	reflect_result_free(&res);

	/* the same text: unchanged */
	cJSON *a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "self_md", OLD);
	cJSON_AddStringToObject(a, "summary", "Nothing new.");
	cJSON_AddBoolToObject(a, "consistent_with_soul", 1);
	char *args = cJSON_PrintUnformatted(a);
	assert_int_equal(check(args, NULL, &res), REFLECT_UNCHANGED);
	reflect_result_free(&res);
	free(args);
	/* a real change: the summary is cut to two sentences */
	cJSON_ReplaceItemInObject(
	        a, "self_md",
	        cJSON_CreateString("# Ada\n\nI build small tools.\n\n## Values\n- "
	                           "care\n- brevity\n\n## Voice\nPlain.\n"));
	cJSON_ReplaceItemInObject(a, "summary",
	                          cJSON_CreateString("  I value brevity now.\n Short replies land "
	                                             "better. A third sentence. "));
	cJSON_AddItemToObject(a, "peers",
	                      cJSON_Parse("[{\"name\":\"Bo\",\"strength\":\"tests\"}]"));
	args = cJSON_PrintUnformatted(a);
	assert_int_equal(check(args, NULL, &res), REFLECT_CHANGED);
	assert_string_equal(res.summary, "I value brevity now. Short replies land better.");
	assert_non_null(strstr(res.self_md, "- brevity"));
	assert_non_null(res.peers);
	assert_int_equal(res.why.verdict, VERDICT_APPROVE);
	reflect_result_free(&res);
	free(args);
	cJSON_Delete(a);
}

static void test_user_message(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	struct ga_err e = {{0}};
	struct exp_store *s = exp_store_open(dir, &e);
	struct exp_in a = {.type = EXP_HELPED_SOMEONE, .what = "Answered Grace", .who = "Grace"};
	struct exp_in b = {
	        .type = EXP_OWNER_GUIDANCE, .what = "Owner said: be brief", .why = "owner"};
	exp_store_add(s, &a, T0, &e);
	exp_store_add(s, &b, T0 + 1, &e);
	const char *ids[REFLECT_PROMPT_MAX];
	size_t n = 0;
	char *m = reflect_user_message(s, "Bo: 2 conversations", 3 * DAY, ids, &n);
	assert_int_equal(n, 2);
	char *owner = strstr(m, "## Owner guidance");
	char *helped = strstr(m, "## People I helped");
	assert_non_null(owner);
	assert_non_null(helped);
	assert_true(owner < helped); /* owner guidance first */
	assert_non_null(strstr(m, "Answered Grace (with Grace)"));
	assert_non_null(strstr(m, "Bo: 2 conversations"));
	assert_non_null(strstr(m, "running 3 days"));
	assert_string_equal(ids[0], exp_store_at(s, 1)->id);
	free(m);
	const char *all[] = {ids[0], ids[1]};
	exp_store_mark_integrated(s, all, 2, T0 + 2, &e);
	m = reflect_user_message(s, "", 0, ids, &n);
	assert_int_equal(n, 0);
	assert_non_null(strstr(m, "No new experiences."));
	free(m);
	exp_store_free(s);
	tu_rmrf(dir);
	free(dir);
}

/* ---- voice phrases ----------------------------------------------------------- */

static void test_voice_parse(void **state)
{
	(void)state;
	struct voice_phrases p;
	struct ga_err e = {{0}};
	voice_phrases_defaults(&p);
	char *text = voice_to_text(&p, T0);
	voice_phrases_free(&p);
	assert_int_equal(voice_parse(text, strlen(text), false, &p, &e), 0);
	assert_string_equal(p.text[VOICE_FULFILLMENT_CREATE_ISSUE], "Done — here it is: {{url}}");
	voice_phrases_free(&p);
	assert_non_null(strstr(text, "\"generatedAt\":"));
	assert_int_equal(text[strlen(text) - 1], '\n');

	/* the optional key may be missing (a reference-format file): default */
	cJSON *j = cJSON_Parse(text);
	cJSON_DeleteItemFromObject(j, "bluesky");
	char *ref = cJSON_Print(j);
	assert_int_equal(voice_parse(ref, strlen(ref), false, &p, &e), 0);
	assert_string_equal(p.text[VOICE_PEER_ANNOUNCEMENT],
	                    voice_default(VOICE_PEER_ANNOUNCEMENT));
	assert_string_equal(voice_key_name(VOICE_PEER_ANNOUNCEMENT), "bluesky.peer_announcement");
	voice_phrases_free(&p);
	free(ref);
	cJSON_Delete(j);

	/* version 2, a missing field, a wrong type: refused, naming it */
	j = cJSON_Parse(text);
	cJSON_ReplaceItemInObject(j, "version", cJSON_CreateNumber(2));
	char *s = cJSON_Print(j);
	assert_int_equal(voice_parse(s, strlen(s), false, &p, &e), -1);
	assert_non_null(strstr(e.msg, "version"));
	free(s);
	cJSON_ReplaceItemInObject(j, "version", cJSON_CreateNumber(1));
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(j, "github"), "task_failed");
	s = cJSON_Print(j);
	assert_int_equal(voice_parse(s, strlen(s), false, &p, &e), -1);
	assert_non_null(strstr(e.msg, "github.task_failed"));
	free(s);
	cJSON_AddNumberToObject(cJSON_GetObjectItem(j, "github"), "task_failed", 3);
	s = cJSON_Print(j);
	assert_int_equal(voice_parse(s, strlen(s), false, &p, &e), -1);
	free(s);
	cJSON_Delete(j);
	assert_int_equal(voice_parse("{\"version\":1", 12, false, &p, &e), -1);

	/* generated: a fence is fine, a lost placeholder is not */
	j = cJSON_Parse(text);
	cJSON_DeleteItemFromObject(j, "version");
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, "fulfillment"), "create_issue",
	                          cJSON_CreateString("Filed it, friend: {{url}}"));
	char *body = cJSON_Print(j);
	char *fenced = xasprintf("```json\n%s\n```\n", body);
	assert_int_equal(voice_parse(fenced, strlen(fenced), true, &p, &e), 0);
	assert_string_equal(p.text[VOICE_FULFILLMENT_CREATE_ISSUE], "Filed it, friend: {{url}}");
	voice_phrases_free(&p);
	free(fenced);
	free(body);
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(j, "github"), "task_claim",
	                          cJSON_CreateString("Claiming {{number}}"));
	body = cJSON_Print(j);
	assert_int_equal(voice_parse(body, strlen(body), true, &p, &e), -1);
	assert_non_null(strstr(e.msg, "github.task_claim lost its placeholder {{title}}"));
	free(body);
	cJSON_Delete(j);
	free(text);

	const char *names[] = {"number", "title"};
	const char *values[] = {"3", "Add {{x}} support"};
	char *out = voice_interpolate("Task {{number}}: {{title}} ({{number}}) {{other}}", names,
	                              values, 2);
	assert_string_equal(out, "Task 3: Add {{x}} support (3) {{other}}");
	free(out);
}

static void test_voice_file(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	char *path = fsx_join(dir, VOICE_FILE);
	struct voice *v = voice_open(path);
	/* missing → defaults */
	assert_string_equal(voice_get(v, VOICE_FULFILLMENT_DEFAULT), "Done: {{url}}");
	assert_false(voice_from_file(v));
	struct voice_phrases p;
	voice_phrases_defaults(&p);
	free(p.text[VOICE_FULFILLMENT_DEFAULT]);
	p.text[VOICE_FULFILLMENT_DEFAULT] = xstrdup("All set: {{url}}");
	char *text = voice_to_text(&p, T0);
	struct ga_err e = {{0}};
	assert_int_equal(fsx_write_atomic(path, text, strlen(text), &e), 0);
	free(text);
	/* hot reload */
	assert_string_equal(voice_get(v, VOICE_FULFILLMENT_DEFAULT), "All set: {{url}}");
	assert_true(voice_from_file(v));
	const char *names[] = {"url"};
	const char *values[] = {"https://x/1"};
	char *r = voice_render(v, VOICE_FULFILLMENT_DEFAULT, names, values, 1);
	assert_string_equal(r, "All set: https://x/1");
	free(r);
	/* a broken file → the defaults again */
	assert_int_equal(fsx_write_atomic(path, "{\"version\": 1, \"oops\"", 21, &e), 0);
	assert_string_equal(voice_get(v, VOICE_FULFILLMENT_DEFAULT), "Done: {{url}}");
	assert_false(voice_from_file(v));
	voice_phrases_free(&p);
	voice_free(v);
	free(path);
	tu_rmrf(dir);
	free(dir);
}

/* ---- peers ------------------------------------------------------------------- */

static void test_peers_counting_and_render(void **state)
{
	(void)state;
	struct peer_memory pm;
	peers_init(&pm);
	peers_note_message(&pm, "Ada", T0);
	peers_note_message(&pm, "ada", T0 + 10 * 60 * 1000); /* same conversation */
	peers_note_message(&pm, "Ada", T0 + 2 * HOUR);       /* a new one */
	assert_int_equal(peers_find(&pm, "ADA")->conversations, 2);
	peers_count(&pm, "Ada", PEER_ISSUE_CO_CREATED, T0 + 2 * HOUR);
	for (int i = 0; i < 7; i++) {
		char t[32];
		snprintf(t, sizeof t, "exchange %d", i);
		peers_add_memorable(&pm, "Ada", t, T0 + 3 * HOUR);
	}
	const struct peer_rel *r = peers_find(&pm, "Ada");
	assert_int_equal(r->n_memorable, PEER_MEMORABLE_MAX);
	assert_string_equal(r->memorable[0], "exchange 2"); /* the newest five kept */
	peers_add_strength(&pm, "Ada", "tests", T0);
	peers_add_strength(&pm, "Ada", "naming", T0);
	peers_add_strength(&pm, "Ada", "TESTS", T0); /* dedup, becomes newest */
	peers_add_strength(&pm, "Ada", "docs", T0);
	peers_add_strength(&pm, "Ada", "review", T0);
	assert_int_equal(r->n_strengths, PEER_STRENGTHS_MAX);
	assert_string_equal(r->strengths[0], "TESTS");
	peers_note_message(&pm, "Bo", T0 + 4 * HOUR);
	cJSON *notes = cJSON_Parse("[{\"name\":\"Bo\",\"memorable\":\"argued about tabs\","
	                           "\"disagreement\":true},{\"memorable\":\"no name\"},7]");
	assert_int_equal(peers_apply_notes(&pm, notes, T0 + 5 * HOUR), 1);
	cJSON_Delete(notes);
	char *txt = peers_render(&pm, NULL, 0);
	assert_string_equal(
	        txt, "Bo: 1 conversation · 0 issues co-created · 0 PRs reviewed · 1 productive "
	             "disagreement · Notable: argued about tabs\n"
	             "Ada: 2 conversations · 1 issue co-created · 0 PRs reviewed · Notable: "
	             "exchange 6; exchange 5; exchange 4; exchange 3; exchange 2 · Strengths: "
	             "review, docs, TESTS");
	free(txt);
	const char *only[] = {"ada"};
	txt = peers_render(&pm, only, 1);
	assert_memory_equal(txt, "Ada:", 4);
	assert_null(strchr(txt, '\n'));
	free(txt);
	const char *none[] = {"Zed"};
	txt = peers_render(&pm, none, 1);
	assert_string_equal(txt, "");
	free(txt);
	/* PEERS_MAX: the least recently met is forgotten */
	for (int i = 0; i < PEERS_MAX; i++) {
		char n[16];
		snprintf(n, sizeof n, "p%d", i);
		peers_note_message(&pm, n, T0 + 10 * HOUR + i);
	}
	assert_int_equal(pm.n, PEERS_MAX);
	assert_null(peers_find(&pm, "Ada"));
	assert_null(peers_find(&pm, "Bo"));
	assert_null(peers_get(&pm, "  ", T0));
	peers_free(&pm);
}

static void test_peers_persistence(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	struct state_store st;
	struct ga_err e = {{0}};
	assert_int_equal(state_store_init(&st, dir, "1.0.0", &e), 0);
	struct peer_memory pm;
	peers_init(&pm);
	peers_note_message(&pm, "Ada", T0);
	peers_count(&pm, "Ada", PEER_PR_REVIEWED, T0);
	peers_add_memorable(&pm, "Ada", "shared a benchmark", T0);
	assert_int_equal(peers_save(&pm, &st, T0, &e), 0);
	peers_free(&pm);
	peers_init(&pm);
	assert_int_equal(peers_load(&pm, &st), 0);
	const struct peer_rel *r = peers_find(&pm, "Ada");
	assert_non_null(r);
	assert_int_equal(r->prs_reviewed, 1);
	assert_int_equal(r->conversations, 1);
	assert_int_equal(r->last_interaction_ms, T0);
	assert_string_equal(r->memorable[0], "shared a benchmark");
	peers_free(&pm);
	/* what the room's and Bluesky's prompts call */
	const char *names[] = {"ada"};
	char *txt = peers_render_from_store(&st, names, 1);
	assert_string_equal(txt, "Ada: 1 conversation · 0 issues co-created · 1 PR reviewed · "
	                         "Notable: shared a benchmark");
	free(txt);

	/* another version's file in the reference's shape: migrated, kept */
	tu_write(dir, PEERS_STATE_NAME ".json",
	         "{\"version\":\"0.9.0\",\"savedAt\":\"2026-01-01T00:00:00.000Z\",\"data\":"
	         "{\"relationships\":{\"bo\":{\"peerName\":\"Bo\",\"spaceConversations\":4,"
	         "\"issuesCoCreated\":1,\"memorableExchanges\":[\"a\",\"b\"],"
	         "\"complementaryStrengths\":[\"tests\"],\"lastInteraction\":"
	         "\"2026-01-01T00:00:00.000Z\"}},\"_memoryVersion\":\"10.1.0\"}}");
	peers_init(&pm);
	assert_int_equal(peers_load(&pm, &st), 0);
	r = peers_find(&pm, "bo");
	assert_non_null(r);
	assert_string_equal(r->name, "Bo");
	assert_int_equal(r->conversations, 4);
	assert_int_equal(r->issues_co_created, 1);
	assert_int_equal(r->n_memorable, 2);
	assert_string_equal(r->strengths[0], "tests");
	peers_free(&pm);
	/* a format from the future is not guessed at */
	tu_write(dir, PEERS_STATE_NAME ".json",
	         "{\"version\":\"9.0.0\",\"savedAt\":\"2026-01-01T00:00:00.000Z\",\"data\":"
	         "{\"format\":7,\"peers\":[{\"name\":\"Zed\"}]}}");
	peers_init(&pm);
	peers_load(&pm, &st);
	assert_int_equal(pm.n, 0);
	peers_free(&pm);
	state_store_free(&st);
	tu_rmrf(dir);
	free(dir);
}

/* ---- history and the CLI ----------------------------------------------------- */

static void test_history_bound(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	struct ga_err e = {{0}};
	for (int i = 0; i < SELF_HISTORY_KEEP + 5; i++) {
		char t[32];
		snprintf(t, sizeof t, "version %d\n", i);
		assert_int_equal(
		        selfhist_save(dir, t, strlen(t), "reflection", T0 + i * 1000LL, NULL, &e),
		        0);
	}
	/* two in the same millisecond: both kept, the later one newest */
	assert_int_equal(selfhist_save(dir, "same ms\n", 8, "revert", T0 + 30000, NULL, &e), 0);
	assert_int_equal(selfhist_save(dir, "same ms 2\n", 10, "revert", T0 + 30000, NULL, &e), 0);
	char **names;
	size_t n = selfhist_list(dir, &names);
	assert_int_equal(n, SELF_HISTORY_KEEP);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	char name[SELF_HISTORY_NAME_MAX];
	size_t len;
	char *t = selfhist_latest(dir, name, sizeof name, &len, &e);
	assert_string_equal(t, "same ms 2\n");
	free(t);
	tu_rmrf(dir);
	free(dir);
}

static void test_diff(void **state)
{
	(void)state;
	char *dir = tu_tempdir();
	char *path = fsx_join(dir, "d.txt");
	FILE *f = fopen(path, "w+");
	size_t n = self_diff("a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n", "a\nb\nc\nd\nE\nf\ng\nh\ni\nj\nk\n",
	                     "old", "new", f);
	assert_int_equal(n, 3);
	rewind(f);
	char buf[1024];
	size_t got = fread(buf, 1, sizeof buf - 1, f);
	buf[got] = '\0';
	fclose(f);
	assert_string_equal(buf, "--- old\n+++ new\n"
	                         "@@ -2,9 +2,10 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n i\n j\n+k\n");
	f = fopen(path, "w+");
	assert_int_equal(self_diff("same\n", "same\n", "a", "b", f), 0);
	assert_int_equal(ftell(f), 0);
	fclose(f);
	free(path);
	tu_rmrf(dir);
	free(dir);
}

static char *run_cli(const struct ga_config *cfg, const char *word, int *rc)
{
	char *argv[] = {(char *)word};
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	FILE *err = fopen("/dev/null", "w");
	*rc = reflection_cli_self(1, argv, cfg, out, err);
	fclose(out);
	fclose(err);
	return buf;
}

static void test_cli_revert(void **state)
{
	(void)state;
	char *home = tu_tempdir();
	char *mem = fsx_join(home, "memory");
	struct ga_config cfg = {.home = home, .memory_dir = mem};
	int rc;
	char *o = run_cli(&cfg, "diff", &rc);
	assert_int_equal(rc, 1); /* nothing changed SELF.md yet */
	free(o);
	o = run_cli(&cfg, "revert", &rc);
	assert_int_equal(rc, 1);
	free(o);
	o = run_cli(&cfg, "nope", &rc);
	assert_int_equal(rc, 64);
	assert_string_equal(o, "");
	free(o);

	tu_write(home, "SELF.md", "# Ada\n\n## Values\n- care\n");
	char *self_path = fsx_join(home, "SELF.md");
	const char *next = "# Ada\n\n## Values\n- care\n- brevity\n";
	struct ga_err e = {{0}};
	assert_int_equal(selfhist_replace(mem, self_path, next, strlen(next), "reflection", T0, &e),
	                 0);
	o = run_cli(&cfg, "diff", &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(o, "+- brevity\n"));
	assert_non_null(strstr(o, "+++ SELF.md\n"));
	free(o);
	o = run_cli(&cfg, "revert", &rc);
	assert_int_equal(rc, 0);
	free(o);
	char *now = tu_read(home, "SELF.md");
	assert_string_equal(now, "# Ada\n\n## Values\n- care\n");
	free(now);
	/* the reverted version is kept: a second revert brings it back */
	o = run_cli(&cfg, "history", &rc);
	assert_non_null(strstr(o, "-revert.md"));
	assert_non_null(strstr(o, "-reflection.md"));
	free(o);
	o = run_cli(&cfg, "revert", &rc);
	free(o);
	now = tu_read(home, "SELF.md");
	assert_string_equal(now, next);
	free(now);
	free(self_path);
	free(mem);
	tu_rmrf(home);
	free(home);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_meaningful_rule),
	        cmocka_unit_test(test_owner_guidance_everywhere),
	        cmocka_unit_test(test_store_dedup_and_replay),
	        cmocka_unit_test(test_store_bounds_and_rotation),
	        cmocka_unit_test(test_due),
	        cmocka_unit_test(test_check_output),
	        cmocka_unit_test(test_user_message),
	        cmocka_unit_test(test_voice_parse),
	        cmocka_unit_test(test_voice_file),
	        cmocka_unit_test(test_peers_counting_and_render),
	        cmocka_unit_test(test_peers_persistence),
	        cmocka_unit_test(test_history_bound),
	        cmocka_unit_test(test_diff),
	        cmocka_unit_test(test_cli_revert),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * bsky_agent — see bsky_agent.h.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include <cmocka.h>

#include "bsky_agent.h"
#include "support_story.h"

int64_t bsky_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void bsky_agent_dump(struct bsky_agent *a)
{
	char *e = proc_stderr(&a->p), *o = proc_stdout(&a->p);
	fprintf(stderr, "---- agent stderr ----\n%s\n---- agent stdout ----\n%s\n", e ? e : "",
	        o ? o : "");
	free(e);
	free(o);
	char *log = a->home ? home_read(a->home, "memory/decisions.jsonl") : NULL;
	fprintf(stderr, "---- decisions.jsonl ----\n%s\n", log ? log : "(none)");
	free(log);
}

/* ---- the model ------------------------------------------------------------------- */

void bsky_llm_start(const char *home, const char *script, struct bsky_llm *f)
{
	home_write(home, "llm-script.json", script);
	char path[1024], err[1024];
	snprintf(path, sizeof path, "%s/llm-script.json", home);
	const char *argv[] = {"--script", path, NULL};
	if (support_fake_start(&f->fake, "tests/fakes/llm/llmfake-server", home, argv, err,
	                       sizeof err) != 0)
		fail_msg("llmfake-server: %s", err);
	snprintf(f->env, sizeof f->env, "LLM_BASE_URL=%s/v1", f->fake.url);
}

void bsky_llm_stop(struct bsky_llm *f)
{
	support_fake_stop(&f->fake);
}

char *bsky_llm_record(const char *home)
{
	return home_read(home, "llmfake-server.requests");
}

int bsky_llm_calls(const char *home)
{
	char *rec = bsky_llm_record(home);
	int n = 0;
	for (char *c = rec; c && *c; c++)
		n += *c == '\n';
	free(rec);
	return n;
}

char *bsky_reply_script_seq(const char *const *texts, size_t n, int delay_ms)
{
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		cJSON *e = cJSON_CreateObject();
		cJSON *m = cJSON_AddObjectToObject(e, "match");
		cJSON *tools = cJSON_AddArrayToObject(m, "tools");
		cJSON_AddItemToArray(tools, cJSON_CreateString("bluesky_reply"));
		cJSON_AddStringToObject(m, "last_user_contains", "Answer this post");
		cJSON *calls = cJSON_AddArrayToObject(e, "tool_calls");
		cJSON *c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "name", "bluesky_reply");
		cJSON *args = cJSON_AddObjectToObject(c, "arguments");
		cJSON_AddStringToObject(args, "text", texts[i]);
		cJSON_AddStringToObject(args, "post_uri", "at://the-post-of-this-turn");
		cJSON_AddStringToObject(args, "post_cid", "bafyreiplaceholder");
		cJSON_AddItemToArray(calls, c);
		if (delay_ms)
			cJSON_AddNumberToObject(e, "delay_ms", delay_ms);
		if (i + 1 < n)
			cJSON_AddNumberToObject(e, "times", 1);
		cJSON_AddItemToArray(arr, e);
		/* after the tool's result: a final word */
		cJSON *fin = cJSON_CreateObject();
		cJSON_AddStringToObject(fin, "content", "Replied.");
		if (i + 1 < n)
			cJSON_AddNumberToObject(fin, "times", 1);
		cJSON_AddItemToArray(arr, fin);
	}
	char *s = cJSON_PrintUnformatted(arr);
	cJSON_Delete(arr);
	return s;
}

char *bsky_reply_script(const char *text, int delay_ms)
{
	return bsky_reply_script_seq(&text, 1, delay_ms);
}

const char *const bsky_lexer_answers[5] = {
        "The lexer keeps the backslash as written; nothing is dropped there.",
        "Tabs inside strings stay tabs; only the line end is normalised.",
        "Unicode escapes are decoded after the lexer, in the string builder.",
        "Surrogate pairs are joined there too, or refused when one half is missing.",
        "Anything else would be a second lexer pass, which we avoid.",
};

const char *bsky_jstr(const cJSON *o, const char *a, const char *b, const char *c)
{
	const cJSON *x = cJSON_GetObjectItem(o, a);
	if (b)
		x = cJSON_GetObjectItem(x, b);
	if (c)
		x = cJSON_GetObjectItem(x, c);
	return cJSON_GetStringValue(x) ? cJSON_GetStringValue(x) : "";
}

void bsky_check_facets(const cJSON *v, const char *mention, const char *did, const char *link)
{
	const char *text = bsky_jstr(v, "text", NULL, NULL);
	const char *m = strstr(text, mention), *l = strstr(text, link);
	assert_non_null(m);
	assert_non_null(l);
	bool saw_mention = false, saw_link = false;
	const cJSON *f;
	cJSON_ArrayForEach(f, cJSON_GetObjectItem(v, "facets"))
	{
		const cJSON *idx = cJSON_GetObjectItem(f, "index");
		long bs = (long)cJSON_GetNumberValue(cJSON_GetObjectItem(idx, "byteStart"));
		long be = (long)cJSON_GetNumberValue(cJSON_GetObjectItem(idx, "byteEnd"));
		const cJSON *feat = cJSON_GetArrayItem(cJSON_GetObjectItem(f, "features"), 0);
		const char *type = bsky_jstr(feat, "$type", NULL, NULL);
		if (strcmp(type, "app.bsky.richtext.facet#mention") == 0) {
			assert_int_equal(bs, m - text);
			assert_int_equal(be, m - text + (long)strlen(mention));
			assert_string_equal(bsky_jstr(feat, "did", NULL, NULL), did);
			saw_mention = true;
		} else if (strcmp(type, "app.bsky.richtext.facet#link") == 0) {
			assert_int_equal(bs, l - text);
			assert_int_equal(be, l - text + (long)strlen(link));
			saw_link = true;
		} else {
			fail_msg("a facet of an unexpected type: %s", type);
		}
	}
	assert_true(saw_mention);
	assert_true(saw_link);
}

/* ---- the agent ------------------------------------------------------------------------ */

void bsky_agent_start(struct bsky_agent *a, const char *service, const char *name,
                      const char *handle, const char *password, const struct bsky_llm *llm,
                      const char *const *extra)
{
	snprintf(a->service, sizeof a->service, "BLUESKY_SERVICE=%s", service);
	snprintf(a->user, sizeof a->user, "AGENT_BLUESKY_USERNAME=%s", handle);
	snprintf(a->password, sizeof a->password, "AGENT_BLUESKY_PASSWORD=%s", password);
	snprintf(a->name_env, sizeof a->name_env, "AGENT_NAME=%s", name);
	const char *env[PROC_MAX_ENV];
	size_t k = 0;
	const char *base[] = {a->name_env,
	                      a->service,
	                      a->user,
	                      a->password,
	                      "OWNER_BLUESKY_SOCIAL_HANDLE=owner.test",
	                      a->owner[0] ? a->owner : "GA_TEST_NO_OWNER_DID=1",
	                      llm->env,
	                      "LLM_MODEL=fake-model",
	                      "LLM_API_KEY=test-key-0123456789",
	                      "GA_BLUESKY_AWARENESS_MS=400",
	                      "GA_BLUESKY_FEED_MS=600000",
	                      "GA_BLUESKY_PEERS_MS=600000",
	                      "GA_BLUESKY_PACE_MS=50",
	                      "GA_BLUESKY_MIN_INTERVAL_MS=50",
	                      "GA_BLUESKY_SPACING_MS=20",
	                      "DASHBOARD_ADDR=off"};
	for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
		env[k++] = base[i];
	for (size_t i = 0; extra && extra[i] && k + 1 < PROC_MAX_ENV; i++)
		env[k++] = extra[i];
	env[k] = NULL;
	if (proc_start(&a->p, a->home, (const char *const[]){NULL}, env) != 0)
		fail_msg("cannot start general-agent in %s", a->home);
	if (!proc_wait_output(&a->p, "signed in", BSKY_AGENT_WAIT_MS)) {
		bsky_agent_dump(a);
		fail_msg("the agent did not sign in to Bluesky");
	}
}

void bsky_agent_stop(struct bsky_agent *a)
{
	proc_signal(&a->p, SIGTERM);
	int rc = proc_wait(&a->p, BSKY_AGENT_WAIT_MS);
	if (rc != 0) {
		bsky_agent_dump(a);
		fail_msg("the agent exited %d", rc);
	}
	proc_cleanup(&a->p);
}

void bsky_agent_kill(struct bsky_agent *a)
{
	proc_signal(&a->p, SIGKILL);
	proc_wait(&a->p, BSKY_AGENT_WAIT_MS);
	proc_cleanup(&a->p);
}

void bsky_story_one_walk(struct bsky_agent *a, const char *text, const char *rule)
{
	char id[400], why[4096];
	if (story_id_of(a->home, text, id, sizeof id) != 0) {
		bsky_agent_dump(a);
		fail_msg("no event holds '%s'", text);
	}
	if (!story_is_one_walk(a->home, id, rule, why, sizeof why))
		fail_msg("the story of %s is not one walk: %s", id, why);
}

/*
 * bsky_agent — what the Bluesky end-to-end tests share: the real
 * general-agent binary started against a Bluesky service (the fake, or the
 * real network's proxy) with llmfake-server as its model, and the model's
 * scripts. Uses cmocka's fail_msg: include after <cmocka.h>.
 *
 * Every agent runs in its own home (home_new), checks its notifications
 * every 0.4 s (GA_BLUESKY_AWARENESS_MS) with 50 ms pacing gaps, and has no
 * dashboard. Children die with the test process.
 */
#ifndef GA_TESTS_INTEGRATION_BLUESKY_BSKY_AGENT_H
#define GA_TESTS_INTEGRATION_BLUESKY_BSKY_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "proc.h"
#include "support_fake.h"

#define BSKY_AGENT_WAIT_MS 20000

int64_t bsky_mono_ms(void);

/* llmfake-server (support_fake) in the home, its script there
 * ("llm-script.json"), every call recorded (bsky_llm_record). */
struct bsky_llm {
	struct support_fake fake;
	char env[160]; /* LLM_BASE_URL=… */
};
void bsky_llm_start(const char *home, const char *script, struct bsky_llm *f);
void bsky_llm_stop(struct bsky_llm *f);
/* Every model call so far, one JSON line each (caller frees; NULL: none). */
char *bsky_llm_record(const char *home);
/* Model calls made so far. */
int bsky_llm_calls(const char *home);
/* A model that answers each post with the next of texts (through
 * bluesky_reply; delay_ms before each answer), then a final word: two calls
 * per post. The last text repeats. Caller frees. */
char *bsky_reply_script_seq(const char *const *texts, size_t n, int delay_ms);
char *bsky_reply_script(const char *text, int delay_ms);
/* Five substantive answers about a lexer, for threads that go on. */
extern const char *const bsky_lexer_answers[5];

/* A post record v (its "text" and "facets") has exactly the facets of
 * the mention in its text (resolved to did) and of the link, each at its
 * UTF-8 byte offsets; fails the test otherwise. */
void bsky_check_facets(const cJSON *v, const char *mention, const char *did, const char *link);
/* o[a][b][c] as a string ("" when absent; b and c may be NULL). */
const char *bsky_jstr(const cJSON *o, const char *a, const char *b, const char *c);

struct bsky_agent {
	struct proc p;
	char name_env[64];
	char service[200];
	char user[160];
	char password[160];
	char owner[200]; /* OWNER_BLUESKY_SOCIAL_HANDLE_DID=…, set by the test */
	char *home;
};
/* Starts general-agent in a->home against service (BLUESKY_SERVICE) as
 * handle / password, and waits until it signed in. extra (may be NULL):
 * more "K=V" (or a bare "K" to remove K), NULL-terminated. */
void bsky_agent_start(struct bsky_agent *a, const char *service, const char *name,
                      const char *handle, const char *password, const struct bsky_llm *llm,
                      const char *const *extra);
/* SIGTERM; fails the test unless it exits 0. */
void bsky_agent_stop(struct bsky_agent *a);
/* SIGKILL, no questions. */
void bsky_agent_kill(struct bsky_agent *a);
/* Its stderr, stdout and decisions.jsonl on stderr (a failure's evidence). */
void bsky_agent_dump(struct bsky_agent *a);
/* The story of the message whose event holds text (`general-agent why ID`,
 * support_story.h) is one walk ending with one record decision, rule;
 * fails the test otherwise. */
void bsky_story_one_walk(struct bsky_agent *a, const char *text, const char *rule);

#endif

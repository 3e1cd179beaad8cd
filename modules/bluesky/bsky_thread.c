/* A reply the agent starts in a thread it knows (bsky.h bsky_thread_say;
 * the place and the text are policy_thread.h's): the post answered is read
 * with getPosts (its CID, and the thread's root from its own reply refs),
 * then the reply walks the pipeline like every post. */
#include "modules/bluesky/bsky_int.h"

static void say_clear(struct bsky_say *s)
{
	free(s->text);
	memset(s, 0, sizeof *s);
}

static void say_note(struct bsky *b, const char *conversation, const char *key,
                     enum decision_stage stage, const struct decision *d)
{
	bk_note_decision(b, conversation, key, stage, d->verdict, d->rule, "%s", d->reason);
}

/* The post answered, as the AppView sees it: its CID, and the root its
 * record replies under (none: it is the root). */
static void on_posts(void *ud, const struct atp_result *res)
{
	struct bsky_say *s = ud;
	struct bsky *b = s->b;
	s->call = 0;
	struct decision d;
	if (res->kind == ATP_ERR_CANCELLED || b->quiescing) {
		decision_set(&d, VERDICT_DROP, "thread_say",
		             "shutting down before the reply under %.200s was made: not said",
		             s->t.parent);
		say_note(b, s->t.conversation, s->key, STAGE_OUTBOUND, &d);
		say_clear(s);
		return;
	}
	const cJSON *post = NULL, *posts = cJSON_GetObjectItemCaseSensitive(res->json, "posts");
	const cJSON *p;
	cJSON_ArrayForEach(p, posts)
	{
		if (strcmp(json_string_or(p, "uri", ""), s->t.parent) == 0)
			post = p;
	}
	const char *cid = json_string_or(post, "cid", NULL);
	if (res->kind != ATP_OK || !cid || !*cid) {
		decision_set(&d, VERDICT_FAIL, "thread_say", "no reply under %.200s: %s",
		             s->t.parent,
		             res->kind != ATP_OK ? res->msg
		             : post              ? "the AppView gives the post no CID"
		                    : "the post is gone (deleted, or not visible to us)");
		say_note(b, s->t.conversation, s->key, STAGE_OUTBOUND, &d);
		say_clear(s);
		return;
	}
	const cJSON *root = cJSON_GetObjectItemCaseSensitive(
	        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(post, "record"),
	                                         "reply"),
	        "root");
	const char *root_uri = json_string_or(root, "uri", NULL);
	const char *root_cid = json_string_or(root, "cid", NULL);
	if (!root_uri || !*root_uri || !root_cid || !*root_cid) {
		root_uri = s->t.parent; /* not a reply: it is the root */
		root_cid = cid;
	}
	cJSON *extra = cJSON_CreateObject();
	cJSON *reply = cJSON_AddObjectToObject(extra, "reply");
	cJSON *r = cJSON_AddObjectToObject(reply, "root");
	cJSON_AddStringToObject(r, "uri", root_uri);
	cJSON_AddStringToObject(r, "cid", root_cid);
	r = cJSON_AddObjectToObject(reply, "parent");
	cJSON_AddStringToObject(r, "uri", s->t.parent);
	cJSON_AddStringToObject(r, "cid", cid);
	/* the target names the person answered: the port checks the parent is theirs */
	char target[PIPELINE_TARGET_MAX + sizeof s->t.asker];
	snprintf(target, sizeof target, "bluesky:reply:%s", s->t.asker);
	struct pipeline_say_req q = {.platform = CONV_PLATFORM_BLUESKY,
	                             .target = target,
	                             .source = s->source,
	                             .text = s->text,
	                             .len = strlen(s->text),
	                             .chain = -1,
	                             .id = s->key,
	                             .extra = extra};
	pipeline_say_with(b->c.pipeline, &q);
	cJSON_Delete(extra);
	say_clear(s);
}

int bsky_thread_say(struct bsky *b, const char *source, const char *thread, const char *text,
                    const char *key)
{
	struct decision d;
	char jkey[JOURNAL_KEY_MAX + 1];
	const char *story = thread && *thread ? thread : "bluesky:thread";
	if (!key || !*key || (size_t)snprintf(jkey, sizeof jkey, "say:%s", key) >= sizeof jkey ||
	    strlen(key) >= PIPELINE_ID_MAX) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP,
		       "not said in the thread: the key is empty or too long", "thread", story);
		return -1;
	}
	if (b->quiescing) {
		decision_set(&d, VERDICT_DROP, "thread_say",
		             "shutting down: not said in the thread");
		say_note(b, story, key, STAGE_OUTBOUND, &d);
		return -1;
	}
	struct bsky_thread_target t;
	if (bsky_thread_pick(pipeline_store(b->c.pipeline), thread, &t, &d) != 0) {
		say_note(b, story, key, STAGE_OUTBOUND, &d);
		return -1;
	}
	/* said already (the journal: across restarts), or on its way */
	if (b->c.journal && journal_state_of(b->c.journal, jkey) == JOURNAL_DONE) {
		decision_set(&d, VERDICT_DROP, "journal", "already said in the thread (key %.60s)",
		             jkey);
		say_note(b, t.conversation, key, STAGE_OUTBOUND, &d);
		return 0;
	}
	struct bsky_say *slot = NULL;
	for (size_t i = 0; i < BSKY_SAYS_MAX; i++) {
		if (b->says[i].used && strcmp(b->says[i].key, key) == 0)
			return 0;
		if (!b->says[i].used && !slot)
			slot = &b->says[i];
	}
	if (outbound_key_busy(b->c.outbound, jkey))
		return 0;
	if (!slot) {
		decision_set(&d, VERDICT_DROP, "overload",
		             "%d replies to threads are on their way already: not said",
		             BSKY_SAYS_MAX);
		say_note(b, t.conversation, key, STAGE_OUTBOUND, &d);
		return -1;
	}
	char *fit = bsky_thread_fit(text, BSKY_POST_MAX_GRAPHEMES, &d);
	if (!fit || d.verdict != VERDICT_PASS)
		say_note(b, t.conversation, key, STAGE_VALIDATOR, &d);
	if (!fit)
		return -1;
	struct ga_err err = {{0}};
	const char *uris[] = {t.parent};
	slot->b = b;
	slot->used = true;
	slot->t = t;
	slot->text = fit;
	snprintf(slot->key, sizeof slot->key, "%s", key);
	snprintf(slot->source, sizeof slot->source, "%s", source && *source ? source : "bluesky");
	slot->call = atp_get_posts(b->c.atp, uris, 1, on_posts, slot, &err);
	if (!slot->call) {
		decision_set(&d, VERDICT_FAIL, "thread_say",
		             "the post to answer cannot be read: %s", err.msg);
		say_note(b, t.conversation, key, STAGE_OUTBOUND, &d);
		say_clear(slot);
		return -1;
	}
	return 0;
}

void bk_says_free(struct bsky *b)
{
	for (size_t i = 0; i < BSKY_SAYS_MAX; i++) {
		struct bsky_say *s = &b->says[i];
		if (s->used && s->call)
			atp_cancel(b->c.atp, s->call);
		if (s->used)
			say_clear(s);
	}
}

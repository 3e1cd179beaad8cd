/* Likes (bsky.h): through outbound (target bluesky:like:<did>, key
 * "like:<uri>"), one at a time at the like pacing, at most BSKY_LIKES_MAX
 * waiting; a like that answers a walk tells it (pipeline_reacted). */
#include "modules/bluesky/bsky_int.h"

static void drain_likes(struct bsky *b);

static void on_like_sent(void *ud, const struct decision *final, const char *artifact)
{
	struct pipeline_job *job = ud;
	log_kv(final->verdict == VERDICT_SENT ? LOG_LEVEL_INFO : LOG_LEVEL_WARN, LOG_COMP, "like",
	       "verdict", decision_verdict_name(final->verdict), "reason", final->reason,
	       "artifact", artifact ? artifact : "");
	if (job)
		pipeline_reacted(job, final, artifact);
}

static void submit_like(struct bsky *b, const struct like_entry *l)
{
	char target[BSKY_DID_MAX + 16], key[BSKY_KEY_MAX];
	snprintf(target, sizeof target, "bluesky:like:%s", l->did);
	/* the journal key never holds a second like of the same post (§11.26) */
	if (strlen(l->uri) + 5 <= JOURNAL_KEY_MAX)
		snprintf(key, sizeof key, "like:%s", l->uri);
	else
		outbound_idem_key(CONV_PLATFORM_BLUESKY, target, l->uri, strlen(l->uri), key);
	cJSON *extra = cJSON_CreateObject();
	cJSON *subj = cJSON_AddObjectToObject(extra, "subject");
	cJSON_AddStringToObject(subj, "uri", l->uri);
	cJSON_AddStringToObject(subj, "cid", l->cid);
	struct outbound_msg m = {.platform = CONV_PLATFORM_BLUESKY,
	                         .target = target,
	                         .source = "bluesky",
	                         .conversation = l->conversation,
	                         .message_id = l->message_id,
	                         .text = l->uri,
	                         .text_len = strlen(l->uri),
	                         .chain = -1,
	                         .idem_key = key,
	                         .extra = extra};
	bsky_pacing_note(&b->pacing, BSKY_ACT_LIKE, bk_now_ms());
	outbound_submit(b->c.outbound, &m, on_like_sent, l->job);
	cJSON_Delete(extra);
}

static void on_like_timer(uv_timer_t *t)
{
	drain_likes(t->data);
}

static void drain_likes(struct bsky *b)
{
	while (b->nlikes > 0 && !b->quiescing) {
		int64_t w = bsky_pacing_wait(&b->pacing, BSKY_ACT_LIKE, bk_now_ms());
		if (w > 0) {
			uv_timer_start(&b->like_timer, on_like_timer, (uint64_t)w, 0);
			return;
		}
		struct like_entry l = b->likes[0];
		memmove(b->likes, b->likes + 1, (b->nlikes - 1) * sizeof b->likes[0]);
		b->nlikes--;
		submit_like(b, &l);
	}
}

/* A like that is not made: the walk it answers is told. */
static void like_not_made(struct pipeline_job *job, const char *rule, const char *why)
{
	if (!job)
		return;
	struct decision d;
	decision_set(&d, VERDICT_DROP, rule, "%s", why);
	pipeline_reacted(job, &d, NULL);
}

void bk_like(struct bsky *b, const char *uri, const char *cid, const char *did,
             const char *conversation, const char *message_id, const char *why,
             struct pipeline_job *job)
{
	if (!uri || !*uri || !cid || !*cid || !did || !*did) {
		like_not_made(job, "like_target", "the post to like has no URI, CID or author");
		return;
	}
	for (size_t i = 0; i < b->nlikes; i++)
		if (strcmp(b->likes[i].uri, uri) == 0) {
			like_not_made(job, "like_queued", "a like of this post already waits");
			return;
		}
	if (b->nlikes == BSKY_LIKES_MAX) {
		bk_note_decision(b, conversation, message_id, STAGE_OUTBOUND, VERDICT_DROP,
		                 "likes_full",
		                 "%d likes are waiting for their pacing: this one is not made",
		                 BSKY_LIKES_MAX);
		like_not_made(job, "likes_full", "too many likes wait for their pacing");
		return;
	}
	struct like_entry *l = &b->likes[b->nlikes++];
	snprintf(l->uri, sizeof l->uri, "%s", uri);
	snprintf(l->cid, sizeof l->cid, "%s", cid);
	snprintf(l->did, sizeof l->did, "%s", did);
	snprintf(l->conversation, sizeof l->conversation, "%s", conversation ? conversation : "");
	snprintf(l->message_id, sizeof l->message_id, "%s", message_id ? message_id : "");
	snprintf(l->why, sizeof l->why, "%s", why ? why : "");
	l->job = job;
	drain_likes(b);
}

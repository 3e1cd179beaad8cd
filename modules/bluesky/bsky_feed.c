/* Feed hygiene (§6.10, §7.4 identity): one getAuthorFeed of our own feed
 * for the identity post, the expression schedule and pruning. */
#include "modules/bluesky/bsky_int.h"

/* ---- feed hygiene, identity, expression schedule ------------------------------------------ */

struct prune_call {
	struct bsky *b;
	char uri[BSKY_URI_MAX];
	enum bsky_prune_why why;
};

/* The prune's final decision from outbound: sent → counted and on the
 * feed's story; anything else (a send permission, the journal, pacing, the
 * port) is a decision with outbound's rule and reason — the record stays,
 * and a later run asks again unless the journal says it is done. */
static void on_pruned(void *ud, const struct decision *final, const char *artifact)
{
	struct prune_call *pc = ud;
	struct bsky *b = pc->b;
	const char *what = pc->why == BSKY_PRUNE_DUPLICATE ? "duplicate post" : "thank-you reply";
	if (final->verdict == VERDICT_SENT) {
		b->pruned++;
		bk_note_decision(b, "bluesky:feed", pc->uri, STAGE_OUTBOUND, VERDICT_INFO, "pruned",
		                 "pruned/%s: deleted our own %s", bsky_prune_why_name(pc->why),
		                 what);
	} else {
		bk_note_decision(b, "bluesky:feed", pc->uri, STAGE_OUTBOUND, final->verdict,
		                 final->rule ? final->rule : "prune",
		                 "pruned/%s: our own %s was not deleted: %s",
		                 bsky_prune_why_name(pc->why), what, final->reason);
	}
	(void)artifact;
	free(pc);
}

/* Deletes what bsky_prune_plan marks, through outbound (target
 * bluesky:delete, text the record's URI, key prune:<uri>): the send
 * permission, the audit, the journal (intent → done, reconciled after a
 * crash by asking whether the record still exists) and pacing. At most
 * BSKY_PRUNE_PER_RUN per run, so pruning never fills outbound's queue ahead
 * of replies; the rest waits for the next run. */
static void prune(struct bsky *b, const struct bsky_feed_item *items, const cJSON **recs, size_t n)
{
	enum bsky_prune_why why[BSKY_PRUNE_MAX_ITEMS];
	if (n > BSKY_PRUNE_MAX_ITEMS)
		n = BSKY_PRUNE_MAX_ITEMS;
	if (!bsky_prune_plan(items, n, why) || !b->c.journal)
		return; /* without the journal no key can be checked: delete nothing */
	size_t submitted = 0;
	for (size_t i = 0; i < n && submitted < BSKY_PRUNE_PER_RUN; i++) {
		if (why[i] == BSKY_PRUNE_KEEP || strcmp(items[i].uri, b->st->identity_uri) == 0)
			continue;
		/* a record whose send is not settled yet is the journal's to
		 * reconcile, not ours to delete */
		const char *k = atp_record_key(recs[i]);
		if (k && journal_state_of(b->c.journal, k) == JOURNAL_INTENT)
			continue;
		char key[BSKY_KEY_MAX];
		if (strlen(items[i].uri) + 6 <= JOURNAL_KEY_MAX)
			snprintf(key, sizeof key, "prune:%s", items[i].uri);
		else
			outbound_idem_key(CONV_PLATFORM_BLUESKY, "bluesky:delete", items[i].uri,
			                  strlen(items[i].uri), key);
		/* done already (the feed lags the delete), or in flight: nothing to ask */
		enum journal_state js = journal_state_of(b->c.journal, key);
		if (js == JOURNAL_DONE || js == JOURNAL_INTENT ||
		    outbound_key_busy(b->c.outbound, key))
			continue;
		struct prune_call *pc = xcalloc(1, sizeof *pc);
		pc->b = b;
		pc->why = why[i];
		snprintf(pc->uri, sizeof pc->uri, "%s", items[i].uri);
		struct outbound_msg m = {.platform = CONV_PLATFORM_BLUESKY,
		                         .target = "bluesky:delete",
		                         .source = "bluesky",
		                         .conversation = "bluesky:feed",
		                         .message_id = pc->uri,
		                         .text = pc->uri,
		                         .text_len = strlen(pc->uri),
		                         .chain = -1,
		                         .idem_key = key};
		submitted++;
		outbound_submit(b->c.outbound, &m, on_pruned, pc);
	}
}

static void on_identity_posted(void *ud, const struct decision *final, const char *artifact)
{
	struct bsky *b = ud;
	if (final->verdict == VERDICT_SENT && artifact) {
		snprintf(b->st->identity_uri, sizeof b->st->identity_uri, "%s", artifact);
		bk_save_state(b);
	}
}

static void identity_check(struct bsky *b, const cJSON *feed)
{
	char text[400];
	if (!b->github || bsky_identity_text(b->github, text, sizeof text) < 0)
		return;
	const cJSON *x;
	cJSON_ArrayForEach(x, feed)
	{
		if (cJSON_GetObjectItemCaseSensitive(x, "reason"))
			continue;
		const cJSON *post = cJSON_GetObjectItemCaseSensitive(x, "post");
		const cJSON *rec = cJSON_GetObjectItemCaseSensitive(post, "record");
		if (cJSON_GetObjectItemCaseSensitive(rec, "reply"))
			continue;
		if (bsky_is_identity_post(json_string_or(rec, "text", ""))) {
			snprintf(b->st->identity_uri, sizeof b->st->identity_uri, "%s",
			         json_string_or(post, "uri", ""));
			return;
		}
	}
	/* remembered by URI: not re-posted because it scrolled out (§11.11) */
	if (b->st->identity_uri[0])
		return;
	char id[64];
	snprintf(id, sizeof id, "identity:%.40s", b->github);
	pipeline_say(b->c.pipeline, CONV_PLATFORM_BLUESKY, "bluesky:post", "bluesky", text,
	             strlen(text), -1, id, on_identity_posted, b);
}

static void on_feed(void *ud, const struct atp_result *res)
{
	struct bsky *b = ud;
	struct sched_job *j = b->feed_running;
	b->feed_running = NULL;
	if (res->kind != ATP_OK || !res->json) {
		/* never post an identity or prune on a failed read (§11.11) */
		if (res->kind != ATP_ERR_CANCELLED)
			log_kv(LOG_LEVEL_WARN, LOG_COMP, "own feed unreadable", "error", res->msg);
		if (j)
			sched_job_done(j);
		return;
	}
	const cJSON *feed = cJSON_GetObjectItemCaseSensitive(res->json, "feed");
	struct bsky_feed_item items[BSKY_PRUNE_MAX_ITEMS];
	const cJSON *recs[BSKY_PRUNE_MAX_ITEMS];
	size_t n = 0;
	int64_t last_top = 0;
	const cJSON *x;
	cJSON_ArrayForEach(x, feed)
	{
		if (n == BSKY_PRUNE_MAX_ITEMS)
			break;
		const cJSON *post = cJSON_GetObjectItemCaseSensitive(x, "post");
		const cJSON *rec = cJSON_GetObjectItemCaseSensitive(post, "record");
		if (strcmp(bk_str_at(post, "author", "did"), b->did) != 0)
			continue;
		const cJSON *reply = cJSON_GetObjectItemCaseSensitive(rec, "reply");
		int64_t ms = 0;
		time_parse_iso(json_string_or(rec, "createdAt", ""), &ms);
		bool repost = cJSON_GetObjectItemCaseSensitive(x, "reason") != NULL;
		if (!reply && !repost && ms > last_top)
			last_top = ms;
		if (!b->warmed && !reply && !repost && b->nrecent < BSKY_RECENT_POSTS)
			b->recent[b->nrecent++] = xstrdup(json_string_or(rec, "text", ""));
		recs[n] = rec;
		items[n++] = (struct bsky_feed_item){
		        .uri = json_string_or(post, "uri", ""),
		        .text = json_string_or(rec, "text", ""),
		        .created_ms = ms,
		        .root_uri = reply ? bk_str_at(reply, "root", "uri") : NULL,
		        .is_repost = repost};
	}
	if (!b->warmed) {
		b->warmed = true;
		identity_check(b, feed);
		if (last_top > b->st->last_post_ms)
			b->st->last_post_ms = last_top;
		if (!b->st->next_expression_ms)
			b->st->next_expression_ms =
			        bsky_expression_next(bk_now_ms(), b->st->last_post_ms,
			                             (double)(random_below(1000000)) / 1e6);
	}
	prune(b, items, recs, n);
	bk_save_state(b);
	if (j)
		sched_job_done(j);
}

void bk_feed_run(void *ud, struct sched_job *job)
{
	struct bsky *b = ud;
	if (!b->logged_in || b->quiescing) {
		sched_job_done(job);
		return;
	}
	b->feed_running = job;
	struct ga_err err = {{0}};
	if (atp_get_author_feed(b->c.atp, b->did, NULL, NULL, BSKY_FEED_LIMIT, on_feed, b, &err) ==
	    0) {
		b->feed_running = NULL;
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "own feed not asked", "error", err.msg);
		sched_job_done(job);
	}
}

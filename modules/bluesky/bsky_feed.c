/* Feed hygiene (§6.10, §7.4 identity): one getAuthorFeed of our own feed
 * for the identity post, the expression schedule and pruning. */
#include "modules/bluesky/bsky_int.h"

/* ---- feed hygiene, identity, expression schedule ------------------------------------------ */

struct prune_call {
	struct bsky *b;
	char key[BSKY_KEY_MAX];
	char uri[BSKY_URI_MAX];
	enum bsky_prune_why why;
};

static void on_pruned(const struct atp_result *res, void *ud)
{
	struct prune_call *pc = ud;
	struct bsky *b = pc->b;
	struct ga_err err = {{0}};
	if (res->kind == ATP_OK) {
		journal_done(b->c.journal, pc->key, pc->uri, bk_now_ms(), &err);
		b->pruned++;
		bk_note_decision(b, "bluesky:feed", pc->uri, STAGE_OUTBOUND, VERDICT_INFO, "pruned",
		                 "pruned/%s: deleted our own %s", bsky_prune_why_name(pc->why),
		                 pc->why == BSKY_PRUNE_DUPLICATE ? "duplicate post"
		                                                 : "thank-you reply");
	} else if (res->kind != ATP_ERR_CANCELLED) {
		journal_failed(b->c.journal, pc->key, res->msg, bk_now_ms(), &err);
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "prune failed", "uri", pc->uri, "error", res->msg);
	}
	free(pc);
}

static void prune(struct bsky *b, const struct bsky_feed_item *items, const cJSON **recs, size_t n)
{
	enum bsky_prune_why why[BSKY_PRUNE_MAX_ITEMS];
	if (n > BSKY_PRUNE_MAX_ITEMS)
		n = BSKY_PRUNE_MAX_ITEMS;
	if (!bsky_prune_plan(items, n, why) || !b->c.journal)
		return;
	for (size_t i = 0; i < n; i++) {
		if (why[i] == BSKY_PRUNE_KEEP || strcmp(items[i].uri, b->st->identity_uri) == 0)
			continue;
		/* a record whose send is not settled yet is the journal's to
		 * reconcile, not ours to delete */
		const char *k = atp_record_key(recs[i]);
		if (k && journal_state_of(b->c.journal, k) == JOURNAL_INTENT)
			continue;
		struct prune_call *pc = xcalloc(1, sizeof *pc);
		pc->b = b;
		pc->why = why[i];
		snprintf(pc->uri, sizeof pc->uri, "%s", items[i].uri);
		if (strlen(items[i].uri) + 6 <= JOURNAL_KEY_MAX)
			snprintf(pc->key, sizeof pc->key, "prune:%s", items[i].uri);
		else
			outbound_idem_key(CONV_PLATFORM_BLUESKY, "prune", items[i].uri,
			                  strlen(items[i].uri), pc->key);
		struct ga_err err = {{0}};
		enum journal_state js = journal_state_of(b->c.journal, pc->key);
		if (js == JOURNAL_DONE || js == JOURNAL_INTENT ||
		    journal_intent(b->c.journal, pc->key, "bluesky", "bluesky:prune", NULL,
		                   bk_now_ms(), &err) < 0) {
			free(pc);
			continue;
		}
		if (atp_delete_uri(b->c.atp, pc->uri, on_pruned, pc, &err) == 0) {
			journal_failed(b->c.journal, pc->key, err.msg, bk_now_ms(), &err);
			free(pc);
		}
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

static void on_feed(const struct atp_result *res, void *ud)
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

void bk_feed_run(struct sched_job *job, void *ud)
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

/*
 * atproto endpoints — the §5.2 helpers over atp_enqueue, and the composite
 * operations (a post whose mentions are resolved first; reply refs read
 * from the thread or the record). A composite operation is a small state
 * machine that owns at most one sub-call at a time; its id (from the
 * client's counter) cancels it with atp_cancel.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "adapters/atproto/atproto.h"
#include "adapters/atproto/internal.h"
#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"

#define LOG_COMP "atproto"

int atp_query_add(char *q, size_t cap, const char *name, const char *value)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(q);
	size_t o = n;
	if (o && o + 1 < cap)
		q[o++] = '&';
	for (const char *p = name; *p && o + 1 < cap; p++)
		q[o++] = *p;
	if (o + 1 < cap)
		q[o++] = '=';
	for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
		bool plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		             (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.' ||
		             *p == '~';
		if (plain && o + 1 < cap) {
			q[o++] = (char)*p;
		} else if (!plain && o + 3 < cap) {
			q[o++] = '%';
			q[o++] = hex[*p >> 4];
			q[o++] = hex[*p & 15];
		} else {
			q[n] = '\0';
			return -1;
		}
	}
	if (o >= cap) {
		q[n] = '\0';
		return -1;
	}
	q[o] = '\0';
	return 0;
}

static unsigned clamp_limit(unsigned limit)
{
	if (limit == 0)
		return 50;
	return limit > ATP_LIST_LIMIT_MAX ? ATP_LIST_LIMIT_MAX : limit;
}

static uint64_t query_call(struct atp_client *c, const char *nsid, const char *query,
                           const char *what, bool auth, bool self_repo, atp_done_fn cb, void *ud,
                           struct ga_err *err)
{
	struct atp_call_spec s = {
	        .kind = ATP_CALL_USER,
	        .nsid = nsid,
	        .query = query,
	        .what = what,
	        .needs_session = auth,
	        .self_repo = self_repo,
	};
	return atp_enqueue(c, &s, cb, ud, err);
}

static bool too_long(const char *s, size_t max, const char *name, struct ga_err *err)
{
	if (s && strlen(s) < max)
		return false;
	err_set(err, "%s is %s", name, s ? "too long" : "missing");
	return true;
}

uint64_t atp_list_notifications(struct atp_client *c, const char *cursor, unsigned limit,
                                atp_done_fn cb, void *ud, struct ga_err *err)
{
	char q[1024] = "", n[16];
	snprintf(n, sizeof n, "%u", clamp_limit(limit));
	atp_query_add(q, sizeof q, "limit", n);
	if (cursor && *cursor && atp_query_add(q, sizeof q, "cursor", cursor) != 0) {
		err_set(err, "the notification cursor is too long");
		return 0;
	}
	return query_call(c, "app.bsky.notification.listNotifications", q,
	                  "list the agent's notifications", true, false, cb, ud, err);
}

uint64_t atp_update_seen(struct atp_client *c, int64_t seen_at_ms, atp_done_fn cb, void *ud,
                         struct ga_err *err)
{
	char ts[TIME_ISO_LEN + 1];
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "seenAt", time_format_iso(seen_at_ms, ts));
	struct atp_call_spec s = {
	        .kind = ATP_CALL_USER,
	        .nsid = "app.bsky.notification.updateSeen",
	        .procedure = true,
	        .body = b,
	        .what = "mark the agent's notifications as seen",
	        .needs_session = true,
	        .idempotent = true,
	};
	uint64_t id = atp_enqueue(c, &s, cb, ud, err);
	cJSON_Delete(b);
	return id;
}

uint64_t atp_get_post_thread(struct atp_client *c, const char *uri, int depth, int parent_height,
                             atp_done_fn cb, void *ud, struct ga_err *err)
{
	if (too_long(uri, ATP_URI_MAX, "the post URI", err))
		return 0;
	char q[1024] = "", n[16], what[ATP_URI_MAX + 32];
	atp_query_add(q, sizeof q, "uri", uri);
	if (depth >= 0) {
		snprintf(n, sizeof n, "%d", depth > 1000 ? 1000 : depth);
		atp_query_add(q, sizeof q, "depth", n);
	}
	if (parent_height >= 0) {
		snprintf(n, sizeof n, "%d", parent_height > 1000 ? 1000 : parent_height);
		atp_query_add(q, sizeof q, "parentHeight", n);
	}
	snprintf(what, sizeof what, "read the thread of %s", uri);
	return query_call(c, "app.bsky.feed.getPostThread", q, what, true, false, cb, ud, err);
}

uint64_t atp_get_posts(struct atp_client *c, const char *const *uris, size_t n, atp_done_fn cb,
                       void *ud, struct ga_err *err)
{
	if (n == 0 || n > ATP_GET_POSTS_MAX) {
		err_set(err, "getPosts takes 1..%d post URIs (got %zu)", ATP_GET_POSTS_MAX, n);
		return 0;
	}
	/* every URI percent-encoded may triple: the query is sized for the worst */
	char q[ATP_GET_POSTS_MAX * (ATP_URI_MAX * 3 + 6)] = "";
	for (size_t i = 0; i < n; i++) {
		if (too_long(uris[i], ATP_URI_MAX, "a post URI", err))
			return 0;
		if (strncmp(uris[i], "at://", 5) != 0) {
			err_set(err, "'%.80s' is not an at:// URI", uris[i]);
			return 0;
		}
		atp_query_add(q, sizeof q, "uris", uris[i]);
	}
	char what[ATP_URI_MAX + 48];
	snprintf(what, sizeof what, "read the post%s %s%s", n > 1 ? "s" : "", uris[0],
	         n > 1 ? " and others" : "");
	return query_call(c, "app.bsky.feed.getPosts", q, what, true, false, cb, ud, err);
}

uint64_t atp_get_author_feed(struct atp_client *c, const char *actor, const char *filter,
                             const char *cursor, unsigned limit, atp_done_fn cb, void *ud,
                             struct ga_err *err)
{
	if (too_long(actor, ATP_DID_MAX, "the actor", err))
		return 0;
	char q[1024] = "", n[16], what[ATP_DID_MAX + 32];
	snprintf(n, sizeof n, "%u", clamp_limit(limit));
	atp_query_add(q, sizeof q, "actor", actor);
	atp_query_add(q, sizeof q, "limit", n);
	if (filter && *filter)
		atp_query_add(q, sizeof q, "filter", filter);
	if (cursor && *cursor && atp_query_add(q, sizeof q, "cursor", cursor) != 0) {
		err_set(err, "the feed cursor is too long");
		return 0;
	}
	snprintf(what, sizeof what, "read the posts of %s", actor);
	return query_call(c, "app.bsky.feed.getAuthorFeed", q, what, true, false, cb, ud, err);
}

uint64_t atp_get_profile(struct atp_client *c, const char *actor, atp_done_fn cb, void *ud,
                         struct ga_err *err)
{
	if (too_long(actor, ATP_DID_MAX, "the actor", err))
		return 0;
	char q[600] = "", what[ATP_DID_MAX + 32];
	atp_query_add(q, sizeof q, "actor", actor);
	snprintf(what, sizeof what, "read the profile of %s", actor);
	return query_call(c, "app.bsky.actor.getProfile", q, what, true, false, cb, ud, err);
}

uint64_t atp_resolve_handle(struct atp_client *c, const char *handle, atp_done_fn cb, void *ud,
                            struct ga_err *err)
{
	if (handle && handle[0] == '@')
		handle++;
	if (!atp_valid_handle(handle)) {
		err_set(err, "'%.80s' is not a Bluesky handle", handle ? handle : "(null)");
		return 0;
	}
	char q[600] = "", what[ATP_HANDLE_MAX + 32];
	atp_query_add(q, sizeof q, "handle", handle);
	snprintf(what, sizeof what, "resolve the handle @%s", handle);
	return query_call(c, "com.atproto.identity.resolveHandle", q, what, false, false, cb, ud,
	                  err);
}

uint64_t atp_get_record(struct atp_client *c, const char *uri, atp_done_fn cb, void *ud,
                        struct ga_err *err)
{
	char did[ATP_DID_MAX], coll[128], rkey[ATP_RKEY_MAX];
	if (atp_uri_parse(uri, did, sizeof did, coll, sizeof coll, rkey, sizeof rkey, err) != 0)
		return 0;
	char q[1200] = "", what[ATP_URI_MAX + 32];
	atp_query_add(q, sizeof q, "repo", did);
	atp_query_add(q, sizeof q, "collection", coll);
	atp_query_add(q, sizeof q, "rkey", rkey);
	snprintf(what, sizeof what, "read the record %s", uri);
	return query_call(c, "com.atproto.repo.getRecord", q, what, true, false, cb, ud, err);
}

uint64_t atp_list_records(struct atp_client *c, const char *collection, unsigned limit,
                          const char *cursor, atp_done_fn cb, void *ud, struct ga_err *err)
{
	if (!collection || !atp_valid_nsid(collection)) {
		err_set(err, "'%.80s' is not a collection NSID",
		        collection ? collection : "(null)");
		return 0;
	}
	char q[1024] = "", n[16], what[160];
	snprintf(n, sizeof n, "%u", clamp_limit(limit));
	atp_query_add(q, sizeof q, "collection", collection);
	atp_query_add(q, sizeof q, "limit", n);
	if (cursor && *cursor && atp_query_add(q, sizeof q, "cursor", cursor) != 0) {
		err_set(err, "the records cursor is too long");
		return 0;
	}
	snprintf(what, sizeof what, "list the agent's own %s records", collection);
	return query_call(c, "com.atproto.repo.listRecords", q, what, true, true, cb, ud, err);
}

static const char *coll_noun(const char *collection)
{
	if (strcmp(collection, ATP_COLL_POST) == 0)
		return "a post";
	if (strcmp(collection, ATP_COLL_LIKE) == 0)
		return "a like";
	if (strcmp(collection, ATP_COLL_FOLLOW) == 0)
		return "a follow";
	return "a record";
}

uint64_t atp_create_record(struct atp_client *c, const char *collection, const cJSON *record,
                           atp_done_fn cb, void *ud, struct ga_err *err)
{
	if (!collection || !atp_valid_nsid(collection) || !cJSON_IsObject(record)) {
		err_set(err, "createRecord needs a collection NSID and a record object");
		return 0;
	}
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "repo", ""); /* the own DID, at send time */
	cJSON_AddStringToObject(b, "collection", collection);
	cJSON_AddItemToObject(b, "record", cJSON_Duplicate(record, 1));
	char *text = cJSON_PrintUnformatted(b);
	size_t n = text ? strlen(text) : 0;
	free(text);
	if (n > ATP_MAX_BODY_BYTES) {
		cJSON_Delete(b);
		err_set(err, "the record is %zu bytes, more than the %zu this client sends", n,
		        ATP_MAX_BODY_BYTES);
		return 0;
	}
	char what[64];
	snprintf(what, sizeof what, "create %s", coll_noun(collection));
	struct atp_call_spec s = {
	        .kind = ATP_CALL_USER,
	        .nsid = "com.atproto.repo.createRecord",
	        .procedure = true,
	        .body = b,
	        .what = what,
	        .needs_session = true,
	        .self_repo = true,
	        .points = ATP_WRITE_POINTS_CREATE,
	};
	uint64_t id = atp_enqueue(c, &s, cb, ud, err);
	cJSON_Delete(b);
	return id;
}

uint64_t atp_delete_record(struct atp_client *c, const char *collection, const char *rkey,
                           atp_done_fn cb, void *ud, struct ga_err *err)
{
	if (!collection || !atp_valid_nsid(collection) || !atp_valid_rkey(rkey)) {
		err_set(err, "deleteRecord needs a collection NSID and a record key");
		return 0;
	}
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "repo", "");
	cJSON_AddStringToObject(b, "collection", collection);
	cJSON_AddStringToObject(b, "rkey", rkey);
	char what[ATP_RKEY_MAX + 64];
	snprintf(what, sizeof what, "delete %s (%s)", coll_noun(collection), rkey);
	struct atp_call_spec s = {
	        .kind = ATP_CALL_USER,
	        .nsid = "com.atproto.repo.deleteRecord",
	        .procedure = true,
	        .body = b,
	        .what = what,
	        .needs_session = true,
	        .self_repo = true,
	        .idempotent = true,
	        .points = ATP_WRITE_POINTS_DELETE,
	};
	uint64_t id = atp_enqueue(c, &s, cb, ud, err);
	cJSON_Delete(b);
	return id;
}

uint64_t atp_delete_uri(struct atp_client *c, const char *uri, atp_done_fn cb, void *ud,
                        struct ga_err *err)
{
	char did[ATP_DID_MAX], coll[128], rkey[ATP_RKEY_MAX];
	if (atp_uri_parse(uri, did, sizeof did, coll, sizeof coll, rkey, sizeof rkey, err) != 0)
		return 0;
	if (c->did[0] && strcmp(did, c->did) != 0) {
		err_set(err,
		        "%s is not in the agent's own repository (%s); only own records can be "
		        "deleted",
		        uri, c->did);
		return 0;
	}
	return atp_delete_record(c, coll, rkey, cb, ud, err);
}

uint64_t atp_like(struct atp_client *c, const struct atp_strong_ref *subject, const char *idem_key,
                  atp_done_fn cb, void *ud, struct ga_err *err)
{
	cJSON *rec = atp_like_record(subject, atp_now_ms(c), idem_key, err);
	if (!rec)
		return 0;
	uint64_t id = atp_create_record(c, ATP_COLL_LIKE, rec, cb, ud, err);
	cJSON_Delete(rec);
	return id;
}

uint64_t atp_follow(struct atp_client *c, const char *did, const char *idem_key, atp_done_fn cb,
                    void *ud, struct ga_err *err)
{
	cJSON *rec = atp_follow_record(did, atp_now_ms(c), err);
	if (!rec)
		return 0;
	if (idem_key)
		cJSON_AddStringToObject(rec, ATP_FIELD_KEY, idem_key);
	uint64_t id = atp_create_record(c, ATP_COLL_FOLLOW, rec, cb, ud, err);
	cJSON_Delete(rec);
	return id;
}

/* --- composite operations --------------------------------------------------------- */

enum op_type { OP_POST, OP_REPLY };

struct atp_op {
	struct atp_op *next;
	struct atp_client *c;
	uint64_t id;
	uint64_t sub; /* the call in progress */
	enum op_type type;
	atp_done_fn cb;
	void *ud;
	/* post */
	char *text;
	size_t text_len;
	bool has_reply;
	struct atp_reply_ref reply;
	char langs[ATP_POST_MAX_LANGS][ATP_LANG_MAX];
	size_t n_langs;
	int64_t created_at_ms;
	int64_t chain;
	char *key;
	struct atp_facets facets;
	size_t next_mention;
	/* reply refs */
	struct atp_strong_ref parent;
	char thread_error[GA_ERR_MSG_MAX];
};

static void op_unlink(struct atp_op *op)
{
	struct atp_op **pp = &op->c->ops;
	while (*pp && *pp != op)
		pp = &(*pp)->next;
	if (*pp)
		*pp = op->next;
}

static void op_free(struct atp_op *op)
{
	free(op->text);
	free(op->key);
	atp_facets_free(&op->facets);
	free(op);
}

/* Ends an operation: unlinked first, so the callback may start others. */
static void op_finish(struct atp_op *op, const struct atp_result *r)
{
	op_unlink(op);
	op->cb(op->ud, r);
	op_free(op);
}

static void op_fail(struct atp_op *op, enum atp_error_kind kind, const char *msg)
{
	struct atp_result r = {.kind = kind};
	err_fmt(r.msg, sizeof r.msg, "%s", msg);
	op_finish(op, &r);
}

/* A composite operation and the call it waits on: ids come from the
 * client's one counter, so an id is either an operation's or a call's. */
int atp_cancel(struct atp_client *c, uint64_t id)
{
	for (struct atp_op *op = c->ops; op; op = op->next) {
		if (op->id != id)
			continue;
		op_unlink(op);
		if (op->sub)
			atp_cancel(c, op->sub);
		op_free(op);
		return 0;
	}
	return atp_call_cancel(c, id);
}

static struct atp_op *op_new(struct atp_client *c, enum op_type type, atp_done_fn cb, void *ud)
{
	struct atp_op *op = xcalloc(1, sizeof *op);
	op->c = c;
	op->id = callq_new_id(c->q);
	op->type = type;
	op->cb = cb;
	op->ud = ud;
	op->next = c->ops;
	c->ops = op;
	return op;
}

static void post_step(struct atp_op *op);

static void on_post_created(void *ud, const struct atp_result *r)
{
	struct atp_op *op = ud;
	op->sub = 0;
	op_finish(op, r);
}

static void on_mention_resolved(void *ud, const struct atp_result *r)
{
	struct atp_op *op = ud;
	op->sub = 0;
	const char *handle = op->facets.items[op->next_mention].value;
	if (r->kind == ATP_ERR_CANCELLED) {
		op_finish(op, r);
		return;
	}
	const char *did = r->kind == ATP_OK ? json_string_or(r->json, "did", NULL) : NULL;
	if (did && atp_facets_set_did(&op->facets, handle, did) > 0) {
		log_kv(LOG_LEVEL_DEBUG, LOG_COMP, "mention resolved", "handle", handle, "did", did);
	} else {
		/* A mention that does not resolve is plain text, as on bsky.app. */
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "a mentioned handle did not resolve; no facet",
		       "handle", handle, "error", r->kind == ATP_OK ? "no did" : r->msg);
	}
	op->next_mention++;
	post_step(op);
}

static bool handle_tried(const struct atp_op *op, size_t upto, const char *handle)
{
	for (size_t i = 0; i < upto; i++)
		if (op->facets.items[i].kind == ATP_FACET_MENTION &&
		    strcasecmp(op->facets.items[i].value, handle) == 0)
			return true;
	return false;
}

static void post_step(struct atp_op *op)
{
	struct ga_err err = {{0}};
	while (op->next_mention < op->facets.n) {
		struct atp_facet *f = &op->facets.items[op->next_mention];
		if (f->kind != ATP_FACET_MENTION || f->did ||
		    handle_tried(op, op->next_mention, f->value)) {
			op->next_mention++;
			continue;
		}
		op->sub = atp_resolve_handle(op->c, f->value, on_mention_resolved, op, &err);
		if (op->sub)
			return;
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "a mentioned handle could not be resolved",
		       "handle", f->value, "error", err.msg);
		op->next_mention++;
	}
	const char *langs[ATP_POST_MAX_LANGS];
	for (size_t i = 0; i < op->n_langs; i++)
		langs[i] = op->langs[i];
	struct atp_post_in in = {
	        .text = op->text,
	        .text_len = op->text_len,
	        .reply = op->has_reply ? &op->reply : NULL,
	        .facets = &op->facets,
	        .langs = langs,
	        .n_langs = op->n_langs,
	        .created_at_ms = op->created_at_ms,
	        .chain = op->chain,
	        .idem_key = op->key,
	};
	cJSON *rec = atp_post_record(&in, &err);
	if (rec)
		op->sub = atp_create_record(op->c, ATP_COLL_POST, rec, on_post_created, op, &err);
	cJSON_Delete(rec);
	if (!op->sub) {
		char msg[GA_ERR_MSG_MAX];
		err_fmt(msg, sizeof msg, "could not create the post: %s", err.msg);
		op_fail(op,
		        !rec                                      ? ATP_ERR_INVALID
		        : op->c->logins_refused && !op->c->access ? ATP_ERR_AUTH
		                                                  : ATP_ERR_TRANSIENT,
		        msg);
	}
}

uint64_t atp_post_create(struct atp_client *c, const struct atp_post_in *in, atp_done_fn cb,
                         void *ud, struct ga_err *err)
{
	if (!cb) {
		err_set(err, "atp_post_create needs a callback");
		return 0;
	}
	if (c->closing) {
		err_set(err, "the Bluesky client is shutting down");
		return 0;
	}
	if (c->logins_refused && !c->access) {
		err_set(err, "could not create a post: %s", c->login_error);
		return 0;
	}
	/* Everything that can be refused is refused now, before any request. */
	struct atp_post_in check = *in;
	check.facets = NULL;
	if (!check.created_at_ms)
		check.created_at_ms = atp_now_ms(c);
	cJSON *probe = atp_post_record(&check, err);
	if (!probe)
		return 0;
	cJSON_Delete(probe);
	if (atp_pending(c) + 1 >= ATP_MAX_QUEUED) {
		err_set(err, "%d Bluesky requests are already waiting; the post was refused",
		        ATP_MAX_QUEUED);
		return 0;
	}
	struct atp_op *op = op_new(c, OP_POST, cb, ud);
	op->text = xstrndup(in->text, in->text_len);
	op->text_len = in->text_len;
	if (in->reply) {
		op->has_reply = true;
		op->reply = *in->reply;
	}
	for (size_t i = 0; i < in->n_langs; i++)
		snprintf(op->langs[i], sizeof op->langs[i], "%s", in->langs[i]);
	op->n_langs = in->n_langs;
	op->created_at_ms = check.created_at_ms;
	op->chain = in->chain;
	op->key = in->idem_key ? xstrdup(in->idem_key) : NULL;
	atp_facets_detect(op->text, op->text_len, &op->facets);
	uint64_t id = op->id;
	post_step(op); /* starts a request: callbacks come later, on the loop */
	return id;
}

static void reply_done(struct atp_op *op, const cJSON *record)
{
	struct atp_reply_ref ref;
	struct ga_err err = {{0}};
	if (atp_reply_ref_for(&op->parent, record, &ref, &err) != 0) {
		op_fail(op, ATP_ERR_MALFORMED, err.msg);
		return;
	}
	cJSON *o = cJSON_CreateObject();
	cJSON *root = cJSON_AddObjectToObject(o, "root");
	cJSON_AddStringToObject(root, "uri", ref.root.uri);
	cJSON_AddStringToObject(root, "cid", ref.root.cid);
	cJSON *parent = cJSON_AddObjectToObject(o, "parent");
	cJSON_AddStringToObject(parent, "uri", ref.parent.uri);
	cJSON_AddStringToObject(parent, "cid", ref.parent.cid);
	struct atp_result r = {.kind = ATP_OK, .status = 200, .json = o};
	op_finish(op, &r);
	cJSON_Delete(o);
}

static void on_parent_record(void *ud, const struct atp_result *r)
{
	struct atp_op *op = ud;
	op->sub = 0;
	if (r->kind != ATP_OK) {
		struct atp_result f = *r;
		err_fmt(f.msg, sizeof f.msg,
		        "the reply refs for %s could not be read: the thread (%s) nor the record "
		        "(%s)",
		        op->parent.uri, op->thread_error, r->msg);
		op_finish(op, &f);
		return;
	}
	const cJSON *cid = cJSON_GetObjectItemCaseSensitive(r->json, "cid");
	if (cJSON_IsString(cid) && strcmp(cid->valuestring, op->parent.cid) != 0)
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "the parent post changed since it was seen", "uri",
		       op->parent.uri);
	reply_done(op, cJSON_GetObjectItemCaseSensitive(r->json, "value"));
}

static void on_parent_thread(void *ud, const struct atp_result *r)
{
	struct atp_op *op = ud;
	op->sub = 0;
	if (r->kind == ATP_ERR_CANCELLED) {
		op_finish(op, r);
		return;
	}
	if (r->kind == ATP_OK) {
		const cJSON *thread = cJSON_GetObjectItemCaseSensitive(r->json, "thread");
		const char *type = json_string_or(thread, "$type", "");
		const cJSON *post = cJSON_GetObjectItemCaseSensitive(thread, "post");
		if (strstr(type, "notFoundPost") || strstr(type, "blockedPost")) {
			char msg[GA_ERR_MSG_MAX];
			err_fmt(msg, sizeof msg, "cannot reply to %s: Bluesky says it is %s",
			        op->parent.uri,
			        strstr(type, "blocked") ? "blocked" : "not found (deleted?)");
			op_fail(op, ATP_ERR_NOT_FOUND, msg);
			return;
		}
		if (cJSON_IsObject(post)) {
			reply_done(op, cJSON_GetObjectItemCaseSensitive(post, "record"));
			return;
		}
		err_fmt(op->thread_error, sizeof op->thread_error, "no post in the answer");
	} else {
		err_fmt(op->thread_error, sizeof op->thread_error, "%s", r->msg);
	}
	/* Without an AppView (a bare PDS) or on a failure: read the record. */
	struct ga_err err = {{0}};
	op->sub = atp_get_record(op->c, op->parent.uri, on_parent_record, op, &err);
	if (!op->sub)
		op_fail(op, ATP_ERR_INVALID, err.msg);
}

uint64_t atp_reply_resolve(struct atp_client *c, const struct atp_strong_ref *parent,
                           atp_done_fn cb, void *ud, struct ga_err *err)
{
	struct atp_reply_ref probe;
	if (!cb || atp_reply_ref_for(parent, NULL, &probe, err) != 0)
		return 0;
	struct atp_op *op = op_new(c, OP_REPLY, cb, ud);
	op->parent = *parent;
	uint64_t id = op->id;
	op->sub = atp_get_post_thread(c, parent->uri, 0, 0, on_parent_thread, op, err);
	if (!op->sub) {
		op_unlink(op);
		op_free(op);
		return 0;
	}
	return id;
}

/*
 * bluesky port — the Bluesky outbound port; see port.h.
 */
#include "modules/bluesky/port.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/json.h"
#include "common/log.h"
#include "common/xalloc.h"

#define LOG_COMP "atproto"

int atp_target_parse(const char *target, enum atp_target_kind *kind, char *did, size_t cap,
                     struct ga_err *err)
{
	if (did && cap)
		did[0] = '\0';
	if (!target)
		return err_set(err, "no Bluesky target");
	if (strcmp(target, "bluesky:post") == 0) {
		*kind = ATP_TARGET_POST;
		return 0;
	}
	if (strcmp(target, "bluesky:delete") == 0) {
		*kind = ATP_TARGET_DELETE;
		return 0;
	}
	const char *rest = NULL;
	if (strncmp(target, "bluesky:reply:", 14) == 0) {
		*kind = ATP_TARGET_REPLY;
		rest = target + 14;
	} else if (strncmp(target, "bluesky:like:", 13) == 0) {
		*kind = ATP_TARGET_LIKE;
		rest = target + 13;
	} else if (strncmp(target, "bluesky:follow:", 15) == 0) {
		*kind = ATP_TARGET_FOLLOW;
		rest = target + 15;
	} else {
		return err_set(err,
		               "'%.120s' is not a Bluesky target (bluesky:post, "
		               "bluesky:reply:<did>, bluesky:like:<did>, bluesky:follow:<did>, "
		               "bluesky:delete)",
		               target);
	}
	if (!atp_valid_did(rest))
		return err_set(err, "the target '%.120s' does not end in a DID", target);
	if (did) {
		if (strlen(rest) >= cap)
			return err_set(err, "the DID of '%.120s' is too long", target);
		snprintf(did, cap, "%s", rest);
	}
	return 0;
}

struct send_ctx {
	struct atp_client *c;
	outbound_port_done_fn done;
	void *done_ud;
	enum atp_target_kind kind;
	char *text;
	size_t text_len;
	int64_t chain;
	char *key;
	char langs[ATP_POST_MAX_LANGS][ATP_LANG_MAX];
	size_t n_langs;
	struct atp_strong_ref parent;
	char uri[ATP_URI_MAX]; /* delete: the record */
};

static void ctx_free(struct send_ctx *x)
{
	free(x->text);
	free(x->key);
	free(x);
}

static void on_created(void *ud, const struct atp_result *r)
{
	struct send_ctx *x = ud;
	if (r->kind == ATP_OK) {
		const char *uri = json_string_or(r->json, "uri", NULL);
		x->done(x->done_ud, 1, uri, NULL);
	} else {
		/* A write that may have been carried out (its answer lost) is
		 * not "failed": outbound keeps the intent, and the reconcile
		 * finds the record by its key if it was made. */
		x->done(x->done_ud, r->maybe_applied ? OUTBOUND_PORT_UNKNOWN : 0, NULL, r->msg);
	}
	ctx_free(x);
}

static int post_now(struct send_ctx *x, const struct atp_reply_ref *reply, struct ga_err *err)
{
	const char *langs[ATP_POST_MAX_LANGS];
	for (size_t i = 0; i < x->n_langs; i++)
		langs[i] = x->langs[i];
	struct atp_post_in in = {
	        .text = x->text,
	        .text_len = x->text_len,
	        .reply = reply,
	        .langs = langs,
	        .n_langs = x->n_langs,
	        .chain = x->chain,
	        .idem_key = x->key,
	};
	return atp_post_create(x->c, &in, on_created, x, err) ? 0 : -1;
}

static void on_refs(void *ud, const struct atp_result *r)
{
	struct send_ctx *x = ud;
	struct atp_reply_ref ref;
	struct ga_err err = {{0}};
	if (r->kind != ATP_OK) {
		x->done(x->done_ud, 0, NULL, r->msg);
		ctx_free(x);
		return;
	}
	if (atp_reply_ref_from_json(r->json, &ref, &err) != 0 || post_now(x, &ref, &err) != 0) {
		char msg[GA_ERR_MSG_MAX];
		err_fmt(msg, sizeof msg, "the reply was not sent: %s", err.msg);
		x->done(x->done_ud, 0, NULL, msg);
		ctx_free(x);
	}
}

static int read_langs(const cJSON *extra, struct send_ctx *x, struct ga_err *err)
{
	const cJSON *langs = cJSON_GetObjectItemCaseSensitive(extra, "langs");
	if (!langs)
		return 0;
	if (!cJSON_IsArray(langs))
		return err_set(err, "extra.langs must be an array of language tags");
	const cJSON *l;
	cJSON_ArrayForEach(l, langs)
	{
		if (x->n_langs >= ATP_POST_MAX_LANGS)
			return err_set(err, "extra.langs names more than %d languages",
			               ATP_POST_MAX_LANGS);
		if (!cJSON_IsString(l) || strlen(l->valuestring) >= ATP_LANG_MAX)
			return err_set(err, "extra.langs must hold short strings (\"en\")");
		snprintf(x->langs[x->n_langs++], ATP_LANG_MAX, "%s", l->valuestring);
	}
	return 0;
}

/* createRecord app.bsky.graph.follow {subject: did, createdAt, gaKey}. */
static int follow_now(struct send_ctx *x, const char *did, struct ga_err *err)
{
	if (x->text_len != strlen(did) || memcmp(x->text, did, x->text_len) != 0)
		return err_set(err,
		               "a follow's text must be the DID the target names (%s), not "
		               "'%.80s'",
		               did, x->text);
	return atp_follow(x->c, did, x->key, on_created, x, err) ? 0 : -1;
}

/* The record an at:// URI names, if it is in own_did's repository: its
 * collection and rkey. -1 with err naming the URI otherwise. */
static int own_record(const char *uri, const char *own_did, char coll[128], char rkey[ATP_RKEY_MAX],
                      struct ga_err *err)
{
	char did[ATP_DID_MAX];
	if (strlen(uri) >= ATP_URI_MAX)
		return err_set(err, "the record to delete ('%.80s...') has a URI that is too long",
		               uri);
	if (atp_uri_parse(uri, did, sizeof did, coll, 128, rkey, ATP_RKEY_MAX, err) != 0)
		return -1;
	if (!own_did[0])
		return err_set(err, "%s cannot be deleted: the session's DID is not known", uri);
	if (strcmp(did, own_did) != 0)
		return err_set(err,
		               "%s is not in the agent's own repository (%s): only the agent's own "
		               "records are deleted",
		               uri, own_did);
	return 0;
}

static void on_deleted(void *ud, const struct atp_result *r)
{
	struct send_ctx *x = ud;
	if (r->kind == ATP_OK)
		x->done(x->done_ud, 1, x->uri, NULL); /* deleting what is gone succeeds */
	else
		x->done(x->done_ud, 0, NULL, r->msg);
	ctx_free(x);
}

static int delete_now(struct send_ctx *x, struct ga_err *err)
{
	struct atp_session_info si;
	atp_session_get(x->c, &si);
	char coll[128], rkey[ATP_RKEY_MAX];
	if (own_record(x->uri, si.did, coll, rkey, err) != 0)
		return -1;
	return atp_delete_record(x->c, coll, rkey, on_deleted, x, err) ? 0 : -1;
}

/* A delete before the session is known: sign in first, so the URI is
 * checked against the session's own DID, never waved through. */
static void on_login_for_delete(void *ud, const struct atp_result *r)
{
	struct send_ctx *x = ud;
	struct ga_err err = {{0}};
	if (r->kind != ATP_OK) {
		x->done(x->done_ud, 0, NULL, r->msg);
		ctx_free(x);
		return;
	}
	if (delete_now(x, &err) != 0) {
		char msg[GA_ERR_MSG_MAX];
		err_fmt(msg, sizeof msg, "the record was not deleted: %s", err.msg);
		x->done(x->done_ud, 0, NULL, msg);
		ctx_free(x);
	}
}

static int port_send(void *ud, const struct outbound_send *s, outbound_port_done_fn done,
                     void *done_ud)
{
	struct atp_client *c = ud;
	struct ga_err err = {{0}};
	enum atp_target_kind kind = ATP_TARGET_POST;
	char did[ATP_DID_MAX];
	if (atp_target_parse(s->target, &kind, did, sizeof did, &err) != 0) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "Bluesky send refused", "error", err.msg);
		return -1;
	}
	struct send_ctx *x = xcalloc(1, sizeof *x);
	x->c = c;
	x->done = done;
	x->done_ud = done_ud;
	x->kind = kind;
	x->text = xstrndup(s->text, s->text_len);
	x->text_len = s->text_len;
	x->chain = s->chain;
	x->key = s->idem_key ? xstrdup(s->idem_key) : NULL;
	bool started = false;
	if (kind == ATP_TARGET_FOLLOW) {
		started = follow_now(x, did, &err) == 0;
	} else if (kind == ATP_TARGET_DELETE) {
		struct atp_session_info si;
		atp_session_get(c, &si);
		if (x->text_len >= ATP_URI_MAX || strlen(x->text) != x->text_len) {
			err_set(&err,
			        "a delete's text must be the at:// URI of one of our records");
		} else {
			snprintf(x->uri, sizeof x->uri, "%s", x->text);
			if (si.did[0])
				started = delete_now(x, &err) == 0;
			else
				started = atp_login(c, on_login_for_delete, x, &err) != 0;
		}
	} else if (kind == ATP_TARGET_LIKE) {
		const cJSON *subj = cJSON_GetObjectItemCaseSensitive(s->extra, "subject");
		const char *uri = json_string_or(subj, "uri", NULL);
		const char *cid = json_string_or(subj, "cid", NULL);
		char author[ATP_DID_MAX];
		if (!uri || !cid || strlen(uri) >= ATP_URI_MAX || strlen(cid) >= ATP_CID_MAX) {
			err_set(&err, "a like needs extra {\"subject\": {\"uri\", \"cid\"}}");
		} else if (atp_uri_parse(uri, author, sizeof author, NULL, 0, NULL, 0, &err) == 0 &&
		           strcasecmp(author, did) != 0) {
			err_set(&err, "the liked post %s is not by %s, whom the target names", uri,
			        did);
		} else if (!err.msg[0]) {
			struct atp_strong_ref ref;
			snprintf(ref.uri, sizeof ref.uri, "%s", uri);
			snprintf(ref.cid, sizeof ref.cid, "%s", cid);
			started = atp_like(c, &ref, x->key, on_created, x, &err) != 0;
		}
	} else if (read_langs(s->extra, x, &err) == 0) {
		if (kind == ATP_TARGET_POST) {
			started = post_now(x, NULL, &err) == 0;
		} else {
			const cJSON *reply = cJSON_GetObjectItemCaseSensitive(s->extra, "reply");
			const cJSON *parent = cJSON_GetObjectItemCaseSensitive(reply, "parent");
			const char *puri = json_string_or(parent, "uri", NULL);
			const char *pcid = json_string_or(parent, "cid", NULL);
			char author[ATP_DID_MAX];
			struct atp_reply_ref ref;
			if (!puri || !pcid || strlen(puri) >= ATP_URI_MAX ||
			    strlen(pcid) >= ATP_CID_MAX) {
				err_set(&err,
				        "a reply needs extra {\"reply\": {\"root\": {uri, cid}, "
				        "\"parent\": {uri, cid}}}");
			} else if (atp_uri_parse(puri, author, sizeof author, NULL, 0, NULL, 0,
			                         &err) != 0) {
				/* err says why */
			} else if (strcasecmp(author, did) != 0) {
				err_set(&err,
				        "the post answered (%s) is not by %s, whom the target "
				        "names",
				        puri, did);
			} else if (cJSON_GetObjectItemCaseSensitive(reply, "root")) {
				started = atp_reply_ref_from_json(reply, &ref, &err) == 0 &&
				          post_now(x, &ref, &err) == 0;
			} else {
				snprintf(x->parent.uri, sizeof x->parent.uri, "%s", puri);
				snprintf(x->parent.cid, sizeof x->parent.cid, "%s", pcid);
				started = atp_reply_resolve(c, &x->parent, on_refs, x, &err) != 0;
			}
		}
	}
	if (!started) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "Bluesky send not started", "target", s->target,
		       "error", err.msg);
		ctx_free(x);
		return -1;
	}
	return 0;
}

struct rec_ctx {
	char *key;
	char subject[ATP_DID_MAX]; /* follow: the DID followed; "" otherwise */
	char uri[ATP_URI_MAX];     /* delete: the record deleted */
	bool logged_in;            /* delete: a sign-in was already asked for */
	void (*done)(void *done_ud, int exists, const char *artifact);
	void *done_ud;
};

static void on_listed(void *ud, const struct atp_result *r)
{
	struct rec_ctx *x = ud;
	if (r->kind != ATP_OK) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "reconcile: own records could not be listed",
		       "key", x->key, "error", r->msg);
		x->done(x->done_ud, -1, NULL);
	} else {
		const cJSON *recs = cJSON_GetObjectItemCaseSensitive(r->json, "records");
		const cJSON *it;
		const char *found = NULL;
		cJSON_ArrayForEach(it, recs)
		{
			const cJSON *val = cJSON_GetObjectItemCaseSensitive(it, "value");
			const char *k = atp_record_key(val);
			/* a follow made without our key (by hand, or by an older
			 * version) is the same follow: one per subject */
			if ((k && strcmp(k, x->key) == 0) ||
			    (x->subject[0] &&
			     strcmp(json_string_or(val, "subject", ""), x->subject) == 0)) {
				found = json_string_or(it, "uri", NULL);
				break;
			}
		}
		if (!cJSON_IsArray(recs))
			x->done(x->done_ud, -1, NULL);
		else if (found)
			x->done(x->done_ud, 1, found);
		else
			x->done(x->done_ud, 0, NULL);
	}
	free(x->key);
	free(x);
}

/* A delete's record: gone (RecordNotFound) → done; still there → not
 * deleted; anything else → unknown. */
static void on_record_read(void *ud, const struct atp_result *r)
{
	struct rec_ctx *x = ud;
	if (r->kind == ATP_OK) {
		x->done(x->done_ud, 0, NULL);
	} else if (r->kind == ATP_ERR_NOT_FOUND) {
		x->done(x->done_ud, 1, x->uri);
	} else {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "reconcile: the record could not be read", "uri",
		       x->uri, "error", r->msg);
		x->done(x->done_ud, -1, NULL);
	}
	free(x->key);
	free(x);
}

/* The at:// URI at the end of a delete's key ("prune:at://…"), or NULL. */
static const char *key_uri(const char *key)
{
	const char *u = strstr(key, "at://");
	return u && strlen(u) < ATP_URI_MAX ? u : NULL;
}

struct rec_login {
	struct atp_client *c;
	struct rec_ctx *x;
};

static void reconcile_delete(struct atp_client *c, struct rec_ctx *x);

static void on_login_for_reconcile(void *ud, const struct atp_result *r)
{
	struct rec_login *l = ud;
	struct rec_ctx *x = l->x;
	struct atp_client *c = l->c;
	free(l);
	if (r->kind != ATP_OK) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "reconcile of a delete: no session", "key", x->key,
		       "error", r->msg);
		x->done(x->done_ud, -1, NULL);
		free(x->key);
		free(x);
		return;
	}
	reconcile_delete(c, x);
}

static void reconcile_delete(struct atp_client *c, struct rec_ctx *x)
{
	struct ga_err err = {{0}};
	struct atp_session_info si;
	atp_session_get(c, &si);
	if (!si.did[0]) {
		/* the repository is the session's: sign in first (at most once:
		 * a session that came back without a DID is refused below) */
		if (!x->logged_in) {
			x->logged_in = true;
			struct rec_login *l = xcalloc(1, sizeof *l);
			l->c = c;
			l->x = x;
			if (atp_login(c, on_login_for_reconcile, l, &err) != 0)
				return;
			free(l);
		}
	}
	const char *uri = key_uri(x->key);
	char coll[128], rkey[ATP_RKEY_MAX];
	if (!uri) {
		err_set(&err, "the key names no at:// URI, so the record cannot be asked about");
	} else if (own_record(uri, si.did, coll, rkey, &err) == 0) {
		snprintf(x->uri, sizeof x->uri, "%s", uri);
		if (atp_get_record(c, uri, on_record_read, x, &err) != 0)
			return;
	}
	log_kv(LOG_LEVEL_WARN, LOG_COMP, "reconcile of a delete could not start", "key", x->key,
	       "error", err.msg);
	x->done(x->done_ud, -1, NULL);
	free(x->key);
	free(x);
}

static void port_reconcile(void *ud, const char *idem_key, const char *target,
                           void (*done)(void *done_ud, int exists, const char *artifact),
                           void *done_ud)
{
	struct atp_client *c = ud;
	enum atp_target_kind kind = ATP_TARGET_POST;
	struct ga_err err = {{0}};
	char did[ATP_DID_MAX] = "";
	/* "bluesky:prune": the target older versions journalled their
	 * deletions under (same key shape "prune:<uri>") */
	if (idem_key && target && strcmp(target, ATP_LEGACY_PRUNE_TARGET) == 0)
		kind = ATP_TARGET_DELETE;
	else if (!idem_key || atp_target_parse(target, &kind, did, sizeof did, &err) != 0) {
		done(done_ud, -1, NULL);
		return;
	}
	struct rec_ctx *x = xcalloc(1, sizeof *x);
	x->key = xstrdup(idem_key);
	x->done = done;
	x->done_ud = done_ud;
	if (kind == ATP_TARGET_DELETE) {
		reconcile_delete(c, x);
		return;
	}
	if (kind == ATP_TARGET_FOLLOW)
		snprintf(x->subject, sizeof x->subject, "%s", did);
	const char *coll = kind == ATP_TARGET_LIKE     ? ATP_COLL_LIKE
	                   : kind == ATP_TARGET_FOLLOW ? ATP_COLL_FOLLOW
	                                               : ATP_COLL_POST;
	if (!atp_list_records(c, coll, ATP_PORT_RECONCILE_RECORDS, NULL, on_listed, x, &err)) {
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "reconcile could not start", "error", err.msg);
		free(x->key);
		free(x);
		done(done_ud, -1, NULL);
	}
}

void atp_port_init(struct outbound_port *port, struct atp_client *c, uint64_t min_interval_ms)
{
	memset(port, 0, sizeof *port);
	port->platform = CONV_PLATFORM_BLUESKY;
	port->send = port_send;
	port->reconcile = port_reconcile;
	port->min_interval_ms = min_interval_ms ? min_interval_ms : ATP_PORT_MIN_INTERVAL_MS;
	port->marker_in_text = false;
	port->ud = c;
}

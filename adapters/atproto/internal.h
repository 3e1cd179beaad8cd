/*
 * atproto internal — what the client's files share; not part of the public
 * API. Calls go one way: endpoints.c (helpers, composite operations,
 * atp_cancel) → atproto.c (the core: the queue's policy — the queue itself
 * is adapters/http/callq.h —, dispatch, classification) → session.c (the
 * session's tokens, file and rules); post.c and ratelimit.c are pure and
 * call none of them.
 */
#ifndef GA_ADAPTERS_ATPROTO_INTERNAL_H
#define GA_ADAPTERS_ATPROTO_INTERNAL_H

#include "adapters/atproto/atproto.h"
#include "adapters/http/callq.h"

enum atp_call_kind {
	ATP_CALL_USER = 0,       /* an XRPC call with the caller's callback */
	ATP_CALL_ENSURE,         /* atp_login: no request, just a usable session */
	ATP_CALL_CREATE_SESSION, /* session steps: results go to the session */
	ATP_CALL_REFRESH_SESSION,
};

struct atp_call {
	struct callq_call q; /* first: the queue's part (id, attempts, backoff, status) */
	struct atp_client *c;
	enum atp_call_kind kind;
	char *nsid;
	bool procedure;
	char *query; /* encoded, without '?' */
	cJSON *body; /* procedures */
	char *what;
	bool needs_session; /* sends the access token */
	bool self_repo;     /* repo = own DID, filled at send time */
	bool idempotent;
	int points;
	enum atp_rate_class rclass;
	bool auth_retried;
	atp_done_fn cb;
	void *ud;
};

struct atp_op; /* endpoints.c: composite operations */

struct atp_client {
	struct http_client *http;
	struct atp_config cfg;
	struct atp_rate rate;
	struct callq *q; /* the queue, its pump and timer, retries (callq.h) */
	uv_timer_t *refresh_timer;
	bool closing;
	struct atp_stats stats;
	/* session */
	char did[ATP_DID_MAX];
	char handle[ATP_HANDLE_MAX + 1];
	char *access, *refresh;
	int64_t access_exp_ms, refresh_exp_ms; /* -1 / 0 unknown */
	int64_t obtained_ms;                   /* 0 = loaded from the file */
	bool from_file;
	bool session_busy;  /* a session step is queued or in flight */
	bool force_refresh; /* the server refused the access token */
	bool refresh_dead;  /* the server refused the refresh token */
	bool logins_refused;
	int creates; /* createSession requests sent by this client */
	int64_t last_create_ms;
	int session_fails;
	int64_t session_not_before_ms;
	char session_error[GA_ERR_MSG_MAX];
	char login_error[GA_ERR_MSG_MAX];
	/* composite operations in progress (endpoints.c) */
	struct atp_op *ops;
};

struct atp_call_spec {
	enum atp_call_kind kind;
	const char *nsid;
	bool procedure;
	const char *query;
	const cJSON *body; /* copied */
	const char *what;
	bool needs_session;
	bool self_repo;
	bool idempotent;
	int points;
};

/* ---- atproto.c (the core) ---- */
int64_t atp_now_ms(const struct atp_client *c);
uint64_t atp_enqueue(struct atp_client *c, const struct atp_call_spec *s, atp_done_fn cb, void *ud,
                     struct ga_err *err);
/* Starts the pump soon (on the loop, never inside the caller). */
void atp_kick(struct atp_client *c);
/* Cancels a queued or in-flight call (not a composite operation) by id:
 * 0, or -1 when it is not one. */
int atp_call_cancel(struct atp_client *c, uint64_t id);
bool atp_valid_nsid(const char *s);

/* ---- session.c (the session; it calls nothing of the core) ---- */
/* Registers a secret with the log's redaction ("" and NULL ignored). */
void atp_secret(const char *s);
/* Forgets the tokens (and their redaction). */
void atp_session_clear(struct atp_client *c);
/* Writes the session file (cfg.session_path, atomically; none: nothing). */
void atp_session_persist(struct atp_client *c, int64_t now);
/* Reads the session file, when it is for this service and account. */
void atp_session_load(struct atp_client *c);
/* Is the access token usable now (not refused, not within the margin
 * before its exp)? */
bool atp_session_fresh(const struct atp_client *c, int64_t now);
/* When the idle refresh is due (epoch ms), -1 when the exp is unknown. */
int64_t atp_session_refresh_at(const struct atp_client *c);
enum atp_session_next {
	ATP_SESSION_READY,   /* fresh: calls go */
	ATP_SESSION_BUSY,    /* a step is queued or in flight: calls wait */
	ATP_SESSION_REFRESH, /* a refreshSession step is due */
	ATP_SESSION_LOGIN,   /* a createSession step is due */
	ATP_SESSION_FAIL,    /* none can be had now (why says) */
};
/* What a call that needs the session should do now. */
enum atp_session_next atp_session_next(const struct atp_client *c, int64_t now, char *why,
                                       size_t cap);
/* A session step's call (kind ATP_CALL_CREATE_SESSION or
 * ATP_CALL_REFRESH_SESSION), not queued (callq_push_front gives it its id);
 * caller owns it. */
struct atp_call *atp_session_call(struct atp_client *c, enum atp_call_kind kind);
/* The step k ended with kind (json its answer): the session is taken,
 * dropped, refused or backed off. True when the calls waiting for the
 * session must fail now, with *waiting as their kind (the reason is
 * c->session_error). */
bool atp_session_done(struct atp_client *c, const struct atp_call *k, enum atp_error_kind kind,
                      const cJSON *json, const char *msg, const char *xrpc_error, int64_t now,
                      enum atp_error_kind *waiting);

#endif

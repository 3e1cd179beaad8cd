/*
 * atproto internal — what atproto.c (the client) and endpoints.c (helpers,
 * composite operations) share. Not part of the public API.
 */
#ifndef GA_ADAPTERS_ATPROTO_INTERNAL_H
#define GA_ADAPTERS_ATPROTO_INTERNAL_H

#include "adapters/atproto/atproto.h"

enum atp_call_kind {
	ATP_CALL_USER = 0,       /* an XRPC call with the caller's callback */
	ATP_CALL_ENSURE,         /* atp_login: no request, just a usable session */
	ATP_CALL_CREATE_SESSION, /* session steps: results go to the session */
	ATP_CALL_REFRESH_SESSION,
};

struct atp_call {
	struct atp_call *prev, *next;
	struct atp_client *c;
	uint64_t id;
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
	int attempts;
	int transient_fails;
	int rate_hits;
	bool auth_retried;
	enum atp_wait_reason logged_wait;
	int64_t enqueued_ms;
	int64_t not_before_ms;
	uint64_t http_id;
	int status;
	atp_done_fn cb;
	void *ud;
};

struct atp_op; /* endpoints.c: composite operations */

struct atp_client {
	struct http_client *http;
	struct atp_config cfg;
	struct atp_rate rate;
	struct atp_call *head, *tail;
	size_t n_queued;
	struct atp_call *inflight;
	uv_timer_t *timer;
	uv_timer_t *refresh_timer;
	uint64_t next_id;
	bool closing;
	bool http_closed;
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

int64_t atp_now_ms(const struct atp_client *c);
uint64_t atp_enqueue(struct atp_client *c, const struct atp_call_spec *s, atp_done_fn cb, void *ud,
                     struct ga_err *err);
/* Starts the pump soon (on the loop, never inside the caller). */
void atp_kick(struct atp_client *c);
/* Cancels a composite operation by id: 0, or -1 when it is not one. */
int atp_op_cancel(struct atp_client *c, uint64_t id);
bool atp_valid_nsid(const char *s);

#endif

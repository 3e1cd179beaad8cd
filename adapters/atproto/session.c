/*
 * session — the client's Bluesky session (see internal.h): the tokens, the
 * file they persist in, whether the access token is still fresh, whether a
 * login may be tried, and what the answer to a session step
 * (createSession, refreshSession) does to them. The client core
 * (atproto.c) queues the steps and fails the calls that wait for them;
 * nothing here calls back into it (the time comes in as now), so the calls
 * between the two files go one way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "adapters/atproto/internal.h"
#include "common/fsx.h"
#include "common/json.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "common/xalloc.h"

#define LOG_COMP         "atproto"
#define SESSION_FILE_MAX ((size_t)64 * 1024)

/* base64url without padding (JWT segments) into out; -1 on a bad digit. */
static int b64url_decode(const char *s, size_t n, unsigned char *out, size_t cap, size_t *out_len)
{
	uint32_t acc = 0;
	int bits = 0;
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		int v;
		if (ch >= 'A' && ch <= 'Z')
			v = ch - 'A';
		else if (ch >= 'a' && ch <= 'z')
			v = ch - 'a' + 26;
		else if (ch >= '0' && ch <= '9')
			v = ch - '0' + 52;
		else if (ch == '-' || ch == '+')
			v = 62;
		else if (ch == '_' || ch == '/')
			v = 63;
		else if (ch == '=')
			break;
		else
			return -1;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o >= cap)
				return -1;
			out[o++] = (unsigned char)((acc >> bits) & 0xFF);
		}
	}
	*out_len = o;
	return 0;
}

int64_t atp_jwt_exp_ms(const char *jwt)
{
	if (!jwt)
		return -1;
	const char *d1 = strchr(jwt, '.');
	const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
	if (!d1 || !d2 || d2 - d1 - 1 > 4096)
		return -1;
	unsigned char buf[3100];
	size_t n = 0;
	if (b64url_decode(d1 + 1, (size_t)(d2 - d1 - 1), buf, sizeof buf, &n) != 0)
		return -1;
	cJSON *p = cJSON_ParseWithLength((const char *)buf, n);
	const cJSON *exp = cJSON_GetObjectItemCaseSensitive(p, "exp");
	int64_t ms = -1;
	if (cJSON_IsNumber(exp) && exp->valuedouble > 0 && exp->valuedouble < 1e13)
		ms = (int64_t)exp->valuedouble * 1000;
	cJSON_Delete(p);
	return ms;
}

void atp_secret(const char *s)
{
	if (s && *s)
		log_add_secret(s);
}

/* The tokens rotate on every refresh: the old ones are forgotten by the
 * log's redaction (here) as the new ones are registered, so the table never
 * fills up. They are never logged by this client; redaction is the safety
 * net. */
void atp_session_clear(struct atp_client *c)
{
	log_remove_secret(c->access);
	log_remove_secret(c->refresh);
	free(c->access);
	free(c->refresh);
	c->access = c->refresh = NULL;
	c->access_exp_ms = c->refresh_exp_ms = 0;
}

void atp_session_persist(struct atp_client *c, int64_t now)
{
	if (!c->cfg.session_path)
		return;
	cJSON *o = cJSON_CreateObject();
	char ts[TIME_ISO_LEN + 1];
	cJSON_AddStringToObject(o, "service", c->cfg.service);
	cJSON_AddStringToObject(o, "identifier", c->cfg.identifier ? c->cfg.identifier : "");
	cJSON_AddStringToObject(o, "did", c->did);
	cJSON_AddStringToObject(o, "handle", c->handle);
	if (c->access && c->refresh) {
		cJSON_AddStringToObject(o, "accessJwt", c->access);
		cJSON_AddStringToObject(o, "refreshJwt", c->refresh);
	}
	cJSON_AddStringToObject(o, "savedAt", time_format_iso(now, ts));
	char *text = json_print(o);
	cJSON_Delete(o);
	struct ga_err err = {{0}};
	if (fsx_write_atomic(c->cfg.session_path, text, strlen(text), &err) != 0)
		log_kv(LOG_LEVEL_WARN, LOG_COMP,
		       "the Bluesky session could not be saved; it lives in memory until exit",
		       "error", err.msg);
	free(text);
}

static int session_take(struct atp_client *c, const cJSON *o, int64_t now, char *msg, size_t cap)
{
	const char *did = json_string_or(o, "did", NULL);
	const char *handle = json_string_or(o, "handle", "");
	const char *acc = json_string_or(o, "accessJwt", NULL);
	const char *ref = json_string_or(o, "refreshJwt", NULL);
	if (!did || !atp_valid_did(did) || !acc || !*acc || !ref || !*ref ||
	    strlen(handle) > ATP_HANDLE_MAX) {
		err_fmt(msg, cap, "the session answer lacks did, accessJwt or refreshJwt");
		return -1;
	}
	atp_session_clear(c);
	atp_secret(acc);
	atp_secret(ref);
	c->access = xstrdup(acc);
	c->refresh = xstrdup(ref);
	snprintf(c->did, sizeof c->did, "%s", did);
	snprintf(c->handle, sizeof c->handle, "%s", handle);
	c->access_exp_ms = atp_jwt_exp_ms(acc);
	c->refresh_exp_ms = atp_jwt_exp_ms(ref);
	c->obtained_ms = now;
	c->force_refresh = false;
	c->refresh_dead = false;
	return 0;
}

void atp_session_load(struct atp_client *c)
{
	if (!c->cfg.session_path)
		return;
	struct ga_err err = {{0}};
	size_t len = 0;
	char *text = fsx_read_file(c->cfg.session_path, SESSION_FILE_MAX, &len, &err);
	if (!text)
		return; /* none yet (or unreadable: a login will make a new one) */
	cJSON *o = cJSON_ParseWithLength(text, len);
	free(text);
	const char *svc = json_string_or(o, "service", "");
	const char *ident = json_string_or(o, "identifier", "");
	if (!cJSON_IsObject(o) || strcmp(svc, c->cfg.service) != 0 ||
	    strcasecmp(ident, c->cfg.identifier ? c->cfg.identifier : "") != 0) {
		log_kv(LOG_LEVEL_INFO, LOG_COMP,
		       "the saved Bluesky session is for another service or account; not used",
		       "path", c->cfg.session_path);
		cJSON_Delete(o);
		return;
	}
	char msg[GA_ERR_MSG_MAX];
	/* Its age is unknown: judged by its exp only (obtained 0). */
	if (session_take(c, o, 0, msg, sizeof msg) == 0) {
		c->from_file = true;
		log_kv(LOG_LEVEL_INFO, LOG_COMP, "Bluesky session loaded", "did", c->did, "handle",
		       c->handle);
	}
	cJSON_Delete(o);
}

/* The margin before exp at which the access token counts as expiring. A
 * token that lives shorter than four margins gets a quarter of its life:
 * otherwise a short-lived token would be refreshed before every request. */
static int64_t margin_ms(const struct atp_client *c)
{
	int64_t m = c->cfg.refresh_margin_ms;
	if (c->obtained_ms > 0 && c->access_exp_ms > c->obtained_ms) {
		int64_t life = c->access_exp_ms - c->obtained_ms;
		if (life / 4 < m)
			m = life / 4;
	}
	return m;
}

bool atp_session_fresh(const struct atp_client *c, int64_t now)
{
	if (!c->access || c->force_refresh)
		return false;
	if (c->access_exp_ms <= 0)
		return true; /* unknown: the server will say (reactive refresh) */
	return now < c->access_exp_ms - margin_ms(c);
}

int64_t atp_session_refresh_at(const struct atp_client *c)
{
	return c->access_exp_ms > 0 ? c->access_exp_ms - margin_ms(c) : -1;
}

struct atp_call *atp_session_call(struct atp_client *c, enum atp_call_kind kind)
{
	struct atp_call *k = xcalloc(1, sizeof *k);
	k->c = c;
	k->kind = kind;
	k->procedure = true;
	k->rclass = ATP_RL_SESSION;
	if (kind == ATP_CALL_CREATE_SESSION) {
		k->nsid = xstrdup("com.atproto.server.createSession");
		k->what = xasprintf("log in to %s as %s (createSession)", c->cfg.service,
		                    c->cfg.identifier ? c->cfg.identifier : "?");
		k->body = cJSON_CreateObject();
		cJSON_AddStringToObject(k->body, "identifier", c->cfg.identifier);
		cJSON_AddStringToObject(k->body, "password", c->cfg.password);
	} else {
		k->nsid = xstrdup("com.atproto.server.refreshSession");
		k->what = xasprintf("refresh the Bluesky session of %s (refreshSession)",
		                    c->handle[0] ? c->handle : c->did);
	}
	return k;
}

/* Can a createSession be sent now? Fills why when not. */
static bool login_allowed(const struct atp_client *c, int64_t now, char *why, size_t cap)
{
	if (c->logins_refused) {
		err_fmt(why, cap, "%s", c->login_error);
		return false;
	}
	if (!c->cfg.identifier || !c->cfg.password) {
		err_fmt(why, cap,
		        "there is no Bluesky session and no credentials to make one: "
		        "set " ATP_USERNAME_VAR " and " ATP_PASSWORD_VAR);
		return false;
	}
	if (c->creates > 0 && now - c->last_create_ms < ATP_LOGIN_MIN_INTERVAL_MS) {
		err_fmt(why, cap,
		        "the Bluesky session was lost again %lld s after the last login; no new "
		        "login before %lld s have passed (a login storm gets the account "
		        "limited)%s%s",
		        (long long)((now - c->last_create_ms) / 1000),
		        (long long)(ATP_LOGIN_MIN_INTERVAL_MS / 1000),
		        c->session_error[0] ? ": " : "", c->session_error);
		return false;
	}
	return true;
}

enum atp_session_next atp_session_next(const struct atp_client *c, int64_t now, char *why,
                                       size_t cap)
{
	if (c->session_busy)
		return ATP_SESSION_BUSY;
	if (atp_session_fresh(c, now))
		return ATP_SESSION_READY;
	if (c->session_not_before_ms > now) {
		err_fmt(why, cap, "no Bluesky session (retrying after %lld s): %s",
		        (long long)((c->session_not_before_ms - now + 999) / 1000),
		        c->session_error);
		return ATP_SESSION_FAIL;
	}
	if (c->refresh && !c->refresh_dead)
		return ATP_SESSION_REFRESH;
	return login_allowed(c, now, why, cap) ? ATP_SESSION_LOGIN : ATP_SESSION_FAIL;
}

bool atp_session_done(struct atp_client *c, const struct atp_call *k, enum atp_error_kind kind,
                      const cJSON *json, const char *msg, const char *xrpc_error, int64_t now,
                      enum atp_error_kind *waiting)
{
	c->session_busy = false;
	bool create = k->kind == ATP_CALL_CREATE_SESSION;
	if (kind == ATP_OK) {
		char m[GA_ERR_MSG_MAX];
		if (session_take(c, json, now, m, sizeof m) != 0) {
			err_fmt(c->session_error, sizeof c->session_error,
			        "Bluesky's answer to the attempt to %s was unusable: %s", k->what,
			        m);
			goto failed;
		}
		c->session_error[0] = '\0';
		c->session_fails = 0;
		c->session_not_before_ms = 0;
		atp_session_persist(c, now);
		log_kv(LOG_LEVEL_INFO, LOG_COMP,
		       create ? "Bluesky login (createSession)" : "Bluesky session refreshed",
		       "did", c->did, "handle", c->handle);
		return false;
	}
	if (kind == ATP_ERR_CANCELLED)
		return false;
	err_fmt(c->session_error, sizeof c->session_error, "%s", msg);
	if (!create && (kind == ATP_ERR_AUTH || kind == ATP_ERR_INVALID)) {
		/* The refresh token is expired or revoked: only a login helps.
		 * That is decided by the next call that needs the session. */
		log_kv(LOG_LEVEL_WARN, LOG_COMP, "the Bluesky refresh token was refused", "error",
		       msg);
		c->refresh_dead = true;
		atp_session_clear(c);
		atp_session_persist(c, now);
		return false;
	}
	if (create &&
	    (kind == ATP_ERR_AUTH || kind == ATP_ERR_INVALID || kind == ATP_ERR_FORBIDDEN)) {
		c->logins_refused = true;
		err_fmt(c->login_error, sizeof c->login_error,
		        "%s: check " ATP_USERNAME_VAR " and " ATP_PASSWORD_VAR
		        " (an app password from Bluesky's settings); no further login is tried "
		        "until restart",
		        msg);
		snprintf(c->session_error, sizeof c->session_error, "%s", c->login_error);
		log_kv(LOG_LEVEL_ERROR, LOG_COMP, "Bluesky login refused", "error", msg, "xrpc",
		       xrpc_error ? xrpc_error : "");
		*waiting = ATP_ERR_AUTH;
		return true;
	}
failed:
	/* Transient, rate limited, malformed: back off the whole session so the
	 * waiting calls do not each start another step. */
	c->session_fails++;
	c->session_not_before_ms =
	        now + (int64_t)callq_backoff_ms(c->cfg.backoff_base_ms, c->cfg.backoff_cap_ms,
	                                        c->session_fails, 0, -1);
	*waiting = c->logins_refused              ? ATP_ERR_AUTH
	           : kind == ATP_ERR_RATE_LIMITED ? ATP_ERR_RATE_LIMITED
	           : kind == ATP_ERR_TRANSIENT    ? ATP_ERR_TRANSIENT
	                                          : ATP_ERR_AUTH;
	return true;
}

void atp_session_get(const struct atp_client *c, struct atp_session_info *out)
{
	memset(out, 0, sizeof *out);
	out->active = c->access != NULL;
	snprintf(out->did, sizeof out->did, "%s", c->did);
	snprintf(out->handle, sizeof out->handle, "%s", c->handle);
	out->access_exp_ms = c->access_exp_ms > 0 ? c->access_exp_ms : 0;
	out->refresh_exp_ms = c->refresh_exp_ms > 0 ? c->refresh_exp_ms : 0;
	out->from_file = c->from_file;
}

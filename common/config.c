/*
 * config — loading and validating the runtime settings. See config.h.
 */
#include "common/config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fsx.h"
#include "common/xalloc.h"

extern char **environ;

/*
 * Every variable general-agent reads, once. config_load() reads the ones
 * with a parser here (INT, OPT_INT) through the table and the others by
 * hand below; get() refuses a name missing from this table (a test-time
 * abort), so the list cannot drift from the code. The unknown-variable
 * warning suggests from this table.
 */
enum var_kind {
	VAR_CUSTOM,  /* read by hand in config_load */
	VAR_INT,     /* int64_t field, default def */
	VAR_OPT_INT, /* int64_t field, -1 when unset (the module default applies) */
	VAR_PROCESS, /* read elsewhere: the process environment, or a platform
	                service's tunable read through ga_svc_env_ms (cmd/services.h:
	                the environment, then .env) */
};

struct config_var {
	const char *name;
	enum var_kind kind;
	size_t off; /* offsetof(struct ga_config, field) for INT / OPT_INT */
	int64_t def, lo, hi;
};

#define F(field) offsetof(struct ga_config, field)
#define SP(field)                                                                                  \
	(offsetof(struct ga_config, space) + offsetof(struct config_space_tunables, field))
static const struct config_var VARS[] = {
        {"AGENT_HOME", VAR_PROCESS, 0, 0, 0, 0},
        {"MEMORY_DIR", VAR_CUSTOM, 0, 0, 0, 0},
        {"AGENT_NAME", VAR_CUSTOM, 0, 0, 0, 0},
        {"AI_GATEWAY_API_KEY", VAR_CUSTOM, 0, 0, 0, 0},
        {"AI_GATEWAY_MODEL", VAR_CUSTOM, 0, 0, 0, 0},
        {"AI_GATEWAY_BASE_URL", VAR_CUSTOM, 0, 0, 0, 0},
        {"LLM_BASE_URL", VAR_CUSTOM, 0, 0, 0, 0},
        {"LLM_API_KEY", VAR_CUSTOM, 0, 0, 0, 0},
        {"LLM_MODEL", VAR_CUSTOM, 0, 0, 0, 0},
        {"LLM_DAILY_TOKEN_BUDGET", VAR_INT, F(llm_daily_token_budget), 0, 0,
         INT64_C(1000000000000)},
        {"OWNER_BLUESKY_SOCIAL_HANDLE", VAR_CUSTOM, 0, 0, 0, 0},
        {"OWNER_BLUESKY_SOCIAL_HANDLE_DID", VAR_CUSTOM, 0, 0, 0, 0},
        {"AGENT_BLUESKY_USERNAME", VAR_CUSTOM, 0, 0, 0, 0},
        {"AGENT_BLUESKY_PASSWORD", VAR_CUSTOM, 0, 0, 0, 0},
        {"BLUESKY_SERVICE", VAR_CUSTOM, 0, 0, 0, 0},
        {"AGENT_GITHUB_USERNAME", VAR_CUSTOM, 0, 0, 0, 0},
        {"AGENT_GITHUB_TOKEN", VAR_CUSTOM, 0, 0, 0, 0},
        {"GITHUB_API_URL", VAR_CUSTOM, 0, 0, 0, 0},
        {"OWNER_GITHUB_USERNAME", VAR_CUSTOM, 0, 0, 0, 0},
        {"SPACE_URL", VAR_CUSTOM, 0, 0, 0, 0},
        {"MAX_ACL", VAR_CUSTOM, 0, 0, 0, 0},
        {"DASHBOARD_ADDR", VAR_CUSTOM, 0, 0, 0, 0},
        {"DASHBOARD_TOKEN", VAR_CUSTOM, 0, 0, 0, 0},
        {"REDIS_URL", VAR_CUSTOM, 0, 0, 0, 0},
        {"LOG_LEVEL", VAR_CUSTOM, 0, 0, 0, 0},
        {"LOG_FORMAT", VAR_CUSTOM, 0, 0, 0, 0},
        /* the gate (loop prevention) */
        {"MAX_BOT_CHAIN_LENGTH", VAR_INT, F(max_bot_chain_length),
         CONFIG_DEFAULT_MAX_BOT_CHAIN_LENGTH, 1, 100},
        {"GATE_MAX_EVENTS", VAR_INT, F(gate_max_events), CONFIG_DEFAULT_GATE_MAX_EVENTS, 1, 128},
        {"GATE_WINDOW_MS", VAR_INT, F(gate_window_ms), CONFIG_DEFAULT_GATE_WINDOW_MS, 1,
         CONFIG_MAX_MS},
        {"GATE_COOLDOWN_MS", VAR_INT, F(gate_cooldown_ms), CONFIG_DEFAULT_GATE_COOLDOWN_MS, 0,
         CONFIG_MAX_MS},
        /* agent-space client timing (adapters/space/tunables.h, modules/space/link.h) */
        {"GA_SPACE_MDNS_TIMEOUT_MS", VAR_OPT_INT, SP(mdns_timeout_ms), -1, 1, CONFIG_MAX_MS},
        {"GA_SPACE_MDNS", VAR_OPT_INT, SP(mdns), -1, 0, 1},
        {"GA_SPACE_LOCALHOST_URL", VAR_CUSTOM, 0, 0, 0, 0},
        {"GA_SPACE_MDNS_NAME", VAR_CUSTOM, 0, 0, 0, 0},
        {"GA_SPACE_DISCOVERY_RETRY_MS", VAR_OPT_INT, SP(discovery_retry_ms), -1, 1, CONFIG_MAX_MS},
        {"GA_SPACE_BACKOFF_MS", VAR_CUSTOM, 0, 0, 0, 0},
        {"GA_SPACE_JITTER_PCT", VAR_OPT_INT, SP(jitter_pct), -1, 0, 100},
        {"GA_SPACE_CONNECT_TIMEOUT_MS", VAR_OPT_INT, SP(connect_timeout_ms), -1, 1, CONFIG_MAX_MS},
        {"GA_SPACE_PING_MS", VAR_OPT_INT, SP(ping_ms), -1, 1, CONFIG_MAX_MS},
        {"GA_SPACE_CLOSE_WAIT_MS", VAR_OPT_INT, SP(close_wait_ms), -1, 0, CONFIG_MAX_MS},
        {"GA_SPACE_REPLACED_LIMIT", VAR_OPT_INT, SP(replaced_limit), -1, 1, 1000},
        {"GA_SPACE_REPLACED_WINDOW_MS", VAR_OPT_INT, SP(replaced_window_ms), -1, 1, CONFIG_MAX_MS},
        {"GA_SPACE_TYPING_BASE_MS", VAR_OPT_INT, SP(typing_base_ms), -1, 0, CONFIG_MAX_MS},
        {"GA_SPACE_TYPING_PER_CHAR_MS", VAR_OPT_INT, SP(typing_per_char_ms), -1, 0, CONFIG_MAX_MS},
        {"GA_SPACE_TYPING_MAX_MS", VAR_OPT_INT, SP(typing_max_ms), -1, 0, CONFIG_MAX_MS},
        {"GA_SPACE_CHAT_INTERVAL_MS", VAR_OPT_INT, SP(chat_interval_ms), -1, 0, CONFIG_MAX_MS},
        {"GA_SPACE_CLAIM_RENEW_MS", VAR_OPT_INT, SP(claim_renew_ms), -1, 1, CONFIG_MAX_MS},
        /* test aids, read by cmd/daemon.c */
        {"GA_EXIT_WHEN_IDLE", VAR_PROCESS, 0, 0, 0, 0},
        /* the platform services' tunables (cmd/svc_*.c, mainly for tests) */
        {"GA_GITHUB_SPACING_MS", VAR_OPT_INT, F(github_spacing_ms), -1, 0, 60000},
        {"GA_GITHUB_WRITE_SPACING_MS", VAR_OPT_INT, F(github_write_spacing_ms), -1, 0, 60000},
        {"GA_GITHUB_POLL_MS", VAR_PROCESS, 0, 0, 0, 0},
        {"GA_GITHUB_STAGGER_MIN_MS", VAR_PROCESS, 0, 0, 0, 0},
        {"GA_GITHUB_STAGGER_SPAN_MS", VAR_PROCESS, 0, 0, 0, 0},
        {"GA_FULFIL_INTERVAL_MS", VAR_PROCESS, 0, 0, 0, 0},
        {"GA_FULFIL_TIMEOUT_MS", VAR_PROCESS, 0, 0, 0, 0},
        {"GA_FULFIL_CLAIM_RENEW_MS", VAR_PROCESS, 0, 0, 0, 0},
        {"GA_BLUESKY_AWARENESS_MS", VAR_PROCESS, 0, 0, 0, 0},
        {"GA_BLUESKY_FEED_MS", VAR_PROCESS, 0, 0, 0, 0},
        {"GA_BLUESKY_PEERS_MS", VAR_PROCESS, 0, 0, 0, 0},
        {"GA_BLUESKY_EXPRESSION_MS", VAR_PROCESS, 0, 0, 0, 0},
        {"GA_BLUESKY_RITUAL_MS", VAR_PROCESS, 0, 0, 0, 0},
        {"GA_BLUESKY_PACE_MS", VAR_PROCESS, 0, 0, 0, 0},
        {"GA_BLUESKY_MIN_INTERVAL_MS", VAR_PROCESS, 0, 0, 0, 0},
        {"GA_BLUESKY_SPACING_MS", VAR_PROCESS, 0, 0, 0, 0},
        /* workspaces and the coder (cmd/svc_workspace.c, modules/coder) */
        {"WORKSPACE_PREFIX", VAR_PROCESS, 0, 0, 0, 0},
        {"WORKSPACE_TEMPLATE", VAR_PROCESS, 0, 0, 0, 0},
        {"WORKSPACE_ORG", VAR_PROCESS, 0, 0, 0, 0},
        {"GA_WS_CYCLE_MS", VAR_PROCESS, 0, 0, 0, 0},
        {"GA_WS_CLAIM_TTL_MS", VAR_PROCESS, 0, 0, 0, 0},
        {"GA_WS_ORPHAN_MS", VAR_PROCESS, 0, 0, 0, 0},
        {"CODER_COMMAND", VAR_PROCESS, 0, 0, 0, 0},
        {"CODER_SANDBOX", VAR_PROCESS, 0, 0, 0, 0},
        {"CODER_NETWORK", VAR_PROCESS, 0, 0, 0, 0},
        {"CODER_TIMEOUT_S", VAR_PROCESS, 0, 0, 0, 0},
        {"CODER_RO_PATHS", VAR_PROCESS, 0, 0, 0, 0},
        {"CODER_ENV", VAR_PROCESS, 0, 0, 0, 0},
        {"CODER_HOME", VAR_PROCESS, 0, 0, 0, 0},
        {"TASK_TEST_COMMAND", VAR_PROCESS, 0, 0, 0, 0},
        {"TASK_TEST_TIMEOUT_S", VAR_PROCESS, 0, 0, 0, 0},
};
#undef F
#undef SP
#define NVARS (sizeof VARS / sizeof VARS[0])

bool config_is_known_var(const char *name)
{
	for (size_t i = 0; i < NVARS; i++)
		if (strcmp(VARS[i].name, name) == 0)
			return true;
	return false;
}

#define NAME_CAP 64
int config_edit_distance(const char *a, const char *b, int cap)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la >= NAME_CAP || lb >= NAME_CAP)
		return cap;
	int prev[NAME_CAP + 1], cur[NAME_CAP + 1];
	for (size_t j = 0; j <= lb; j++)
		prev[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			int del = prev[j] + 1, ins = cur[j - 1] + 1;
			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
		memcpy(prev, cur, sizeof prev);
	}
	return prev[lb] < cap ? prev[lb] : cap;
}

/* "AGENT" of AGENT_NAME, "GA_SPACE" of GA_SPACE_PING_MS: the family is the
 * name up to its last '_' when it has two or more parts, so LLM_BASE_ULR
 * and LLM_MODEL share "LLM", GA_SPACE_X shares "GA_SPACE". */
static bool same_family(const char *unknown, const char *known)
{
	const char *u = strchr(unknown, '_'), *k = strchr(known, '_');
	if (!u || !k || u - unknown != k - known || strncmp(unknown, known, (size_t)(u - unknown)))
		return false;
	/* GA_ alone is too broad (GA_BUILD_DIR is the test suite's): ask for
	 * the second part too. */
	if (u - unknown == 2 && strncmp(unknown, "GA", 2) == 0) {
		const char *u2 = strchr(u + 1, '_'), *k2 = strchr(k + 1, '_');
		return u2 && k2 && u2 - unknown == k2 - known &&
		       strncmp(unknown, known, (size_t)(u2 - unknown)) == 0;
	}
	return true;
}

const char *config_suggest_var(const char *name, int *distance)
{
	if (config_is_known_var(name))
		return NULL;
	const char *best = NULL;
	int bestd = NAME_CAP;
	bool family = false;
	for (size_t i = 0; i < NVARS; i++) {
		int d = config_edit_distance(name, VARS[i].name, NAME_CAP);
		/* On a tie, a name the unknown one begins (GA_SPACE_PING for
		 * GA_SPACE_PING_MS) is the likelier intent. */
		bool prefix = strncmp(VARS[i].name, name, strlen(name)) == 0;
		if (d < bestd || (d == bestd && prefix)) {
			bestd = d;
			best = VARS[i].name;
		}
		if (same_family(name, VARS[i].name))
			family = true;
	}
	if (distance)
		*distance = bestd;
	return best && (bestd <= 2 || family) ? best : NULL;
}

static void problem(struct config_problems *p, const char *var, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static void warning(struct config_problems *p, const char *var, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static void warning(struct config_problems *p, const char *var, const char *fmt, ...)
{
	if (!p || p->nwarnings >= CONFIG_MAX_WARNINGS)
		return;
	struct config_problem *it = &p->warnings[p->nwarnings++];
	snprintf(it->var, sizeof it->var, "%s", var);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(it->msg, sizeof it->msg, fmt, ap);
	va_end(ap);
}

static void problem(struct config_problems *p, const char *var, const char *fmt, ...)
{
	if (!p || p->count >= CONFIG_MAX_PROBLEMS)
		return;
	struct config_problem *it = &p->items[p->count++];
	snprintf(it->var, sizeof it->var, "%s", var);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(it->msg, sizeof it->msg, fmt, ap);
	va_end(ap);
}

/* The value of var, trimmed copy, or NULL when unset or blank. */
static char *get(const struct env_file *env, const char *var)
{
	if (!config_is_known_var(var)) {
		/* A programming error: every variable is listed in VARS. */
		fprintf(stderr, "config: %s is read but missing from the VARS table\n", var);
		abort();
	}
	const char *v = env_lookup(env, var);
	if (!v)
		return NULL;
	while (*v == ' ' || *v == '\t')
		v++;
	size_t n = strlen(v);
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r' || v[n - 1] == '\n'))
		n--;
	if (n == 0)
		return NULL;
	return xstrndup(v, n);
}

static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

static const char *const HTTP_SCHEMES[] = {"http://", "https://", NULL};
/* wss:// is not offered: the agent-space speaks plain WebSocket and the
 * client has no TLS (adapters/space/client.c), so say so at start. */
static const char *const WS_SCHEMES[] = {"ws://", NULL};
static const char *const REDIS_SCHEMES[] = {"redis://", "rediss://", "unix://", NULL};

/* A base URL must be http(s) with a host; trailing slashes are dropped so
 * callers can append "/xrpc/..." without doubling them. */
static char *get_url(const struct env_file *env, const char *var, const char *def,
                     const char *const *schemes, struct config_problems *p)
{
	char *v = get(env, var);
	if (!v)
		return def ? xstrdup(def) : NULL;
	bool ok = false;
	for (const char *const *s = schemes; *s; s++) {
		size_t n = strlen(*s);
		if (strncmp(v, *s, n) == 0 && v[n] != '\0' && v[n] != '/') {
			ok = true;
			break;
		}
	}
	if (!ok && strncmp(v, "wss://", 6) == 0 && schemes == WS_SCHEMES) {
		problem(p, var,
		        "%s is '%.80s', but the agent-space room speaks plain WebSocket (ws://) "
		        "and "
		        "general-agent has no TLS client: use ws://host:port, or reach a room "
		        "behind "
		        "TLS through a local TLS-terminating proxy (stunnel, socat) at "
		        "ws://127.0.0.1",
		        var, v);
		free(v);
		return def ? xstrdup(def) : NULL;
	}
	if (!ok || has_control(v) || strchr(v, ' ')) {
		char list[64] = "";
		for (const char *const *s = schemes; *s; s++) {
			strncat(list, *s, sizeof list - strlen(list) - 1);
			if (s[1])
				strncat(list, " or ", sizeof list - strlen(list) - 1);
		}
		problem(p, var, "%s must be a URL starting with %s, got '%.80s'", var, list, v);
		free(v);
		return def ? xstrdup(def) : NULL;
	}
	size_t n = strlen(v);
	while (n > 1 && v[n - 1] == '/')
		v[--n] = '\0';
	return v;
}

static int64_t get_int(const struct env_file *env, const char *var, int64_t def, int64_t lo,
                       int64_t hi, struct config_problems *p)
{
	char *v = get(env, var);
	if (!v)
		return def;
	char *end = NULL;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	if (errno || end == v || *end != '\0' || n < lo || n > hi) {
		problem(p, var, "%s must be an integer from %lld to %lld, got '%.40s'", var,
		        (long long)lo, (long long)hi, v);
		free(v);
		return def;
	}
	free(v);
	return n;
}

static char *absolute(const char *path)
{
	if (path[0] == '/')
		return xstrdup(path);
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd))
		return xstrdup(path);
	if (strcmp(path, ".") == 0)
		return xstrdup(cwd);
	return fsx_join(cwd, path);
}

bool config_is_secret_name(const char *name)
{
	static const char *const marks[] = {"TOKEN",   "PASSWORD", "SECRET",
	                                    "API_KEY", "PASSWD",   NULL};
	for (const char *const *m = marks; *m; m++)
		if (strstr(name, *m))
			return true;
	size_t n = strlen(name);
	return n > 4 && strcmp(name + n - 4, "_KEY") == 0;
}

static void register_url_password(const char *url)
{
	/* scheme://user:password@host… — the password is a secret (REDIS_URL,
	 * but also an LLM_BASE_URL or SPACE_URL behind basic auth). */
	const char *s = strstr(url, "://");
	if (!s)
		return;
	s += 3;
	const char *at = strchr(s, '@');
	if (!at)
		return;
	const char *colon = memchr(s, ':', (size_t)(at - s));
	if (!colon || colon + 1 >= at)
		return;
	char *pw = xstrndup(colon + 1, (size_t)(at - colon - 1));
	log_add_secret(pw);
	free(pw);
}

void config_register_secrets(const struct env_file *env)
{
	if (env)
		for (size_t i = 0; i < env->count; i++)
			if (config_is_secret_name(env->entries[i].key))
				log_add_secret(env->entries[i].value);
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (!eq)
			continue;
		char name[128];
		size_t n = (size_t)(eq - *e);
		if (n >= sizeof name)
			continue;
		memcpy(name, *e, n);
		name[n] = '\0';
		if (config_is_secret_name(name))
			log_add_secret(eq + 1);
	}
	static const char *const urls[] = {"REDIS_URL",
	                                   "LLM_BASE_URL",
	                                   "AI_GATEWAY_BASE_URL",
	                                   "BLUESKY_SERVICE",
	                                   "GITHUB_API_URL",
	                                   "SPACE_URL",
	                                   NULL};
	for (const char *const *u = urls; *u; u++) {
		const char *v = env_lookup(env, *u);
		if (v)
			register_url_password(v);
	}
}

int config_load(struct ga_config *cfg, const struct env_file *env, const char *home,
                const char *memory_dir, struct config_problems *p)
{
	memset(cfg, 0, sizeof *cfg);
	if (p) {
		p->count = 0;
		p->nwarnings = 0;
	}
	config_register_secrets(env);

	cfg->home = absolute(home ? home : ".");
	char *mem = memory_dir ? xstrdup(memory_dir) : get(env, "MEMORY_DIR");
	if (mem) {
		if (mem[0] == '/') {
			cfg->memory_dir = mem;
		} else {
			/* A relative MEMORY_DIR is relative to the home, so the
			 * daemon does not depend on where it was started from. */
			cfg->memory_dir = fsx_join(cfg->home, mem);
			free(mem);
		}
	} else {
		cfg->memory_dir = fsx_join(cfg->home, "memory");
	}

	cfg->agent_name = get(env, "AGENT_NAME");
	if (cfg->agent_name &&
	    (strlen(cfg->agent_name) > CONFIG_AGENT_NAME_MAX || has_control(cfg->agent_name))) {
		problem(p, "AGENT_NAME",
		        "AGENT_NAME must be 1 to %d characters without control characters",
		        CONFIG_AGENT_NAME_MAX);
		free(cfg->agent_name);
		cfg->agent_name = NULL;
	}
	if (!cfg->agent_name) {
		cfg->agent_name = xstrdup(CONFIG_DEFAULT_AGENT_NAME);
		cfg->agent_name_defaulted = true;
	}

	cfg->ai_gateway_api_key = get(env, "AI_GATEWAY_API_KEY");
	cfg->ai_gateway_model = get(env, "AI_GATEWAY_MODEL");
	if (!cfg->ai_gateway_model)
		cfg->ai_gateway_model = xstrdup(CONFIG_DEFAULT_GATEWAY_MODEL);
	cfg->ai_gateway_base_url =
	        get_url(env, "AI_GATEWAY_BASE_URL", CONFIG_DEFAULT_GATEWAY_URL, HTTP_SCHEMES, p);
	cfg->llm_base_url = get_url(env, "LLM_BASE_URL", NULL, HTTP_SCHEMES, p);
	cfg->llm_api_key = get(env, "LLM_API_KEY");
	cfg->llm_model = get(env, "LLM_MODEL");
	if (cfg->llm_base_url && !cfg->llm_model)
		problem(p, "LLM_MODEL",
		        "LLM_BASE_URL is set but LLM_MODEL is not: name the model "
		        "the endpoint should use");

	cfg->owner_handle = get(env, "OWNER_BLUESKY_SOCIAL_HANDLE");
	cfg->owner_did = get(env, "OWNER_BLUESKY_SOCIAL_HANDLE_DID");
	if (cfg->owner_did && strncmp(cfg->owner_did, "did:", 4) != 0) {
		problem(p, "OWNER_BLUESKY_SOCIAL_HANDLE_DID",
		        "OWNER_BLUESKY_SOCIAL_HANDLE_DID must be a DID such as did:plc:abc123, got "
		        "'%.60s'",
		        cfg->owner_did);
		free(cfg->owner_did);
		cfg->owner_did = NULL;
	}
	cfg->bsky_username = get(env, "AGENT_BLUESKY_USERNAME");
	cfg->bsky_password = get(env, "AGENT_BLUESKY_PASSWORD");
	cfg->bluesky_service =
	        get_url(env, "BLUESKY_SERVICE", CONFIG_DEFAULT_BLUESKY_SERVICE, HTTP_SCHEMES, p);

	cfg->github_username = get(env, "AGENT_GITHUB_USERNAME");
	cfg->github_token = get(env, "AGENT_GITHUB_TOKEN");
	cfg->owner_github = get(env, "OWNER_GITHUB_USERNAME");
	cfg->github_api_url =
	        get_url(env, "GITHUB_API_URL", CONFIG_DEFAULT_GITHUB_API_URL, HTTP_SCHEMES, p);

	cfg->space_url = get_url(env, "SPACE_URL", NULL, WS_SCHEMES, p);
	cfg->max_acl =
	        (int)get_int(env, "MAX_ACL", CONFIG_DEFAULT_MAX_ACL, 0, CONFIG_MAX_ACL_LIMIT, p);

	cfg->dashboard_addr = get(env, "DASHBOARD_ADDR");
	if (!cfg->dashboard_addr)
		cfg->dashboard_addr = xstrdup(CONFIG_DEFAULT_DASHBOARD_ADDR);
	if (strcmp(cfg->dashboard_addr, "off") != 0) {
		const char *colon = strrchr(cfg->dashboard_addr, ':');
		char *end = NULL;
		long port = colon ? strtol(colon + 1, &end, 10) : -1;
		if (!colon || colon == cfg->dashboard_addr || !end || *end || port < 0 ||
		    port > 65535) {
			problem(p, "DASHBOARD_ADDR",
			        "DASHBOARD_ADDR must be host:port (e.g. 127.0.0.1:7780) or 'off', "
			        "got '%.60s'",
			        cfg->dashboard_addr);
			free(cfg->dashboard_addr);
			cfg->dashboard_addr = xstrdup(CONFIG_DEFAULT_DASHBOARD_ADDR);
		}
	}
	/* A secret (the name says TOKEN): registered, never shown. */
	cfg->dashboard_token = get(env, "DASHBOARD_TOKEN");
	if (cfg->dashboard_token && strlen(cfg->dashboard_token) < CONFIG_DASHBOARD_TOKEN_MIN) {
		problem(p, "DASHBOARD_TOKEN",
		        "DASHBOARD_TOKEN must be at least %d characters (it guards the dashboard "
		        "on a non-loopback DASHBOARD_ADDR), got %zu",
		        CONFIG_DASHBOARD_TOKEN_MIN, strlen(cfg->dashboard_token));
		free(cfg->dashboard_token);
		cfg->dashboard_token = NULL;
	}
	cfg->redis_url = get_url(env, "REDIS_URL", NULL, REDIS_SCHEMES, p);

	cfg->log_level = LOG_LEVEL_INFO;
	char *lvl = get(env, "LOG_LEVEL");
	if (lvl && log_level_parse(lvl, &cfg->log_level) != 0)
		problem(p, "LOG_LEVEL",
		        "LOG_LEVEL must be debug, info, warn, error or off, got "
		        "'%.20s'",
		        lvl);
	free(lvl);
	char *fmt = get(env, "LOG_FORMAT");
	if (fmt) {
		if (strcmp(fmt, "json") == 0)
			cfg->log_json = true;
		else if (strcmp(fmt, "text") != 0)
			problem(p, "LOG_FORMAT", "LOG_FORMAT must be text or json, got '%.20s'",
			        fmt);
	}
	free(fmt);

	for (size_t i = 0; i < NVARS; i++) {
		const struct config_var *v = &VARS[i];
		if (v->kind == VAR_INT || v->kind == VAR_OPT_INT)
			*(int64_t *)(void *)((char *)cfg + v->off) = get_int(
			        env, v->name, v->kind == VAR_INT ? v->def : -1, v->lo, v->hi, p);
	}
	cfg->space.localhost_url = get_url(env, "GA_SPACE_LOCALHOST_URL", NULL, WS_SCHEMES, p);
	if (cfg->space.localhost_url && strlen(cfg->space.localhost_url) >= CONFIG_SPACE_URL_MAX) {
		problem(p, "GA_SPACE_LOCALHOST_URL",
		        "GA_SPACE_LOCALHOST_URL is longer than %d bytes", CONFIG_SPACE_URL_MAX - 1);
		free(cfg->space.localhost_url);
		cfg->space.localhost_url = NULL;
	}
	cfg->space.mdns_name = get(env, "GA_SPACE_MDNS_NAME");
	if (cfg->space.mdns_name && strlen(cfg->space.mdns_name) >= CONFIG_SPACE_MDNS_NAME_MAX) {
		problem(p, "GA_SPACE_MDNS_NAME",
		        "GA_SPACE_MDNS_NAME is longer than %d bytes (an mDNS instance name)",
		        CONFIG_SPACE_MDNS_NAME_MAX - 1);
		free(cfg->space.mdns_name);
		cfg->space.mdns_name = NULL;
	}
	char *bo = get(env, "GA_SPACE_BACKOFF_MS");
	if (bo && config_parse_ms_list(bo, cfg->space.backoff_ms, CONFIG_SPACE_BACKOFF_MAX,
	                               &cfg->space.nbackoff) != 0)
		problem(p, "GA_SPACE_BACKOFF_MS",
		        "GA_SPACE_BACKOFF_MS must be 1 to %d comma-separated delays in "
		        "milliseconds "
		        "(each 1 to %lld), got '%.60s'",
		        CONFIG_SPACE_BACKOFF_MAX, (long long)CONFIG_MAX_MS, bo);
	free(bo);

	/* A name in .env that looks like ours but is not is a typo until
	 * proven otherwise; the process environment is full of other
	 * programs' variables and is not checked. */
	if (env)
		for (size_t i = 0; i < env->count; i++) {
			const char *k = env->entries[i].key;
			const char *near = config_suggest_var(k, NULL);
			if (near)
				warning(p, k,
				        "%s%s%d: %s is not a general-agent variable and is "
				        "ignored; "
				        "did you mean %s?",
				        env->path ? env->path : ".env", env->path ? ":" : " line ",
				        env->entries[i].line, k, near);
		}
	return p ? p->count : 0;
}

int config_parse_ms_list(const char *list, uint64_t *out, size_t cap, size_t *n)
{
	uint64_t steps[CONFIG_SPACE_BACKOFF_MAX];
	size_t k = 0;
	const char *s = list;
	if (!list || cap > CONFIG_SPACE_BACKOFF_MAX)
		return -1;
	for (;;) {
		while (*s == ' ')
			s++;
		if (*s < '0' || *s > '9' || k == cap)
			return -1;
		errno = 0;
		char *end = NULL;
		unsigned long long v = strtoull(s, &end, 10);
		if (errno || v < 1 || v > (unsigned long long)CONFIG_MAX_MS)
			return -1;
		steps[k++] = v;
		s = end;
		while (*s == ' ')
			s++;
		if (*s == '\0')
			break;
		if (*s != ',')
			return -1;
		s++;
	}
	memcpy(out, steps, k * sizeof steps[0]);
	*n = k;
	return 0;
}

void config_free(struct ga_config *cfg)
{
	if (!cfg)
		return;
	char **strs[] = {&cfg->home,
	                 &cfg->memory_dir,
	                 &cfg->agent_name,
	                 &cfg->ai_gateway_api_key,
	                 &cfg->ai_gateway_model,
	                 &cfg->ai_gateway_base_url,
	                 &cfg->llm_base_url,
	                 &cfg->llm_api_key,
	                 &cfg->llm_model,
	                 &cfg->owner_handle,
	                 &cfg->owner_did,
	                 &cfg->bsky_username,
	                 &cfg->bsky_password,
	                 &cfg->bluesky_service,
	                 &cfg->github_username,
	                 &cfg->github_token,
	                 &cfg->github_api_url,
	                 &cfg->owner_github,
	                 &cfg->space_url,
	                 &cfg->dashboard_addr,
	                 &cfg->redis_url,
	                 &cfg->space.localhost_url,
	                 &cfg->space.mdns_name,
	                 &cfg->dashboard_token};
	for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
		free(*strs[i]);
		*strs[i] = NULL;
	}
}

static void missing_list(char *out, size_t cap, const char *const *names, const char *const *vals)
{
	out[0] = '\0';
	for (size_t i = 0; names[i]; i++) {
		if (vals[i])
			continue;
		if (out[0])
			strncat(out, ", ", cap - strlen(out) - 1);
		strncat(out, names[i], cap - strlen(out) - 1);
	}
}

void config_features(const struct ga_config *cfg, struct config_feature out[CONFIG_FEATURE_COUNT])
{
	struct config_feature *f;
	char miss[200];

	f = &out[CONFIG_FEATURE_MODEL];
	f->name = "model";
	if (cfg->ai_gateway_api_key) {
		f->enabled = true;
		snprintf(f->detail, sizeof f->detail, "AI gateway %s, model %s",
		         cfg->ai_gateway_base_url, cfg->ai_gateway_model);
	} else if (cfg->llm_base_url && cfg->llm_model) {
		f->enabled = true;
		snprintf(f->detail, sizeof f->detail, "%s, model %s%s", cfg->llm_base_url,
		         cfg->llm_model, cfg->llm_api_key ? "" : " (no API key)");
	} else {
		f->enabled = false;
		snprintf(f->detail, sizeof f->detail,
		         "set AI_GATEWAY_API_KEY, or LLM_BASE_URL and LLM_MODEL; without a "
		         "model the agent cannot compose replies");
	}

	f = &out[CONFIG_FEATURE_BLUESKY];
	f->name = "bluesky";
	{
		const char *names[] = {"AGENT_BLUESKY_USERNAME", "AGENT_BLUESKY_PASSWORD", NULL};
		const char *vals[] = {cfg->bsky_username, cfg->bsky_password};
		missing_list(miss, sizeof miss, names, vals);
	}
	f->enabled = miss[0] == '\0';
	if (f->enabled)
		snprintf(f->detail, sizeof f->detail, "%s on %s", cfg->bsky_username,
		         cfg->bluesky_service);
	else
		snprintf(f->detail, sizeof f->detail, "%s not set", miss);

	f = &out[CONFIG_FEATURE_GITHUB];
	f->name = "github";
	{
		const char *names[] = {"AGENT_GITHUB_USERNAME", "AGENT_GITHUB_TOKEN", NULL};
		const char *vals[] = {cfg->github_username, cfg->github_token};
		missing_list(miss, sizeof miss, names, vals);
	}
	f->enabled = miss[0] == '\0';
	if (f->enabled)
		snprintf(f->detail, sizeof f->detail, "%s on %s", cfg->github_username,
		         cfg->github_api_url);
	else
		snprintf(f->detail, sizeof f->detail, "%s not set", miss);

	f = &out[CONFIG_FEATURE_SPACE];
	f->name = "agent-space";
	f->enabled = true;
	if (cfg->space_url)
		snprintf(f->detail, sizeof f->detail, "SPACE_URL %s", cfg->space_url);
	else
		snprintf(f->detail, sizeof f->detail,
		         "SPACE_URL not set: discovery by mDNS, then ws://localhost:7777");

	f = &out[CONFIG_FEATURE_OWNER];
	f->name = "owner";
	{
		const char *names[] = {"OWNER_BLUESKY_SOCIAL_HANDLE",
		                       "OWNER_BLUESKY_SOCIAL_HANDLE_DID", NULL};
		const char *vals[] = {cfg->owner_handle, cfg->owner_did};
		missing_list(miss, sizeof miss, names, vals);
	}
	f->enabled = miss[0] == '\0';
	if (f->enabled)
		snprintf(f->detail, sizeof f->detail, "%s (%s); terminal owner mode available",
		         cfg->owner_handle, cfg->owner_did);
	else
		snprintf(
		        f->detail, sizeof f->detail,
		        "Bluesky owner unknown (%s not set): owner messages on Bluesky are treated "
		        "as anyone's; the terminal still speaks for the owner",
		        miss);
}

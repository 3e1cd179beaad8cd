/*
 * config — every runtime setting of general-agent in one struct.
 *
 * Values come from the process environment, else from the `.env` file
 * (env.h), else from the defaults below. config_load() validates every value
 * it reads and reports each problem naming the variable ("MAX_ACL must be an
 * integer from 0 to 100, got 'four'"). Missing credentials are not errors:
 * they switch a feature off, and config_features() says which and why.
 *
 * Secrets (API keys, tokens, passwords, a password inside REDIS_URL) are
 * registered with the logger on load, so they never reach a log line.
 *
 * All strings are owned by the struct; config_free() releases them.
 */
#ifndef GA_COMMON_CONFIG_H
#define GA_COMMON_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "common/env.h"
#include "common/log.h"

#define CONFIG_DEFAULT_AGENT_NAME      "agent"
#define CONFIG_DEFAULT_GATEWAY_MODEL   "openai/gpt-5.2"
#define CONFIG_DEFAULT_GATEWAY_URL     "https://ai-gateway.vercel.sh/v1"
#define CONFIG_DEFAULT_BLUESKY_SERVICE "https://bsky.social"
#define CONFIG_DEFAULT_GITHUB_API_URL  "https://api.github.com"
#define CONFIG_DEFAULT_DASHBOARD_ADDR  "127.0.0.1:7780"
#define CONFIG_DASHBOARD_TOKEN_MIN     16
#define CONFIG_DEFAULT_MAX_ACL         4
#define CONFIG_MAX_ACL_LIMIT           100
#define CONFIG_MAX_PROBLEMS            32
#define CONFIG_AGENT_NAME_MAX          64
#define CONFIG_MAX_WARNINGS            16
/* No timing value may exceed a day: a typo must not park the agent for years. */
#define CONFIG_MAX_MS            (24LL * 60 * 60 * 1000)
#define CONFIG_SPACE_BACKOFF_MAX 8
#define CONFIG_SPACE_URL_MAX     512
/* An mDNS instance name is one DNS label: at most 63 bytes. */
#define CONFIG_SPACE_MDNS_NAME_MAX 64
/* The gate (loop prevention): defaults and limits. */
#define CONFIG_DEFAULT_MAX_BOT_CHAIN_LENGTH 5
#define CONFIG_DEFAULT_GATE_MAX_EVENTS      20
#define CONFIG_DEFAULT_GATE_WINDOW_MS       60000
#define CONFIG_DEFAULT_GATE_COOLDOWN_MS     60000

struct config_problem {
	char var[48];
	char msg[256];
};

/* items: errors (the daemon refuses to start). warnings: a .env variable
 * that looks like ours but is not (a typo, usually), with the closest
 * known name; the daemon starts. Beyond the limits, the rest are dropped. */
struct config_problems {
	struct config_problem items[CONFIG_MAX_PROBLEMS];
	int count;
	struct config_problem warnings[CONFIG_MAX_WARNINGS];
	int nwarnings;
};

/* The GA_SPACE_* timing knobs of the agent-space client
 * (adapters/space/tunables.h and modules/space/link.h say what each does and
 * hold the defaults). A number below zero, a NULL string or nbackoff 0 means
 * "not set": the module's default applies. Values set are validated here. */
struct config_space_tunables {
	int64_t mdns_timeout_ms;    /* GA_SPACE_MDNS_TIMEOUT_MS, 1..day */
	int64_t mdns;               /* GA_SPACE_MDNS, 0 or 1 */
	char *localhost_url;        /* GA_SPACE_LOCALHOST_URL, ws:// */
	char *mdns_name;            /* GA_SPACE_MDNS_NAME, an mDNS instance name */
	int64_t discovery_retry_ms; /* GA_SPACE_DISCOVERY_RETRY_MS, 1..day */
	uint64_t backoff_ms[CONFIG_SPACE_BACKOFF_MAX]; /* GA_SPACE_BACKOFF_MS */
	size_t nbackoff;
	int64_t jitter_pct;         /* GA_SPACE_JITTER_PCT, 0..100 */
	int64_t connect_timeout_ms; /* GA_SPACE_CONNECT_TIMEOUT_MS, 1..day */
	int64_t ping_ms;            /* GA_SPACE_PING_MS, 1..day */
	int64_t close_wait_ms;      /* GA_SPACE_CLOSE_WAIT_MS, 0..day */
	int64_t replaced_limit;     /* GA_SPACE_REPLACED_LIMIT, 1..1000 */
	int64_t replaced_window_ms; /* GA_SPACE_REPLACED_WINDOW_MS, 1..day */
	int64_t typing_base_ms;     /* GA_SPACE_TYPING_BASE_MS, 0..day */
	int64_t typing_per_char_ms; /* GA_SPACE_TYPING_PER_CHAR_MS, 0..day */
	int64_t typing_max_ms;      /* GA_SPACE_TYPING_MAX_MS, 0..day */
	int64_t chat_interval_ms;   /* GA_SPACE_CHAT_INTERVAL_MS, 0..day */
	int64_t claim_renew_ms;     /* GA_SPACE_CLAIM_RENEW_MS, 1..day */
};

struct ga_config {
	/* where things live */
	char *home;       /* absolute agent home */
	char *memory_dir; /* MEMORY_DIR, default <home>/memory */

	char *agent_name; /* AGENT_NAME */
	bool agent_name_defaulted;

	/* model: either the AI gateway or an OpenAI-compatible endpoint */
	char *ai_gateway_api_key;       /* AI_GATEWAY_API_KEY */
	char *ai_gateway_model;         /* AI_GATEWAY_MODEL */
	char *ai_gateway_base_url;      /* AI_GATEWAY_BASE_URL */
	char *llm_base_url;             /* LLM_BASE_URL */
	char *llm_api_key;              /* LLM_API_KEY (optional: Ollama, llama.cpp) */
	char *llm_model;                /* LLM_MODEL */
	int64_t llm_daily_token_budget; /* LLM_DAILY_TOKEN_BUDGET, 0 = no budget */

	/* Bluesky */
	char *owner_handle;    /* OWNER_BLUESKY_SOCIAL_HANDLE */
	char *owner_did;       /* OWNER_BLUESKY_SOCIAL_HANDLE_DID */
	char *bsky_username;   /* AGENT_BLUESKY_USERNAME */
	char *bsky_password;   /* AGENT_BLUESKY_PASSWORD */
	char *bluesky_service; /* BLUESKY_SERVICE */

	/* GitHub */
	char *github_username; /* AGENT_GITHUB_USERNAME */
	char *github_token;    /* AGENT_GITHUB_TOKEN */
	char *github_api_url;  /* GITHUB_API_URL */
	char *owner_github;    /* OWNER_GITHUB_USERNAME: the owner's login, NULL unknown */
	/* GA_GITHUB_SPACING_MS / GA_GITHUB_WRITE_SPACING_MS (0..60000; -1 = the
	 * adapter's 1 s between requests, 5 s between writes): for tests against
	 * a fake, never needed against GitHub */
	int64_t github_spacing_ms;
	int64_t github_write_spacing_ms;

	/* agent-space, dashboard, coordination */
	char *space_url;                    /* SPACE_URL (NULL → discovery) */
	int max_acl;                        /* MAX_ACL */
	char *dashboard_addr;               /* DASHBOARD_ADDR host:port, "off" disables */
	char *dashboard_token;              /* DASHBOARD_TOKEN (secret; >= 16 chars), NULL none */
	char *redis_url;                    /* REDIS_URL */
	struct config_space_tunables space; /* GA_SPACE_* */

	/* the gate (loop prevention) */
	int64_t max_bot_chain_length; /* MAX_BOT_CHAIN_LENGTH, 1..100, default 5 */
	int64_t gate_max_events;      /* GATE_MAX_EVENTS, 1..128, default 20 */
	int64_t gate_window_ms;       /* GATE_WINDOW_MS, 1..day, default 60000 */
	int64_t gate_cooldown_ms;     /* GATE_COOLDOWN_MS, 0..day, default 60000 */

	enum log_level log_level; /* LOG_LEVEL */
	bool log_json;            /* LOG_FORMAT=json */
};

enum config_feature_id {
	CONFIG_FEATURE_MODEL,
	CONFIG_FEATURE_BLUESKY,
	CONFIG_FEATURE_GITHUB,
	CONFIG_FEATURE_SPACE,
	CONFIG_FEATURE_OWNER,
	CONFIG_FEATURE_COUNT,
};

struct config_feature {
	const char *name; /* "model", "bluesky", ... */
	bool enabled;
	char detail[512]; /* what is configured, or what is missing and why */
};

/* home: the agent home (absolute or relative; made absolute). memory_dir:
 * the --memory flag, or NULL. Returns the number of problems (0 = valid;
 * warnings, such as an unknown .env variable, do not count);
 * the struct is filled with defaults where a value was bad, so callers may
 * still print a full report. */
int config_load(struct ga_config *cfg, const struct env_file *env, const char *home,
                const char *memory_dir, struct config_problems *problems);
void config_free(struct ga_config *cfg);

/* Which features the daemon can run with this configuration. */
void config_features(const struct ga_config *cfg, struct config_feature out[CONFIG_FEATURE_COUNT]);

/* True if name is a variable general-agent reads (the one table in
 * config.c lists every one). */
bool config_is_known_var(const char *name);

/* For a name general-agent does not read: the closest known name when name
 * looks like one of ours (edit distance <= 2, or the same family prefix
 * such as AGENT_, LLM_, GA_SPACE_), else NULL. Returns NULL for a known
 * name. *distance (if non-NULL) gets the edit distance. */
const char *config_suggest_var(const char *name, int *distance);

/* Parses "5000, 10000,20000": 1..cap delays of 1..CONFIG_MAX_MS ms
 * (cap <= CONFIG_SPACE_BACKOFF_MAX). 0 and out/n filled, or -1 and out
 * untouched. */
int config_parse_ms_list(const char *list, uint64_t *out, size_t cap, size_t *n);

/* Levenshtein distance between a and b, capped at cap (returns cap when
 * the distance is at least cap; names longer than 63 bytes return cap). */
int config_edit_distance(const char *a, const char *b, int cap);

/* True if a variable name looks like it holds a secret (…TOKEN, …PASSWORD,
 * …SECRET, …API_KEY, …_KEY). */
bool config_is_secret_name(const char *name);

/* Registers every secret-looking value of env (file and process environment)
 * with the logger. */
void config_register_secrets(const struct env_file *env);

#endif

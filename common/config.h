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

#define CONFIG_DEFAULT_AGENT_NAME "agent"
#define CONFIG_DEFAULT_GATEWAY_MODEL "openai/gpt-5.2"
#define CONFIG_DEFAULT_GATEWAY_URL "https://ai-gateway.vercel.sh/v1"
#define CONFIG_DEFAULT_BLUESKY_SERVICE "https://bsky.social"
#define CONFIG_DEFAULT_GITHUB_API_URL "https://api.github.com"
#define CONFIG_DEFAULT_DASHBOARD_ADDR "127.0.0.1:7780"
#define CONFIG_DEFAULT_MAX_ACL 4
#define CONFIG_MAX_ACL_LIMIT 100
#define CONFIG_MAX_PROBLEMS 32
#define CONFIG_AGENT_NAME_MAX 64

struct config_problem {
	char var[48];
	char msg[256];
};

struct config_problems {
	struct config_problem items[CONFIG_MAX_PROBLEMS];
	int count;
};

struct ga_config {
	/* where things live */
	char *home;       /* absolute agent home */
	char *memory_dir; /* MEMORY_DIR, default <home>/memory */

	char *agent_name; /* AGENT_NAME */
	bool agent_name_defaulted;

	/* model: either the AI gateway or an OpenAI-compatible endpoint */
	char *ai_gateway_api_key;  /* AI_GATEWAY_API_KEY */
	char *ai_gateway_model;    /* AI_GATEWAY_MODEL */
	char *ai_gateway_base_url; /* AI_GATEWAY_BASE_URL */
	char *llm_base_url;        /* LLM_BASE_URL */
	char *llm_api_key;         /* LLM_API_KEY (optional: Ollama, llama.cpp) */
	char *llm_model;           /* LLM_MODEL */
	int64_t llm_daily_token_budget; /* LLM_DAILY_TOKEN_BUDGET, 0 = no budget */

	/* Bluesky */
	char *owner_handle;     /* OWNER_BLUESKY_SOCIAL_HANDLE */
	char *owner_did;        /* OWNER_BLUESKY_SOCIAL_HANDLE_DID */
	char *bsky_username;    /* AGENT_BLUESKY_USERNAME */
	char *bsky_password;    /* AGENT_BLUESKY_PASSWORD */
	char *bluesky_service;  /* BLUESKY_SERVICE */

	/* GitHub */
	char *github_username; /* AGENT_GITHUB_USERNAME */
	char *github_token;    /* AGENT_GITHUB_TOKEN */
	char *github_api_url;  /* GITHUB_API_URL */

	/* agent-space, dashboard, coordination */
	char *space_url;      /* SPACE_URL (NULL → discovery) */
	int max_acl;          /* MAX_ACL */
	char *dashboard_addr; /* DASHBOARD_ADDR host:port, "off" disables */
	char *redis_url;      /* REDIS_URL */

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
 * the --memory flag, or NULL. Returns the number of problems (0 = valid);
 * the struct is filled with defaults where a value was bad, so callers may
 * still print a full report. */
int config_load(struct ga_config *cfg, const struct env_file *env, const char *home,
		const char *memory_dir, struct config_problems *problems);
void config_free(struct ga_config *cfg);

/* Which features the daemon can run with this configuration. */
void config_features(const struct ga_config *cfg, struct config_feature out[CONFIG_FEATURE_COUNT]);

/* True if a variable name looks like it holds a secret (…TOKEN, …PASSWORD,
 * …SECRET, …API_KEY, …_KEY). */
bool config_is_secret_name(const char *name);

/* Registers every secret-looking value of env (file and process environment)
 * with the logger. */
void config_register_secrets(const struct env_file *env);

#endif

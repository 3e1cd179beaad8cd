/*
 * validator_cli — `general-agent validate`. Contract in validator_cli.h.
 */
#include "modules/validator/validator_cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "common/strbuf.h"
#include "common/utf8.h"
#include "common/xalloc.h"
#include "modules/validator/validator.h"
#include "modules/validator/validator_text.h"

static const char usage_text[] =
        "usage: general-agent validate [options] [--] TEXT...\n"
        "\n"
        "Runs the post-generation validator on TEXT (several words are joined with\n"
        "spaces) and prints the verdict, the rule, the reason and every score.\n"
        "Options end at the first TEXT word; put -- before a TEXT that starts\n"
        "with '-'.\n"
        "\n"
        "options:\n"
        "  --mode action|discussion   conversation mode (default discussion)\n"
        "  --platform space|bluesky|github\n"
        "                             length limits: space 50000 UTF-16 units,\n"
        "                             bluesky 300 graphemes, github 65536 chars\n"
        "                             (default space)\n"
        "  --history FILE             recent messages of the conversation, oldest\n"
        "                             first: one message per line, or JSON lines\n"
        "                             {\"text\": \"...\", \"author\": \"...\",\n"
        "                             \"role\": \"host|peer|self\"}; the last 50 are\n"
        "                             kept. As in the room, host lines are context\n"
        "                             (never compared), peer and self lines are\n"
        "                             agents' messages; a line without a role is a\n"
        "                             peer's. With roles, --since-host, --own and\n"
        "                             --agents default to what the history shows\n"
        "  --json                     print one JSON object: {\"verdict\", \"rule\",\n"
        "                             \"reason\", \"scores\": {...}}\n"
        "  --role actor|reviewer|observer   space role (default actor)\n"
        "  --not-owner                this agent does not own the pending action\n"
        "  --request TEXT             the host's pending action request\n"
        "  --repo OWNER/NAME          repo detected in the conversation\n"
        "  --agents N                 connected agents including self (default 1)\n"
        "  --since-host N             agent messages since the host last spoke\n"
        "  --own N                    own messages in this host turn\n"
        "  --commitments N            commitments carried by the message\n"
        "  --members A,B,...          the room's members by name besides the\n"
        "                             history's authors (\"Bob takes it\" gives Bob\n"
        "                             a task only if Bob is known as a member)\n"
        "  -h, --help                 this text\n"
        "\n"
        "exit status: 0 when a verdict was printed (whatever it is), 64 usage\n"
        "error, 65 unreadable or malformed history file.\n";

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "general-agent validate: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\nTry 'general-agent validate --help'.\n");
	va_end(ap);
	return VALIDATOR_CLI_EX_USAGE;
}

static int parse_count(const char *s, size_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > 1000000)
		return -1;
	*out = (size_t)v;
	return 0;
}

/* What the history says about the room, as the daemon derives it. */
struct history_facts {
	bool roles;            /* some line carried a role */
	size_t since_host;     /* agent lines after the last host line */
	size_t own_since_host; /* self lines after the last host line */
	char peers[16][64];    /* distinct peer authors (bounded; more count as one) */
	size_t npeers;
};

static void note_peer(struct history_facts *h, const char *author)
{
	for (size_t i = 0; i < h->npeers; i++)
		if (strcmp(h->peers[i], author) == 0)
			return;
	if (h->npeers < sizeof h->peers / sizeof h->peers[0])
		snprintf(h->peers[h->npeers++], sizeof h->peers[0], "%s", author);
}

/* role: "host" (or "human": context only, never compared), "peer" (another
 * agent), "self" (this agent). Returns -1 for anything else. */
static int parse_role(const char *r, bool *agent, bool *self)
{
	*self = false;
	if (strcmp(r, "host") == 0 || strcmp(r, "human") == 0) {
		*agent = false;
		return 0;
	}
	*agent = true;
	if (strcmp(r, "peer") == 0)
		return 0;
	if (strcmp(r, "self") == 0) {
		*self = true;
		return 0;
	}
	return -1;
}

/* Loads FILE into w. Returns 0, or -1 with a message on stderr. */
static int load_history(const char *path, struct echo_window *w, struct history_facts *h)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "general-agent validate: cannot read history file %s: %s\n", path,
		        strerror(errno));
		return -1;
	}
	struct strbuf all = {0};
	sb_init(&all, VALIDATOR_CLI_HISTORY_MAX_BYTES);
	char chunk[8192];
	size_t n;
	int rc = 0;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
		if (sb_append(&all, chunk, n) != 0) {
			fprintf(stderr,
			        "general-agent validate: history file %s is larger than %d bytes\n",
			        path, VALIDATOR_CLI_HISTORY_MAX_BYTES);
			rc = -1;
			break;
		}
	}
	if (rc == 0 && ferror(f)) {
		fprintf(stderr, "general-agent validate: error reading %s\n", path);
		rc = -1;
	}
	fclose(f);

	const char *s = sb_cstr(&all);
	size_t len = all.len, lineno = 0, i = 0;
	while (rc == 0 && i < len) {
		const char *nl = memchr(s + i, '\n', len - i);
		size_t e = nl ? (size_t)(nl - s) : len;
		lineno++;
		const char *line = s + i;
		size_t ll = e - i;
		i = e + 1;
		if (ll > 0 && line[ll - 1] == '\r')
			ll--;
		size_t k = 0;
		while (k < ll && (line[k] == ' ' || line[k] == '\t'))
			k++;
		if (k == ll)
			continue; /* blank line */
		if (ll > VALIDATOR_CLI_LINE_MAX_BYTES) {
			fprintf(stderr,
			        "general-agent validate: %s:%zu: line longer than %d bytes\n", path,
			        lineno, VALIDATOR_CLI_LINE_MAX_BYTES);
			rc = -1;
			break;
		}
		if (memchr(line, '\0', ll) || !utf8_valid(line, ll)) {
			fprintf(stderr, "general-agent validate: %s:%zu: not valid UTF-8 text\n",
			        path, lineno);
			rc = -1;
			break;
		}
		bool agent = true, self = false;
		if (line[k] == '{') {
			cJSON *j = cJSON_ParseWithLength(line, ll);
			const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "text");
			const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "author");
			const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "role");
			if (!j || !cJSON_IsString(t) || (a && !cJSON_IsString(a)) ||
			    (r && !cJSON_IsString(r))) {
				fprintf(stderr,
				        "general-agent validate: %s:%zu: a JSON line needs a "
				        "string "
				        "\"text\" (and \"author\" and \"role\", if present, must "
				        "be "
				        "strings)\n",
				        path, lineno);
				cJSON_Delete(j);
				rc = -1;
				break;
			}
			if (r && parse_role(r->valuestring, &agent, &self) != 0) {
				fprintf(stderr,
				        "general-agent validate: %s:%zu: role must be host, peer "
				        "or "
				        "self, not '%.40s'\n",
				        path, lineno, r->valuestring);
				cJSON_Delete(j);
				rc = -1;
				break;
			}
			h->roles |= r != NULL;
			const char *author = a ? a->valuestring : NULL;
			echo_window_push(w, author, agent, t->valuestring);
			if (agent && !self && author)
				note_peer(h, author);
			cJSON_Delete(j);
		} else {
			char *copy = xstrndup(line, ll);
			echo_window_push(w, NULL, true, copy);
			free(copy);
		}
		if (!agent) {
			h->since_host = h->own_since_host = 0;
		} else {
			h->since_host++;
			h->own_since_host += self;
		}
	}
	sb_free(&all);
	return rc;
}

static double r4(double x)
{
	return round(x * 10000.0) / 10000.0;
}

static void print_json(const struct validator_decision *d, const struct echo_result *e,
                       bool have_history, const char *matched_text)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "verdict", validator_verdict_name(d->verdict));
	cJSON_AddStringToObject(o, "rule", d->rule);
	cJSON_AddStringToObject(o, "reason", d->reason);
	if (d->text)
		cJSON_AddStringToObject(o, "text", d->text);
	cJSON_AddBoolToObject(o, "salvage", d->salvage);
	cJSON *s = cJSON_AddObjectToObject(o, "scores");
	cJSON_AddNumberToObject(s, "length", (double)d->length);
	cJSON_AddNumberToObject(s, "sentences", (double)d->sentences);
	if (have_history) {
		cJSON_AddBoolToObject(s, "echo", e->echo);
		cJSON_AddStringToObject(s, "strategy", e->strategy_text);
		cJSON_AddNumberToObject(s, "score", r4(e->score));
		cJSON_AddNumberToObject(s, "pair", r4(e->pair));
		cJSON_AddNumberToObject(s, "lcs_dice", r4(e->dice));
		cJSON_AddNumberToObject(s, "tfidf_cosine", r4(e->cosine));
		cJSON_AddNumberToObject(s, "novelty", r4(e->novelty));
		cJSON_AddNumberToObject(s, "simhash_distance", e->simhash_distance);
		cJSON_AddNumberToObject(s, "tokens", (double)e->candidate_tokens);
		cJSON_AddNumberToObject(s, "pairwise", (double)e->pairwise_n);
		cJSON_AddNumberToObject(s, "pool", (double)e->pool_n);
		cJSON_AddBoolToObject(s, "question", e->question);
		cJSON_AddBoolToObject(s, "new_artifact", e->new_artifact);
		cJSON_AddBoolToObject(s, "judge_band", e->judge_band);
		cJSON_AddBoolToObject(s, "new_number", e->new_number);
		cJSON_AddBoolToObject(s, "added_number", e->added_number);
		cJSON_AddBoolToObject(s, "new_owner", e->new_owner);
		cJSON_AddBoolToObject(s, "transfer", e->transfer);
		cJSON_AddBoolToObject(s, "polarity", e->polarity);
		if (matched_text)
			cJSON_AddStringToObject(s, "matched", matched_text);
		else
			cJSON_AddNullToObject(s, "matched");
	}
	char *out = cJSON_PrintUnformatted(o);
	puts(out);
	free(out);
	cJSON_Delete(o);
}

static void print_text(const struct validator_decision *d, const struct echo_result *e,
                       bool have_history, const char *matched_text)
{
	printf("verdict: %s\n", validator_verdict_name(d->verdict));
	printf("rule:    %s\n", d->rule);
	printf("reason:  %s\n", d->reason);
	if (d->text)
		printf("text:    %s\n", d->text);
	if (d->salvage)
		printf("salvage: yes (commitments may still be enqueued)\n");
	printf("scores:  length=%zu sentences=%zu\n", d->length, d->sentences);
	if (!have_history) {
		printf("echo:    no history given (--history FILE)\n");
		return;
	}
	printf("echo:    %s strategy=%s score=%.4f\n", e->echo ? "yes" : "no", e->strategy_text,
	       e->score);
	printf("         pair=%.4f lcs_dice=%.4f tfidf_cosine=%.4f novelty=%.4f\n", e->pair,
	       e->dice, e->cosine, e->novelty);
	printf("         simhash_distance=%d tokens=%zu pairwise=%zu pool=%zu\n",
	       e->simhash_distance, e->candidate_tokens, e->pairwise_n, e->pool_n);
	printf("         question=%s new_artifact=%s judge_band=%s\n", e->question ? "yes" : "no",
	       e->new_artifact ? "yes" : "no", e->judge_band ? "yes" : "no");
	printf("         new_number=%s added_number=%s new_owner=%s transfer=%s polarity=%s\n",
	       e->new_number ? "yes" : "no", e->added_number ? "yes" : "no",
	       e->new_owner ? "yes" : "no", e->transfer ? "yes" : "no", e->polarity ? "yes" : "no");
	if (matched_text)
		printf("matched: %s\n", matched_text);
}

/* The judge used by the CLI: none is configured, so it is never asked; a
 * refer can only come from a caller that wires one. */

int validator_cli_main(int argc, char **argv)
{
	enum {
		OPT_MODE = 256,
		OPT_PLATFORM,
		OPT_HISTORY,
		OPT_JSON,
		OPT_ROLE,
		OPT_NOT_OWNER,
		OPT_REQUEST,
		OPT_REPO,
		OPT_AGENTS,
		OPT_SINCE_HOST,
		OPT_OWN,
		OPT_COMMITMENTS,
		OPT_MEMBERS
	};
	static const struct option opts[] = {
	        {"mode", required_argument, NULL, OPT_MODE},
	        {"platform", required_argument, NULL, OPT_PLATFORM},
	        {"history", required_argument, NULL, OPT_HISTORY},
	        {"json", no_argument, NULL, OPT_JSON},
	        {"role", required_argument, NULL, OPT_ROLE},
	        {"not-owner", no_argument, NULL, OPT_NOT_OWNER},
	        {"request", required_argument, NULL, OPT_REQUEST},
	        {"repo", required_argument, NULL, OPT_REPO},
	        {"agents", required_argument, NULL, OPT_AGENTS},
	        {"since-host", required_argument, NULL, OPT_SINCE_HOST},
	        {"own", required_argument, NULL, OPT_OWN},
	        {"commitments", required_argument, NULL, OPT_COMMITMENTS},
	        {"members", required_argument, NULL, OPT_MEMBERS},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	struct validator_context ctx = {.is_action_owner = true, .connected_agents = 1};
	const char *history = NULL;
	bool json = false, set_agents = false, set_since = false, set_own = false;
	const char *members[ECHO_MEMBERS_MAX];
	size_t nmembers = 0;

	optind = 0; /* reset getopt: the caller may have parsed its own flags */
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(usage_text, stdout);
			return VALIDATOR_CLI_EX_OK;
		case OPT_MODE:
			if (strcmp(optarg, "action") == 0)
				ctx.mode = VALIDATOR_MODE_ACTION;
			else if (strcmp(optarg, "discussion") == 0)
				ctx.mode = VALIDATOR_MODE_DISCUSSION;
			else
				return usage_error("--mode must be action or discussion, not '%s'",
				                   optarg);
			break;
		case OPT_PLATFORM:
			if (strcmp(optarg, "space") == 0)
				ctx.platform = VALIDATOR_PLATFORM_SPACE;
			else if (strcmp(optarg, "bluesky") == 0)
				ctx.platform = VALIDATOR_PLATFORM_BLUESKY;
			else if (strcmp(optarg, "github") == 0)
				ctx.platform = VALIDATOR_PLATFORM_GITHUB;
			else
				return usage_error("--platform must be space, bluesky or github, "
				                   "not '%s'",
				                   optarg);
			break;
		case OPT_HISTORY:
			history = optarg;
			break;
		case OPT_JSON:
			json = true;
			break;
		case OPT_ROLE:
			if (strcmp(optarg, "actor") == 0)
				ctx.role = VALIDATOR_ROLE_ACTOR;
			else if (strcmp(optarg, "reviewer") == 0)
				ctx.role = VALIDATOR_ROLE_REVIEWER;
			else if (strcmp(optarg, "observer") == 0)
				ctx.role = VALIDATOR_ROLE_OBSERVER;
			else
				return usage_error("--role must be actor, reviewer or observer, "
				                   "not '%s'",
				                   optarg);
			break;
		case OPT_NOT_OWNER:
			ctx.is_action_owner = false;
			break;
		case OPT_REQUEST:
			ctx.pending_request = optarg;
			break;
		case OPT_REPO:
			ctx.detected_repo = optarg;
			break;
		case OPT_MEMBERS:
			/* split in place: optarg lives as long as argv */
			for (char *p = optarg; *p && nmembers < ECHO_MEMBERS_MAX;) {
				char *comma = strchr(p, ',');
				if (comma)
					*comma = '\0';
				if (*p)
					members[nmembers++] = p;
				if (!comma)
					break;
				p = comma + 1;
			}
			ctx.members = members;
			ctx.n_members = nmembers;
			break;
		case OPT_AGENTS:
		case OPT_SINCE_HOST:
		case OPT_OWN:
		case OPT_COMMITMENTS: {
			size_t v;
			if (parse_count(optarg, &v) != 0)
				return usage_error("expected a count (0..1000000), got '%s'",
				                   optarg);
			if (c == OPT_AGENTS) {
				ctx.connected_agents = v;
				set_agents = true;
			} else if (c == OPT_SINCE_HOST) {
				ctx.agent_msgs_since_host = v;
				set_since = true;
			} else if (c == OPT_OWN) {
				ctx.own_msgs = v;
				set_own = true;
			} else
				ctx.n_commitments = v;
			break;
		}
		case ':':
			return usage_error("option '%s' needs a value", argv[optind - 1]);
		default:
			if (optopt > 0 && optopt < 256)
				return usage_error("unknown option '-%c' (a TEXT starting with '-' "
				                   "goes after --)",
				                   optopt);
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return usage_error("%s", "missing TEXT to validate");

	struct strbuf text = {0};
	sb_init(&text, VALIDATOR_INPUT_MAX_BYTES + 1);
	for (int i = optind; i < argc; i++) {
		if (i > optind)
			sb_putc(&text, ' ');
		sb_puts(&text, argv[i]);
	}

	struct echo_window *w = NULL;
	if (history) {
		w = echo_window_new(VALIDATOR_CLI_WINDOW);
		struct history_facts facts = {0};
		if (load_history(history, w, &facts) != 0) {
			echo_window_free(w);
			sb_free(&text);
			return VALIDATOR_CLI_EX_DATAERR;
		}
		ctx.window = w;
		/* With roles the history says what the room would know: agent
		 * messages since the host spoke (§7), own messages in this host
		 * turn (§5.3), the agents present (peers seen + self). */
		if (facts.roles) {
			if (!set_since)
				ctx.agent_msgs_since_host = facts.since_host;
			if (!set_own)
				ctx.own_msgs = facts.own_since_host;
			if (!set_agents)
				ctx.connected_agents = facts.npeers + 1;
		}
	}

	struct validator_decision d;
	validator_validate(sb_cstr(&text), &ctx, &d);

	/* Every score, even when an earlier check decided: this is the tuning
	 * tool. The echo is measured on the text that would be sent. */
	struct echo_result e;
	memset(&e, 0, sizeof e);
	e.matched = -1;
	const char *matched_text = NULL;
	if (w) {
		if (d.echo_ran) {
			e = d.echo;
		} else {
			const char *t = d.text ? d.text : sb_cstr(&text);
			size_t nlen;
			char *norm = validator_text_normalize(t, strlen(t), &nlen);
			struct echo_params p = echo_params_default();
			echo_window_evaluate_members(w, norm, nlen, ctx.members, ctx.n_members, &p,
			                             &e);
			free(norm);
		}
		const char *texts[ECHO_PAIRWISE_MAX];
		size_t nt = echo_window_recent_texts(w, texts, ECHO_PAIRWISE_MAX);
		if (e.matched >= 0 && (size_t)e.matched < nt)
			matched_text = texts[e.matched];
	}
	if (json)
		print_json(&d, &e, w != NULL, matched_text);
	else
		print_text(&d, &e, w != NULL, matched_text);
	fflush(stdout);

	validator_decision_clear(&d);
	echo_window_free(w);
	sb_free(&text);
	return VALIDATOR_CLI_EX_OK;
}

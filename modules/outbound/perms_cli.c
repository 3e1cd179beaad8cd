/* `general-agent cross`: see perms_cli.h. */
#include "modules/outbound/perms_cli.h"

#include <stdlib.h>
#include <string.h>

#include "common/fsx.h"
#include "modules/outbound/audit.h"
#include "modules/outbound/perms.h"

static const char usage[] =
        "usage: general-agent cross                  show mode, patterns, recent attempts\n"
        "       general-agent cross mode MODE        bypass | allowlist | denylist\n"
        "       general-agent cross allow PATTERN    add an allowed pattern\n"
        "       general-agent cross deny PATTERN     add a denied pattern\n"
        "       general-agent cross remove PATTERN   remove a pattern from both lists\n"
        "       general-agent cross clear            back to bypass, no patterns\n"
        "       general-agent cross check TARGET     would a send be allowed, and why\n"
        "targets: space:<room>, bluesky:post, bluesky:reply:<did>,\n"
        "         bluesky:like:<did>, bluesky:follow:<did>, bluesky:delete (our own\n"
        "         records: feed pruning),\n"
        "         github:<owner>:<repo>:issue:<n>, github:<owner>:<repo>:new-issue,\n"
        "         github:<owner>:<repo>:pr:<n>; in a pattern '*' is a whole segment\n"
        "         and matches one or more segments.\n";

static int usage_error(FILE *err, const char *what, const char *arg)
{
	fprintf(err, "general-agent cross: %s '%s'\n", what, arg);
	fputs(usage, err);
	return PERMS_CLI_EX_USAGE;
}

static void print_list(const struct perms *p, enum perms_list w, FILE *out)
{
	fputs(w == PERMS_LIST_ALLOW ? "Allowed patterns:\n" : "Denied patterns:\n", out);
	if (perms_count(p, w) == 0)
		fputs("  (none)\n", out);
	for (size_t i = 0; i < perms_count(p, w); i++)
		fprintf(out, "  - %s\n", perms_pattern(p, w, i));
}

static int show(const char *memory_dir, const char *agent, const struct perms *p, FILE *out)
{
	char *path = fsx_join(memory_dir, PERMS_FILE_NAME);
	if (perms_broken(p)) {
		fprintf(out,
		        "Send permissions for agent \"%s\": UNREADABLE, every send is refused\n",
		        agent);
		fprintf(out, "  %s\n", perms_broken(p));
		fputs("Fix the file or run `general-agent cross clear`.\n", out);
	} else {
		fprintf(out, "Send permissions for agent \"%s\": %s mode\n", agent,
		        perms_mode_name(perms_mode_of(p)));
		print_list(p, PERMS_LIST_ALLOW, out);
		print_list(p, PERMS_LIST_DENY, out);
		if (perms_mode_of(p) == PERMS_BYPASS &&
		    perms_count(p, PERMS_LIST_ALLOW) + perms_count(p, PERMS_LIST_DENY) > 0)
			fputs("(bypass mode: the patterns are kept but not applied)\n", out);
	}
	fprintf(out, "File: %s\n", path);
	free(path);
	cJSON *tail = audit_tail(memory_dir, PERMS_CLI_AUDIT_SHOWN);
	int n = cJSON_GetArraySize(tail);
	if (n == 0) {
		fputs("Recent send attempts: none\n", out);
	} else {
		fprintf(out, "Recent send attempts (last %d):\n", n);
		const cJSON *e;
		cJSON_ArrayForEach(e, tail)
		{
			const cJSON *pat = cJSON_GetObjectItemCaseSensitive(e, "pattern");
			const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "time");
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, "verdict");
			const cJSON *s = cJSON_GetObjectItemCaseSensitive(e, "source");
			const cJSON *g = cJSON_GetObjectItemCaseSensitive(e, "target");
			fprintf(out, "  %s  %-5s  %-10s  %s",
			        cJSON_IsString(t) ? t->valuestring : "?",
			        cJSON_IsString(v) ? v->valuestring : "?",
			        cJSON_IsString(s) ? s->valuestring : "?",
			        cJSON_IsString(g) ? g->valuestring : "?");
			if (cJSON_IsString(pat))
				fprintf(out, "  (pattern %s)", pat->valuestring);
			fputc('\n', out);
		}
	}
	cJSON_Delete(tail);
	return PERMS_CLI_EX_OK;
}

static int save(const char *memory_dir, const struct perms *p, FILE *err)
{
	struct ga_err e;
	err_clear(&e);
	char *path = fsx_join(memory_dir, PERMS_FILE_NAME);
	int rc = perms_save(p, path, &e);
	free(path);
	if (rc < 0) {
		fprintf(err, "general-agent cross: cannot save the send permissions: %s\n", e.msg);
		return PERMS_CLI_EX_IOERR;
	}
	return PERMS_CLI_EX_OK;
}

static int check(const struct perms *p, const char *agent, const char *target, FILE *out)
{
	struct perms_verdict v;
	perms_check(p, target, &v);
	if (v.allowed) {
		fprintf(out, "Allowed: agent \"%s\" may send to \"%s\"\n", agent, v.target);
		fprintf(out, "Why: %s\n", v.d.reason);
		return PERMS_CLI_EX_OK;
	}
	char *txt = perms_denial_text(p, agent, target, &v);
	fputs(txt, out);
	free(txt);
	return v.target[0] || perms_broken(p) ? PERMS_CLI_EX_DENIED : PERMS_CLI_EX_DATAERR;
}

int perms_cli(const char *memory_dir, const char *agent_name, int argc, char **argv, FILE *out,
              FILE *err)
{
	const char *agent = agent_name ? agent_name : "";
	const char *sub = argc > 1 ? argv[1] : NULL;
	int want = -1; /* arguments after the subcommand */
	if (!sub)
		want = 0;
	else if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
		fputs(usage, out);
		return PERMS_CLI_EX_OK;
	} else if (!strcmp(sub, "clear"))
		want = 0;
	else if (!strcmp(sub, "mode") || !strcmp(sub, "allow") || !strcmp(sub, "deny") ||
	         !strcmp(sub, "remove") || !strcmp(sub, "check"))
		want = 1;
	else
		return usage_error(err, "unknown subcommand", sub);
	int have = argc > 1 ? argc - 2 : 0;
	if (have != want)
		return usage_error(err,
		                   want ? "exactly one argument is needed after"
		                        : "no argument is taken after",
		                   sub ? sub : "cross");

	struct ga_err e;
	err_clear(&e);
	struct perms *p = perms_open(memory_dir, &e);
	int rc = PERMS_CLI_EX_OK;
	const char *arg = want ? argv[2] : NULL;
	if (!sub) {
		rc = show(memory_dir, agent, p, out);
	} else if (!strcmp(sub, "clear")) {
		perms_clear(p);
		rc = save(memory_dir, p, err);
		if (rc == 0)
			fputs("Send permissions cleared: bypass mode, no patterns.\n", out);
	} else if (!strcmp(sub, "check")) {
		rc = check(p, agent, arg, out);
	} else if (perms_broken(p)) {
		fprintf(err,
		        "general-agent cross: the send permissions file is unreadable (%s); fix it "
		        "or run `general-agent cross clear`\n",
		        perms_broken(p));
		rc = PERMS_CLI_EX_DATAERR;
	} else if (!strcmp(sub, "mode")) {
		int m = perms_mode_parse(arg);
		if (m < 0) {
			rc = usage_error(err, "bypass, allowlist or denylist; unknown mode", arg);
		} else {
			perms_set_mode(p, (enum perms_mode)m);
			rc = save(memory_dir, p, err);
			if (rc == 0)
				fprintf(out, "Send permissions: %s mode.\n", arg);
		}
	} else if (!strcmp(sub, "allow") || !strcmp(sub, "deny")) {
		enum perms_list w = !strcmp(sub, "allow") ? PERMS_LIST_ALLOW : PERMS_LIST_DENY;
		int added = perms_add(p, w, arg, &e);
		if (added < 0) {
			fprintf(err, "general-agent cross %s: pattern refused: %s\n", sub, e.msg);
			rc = PERMS_CLI_EX_DATAERR;
		} else {
			const char *canon = perms_pattern(p, w, perms_count(p, w) - 1);
			if (added == 0)
				fprintf(out, "Already %s: %s\n",
				        w == PERMS_LIST_ALLOW ? "allowed" : "denied", arg);
			else
				rc = save(memory_dir, p, err);
			if (rc == 0 && added) {
				fprintf(out, "%s pattern added: %s\n",
				        w == PERMS_LIST_ALLOW ? "Allowed" : "Denied", canon);
				enum perms_mode need =
				        w == PERMS_LIST_ALLOW ? PERMS_ALLOWLIST : PERMS_DENYLIST;
				if (perms_mode_of(p) != need)
					fprintf(out,
					        "Note: the mode is %s, so this list is not "
					        "applied; "
					        "run `general-agent cross mode %s` to apply it.\n",
					        perms_mode_name(perms_mode_of(p)),
					        perms_mode_name(need));
			}
		}
	} else { /* remove */
		char canon[PERMS_KEY_MAX];
		if (perms_canonical(arg, true, canon, sizeof canon, &e) < 0) {
			fprintf(err, "general-agent cross remove: pattern refused: %s\n", e.msg);
			rc = PERMS_CLI_EX_DATAERR;
		} else if (perms_remove(p, canon) == 0) {
			fprintf(out, "No such pattern: %s (nothing changed)\n", canon);
		} else {
			rc = save(memory_dir, p, err);
			if (rc == 0)
				fprintf(out, "Pattern removed: %s\n", canon);
		}
	}
	perms_free(p);
	return rc;
}

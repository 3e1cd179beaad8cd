/* Send permissions: canonical keys, '*' globbing over segments, the file,
 * the refusal text. See perms.h for the rules. */
#define _POSIX_C_SOURCE 200809L
#include "modules/outbound/perms.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "common/fsx.h"
#include "common/json.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#define PERMS_ROOM_MAX  128
#define PERMS_OWNER_MAX 39
#define PERMS_REPO_MAX  100
#define PERMS_NUM_MAX   2147483647LL

struct perms {
	enum perms_mode mode;
	char *list[2][PERMS_MAX_PATTERNS];
	size_t n[2];
	char *path; /* set by perms_open: what perms_refresh watches */
	bool stat_valid, file_existed;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	bool is_broken;
	char broken[GA_ERR_MSG_MAX];
};

/* ---- segments ---------------------------------------------------------- */

struct segs {
	char buf[PERMS_KEY_MAX];
	char *s[PERMS_MAX_SEGMENTS];
	size_t n;
};

static void ascii_lower(char *s)
{
	for (; *s; s++)
		if (*s >= 'A' && *s <= 'Z')
			*s = (char)(*s - 'A' + 'a');
}

static bool is_star(const char *s)
{
	return s[0] == '*' && s[1] == '\0';
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static bool chars_in(const char *s, const char *extra)
{
	for (; *s; s++) {
		char c = *s;
		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
			continue;
		if (!strchr(extra, c))
			return false;
	}
	return true;
}

/* Splits s into sg with the byte-level checks every key and pattern share. */
static int split(const char *s, bool is_pattern, struct segs *sg, struct ga_err *err)
{
	size_t len = strlen(s);
	if (len == 0)
		return err_set(
		        err,
		        "the target is empty: write e.g. space:room or github:owner:repo:issue:1");
	if (len >= PERMS_KEY_MAX)
		return err_set(err, "\"%.40s...\" is %zu bytes long; at most %d are accepted", s,
		               len, PERMS_KEY_MAX - 1);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x80)
			return err_set(err,
			               "\"%s\" holds a non-ASCII character at byte %zu: look-alike "
			               "letters are refused, write the name in plain ASCII",
			               s, i + 1);
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f')
			return err_set(err, "\"%s\" holds whitespace at byte %zu", s, i + 1);
		if (c < 0x20 || c == 0x7f)
			return err_set(err, "\"%s\" holds a control character at byte %zu", s,
			               i + 1);
		if (c == '%')
			return err_set(
			        err,
			        "\"%s\" holds '%%': percent-encoded names are refused, write "
			        "the name plainly",
			        s);
	}
	memcpy(sg->buf, s, len + 1);
	sg->n = 0;
	char *p = sg->buf;
	for (;;) {
		char *colon = strchr(p, ':');
		if (colon)
			*colon = '\0';
		if (!*p)
			return err_set(err,
			               "\"%s\" has an empty segment (\"::\", or a leading or "
			               "trailing ':')",
			               s);
		if (sg->n == PERMS_MAX_SEGMENTS)
			return err_set(err, "\"%s\" has more than %d segments", s,
			               PERMS_MAX_SEGMENTS);
		if (strchr(p, '*')) {
			if (!is_pattern)
				return err_set(err,
				               "the target \"%s\" holds '*': only patterns may", s);
			if (!is_star(p))
				return err_set(err,
				               "segment \"%s\" of \"%s\": '*' must be a whole "
				               "segment (it matches one or more segments)",
				               p, s);
		}
		sg->s[sg->n++] = p;
		if (!colon)
			break;
		p = colon + 1;
	}
	return 0;
}

/* ---- canonical spelling per platform ----------------------------------- */

enum seg_class { C_LIT, C_ROOM, C_OWNER, C_REPO, C_NUM, C_METHOD, C_DIDID };

static bool class_ok(enum seg_class c, const char *lit, const char *s)
{
	size_t n = strlen(s);
	switch (c) {
	case C_LIT:
		return strcmp(lit, s) == 0;
	case C_ROOM:
		return n <= PERMS_ROOM_MAX;
	case C_OWNER:
		return n <= PERMS_OWNER_MAX && s[0] != '-' && chars_in(s, "-");
	case C_REPO:
		return n <= PERMS_REPO_MAX && strcmp(s, ".") && strcmp(s, "..") &&
		       strcmp(s, ".git") && chars_in(s, "._-");
	case C_NUM: {
		if (!all_digits(s) || s[0] == '0' || n > 10)
			return false;
		return strtoll(s, NULL, 10) <= PERMS_NUM_MAX;
	}
	case C_METHOD:
		return chars_in(s, "");
	case C_DIDID:
		return n > 0; /* did:web paths keep their case: any ASCII graphic */
	}
	return false;
}

struct tmpl {
	enum seg_class c[PERMS_MAX_SEGMENTS];
	const char *lit[PERMS_MAX_SEGMENTS];
	size_t n;
};

static void tmpl_push(struct tmpl *t, enum seg_class c, const char *lit)
{
	t->c[t->n] = c;
	t->lit[t->n] = lit;
	t->n++;
}

/* The target forms, DIDs expanded to every length that fits. Calls fn on
 * each; stops when fn returns true. */
/* GitHub target kinds: those about one issue or pull request number, and
 * those about the repository as a whole (perms.h lists what each is). */
static const char *const gh_numbered[] = {"issue", "pr",     "reaction", "delete",
                                          "edit",  "review", "merge"};
static const char *const gh_bare[] = {"new-issue", "new-pr", "push", "delete-branch",
                                      "create-repo"};

static bool for_each_form(bool (*fn)(const struct tmpl *, void *), void *ud)
{
	struct tmpl t;
	t.n = 0;
	tmpl_push(&t, C_LIT, "space");
	tmpl_push(&t, C_ROOM, NULL);
	if (fn(&t, ud))
		return true;
	t.n = 0;
	tmpl_push(&t, C_LIT, "bluesky");
	tmpl_push(&t, C_LIT, "post");
	if (fn(&t, ud))
		return true;
	/* the deletion of one of our own records (feed pruning) */
	t.n = 0;
	tmpl_push(&t, C_LIT, "bluesky");
	tmpl_push(&t, C_LIT, "delete");
	if (fn(&t, ud))
		return true;
	/* a reply to, a like of a post by, and a follow of, <did> */
	static const char *const acts[] = {"reply", "like", "follow"};
	for (size_t a = 0; a < sizeof acts / sizeof *acts; a++) {
		t.n = 0;
		tmpl_push(&t, C_LIT, "bluesky");
		tmpl_push(&t, C_LIT, acts[a]);
		tmpl_push(&t, C_LIT, "did");
		tmpl_push(&t, C_METHOD, NULL);
		while (t.n < PERMS_MAX_SEGMENTS) {
			tmpl_push(&t, C_DIDID, NULL);
			if (fn(&t, ud))
				return true;
		}
	}
	size_t nnum = sizeof gh_numbered / sizeof *gh_numbered;
	for (size_t k = 0; k < nnum + sizeof gh_bare / sizeof *gh_bare; k++) {
		t.n = 0;
		tmpl_push(&t, C_LIT, "github");
		tmpl_push(&t, C_OWNER, NULL);
		tmpl_push(&t, C_REPO, NULL);
		tmpl_push(&t, C_LIT, k < nnum ? gh_numbered[k] : gh_bare[k - nnum]);
		if (k < nnum)
			tmpl_push(&t, C_NUM, NULL);
		if (fn(&t, ud))
			return true;
	}
	return false;
}

/* Glob: pattern segments p[pi..] against template positions t[ti..]; '*'
 * takes one or more positions. */
static bool match_tmpl(const struct segs *p, size_t pi, const struct tmpl *t, size_t ti)
{
	if (pi == p->n)
		return ti == t->n;
	if (ti == t->n)
		return false;
	if (is_star(p->s[pi])) {
		for (size_t k = ti + 1; k <= t->n; k++)
			if (match_tmpl(p, pi + 1, t, k))
				return true;
		return false;
	}
	return class_ok(t->c[ti], t->lit[ti], p->s[pi]) && match_tmpl(p, pi + 1, t, ti + 1);
}

static bool form_matches(const struct tmpl *t, void *ud)
{
	return match_tmpl(ud, 0, t, 0);
}

/* Folds and trims the segments of a key or pattern in place. */
static void fold(struct segs *sg)
{
	ascii_lower(sg->s[0]);
	bool github = strcmp(sg->s[0], "github") == 0;
	bool bluesky = strcmp(sg->s[0], "bluesky") == 0;
	if (!github && !bluesky) {
		/* space rooms are exact; under a leading '*' only the fixed words fold */
		static const char *const words[] = {
		        "issue",  "new-issue", "pr",       "post",          "reply",      "like",
		        "follow", "delete",    "did",      "edit",          "review",     "merge",
		        "new-pr", "push",      "reaction", "delete-branch", "create-repo"};
		if (is_star(sg->s[0]))
			for (size_t i = 1; i < sg->n; i++)
				for (size_t w = 0; w < sizeof words / sizeof *words; w++)
					if (!strcasecmp(sg->s[i], words[w]))
						ascii_lower(sg->s[i]);
		return;
	}
	bool did_web =
	        bluesky && sg->n > 3 && !strcmp(sg->s[2], "did") && !strcasecmp(sg->s[3], "web");
	for (size_t i = 1; i < sg->n; i++) {
		if (did_web && i >= 5)
			continue; /* did:web path parts keep their case */
		ascii_lower(sg->s[i]);
		if (github) {
			size_t n = strlen(sg->s[i]);
			if (n > 4 && !strcmp(sg->s[i] + n - 4, ".git"))
				sg->s[i][n - 4] = '\0';
		}
	}
}

static bool has_star(const struct segs *sg)
{
	for (size_t i = 0; i < sg->n; i++)
		if (is_star(sg->s[i]))
			return true;
	return false;
}

/* Specific complaints for a key without '*' (positions are known). */
static int explain_fixed(const struct segs *sg, const char *s, struct ga_err *err)
{
	const char *plat = sg->s[0];
	if (!strcmp(plat, "space")) {
		if (sg->n != 2)
			return err_set(
			        err, "\"%s\": a space target is space:<room> (2 segments, not %zu)",
			        s, sg->n);
		return err_set(err, "\"%s\": the room name is longer than %d bytes", s,
		               PERMS_ROOM_MAX);
	}
	if (!strcmp(plat, "bluesky")) {
		if (sg->n >= 2 && (!strcmp(sg->s[1], "post") || !strcmp(sg->s[1], "delete")))
			return err_set(err, "\"%s\": bluesky:%s takes nothing after it", s,
			               sg->s[1]);
		if (sg->n >= 2 && (!strcmp(sg->s[1], "reply") || !strcmp(sg->s[1], "like") ||
		                   !strcmp(sg->s[1], "follow")))
			return err_set(err,
			               "\"%s\": a %s target is bluesky:%s:<did> with a DID "
			               "such as did:plc:abc123 (lowercase letters and digits)",
			               s, sg->s[1], sg->s[1]);
		return err_set(err,
		               "\"%s\": a Bluesky target is bluesky:post, bluesky:reply:<did>, "
		               "bluesky:like:<did>, bluesky:follow:<did> or bluesky:delete",
		               s);
	}
	/* github */
	if (sg->n < 4)
		return err_set(err,
		               "\"%s\": a GitHub target is github:<owner>:<repo>:issue:<n>, "
		               "github:<owner>:<repo>:new-issue or github:<owner>:<repo>:pr:<n>",
		               s);
	if (!class_ok(C_OWNER, NULL, sg->s[1]))
		return err_set(err,
		               "\"%s\": \"%s\" is not a GitHub owner name (letters, digits and "
		               "'-', at most %d, not starting with '-')",
		               s, sg->s[1], PERMS_OWNER_MAX);
	if (!class_ok(C_REPO, NULL, sg->s[2]))
		return err_set(err,
		               "\"%s\": \"%s\" is not a GitHub repository name (letters, digits, "
		               "'.', '_' and '-', at most %d)",
		               s, sg->s[2], PERMS_REPO_MAX);
	const char *kind = sg->s[3];
	for (size_t k = 0; k < sizeof gh_bare / sizeof *gh_bare; k++)
		if (!strcmp(kind, gh_bare[k]))
			return err_set(err, "\"%s\": %s takes nothing after it", s, kind);
	for (size_t k = 0; k < sizeof gh_numbered / sizeof *gh_numbered; k++) {
		if (strcmp(kind, gh_numbered[k]))
			continue;
		if (sg->n != 5)
			return err_set(err, "\"%s\": %s needs exactly one number after it", s,
			               kind);
		return err_set(err, "\"%s\": %s number \"%s\" is not a number from 1 to %lld", s,
		               kind, sg->s[4], PERMS_NUM_MAX);
	}
	return err_set(err,
	               "\"%s\": unknown GitHub target kind \"%s\" (issue, pr, reaction, delete, "
	               "edit, review, merge, new-issue, new-pr, push, delete-branch, "
	               "create-repo)",
	               s, kind);
}

int perms_canonical(const char *s, bool is_pattern, char *out, size_t cap, struct ga_err *err)
{
	struct segs sg;
	if (!s)
		return err_set(err, "no target given");
	if (split(s, is_pattern, &sg, err) < 0)
		return -1;
	char first[16];
	snprintf(first, sizeof first, "%s", sg.s[0]);
	ascii_lower(first);
	if (strcmp(first, "space") && strcmp(first, "bluesky") && strcmp(first, "github") &&
	    !is_star(first))
		return err_set(err,
		               "\"%s\": unknown platform \"%s\": a target starts with space, "
		               "bluesky or github",
		               s, sg.s[0]);
	fold(&sg);
	bool star = has_star(&sg);
	/* Numbers: leading zeros are trimmed where the segment's position is
	 * known (no '*' before it) and it is an issue/PR number; after a '*' a
	 * digit segment could be a number or a name ("007" is a valid owner),
	 * so "03" there is refused rather than guessed. */
	bool star_before = is_star(sg.s[0]);
	for (size_t i = 1; i < sg.n; i++) {
		char *seg = sg.s[i];
		if (seg[0] == '0' && seg[1] && all_digits(seg)) {
			if (star_before)
				return err_set(
				        err,
				        "\"%s\": write numbers without leading zeros after a "
				        "'*' (\"%s\")",
				        s, seg);
			if (!strcmp(sg.s[0], "github") && i == 4)
				while (seg[0] == '0' && seg[1])
					memmove(seg, seg + 1, strlen(seg));
		}
		if (is_star(seg))
			star_before = true;
	}
	if (!for_each_form(form_matches, &sg)) {
		if (!star)
			return explain_fixed(&sg, s, err);
		return err_set(
		        err,
		        "pattern \"%s\" cannot match any target (forms: space:<room>, "
		        "bluesky:post, bluesky:reply:<did>, bluesky:like:<did>, "
		        "bluesky:follow:<did>, bluesky:delete, github:<owner>:<repo>:<kind>:<n> "
		        "for issue, pr, reaction, delete, edit, review, merge, and "
		        "github:<owner>:<repo>:<kind> for new-issue, new-pr, push, delete-branch, "
		        "create-repo)",
		        s);
	}
	struct strbuf sb;
	sb_init(&sb, PERMS_KEY_MAX);
	for (size_t i = 0; i < sg.n; i++) {
		if (i)
			sb_putc(&sb, ':');
		sb_puts(&sb, sg.s[i]);
	}
	if (sb.len + 1 > cap) {
		sb_free(&sb);
		return err_set(err, "\"%s\" is too long", s);
	}
	memcpy(out, sb_cstr(&sb), sb.len + 1);
	sb_free(&sb);
	return 0;
}

/* ---- matching ------------------------------------------------------------ */

static bool glob(const struct segs *p, size_t pi, const struct segs *k, size_t ki)
{
	if (pi == p->n)
		return ki == k->n;
	if (ki == k->n)
		return false;
	if (is_star(p->s[pi])) {
		for (size_t j = ki + 1; j <= k->n; j++)
			if (glob(p, pi + 1, k, j))
				return true;
		return false;
	}
	return strcmp(p->s[pi], k->s[ki]) == 0 && glob(p, pi + 1, k, ki + 1);
}

static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 64 || lb > 64)
		return SIZE_MAX;
	size_t prev[65], cur[65];
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
		memcpy(prev, cur, sizeof(size_t) * (lb + 1));
	}
	return prev[lb];
}

/* A near miss: small edits for the length, never on numbers (issue 4 is not
 * a typo of issue 3). */
static bool near(const char *want, const char *got)
{
	if (all_digits(want) || all_digits(got))
		return false;
	size_t d = edit_distance(want, got);
	size_t n = strlen(want);
	size_t limit = n <= 4 ? 1 : 2;
	return d > 0 && d <= limit;
}

/* glob with at most one literal segment matched fuzzily; *sub_k / *sub_p
 * receive which key segment was replaced by which pattern segment. */
static bool glob_fuzzy(const struct segs *p, size_t pi, const struct segs *k, size_t ki, bool used,
                       size_t *sub_k, size_t *sub_p)
{
	if (pi == p->n)
		return ki == k->n && used;
	if (ki == k->n)
		return false;
	if (is_star(p->s[pi])) {
		for (size_t j = ki + 1; j <= k->n; j++)
			if (glob_fuzzy(p, pi + 1, k, j, used, sub_k, sub_p))
				return true;
		return false;
	}
	if (!strcmp(p->s[pi], k->s[ki]))
		return glob_fuzzy(p, pi + 1, k, ki + 1, used, sub_k, sub_p);
	if (!used && near(p->s[pi], k->s[ki]) &&
	    glob_fuzzy(p, pi + 1, k, ki + 1, true, sub_k, sub_p)) {
		*sub_k = ki;
		*sub_p = pi;
		return true;
	}
	return false;
}

static void segs_of_canonical(const char *canon, struct segs *sg)
{
	struct ga_err e;
	/* canonical strings always split (they passed split before) */
	if (split(canon, true, sg, &e) < 0)
		sg->n = 0;
}

static void suggest(const struct perms *p, const struct segs *k, char *out, size_t cap)
{
	out[0] = '\0';
	for (size_t i = 0; i < p->n[PERMS_LIST_ALLOW]; i++) {
		struct segs ps;
		segs_of_canonical(p->list[PERMS_LIST_ALLOW][i], &ps);
		size_t sk = 0, sp = 0;
		if (!glob_fuzzy(&ps, 0, k, 0, false, &sk, &sp))
			continue;
		struct strbuf sb;
		sb_init(&sb, PERMS_KEY_MAX);
		for (size_t j = 0; j < k->n; j++) {
			if (j)
				sb_putc(&sb, ':');
			sb_puts(&sb, j == sk ? ps.s[sp] : k->s[j]);
		}
		if (sb.len < cap)
			memcpy(out, sb_cstr(&sb), sb.len + 1);
		sb_free(&sb);
		if (out[0])
			return;
	}
}

void perms_check(const struct perms *p, const char *target, struct perms_verdict *out)
{
	memset(out, 0, sizeof *out);
	struct ga_err e;
	err_clear(&e);
	if (p->is_broken) {
		decision_set(
		        &out->d, VERDICT_DROP, "send_permission",
		        "send permissions are unreadable, every send is refused until fixed: %s",
		        p->broken);
		return;
	}
	if (perms_canonical(target, false, out->target, sizeof out->target, &e) < 0) {
		out->target[0] = '\0';
		decision_set(&out->d, VERDICT_DROP, "send_permission",
		             "not a valid send target: %s", e.msg);
		return;
	}
	struct segs k;
	segs_of_canonical(out->target, &k);
	enum perms_list which = p->mode == PERMS_DENYLIST ? PERMS_LIST_DENY : PERMS_LIST_ALLOW;
	const char *hit = NULL;
	if (p->mode != PERMS_BYPASS)
		for (size_t i = 0; i < p->n[which] && !hit; i++) {
			struct segs ps;
			segs_of_canonical(p->list[which][i], &ps);
			if (glob(&ps, 0, &k, 0))
				hit = p->list[which][i];
		}
	if (hit)
		snprintf(out->pattern, sizeof out->pattern, "%s", hit);
	switch (p->mode) {
	case PERMS_BYPASS:
		out->allowed = true;
		decision_set(&out->d, VERDICT_PASS, "send_permission",
		             "bypass mode: every target is allowed (%s)", out->target);
		break;
	case PERMS_ALLOWLIST:
		out->allowed = hit != NULL;
		if (hit) {
			decision_set(&out->d, VERDICT_PASS, "send_permission",
			             "%s is allowed by pattern %s (allowlist mode)", out->target,
			             hit);
		} else {
			suggest(p, &k, out->suggestion, sizeof out->suggestion);
			decision_set(&out->d, VERDICT_DROP, "send_permission",
			             "%s matches none of the %zu allowed patterns (allowlist mode)",
			             out->target, p->n[PERMS_LIST_ALLOW]);
		}
		break;
	case PERMS_DENYLIST:
		out->allowed = hit == NULL;
		if (hit)
			decision_set(&out->d, VERDICT_DROP, "send_permission",
			             "%s matches denied pattern %s (denylist mode)", out->target,
			             hit);
		else
			decision_set(&out->d, VERDICT_PASS, "send_permission",
			             "%s matches none of the %zu denied patterns (denylist mode)",
			             out->target, p->n[PERMS_LIST_DENY]);
		break;
	}
}

char *perms_denial_text(const struct perms *p, const char *agent, const char *target,
                        const struct perms_verdict *v)
{
	struct strbuf sb;
	sb_init(&sb, 64 * 1024);
	sb_printf(&sb, "Permission denied: agent \"%s\" cannot send to \"%s\"\n",
	          agent ? agent : "", target ? target : "");
	if (p->is_broken) {
		sb_printf(&sb, "Send permissions: unreadable (%s)\n", p->broken);
		sb_puts(&sb, "Every send is refused until the file is fixed or reset with "
		             "`general-agent cross clear`.\n");
		return sb_detach(&sb);
	}
	if (!v->target[0]) {
		sb_printf(&sb, "Send permissions: %s mode\n", perms_mode_name(p->mode));
		sb_printf(&sb, "Target \"%s\" is not a valid send target: %s\n",
		          target ? target : "",
		          strncmp(v->d.reason, "not a valid send target: ", 25) == 0
		                  ? v->d.reason + 25
		                  : v->d.reason);
		return sb_detach(&sb);
	}
	enum perms_list which = p->mode == PERMS_DENYLIST ? PERMS_LIST_DENY : PERMS_LIST_ALLOW;
	sb_printf(&sb, "Send permissions: %s mode\n", perms_mode_name(p->mode));
	sb_puts(&sb, which == PERMS_LIST_ALLOW ? "Allowed patterns:\n" : "Denied patterns:\n");
	if (p->n[which] == 0)
		sb_puts(&sb, "  (none)\n");
	for (size_t i = 0; i < p->n[which]; i++)
		sb_printf(&sb, "  - %s\n", p->list[which][i]);
	if (p->mode == PERMS_DENYLIST)
		sb_printf(&sb, "Target \"%s\" matches denied pattern \"%s\".\n", v->target,
		          v->pattern);
	else
		sb_printf(&sb, "Target \"%s\" does not match any allowed pattern.\n", v->target);
	if (v->suggestion[0])
		sb_printf(&sb, "Did you mean: %s ?\n", v->suggestion);
	return sb_detach(&sb);
}

/* ---- the lists ------------------------------------------------------------ */

struct perms *perms_new(void)
{
	struct perms *p = xcalloc(1, sizeof *p);
	p->mode = PERMS_BYPASS;
	return p;
}

void perms_clear(struct perms *p)
{
	for (int w = 0; w < 2; w++) {
		for (size_t i = 0; i < p->n[w]; i++)
			free(p->list[w][i]);
		p->n[w] = 0;
	}
	p->mode = PERMS_BYPASS;
	p->is_broken = false;
	p->broken[0] = '\0';
}

void perms_free(struct perms *p)
{
	if (!p)
		return;
	perms_clear(p);
	free(p->path);
	free(p);
}

static const char *const mode_names[] = {"bypass", "allowlist", "denylist"};

const char *perms_mode_name(enum perms_mode m)
{
	return (unsigned)m < 3 ? mode_names[m] : "?";
}

int perms_mode_parse(const char *s)
{
	for (int i = 0; s && i < 3; i++)
		if (!strcmp(s, mode_names[i]))
			return i;
	return -1;
}

enum perms_mode perms_mode_of(const struct perms *p)
{
	return p->mode;
}
void perms_set_mode(struct perms *p, enum perms_mode m)
{
	p->mode = m;
}
size_t perms_count(const struct perms *p, enum perms_list w)
{
	return p->n[w];
}
const char *perms_broken(const struct perms *p)
{
	return p->is_broken ? p->broken : NULL;
}

const char *perms_pattern(const struct perms *p, enum perms_list w, size_t i)
{
	return i < p->n[w] ? p->list[w][i] : NULL;
}

int perms_add(struct perms *p, enum perms_list which, const char *pattern, struct ga_err *err)
{
	char canon[PERMS_KEY_MAX];
	if (perms_canonical(pattern, true, canon, sizeof canon, err) < 0)
		return -1;
	for (size_t i = 0; i < p->n[which]; i++)
		if (!strcmp(p->list[which][i], canon))
			return 0;
	if (p->n[which] == PERMS_MAX_PATTERNS)
		return err_set(err, "the %s list is full (%d patterns): remove one first",
		               which == PERMS_LIST_ALLOW ? "allow" : "deny", PERMS_MAX_PATTERNS);
	p->list[which][p->n[which]++] = xstrdup(canon);
	return 1;
}

int perms_remove(struct perms *p, const char *pattern)
{
	char canon[PERMS_KEY_MAX];
	if (perms_canonical(pattern, true, canon, sizeof canon, NULL) < 0)
		return 0;
	int removed = 0;
	for (int w = 0; w < 2; w++)
		for (size_t i = 0; i < p->n[w];) {
			if (!strcmp(p->list[w][i], canon)) {
				free(p->list[w][i]);
				memmove(&p->list[w][i], &p->list[w][i + 1],
				        (p->n[w] - i - 1) * sizeof(char *));
				p->n[w]--;
				removed++;
			} else {
				i++;
			}
		}
	return removed;
}

/* ---- the file -------------------------------------------------------------- */

static int set_broken_msg(struct perms *p, struct ga_err *err, const char *msg)
{
	perms_clear(p);
	p->is_broken = true;
	snprintf(p->broken, sizeof p->broken, "%s", msg);
	return err_set(err, "%s", p->broken);
}

static int set_broken(struct perms *p, struct ga_err *err, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static int set_broken(struct perms *p, struct ga_err *err, const char *fmt, ...)
{
	char msg[GA_ERR_MSG_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return set_broken_msg(p, err, msg);
}

static int load_list(struct perms *p, const cJSON *root, const char *field, enum perms_list w,
                     const char *path, struct ga_err *err)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, field);
	if (!arr)
		return 0;
	if (!cJSON_IsArray(arr))
		return set_broken(p, err, "%s: \"%s\" must be an array of patterns", path, field);
	const cJSON *it;
	cJSON_ArrayForEach(it, arr)
	{
		struct ga_err e;
		err_clear(&e);
		if (!cJSON_IsString(it))
			return set_broken(p, err, "%s: \"%s\" holds a value that is not a string",
			                  path, field);
		if (perms_add(p, w, it->valuestring, &e) < 0) {
			char msg[GA_ERR_MSG_MAX];
			err_fmt(msg, sizeof msg, "%s: %s", field, e.msg);
			return set_broken(p, err, "%s: %s", path, msg);
		}
	}
	return 0;
}

int perms_load(struct perms *p, const char *path, struct ga_err *err)
{
	perms_clear(p);
	size_t len = 0;
	errno = 0;
	struct ga_err e;
	err_clear(&e);
	char *buf = fsx_read_file(path, PERMS_FILE_MAX_BYTES, &len, &e);
	if (!buf) {
		if (errno == ENOENT)
			return 0;
		return set_broken(p, err, "%s", e.msg);
	}
	cJSON *root = json_parse(buf, len, &e);
	free(buf);
	if (!root || !cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return set_broken(p, err, "%s is not a JSON object (%s)", path,
		                  e.msg[0] ? e.msg : "wrong type");
	}
	const char *mode = json_string_or(root, "mode", "bypass");
	int m = perms_mode_parse(mode);
	if (m < 0) {
		set_broken(p, err, "%s: unknown mode \"%s\" (bypass, allowlist or denylist)", path,
		           mode);
		cJSON_Delete(root);
		return -1;
	}
	int rc = load_list(p, root, "allowlist", PERMS_LIST_ALLOW, path, err);
	if (rc == 0)
		rc = load_list(p, root, "denylist", PERMS_LIST_DENY, path, err);
	cJSON_Delete(root);
	if (rc < 0)
		return -1;
	p->mode = (enum perms_mode)m;
	return 0;
}

int perms_save(const struct perms *p, const char *path, struct ga_err *err)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "mode", perms_mode_name(p->mode));
	static const char *const fields[] = {"allowlist", "denylist"};
	for (int w = 0; w < 2; w++) {
		cJSON *arr = cJSON_AddArrayToObject(root, fields[w]);
		for (size_t i = 0; i < p->n[w]; i++)
			cJSON_AddItemToArray(arr, cJSON_CreateString(p->list[w][i]));
	}
	char *txt = cJSON_Print(root);
	cJSON_Delete(root);
	if (!txt)
		return err_set(err, "cannot serialise the send permissions");
	size_t n = strlen(txt);
	char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	int rc = 0;
	if (slash && slash != dir) {
		*slash = '\0';
		rc = fsx_mkdir_p(dir, err);
	}
	free(dir);
	if (rc == 0) {
		char *line = xasprintf("%s\n", txt);
		rc = fsx_write_atomic(path, line, n + 1, err);
		free(line);
	}
	free(txt);
	return rc;
}

static void remember_stat(struct perms *p)
{
	struct stat st;
	p->stat_valid = true;
	if (stat(p->path, &st) != 0) {
		p->file_existed = false;
		return;
	}
	p->file_existed = true;
	p->dev = st.st_dev;
	p->ino = st.st_ino;
	p->size = st.st_size;
	p->mtime = st.st_mtim;
}

struct perms *perms_open(const char *memory_dir, struct ga_err *err)
{
	struct perms *p = perms_new();
	p->path = fsx_join(memory_dir, PERMS_FILE_NAME);
	remember_stat(p);
	perms_load(p, p->path, err);
	return p;
}

int perms_refresh(struct perms *p, struct ga_err *err)
{
	if (!p->path)
		return 0;
	struct stat st;
	bool exists = stat(p->path, &st) == 0;
	if (p->stat_valid) {
		if (!exists && !p->file_existed)
			return 0;
		if (exists && p->file_existed && st.st_dev == p->dev && st.st_ino == p->ino &&
		    st.st_size == p->size && st.st_mtim.tv_sec == p->mtime.tv_sec &&
		    st.st_mtim.tv_nsec == p->mtime.tv_nsec)
			return 0;
	}
	remember_stat(p);
	return perms_load(p, p->path, err) < 0 ? -1 : 1;
}

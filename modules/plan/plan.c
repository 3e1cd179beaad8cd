/* plan — the plan issue format: generation, parsing, body updates, branch
 * names (see plan.h). */
#include "modules/plan/plan.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <utf8proc.h>

#include "common/strbuf.h"
#include "common/utf8.h"
#include "common/xalloc.h"

/* ---- small text helpers ------------------------------------------------------ */

struct span {
	const char *p;
	size_t n;
};

/* One line of a body: text without its line end, and the line end's length
 * (0 on a last line without one, 1 for "\n", 2 for "\r\n"). */
struct line {
	const char *p;
	size_t n;
	size_t eol;
};

static struct span trim(const char *p, size_t n)
{
	while (n && isspace((unsigned char)p[0])) {
		p++;
		n--;
	}
	while (n && isspace((unsigned char)p[n - 1]))
		n--;
	return (struct span){p, n};
}

static bool span_ieq(struct span s, const char *lit)
{
	size_t l = strlen(lit);
	return s.n == l && strncasecmp(s.p, lit, l) == 0;
}

static bool span_iprefix(struct span s, const char *lit)
{
	size_t l = strlen(lit);
	return s.n >= l && strncasecmp(s.p, lit, l) == 0;
}

static char *span_dup(struct span s)
{
	return xstrndup(s.p, s.n);
}

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Splits body into lines (caller frees the array). */
static struct line *split_lines(const char *body, size_t *count)
{
	size_t cap = 16, n = 0;
	struct line *v = xmalloc(cap * sizeof *v);
	const char *p = body;
	while (*p) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		size_t eol = e ? 1 : 0;
		if (len && p[len - 1] == '\r') {
			len--;
			eol++;
		}
		if (n == cap) {
			cap *= 2;
			v = xreallocarray(v, cap, sizeof *v);
		}
		v[n++] = (struct line){p, len, eol};
		p += len + eol;
	}
	*count = n;
	return v;
}

/* ---- the structure of a body ------------------------------------------------- */

enum section {
	SEC_NONE,
	SEC_GOAL,
	SEC_CONTEXT,
	SEC_TASKS,
	SEC_VERIFICATION,
};

/* A known "## " heading: the heading's first word is the section's name
 * ("## Tasks", "## Tasks (3)", "## goal:"). SEC_NONE for anything else. */
static enum section section_of(struct span t)
{
	static const struct {
		const char *name;
		enum section sec;
	} names[] = {{"goal", SEC_GOAL},
	             {"context", SEC_CONTEXT},
	             {"tasks", SEC_TASKS},
	             {"verification", SEC_VERIFICATION}};
	if (t.n < 3 || memcmp(t.p, "## ", 3) != 0)
		return SEC_NONE;
	struct span w = trim(t.p + 3, t.n - 3);
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		size_t l = strlen(names[i].name);
		if (w.n >= l && strncasecmp(w.p, names[i].name, l) == 0 &&
		    (w.n == l || !isalnum((unsigned char)w.p[l])))
			return names[i].sec;
	}
	return SEC_NONE;
}

/* "### Task <digits>: <title>" (the word in any case, spaces optional
 * around the number and the colon). */
static bool task_header(struct span t, int *num, struct span *title)
{
	if (t.n < 4 || memcmp(t.p, "### ", 4) != 0)
		return false;
	struct span r = trim(t.p + 4, t.n - 4);
	if (!span_iprefix(r, "task"))
		return false;
	size_t i = 4;
	while (i < r.n && r.p[i] == ' ')
		i++;
	long v = 0;
	size_t d0 = i;
	while (i < r.n && isdigit((unsigned char)r.p[i]) && i - d0 < 5)
		v = v * 10 + (r.p[i++] - '0');
	if (i == d0 || (i < r.n && isdigit((unsigned char)r.p[i])) || v < 1 ||
	    v > PLAN_TASK_NUMBER_MAX)
		return false;
	while (i < r.n && r.p[i] == ' ')
		i++;
	if (i >= r.n || r.p[i] != ':')
		return false;
	if (num)
		*num = (int)v;
	if (title)
		*title = trim(r.p + i + 1, r.n - i - 1);
	return true;
}

static bool plan_heading(struct span t)
{
	return t.n >= 8 && memcmp(t.p, "# ", 2) == 0 &&
	       span_iprefix(trim(t.p + 2, t.n - 2), "[plan]");
}

/* A line the reader would take as structure rather than text. */
static bool structural(struct span t)
{
	return task_header(t, NULL, NULL) || section_of(t) != SEC_NONE || plan_heading(t);
}

/* Written with one more leading backslash: structure, or structure already
 * behind backslashes (so "\### Task 1:" in a description survives too). */
static bool needs_escape(struct span t)
{
	size_t k = 0;
	while (k < t.n && t.p[k] == '\\')
		k++;
	return structural((struct span){t.p + k, t.n - k});
}

static bool is_rule(struct span t)
{
	if (t.n < 3)
		return false;
	for (size_t i = 0; i < t.n; i++)
		if (t.p[i] != '-')
			return false;
	return true;
}

/* "**Name:** value" or "**Name**: value"; *val is the trimmed value. */
static bool meta_line(struct span t, const char *name, struct span *val)
{
	if (t.n < 2 || memcmp(t.p, "**", 2) != 0)
		return false;
	size_t l = strlen(name);
	if (t.n < 2 + l || strncasecmp(t.p + 2, name, l) != 0)
		return false;
	const char *r = t.p + 2 + l;
	size_t rn = t.n - 2 - l;
	size_t skip;
	if (rn >= 3 && memcmp(r, ":**", 3) == 0)
		skip = 3;
	else if (rn >= 3 && memcmp(r, "**:", 3) == 0)
		skip = 3;
	else
		return false;
	*val = trim(r + skip, rn - skip);
	return true;
}

/* "- `path`" (or "* `path`"); *path is the text between the backticks. */
static bool file_item(struct span t, struct span *path)
{
	if (t.n < 5 || (t.p[0] != '-' && t.p[0] != '*') || t.p[1] != ' ')
		return false;
	struct span r = trim(t.p + 2, t.n - 2);
	if (r.n < 3 || r.p[0] != '`')
		return false;
	const char *end = memchr(r.p + 1, '`', r.n - 1);
	if (!end || end == r.p + 1)
		return false;
	*path = (struct span){r.p + 1, (size_t)(end - r.p - 1)};
	return true;
}

/* ---- statuses and logins ----------------------------------------------------- */

static const char *const status_names[PLAN_STATUS_COUNT] = {
        [PLAN_PENDING] = "pending",         [PLAN_CLAIMED] = "claimed",
        [PLAN_IN_PROGRESS] = "in_progress", [PLAN_COMPLETED] = "completed",
        [PLAN_BLOCKED] = "blocked",
};

const char *plan_status_name(enum plan_status s)
{
	if ((int)s < 0 || s >= PLAN_STATUS_COUNT)
		return "unknown";
	return status_names[s];
}

int plan_status_parse(const char *s, enum plan_status *out)
{
	char w[32];
	struct span t = trim(s, strlen(s));
	/* "`in_progress`", "*blocked*": the emphasis is not the value. */
	while (t.n && strchr("`*", t.p[0])) {
		t.p++;
		t.n--;
	}
	while (t.n && strchr("`*", t.p[t.n - 1]))
		t.n--;
	if (t.n == 0 || t.n >= sizeof w)
		return -1;
	for (size_t i = 0; i < t.n; i++)
		w[i] = (t.p[i] == '-' || t.p[i] == ' ') ? '_'
		                                        : (char)tolower((unsigned char)t.p[i]);
	w[t.n] = '\0';
	for (int i = 0; i < PLAN_STATUS_COUNT; i++)
		if (strcmp(w, status_names[i]) == 0) {
			*out = (enum plan_status)i;
			return 0;
		}
	if (strcmp(w, "done") == 0 || strcmp(w, "complete") == 0) {
		*out = PLAN_COMPLETED;
		return 0;
	}
	return -1;
}

const char *plan_overall_name(enum plan_overall o)
{
	switch (o) {
	case PLAN_COMPLETE:
		return "complete";
	case PLAN_OVERALL_BLOCKED:
		return "blocked";
	default:
		return "active";
	}
}

bool plan_valid_login(const char *s)
{
	size_t n = strlen(s);
	if (n > 5 && strcmp(s + n - 5, "[bot]") == 0)
		n -= 5;
	if (n < 1 || n > 39 || s[0] == '-' || s[n - 1] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-')
			return false;
	return true;
}

/* Words people and models write for "nobody". */
static bool empty_assignee(struct span v)
{
	static const char *const words[] = {
	        "",
	        PLAN_ASSIGNEE_EMPTY,
	        "none",
	        "(none)",
	        "unassigned",
	        "(unassigned)",
	        "-",
	        "\xe2\x80\x94",
	        "\xe2\x80\x93",
	        "n/a",
	        "na",
	        "nobody",
	        "null",
	        "tbd",
	        "unclaimed",
	};
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		if (span_ieq(v, words[i]))
			return true;
	return false;
}

/* ---- parsing ------------------------------------------------------------------- */

/* Where a task's editable lines are (line indexes; -1 = absent). */
struct task_layout {
	int number;
	size_t header;
	long status;
	long assignee;
};

struct reader {
	struct plan *p;
	struct line *lines;
	size_t n_lines;
	struct task_layout *lay;         /* one per kept task */
	char **raw_deps[PLAN_MAX_TASKS]; /* per kept task, before resolution */
	size_t n_raw_deps[PLAN_MAX_TASKS];
	struct strbuf desc;
	struct strbuf goal;
	struct strbuf context;
	int phase; /* within a task: 0 metadata, 1 file list, 2 description */
	bool in_task;
	bool skip_task; /* a duplicate or over the limit: its lines are dropped */
};

static void problem(struct plan *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(struct plan *p, const char *fmt, ...)
{
	if (p->n_problems >= PLAN_MAX_PROBLEMS) {
		p->problems_dropped++;
		return;
	}
	char buf[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	p->problems[p->n_problems++] = xstrdup(buf);
}

/* A quoted excerpt for a problem sentence: at most 60 bytes, cut on a
 * character boundary. */
static int excerpt_len(struct span s)
{
	return (int)utf8_cut(s.p, s.n, 60);
}

/* True when the "---" at index i ends a task: what follows (after blank
 * lines) is the next task, a known section, or the end. */
static bool separator_ahead(const struct reader *r, size_t i)
{
	for (size_t j = i + 1; j < r->n_lines; j++) {
		struct span t = trim(r->lines[j].p, r->lines[j].n);
		if (t.n == 0)
			continue;
		return task_header(t, NULL, NULL) || section_of(t) != SEC_NONE;
	}
	return true;
}

/* The line with one escaping backslash taken off (when it had one). */
static void append_unescaped(struct strbuf *sb, struct line l)
{
	struct span t = trim(l.p, l.n);
	if (t.n && t.p[0] == '\\' && needs_escape((struct span){t.p + 1, t.n - 1})) {
		size_t at = (size_t)(t.p - l.p);
		sb_append(sb, l.p, at);
		sb_append(sb, l.p + at + 1, l.n - at - 1);
		return;
	}
	sb_append(sb, l.p, l.n);
}

static void flush_task(struct reader *r)
{
	if (r->in_task && !r->skip_task) {
		struct plan_task *t = &r->p->tasks[r->p->n_tasks - 1];
		struct span d = trim(sb_cstr(&r->desc), r->desc.len);
		t->description = span_dup(d);
	}
	sb_reset(&r->desc);
	r->in_task = false;
	r->skip_task = false;
}

static void start_task(struct reader *r, size_t idx, int num, struct span title)
{
	flush_task(r);
	r->in_task = true;
	r->phase = 0;
	struct plan *p = r->p;
	if (plan_task_find(p, num)) {
		problem(p, "Task %d appears twice; the second one is ignored", num);
		r->skip_task = true;
		return;
	}
	if (p->n_tasks >= PLAN_MAX_TASKS) {
		problem(p, "more than %d tasks; Task %d and later ones are ignored", PLAN_MAX_TASKS,
		        num);
		r->skip_task = true;
		return;
	}
	struct plan_task *t = &p->tasks[p->n_tasks];
	memset(t, 0, sizeof *t);
	t->number = num;
	t->title = span_dup(title);
	t->status = PLAN_PENDING;
	r->lay[p->n_tasks] = (struct task_layout){num, idx, -1, -1};
	p->n_tasks++;
}

static void read_assignee(struct reader *r, struct plan_task *t, struct span v)
{
	if (v.n && v.p[0] == '@')
		v = trim(v.p + 1, v.n - 1);
	if (v.n >= 2 && v.p[0] == '`' && v.p[v.n - 1] == '`')
		v = trim(v.p + 1, v.n - 2);
	if (empty_assignee(v))
		return;
	char *login = span_dup(v);
	if (!plan_valid_login(login)) {
		problem(r->p, "Task %d: assignee '%.*s' is not a GitHub login; taken as unassigned",
		        t->number, excerpt_len(v), v.p);
		free(login);
		return;
	}
	t->assignee = login;
}

static void read_deps(struct reader *r, size_t k, struct span v)
{
	if (span_ieq(v, "none") || empty_assignee(v))
		return;
	const char *p = v.p, *end = v.p + v.n;
	while (p < end) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		if (!c)
			c = end;
		struct span item = trim(p, (size_t)(c - p));
		if (item.n) {
			if (r->n_raw_deps[k] >= PLAN_MAX_DEPS) {
				problem(r->p,
				        "Task %d: more than %d dependencies; the rest are ignored",
				        r->p->tasks[k].number, PLAN_MAX_DEPS);
				return;
			}
			r->raw_deps[k] =
			        xreallocarray(r->raw_deps[k], r->n_raw_deps[k] + 1, sizeof(char *));
			r->raw_deps[k][r->n_raw_deps[k]++] = span_dup(item);
		}
		p = c + 1;
	}
}

static void task_line(struct reader *r, size_t i)
{
	struct line l = r->lines[i];
	struct span t = trim(l.p, l.n);
	if (r->skip_task)
		return;
	size_t k = r->p->n_tasks - 1;
	struct plan_task *task = &r->p->tasks[k];
	if (is_rule(t) && separator_ahead(r, i))
		return;
	if (r->phase < 2) {
		struct span v;
		if (meta_line(t, "Status", &v) && task->has_status_line) {
			problem(r->p, "Task %d has a second Status line; the first one counts",
			        task->number);
			return;
		}
		if (meta_line(t, "Assignee", &v) && task->has_assignee_line) {
			problem(r->p, "Task %d has a second Assignee line; the first one counts",
			        task->number);
			return;
		}
		if (meta_line(t, "Status", &v)) {
			r->phase = 0;
			char *s = span_dup(v);
			enum plan_status st;
			if (plan_status_parse(s, &st) == 0)
				task->status = st;
			else
				problem(r->p,
				        "Task %d: status '%.*s' is not one of pending, claimed, "
				        "in_progress, completed, blocked; taken as pending",
				        task->number, excerpt_len(v), v.p);
			free(s);
			task->has_status_line = true;
			r->lay[k].status = (long)i;
			return;
		}
		if (meta_line(t, "Assignee", &v)) {
			r->phase = 0;
			read_assignee(r, task, v);
			task->has_assignee_line = true;
			r->lay[k].assignee = (long)i;
			return;
		}
		if (meta_line(t, "Estimate", &v)) {
			r->phase = 0;
			free(task->estimate);
			task->estimate = v.n ? span_dup(v) : NULL;
			return;
		}
		if (meta_line(t, "Dependencies", &v)) {
			r->phase = 0;
			read_deps(r, k, v);
			return;
		}
		if (meta_line(t, "Files", &v)) {
			r->phase = 1;
			return;
		}
		if (meta_line(t, "Description", &v)) {
			r->phase = 2;
			if (v.n) {
				sb_append(&r->desc, v.p, v.n);
				sb_putc(&r->desc, '\n');
			}
			return;
		}
		struct span path;
		if (r->phase == 1 && file_item(t, &path)) {
			if (task->n_files >= PLAN_MAX_FILES) {
				problem(r->p, "Task %d: more than %d files; the rest are ignored",
				        task->number, PLAN_MAX_FILES);
			} else {
				task->files = xreallocarray(task->files, task->n_files + 1,
				                            sizeof(char *));
				task->files[task->n_files++] = span_dup(path);
			}
			return;
		}
		if (r->phase == 1 && t.n == 0)
			return;
		if (r->phase == 1)
			r->phase = 0;
	}
	append_unescaped(&r->desc, l);
	sb_putc(&r->desc, '\n');
}

static void verification_line(struct plan *p, struct span t)
{
	if (t.n < 5 || (t.p[0] != '-' && t.p[0] != '*') || t.p[1] != ' ')
		return;
	struct span r = trim(t.p + 2, t.n - 2);
	bool done;
	if (span_iprefix(r, "[ ]"))
		done = false;
	else if (span_iprefix(r, "[x]"))
		done = true;
	else
		return;
	if (p->n_checks >= PLAN_MAX_CHECKS) {
		problem(p, "more than %d verification items; the rest are ignored",
		        PLAN_MAX_CHECKS);
		return;
	}
	p->checks = xreallocarray(p->checks, p->n_checks + 1, sizeof *p->checks);
	p->checks[p->n_checks++] = (struct plan_check){done, span_dup(trim(r.p + 3, r.n - 3))};
}

/* "Task 3", "task-3", "tasks 3", "#3", "3" → 3; 0 otherwise. */
static int canonical_dep(const char *s)
{
	struct span t = trim(s, strlen(s));
	size_t i = 0;
	if (span_iprefix(t, "task")) {
		i = 4;
		if (i < t.n && (t.p[i] == 's' || t.p[i] == 'S'))
			i++;
		while (i < t.n && (t.p[i] == ' ' || t.p[i] == '-'))
			i++;
	}
	if (i < t.n && t.p[i] == '#')
		i++;
	size_t d0 = i;
	long v = 0;
	while (i < t.n && isdigit((unsigned char)t.p[i]) && i - d0 < 5)
		v = v * 10 + (t.p[i++] - '0');
	if (i == d0 || i != t.n || v < 1 || v > PLAN_TASK_NUMBER_MAX)
		return 0;
	return (int)v;
}

/* A dependency written as a title: exact (any case), else the longest task
 * title that contains the text or is contained in it (both at least 3
 * bytes, so "a" names nothing). 0 when none. */
static int dep_by_title(const struct plan *p, const char *text, bool exact_only)
{
	struct span t = trim(text, strlen(text));
	char *want = span_dup(t);
	int best = 0;
	size_t best_len = 0;
	for (size_t i = 0; i < p->n_tasks && !best; i++)
		if (strcasecmp(p->tasks[i].title, want) == 0)
			best = p->tasks[i].number;
	if (!best && !exact_only && t.n >= 3) {
		for (size_t i = 0; i < p->n_tasks; i++) {
			const char *title = p->tasks[i].title;
			size_t tl = strlen(title);
			if (tl < 3)
				continue;
			if ((strcasestr(want, title) || strcasestr(title, want)) && tl > best_len) {
				best = p->tasks[i].number;
				best_len = tl;
			}
		}
	}
	free(want);
	return best;
}

static void add_dep(struct plan_task *t, int num, const char *text)
{
	t->deps = xreallocarray(t->deps, t->n_deps + 1, sizeof *t->deps);
	t->deps[t->n_deps++] = (struct plan_dep){num, xstrdup(text)};
}

static void resolve_deps(struct reader *r)
{
	struct plan *p = r->p;
	for (size_t k = 0; k < p->n_tasks; k++) {
		struct plan_task *t = &p->tasks[k];
		for (size_t j = 0; j < r->n_raw_deps[k]; j++) {
			const char *raw = r->raw_deps[k][j];
			int num = canonical_dep(raw);
			if (num && !plan_task_find(p, num)) {
				problem(p,
				        "Task %d depends on Task %d, which is not in the plan; it "
				        "does "
				        "not hold the task back",
				        t->number, num);
				add_dep(t, 0, raw);
				continue;
			}
			if (!num)
				num = dep_by_title(p, raw, true);
			/* A ';' list is tried before the substring rule, which
			 * would take the list for its longest title alone. */
			if (!num && strchr(raw, ';')) {
				/* Every fragment must name a task, or none counts. */
				int nums[PLAN_MAX_DEPS];
				size_t nn = 0;
				bool all = true;
				char *copy = xstrdup(raw), *save = NULL;
				for (char *f = strtok_r(copy, ";", &save); f && all;
				     f = strtok_r(NULL, ";", &save)) {
					int v = canonical_dep(f);
					if (v && !plan_task_find(p, v))
						v = 0;
					if (!v)
						v = dep_by_title(p, f, false);
					if (!v || v == t->number || nn >= PLAN_MAX_DEPS)
						all = false;
					else
						nums[nn++] = v;
				}
				free(copy);
				if (all && nn) {
					for (size_t f = 0; f < nn; f++)
						add_dep(t, nums[f], raw);
					continue;
				}
			}
			if (!num)
				num = dep_by_title(p, raw, false);
			if (!num) {
				struct span s = trim(raw, strlen(raw));
				problem(p,
				        "Task %d: dependency '%.*s' names no task of the plan; it "
				        "does "
				        "not hold the task back",
				        t->number, excerpt_len(s), s.p);
				add_dep(t, 0, raw);
				continue;
			}
			if (num == t->number) {
				problem(p, "Task %d depends on itself; that dependency is ignored",
				        t->number);
				add_dep(t, 0, raw);
				continue;
			}
			add_dep(t, num, raw);
		}
	}
}

/* True when task `from` reaches task `target` through dependencies. */
static bool reaches(const struct plan *p, int from, int target, unsigned char *seen)
{
	const struct plan_task *t = plan_task_find(p, from);
	if (!t)
		return false;
	for (size_t i = 0; i < t->n_deps; i++) {
		int d = t->deps[i].task;
		if (!d)
			continue;
		if (d == target)
			return true;
		size_t idx = (size_t)(plan_task_find(p, d) - p->tasks);
		if (seen[idx])
			continue;
		seen[idx] = 1;
		if (reaches(p, d, target, seen))
			return true;
	}
	return false;
}

static void find_cycles(struct plan *p)
{
	for (size_t k = 0; k < p->n_tasks; k++) {
		unsigned char seen[PLAN_MAX_TASKS] = {0};
		seen[k] = 1;
		if (reaches(p, p->tasks[k].number, p->tasks[k].number, seen)) {
			p->tasks[k].in_cycle = true;
			problem(p,
			        "Task %d is part of a dependency cycle; it cannot be claimed until "
			        "the plan is fixed",
			        p->tasks[k].number);
		}
	}
}

static char *plan_title_from(const char *title)
{
	const char *at = strcasestr(title, PLAN_TITLE_PREFIX);
	struct strbuf sb = {0};
	if (at) {
		sb_append(&sb, title, (size_t)(at - title));
		sb_puts(&sb, at + strlen(PLAN_TITLE_PREFIX));
	} else {
		sb_puts(&sb, title);
	}
	struct span t = trim(sb_cstr(&sb), sb.len);
	char *out = span_dup(t);
	sb_free(&sb);
	return out;
}

/* The reader proper; lay (PLAN_MAX_TASKS entries) receives the layout. */
static int parse_layout(const char *title, const char *body, struct plan *out,
                        struct task_layout *lay, struct line **lines_out, size_t *n_lines_out,
                        struct ga_err *err)
{
	memset(out, 0, sizeof *out);
	if (!body)
		return err_set(err, "the plan body is missing");
	size_t len = strlen(body);
	if (len > PLAN_MAX_BODY_BYTES)
		return err_set(err, "the plan body is %zu bytes, more than the %d this agent reads",
		               len, PLAN_MAX_BODY_BYTES);
	if (!utf8_valid(body, len))
		return err_set(err, "the plan body is not valid UTF-8");
	struct reader r = {.p = out, .lay = lay};
	r.lines = split_lines(body, &r.n_lines);
	out->tasks = xcalloc(PLAN_MAX_TASKS, sizeof *out->tasks);
	sb_init(&r.desc, PLAN_MAX_BODY_BYTES);
	sb_init(&r.goal, PLAN_MAX_BODY_BYTES);
	sb_init(&r.context, PLAN_MAX_BODY_BYTES);
	char *heading_title = NULL;
	enum section sec = SEC_NONE;
	for (size_t i = 0; i < r.n_lines; i++) {
		struct line l = r.lines[i];
		struct span t = trim(l.p, l.n);
		if (plan_heading(t)) {
			if (!heading_title) {
				char *h = xstrndup(t.p + 2, t.n - 2);
				heading_title = plan_title_from(h);
				free(h);
			}
			continue;
		}
		enum section s = section_of(t);
		if (s != SEC_NONE) {
			flush_task(&r);
			sec = s;
			continue;
		}
		int num;
		struct span ttl;
		switch (sec) {
		case SEC_GOAL:
			if (t.n) {
				if (r.goal.len)
					sb_putc(&r.goal, ' ');
				append_unescaped(&r.goal, (struct line){t.p, t.n, 0});
			}
			break;
		case SEC_CONTEXT:
			if (t.n) {
				if (r.context.len)
					sb_putc(&r.context, '\n');
				append_unescaped(&r.context, (struct line){t.p, t.n, 0});
			}
			break;
		case SEC_TASKS:
			if (task_header(t, &num, &ttl))
				start_task(&r, i, num, ttl);
			else if (r.in_task)
				task_line(&r, i);
			break;
		case SEC_VERIFICATION:
			verification_line(out, t);
			break;
		default:
			break;
		}
	}
	flush_task(&r);
	resolve_deps(&r);
	find_cycles(out);
	out->goal = sb_detach(&r.goal);
	out->context = sb_detach(&r.context);
	if (title)
		out->title = plan_title_from(title);
	else
		out->title = heading_title ? xstrdup(heading_title) : xstrdup("");
	free(heading_title);
	for (size_t k = 0; k < PLAN_MAX_TASKS; k++) {
		for (size_t j = 0; j < r.n_raw_deps[k]; j++)
			free(r.raw_deps[k][j]);
		free(r.raw_deps[k]);
	}
	sb_free(&r.desc);
	if (lines_out) {
		*lines_out = r.lines;
		*n_lines_out = r.n_lines;
	} else {
		free(r.lines);
	}
	return 0;
}

bool plan_is_plan(const char *title, const char *body)
{
	if (!body || !*body)
		return false;
	if (title) {
		struct span t = trim(title, strlen(title));
		if (span_iprefix(t, PLAN_TITLE_PREFIX))
			return true;
	}
	for (const char *p = body; *p;) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (plan_heading(trim(p, n)))
			return true;
		if (!e)
			break;
		p = e + 1;
	}
	return false;
}

int plan_parse(const char *title, const char *body, struct plan *out, struct ga_err *err)
{
	struct task_layout lay[PLAN_MAX_TASKS];
	return parse_layout(title, body, out, lay, NULL, NULL, err);
}

void plan_free(struct plan *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_tasks; i++) {
		struct plan_task *t = &p->tasks[i];
		free(t->title);
		free(t->assignee);
		free(t->estimate);
		for (size_t j = 0; j < t->n_deps; j++)
			free(t->deps[j].text);
		free(t->deps);
		strv_free(t->files, t->n_files);
		free(t->description);
	}
	free(p->tasks);
	for (size_t i = 0; i < p->n_checks; i++)
		free(p->checks[i].text);
	free(p->checks);
	for (size_t i = 0; i < p->n_problems; i++)
		free(p->problems[i]);
	free(p->title);
	free(p->goal);
	free(p->context);
	memset(p, 0, sizeof *p);
}

const struct plan_task *plan_task_find(const struct plan *p, int number)
{
	for (size_t i = 0; i < p->n_tasks; i++)
		if (p->tasks[i].number == number)
			return &p->tasks[i];
	return NULL;
}

enum plan_overall plan_overall_status(const struct plan *p)
{
	if (p->n_tasks == 0)
		return PLAN_ACTIVE;
	bool all_done = true;
	for (size_t i = 0; i < p->n_tasks; i++) {
		if (p->tasks[i].status == PLAN_BLOCKED)
			return PLAN_OVERALL_BLOCKED;
		if (p->tasks[i].status != PLAN_COMPLETED)
			all_done = false;
	}
	return all_done ? PLAN_COMPLETE : PLAN_ACTIVE;
}

/* ---- updating the body ----------------------------------------------------------- */

static void put_eol(struct strbuf *sb, const struct line *like)
{
	sb_puts(sb, like->eol == 2 ? "\r\n" : "\n");
}

static void put_status(struct strbuf *sb, enum plan_status s)
{
	sb_printf(sb, "**Status:** %s", plan_status_name(s));
}

static void put_assignee(struct strbuf *sb, const char *login)
{
	if (login)
		sb_printf(sb, "**Assignee:** @%s", login);
	else
		sb_puts(sb, "**Assignee:** " PLAN_ASSIGNEE_EMPTY);
}

/* The merged wish for one task (later updates win). */
struct want {
	bool set_status;
	enum plan_status status;
	bool set_assignee;
	const char *assignee;
};

char *plan_body_update(const char *body, const struct plan_update *u, size_t n, struct ga_err *err)
{
	struct plan p;
	struct task_layout lay[PLAN_MAX_TASKS];
	struct line *lines = NULL;
	size_t n_lines = 0;
	if (parse_layout(NULL, body, &p, lay, &lines, &n_lines, err) != 0)
		return NULL;
	struct want want[PLAN_MAX_TASKS] = {{0}};
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		while (k < p.n_tasks && p.tasks[k].number != u[i].task)
			k++;
		if (k == p.n_tasks) {
			err_set(err, "Task %d is not in the plan", u[i].task);
			goto fail;
		}
		if (u[i].set_status) {
			if ((int)u[i].status < 0 || u[i].status >= PLAN_STATUS_COUNT) {
				err_set(err, "Task %d: status %d is not a task status", u[i].task,
				        (int)u[i].status);
				goto fail;
			}
			want[k].set_status = true;
			want[k].status = u[i].status;
		}
		if (u[i].set_assignee) {
			const char *a = u[i].assignee;
			if (a && a[0] == '@')
				a++;
			if (a && !plan_valid_login(a)) {
				err_set(err, "Task %d: '%.40s' is not a GitHub login", u[i].task,
				        a);
				goto fail;
			}
			want[k].set_assignee = true;
			want[k].assignee = a;
		}
	}
	/* The body is at most PLAN_MAX_BODY_BYTES and each task gains at most
	 * two short lines: the bound is never reached. */
	struct strbuf sb;
	sb_init(&sb, 2 * (size_t)PLAN_MAX_BODY_BYTES);
	for (size_t i = 0; i < n_lines; i++) {
		const struct line *l = &lines[i];
		size_t k = 0;
		int role = 0; /* 1 header, 2 status line, 3 assignee line */
		for (; k < p.n_tasks; k++) {
			if (lay[k].header == i)
				role = 1;
			else if (lay[k].status == (long)i)
				role = 2;
			else if (lay[k].assignee == (long)i)
				role = 3;
			if (role)
				break;
		}
		const struct want *w = role ? &want[k] : NULL;
		if (role == 2 && w->set_status)
			put_status(&sb, w->status);
		else if (role == 3 && w->set_assignee)
			put_assignee(&sb, w->assignee);
		else
			sb_append(&sb, l->p, l->n);
		/* Lines that are missing go after the header (Status) or after
		 * the Status line (Assignee). */
		bool add_status = role == 1 && w->set_status && lay[k].status < 0;
		bool add_assignee = w && w->set_assignee && lay[k].assignee < 0 &&
		                    ((role == 1 && lay[k].status < 0) || role == 2);
		if (add_status || add_assignee) {
			put_eol(&sb, l);
			if (add_status) {
				put_status(&sb, w->status);
				if (add_assignee || l->eol)
					put_eol(&sb, l);
			}
			if (add_assignee) {
				put_assignee(&sb, w->assignee);
				if (l->eol)
					put_eol(&sb, l);
			}
		} else if (l->eol) {
			sb_append(&sb, l->p + l->n, l->eol);
		}
	}
	free(lines);
	plan_free(&p);
	return sb_detach(&sb);
fail:
	free(lines);
	plan_free(&p);
	return NULL;
}

/* ---- drafts and generation ------------------------------------------------------- */

/* A single line: line breaks and tabs become spaces, trimmed. */
static char *one_line(const char *s)
{
	char *o = xstrdup(s);
	for (char *c = o; *c; c++)
		if (*c == '\n' || *c == '\r' || *c == '\t')
			*c = ' ';
	struct span t = trim(o, strlen(o));
	char *r = span_dup(t);
	free(o);
	return r;
}

static int text_field(const cJSON *o, const char *name, const char *where, bool required,
                      bool single_line, char **out, struct ga_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	*out = NULL;
	if (!v || cJSON_IsNull(v)) {
		if (required)
			return err_set(err, "%s%s is missing", where, name);
		return 0;
	}
	if (!cJSON_IsString(v) || !v->valuestring)
		return err_set(err, "%s%s must be a string", where, name);
	if (!utf8_valid(v->valuestring, strlen(v->valuestring)))
		return err_set(err, "%s%s is not valid UTF-8", where, name);
	char *s = single_line ? one_line(v->valuestring) : xstrdup(v->valuestring);
	if (required && !trim(s, strlen(s)).n) {
		free(s);
		return err_set(err, "%s%s must be a non-empty string", where, name);
	}
	if (single_line && strlen(s) > PLAN_TITLE_MAX) {
		free(s);
		return err_set(err, "%s%s is longer than %d bytes", where, name, PLAN_TITLE_MAX);
	}
	*out = s;
	return 0;
}

/* An array of strings (numbers allowed for dependencies: 2 → "Task 2"). */
static int list_field(const cJSON *o, const char *name, const char *where, size_t max,
                      bool numbers_are_tasks, bool is_path, char ***out, size_t *n,
                      struct ga_err *err)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, name);
	*out = NULL;
	*n = 0;
	if (!a || cJSON_IsNull(a))
		return 0;
	if (!cJSON_IsArray(a))
		return err_set(err, "%s%s must be an array", where, name);
	size_t cnt = (size_t)cJSON_GetArraySize(a);
	if (cnt > max)
		return err_set(err, "%s%s has %zu items, more than %zu", where, name, cnt, max);
	char **v = xcalloc(cnt ? cnt : 1, sizeof *v);
	size_t k = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, a)
	{
		char *s = NULL;
		if (numbers_are_tasks && cJSON_IsNumber(it) && it->valuedouble >= 1 &&
		    it->valuedouble <= PLAN_TASK_NUMBER_MAX)
			s = xasprintf("Task %d", (int)it->valuedouble);
		else if (cJSON_IsString(it) && it->valuestring &&
		         utf8_valid(it->valuestring, strlen(it->valuestring)))
			s = one_line(it->valuestring);
		if (!s || !*s || (is_path && strchr(s, '`')) || strlen(s) > PLAN_TITLE_MAX) {
			free(s);
			for (size_t j = 0; j < k; j++)
				free(v[j]);
			free(v);
			return err_set(err, "%s%s[%zu] must be a non-empty %s%s", where, name, k,
			               is_path ? "path without backticks" : "string",
			               numbers_are_tasks ? " or a task number" : "");
		}
		v[k++] = s;
	}
	*out = v;
	*n = k;
	return 0;
}

void plan_draft_free(struct plan_draft *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n_tasks; i++) {
		struct plan_draft_task *t = &d->tasks[i];
		free(t->title);
		free(t->description);
		free(t->estimate);
		strv_free(t->deps, t->n_deps);
		strv_free(t->files, t->n_files);
	}
	free(d->tasks);
	strv_free(d->verification, d->n_verification);
	free(d->title);
	free(d->goal);
	free(d->context);
	memset(d, 0, sizeof *d);
}

int plan_draft_from_json(const cJSON *args, struct plan_draft *out, struct ga_err *err)
{
	memset(out, 0, sizeof *out);
	if (!cJSON_IsObject(args))
		return err_set(err, "the plan must be a JSON object");
	if (text_field(args, "title", "", true, true, &out->title, err) ||
	    text_field(args, "goal", "", true, false, &out->goal, err) ||
	    text_field(args, "context", "", false, false, &out->context, err))
		goto fail;
	if (!out->context)
		out->context = xstrdup("");
	const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(args, "tasks");
	if (!cJSON_IsArray(tasks) || cJSON_GetArraySize(tasks) == 0) {
		err_set(err, "tasks must be a non-empty array");
		goto fail;
	}
	size_t cnt = (size_t)cJSON_GetArraySize(tasks);
	if (cnt > PLAN_MAX_TASKS) {
		err_set(err, "tasks has %zu items, more than %d", cnt, PLAN_MAX_TASKS);
		goto fail;
	}
	out->tasks = xcalloc(cnt, sizeof *out->tasks);
	const cJSON *t;
	cJSON_ArrayForEach(t, tasks)
	{
		char where[32];
		snprintf(where, sizeof where, "tasks[%zu].", out->n_tasks);
		struct plan_draft_task *dt = &out->tasks[out->n_tasks++];
		if (!cJSON_IsObject(t)) {
			err_set(err, "tasks[%zu] must be an object", out->n_tasks - 1);
			goto fail;
		}
		if (text_field(t, "title", where, true, true, &dt->title, err) ||
		    text_field(t, "description", where, true, false, &dt->description, err) ||
		    text_field(t, "estimate", where, false, true, &dt->estimate, err) ||
		    list_field(t, "dependencies", where, PLAN_MAX_DEPS, true, false, &dt->deps,
		               &dt->n_deps, err) ||
		    list_field(t, "files", where, PLAN_MAX_FILES, false, true, &dt->files,
		               &dt->n_files, err))
			goto fail;
		if (dt->estimate && !*dt->estimate) {
			free(dt->estimate);
			dt->estimate = NULL;
		}
	}
	if (list_field(args, "verification", "", PLAN_MAX_CHECKS, false, false, &out->verification,
	               &out->n_verification, err))
		goto fail;
	return 0;
fail:
	plan_draft_free(out);
	return -1;
}

/* A list item: "- x", "* x", "+ x", "1. x", "1) x". The item's text
 * (trimmed) into *item. */
static bool list_item(struct span t, struct span *item)
{
	size_t i = 0;
	if (t.n >= 2 && (t.p[0] == '-' || t.p[0] == '*' || t.p[0] == '+') && t.p[1] == ' ') {
		i = 2;
	} else {
		while (i < t.n && i < 4 && isdigit((unsigned char)t.p[i]))
			i++;
		if (i == 0 || i + 1 >= t.n || (t.p[i] != '.' && t.p[i] != ')') || t.p[i + 1] != ' ')
			return false;
		i += 2;
	}
	/* a checklist item "- [ ] x" is a verification line, not a task */
	struct span rest = trim(t.p + i, t.n - i);
	if (rest.n >= 3 && rest.p[0] == '[' && rest.p[2] == ']')
		return false;
	*item = rest;
	return rest.n > 0;
}

/* The title of a task from its item: the text before the first ": " or
 * " — " / " - " when that leaves a few words, else the whole item, cut at
 * PLAN_REQUEST_TITLE_MAX bytes on a word boundary. */
static char *item_title(struct span item)
{
	static const char *const seps[] = {": ", " — ", " - "};
	size_t n = item.n;
	for (size_t k = 0; k < sizeof seps / sizeof seps[0]; k++) {
		const char *at = memmem(item.p, item.n, seps[k], strlen(seps[k]));
		if (at && (size_t)(at - item.p) >= 3 && (size_t)(at - item.p) < n)
			n = (size_t)(at - item.p);
	}
	if (n > PLAN_REQUEST_TITLE_MAX) {
		n = PLAN_REQUEST_TITLE_MAX;
		while (n > 0 && item.p[n] != ' ')
			n--;
		if (n == 0)
			n = utf8_cut(item.p, item.n, PLAN_REQUEST_TITLE_MAX);
	}
	struct span t = trim(item.p, n);
	while (t.n && (t.p[t.n - 1] == '.' || t.p[t.n - 1] == ','))
		t.n--;
	return span_dup(t);
}

int plan_draft_from_request(const char *title, const char *text, const char *context,
                            struct plan_draft *out, struct ga_err *err)
{
	memset(out, 0, sizeof *out);
	if (!title || trim(title, strlen(title)).n == 0)
		return err_set(err, "a plan needs a title");
	if (!text)
		text = "";
	if (strlen(text) > PLAN_MAX_BODY_BYTES)
		return err_set(err, "the request is %zu bytes, more than %d", strlen(text),
		               PLAN_MAX_BODY_BYTES);
	if (!utf8_valid(text, strlen(text)))
		return err_set(err, "the request is not valid UTF-8");
	out->title = one_line(title);
	out->context = xstrdup(context ? context : "");
	size_t nl = 0;
	struct line *lines = split_lines(text, &nl);
	struct strbuf goal;
	sb_init(&goal, PLAN_MAX_BODY_BYTES);
	out->tasks = xcalloc(PLAN_MAX_TASKS, sizeof *out->tasks);
	struct strbuf desc;
	sb_init(&desc, PLAN_MAX_BODY_BYTES);
	for (size_t i = 0; i < nl; i++) {
		struct span t = trim(lines[i].p, lines[i].n);
		struct span item;
		bool indented = lines[i].n > 0 && (lines[i].p[0] == ' ' || lines[i].p[0] == '\t');
		if (list_item(t, &item) && !(indented && out->n_tasks > 0) &&
		    out->n_tasks < PLAN_MAX_TASKS) {
			struct plan_draft_task *dt = &out->tasks[out->n_tasks++];
			dt->title = item_title(item);
			if (!dt->title[0]) { /* an item of punctuation only */
				free(dt->title);
				dt->title = xasprintf("Task %zu", out->n_tasks);
			}
			dt->description = span_dup(item);
			continue;
		}
		if (t.n == 0)
			continue;
		if (indented && out->n_tasks > 0) {
			/* a continuation of the item above */
			struct plan_draft_task *dt = &out->tasks[out->n_tasks - 1];
			sb_reset(&desc);
			sb_puts(&desc, dt->description);
			sb_putc(&desc, '\n');
			sb_append(&desc, t.p, t.n);
			free(dt->description);
			dt->description = xstrdup(sb_cstr(&desc));
			continue;
		}
		if (goal.len)
			sb_putc(&goal, ' ');
		sb_append(&goal, t.p, t.n);
	}
	sb_free(&desc);
	free(lines);
	out->goal = xstrdup(goal.len ? sb_cstr(&goal) : out->title);
	sb_free(&goal);
	if (out->n_tasks == 0) {
		out->tasks[0].title = xstrdup(out->title);
		out->tasks[0].description = xstrdup(trim(text, strlen(text)).n ? text : out->title);
		out->n_tasks = 1;
	}
	return 0;
}

static bool draft_covers(const struct plan_draft *d, const char *title_word, const char *file_name)
{
	for (size_t i = 0; i < d->n_tasks; i++)
		if (strcasestr(d->tasks[i].title, title_word) ||
		    strcasestr(d->tasks[i].description, file_name))
			return true;
	return false;
}

int plan_draft_add_docs(struct plan_draft *d, const char *repo_name, bool repo_has_agents,
                        bool repo_has_scenarios, struct ga_err *err)
{
	if (!repo_name ||
	    strncasecmp(repo_name, PLAN_DOCS_REPO_PREFIX, strlen(PLAN_DOCS_REPO_PREFIX)) != 0)
		return 0;
	static const struct {
		const char *file;
		const char *title_word;
		const char *description;
	} docs[2] = {
	        {PLAN_DOC_AGENTS, "lil-intdev-agents",
	         "Write LIL-INTDEV-AGENTS.md at the repository root: the architecture of this "
	         "workspace, the roles of the agents working in it, the file structure, and the "
	         "constraints every change must respect. Model it on the main AGENTS.md; it is "
	         "written by the agents, for the agents, and kept current as the work goes on."},
	        {PLAN_DOC_SCENARIOS, "scenarios",
	         "Write SCENARIOS.md at the repository root: the acceptance criteria of this "
	         "workspace as concrete scenarios, each in the form \"a human could do X and see "
	         "Y\". They drive the quality loop: every iteration is checked against them."},
	};
	bool add[2] = {!repo_has_agents && !draft_covers(d, docs[0].title_word, docs[0].file),
	               !repo_has_scenarios && !draft_covers(d, docs[1].title_word, docs[1].file)};
	size_t shift = (size_t)add[0] + (size_t)add[1];
	if (!shift)
		return 0;
	if (d->n_tasks + shift > PLAN_MAX_TASKS)
		return err_set(err,
		               "the plan would have %zu tasks with the documentation tasks, more "
		               "than %d",
		               d->n_tasks + shift, PLAN_MAX_TASKS);
	/* Dependencies by number move with their tasks. */
	for (size_t i = 0; i < d->n_tasks; i++)
		for (size_t j = 0; j < d->tasks[i].n_deps; j++) {
			int k = canonical_dep(d->tasks[i].deps[j]);
			if (k && (size_t)k + shift <= PLAN_TASK_NUMBER_MAX) {
				free(d->tasks[i].deps[j]);
				d->tasks[i].deps[j] = xasprintf("Task %zu", (size_t)k + shift);
			}
		}
	struct plan_draft_task *v = xcalloc(d->n_tasks + shift, sizeof *v);
	size_t at = 0;
	for (int i = 0; i < 2; i++) {
		if (!add[i])
			continue;
		v[at].title = xasprintf("Create %s", docs[i].file);
		v[at].description = xstrdup(docs[i].description);
		v[at].estimate = xstrdup("5-10 min");
		v[at].files = xcalloc(1, sizeof(char *));
		v[at].files[0] = xstrdup(docs[i].file);
		v[at].n_files = 1;
		at++;
	}
	memcpy(v + at, d->tasks, d->n_tasks * sizeof *v);
	free(d->tasks);
	d->tasks = v;
	d->n_tasks += shift;
	return (int)shift;
}

char *plan_format_title(const char *title)
{
	char *t = one_line(title);
	char *r = xasprintf(PLAN_TITLE_PREFIX " %s", t);
	free(t);
	return r;
}

/* Text lines, each escaped when it would read as structure. */
static void put_text(struct strbuf *sb, const char *text)
{
	struct span all = trim(text, strlen(text));
	const char *p = all.p, *end = all.p + all.n;
	while (p < end) {
		const char *e = memchr(p, '\n', (size_t)(end - p));
		size_t n = e ? (size_t)(e - p) : (size_t)(end - p);
		size_t len = n;
		if (len && p[len - 1] == '\r')
			len--;
		struct span t = trim(p, len);
		if (t.n && needs_escape(t)) {
			sb_append(sb, p, (size_t)(t.p - p));
			sb_putc(sb, '\\');
			sb_append(sb, t.p, len - (size_t)(t.p - p));
		} else {
			sb_append(sb, p, len);
		}
		sb_putc(sb, '\n');
		p += n + 1;
	}
}

char *plan_draft_format(const struct plan_draft *d, struct ga_err *err)
{
	if (!d->title || !*d->title || !d->goal || !*d->goal || d->n_tasks == 0) {
		err_set(err, "a plan needs a title, a goal and at least one task");
		return NULL;
	}
	if (d->n_tasks > PLAN_MAX_TASKS) {
		err_set(err, "a plan holds at most %d tasks, not %zu", PLAN_MAX_TASKS, d->n_tasks);
		return NULL;
	}
	/* The input bounds the output: each line gains at most an escape, each
	 * task a fixed frame. A body over the limit is refused, never cut. */
	size_t in = strlen(d->title) + strlen(d->goal) + (d->context ? strlen(d->context) : 0);
	for (size_t i = 0; i < d->n_tasks; i++) {
		const struct plan_draft_task *t = &d->tasks[i];
		in += (t->title ? strlen(t->title) : 0) +
		      (t->description ? strlen(t->description) : 0) +
		      (t->estimate ? strlen(t->estimate) : 0);
		for (size_t j = 0; j < t->n_deps; j++)
			in += strlen(t->deps[j]) + 2;
		for (size_t j = 0; j < t->n_files; j++)
			in += strlen(t->files[j]) + 5;
	}
	for (size_t i = 0; i < d->n_verification; i++)
		in += strlen(d->verification[i]) + 7;
	if (in > PLAN_MAX_BODY_BYTES) {
		err_set(err, "the plan body would be larger than %d bytes", PLAN_MAX_BODY_BYTES);
		return NULL;
	}
	struct strbuf sb;
	sb_init(&sb, 4 * (size_t)PLAN_MAX_BODY_BYTES);
	char *title = one_line(d->title);
	sb_printf(&sb, "# " PLAN_TITLE_PREFIX " %s\n\n## Goal\n", title);
	free(title);
	put_text(&sb, d->goal);
	sb_puts(&sb, "\n## Context\n");
	put_text(&sb, d->context ? d->context : "");
	sb_puts(&sb, "\n## Tasks\n\n");
	for (size_t i = 0; i < d->n_tasks; i++) {
		const struct plan_draft_task *t = &d->tasks[i];
		if (!t->title || !*t->title || !t->description || !*t->description) {
			sb_free(&sb);
			err_set(err, "task %zu needs a title and a description", i + 1);
			return NULL;
		}
		char *tt = one_line(t->title);
		sb_printf(&sb, "### Task %zu: %s\n**Status:** pending\n**Assignee:** %s\n", i + 1,
		          tt, PLAN_ASSIGNEE_EMPTY);
		free(tt);
		if (t->estimate && *t->estimate) {
			char *e = one_line(t->estimate);
			sb_printf(&sb, "**Estimate:** %s\n", e);
			free(e);
		}
		sb_puts(&sb, "**Dependencies:** ");
		if (!t->n_deps)
			sb_puts(&sb, "none");
		for (size_t j = 0; j < t->n_deps; j++) {
			char *dep = one_line(t->deps[j]);
			sb_printf(&sb, "%s%s", j ? ", " : "", dep);
			free(dep);
		}
		sb_putc(&sb, '\n');
		if (t->n_files) {
			sb_puts(&sb, "**Files:**\n");
			for (size_t j = 0; j < t->n_files; j++) {
				char *f = one_line(t->files[j]);
				sb_printf(&sb, "- `%s`\n", f);
				free(f);
			}
		}
		sb_puts(&sb, "\n**Description:**\n");
		put_text(&sb, t->description);
		sb_puts(&sb, "\n---\n\n");
	}
	sb_puts(&sb, "## Verification\n");
	static const char *const defaults[] = {"All tasks completed", "Tests pass",
	                                       "Integration works"};
	size_t nv = d->n_verification ? d->n_verification : 3;
	for (size_t i = 0; i < nv; i++) {
		char *v = one_line(d->n_verification ? d->verification[i] : defaults[i]);
		sb_printf(&sb, "- [ ] %s\n", v);
		free(v);
	}
	if (sb.len > PLAN_MAX_BODY_BYTES) {
		sb_free(&sb);
		err_set(err, "the plan body would be larger than %d bytes", PLAN_MAX_BODY_BYTES);
		return NULL;
	}
	return sb_detach(&sb);
}

/* ---- branch names ------------------------------------------------------------------- */

static int check_num(int v)
{
	return v >= 1 && v <= PLAN_TASK_NUMBER_MAX ? 0 : -1;
}

/* The slug before cutting: see plan_branch_name. */
static void slugify(const char *title, struct strbuf *out)
{
	utf8proc_uint8_t *folded = NULL;
	utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)title, 0, &folded,
	                                  UTF8PROC_NULLTERM | UTF8PROC_STABLE | UTF8PROC_DECOMPOSE |
	                                          UTF8PROC_STRIPMARK | UTF8PROC_CASEFOLD);
	const unsigned char *s = n >= 0 ? folded : (const unsigned char *)"";
	size_t len = n >= 0 ? (size_t)n : 0;
	for (size_t i = 0; i < len;) {
		utf8proc_int32_t cp;
		utf8proc_ssize_t k = utf8proc_iterate(s + i, (utf8proc_ssize_t)(len - i), &cp);
		if (k <= 0) {
			i++;
			continue;
		}
		i += (size_t)k;
		if ((cp >= 'a' && cp <= 'z') || (cp >= '0' && cp <= '9') || cp == '-')
			sb_putc(out, (char)cp);
		else if (cp == '&')
			sb_puts(out, "-and-");
		else if (cp == '/' || cp == '_' || cp == ',' || cp == ':' || cp == ';' ||
		         cp == 0xB7 || utf8proc_category(cp) == UTF8PROC_CATEGORY_ZS ||
		         (cp >= 9 && cp <= 13))
			sb_putc(out, '-');
	}
	free(folded);
	/* Collapse and trim dashes. */
	char *b = out->buf;
	size_t w = 0;
	for (size_t r = 0; b && r < out->len; r++) {
		if (b[r] == '-' && (w == 0 || b[w - 1] == '-'))
			continue;
		b[w++] = b[r];
	}
	while (w && b[w - 1] == '-')
		w--;
	out->len = w;
	if (b)
		b[w] = '\0';
}

int plan_branch_name(int task, const char *title, int attempt, char *out, size_t cap)
{
	if (check_num(task) || check_num(attempt) || cap < PLAN_BRANCH_MAX + 1)
		return -1;
	char prefix[16], suffix[16] = "";
	snprintf(prefix, sizeof prefix, "task-%d-", task);
	if (attempt > 1)
		snprintf(suffix, sizeof suffix, "-a%d", attempt);
	size_t allowed = PLAN_BRANCH_MAX - strlen(prefix) - strlen(suffix);
	struct strbuf sb = {0};
	slugify(title ? title : "", &sb);
	size_t n = sb.len;
	const char *s = sb_cstr(&sb);
	if (n > allowed) {
		n = allowed;
		/* The cut word may be partial: drop it (keep it when it is the
		 * only one). */
		const char *dash = NULL;
		for (size_t i = 0; i < n; i++)
			if (s[i] == '-')
				dash = s + i;
		if (dash)
			n = (size_t)(dash - s);
		while (n && s[n - 1] == '-')
			n--;
	}
	if (n == 0) {
		s = "untitled";
		n = strlen(s);
	}
	snprintf(out, cap, "%s%.*s%s", prefix, (int)n, s, suffix);
	sb_free(&sb);
	return 0;
}

int plan_branch_legacy(int task, const char *title, char *out, size_t cap)
{
	if (check_num(task) || cap < PLAN_BRANCH_MAX + 1)
		return -1;
	char slug[PLAN_LEGACY_SLUG_MAX + 1];
	size_t w = 0;
	bool dash = false;
	for (const char *p = title ? title : ""; *p; p++) {
		unsigned char c = (unsigned char)tolower((unsigned char)*p);
		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
			if (dash && w) {
				if (w == PLAN_LEGACY_SLUG_MAX)
					break;
				slug[w++] = '-';
			}
			dash = false;
			if (w == PLAN_LEGACY_SLUG_MAX)
				break;
			slug[w++] = (char)c;
		} else {
			dash = true;
		}
	}
	slug[w] = '\0';
	snprintf(out, cap, "task-%d-%s", task, slug);
	return 0;
}

int plan_branch_task(const char *branch)
{
	if (!branch || strncmp(branch, "task-", 5) != 0)
		return 0;
	const char *p = branch + 5;
	long v = 0;
	int digits = 0;
	while (isdigit((unsigned char)*p) && digits < 5) {
		v = v * 10 + (*p++ - '0');
		digits++;
	}
	if (!digits || *p != '-' || v < 1 || v > PLAN_TASK_NUMBER_MAX)
		return 0;
	return (int)v;
}

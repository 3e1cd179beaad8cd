/*
 * self — SELF.md parsing and first-start creation. See self.h.
 */
#include "modules/identity/self.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/fsx.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/timeutil.h"
#include "common/utf8.h"
#include "common/xalloc.h"

#define SELF_MAX_ITEM_BYTES 1000

static void warn(struct self_doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warn(struct self_doc *d, const char *fmt, ...)
{
	if (d->warning_count >= SELF_MAX_WARNINGS)
		return;
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	d->warnings[d->warning_count++] = xstrdup(buf);
}

void self_defaults(struct self_doc *out)
{
	memset(out, 0, sizeof *out);
	out->mechanics.max_replies_before_exit = SELF_DEFAULT_MAX_REPLIES;
	out->mechanics.max_thread_depth = SELF_DEFAULT_MAX_DEPTH;
	out->mechanics.silence_threshold_ms = SELF_DEFAULT_SILENCE_MS;
	out->mechanics.no_response_timeout_ms = SELF_DEFAULT_NO_RESPONSE_MS;
	out->mechanics.skip_low_value_acks = true;
}

static void list_free(struct self_list *l)
{
	for (size_t i = 0; i < l->count; i++)
		free(l->items[i]);
	free(l->items);
	memset(l, 0, sizeof *l);
}

void self_doc_free(struct self_doc *d)
{
	if (!d)
		return;
	free(d->name);
	free(d->identity);
	free(d->purpose);
	free(d->voice);
	struct self_list *lists[] = {&d->values,        &d->questions,    &d->patterns,
	                             &d->learnings,     &d->explorations, &d->current_focus,
	                             &d->relationships, &d->interests,    &d->learning};
	for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
		list_free(lists[i]);
	for (size_t i = 0; i < d->ritual_count; i++) {
		struct self_ritual *r = &d->rituals[i];
		free(r->name);
		free(r->workspace);
		free(r->schedule_text);
		free(r->description);
		for (size_t j = 0; j < r->participant_count; j++)
			free(r->participants[j]);
		free(r->participants);
	}
	free(d->rituals);
	for (int i = 0; i < d->warning_count; i++)
		free(d->warnings[i]);
	memset(d, 0, sizeof *d);
}

/* --- lines -------------------------------------------------------------------- */

struct span {
	const char *s;
	size_t n;
};

static struct span trim(struct span x)
{
	while (x.n && isspace((unsigned char)x.s[0]))
		x.s++, x.n--;
	while (x.n && isspace((unsigned char)x.s[x.n - 1]))
		x.n--;
	return x;
}

static char *span_dup(struct span x)
{
	if (x.n > SELF_MAX_ITEM_BYTES)
		x.n = utf8_truncate_graphemes(x.s, x.n, SELF_MAX_ITEM_BYTES / 4);
	return xstrndup(x.s, x.n);
}

/* Next line of [*p, end); the span excludes the newline. */
static int next_line(const char **p, const char *end, struct span *line)
{
	if (*p >= end)
		return 0;
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));
	line->s = *p;
	line->n = nl ? (size_t)(nl - *p) : (size_t)(end - *p);
	if (line->n && line->s[line->n - 1] == '\r')
		line->n--;
	*p = nl ? nl + 1 : end;
	return 1;
}

/* Heading level of a line ("## x" → 2), 0 if not a heading. */
static int heading_level(struct span l)
{
	int lvl = 0;
	while ((size_t)lvl < l.n && l.s[lvl] == '#')
		lvl++;
	if (lvl == 0 || (size_t)lvl >= l.n || (l.s[lvl] != ' ' && l.s[lvl] != '\t'))
		return 0;
	return lvl;
}

/* The body of the first `## <title>` section (any candidate, in order). */
static int find_section(const char *text, size_t len, const char *const *titles, struct span *body)
{
	const char *end = text + len;
	for (const char *const *t = titles; *t; t++) {
		const char *p = text;
		struct span l;
		while (next_line(&p, end, &l)) {
			if (heading_level(l) != 2)
				continue;
			struct span h = trim((struct span){l.s + 2, l.n - 2});
			if (h.n != strlen(*t) || strncasecmp(h.s, *t, h.n) != 0)
				continue;
			body->s = p;
			const char *q = p;
			const char *stop = end;
			struct span m;
			while (next_line(&q, end, &m)) {
				int lv = heading_level(m);
				if (lv == 1 || lv == 2) {
					stop = m.s;
					break;
				}
			}
			body->n = (size_t)(stop - p);
			return 1;
		}
	}
	return 0;
}

/* "*(Added through reflection)*", "_(placeholder)_": template filler, not content. */
static int is_placeholder(struct span x)
{
	if (x.n < 2)
		return 0;
	char a = x.s[0], b = x.s[x.n - 1];
	if ((a == '*' || a == '_') && a == b) {
		struct span in = trim((struct span){x.s + 1, x.n - 2});
		while (in.n && (in.s[0] == '*' || in.s[0] == '_'))
			in.s++, in.n--;
		while (in.n && (in.s[in.n - 1] == '*' || in.s[in.n - 1] == '_'))
			in.n--;
		return in.n == 0 || in.s[0] == '(';
	}
	return 0;
}

static void bullets(struct self_doc *d, struct span body, struct self_list *out, int strip_date,
                    const char *what)
{
	const char *p = body.s, *end = body.s + body.n;
	struct span l;
	while (next_line(&p, end, &l)) {
		struct span t = trim(l);
		if (t.n < 2 || (t.s[0] != '-' && t.s[0] != '*') ||
		    (t.s[1] != ' ' && t.s[1] != '\t'))
			continue;
		struct span item = trim((struct span){t.s + 2, t.n - 2});
		if (item.n == 0 || is_placeholder(item))
			continue;
		if (strip_date && item.n > 12 && isdigit((unsigned char)item.s[0]) &&
		    item.s[4] == '-' && item.s[7] == '-' && item.s[10] == ':')
			item = trim((struct span){item.s + 11, item.n - 11});
		if (out->count >= SELF_MAX_ITEMS) {
			warn(d, "SELF.md %s: more than %d items; the rest are ignored", what,
			     SELF_MAX_ITEMS);
			return;
		}
		out->items = xreallocarray(out->items, out->count + 1, sizeof *out->items);
		out->items[out->count++] = span_dup(item);
	}
}

static void section_list(struct self_doc *d, const char *text, size_t len,
                         const char *const *titles, struct self_list *out, int strip_date)
{
	struct span body;
	if (find_section(text, len, titles, &body))
		bullets(d, body, out, strip_date, titles[0]);
}

/* --- Social Mechanics --------------------------------------------------------- */

static int parse_count(struct span v, long *out)
{
	char buf[32];
	if (v.n == 0 || v.n >= sizeof buf)
		return -1;
	memcpy(buf, v.s, v.n);
	buf[v.n] = '\0';
	char *end;
	errno = 0;
	long n = strtol(buf, &end, 10);
	if (end == buf || errno)
		return -1;
	while (*end == ' ')
		end++;
	/* "4", "4 replies", "4 max" are fine; "4.5" or "four" are not. */
	if (*end && !isalpha((unsigned char)*end))
		return -1;
	*out = n;
	return 0;
}

/* Durations: "30m", "30 min", "1h", "2 hours", "2 days", "45s"; bare number =
 * minutes. Returns -1 for anything else (an unknown unit is not minutes). */
static int parse_duration(struct span v, int64_t *ms)
{
	char buf[48];
	if (v.n == 0 || v.n >= sizeof buf)
		return -1;
	memcpy(buf, v.s, v.n);
	buf[v.n] = '\0';
	char *end;
	errno = 0;
	double n = strtod(buf, &end);
	if (end == buf || errno || n < 0 || buf[0] == '-')
		return -1;
	while (*end == ' ')
		end++;
	char unit[16];
	size_t u = 0;
	while (isalpha((unsigned char)*end) && u + 1 < sizeof unit)
		unit[u++] = (char)tolower((unsigned char)*end++);
	unit[u] = '\0';
	while (*end == ' ' || *end == '.')
		end++;
	if (*end)
		return -1;
	static const struct {
		const char *name;
		int64_t ms;
	} units[] = {
	        {"", 60000},      {"s", 1000},       {"sec", 1000},      {"secs", 1000},
	        {"second", 1000}, {"seconds", 1000}, {"m", 60000},       {"min", 60000},
	        {"mins", 60000},  {"minute", 60000}, {"minutes", 60000}, {"h", 3600000},
	        {"hr", 3600000},  {"hrs", 3600000},  {"hour", 3600000},  {"hours", 3600000},
	        {"d", 86400000},  {"day", 86400000}, {"days", 86400000},
	};
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (strcmp(unit, units[i].name) == 0) {
			double r = n * (double)units[i].ms;
			if (r > 1e15)
				return -1;
			*ms = (int64_t)r;
			return 0;
		}
	return -1;
}

static int contains_ci(struct span s, const char *needle)
{
	size_t k = strlen(needle);
	for (size_t i = 0; i + k <= s.n; i++)
		if (strncasecmp(s.s + i, needle, k) == 0)
			return 1;
	return 0;
}

static void set_count(struct self_doc *d, struct span key, struct span val, int *dst, int def,
                      int max)
{
	long n;
	if (parse_count(val, &n) != 0 || n <= 0 || n > max) {
		warn(d,
		     "SELF.md Social Mechanics: '%.*s' value '%.*s' is not a whole number from 1 "
		     "to %d; using the default %d",
		     (int)key.n, key.s, (int)(val.n > 40 ? 40 : val.n), val.s, max, def);
		*dst = def;
		return;
	}
	*dst = (int)n;
}

static void set_duration(struct self_doc *d, struct span key, struct span val, int64_t *dst,
                         int64_t def)
{
	int64_t ms;
	if (parse_duration(val, &ms) != 0 || ms < SELF_MIN_DURATION_MS ||
	    ms > SELF_MAX_DURATION_MS) {
		warn(d,
		     "SELF.md Social Mechanics: '%.*s' value '%.*s' is not a duration from 1 "
		     "minute to 7 days (e.g. 30m, 2h, 1 day); using the default %lld minutes",
		     (int)key.n, key.s, (int)(val.n > 40 ? 40 : val.n), val.s,
		     (long long)(def / 60000));
		*dst = def;
		return;
	}
	*dst = ms;
}

static void parse_mechanics(struct self_doc *d, struct span body)
{
	const char *p = body.s, *end = body.s + body.n;
	struct span l;
	struct self_mechanics *m = &d->mechanics;
	while (next_line(&p, end, &l)) {
		struct span t = trim(l);
		if (t.n == 0 || t.s[0] != '|' || contains_ci(t, "---") || contains_ci(t, "signal"))
			continue;
		struct span cells[4];
		int nc = 0;
		const char *c = t.s + 1, *tend = t.s + t.n;
		while (c < tend && nc < 4) {
			const char *bar = memchr(c, '|', (size_t)(tend - c));
			struct span cell = trim(
			        (struct span){c, bar ? (size_t)(bar - c) : (size_t)(tend - c)});
			if (cell.n)
				cells[nc++] = cell;
			if (!bar)
				break;
			c = bar + 1;
		}
		if (nc < 2)
			continue;
		struct span key = cells[0], val = cells[1];
		/* A row sets exactly one knob, the first that matches: "My
		 * replies in thread" is the reply count, not the depth. */
		if (contains_ci(key, "depth"))
			set_count(d, key, val, &m->max_thread_depth, SELF_DEFAULT_MAX_DEPTH,
			          SELF_MAX_DEPTH_LIMIT);
		else if (contains_ci(key, "replies") || contains_ci(key, "reply count"))
			set_count(d, key, val, &m->max_replies_before_exit,
			          SELF_DEFAULT_MAX_REPLIES, SELF_MAX_REPLIES_LIMIT);
		else if (contains_ci(key, "silence"))
			set_duration(d, key, val, &m->silence_threshold_ms,
			             SELF_DEFAULT_SILENCE_MS);
		else if (contains_ci(key, "response"))
			set_duration(d, key, val, &m->no_response_timeout_ms,
			             SELF_DEFAULT_NO_RESPONSE_MS);
		else if (contains_ci(key, "acknowledg") || contains_ci(key, "low value") ||
		         contains_ci(key, "low-value")) {
			if (contains_ci(val, "don't") || contains_ci(val, "do not") ||
			    contains_ci(val, "never") || contains_ci(val, "false") ||
			    contains_ci(val, "off") || contains_ci(val, "reply") ||
			    (val.n == 2 && strncasecmp(val.s, "no", 2) == 0))
				m->skip_low_value_acks = false;
			else if (contains_ci(val, "skip") || contains_ci(val, "true") ||
			         contains_ci(val, "yes") || contains_ci(val, "on"))
				m->skip_low_value_acks = true;
			else
				warn(d,
				     "SELF.md Social Mechanics: '%.*s' value '%.*s' is neither "
				     "skip nor reply; keeping %s",
				     (int)key.n, key.s, (int)(val.n > 40 ? 40 : val.n), val.s,
				     m->skip_low_value_acks ? "skip" : "reply");
		} else if (contains_ci(key, "thread")) {
			set_count(d, key, val, &m->max_thread_depth, SELF_DEFAULT_MAX_DEPTH,
			          SELF_MAX_DEPTH_LIMIT);
		} else {
			warn(d, "SELF.md Social Mechanics: unknown signal '%.*s' ignored",
			     (int)(key.n > 60 ? 60 : key.n), key.s);
		}
	}
}

/* --- Daily Rituals -------------------------------------------------------------- */

static const char *const DAYS[7] = {"sunday",   "monday", "tuesday", "wednesday",
                                    "thursday", "friday", "saturday"};

static int parse_schedule(struct self_ritual *r)
{
	const char *s = r->schedule_text;
	if (strcmp(s, "daily") == 0 || strcmp(s, "every day") == 0) {
		r->schedule = SELF_DAILY;
		r->days_mask = 0x7f;
		return 0;
	}
	if (strcmp(s, "weekdays") == 0) {
		r->schedule = SELF_WEEKDAYS;
		r->days_mask = 0x3e;
		return 0;
	}
	if (strcmp(s, "weekends") == 0) {
		r->schedule = SELF_WEEKENDS;
		r->days_mask = 0x41;
		return 0;
	}
	r->schedule = SELF_DAYS;
	r->days_mask = 0;
	const char *p = s;
	while (*p) {
		while (*p == ' ' || *p == ',')
			p++;
		if (!*p)
			break;
		const char *e = p;
		while (*e && *e != ',' && *e != ' ')
			e++;
		int found = 0;
		for (int i = 0; i < 7; i++)
			if (strlen(DAYS[i]) == (size_t)(e - p) &&
			    strncmp(DAYS[i], p, (size_t)(e - p)) == 0) {
				r->days_mask |= 1u << i;
				found = 1;
			}
		if (!found)
			return -1;
		p = e;
	}
	return r->days_mask ? 0 : -1;
}

bool self_ritual_on(const struct self_ritual *r, int wday)
{
	return wday >= 0 && wday < 7 && (r->days_mask & (1u << wday));
}

static void ritual_drop(struct self_ritual *r)
{
	free(r->name);
	free(r->workspace);
	free(r->schedule_text);
	free(r->description);
	for (size_t j = 0; j < r->participant_count; j++)
		free(r->participants[j]);
	free(r->participants);
	memset(r, 0, sizeof *r);
}

/* `- **Name** [schedule] (workspace)` */
static int ritual_header(struct span t, struct self_ritual *r)
{
	if (t.n < 2 || (t.s[0] != '-' && t.s[0] != '*') || t.s[1] != ' ')
		return 0;
	struct span x = trim((struct span){t.s + 2, t.n - 2});
	if (x.n < 5 || strncmp(x.s, "**", 2) != 0)
		return 0;
	const char *ne = NULL;
	for (size_t i = 2; i + 1 < x.n; i++)
		if (x.s[i] == '*' && x.s[i + 1] == '*') {
			ne = x.s + i;
			break;
		}
	if (!ne)
		return 0;
	struct span name = trim((struct span){x.s + 2, (size_t)(ne - x.s - 2)});
	const char *p = ne + 2, *end = x.s + x.n;
	while (p < end && *p == ' ')
		p++;
	if (p >= end || *p != '[')
		return 0;
	const char *se = memchr(p, ']', (size_t)(end - p));
	if (!se)
		return 0;
	struct span sched = trim((struct span){p + 1, (size_t)(se - p - 1)});
	p = se + 1;
	while (p < end && *p == ' ')
		p++;
	if (p >= end || *p != '(')
		return 0;
	const char *we = memchr(p, ')', (size_t)(end - p));
	if (!we)
		return 0;
	struct span ws = trim((struct span){p + 1, (size_t)(we - p - 1)});
	if (!name.n || !sched.n || !ws.n)
		return 0;
	memset(r, 0, sizeof *r);
	r->name = span_dup(name);
	r->workspace = span_dup(ws);
	r->schedule_text = span_dup(sched);
	for (char *c = r->schedule_text; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	return 1;
}

static void ritual_finish(struct self_doc *d, struct self_ritual *r, struct strbuf *desc)
{
	if (!r->name)
		return;
	if (parse_schedule(r) != 0) {
		warn(d,
		     "SELF.md Daily Rituals: '%s' has an unknown schedule '%s' (use daily, "
		     "weekdays, weekends or day names such as monday, thursday); ritual ignored",
		     r->name, r->schedule_text);
		ritual_drop(r);
		sb_reset(desc);
		return;
	}
	if (d->ritual_count >= SELF_MAX_RITUALS) {
		warn(d, "SELF.md Daily Rituals: more than %d rituals; '%s' ignored",
		     SELF_MAX_RITUALS, r->name);
		ritual_drop(r);
		sb_reset(desc);
		return;
	}
	r->description = sb_detach(desc);
	d->rituals = xreallocarray(d->rituals, d->ritual_count + 1, sizeof *d->rituals);
	d->rituals[d->ritual_count++] = *r;
	memset(r, 0, sizeof *r);
}

static int key_prefix(struct span t, const char *key, struct span *rest)
{
	size_t k = strlen(key);
	if (t.n < k || strncasecmp(t.s, key, k) != 0)
		return 0;
	*rest = trim((struct span){t.s + k, t.n - k});
	return 1;
}

static void parse_rituals(struct self_doc *d, struct span body)
{
	const char *p = body.s, *end = body.s + body.n;
	struct span l;
	struct self_ritual cur = {0};
	struct strbuf desc = {0};
	sb_init(&desc, 16 * 1024);
	while (next_line(&p, end, &l)) {
		struct span t = trim(l);
		if (t.n == 0)
			continue;
		struct self_ritual next;
		if (ritual_header(t, &next)) {
			ritual_finish(d, &cur, &desc);
			cur = next;
			continue;
		}
		if (!cur.name)
			continue;
		struct span rest;
		if (key_prefix(t, "participants:", &rest)) {
			const char *q = rest.s, *qe = rest.s + rest.n;
			while (q < qe) {
				const char *comma = memchr(q, ',', (size_t)(qe - q));
				struct span one = trim((struct span){q, comma ? (size_t)(comma - q)
				                                              : (size_t)(qe - q)});
				if (one.n && cur.participant_count < SELF_MAX_PARTICIPANTS) {
					cur.participants = xreallocarray(cur.participants,
					                                 cur.participant_count + 1,
					                                 sizeof *cur.participants);
					cur.participants[cur.participant_count++] = span_dup(one);
				}
				q = comma ? comma + 1 : qe;
			}
		} else if (key_prefix(t, "role:", &rest)) {
			if (rest.n >= 9 && strncasecmp(rest.s, "initiator", 9) == 0)
				cur.initiator = true;
			else if (rest.n >= 11 && strncasecmp(rest.s, "participant", 11) == 0)
				cur.initiator = false;
			else
				warn(d,
				     "SELF.md Daily Rituals: '%s' has an unknown role '%.*s' "
				     "(initiator or participant); using participant",
				     cur.name, (int)(rest.n > 30 ? 30 : rest.n), rest.s);
		} else {
			if (desc.len)
				sb_putc(&desc, '\n');
			sb_append(&desc, t.s, t.n);
		}
	}
	ritual_finish(d, &cur, &desc);
	sb_free(&desc);
}

/* --- the whole document ---------------------------------------------------------- */

static const char *const T_PURPOSE[] = {"What I'm here to do", "Purpose", "Mission", "Why I exist",
                                        NULL};
static const char *const T_VALUES[] = {"Values", "Principles", "Core Values", "What I believe",
                                       NULL};
static const char *const T_QUESTIONS[] = {"Questions I'm Sitting With", "Questions",
                                          "What I wonder", "Things I'm curious about", NULL};
static const char *const T_PATTERNS[] = {"Patterns I Notice", "Patterns", "What I observe",
                                         "Things I see", NULL};
static const char *const T_LEARNINGS[] = {"Recent Learnings", "Learnings", "What I've learned",
                                          "Insights", NULL};
static const char *const T_EXPLORE[] = {"What I Want to Explore", "Explorations", "Curiosities",
                                        "Topics to explore", NULL};
static const char *const T_FOCUS[] = {"Current focus", "Focus", "What I'm working on", "Goals",
                                      NULL};
static const char *const T_RELATIONS[] = {"Relationships", "People I care about", "Connections",
                                          "Community", NULL};
static const char *const T_VOICE[] = {"Voice", "How I Sound", "Tone", "My Voice", NULL};
static const char *const T_MECHANICS[] = {"Social Mechanics", "Engagement Preferences",
                                          "Conversation Preferences", NULL};
static const char *const T_RITUALS[] = {"Daily Rituals", "Rituals", NULL};
static const char *const T_INTERESTS[] = {"Current Interests", "Current Interest", "Interests",
                                          NULL};
static const char *const T_LEARNING[] = {"What I'm Learning", NULL};

int self_parse(const char *text, size_t len, struct self_doc *d, struct ga_err *err)
{
	self_defaults(d);
	if (len > SELF_MAX_BYTES)
		return err_set(err, "SELF.md is larger than %d bytes", SELF_MAX_BYTES);
	if (!utf8_valid(text, len) || memchr(text, '\0', len))
		return err_set(err, "SELF.md is not valid UTF-8 text");

	/* H1 at the very start: name = its first word, identity = the first
	 * paragraph after a blank line. */
	const char *p = text, *end = text + len;
	struct span l;
	if (next_line(&p, end, &l) && heading_level(l) == 1) {
		struct span h = trim((struct span){l.s + 2, l.n - 2});
		size_t w = 0;
		while (w < h.n && (isalnum((unsigned char)h.s[w]) || h.s[w] == '_' ||
		                   (unsigned char)h.s[w] >= 0x80))
			w++;
		if (w)
			d->name = xstrndup(h.s, w);
		struct span blank;
		if (next_line(&p, end, &blank) && trim(blank).n == 0) {
			struct strbuf para = {0};
			sb_init(&para, 4096);
			struct span pl;
			while (next_line(&p, end, &pl)) {
				struct span t = trim(pl);
				if (t.n == 0 || heading_level(t))
					break;
				if (para.len)
					sb_putc(&para, ' ');
				sb_append(&para, t.s, t.n);
			}
			if (para.len)
				d->identity = sb_detach(&para);
			sb_free(&para);
		}
	}

	struct span body;
	if (find_section(text, len, T_PURPOSE, &body)) {
		const char *q = body.s, *qe = body.s + body.n;
		struct span pl;
		while (next_line(&q, qe, &pl)) {
			struct span t = trim(pl);
			if (t.n) {
				d->purpose = span_dup(t);
				break;
			}
		}
	}
	section_list(d, text, len, T_VALUES, &d->values, 0);
	section_list(d, text, len, T_QUESTIONS, &d->questions, 0);
	section_list(d, text, len, T_PATTERNS, &d->patterns, 0);
	section_list(d, text, len, T_LEARNINGS, &d->learnings, 1);
	section_list(d, text, len, T_EXPLORE, &d->explorations, 0);
	section_list(d, text, len, T_FOCUS, &d->current_focus, 0);
	section_list(d, text, len, T_RELATIONS, &d->relationships, 0);
	section_list(d, text, len, T_INTERESTS, &d->interests, 0);
	section_list(d, text, len, T_LEARNING, &d->learning, 0);
	if (find_section(text, len, T_VOICE, &body)) {
		struct span t = trim(body);
		if (t.n)
			d->voice = xstrndup(t.s, t.n);
	}
	if (find_section(text, len, T_MECHANICS, &body))
		parse_mechanics(d, body);
	if (find_section(text, len, T_RITUALS, &body))
		parse_rituals(d, body);
	return 0;
}

int self_load(const char *path, struct self_doc *out, struct ga_err *err)
{
	size_t len = 0;
	struct ga_err rerr = {{0}};
	errno = 0;
	char *text = fsx_read_file(path, SELF_MAX_BYTES, &len, &rerr);
	if (!text) {
		self_defaults(out);
		if (errno == ENOENT)
			return 0;
		return err_set(err, "%s", rerr.msg);
	}
	int rc = self_parse(text, len, out, err);
	free(text);
	return rc;
}

static char *substitute(const char *text, const char *name, const char *date, int *changed)
{
	struct strbuf sb = {0};
	sb_init(&sb, SELF_MAX_BYTES * 2);
	*changed = 0;
	const char *p = text;
	for (;;) {
		const char *a = strstr(p, "{{AGENT_NAME}}");
		const char *b = strstr(p, "{{DATE}}");
		const char *next = a && (!b || a < b) ? a : b;
		if (!next) {
			sb_puts(&sb, p);
			break;
		}
		sb_append(&sb, p, (size_t)(next - p));
		if (next == a) {
			sb_puts(&sb, name);
			p = a + strlen("{{AGENT_NAME}}");
		} else {
			sb_puts(&sb, date);
			p = b + strlen("{{DATE}}");
		}
		*changed = 1;
	}
	return sb_detach(&sb);
}

int self_ensure(const char *self_path, const char *template_path, const char *agent_name,
                int64_t now_ms, bool *created, struct ga_err *err)
{
	if (created)
		*created = false;
	char date[11];
	time_format_date(now_ms, date);
	struct ga_err rerr = {{0}};
	size_t len = 0;
	errno = 0;
	char *cur = fsx_read_file(self_path, SELF_MAX_BYTES, &len, &rerr);
	if (cur) {
		int changed = 0;
		char *out = substitute(cur, agent_name, date, &changed);
		int rc = 0;
		if (changed) {
			rc = fsx_write_atomic(self_path, out, strlen(out), err);
			if (rc == 0)
				log_kv(LOG_LEVEL_INFO, "identity", "SELF.md placeholders filled in",
				       "file", self_path);
		}
		free(out);
		free(cur);
		return rc;
	}
	if (errno != ENOENT)
		return err_set(err, "%s", rerr.msg);
	errno = 0;
	char *tpl =
	        template_path ? fsx_read_file(template_path, SELF_MAX_BYTES, &len, &rerr) : NULL;
	if (!tpl) {
		if (!template_path || errno == ENOENT)
			return 0;
		return err_set(err, "%s", rerr.msg);
	}
	int changed = 0;
	char *out = substitute(tpl, agent_name, date, &changed);
	free(tpl);
	int rc = fsx_write_atomic(self_path, out, strlen(out), err);
	free(out);
	if (rc == 0) {
		if (created)
			*created = true;
		log_kv(LOG_LEVEL_INFO, "identity", "SELF.md written from the template", "file",
		       self_path, "template", template_path);
	}
	return rc;
}

char *self_excerpt(const struct self_doc *s, bool with_name, size_t max)
{
	if (!s)
		return NULL;
	struct strbuf sb;
	sb_init(&sb, max);
	if (with_name && s->name)
		sb_printf(&sb, "Name: %s\n", s->name);
	if (s->identity)
		sb_printf(&sb, "%s\n", s->identity);
	if (s->purpose)
		sb_printf(&sb, "Purpose: %s\n", s->purpose);
	if (s->voice)
		sb_printf(&sb, "Voice: %s\n", s->voice);
	char *t = NULL;
	if (sb.len) {
		size_t n = utf8_cut(sb.buf, sb.len, max);
		t = xstrndup(sb.buf, n);
	}
	sb_free(&sb);
	return t;
}

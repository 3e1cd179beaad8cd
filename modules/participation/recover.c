/*
 * recover — what the owner does when the decision did not speak (§11):
 * commitment salvage, the owner retry's acceptance, forced action.
 * See participation.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/xalloc.h"
#include "modules/participation/participation.h"

static bool blank(const char *s)
{
	for (; s && *s; s++)
		if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r')
			return false;
	return true;
}

char *part_words_naming(const char *lead, const struct cmt_list *c)
{
	const char *what = NULL;
	for (size_t i = 0; i < c->n && !what; i++) {
		if (!blank(c->item[i].title))
			what = c->item[i].title;
		else if (!blank(c->item[i].description))
			what = c->item[i].description;
	}
	size_t ll = strlen(lead);
	while (ll && (lead[ll - 1] == '.' || lead[ll - 1] == ' '))
		ll--;
	if (!what)
		return xstrdup(lead);
	/* the first PART_WORDS_WHAT_CHARS characters of the first line */
	while (*what == ' ' || *what == '\t' || *what == '\n' || *what == '\r' || *what == '#')
		what++;
	size_t i = 0, chars = 0;
	while (what[i] && what[i] != '\n' && what[i] != '\r') {
		if (((unsigned char)what[i] & 0xC0) != 0x80) {
			if (chars == PART_WORDS_WHAT_CHARS)
				break;
			chars++;
		}
		i++;
	}
	bool cut = what[i] && what[i] != '\n' && what[i] != '\r';
	if (cut) {
		/* at the last word boundary when there is one */
		size_t w = i;
		while (w && what[w - 1] != ' ')
			w--;
		if (w > 1)
			i = w - 1;
	}
	while (i && (what[i - 1] == '.' || what[i - 1] == ' ' || what[i - 1] == '\t' ||
	             what[i - 1] == ',' || what[i - 1] == ':'))
		i--;
	if (!i)
		return xstrdup(lead);
	struct strbuf sb = {0};
	sb_printf(&sb, "%.*s: %.*s%s", (int)ll, lead, (int)i, what, cut ? "\xE2\x80\xA6" : ".");
	return sb_detach(&sb);
}

/* Removes create_issue, create_plan and comment_issue from c (post_bluesky
 * stays, in order); returns how many went. */
static size_t remove_github(struct cmt_list *c)
{
	size_t k = 0, removed = 0;
	for (size_t i = 0; i < c->n; i++) {
		if (c->item[i].type == CMT_POST_BLUESKY) {
			c->item[k++] = c->item[i];
			continue;
		}
		cmt_item_clear(&c->item[i]);
		removed++;
	}
	for (size_t i = k; i < c->n; i++)
		memset(&c->item[i], 0, sizeof c->item[i]);
	c->n = k;
	return removed;
}

size_t part_drop_foreign_commitments(struct cmt_list *c, const struct part_tick_out *t,
                                     struct decision *why)
{
	if (!t->request_open || t->own.is_owner || !t->own.owner[0] || !c->n)
		return 0;
	size_t had = c->n;
	const char *first = "";
	for (size_t i = 0; i < c->n && !first[0]; i++)
		if (c->item[i].type != CMT_POST_BLUESKY)
			first = cmt_type_name(c->item[i].type);
	size_t removed = remove_github(c);
	if (removed)
		decision_set(why, VERDICT_DROP, "action_owner",
		             "%s owns the request: %zu of %zu commitment(s) dropped (%s%s), the "
		             "words are validated without them",
		             t->own.owner, removed, had, first, removed > 1 ? ", …" : "");
	return removed;
}

bool part_salvage(struct part_decision *d, const struct part_tick_out *t, bool validator_ran,
                  bool validator_salvage, struct decision *why)
{
	bool speaking = d->should_speak && !blank(d->message);
	if (speaking && !validator_ran) {
		decision_set(why, VERDICT_INFO, "no_salvage",
		             "the decision speaks: nothing to salvage");
		return false;
	}
	/* Seed 004 level 4: a social-only agent salvages no GitHub work, even
	 * if something upstream let one through. */
	size_t removed = t->social_only ? remove_github(&d->commitments) : 0;
	if (d->commitments.n == 0) {
		decision_set(
		        why, VERDICT_INFO, "no_salvage",
		        removed ? "social-only: the GitHub commitments were removed, none left "
		                  "to salvage"
		                : "no valid commitment to salvage");
		return false;
	}
	if (validator_ran && !validator_salvage) {
		decision_set(
		        why, VERDICT_INFO, "no_salvage",
		        "the validator's rejection does not allow salvage (§11.1: only too long, "
		        "list, echo opener, deference, repo amnesia)");
		return false;
	}
	/* §16.7: commitments carried by a silent decision are not lost — unless
	 * another agent owns the open request (§16.16: that is a duplicate). */
	if (t->request_open && !t->own.is_owner && t->own.owner[0]) {
		decision_set(why, VERDICT_INFO, "no_salvage",
		             "%s owns the open request: my commitments would duplicate it",
		             t->own.owner);
		return false;
	}
	const char *ty = cmt_type_name(d->commitments.item[0].type);
	char words[32];
	snprintf(words, sizeof words, "%s", ty);
	for (char *p = words; *p; p++)
		if (*p == '_')
			*p = ' ';
	/* the agent's voice (space.on_it), {{type}} = "create issue" */
	const char *tmpl =
	        t->salvage_lead && *t->salvage_lead ? t->salvage_lead : PART_SALVAGE_MESSAGE;
	struct strbuf msg;
	sb_init(&msg, 1024);
	sb_fill(&msg, tmpl, (const char *const[]){"type"}, (const char *const[]){words}, 1);
	free(d->message);
	d->message = part_words_naming(sb_cstr(&msg), &d->commitments);
	sb_free(&msg);
	d->should_speak = true;
	decision_set(why, VERDICT_EDIT, "salvage",
	             "%zu valid commitment(s) kept; the words became \"%s\" (§11.1)",
	             d->commitments.n, d->message);
	return true;
}

static const char *forced_lead(const struct part_tick_out *t)
{
	return t && t->forced_lead && *t->forced_lead ? t->forced_lead : PART_FORCED_MESSAGE;
}

int part_owner_retry_accept(struct part_decision *d, const struct part_tick_out *t,
                            struct decision *why)
{
	if (d->commitments.n == 0) {
		decision_set(why, VERDICT_REJECT, "retry_no_commitment",
		             "the owner retry returned no valid commitment (%zu dropped)",
		             d->commitments.ndropped_total);
		return -1;
	}
	if (blank(d->message) || strcmp(d->message, PART_FORCED_MESSAGE) == 0 ||
	    strcmp(d->message, forced_lead(t)) == 0) {
		free(d->message);
		d->message = part_words_naming(forced_lead(t), &d->commitments);
	}
	d->should_speak = true;
	decision_set(why, VERDICT_PASS, "owner_retry",
	             "the owner retry returned %zu valid commitment(s) (§11.2)", d->commitments.n);
	return 0;
}

char *part_forced_body(const struct part_state *st)
{
	struct strbuf sb = {0};
	const char *req = st->req_content ? st->req_content : "";
	char *title = part_utf16_prefix(req, strlen(req), PART_FORCED_TITLE_UNITS);
	sb_printf(&sb,
	          "## %s\n\n_This issue was created from an agent-space conversation where the "
	          "host requested action._\n\n### Context\n\n",
	          title);
	free(title);
	for (size_t i = 0; i < st->hist_n; i++) {
		const struct part_entry *e = part_history_at(st, i);
		sb_printf(&sb, "%s: ", e->author);
		sb_append(&sb, e->text, strlen(e->text));
		sb_putc(&sb, '\n');
	}
	return sb_detach(&sb);
}

int part_forced_decision(const struct part_state *st, const struct part_tick_out *t, bool due_now,
                         const char *body, struct part_decision *out, struct decision *why)
{
	part_decision_clear(out);
	if (t->social_only) {
		decision_set(why, VERDICT_BLOCK, "forced_social_only",
		             "social-only: a forced GitHub issue is never made");
		return -1;
	}
	if (!(t->force_action_due || due_now) || !st->req_content) {
		decision_set(why, VERDICT_BLOCK, "forced_not_due",
		             "forced action is not due (owner of an open request for ≥ 2 cycles or "
		             "≥ %d declines, at most %d times)",
		             PART_FORCE_REJECTIONS, PART_FORCED_MAX);
		return -1;
	}
	const char *slash = t->repo ? strchr(t->repo, '/') : NULL;
	if (!slash || slash == t->repo || !slash[1]) {
		decision_set(why, VERDICT_BLOCK, "forced_no_repo",
		             "forced action needs a repository (owner/name) named in the "
		             "conversation; none was: %s",
		             t->repo ? t->repo : "no github.com/owner/name seen");
		return -1;
	}
	out->should_speak = true;
	out->reason = xstrdup("forced action (§11.3)");
	out->message = xstrdup(PART_FORCED_MESSAGE);
	struct cmt_item *c = &out->commitments.item[0];
	c->type = CMT_CREATE_ISSUE;
	c->repo = xstrdup(t->repo);
	c->title = part_utf16_prefix(st->req_content, strlen(st->req_content),
	                             PART_FORCED_TITLE_UNITS);
	c->description = body && !blank(body) ? xstrdup(body) : part_forced_body(st);
	out->commitments.n = 1;
	free(out->message);
	out->message = part_words_naming(forced_lead(t), &out->commitments);
	decision_set(why, VERDICT_PASS, "forced_action",
	             "no commitment after %u cycles / %u declines: creating the issue in %s "
	             "(attempt %u of %d)",
	             st->cycles, st->owner_rejections, t->repo, st->forced_attempts + 1,
	             PART_FORCED_MAX);
	return 0;
}

uint64_t part_discussion_retry_due(const struct part_state *st, const struct part_tick_out *t,
                                   const char *self, bool social_only,
                                   const struct part_member *members, size_t nmembers,
                                   uint64_t done_seq, struct decision *why)
{
	const struct part_entry *host = NULL;
	bool answered = false;
	for (size_t i = st->hist_n; i > 0 && !host; i--) {
		const struct part_entry *e = part_history_at(st, i - 1);
		if (e->host)
			host = e;
		else
			answered = true; /* an agent (us included) spoke after it */
	}
	const char *no = !t->has_new                       ? "no new message this tick"
	                 : t->mode != PART_MODE_DISCUSSION ? "not a discussion"
	                 : !host || !host->live            ? "no live host message"
	                 : answered                        ? "an agent already answered the host"
	                 : host->seq == done_seq           ? "already retried for this message"
	                                                   : NULL;
	if (no) {
		decision_set(why, VERDICT_INFO, "no_discussion_retry", "%s", no);
		return 0;
	}
	struct part_ownership o;
	struct decision owhy;
	part_ownership_compute(self, social_only, members, nmembers, host->text, PART_MODE_ACTION,
	                       &o, &owhy);
	if (!o.is_owner) {
		decision_set(why, VERDICT_INFO, "no_discussion_retry",
		             "%s answers the host's question if anyone does (first of the ranking)",
		             o.owner[0] ? o.owner : "nobody");
		return 0;
	}
	decision_set(why, VERDICT_INFO, "discussion_retry",
	             "nobody has answered the host's question and my answer was refused: one "
	             "more decision call (first of %zu in the ranking, once per host message)",
	             o.n_agents);
	return host->seq;
}

/*
 * policy — ownership, roles, budgets, thresholds. See policy.h.
 */
#include "modules/participation/policy.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/strbuf.h"
#include "common/utf8.h"
#include "common/xalloc.h"

char *part_utf16_prefix(const char *s, size_t len, size_t units)
{
	struct strbuf out = {0};
	size_t used = 0, i = 0;
	if (!s)
		len = 0;
	while (i < len && used < units) {
		unsigned int cp;
		int n = utf8_decode(s + i, len - i, &cp);
		if (n < 0) {
			sb_append(&out, "\xEF\xBF\xBD", 3);
			used++;
			i++;
			continue;
		}
		if (cp >= 0x10000) {
			if (units - used < 2) {
				/* Only the high surrogate fits: Node hashes it as U+FFFD. */
				sb_append(&out, "\xEF\xBF\xBD", 3);
				used++;
				break;
			}
			used += 2;
		} else {
			used++;
		}
		sb_append(&out, s + i, (size_t)n);
		i += (size_t)n;
	}
	if (!out.buf)
		return xstrdup("");
	return sb_detach(&out);
}

bool part_member_eligible(const struct part_member *m)
{
	if (!m->has_caps)
		return true;
	for (size_t i = 0; i < m->ncaps; i++)
		if (m->caps[i] && strcmp(m->caps[i], PART_REQUIRED_CAP) == 0)
			return true;
	return false;
}

struct ranked {
	const char *name;
	bool eligible;
	bool self;
	char digest[SHA256_HEX_LEN + 1];
};

static int cmp_ranked(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	int c = strcmp(x->digest, y->digest);
	return c ? c : strcmp(x->name, y->name);
}

static void digest_of(const char *name, const char *key, char out[SHA256_HEX_LEN + 1])
{
	size_t a = strlen(name), b = strlen(key);
	char *buf = xmalloc(a + b + 1);
	memcpy(buf, name, a);
	memcpy(buf + a, key, b);
	sha256_hex(buf, a + b, out);
	free(buf);
}

void part_ownership_compute(const char *self, bool self_social_only,
                            const struct part_member *peers, size_t npeers, const char *request,
                            enum part_mode mode, struct part_ownership *out, struct decision *why)
{
	memset(out, 0, sizeof *out);
	out->role = PART_ROLE_ACTOR;
	out->is_owner = true;
	snprintf(out->owner, sizeof out->owner, "%s", self);

	/* Heap: PART_MEMBERS_MAX + 1 entries of ~90 bytes is too much stack. */
	struct ranked *r = xcalloc(PART_MEMBERS_MAX + 1, sizeof *r);
	size_t n = 0, ignored = 0;
	r[n++] = (struct ranked){.name = self, .eligible = !self_social_only, .self = true};
	for (size_t i = 0; i < npeers; i++) {
		const char *nm = peers[i].name;
		if (!nm || !nm[0] || strlen(nm) >= PART_NAME_MAX || strcmp(nm, self) == 0)
			continue;
		bool dup = false;
		for (size_t j = 1; j < n && !dup; j++)
			dup = strcmp(r[j].name, nm) == 0;
		if (dup)
			continue;
		if (n == PART_MEMBERS_MAX + 1) {
			ignored++;
			continue;
		}
		r[n++] = (struct ranked){.name = nm, .eligible = part_member_eligible(&peers[i])};
	}
	out->n_agents = n;

	if (!request || !request[0]) {
		decision_set(why, VERDICT_INFO, "no_request",
		             "no host action request in the conversation: no owner to pick, every "
		             "agent is an actor (§4 defaults, not told it owns anything)");
		out->is_owner = false;
		out->owner[0] = '\0';
		goto out;
	}
	if (n == 1) {
		decision_set(why, VERDICT_INFO, self_social_only ? "no_eligible_owner" : "alone",
		             self_social_only
		                     ? "alone in the room and social-only: nobody can take "
		                       "the GitHub work"
		                     : "alone in the room: the request is mine (§4 defaults)");
		if (self_social_only) {
			out->is_owner = false;
			out->owner[0] = '\0';
		}
		goto out;
	}

	char *key = part_utf16_prefix(request, strlen(request), PART_OWNER_KEY_UNITS);
	for (size_t i = 0; i < n; i++)
		digest_of(r[i].name, key, r[i].digest);
	free(key);
	qsort(r, n, sizeof r[0], cmp_ranked);
	out->computed = true;

	size_t owner = n;
	for (size_t i = 0; i < n; i++) {
		if (r[i].eligible) {
			out->n_eligible++;
			if (owner == n)
				owner = i;
		}
		if (r[i].self) {
			out->rank = i;
			memcpy(out->self_digest, r[i].digest, 16);
			out->self_digest[16] = '\0';
		}
	}
	/* Roles from the same ranking (§16.14): actor = owner (or rank 0 when
	 * nobody is eligible), reviewer = the first other agent, observers. */
	size_t actor = owner < n ? owner : 0;
	size_t reviewer = actor == 0 ? 1 : 0;
	if (mode == PART_MODE_ACTION) {
		if (out->rank == actor)
			out->role = PART_ROLE_ACTOR;
		else if (out->rank == reviewer)
			out->role = PART_ROLE_REVIEWER;
		else
			out->role = PART_ROLE_OBSERVER;
	}
	char extra[64] = "";
	if (ignored)
		snprintf(extra, sizeof extra, "; %zu more peers ignored (bound %d)", ignored,
		         PART_MEMBERS_MAX);
	if (owner == n) {
		out->owner[0] = '\0';
		out->is_owner = false;
		decision_set(why, VERDICT_INFO, "no_eligible_owner",
		             "none of the %zu agents can do GitHub work (social-only or no \"%s\" "
		             "capability): nobody owns the request%s",
		             n, PART_REQUIRED_CAP, extra);
		goto out;
	}
	snprintf(out->owner, sizeof out->owner, "%s", r[owner].name);
	out->is_owner = r[owner].self;
	if (out->is_owner)
		decision_set(
		        why, VERDICT_INFO, "action_owner",
		        "I own the request: lowest SHA-256(name+request) among %zu eligible of "
		        "%zu agents (mine %s…)%s",
		        out->n_eligible, n, out->self_digest, extra);
	else
		decision_set(
		        why, VERDICT_INFO, "not_action_owner",
		        "%s owns the request: lowest SHA-256(name+request) among %zu eligible of "
		        "%zu agents; mine ranks %zu%s%s",
		        out->owner, out->n_eligible, n, out->rank + 1,
		        self_social_only ? " (I am social-only)" : "", extra);
out:
	free(r);
}

enum part_role part_role_reference(const char *self, const char *request)
{
	char *key = part_utf16_prefix(request, strlen(request), PART_ROLE_KEY_UNITS);
	char d[SHA256_HEX_LEN + 1];
	digest_of(self, key, d);
	free(key);
	char first8[9];
	memcpy(first8, d, 8);
	first8[8] = '\0';
	uint32_t v = (uint32_t)strtoul(first8, NULL, 16);
	return (enum part_role)(v % 3);
}

unsigned part_role_budget(enum part_role role, enum part_mode mode)
{
	unsigned b = role == PART_ROLE_ACTOR ? 3 : role == PART_ROLE_REVIEWER ? 2 : 1;
	return mode == PART_MODE_DISCUSSION ? b * 2 : b;
}

unsigned part_observer_threshold(enum part_mode mode)
{
	return mode == PART_MODE_DISCUSSION ? 5 : 3;
}

unsigned part_saturation_threshold(size_t n_agents, enum part_mode mode, unsigned *warn)
{
	unsigned t = 4 + (unsigned)n_agents + (mode == PART_MODE_DISCUSSION ? 4 : 0);
	if (warn)
		*warn = (t + 1) / 2;
	return t;
}

enum part_escalation part_escalation_level(unsigned cycles)
{
	return cycles == 0 ? PART_ESC_NONE : cycles == 1 ? PART_ESC_INFO : PART_ESC_CRITICAL;
}

int64_t part_jittered_interval_ms(const char *name, const char *job, int64_t base_ms,
                                  unsigned spread_pct)
{
	uint32_t h = 5381;
	const char *parts[3] = {name ? name : "", ":", job ? job : ""};
	for (int p = 0; p < 3; p++) {
		size_t len = strlen(parts[p]);
		for (size_t i = 0; i < len;) {
			unsigned int cp;
			int n = utf8_decode(parts[p] + i, len - i, &cp);
			if (n < 0) {
				cp = 0xFFFD;
				n = 1;
			}
			if (cp >= 0x10000) { /* two UTF-16 units, as JS sees them */
				h = h * 33u + (0xD800u + ((cp - 0x10000u) >> 10));
				h = h * 33u + (0xDC00u + ((cp - 0x10000u) & 0x3FFu));
			} else {
				h = h * 33u + cp;
			}
			i += (size_t)n;
		}
	}
	int32_t sh = (int32_t)h;
	int64_t a = sh < 0 ? -(int64_t)sh : (int64_t)sh;
	int64_t k = (a % 2001) - 1000; /* n = k / 1000 */
	/* round(base * pct/100 * k/1000) with JS Math.round (half up), exactly */
	int64_t num = base_ms * (int64_t)spread_pct * k, den = 100000;
	int64_t a2 = 2 * num + den, b2 = 2 * den; /* floor((2num + den) / 2den) */
	int64_t q = a2 >= 0 ? a2 / b2 : -((-a2 + b2 - 1) / b2);
	return base_ms + q;
}

const char *part_mode_name(enum part_mode m)
{
	return m == PART_MODE_ACTION ? "action" : "discussion";
}

const char *part_role_name(enum part_role r)
{
	return r == PART_ROLE_ACTOR ? "actor" : r == PART_ROLE_REVIEWER ? "reviewer" : "observer";
}

const char *part_escalation_name(enum part_escalation e)
{
	return e == PART_ESC_NONE ? "none" : e == PART_ESC_INFO ? "info" : "critical";
}

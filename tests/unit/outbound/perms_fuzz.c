/* Fuzz target: send-permission keys and patterns on arbitrary bytes. Never a
 * crash; and two properties that must hold for every input:
 *   - canonical spelling is a fixed point: canonical(canonical(x)) == canonical(x);
 *   - a valid target is allowed by itself as the only allowlist pattern, and
 *     denied by itself as the only denylist pattern. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "modules/outbound/perms.h"

static void fixed_point(const char *s, bool pattern)
{
	char a[PERMS_KEY_MAX], b[PERMS_KEY_MAX];
	if (perms_canonical(s, pattern, a, sizeof a, NULL) < 0)
		return;
	if (perms_canonical(a, pattern, b, sizeof b, NULL) < 0 || strcmp(a, b) != 0)
		abort();
	if (pattern)
		return;
	struct perms *p = perms_new();
	struct perms_verdict v;
	perms_set_mode(p, PERMS_ALLOWLIST);
	if (perms_add(p, PERMS_LIST_ALLOW, s, NULL) != 1)
		abort();
	perms_check(p, s, &v);
	if (!v.allowed)
		abort();
	perms_set_mode(p, PERMS_DENYLIST);
	if (perms_add(p, PERMS_LIST_DENY, a, NULL) != 1)
		abort();
	perms_check(p, s, &v);
	if (v.allowed || strcmp(v.pattern, a) != 0)
		abort();
	perms_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int quiet;
	if (!quiet) {
		log_set_level(LOG_LEVEL_OFF);
		quiet = 1;
	}
	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = '\0';
	fixed_point(s, false);
	fixed_point(s, true);
	/* arbitrary input as a pattern and as a target against a fixed list */
	struct perms *p = perms_new();
	perms_set_mode(p, PERMS_ALLOWLIST);
	perms_add(p, PERMS_LIST_ALLOW, "github:acme:widgets:*", NULL);
	perms_add(p, PERMS_LIST_ALLOW, "*:pr:*", NULL);
	perms_add(p, PERMS_LIST_ALLOW, s, NULL);
	struct perms_verdict v;
	perms_check(p, s, &v);
	char *txt = perms_denial_text(p, "fuzz", s, &v);
	free(txt);
	perms_check(p, "github:acme:widgetz:issue:1", &v);
	perms_free(p);
	free(s);
	return 0;
}

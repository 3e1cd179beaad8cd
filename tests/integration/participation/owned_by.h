/*
 * owned_by — a host request a given agent owns in a room of two (the §4
 * SHA-256 ranking, part_ownership_compute): "<stem> <n>" for the first n
 * that makes self the owner against other. For end-to-end tests that need
 * one particular agent to take the request. Header only: link
 * ga_participation.
 */
#ifndef GA_TESTS_INTEGRATION_PARTICIPATION_OWNED_BY_H
#define GA_TESTS_INTEGRATION_PARTICIPATION_OWNED_BY_H

#include <stdio.h>

#include "modules/participation/participation.h"

static inline void owned_by(const char *self, const char *other, const char *stem, char *out,
                            size_t cap)
{
	struct part_member mem[] = {{.name = self}, {.name = other}};
	for (int v = 0; v < 50; v++) {
		snprintf(out, cap, "%s %d", stem, v);
		struct part_ownership o;
		struct decision why;
		part_ownership_compute(self, false, mem, 2, out, PART_MODE_ACTION, &o, &why);
		if (o.is_owner)
			return;
	}
	fail_msg("no '%s <n>' owned by %s", stem, self);
}

#endif

/* Fuzz target: SELF.md parsing, .env parsing and the SOUL essence on
 * arbitrary bytes. Never a crash, never an out-of-bounds access. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/env.h"
#include "common/log.h"
#include "modules/identity/self.h"
#include "modules/identity/soul.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int quiet;
	if (!quiet) {
		log_set_level(LOG_LEVEL_OFF);
		quiet = 1;
	}
	struct self_doc d;
	struct ga_err err;
	self_parse((const char *)data, size, &d, &err);
	self_doc_free(&d);

	struct env_file f;
	if (env_parse((const char *)data, size, &f, &err) == 0)
		env_file_free(&f);

	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = '\0';
	char buf[64];
	soul_essence(s, 3, buf, sizeof buf);
	free(s);
	return 0;
}

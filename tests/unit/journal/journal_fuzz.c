/* Fuzz target: journal replay over arbitrary file contents. The input is
 * written as <memory>/journal.jsonl and opened. Never a crash or a leak, and
 * for every input:
 *   - the index stays within JOURNAL_MAX_KEYS and journal_pending agrees with
 *     itself;
 *   - a new record appended after any content (torn tail included) is read
 *     back on the next open: a journal that was accepted never loses an
 *     intent written afterwards;
 *   - compaction keeps every pending intent (read back after a reopen). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fsx.h"
#include "common/log.h"
#include "modules/journal/journal.h"

static char *dir;

static void count_pending(void *ud, const char *key, const char *platform, const char *target,
                          const cJSON *payload, int64_t intent_ms)
{
	(void)platform;
	(void)target;
	(void)payload;
	(void)intent_ms;
	if (!key || !*key)
		abort();
	(*(size_t *)ud)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir) {
		log_init(LOG_LEVEL_OFF, 0, NULL);
		char tmpl[] = "/tmp/ga-journal-fuzz-XXXXXX";
		dir = mkdtemp(tmpl) ? strdup(tmpl) : NULL;
		if (!dir)
			abort();
	}
	char *path = fsx_join(dir, JOURNAL_FILE);
	if (fsx_write_atomic(path, data, size, NULL) < 0)
		abort();
	struct ga_err e;
	struct journal *j = journal_open(dir, &e);
	if (!j)
		abort(); /* contents never make a readable file unopenable */
	size_t n = 0;
	size_t pending = journal_pending(j, count_pending, &n);
	if (n != pending || journal_count(j) > JOURNAL_MAX_KEYS || pending > journal_count(j))
		abort();
	/* a probe key; mutated input could hold it too, so it is used only
	 * when it is not there yet */
	const char *key = "fuzz~probe~key~0123456789";
	if (journal_state_of(j, key) == JOURNAL_NONE) {
		if (journal_intent(j, key, "space", "space:r", NULL, 1, &e) == 0) {
			journal_close(j);
			j = journal_open(dir, &e);
			if (!j || journal_state_of(j, key) != JOURNAL_INTENT)
				abort();
			size_t before = journal_pending(j, NULL, NULL);
			size_t keys = journal_count(j);
			if (journal_compact(j, &e) == 0) {
				journal_close(j);
				j = journal_open(dir, &e);
				if (!j || journal_pending(j, NULL, NULL) != before ||
				    journal_count(j) > keys ||
				    journal_state_of(j, key) != JOURNAL_INTENT)
					abort();
			}
		}
	}
	journal_close(j);
	unlink(path);
	free(path);
	return 0;
}

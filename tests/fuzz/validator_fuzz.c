/*
 * libFuzzer target for the validator: arbitrary bytes in, never a crash or
 * an out-of-bounds access. The input is split at the first two NUL bytes
 * into [flags][history][candidate]: byte 0 of flags picks mode, platform,
 * role, ownership and commitments; the history is split on '\n' into window
 * messages (author "peer", agent); the candidate runs through every check
 * and the echo detector, and through the judge resume path.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "modules/validator/validator.h"

static void judge_ask(void *ud, const char *candidate, const char *const *window, size_t n,
                      void (*done)(void *done_ud, int verdict, const char *reason), void *done_ud)
{
	/* touch every string the judge is given */
	size_t total = strlen(candidate);
	for (size_t i = 0; i < n; i++)
		total += strlen(window[i]);
	done(done_ud, (int)(total % 3) - 1, "fuzz");
}

struct answer {
	int verdict;
};

static void on_done(void *ud, int verdict, const char *reason)
{
	((struct answer *)ud)->verdict = verdict;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Bound the work per input: the validator itself caps at 1 MiB. */
	if (size > 256 * 1024)
		return 0;
	char *buf = malloc(size + 1);
	memcpy(buf, data, size);
	buf[size] = '\0';
	unsigned flags = size ? (unsigned char)buf[0] : 0;
	char *history = memchr(buf, '\0', size) ? buf + strlen(buf) + 1 : buf + size;
	if (history > buf + size)
		history = buf + size;
	char *candidate = history;
	if (history < buf + size) {
		candidate = history + strlen(history);
		if (candidate < buf + size)
			candidate++;
	}

	struct echo_window *w = echo_window_new(50);
	for (char *p = history; p < candidate && *p;) {
		char *nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		echo_window_push(w, (flags & 64) ? "peer" : NULL, !(flags & 128) || *p != 'h', p);
		if (!nl)
			break;
		p = nl + 1;
	}

	struct validator_judge judge = {judge_ask, NULL};
	struct validator_context ctx = {
	        .platform = (enum validator_platform)(flags % 3),
	        .mode = (flags & 4) ? VALIDATOR_MODE_ACTION : VALIDATOR_MODE_DISCUSSION,
	        .role = (enum validator_role)((flags >> 3) % 3),
	        .is_action_owner = flags & 32,
	        .pending_request = (flags & 16) ? "Create an issue" : NULL,
	        .detected_repo = (flags & 8) ? "acme/www" : NULL,
	        .window = w,
	        .connected_agents = (flags >> 4) % 5,
	        .agent_msgs_since_host = (flags >> 2) % 9,
	        .own_msgs = flags % 7,
	        .n_commitments = (flags & 2) ? 1 : 0,
	        .judge = (flags & 1) ? &judge : NULL,
	};
	struct validator_decision d;
	if (validator_validate(candidate, &ctx, &d) == VALIDATOR_REFER) {
		struct answer a = {0};
		validator_refer(&ctx, candidate, on_done, &a);
		validator_resume(candidate, &ctx, a.verdict, "fuzz", &d);
	}
	if (d.verdict == VALIDATOR_TRIM && (!d.text || !d.text[0]))
		abort(); /* a trim always carries text */
	validator_decision_clear(&d);

	/* The whole input as one candidate against no window, too. */
	struct validator_context bare = {.mode = (flags & 4) ? VALIDATOR_MODE_ACTION
	                                                     : VALIDATOR_MODE_DISCUSSION};
	validator_validate(buf, &bare, &d);
	validator_decision_clear(&d);

	echo_window_free(w);
	free(buf);
	return 0;
}

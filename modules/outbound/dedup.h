/*
 * dedup — the same text to the same target within OUTBOUND_DEDUP_WINDOW_MS
 * among the last OUTBOUND_DEDUP_MAX sends is dropped.
 *
 * dedup_admit() checks AND records in one call, so two sends racing with the
 * same text cannot both pass: the first is recorded before the second is
 * looked at. A send that then fails (the platform said no, the queue was
 * full, shutdown) is forgotten with dedup_forget() so a retry can go.
 *
 * "The same text": the text is NFKC-normalised and case-folded, runs of
 * whitespace become one space and leading/trailing whitespace is dropped, so
 * "Hello  world" and "hello world\n" are one text. Text that is not valid
 * UTF-8 is compared byte for byte (whitespace still collapsed). Only a
 * SHA-256 of (target, normalised text) is kept. "Within" is strict: a send
 * exactly OUTBOUND_DEDUP_WINDOW_MS after the first one is admitted.
 *
 * Bounds: a ring of OUTBOUND_DEDUP_MAX entries; the oldest is evicted by
 * the next admitted send. Pure (time passed in); in memory only.
 */
#ifndef GA_MODULES_OUTBOUND_DEDUP_H
#define GA_MODULES_OUTBOUND_DEDUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OUTBOUND_DEDUP_WINDOW_MS (5 * 60 * 1000)
#define OUTBOUND_DEDUP_MAX       50

struct dedup_entry {
	unsigned char digest[32];
	int64_t time_ms;
	bool used;
};

struct dedup {
	struct dedup_entry ring[OUTBOUND_DEDUP_MAX];
	size_t next; /* where the next admitted send is written */
};

void dedup_init(struct dedup *d);
/* 1: admitted and recorded; 0: a duplicate (then *age_ms, if non-NULL,
 * receives how long ago the earlier one was sent). */
int dedup_admit(struct dedup *d, const char *target, const char *text, size_t len, int64_t now_ms,
                int64_t *age_ms);
/* Forgets the most recent record of (target, text), if any. */
void dedup_forget(struct dedup *d, const char *target, const char *text, size_t len);

#endif

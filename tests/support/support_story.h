/*
 * support_story — one message's story as `general-agent why ID --json`
 * tells it, checked to be one walk: its decisions in stage order (event,
 * gate, compose, validator, outbound, record: a stage never comes after a
 * later one), and exactly one record decision, the last, with the rule the
 * test expects ("answered", "not_answered").
 *
 * story_id_of finds the id of the message whose event decision holds text
 * (the first such event in memory/decisions.jsonl).
 */
#ifndef GA_TESTS_SUPPORT_SUPPORT_STORY_H
#define GA_TESTS_SUPPORT_SUPPORT_STORY_H

#include <stdbool.h>
#include <stddef.h>

/* 0 with id filled, -1 when no event holds text. */
int story_id_of(const char *home, const char *text, char *id, size_t cap);

/* Runs `general-agent why ID --json` in home and checks the story. true
 * when it is one walk ending with record_rule; otherwise false and why
 * (cap bytes) says what was wrong, with the story. */
bool story_is_one_walk(const char *home, const char *id, const char *record_rule, char *why,
                       size_t cap);

#endif

/*
 * doctor room — is the room the daemon would join there? For `general-agent
 * doctor`: the room is found the way the daemon finds it (SPACE_URL, else an
 * mDNS browse, else ws://localhost:7777: adapters/space/discover.h), then
 * asked GET /healthz over plain HTTP on the same host and port.
 *
 * Blocking, on a private loop, bounded by timeout_ms (discovery, connect and
 * answer each). Not for the daemon's loop.
 */
#ifndef GA_MODULES_DOCTOR_ROOM_H
#define GA_MODULES_DOCTOR_ROOM_H

#include <stddef.h>

#include "common/config.h"

/* 1: the room answered (buf: "ws://…: the room 'name' answers (via
 * SPACE_URL)"); 0: it did not (buf: what failed, naming the variable to
 * fix). */
int doctor_room_probe(const struct ga_config *cfg, int timeout_ms, char *buf, size_t cap);

#endif

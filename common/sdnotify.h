/*
 * sdnotify — telling systemd about the service's state without libsystemd.
 *
 * systemd passes a Type=notify service the path of a unix datagram socket in
 * $NOTIFY_SOCKET (a filesystem path, or "@name" for the abstract namespace);
 * the service sends newline-separated assignments such as "READY=1" or
 * "STOPPING=1" to it (sd_notify(3)). Outside systemd the variable is unset
 * and every call is a no-op, so callers need no condition.
 *
 * Call sdnotify_ready() once the service does its job (the daemon's loop is
 * set up and its jobs scheduled; the room server listens), sdnotify_stopping()
 * when a graceful shutdown begins. One datagram per call, non-blocking; no
 * state is kept. Bounds: the message at most SDNOTIFY_MAX_BYTES.
 */
#ifndef GA_COMMON_SDNOTIFY_H
#define GA_COMMON_SDNOTIFY_H

#define SDNOTIFY_MAX_BYTES 1024

/* Sends state (e.g. "READY=1\nSTATUS=joined the room") to $NOTIFY_SOCKET.
 * Returns 1 when sent, 0 when NOTIFY_SOCKET is unset (not under systemd),
 * -1 when it is set but the message could not be sent (a bad path, a
 * message over SDNOTIFY_MAX_BYTES, the socket refused it). */
int sdnotify(const char *state);

/* sdnotify("READY=1"). */
int sdnotify_ready(void);

/* sdnotify("STOPPING=1"). */
int sdnotify_stopping(void);

#endif

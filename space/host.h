/*
 * space/host — the host's input: lines read from stdin on the libuv loop.
 *
 * Works with a terminal (canonical mode: the terminal edits the line), a
 * pipe or socket, and a regular file (space-protocol.md §9 item 22).
 * Each complete line (without its
 * "\n" or "\r\n") is passed to the callback. A line longer than
 * SPACE_HOST_LINE_MAX bytes is cut there and the rest of it discarded.
 * End of input only stops reading: a test that closes the pipe must not
 * shut the room down. A last line without "\n" is delivered at EOF.
 */
#ifndef GA_SPACE_HOST_H
#define GA_SPACE_HOST_H

#include <stddef.h>
#include <uv.h>

#define SPACE_HOST_LINE_MAX ((size_t)1024 * 1024)

typedef void (*space_host_line_cb)(void *ud, const char *line, size_t len);

struct space_host;

/* Starts reading fd. NULL (with a warning logged) when fd cannot be read
 * from the loop; the room then simply has no host input. */
struct space_host *space_host_start(uv_loop_t *loop, int fd, space_host_line_cb cb, void *ud);

/* Stops reading and releases everything once libuv has closed the handle
 * (the loop must run afterwards). NULL accepted. */
void space_host_stop(struct space_host *h);

#endif

/*
 * space-floor — what one delivery to one member costs on this machine, with
 * no room in the way: the floor under the room's latency at N members.
 *
 * N loopback TCP connection pairs (the server's end and the member's end,
 * both non-blocking). Each pass writes the same batch (B frames of S
 * bytes, one writev per connection, as the server's flush does) to every
 * connection, then reads every member's end until it is empty, as the load
 * generator does. Printed per pass, medians over R passes:
 *   - a trivial system call (getppid), the entry and exit alone;
 *   - one writev per connection, the whole pass and per connection;
 *   - the same batch through io_uring (one submission of up to 4096
 *     sendmsg per system call), when built with liburing;
 *   - reading every member's end.
 * One pass over N members bounds how often a member can be written:
 * a chat waits for the pass under way, then for its member's place in the
 * next, so p50 ≈ one pass and p99 ≈ two, before the reader's share of the
 * same cores.
 *
 *   space-floor [-n MEMBERS] [-r PASSES] [-b FRAMES] [-s BYTES]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#ifdef GA_HAVE_LIBURING
#include <liburing.h>
#endif

#define MAX_FRAMES 64
#define MAX_PASSES 101

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* n connected pairs over 127.0.0.1: srv[i] is the writer, mem[i] the reader. */
static int connect_pairs(int n, int *srv, int *mem)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 4096) != 0 ||
	    getsockname(l, (struct sockaddr *)&a, &al) != 0) {
		perror("space-floor: listen");
		return -1;
	}
	int one = 1;
	for (int i = 0; i < n; i++) {
		mem[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (mem[i] < 0 || connect(mem[i], (struct sockaddr *)&a, sizeof a) != 0 ||
		    (srv[i] = accept(l, NULL, NULL)) < 0) {
			fprintf(stderr, "space-floor: connection %d: %s\n", i, strerror(errno));
			return -1;
		}
		setsockopt(srv[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		if (set_nonblock(srv[i]) != 0 || set_nonblock(mem[i]) != 0)
			return -1;
	}
	close(l);
	return 0;
}

/* Reads every member's end until empty; returns the bytes read. */
static size_t drain(int n, const int *mem)
{
	static char rb[1 << 16];
	size_t got = 0;
	for (int i = 0; i < n; i++) {
		ssize_t r;
		while ((r = read(mem[i], rb, sizeof rb)) > 0)
			got += (size_t)r;
	}
	return got;
}

static double pass_writev(int n, const int *srv, const struct iovec *iov, int frames, size_t total)
{
	double t0 = now_s();
	for (int i = 0; i < n; i++) {
		ssize_t w = writev(srv[i], iov, frames);
		if (w != (ssize_t)total)
			fprintf(stderr, "space-floor: short writev on %d: %zd\n", i, w);
	}
	return now_s() - t0;
}

#ifdef GA_HAVE_LIBURING
static double pass_uring(struct io_uring *ring, int n, const int *srv, struct iovec *iov,
                         int frames, size_t total, struct msghdr *mh)
{
	double t0 = now_s();
	for (int i = 0; i < n;) {
		int k = 0;
		struct io_uring_sqe *q;
		while (i < n && (q = io_uring_get_sqe(ring))) {
			mh[i] = (struct msghdr){.msg_iov = iov, .msg_iovlen = (size_t)frames};
			io_uring_prep_sendmsg(q, srv[i], &mh[i], MSG_DONTWAIT);
			i++;
			k++;
		}
		io_uring_submit_and_wait(ring, (unsigned)k);
		struct io_uring_cqe *c;
		unsigned head, seen = 0;
		io_uring_for_each_cqe(ring, head, c)
		{
			if (c->res != (int)total)
				fprintf(stderr, "space-floor: io_uring sendmsg: %d\n", c->res);
			seen++;
		}
		io_uring_cq_advance(ring, seen);
	}
	return now_s() - t0;
}
#endif

static void report(const char *what, double *v, int passes, int n)
{
	double m = median(v, passes);
	printf("  %-34s %8.1f ms per pass  %6.2f us per member\n", what, m * 1e3, m * 1e6 / n);
}

int main(int argc, char **argv)
{
	int n = 5000, passes = 11, frames = 20, size = 130, opt;
	while ((opt = getopt(argc, argv, "n:r:b:s:")) != -1) {
		int v = atoi(optarg);
		if (opt == 'n' && v >= 1 && v <= 60000)
			n = v;
		else if (opt == 'r' && v >= 1 && v <= MAX_PASSES)
			passes = v;
		else if (opt == 'b' && v >= 1 && v <= MAX_FRAMES)
			frames = v;
		else if (opt == 's' && v >= 1 && v <= 4096)
			size = v;
		else {
			fprintf(stderr,
			        "usage: space-floor [-n MEMBERS 1-60000] [-r PASSES 1-%d] "
			        "[-b FRAMES 1-%d] [-s BYTES 1-4096]\n",
			        MAX_PASSES, MAX_FRAMES);
			return 64;
		}
	}
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	int *srv = calloc((size_t)n, sizeof *srv), *mem = calloc((size_t)n, sizeof *mem);
	char *payload = malloc((size_t)size * (size_t)frames);
	struct iovec iov[MAX_FRAMES];
	if (!srv || !mem || !payload)
		return 1;
	memset(payload, 'x', (size_t)size * (size_t)frames);
	for (int f = 0; f < frames; f++)
		iov[f] = (struct iovec){payload + (size_t)f * (size_t)size, (size_t)size};
	size_t total = (size_t)size * (size_t)frames;
	if (connect_pairs(n, srv, mem) != 0) {
		fprintf(stderr, "space-floor: %d connections need %d descriptors (ulimit -n)\n", n,
		        2 * n + 16);
		return 2;
	}

	double sys[MAX_PASSES], wv[MAX_PASSES], rd[MAX_PASSES];
	for (int p = 0; p < passes; p++) {
		double t0 = now_s();
		for (int i = 0; i < 10000; i++)
			syscall(SYS_getppid);
		sys[p] = (now_s() - t0) / 10000 * n; /* scaled to one call per member */
		wv[p] = pass_writev(n, srv, iov, frames, total);
		t0 = now_s();
		drain(n, mem);
		rd[p] = now_s() - t0;
	}
	printf("space-floor: %d members, %d frames of %d bytes per member per pass, medians of %d "
	       "passes\n",
	       n, frames, size, passes);
	report("getppid() (one per member)", sys, passes, n);
	report("writev, one per member", wv, passes, n);
	report("read until empty, every member", rd, passes, n);
#ifdef GA_HAVE_LIBURING
	struct io_uring ring;
	struct msghdr *mh = calloc((size_t)n, sizeof *mh);
	double ur[MAX_PASSES];
	if (mh && io_uring_queue_init(4096, &ring, 0) == 0) {
		for (int p = 0; p < passes; p++) {
			ur[p] = pass_uring(&ring, n, srv, iov, frames, total, mh);
			drain(n, mem);
		}
		report("io_uring sendmsg, batched", ur, passes, n);
		io_uring_queue_exit(&ring);
	} else {
		printf("  io_uring: not available here\n");
	}
	free(mh);
#else
	printf("  io_uring: not built (liburing-dev absent)\n");
#endif
	for (int i = 0; i < n; i++) {
		close(srv[i]);
		close(mem[i]);
	}
	free(srv);
	free(mem);
	free(payload);
	return 0;
}

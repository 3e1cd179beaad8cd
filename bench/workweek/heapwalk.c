/* heapwalk: an LD_PRELOAD tool for bench/workweek (not linked into the
 * product). On SIGUSR2 the process's loop thread, at its next epoll wait,
 * calls malloc_trim(0), then writes to $HEAPWALK_DIR/heap.PID.N.txt:
 *
 *   # mallinfo2: arena, uordblks (bytes in use), fordblks, hblkhd, and the
 *   #   resident kB of [heap] from /proc/self/smaps
 *   SIZE<TAB>HEX of the first 16 bytes<TAB>the first 48 bytes, printable
 *
 * one line per chunk in use in the main arena (glibc: the brk heap, walked
 * chunk by chunk from its start to the top chunk; chunks held in tcache or
 * fastbins count as in use). It runs in the thread that waits in
 * epoll_wait/epoll_pwait first (libuv's loop), between callbacks, so the
 * heap is not being changed while it is walked; the wait's timeout is capped
 * at one second so a signal taken by another thread is still seen.
 * heapdiff.py compares two such files. Build:
 *
 *   cc -O2 -shared -fPIC -o heapwalk.so bench/workweek/heapwalk.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

static volatile sig_atomic_t hw_want;
static pthread_t hw_loop;
static int hw_have_loop;
static int hw_seq;

static void hw_on_signal(int sig)
{
	(void)sig;
	hw_want = 1;
}

__attribute__((constructor)) static void hw_init(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = hw_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, NULL);
}

static int hw_heap_bounds(uintptr_t *lo, uintptr_t *hi, long *rss_kb)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return -1;
	char line[512];
	int in_heap = 0, found = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long a, b;
		if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, ' ')) {
			in_heap = strstr(line, "[heap]") != NULL;
			if (in_heap) {
				*lo = a;
				*hi = b;
				found = 1;
			}
			continue;
		}
		long kb;
		if (in_heap && sscanf(line, "Rss: %ld kB", &kb) == 1)
			*rss_kb = kb;
	}
	fclose(f);
	return found ? 0 : -1;
}

static void hw_dump(void)
{
	malloc_trim(0);
	struct mallinfo2 mi = mallinfo2();
	uintptr_t lo = 0, hi = 0;
	long rss = -1;
	if (hw_heap_bounds(&lo, &hi, &rss) != 0)
		return;
	const char *dir = getenv("HEAPWALK_DIR");
	char path[512], tmp[520];
	snprintf(path, sizeof path, "%s/heap.%d.%d.txt", dir ? dir : "/tmp", (int)getpid(),
	         hw_seq++);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *o = fopen(tmp, "w");
	if (!o)
		return;
	setvbuf(o, NULL, _IOFBF, 1 << 16);
	fprintf(o, "# arena %zu uordblks %zu fordblks %zu hblkhd %zu heap_rss_kb %ld heap_kb %lu\n",
	        mi.arena, mi.uordblks, mi.fordblks, mi.hblkhd, rss,
	        (unsigned long)((hi - lo) / 1024));
	uintptr_t top = (uintptr_t)sbrk(0);
	uintptr_t p = (lo + 15) & ~(uintptr_t)15;
	while (p + 16 <= top) {
		size_t sz = *(size_t *)(p + 8) & ~(size_t)7;
		if (sz < 16 || p + sz > top)
			break;
		uintptr_t next = p + sz;
		if (next + 16 > top)
			break; /* p is the top chunk */
		int inuse = (int)(*(size_t *)(next + 8) & 1);
		if (inuse) {
			const unsigned char *m = (const unsigned char *)(p + 16);
			size_t n = sz - 16 < 48 ? sz - 16 : 48;
			fprintf(o, "%zu\t", sz);
			for (size_t i = 0; i < 16 && i < sz - 16; i++)
				fprintf(o, "%02x", m[i]);
			fputc('\t', o);
			for (size_t i = 0; i < n; i++)
				fputc(m[i] >= 32 && m[i] < 127 ? m[i] : '.', o);
			fputc('\n', o);
		}
		p = next;
	}
	fclose(o);
	rename(tmp, path);
}

static void hw_check(int *timeout)
{
	if (!hw_have_loop) {
		hw_loop = pthread_self();
		hw_have_loop = 1;
	}
	if (!pthread_equal(hw_loop, pthread_self()))
		return;
	if (hw_want) {
		hw_want = 0;
		hw_dump();
	}
	if (*timeout < 0 || *timeout > 1000)
		*timeout = 1000;
}

int epoll_wait(int ep, struct epoll_event *ev, int max, int timeout)
{
	static int (*real)(int, struct epoll_event *, int, int);
	if (!real)
		real = (int (*)(int, struct epoll_event *, int, int))dlsym(RTLD_NEXT, "epoll_wait");
	hw_check(&timeout);
	return real(ep, ev, max, timeout);
}

int epoll_pwait(int ep, struct epoll_event *ev, int max, int timeout, const sigset_t *ss)
{
	static int (*real)(int, struct epoll_event *, int, int, const sigset_t *);
	if (!real)
		real = (int (*)(int, struct epoll_event *, int, int, const sigset_t *))dlsym(
		        RTLD_NEXT, "epoll_pwait");
	hw_check(&timeout);
	return real(ep, ev, max, timeout, ss);
}

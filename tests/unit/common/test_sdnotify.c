/*
 * sdnotify: the datagram reaches a socket named by NOTIFY_SOCKET (a path and
 * the abstract namespace), nothing is sent without it, and bad input is
 * refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/sdnotify.h"

/* A datagram socket bound to name ("@x" = abstract). */
static int listen_at(const char *name)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	assert_true(fd >= 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t n = strlen(name);
	memcpy(sa.sun_path, name, n);
	if (name[0] == '@')
		sa.sun_path[0] = '\0';
	socklen_t len =
	        (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (name[0] == '@' ? 0 : 1));
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, len), 0);
	return fd;
}

static void expect_msg(int fd, const char *want)
{
	char buf[2048];
	ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
	assert_true(n >= 0);
	buf[n] = '\0';
	assert_string_equal(buf, want);
}

static void test_path_socket(void **state)
{
	(void)state;
	char dir[] = "/tmp/ga-sdnotify-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof path, "%s/notify", dir);
	int fd = listen_at(path);
	setenv("NOTIFY_SOCKET", path, 1);
	assert_int_equal(sdnotify_ready(), 1);
	expect_msg(fd, "READY=1");
	assert_int_equal(sdnotify("STATUS=joined\nREADY=1"), 1);
	expect_msg(fd, "STATUS=joined\nREADY=1");
	assert_int_equal(sdnotify_stopping(), 1);
	expect_msg(fd, "STOPPING=1");
	close(fd);
	unlink(path);
	/* the socket is gone: an error, not a crash or a hang */
	assert_int_equal(sdnotify_ready(), -1);
	rmdir(dir);
	unsetenv("NOTIFY_SOCKET");
}

static void test_abstract_socket(void **state)
{
	(void)state;
	char name[64];
	snprintf(name, sizeof name, "@ga-sdnotify-test-%ld", (long)getpid());
	int fd = listen_at(name);
	setenv("NOTIFY_SOCKET", name, 1);
	assert_int_equal(sdnotify_ready(), 1);
	expect_msg(fd, "READY=1");
	close(fd);
	unsetenv("NOTIFY_SOCKET");
}

static void test_unset_and_bad(void **state)
{
	(void)state;
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(sdnotify_ready(), 0);
	setenv("NOTIFY_SOCKET", "", 1);
	assert_int_equal(sdnotify_ready(), 0);
	setenv("NOTIFY_SOCKET", "relative/path", 1);
	assert_int_equal(sdnotify_ready(), -1);
	char longp[200];
	memset(longp, 'a', sizeof longp - 1);
	longp[0] = '/';
	longp[sizeof longp - 1] = '\0';
	setenv("NOTIFY_SOCKET", longp, 1);
	assert_int_equal(sdnotify_ready(), -1);
	setenv("NOTIFY_SOCKET", "/tmp/x", 1);
	assert_int_equal(sdnotify(""), -1);
	char *big = malloc(SDNOTIFY_MAX_BYTES + 2);
	memset(big, 'x', SDNOTIFY_MAX_BYTES + 1);
	big[SDNOTIFY_MAX_BYTES + 1] = '\0';
	assert_int_equal(sdnotify(big), -1);
	free(big);
	unsetenv("NOTIFY_SOCKET");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_path_socket),
	        cmocka_unit_test(test_abstract_socket),
	        cmocka_unit_test(test_unset_and_bad),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Unit tests for notify.c: datagrams to a socket the test owns, at a path
 * and in the abstract namespace; the watchdog interval and whose it is;
 * nothing at all without NOTIFY_SOCKET. Check forks each test, so
 * notify.c's state starts afresh in each.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit.h"

#include "notify.h"

/* A datagram socket bound to name ("@..." abstract), for the daemon side. */
static int
listener(const char *name)
{
	struct sockaddr_un	sun;
	socklen_t		len;
	int			fd;

	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	ck_assert_int_ne(fd, -1);
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	strncpy(sun.sun_path, name, sizeof sun.sun_path - 1);
	len = offsetof(struct sockaddr_un, sun_path) + strlen(name);
	if (name[0] == '@')
		sun.sun_path[0] = '\0';
	else
		len++;
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sun, len), 0);
	return (fd);
}

static void
expect_message(int fd, const char *want)
{
	char	buf[2048];
	ssize_t	n;

	n = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
	ck_assert_int_gt(n, 0);
	buf[n] = '\0';
	ck_assert_str_eq(buf, want);
}

START_TEST(test_path_socket_gets_each_message)
{
	char	path[64];
	int	fd;

	snprintf(path, sizeof path, "/tmp/mcpd-notify-%d.sock", (int)getpid());
	unlink(path);
	fd = listener(path);
	setenv("NOTIFY_SOCKET", path, 1);
	notify_init();
	ck_assert_int_eq(notify_enabled(), 1);
	/* Children must not inherit the right to speak for mcpd. */
	ck_assert_ptr_null(getenv("NOTIFY_SOCKET"));
	notify_send("READY=1\nSTATUS=%s", "listening");
	notify_send("STOPPING=1");
	expect_message(fd, "READY=1\nSTATUS=listening");
	expect_message(fd, "STOPPING=1");
	notify_close();
	close(fd);
	unlink(path);
}
END_TEST

START_TEST(test_abstract_socket)
{
	char	name[64];
	int	fd;

	snprintf(name, sizeof name, "@mcpd-notify-test-%d", (int)getpid());
	fd = listener(name);
	setenv("NOTIFY_SOCKET", name, 1);
	notify_init();
	notify_send("WATCHDOG=1");
	expect_message(fd, "WATCHDOG=1");
	notify_close();
	close(fd);
}
END_TEST

START_TEST(test_without_socket_nothing_happens)
{
	unsetenv("NOTIFY_SOCKET");
	notify_init();
	ck_assert_int_eq(notify_enabled(), 0);
	notify_send("READY=1");		/* no socket, no crash */
	setenv("NOTIFY_SOCKET", "relative/path", 1);
	notify_init();
	ck_assert_int_eq(notify_enabled(), 0);
}
END_TEST

START_TEST(test_watchdog_interval_is_ours_only)
{
	char	pid[32];

	snprintf(pid, sizeof pid, "%d", (int)getpid());
	setenv("WATCHDOG_USEC", "500000", 1);
	setenv("WATCHDOG_PID", pid, 1);
	notify_init();
	ck_assert_uint_eq(notify_watchdog_usec(), 500000);
	ck_assert_ptr_null(getenv("WATCHDOG_USEC"));
}
END_TEST

START_TEST(test_watchdog_of_another_process_is_ignored)
{
	setenv("WATCHDOG_USEC", "500000", 1);
	setenv("WATCHDOG_PID", "1", 1);
	notify_init();
	ck_assert_uint_eq(notify_watchdog_usec(), 0);
	setenv("WATCHDOG_USEC", "soon", 1);
	unsetenv("WATCHDOG_PID");
	notify_init();
	ck_assert_uint_eq(notify_watchdog_usec(), 0);
}
END_TEST

static Suite *
notify_suite(void)
{
	Suite	*s = suite_create("notify");
	TCase	*tc = tcase_create("notify");

	tcase_add_test(tc, test_path_socket_gets_each_message);
	tcase_add_test(tc, test_abstract_socket);
	tcase_add_test(tc, test_without_socket_nothing_happens);
	tcase_add_test(tc, test_watchdog_interval_is_ours_only);
	tcase_add_test(tc, test_watchdog_of_another_process_is_ignored);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(notify_suite)

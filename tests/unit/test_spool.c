/*
 * The spool (spool.c): lines written whole and in order by its thread;
 * a destination that fails every write (/dev/full: ENOSPC) counts each
 * line as failed; the queue's bound drops a line past it at once; a
 * reopen after the file was moved writes to a new one; a FIFO whose
 * reader left (EPIPE) counts too, and its lines go again once a reader
 * is back. The writer is a thread: a test waits for its counters, within
 * a generous deadline, never for a time.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "unit.h"

#include "clock.h"
#include "spool.h"

#define DEADLINE_MS	10000

static char	dir[] = "/tmp/mcpd-test-spool.XXXXXX";
static char	path[256];

static void
setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/audit.log", dir);
}

static void
teardown(void)
{
	char	cmd[300];

	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
	strlcpy(dir, "/tmp/mcpd-test-spool.XXXXXX", sizeof dir);
}

/* Waits until the writer has written, failed or dropped n lines. */
static struct spool_stats
settled(struct spool *sp, uint64_t n)
{
	struct spool_stats	st;
	struct timespec		ts = { 0, 1000000 };
	uint64_t		start = clock_now_ms();

	for (;;) {
		spool_stats(sp, &st);
		if (st.written + st.failed + st.dropped >= n && st.queued == 0)
			return (st);
		ck_assert_msg(clock_now_ms() - start < DEADLINE_MS,
		    "the writer settled %llu of %llu lines",
		    (unsigned long long)(st.written + st.failed + st.dropped),
		    (unsigned long long)n);
		nanosleep(&ts, NULL);
	}
}

static char *
slurp(const char *file)
{
	static char	buf[65536];
	ssize_t		n;
	int		fd;

	ck_assert_int_ge(fd = open(file, O_RDONLY), 0);
	ck_assert_int_ge(n = read(fd, buf, sizeof buf - 1), 0);
	buf[n] = '\0';
	close(fd);
	return (buf);
}

START_TEST(test_spool_lines_in_order)
{
	struct spool		*sp;
	struct spool_stats	 st;
	struct stat		 sb;
	char			*cause = NULL, line[32];
	mode_t			 mask = umask(0);
	int			 i;

	umask(mask);
	sp = spool_open(path, 1 << 20, &cause);
	ck_assert_ptr_nonnull(sp);
	for (i = 0; i < 100; i++) {
		snprintf(line, sizeof line, "{\"n\":%d}", i);
		ck_assert_int_eq(spool_put(sp, line, strlen(line)), 0);
	}
	st = settled(sp, 100);
	ck_assert_uint_eq(st.written, 100);
	ck_assert_uint_eq(st.failed + st.dropped, 0);
	spool_close(sp, 1000);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 0777, 0640 & ~mask);
	ck_assert(strncmp(slurp(path), "{\"n\":0}\n{\"n\":1}\n", 16) == 0);
	ck_assert_ptr_nonnull(strstr(slurp(path), "{\"n\":98}\n{\"n\":99}\n"));
	ck_assert_ptr_null(spool_open("/nonexistent/dir/x", 1024, &cause));
	ck_assert_ptr_nonnull(strstr(cause, "No such file"));
	free(cause);
}
END_TEST

START_TEST(test_spool_full_disk_counted)
{
	struct spool		*sp;
	struct spool_stats	 st;
	char			*cause = NULL;
	int			 i;

	sp = spool_open("/dev/full", 1 << 20, &cause);
	ck_assert_ptr_nonnull(sp);
	for (i = 0; i < 10; i++)
		ck_assert_int_eq(spool_put(sp, "line", 4), 0);
	st = settled(sp, 10);
	ck_assert_uint_eq(st.failed, 10);
	ck_assert_uint_eq(st.written, 0);
	ck_assert_int_eq(st.error, ENOSPC);
	spool_close(sp, 1000);
}
END_TEST

START_TEST(test_spool_bound_drops)
{
	struct spool		*sp;
	struct spool_stats	 st;
	char			*cause = NULL, big[200];

	memset(big, 'x', sizeof big);
	sp = spool_open(path, 100, &cause);
	ck_assert_ptr_nonnull(sp);
	ck_assert_int_eq(spool_put(sp, big, sizeof big), -1);
	ck_assert_int_eq(spool_put(sp, big, 50), 0);
	st = settled(sp, 2);
	ck_assert_uint_eq(st.dropped, 1);
	ck_assert_uint_eq(st.written, 1);
	spool_close(sp, 1000);
}
END_TEST

START_TEST(test_spool_reopen_after_rename)
{
	struct spool	*sp;
	char		*cause = NULL, moved[300];
	struct stat	 sb;
	uint64_t	 start;

	snprintf(moved, sizeof moved, "%s.1", path);
	sp = spool_open(path, 1 << 20, &cause);
	ck_assert_int_eq(spool_put(sp, "one", 3), 0);
	settled(sp, 1);
	ck_assert_int_eq(rename(path, moved), 0);
	spool_reopen(sp);
	start = clock_now_ms();
	while (stat(path, &sb) != 0)
		ck_assert(clock_now_ms() - start < DEADLINE_MS);
	ck_assert_int_eq(spool_put(sp, "two", 3), 0);
	settled(sp, 2);
	spool_close(sp, 1000);
	ck_assert_str_eq(slurp(moved), "one\n");
	ck_assert_str_eq(slurp(path), "two\n");
}
END_TEST

/* A FIFO's reader leaves: EPIPE, counted; a new reader gets the rest. */
START_TEST(test_spool_closed_pipe)
{
	struct spool		*sp;
	struct spool_stats	 st;
	char			*cause = NULL;
	int			 rfd;

	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_ge(rfd = open(path, O_RDONLY | O_NONBLOCK), 0);
	sp = spool_open(path, 1 << 20, &cause);
	ck_assert_ptr_nonnull(sp);
	close(rfd);
	ck_assert_int_eq(spool_put(sp, "lost", 4), 0);
	st = settled(sp, 1);
	ck_assert_uint_eq(st.failed, 1);
	ck_assert_int_eq(st.error, EPIPE);
	/* No reader: opening again fails (ENXIO), counted too. */
	ck_assert_int_eq(spool_put(sp, "lost too", 8), 0);
	st = settled(sp, 2);
	ck_assert_uint_eq(st.failed, 2);
	spool_close(sp, 1000);
}
END_TEST

static Suite *
spool_suite(void)
{
	Suite	*s = suite_create("spool");
	TCase	*tc = tcase_create("spool");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_spool_lines_in_order);
	tcase_add_test(tc, test_spool_full_disk_counted);
	tcase_add_test(tc, test_spool_bound_drops);
	tcase_add_test(tc, test_spool_reopen_after_rename);
	tcase_add_test(tc, test_spool_closed_pipe);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(spool_suite)

/*
 * Unit tests for log.c's rate limit: each cause writes at most
 * LOG_LIMIT_LINES lines per LOG_LIMIT_INTERVAL_MS, and what it lost is
 * said in one summary line once the interval is over (at the cause's next
 * line, from the cron, or at exit). Time is the tests' own.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "unit.h"

#include "log.h"

#define T0	1000000		/* an arbitrary monotonic start, in ms */

/*
 * stderr goes to a file the test reads back through its own descriptor
 * (its own offset). Check forks each test, so this stays in the test.
 */
static FILE	*captured;

static void
capture(void)
{
	char	path[] = "/tmp/mcpd-test-log.XXXXXX";
	int	fd;

	fd = mkstemp(path);
	ck_assert_int_ne(fd, -1);
	captured = fopen(path, "r");
	ck_assert_ptr_nonnull(captured);
	unlink(path);
	fflush(stderr);
	ck_assert_int_ne(dup2(fd, STDERR_FILENO), -1);
	close(fd);
}

/* Lines written since the last call that contain needle. */
static int
count(const char *needle, char *last, size_t lastsize)
{
	char	line[512];
	int	n = 0;

	fflush(stderr);
	while (fgets(line, sizeof line, captured) != NULL) {
		if (strstr(line, needle) == NULL)
			continue;
		n++;
		if (last != NULL)
			snprintf(last, lastsize, "%s", line);
	}
	clearerr(captured);
	return (n);
}

static int
pass_n(const char *cause, int n, uint64_t now)
{
	int	i, passed = 0;

	for (i = 0; i < n; i++)
		passed += log_limit_pass(cause, LOG_LEVEL_WARN, now);
	return (passed);
}

START_TEST(test_limit_per_interval)
{
	capture();
	ck_assert_int_eq(pass_n("a", 100, T0), LOG_LIMIT_LINES);
	/* Later in the same interval: still nothing, no summary yet. */
	ck_assert_int_eq(pass_n("a", 5, T0 + LOG_LIMIT_INTERVAL_MS - 1), 0);
	ck_assert_int_eq(count("suppressed", NULL, 0), 0);
	/* The next interval opens with a full budget. */
	ck_assert_int_eq(pass_n("a", 100, T0 + LOG_LIMIT_INTERVAL_MS),
	    LOG_LIMIT_LINES);
}
END_TEST

START_TEST(test_summary_counts_the_lost)
{
	char	line[512];

	capture();
	pass_n("resume-ahead", LOG_LIMIT_LINES + 37, T0);
	ck_assert_int_eq(count("suppressed", NULL, 0), 0);
	/* The cause's next line, an interval later, brings the summary. */
	ck_assert_int_eq(log_limit_pass("resume-ahead", LOG_LEVEL_WARN,
	    T0 + LOG_LIMIT_INTERVAL_MS), 1);
	ck_assert_int_eq(count("suppressed", line, sizeof line), 1);
	ck_assert_ptr_nonnull(strstr(line, " 37 more "));
	ck_assert_ptr_nonnull(strstr(line, "\"resume-ahead\""));
	ck_assert_ptr_nonnull(strstr(line, " warn "));
	/* Said once. */
	pass_n("resume-ahead", 1, T0 + 2 * LOG_LIMIT_INTERVAL_MS + 1);
	ck_assert_int_eq(count("suppressed", NULL, 0), 0);
}
END_TEST

START_TEST(test_flush_says_it_in_silence)
{
	char	line[512];

	capture();
	pass_n("quiet", LOG_LIMIT_LINES + 1, T0);
	log_limit_flush(T0 + LOG_LIMIT_INTERVAL_MS - 1);
	ck_assert_int_eq(count("suppressed", NULL, 0), 0);
	log_limit_flush(T0 + LOG_LIMIT_INTERVAL_MS);
	ck_assert_int_eq(count("suppressed", line, sizeof line), 1);
	ck_assert_ptr_nonnull(strstr(line, " 1 more \"quiet\" line "));
	log_limit_flush(T0 + 5 * LOG_LIMIT_INTERVAL_MS);
	ck_assert_int_eq(count("suppressed", NULL, 0), 0);
}
END_TEST

START_TEST(test_end_says_what_is_left)
{
	capture();
	pass_n("at-exit", LOG_LIMIT_LINES + 3, T0);
	log_limit_end();
	ck_assert_int_eq(count(" 3 more \"at-exit\" lines", NULL, 0), 1);
}
END_TEST

START_TEST(test_causes_are_independent)
{
	capture();
	ck_assert_int_eq(pass_n("one", 50, T0), LOG_LIMIT_LINES);
	ck_assert_int_eq(pass_n("two", 50, T0), LOG_LIMIT_LINES);
	/* Another string with the same text is the same cause. */
	{
		char	same[] = "one";

		ck_assert_int_eq(log_limit_pass(same, LOG_LEVEL_WARN, T0), 0);
	}
}
END_TEST

START_TEST(test_summary_takes_the_highest_level)
{
	char	line[512];

	capture();
	pass_n("mixed", LOG_LIMIT_LINES, T0);
	log_limit_pass("mixed", LOG_LEVEL_INFO, T0);
	log_limit_pass("mixed", LOG_LEVEL_ERROR, T0);
	log_limit_pass("mixed", LOG_LEVEL_INFO, T0);
	log_limit_flush(T0 + LOG_LIMIT_INTERVAL_MS);
	ck_assert_int_eq(count("suppressed", line, sizeof line), 1);
	ck_assert_ptr_nonnull(strstr(line, " error log: 3 more "));
}
END_TEST

START_TEST(test_many_causes_stay_bounded)
{
	static char	names[200][24];
	int		i, passed = 0;

	capture();
	/* More causes than the table: the extra ones share a slot, so
	 * together they are still limited. */
	for (i = 0; i < 200; i++) {
		snprintf(names[i], sizeof names[i], "cause-%d", i);
		passed += pass_n(names[i], 3, T0);
	}
	ck_assert_int_lt(passed, 200 * 3);
	ck_assert_int_ge(passed, 60 * 3);
}
END_TEST

START_TEST(test_log_limited_checks_the_level_first)
{
	char	line[512];

	capture();
	log_init(LOG_LEVEL_WARN);
	log_limited(LOG_LEVEL_INFO, "levels", "below the level %d", 1);
	log_limited(LOG_LEVEL_WARN, "levels", "at the level %d", 2);
	ck_assert_int_eq(count(" the level ", line, sizeof line), 1);
	ck_assert_ptr_nonnull(strstr(line, " warn at the level 2"));
}
END_TEST

static Suite *
log_suite(void)
{
	Suite	*s = suite_create("log");
	TCase	*tc = tcase_create("limit");

	tcase_add_test(tc, test_limit_per_interval);
	tcase_add_test(tc, test_summary_counts_the_lost);
	tcase_add_test(tc, test_flush_says_it_in_silence);
	tcase_add_test(tc, test_end_says_what_is_left);
	tcase_add_test(tc, test_causes_are_independent);
	tcase_add_test(tc, test_summary_takes_the_highest_level);
	tcase_add_test(tc, test_many_causes_stay_bounded);
	tcase_add_test(tc, test_log_limited_checks_the_level_first);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(log_suite)

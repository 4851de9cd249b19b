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

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <sys/stat.h>

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

/* One line of a file, read whole (JSON lines may be long). */
static char *
read_file(const char *path)
{
	static char	 buf[65536];
	FILE		*f = fopen(path, "r");
	size_t		 n;

	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	fclose(f);
	return (buf);
}

START_TEST(test_text_lines_escape_control_characters)
{
	char	 dir[] = "/tmp/mcpd-test-logt.XXXXXX", path[256], *cause;
	char	*text;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/text.log", dir);
	ck_assert_int_eq(log_open(path, 0, &cause), 0);
	/* A name from a peer that would forge a second line and recolour. */
	log_write(LOG_LEVEL_WARN, "tool \"%s\" refused", "x\r\n2026-01-01 "
	    "error forged\x1b[31m\t\x7f c1\xc2\x9b utf8 \xc3\xa9 bad \xff");
	ck_assert_int_eq(log_open(NULL, 0, &cause), 0);
	text = read_file(path);
	/* One line: the only newline is the one ending it. */
	ck_assert_ptr_eq(strchr(text, '\n'), text + strlen(text) - 1);
	ck_assert_ptr_nonnull(strstr(text, " warn tool \"x\\r\\n2026-01-01 "
	    "error forged\\x1b[31m\\t\\x7f c1\\u009b utf8 \xc3\xa9 bad "
	    "\\xff\" refused\n"));
}
END_TEST

START_TEST(test_json_lines_are_json_whatever_the_message)
{
	char	 dir[] = "/tmp/mcpd-test-logj.XXXXXX", path[256], *cause;
	char	*text, *nl, big[6000];
	cJSON	*j;
	int	 lines = 0;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/json.log", dir);
	ck_assert_int_eq(log_open(path, 1, &cause), 0);
	log_write(LOG_LEVEL_WARN, "quote \" backslash \\ tab\t nl\n ctl\x01 "
	    "utf8 \xc3\xa9 bad \xff\xc3 end");
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	log_write(LOG_LEVEL_INFO, "%s", big);
	ck_assert_int_eq(log_open(NULL, 0, &cause), 0);

	for (text = read_file(path); (nl = strchr(text, '\n')) != NULL;
	    text = nl + 1) {
		*nl = '\0';
		j = cJSON_Parse(text);
		ck_assert_msg(j != NULL, "not JSON: %s", text);
		ck_assert(cJSON_IsString(cJSON_GetObjectItem(j, "time")));
		ck_assert(cJSON_IsString(cJSON_GetObjectItem(j, "level")));
		ck_assert(cJSON_IsString(cJSON_GetObjectItem(j, "msg")));
		if (lines == 0) {
			ck_assert_str_eq(cJSON_GetObjectItem(j,
			    "level")->valuestring, "warn");
			/* Valid UTF-8 stays; a stray byte is \u00XX. */
			ck_assert_str_eq(cJSON_GetObjectItem(j,
			    "msg")->valuestring, "quote \" backslash \\ tab\t "
			    "nl\n ctl\x01 utf8 \xc3\xa9 bad \xc3\xbf\xc3\x83 end");
		} else {
			/* Cut at the bound, and saying so. */
			ck_assert_uint_lt(strlen(cJSON_GetObjectItem(j,
			    "msg")->valuestring), sizeof big - 1);
			ck_assert_ptr_nonnull(strstr(cJSON_GetObjectItem(j,
			    "msg")->valuestring, "[...]"));
		}
		cJSON_Delete(j);
		lines++;
	}
	ck_assert_int_eq(lines, 2);
}
END_TEST

START_TEST(test_reopen_follows_the_path_after_rotation)
{
	char	 dir[] = "/tmp/mcpd-test-logr.XXXXXX", path[256], old[256];
	char	*cause;
	struct stat sb;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/mcpd.log", dir);
	snprintf(old, sizeof old, "%s/mcpd.log.1", dir);
	ck_assert_int_eq(log_open(path, 0, &cause), 0);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 0777, 0640);
	log_write(LOG_LEVEL_INFO, "before rotation");
	ck_assert_int_eq(rename(path, old), 0);
	log_write(LOG_LEVEL_INFO, "rotated, not reopened");
	log_reopen();
	log_write(LOG_LEVEL_INFO, "after reopen");
	ck_assert_ptr_nonnull(strstr(read_file(old), "before rotation"));
	ck_assert_ptr_nonnull(strstr(read_file(old), "rotated, not reopened"));
	ck_assert_ptr_null(strstr(read_file(old), "after reopen"));
	ck_assert_ptr_nonnull(strstr(read_file(path), "after reopen"));

	/* A path that cannot be opened: refused, lines go on as before. */
	ck_assert_int_eq(log_open("/nonexistent-dir/x.log", 0, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "/nonexistent-dir/x.log"));
	free(cause);
	log_write(LOG_LEVEL_INFO, "still here");
	ck_assert_ptr_nonnull(strstr(read_file(path), "still here"));
	ck_assert_int_eq(log_open(NULL, 0, &cause), 0);
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
	tcase_add_test(tc, test_json_lines_are_json_whatever_the_message);
	tcase_add_test(tc, test_text_lines_escape_control_characters);
	tcase_add_test(tc, test_reopen_follows_the_path_after_rotation);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(log_suite)

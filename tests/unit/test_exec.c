/*
 * Unit tests for exec.c on a real event loop with real programs: lines and
 * their splitting, pause and resume, exit status and signals, stderr,
 * exec_kill with SIGTERM then SIGKILL, leftovers in the process group, the
 * done callback exactly once, and no zombie afterwards; a program talked
 * to on its stdin (bounded), with stderr handed over a line at a time.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "unit.h"

#include "exec.h"
#include "xmalloc.h"

struct run {
	struct event_base	*base;
	struct exec_job		*job;
	char			*out;		/* lines, each + "\n" or "|" */
	size_t			 outlen;
	size_t			 outsize;
	int			 lines;
	int			 pause_at;	/* pause after this many lines */
	int			 kill_at;	/* exec_kill after this many */
	int			 done;
	struct exec_result	 r;
	char			 err[EXEC_STDERR_MAX + 1];
};

static struct event_base	*base;

static void
setup(void)
{
	base = event_base_new();
	exec_init(base);
}

static void
teardown(void)
{
	exec_shutdown();
	event_base_free(base);
}

static void
line_cb(const char *line, size_t len, int newline, void *arg)
{
	struct run	*run = arg;

	ck_assert(!run->done);
	if (run->outlen + len + 2 > run->outsize) {
		run->outsize = (run->outlen + len + 2) * 2;
		run->out = xrealloc(run->out, run->outsize);
	}
	memcpy(run->out + run->outlen, line, len);
	run->outlen += len;
	run->out[run->outlen++] = newline ? '\n' : '|';
	run->out[run->outlen] = '\0';
	run->lines++;
	if (run->lines == run->pause_at)
		exec_pause(run->job);
	if (run->lines == run->kill_at)
		exec_kill(run->job);
}

static void
done_cb(const struct exec_result *r, void *arg)
{
	struct run	*run = arg;

	ck_assert_msg(!run->done, "done called twice");
	run->done = 1;
	run->r = *r;
	memcpy(run->err, r->err, r->errlen);
	run->err[r->errlen] = '\0';
	run->r.err = run->err;
}

static void
start(struct run *run, const char *const argv[], const char *const envp[])
{
	struct exec_spec	 spec;
	char			*cause = NULL;
	static char		*none[] = { NULL };

	memset(&spec, 0, sizeof spec);
	spec.path = argv[0];
	/* execve's prototype predates const; it does not write them. */
	spec.argv = (char *const *)argv;
	spec.envp = envp != NULL ? (char *const *)envp : none;
	spec.name = "test";
	run->base = base;
	run->job = exec_start(&spec, line_cb, done_cb, run, &cause);
	ck_assert_msg(run->job != NULL, "exec_start: %s", cause);
}

static double
now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ts.tv_sec + ts.tv_nsec / 1e9);
}

/* Run the loop until cond or the timeout. */
#define LOOP_UNTIL(cond, secs) do {					\
	double	 until_ = now() + (secs);				\
									\
	while (!(cond)) {						\
		ck_assert_msg(now() < until_, "timed out: " #cond);	\
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);	\
		usleep(1000);						\
	}								\
} while (0)

/* Whether pid exists and is not a zombie. */
static int
alive(pid_t pid)
{
	char	path[64], buf[512], *p;
	FILE	*f;
	int	 running = 0;

	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	if ((f = fopen(path, "r")) == NULL)
		return (0);
	if (fgets(buf, sizeof buf, f) != NULL &&
	    (p = strrchr(buf, ')')) != NULL)
		running = (p[1] == ' ' && p[2] != 'Z' && p[2] != 'X');
	fclose(f);
	return (running);
}

static void
wait_dead(pid_t pid)
{
	double	t0 = now();

	while (alive(pid)) {
		ck_assert_msg(now() - t0 < 3, "pid %ld still alive",
		    (long)pid);
		usleep(10000);
	}
}

static void
expect_no_children(void)
{
	int	status;

	errno = 0;
	ck_assert_int_eq(waitpid(-1, &status, WNOHANG), -1);
	ck_assert_int_eq(errno, ECHILD);
}

static void
free_run(struct run *run)
{
	free(run->out);
	memset(run, 0, sizeof *run);
}

START_TEST(test_lines_and_status)
{
	struct run	 run;
	const char	*argv[] = { "/bin/sh", "-c",
			    "printf 'one\\n\\ntwo\\nlast'; echo err >&2; exit 4",
			    NULL };

	memset(&run, 0, sizeof run);
	start(&run, argv, NULL);
	ck_assert_uint_eq(exec_count(), 1);
	ck_assert_int_gt(exec_pid(run.job), 0);
	LOOP_UNTIL(run.done, 5);
	ck_assert_str_eq(run.out, "one\n\ntwo\nlast|");
	ck_assert_int_eq(run.lines, 4);
	ck_assert_int_eq(run.r.exited, 1);
	ck_assert_int_eq(run.r.status, 4);
	ck_assert_int_eq(run.r.killed, 0);
	ck_assert_str_eq(run.err, "err\n");
	ck_assert_uint_eq(run.r.errtotal, 4);
	ck_assert_uint_eq(exec_count(), 0);
	expect_no_children();
	free_run(&run);
}
END_TEST

START_TEST(test_environment)
{
	struct run	 run;
	const char	*argv[] = { "/usr/bin/env", NULL };
	const char	*envp[] = { "A=1", "B=two words", NULL };
	const char	*argv2[] = { "/bin/sh", "-c",
			    "read x; echo \"[$x]\"; yes | head -n 1", NULL };

	memset(&run, 0, sizeof run);
	start(&run, argv, envp);
	LOOP_UNTIL(run.done, 5);
	ck_assert_str_eq(run.out, "A=1\nB=two words\n");
	free_run(&run);

	/* stdin is /dev/null; SIGPIPE is back to its default. */
	signal(SIGPIPE, SIG_IGN);
	start(&run, argv2, NULL);
	LOOP_UNTIL(run.done, 5);
	ck_assert_str_eq(run.out, "[]\ny\n");
	ck_assert_str_eq(run.err, "");	/* no "yes: Broken pipe" */
	ck_assert_int_eq(run.r.status, 0);
	free_run(&run);
}
END_TEST

START_TEST(test_long_lines_split)
{
	struct run	 run;
	const char	*argv[] = { "/bin/sh", "-c",
			    "head -c 140000 /dev/zero | tr -c a a; echo", NULL };
	const char	*argv2[] = { "/usr/bin/printf", "%65535s\xc3\xa9z\\n",
			    "", NULL };

	memset(&run, 0, sizeof run);
	start(&run, argv, NULL);
	LOOP_UNTIL(run.done, 5);
	ck_assert_int_eq(run.lines, 3);
	ck_assert_uint_eq(run.outlen, 140000 + 3);
	ck_assert_int_eq(run.out[EXEC_LINE_MAX], '|');
	ck_assert_int_eq(run.out[2 * EXEC_LINE_MAX + 1], '|');
	ck_assert_int_eq(run.out[run.outlen - 1], '\n');
	free_run(&run);

	/* A split does not cut a UTF-8 sequence in two. */
	start(&run, argv2, NULL);
	LOOP_UNTIL(run.done, 5);
	ck_assert_int_eq(run.lines, 2);
	ck_assert_int_eq(run.out[65535], '|');
	ck_assert_str_eq(run.out + 65536, "\xc3\xa9z\n");
	free_run(&run);
}
END_TEST

/* Paused, the program blocks on its pipe; resumed, nothing is lost. */
START_TEST(test_pause_resume)
{
	struct run	 run;
	const char	*argv[] = { "/usr/bin/seq", "1", "200000", NULL };
	char		 want[16];
	char		*p;
	int		 i, lines;

	memset(&run, 0, sizeof run);
	run.pause_at = 10;
	start(&run, argv, NULL);
	LOOP_UNTIL(run.lines == 10, 5);
	for (i = 0; i < 200; i++) {
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		usleep(1000);
	}
	ck_assert_int_eq(run.lines, 10);
	ck_assert(!run.done);
	ck_assert(alive(exec_pid(run.job)));	/* blocked, not done */
	exec_resume(run.job);
	LOOP_UNTIL(run.done, 10);
	ck_assert_int_eq(run.lines, 200000);
	ck_assert_int_eq(run.r.exited, 1);
	ck_assert_int_eq(run.r.status, 0);
	for (p = run.out, lines = 1; lines <= 200000; lines++) {
		snprintf(want, sizeof want, "%d\n", lines);
		ck_assert(strncmp(p, want, strlen(want)) == 0);
		p += strlen(want);
	}
	ck_assert_int_eq(*p, '\0');
	free_run(&run);
}
END_TEST

START_TEST(test_signals)
{
	struct run	 run;
	const char	*argv[] = { "/bin/sh", "-c", "echo x; kill -9 $$", NULL };

	memset(&run, 0, sizeof run);
	start(&run, argv, NULL);
	LOOP_UNTIL(run.done, 5);
	ck_assert_str_eq(run.out, "x\n");
	ck_assert_int_eq(run.r.exited, 0);
	ck_assert_int_eq(run.r.status, SIGKILL);
	ck_assert_int_eq(run.r.killed, 0);
	free_run(&run);
}
END_TEST

/* exec_kill: SIGTERM to the group, output dropped, done once reaped. */
START_TEST(test_kill)
{
	struct run	 run;
	const char	*argv[] = { "/bin/sh", "-c",
			    "echo $$; sleep 30 & echo $!; wait", NULL };
	pid_t		 sh, sleeper;
	double		 t0;

	memset(&run, 0, sizeof run);
	run.kill_at = 2;
	start(&run, argv, NULL);
	t0 = now();
	LOOP_UNTIL(run.done, 5);
	ck_assert(now() - t0 < 1.5);
	ck_assert_int_eq(sscanf(run.out, "%d\n%d\n", &sh, &sleeper), 2);
	ck_assert_int_eq(run.r.killed, 1);
	ck_assert_int_eq(run.r.exited, 0);
	ck_assert_int_eq(run.r.status, SIGTERM);
	wait_dead(sh);
	wait_dead(sleeper);	/* it was in the group */
	expect_no_children();
	free_run(&run);
}
END_TEST

/* SIGTERM ignored: SIGKILL after EXEC_KILL_GRACE. */
START_TEST(test_kill_stubborn)
{
	struct run	 run;
	const char	*argv[] = { "/bin/sh", "-c",
			    "trap '' TERM; echo ready; exec sleep 30", NULL };
	double		 t0;

	memset(&run, 0, sizeof run);
	run.kill_at = 1;
	start(&run, argv, NULL);
	t0 = now();
	LOOP_UNTIL(run.done, EXEC_KILL_GRACE + 3);
	ck_assert(now() - t0 >= EXEC_KILL_GRACE - 0.2);
	ck_assert_int_eq(run.r.exited, 0);
	ck_assert_int_eq(run.r.status, SIGKILL);
	expect_no_children();
	free_run(&run);
}
END_TEST

/* After the program exits, what it left in its group is killed. */
START_TEST(test_leftovers)
{
	struct run	 run;
	const char	*argv[] = { "/bin/sh", "-c", "sleep 30 & echo $!", NULL };
	pid_t		 sleeper;
	double		 t0;

	memset(&run, 0, sizeof run);
	start(&run, argv, NULL);
	t0 = now();
	LOOP_UNTIL(run.done, 5);
	ck_assert(now() - t0 < 1.5);	/* not waiting for the sleeper */
	ck_assert_int_eq(run.r.exited, 1);
	ck_assert_int_eq(run.r.status, 0);
	sleeper = atoi(run.out);
	ck_assert_int_gt(sleeper, 0);
	wait_dead(sleeper);
	expect_no_children();
	free_run(&run);
}
END_TEST

/*
 * glibc's posix_spawn reports a failed exec at once. Under valgrind, which
 * cannot do vfork, the child reports it by exiting 127 instead.
 */
static void
expect_start_error(struct exec_spec *spec, struct run *run, const char *want)
{
	char	*cause = NULL;

	memset(run, 0, sizeof *run);
	run->job = exec_start(spec, line_cb, done_cb, run, &cause);
	if (run->job == NULL) {
		ck_assert_str_eq(cause, want);
		free(cause);
		return;
	}
	LOOP_UNTIL(run->done, 10);
	ck_assert_int_eq(run->r.exited, 1);
	ck_assert_int_eq(run->r.status, 127);
	free_run(run);
}

START_TEST(test_start_errors)
{
	struct run		 run;
	struct exec_spec	 spec;
	const char		*argv[] = { "/nonexistent", NULL };
	const char		*envp[] = { NULL };
	const char		*argv2[] = { "/bin/true", NULL };

	memset(&spec, 0, sizeof spec);
	spec.path = argv[0];
	spec.argv = (char *const *)argv;
	spec.envp = (char *const *)envp;
	expect_start_error(&spec, &run,
	    "/nonexistent: No such file or directory");
	spec.path = argv2[0];
	spec.argv = (char *const *)argv2;
	spec.cwd = "/nonexistent";
	expect_start_error(&spec, &run, "/bin/true: No such file or directory");
	ck_assert_uint_eq(exec_count(), 0);
	expect_no_children();
}
END_TEST

/* Shutdown kills and reaps, with done callbacks, and refuses new jobs. */
/* The longest stderr line handed over. */
static size_t	errline_max;

/* Standard error a line at a time, through the run's err buffer. */
static void
errline_cb(const char *line, size_t len, void *arg)
{
	struct run	*run = arg;
	size_t		 used = strlen(run->err);

	ck_assert(!run->done);
	if (len > errline_max)
		errline_max = len;
	snprintf(run->err + used, sizeof run->err - used, "[%.*s]", (int)len,
	    line);
}

/*
 * A program talked to: what is written to its stdin comes back on its
 * stdout; stderr lines are handed over as they come, cut at
 * EXEC_ERRLINE_MAX; closing stdin ends the program; a write beyond
 * stdin_max is refused.
 */
START_TEST(test_stdin_and_stderr_lines)
{
	static const char *const argv[] = { "/bin/sh", "-c",
	    "while read l; do echo \"got $l\"; echo \"err $l\" >&2; done; "
	    "head -c 2000 /dev/zero | tr '\\0' x >&2; echo >&2; exit 4",
	    NULL };
	static char		*none[] = { NULL };
	struct exec_spec	 spec;
	struct run		 run;
	char			*cause = NULL, big[100];

	memset(&run, 0, sizeof run);
	memset(&spec, 0, sizeof spec);
	spec.path = argv[0];
	spec.argv = (char *const *)argv;
	spec.envp = none;
	spec.name = "talk";
	spec.stdin_max = 64;
	spec.err_cb = errline_cb;
	run.base = base;
	run.job = exec_start(&spec, line_cb, done_cb, &run, &cause);
	ck_assert_msg(run.job != NULL, "exec_start: %s", cause);

	ck_assert_int_eq(exec_write(run.job, "one\ntwo\n", 8), 0);
	LOOP_UNTIL(run.lines == 2, 5);
	ck_assert_str_eq(run.out, "got one\ngot two\n");
	ck_assert_uint_eq(exec_write_queued(run.job), 0);
	memset(big, 'b', sizeof big);
	ck_assert_int_eq(exec_write(run.job, big, sizeof big), -1);
	LOOP_UNTIL(strstr(run.err, "[err two]") != NULL, 5);

	exec_close_stdin(run.job);
	ck_assert_int_eq(exec_write(run.job, "x\n", 2), -1);
	LOOP_UNTIL(run.done, 5);
	ck_assert_int_eq(run.r.exited, 1);
	ck_assert_int_eq(run.r.status, 4);
	/* The done callback copied the kept stderr over the lines. */
	ck_assert_ptr_nonnull(strstr(run.err, "err one"));
	/* The 2000-byte line came cut. */
	ck_assert_uint_eq(errline_max, EXEC_ERRLINE_MAX);
	free(run.out);
}
END_TEST

START_TEST(test_shutdown)
{
	struct run		 a, b;
	struct exec_spec	 spec;
	const char		*argv[] = { "/bin/sleep", "30", NULL };
	const char		*argv2[] = { "/bin/sh", "-c",
				    "trap '' TERM; exec sleep 30", NULL };
	const char		*envp[] = { NULL };
	char			*cause = NULL;
	double			 t0;

	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	start(&a, argv, NULL);
	start(&b, argv2, NULL);
	usleep(100000);
	t0 = now();
	exec_shutdown();
	ck_assert(now() - t0 < EXEC_KILL_GRACE + 1.5);
	ck_assert(a.done && b.done);
	ck_assert_int_eq(a.r.status, SIGTERM);
	ck_assert_int_eq(b.r.status, SIGKILL);
	ck_assert_uint_eq(exec_count(), 0);
	expect_no_children();

	memset(&spec, 0, sizeof spec);
	spec.path = argv[0];
	spec.argv = (char *const *)argv;
	spec.envp = (char *const *)envp;
	ck_assert_ptr_null(exec_start(&spec, line_cb, done_cb, &a, &cause));
	free(cause);
	free_run(&a);
	free_run(&b);
}
END_TEST

static Suite *
exec_suite(void)
{
	Suite	*s = suite_create("exec");
	TCase	*tc = tcase_create("exec");

	tcase_set_timeout(tc, 30);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_lines_and_status);
	tcase_add_test(tc, test_environment);
	tcase_add_test(tc, test_long_lines_split);
	tcase_add_test(tc, test_pause_resume);
	tcase_add_test(tc, test_signals);
	tcase_add_test(tc, test_kill);
	tcase_add_test(tc, test_kill_stubborn);
	tcase_add_test(tc, test_leftovers);
	tcase_add_test(tc, test_start_errors);
	tcase_add_test(tc, test_stdin_and_stderr_lines);
	tcase_add_test(tc, test_shutdown);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(exec_suite)

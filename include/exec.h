/*
 * Child processes. A job is one program started with stdin from /dev/null
 * (or a pipe the job writes, for a program that is talked to), stdout and
 * stderr on pipes read in the event loop, in a process group of its own,
 * and reaped through SIGCHLD as a loop event. Standard output is handed
 * over line by line and may be paused (the program then blocks on its full
 * pipe); standard error is kept up to a limit for the end, and may also be
 * handed over line by line.
 */
#ifndef MCPD_EXEC_H
#define MCPD_EXEC_H

#include <sys/types.h>

#include <stddef.h>

struct event_base;
struct exec_job;

/* Longest line handed over; a longer one comes in pieces this long. */
#define EXEC_LINE_MAX		(64 * 1024)
/* Bytes of standard error kept. */
#define EXEC_STDERR_MAX		(8 * 1024)
/* Longest line of standard error handed over; longer ones are cut. */
#define EXEC_ERRLINE_MAX	1024
/* Seconds between SIGTERM and SIGKILL. */
#define EXEC_KILL_GRACE		2

struct exec_spec {
	const char	*path;		/* the program's file */
	char *const	*argv;		/* NULL-terminated */
	char *const	*envp;		/* NULL-terminated, the whole env */
	const char	*cwd;		/* NULL: ours */
	const char	*name;		/* for log lines */
	size_t		 stdin_max;	/* 0: /dev/null; else a pipe
					   holding this many bytes unsent */
	/* If set, each line of stderr (without newline, cut at
	   EXEC_ERRLINE_MAX) as it comes. */
	void		(*err_cb)(const char *, size_t, void *);
};

struct exec_result {
	int		 exited;	/* 1: exit status, 0: signal */
	int		 status;	/* exit status or signal number */
	int		 killed;	/* exec_kill ended it */
	const char	*err;		/* start of stderr, no NUL */
	size_t		 errlen;
	size_t		 errtotal;	/* bytes of stderr in all */
};

/*
 * A line of standard output without its newline; newline says whether it
 * had one (not for a split line or a last line without one). Calls stop
 * as soon as the callee pauses or kills the job.
 */
typedef void	(*exec_line_cb)(const char *, size_t, int, void *);
/*
 * Runs exactly once per started job, from the event loop, once the program
 * has been reaped and every line of its output was handed over (after
 * exec_kill: once it has been reaped). The job is gone afterwards.
 */
typedef void	(*exec_done_cb)(const struct exec_result *, void *);

void		 exec_init(struct event_base *);
void		 exec_shutdown(void);
u_int		 exec_count(void);

struct exec_job	*exec_start(const struct exec_spec *, exec_line_cb,
		     exec_done_cb, void *, char **);
pid_t		 exec_pid(const struct exec_job *);
void		 exec_pause(struct exec_job *);
void		 exec_resume(struct exec_job *);
void		 exec_kill(struct exec_job *);
/*
 * Standard input (stdin_max set): the bytes are queued and written as the
 * pipe takes them. -1 if they do not fit in what stdin_max leaves, or
 * standard input is closed (the program closed it, or exited).
 */
int		 exec_write(struct exec_job *, const char *, size_t);
size_t		 exec_write_queued(const struct exec_job *);
void		 exec_close_stdin(struct exec_job *);

#endif

/*
 * Child processes. Each job is a program started with posix_spawn in a
 * process group of its own (so one signal reaches everything it starts),
 * with stdin from /dev/null and its stdout and stderr on non-blocking pipes
 * watched by the loop. SIGCHLD is a loop event: every job is checked with
 * waitid(WNOWAIT) so that, while the exited program still holds its pid as
 * a zombie, whatever it left in its process group is killed without any
 * chance of signalling a recycled pid; then it is reaped.
 *
 * Standard output goes through one bounded buffer (EXEC_LINE_MAX) and is
 * handed over a line at a time. While the consumer has paused the job the
 * pipe is not read, so a program that writes faster than the client reads
 * blocks in write(2) and memory stays flat.
 *
 * A job's state:
 *
 *	RUNNING --(reaped)--> DRAINING --(output all handed over)--> DONE
 *	   |                     |                                    ^
 *	   +--(exec_kill)--------+--> KILLING --(reaped)--------------+
 *
 * exec_kill sends SIGTERM to the process group, closes the pipes (the
 * output is no longer wanted) and SIGKILL follows after EXEC_KILL_GRACE.
 * Public calls only set flags and wake the job; state changes and the done
 * callback happen in loop callbacks, so a consumer is never re-entered.
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "exec.h"
#include "log.h"
#include "xmalloc.h"

/* Seconds to wait for a pipe's EOF after the program has been reaped. */
#define EXEC_LINGER		EXEC_KILL_GRACE
/* Shutdown waits this much longer than the grace period for the reaping. */
#define EXEC_SHUTDOWN_EXTRA_MS	1000
#define EXEC_SHUTDOWN_POLL_MS	10

enum exec_state {
	EXEC_RUNNING,
	EXEC_DRAINING,
	EXEC_KILLING,
	EXEC_DONE,
	EXEC_STATE_MAX
};

static const char *const exec_state_names[EXEC_STATE_MAX] = {
	"running", "draining", "killing", "done"
};

struct exec_job {
	enum exec_state		 state;
	pid_t			 pid;
	char			*name;

	int			 out_fd;	/* -1 once closed */
	int			 err_fd;
	int			 in_fd;		/* -1: none, or closed */
	struct event		*in_ev;
	char			*wbuf;		/* queued for stdin */
	size_t			 woff;
	size_t			 wlen;
	size_t			 wsize;		/* allocated */
	size_t			 wmax;

	char			 errline[EXEC_ERRLINE_MAX];
	size_t			 errlinelen;
	void			(*err_cb)(const char *, size_t, void *);
	struct event		*out_ev;
	struct event		*err_ev;
	struct event		*wake_ev;	/* run exec_job_update */
	struct event		*kill_ev;	/* SIGKILL after the grace */
	struct event		*linger_ev;	/* pipes still open, reaped */

	char			*buf;		/* EXEC_LINE_MAX bytes */
	size_t			 off;		/* of the first unread byte */
	size_t			 len;		/* unread bytes */
	int			 paused;

	char			 err[EXEC_STDERR_MAX];
	size_t			 errlen;
	size_t			 errtotal;

	int			 reaped;
	int			 wstatus;
	int			 killed;

	exec_line_cb		 line_cb;
	exec_done_cb		 done_cb;
	void			*arg;

	TAILQ_ENTRY(exec_job)	 entry;
};
TAILQ_HEAD(exec_jobs, exec_job);

static struct {
	struct event_base	*base;
	struct event		*sigchld;
	struct exec_jobs	 jobs;		/* not DONE */
	u_int			 count;
	int			 shutdown;
} exec;

static void	exec_job_update(struct exec_job *);

static void
exec_set_state(struct exec_job *job, enum exec_state state)
{
	log_debug("exec pid=%ld (%s): %s -> %s", (long)job->pid, job->name,
	    exec_state_names[job->state], exec_state_names[state]);
	job->state = state;
}

static void
exec_job_free(struct exec_job *job)
{
	event_free(job->out_ev);
	event_free(job->err_ev);
	event_free(job->wake_ev);
	event_free(job->kill_ev);
	event_free(job->linger_ev);
	if (job->in_ev != NULL)
		event_free(job->in_ev);
	if (job->in_fd != -1)
		close(job->in_fd);
	free(job->wbuf);
	if (job->out_fd != -1)
		close(job->out_fd);
	if (job->err_fd != -1)
		close(job->err_fd);
	free(job->buf);
	free(job->name);
	free(job);
}

static void
exec_free_cb(evutil_socket_t fd, short events, void *arg)
{
	exec_job_free(arg);
}

static void
exec_close_out(struct exec_job *job)
{
	if (job->out_fd == -1)
		return;
	event_del(job->out_ev);
	close(job->out_fd);
	job->out_fd = -1;
}

static void
exec_close_err(struct exec_job *job)
{
	if (job->err_fd == -1)
		return;
	event_del(job->err_ev);
	close(job->err_fd);
	job->err_fd = -1;
}

void
exec_close_stdin(struct exec_job *job)
{
	if (job->in_fd == -1)
		return;
	event_del(job->in_ev);
	close(job->in_fd);
	job->in_fd = -1;
	job->woff = job->wlen = 0;
}

static void
exec_wake(struct exec_job *job)
{
	if (!exec.shutdown)
		event_active(job->wake_ev, EV_TIMEOUT, 0);
}

/*
 * Signals the program's process group (the group's id is the program's
 * pid), and the program itself in case it moved to another group.
 */
static void
exec_signal(struct exec_job *job, int sig)
{
	if (job->reaped)
		return;		/* the pid may belong to someone else now */
	if (kill(-job->pid, sig) != 0 && errno != ESRCH)
		log_limited(LOG_LEVEL_WARN, "exec-kill", "exec pid=%ld (%s): "
		    "kill: %s", (long)job->pid, job->name, strerror(errno));
	kill(job->pid, sig);
}

/* The job is over: tell its consumer, exactly once; free it later. */
static void
exec_finish(struct exec_job *job)
{
	struct exec_result	r;

	exec_set_state(job, EXEC_DONE);
	TAILQ_REMOVE(&exec.jobs, job, entry);
	exec.count--;
	exec_close_stdin(job);
	exec_close_out(job);
	exec_close_err(job);
	evtimer_del(job->kill_ev);
	evtimer_del(job->linger_ev);
	event_del(job->wake_ev);

	memset(&r, 0, sizeof r);
	if (WIFEXITED(job->wstatus)) {
		r.exited = 1;
		r.status = WEXITSTATUS(job->wstatus);
	} else
		r.status = WTERMSIG(job->wstatus);
	r.killed = job->killed;
	r.err = job->err;
	r.errlen = job->errlen;
	r.errtotal = job->errtotal;
	job->done_cb(&r, job->arg);

	if (exec.shutdown)
		exec_job_free(job);
	else
		event_base_once(exec.base, -1, EV_TIMEOUT, exec_free_cb, job,
		    NULL);
}

/*
 * Where to split a full buffer that has no newline: at its end, or before
 * a UTF-8 sequence that the end would cut.
 */
static size_t
exec_split_at(const char *p, size_t len)
{
	size_t	i, need;
	u_char	lead;

	for (i = 1; i <= 4 && i <= len; i++) {
		lead = p[len - i];
		if ((lead & 0xc0) == 0x80)
			continue;	/* continuation byte */
		if (lead >= 0xf0)
			need = 4;
		else if (lead >= 0xe0)
			need = 3;
		else if (lead >= 0xc0)
			need = 2;
		else
			need = 1;
		if (need > i && len - i > 0)
			return (len - i);
		break;
	}
	return (len);
}

/* Hand buffered lines over until the consumer pauses or kills the job. */
static void
exec_deliver(struct exec_job *job)
{
	const char	*p, *nl;
	size_t		 n, skip;
	int		 newline;

	while (!job->paused && !job->killed && job->len > 0) {
		p = job->buf + job->off;
		if ((nl = memchr(p, '\n', job->len)) != NULL) {
			n = nl - p;
			skip = n + 1;
			newline = 1;
		} else if (job->len == EXEC_LINE_MAX) {
			n = skip = exec_split_at(p, job->len);
			newline = 0;
		} else if (job->out_fd == -1) {
			n = skip = job->len;	/* last line, no newline */
			newline = 0;
		} else
			break;
		job->off += skip;
		job->len -= skip;
		if (job->len == 0)
			job->off = 0;
		job->line_cb(p, n, newline, job->arg);
	}
}

/* Work out what is next for a job; the one place that finishes it. */
static void
exec_job_update(struct exec_job *job)
{
	int	reading;

	if (job->state == EXEC_DONE)
		return;
	if (job->state != EXEC_KILLING)
		exec_deliver(job);
	if (job->state == EXEC_DONE)
		return;

	reading = (job->out_fd != -1 && !job->paused && !job->killed &&
	    job->len < EXEC_LINE_MAX);
	if (reading)
		event_add(job->out_ev, NULL);
	else if (job->out_fd != -1)
		event_del(job->out_ev);

	switch (job->state) {
	case EXEC_DRAINING:
		if (job->out_fd == -1 && job->err_fd == -1 && job->len == 0)
			exec_finish(job);
		break;
	case EXEC_KILLING:
		if (job->reaped)
			exec_finish(job);
		break;
	default:
		break;
	}
}

static void
exec_wake_cb(evutil_socket_t fd, short events, void *arg)
{
	exec_job_update(arg);
}

static void
exec_out_cb(evutil_socket_t fd, short events, void *arg)
{
	struct exec_job	*job = arg;
	ssize_t		 n;

	if (job->paused || job->killed || job->len == EXEC_LINE_MAX) {
		exec_job_update(job);
		return;
	}
	if (job->off > 0) {
		memmove(job->buf, job->buf + job->off, job->len);
		job->off = 0;
	}
	n = read(job->out_fd, job->buf + job->len, EXEC_LINE_MAX - job->len);
	if (n > 0)
		job->len += n;
	else if (n == 0)
		exec_close_out(job);
	else if (errno != EAGAIN && errno != EINTR) {
		log_limited(LOG_LEVEL_WARN, "exec-read", "exec pid=%ld (%s): "
		    "stdout: %s", (long)job->pid, job->name, strerror(errno));
		exec_close_out(job);
	}
	exec_job_update(job);
}

/* Standard error handed over a line at a time, long lines cut. */
static void
exec_err_lines(struct exec_job *job, const char *p, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		if (p[i] == '\n') {
			job->err_cb(job->errline, job->errlinelen, job->arg);
			job->errlinelen = 0;
			if (job->killed || job->err_fd == -1)
				return;
			continue;
		}
		if (job->errlinelen < sizeof job->errline)
			job->errline[job->errlinelen++] = p[i];
	}
}

static void
exec_err_cb(evutil_socket_t fd, short events, void *arg)
{
	struct exec_job	*job = arg;
	char		 buf[16384];
	ssize_t		 n;
	size_t		 keep;

	n = read(job->err_fd, buf, sizeof buf);
	if (n > 0) {
		keep = sizeof job->err - job->errlen;
		if (keep > (size_t)n)
			keep = n;
		memcpy(job->err + job->errlen, buf, keep);
		job->errlen += keep;
		job->errtotal += n;
		if (job->err_cb != NULL)
			exec_err_lines(job, buf, n);
		return;
	}
	if (job->err_cb != NULL && job->errlinelen > 0 &&
	    (n == 0 || (errno != EAGAIN && errno != EINTR))) {
		job->err_cb(job->errline, job->errlinelen, job->arg);
		job->errlinelen = 0;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	exec_close_err(job);
	exec_job_update(job);
}

static void
exec_in_cb(evutil_socket_t fd, short events, void *arg)
{
	struct exec_job	*job = arg;
	ssize_t		 n;

	while (job->wlen > 0) {
		n = write(job->in_fd, job->wbuf + job->woff, job->wlen);
		if (n > 0) {
			job->woff += n;
			job->wlen -= n;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		log_limited(LOG_LEVEL_WARN, "exec-write", "exec pid=%ld (%s): "
		    "stdin: %s", (long)job->pid, job->name,
		    n < 0 ? strerror(errno) : "short write");
		exec_close_stdin(job);
		return;
	}
	job->woff = 0;
	event_del(job->in_ev);
}

int
exec_write(struct exec_job *job, const char *p, size_t len)
{
	size_t	size;

	if (job->in_fd == -1 || job->killed || len > job->wmax - job->wlen)
		return (-1);
	if (job->woff > 0 && job->woff + job->wlen + len > job->wmax) {
		memmove(job->wbuf, job->wbuf + job->woff, job->wlen);
		job->woff = 0;
	}
	size = job->woff + job->wlen + len;
	if (size > job->wsize) {
		if (job->wsize == 0)
			job->wsize = 4096;
		while (job->wsize < size)
			job->wsize *= 2;
		job->wbuf = xrealloc(job->wbuf, job->wsize);
	}
	memcpy(job->wbuf + job->woff + job->wlen, p, len);
	job->wlen += len;
	event_add(job->in_ev, NULL);
	return (0);
}

size_t
exec_write_queued(const struct exec_job *job)
{
	return (job->wlen);
}

static void
exec_kill_cb(evutil_socket_t fd, short events, void *arg)
{
	struct exec_job	*job = arg;

	if (job->reaped)
		return;
	log_limited(LOG_LEVEL_WARN, "exec-kill", "exec pid=%ld (%s): still "
	    "running %d s after SIGTERM, sending SIGKILL", (long)job->pid,
	    job->name, EXEC_KILL_GRACE);
	exec_signal(job, SIGKILL);
}

/*
 * The program is gone but a pipe is still open: something it started has
 * left its process group and holds on. Stop waiting for it, unless the
 * consumer has paused us (the data in the pipe is still owed to it).
 */
static void
exec_linger_cb(evutil_socket_t fd, short events, void *arg)
{
	struct exec_job	*job = arg;
	struct timeval	 tv = { EXEC_LINGER, 0 };

	if (job->paused) {
		evtimer_add(job->linger_ev, &tv);
		return;
	}
	log_limited(LOG_LEVEL_WARN, "exec-linger", "exec pid=%ld (%s): output "
	    "still open %d s after exit, closed", (long)job->pid, job->name,
	    EXEC_LINGER);
	exec_close_out(job);
	exec_close_err(job);
	exec_job_update(job);
}

/* The program has been reaped with status. */
static void
exec_reaped(struct exec_job *job, int status)
{
	struct timeval	tv = { EXEC_LINGER, 0 };

	job->reaped = 1;
	job->wstatus = status;
	evtimer_del(job->kill_ev);
	if (WIFEXITED(status))
		log_debug("exec pid=%ld (%s): exit status %d", (long)job->pid,
		    job->name, WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		log_debug("exec pid=%ld (%s): killed by signal %d",
		    (long)job->pid, job->name, WTERMSIG(status));
	if (job->state == EXEC_RUNNING) {
		exec_set_state(job, EXEC_DRAINING);
		if (job->out_fd != -1 || job->err_fd != -1)
			evtimer_add(job->linger_ev, &tv);
	}
	exec_job_update(job);
}

static struct exec_job *
exec_find(pid_t pid)
{
	struct exec_job	*job;

	TAILQ_FOREACH(job, &exec.jobs, entry) {
		if (job->pid == pid)
			return (job);
	}
	return (NULL);
}

/*
 * Reap what has exited. A job's program is first looked at without being
 * reaped: its zombie keeps the pid (and so the process group id) ours while
 * the rest of its group is killed.
 */
static void
exec_reap(void)
{
	struct exec_job	*job, *job1;
	siginfo_t	 si;
	pid_t		 pid;
	int		 status;

	TAILQ_FOREACH_SAFE(job, &exec.jobs, entry, job1) {
		if (job->reaped)
			continue;
		memset(&si, 0, sizeof si);
		if (waitid(P_PID, job->pid, &si, WEXITED | WNOHANG |
		    WNOWAIT) != 0 || si.si_pid == 0)
			continue;
		if (kill(-job->pid, SIGKILL) != 0 && errno != ESRCH)
			log_limited(LOG_LEVEL_WARN, "exec-kill", "exec pid=%ld "
			    "(%s): kill group: %s", (long)job->pid, job->name,
			    strerror(errno));
		if (waitpid(job->pid, &status, WNOHANG) != job->pid)
			continue;
		exec_reaped(job, status);
	}
	/*
	 * Anything else, so no zombie is ever left: also a program that
	 * exited since the scan above. Its group is still alive if anything
	 * of it is left, and then its id cannot have been reused.
	 */
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if ((job = exec_find(pid)) != NULL && !job->reaped) {
			kill(-pid, SIGKILL);
			exec_reaped(job, status);
		} else
			log_limited(LOG_LEVEL_WARN, "exec-reap", "exec: reaped "
			    "unknown child pid=%ld", (long)pid);
	}
}

static void
exec_sigchld_cb(evutil_socket_t sig, short events, void *arg)
{
	exec_reap();
}

void
exec_init(struct event_base *base)
{
	exec.base = base;
	TAILQ_INIT(&exec.jobs);
	exec.count = 0;
	exec.shutdown = 0;
	exec.sigchld = evsignal_new(base, SIGCHLD, exec_sigchld_cb, NULL);
	evsignal_add(exec.sigchld, NULL);
}

u_int
exec_count(void)
{
	return (exec.count);
}

/*
 * A pipe whose ends are above stderr (so the child's dup2 onto 0, 1 and 2
 * cannot clobber one with another even if mcpd runs without them), our end
 * (fds[nonblock]) non-blocking, both close-on-exec.
 */
static int
exec_pipe(int fds[2], int nonblock, char **cause)
{
	int	i, fd;

	if (pipe2(fds, O_CLOEXEC) != 0) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		return (-1);
	}
	for (i = 0; i < 2; i++) {
		if (fds[i] > STDERR_FILENO)
			continue;
		if ((fd = fcntl(fds[i], F_DUPFD_CLOEXEC,
		    STDERR_FILENO + 1)) == -1) {
			xasprintf(cause, "fcntl: %s", strerror(errno));
			close(fds[0]);
			close(fds[1]);
			return (-1);
		}
		close(fds[i]);
		fds[i] = fd;
	}
	if (fcntl(fds[nonblock], F_SETFL, O_NONBLOCK) != 0) {
		xasprintf(cause, "fcntl: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return (-1);
	}
	return (0);
}

static void
exec_close_pair(int fds[2])
{
	if (fds[0] != -1)
		close(fds[0]);
	if (fds[1] != -1)
		close(fds[1]);
}

/* posix_spawn: the child's own group, default signals, no other fds. */
static int
exec_spawn(const struct exec_spec *spec, int in, int out, int err,
    pid_t *pid)
{
	posix_spawn_file_actions_t	 fa;
	posix_spawnattr_t		 sa;
	sigset_t			 none, all;
	int				 r;

	posix_spawn_file_actions_init(&fa);
	if (in == -1)
		posix_spawn_file_actions_addopen(&fa, STDIN_FILENO,
		    "/dev/null", O_RDONLY, 0);
	else
		posix_spawn_file_actions_adddup2(&fa, in, STDIN_FILENO);
	posix_spawn_file_actions_adddup2(&fa, out, STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, err, STDERR_FILENO);
	if (spec->cwd != NULL)
		posix_spawn_file_actions_addchdir_np(&fa, spec->cwd);
	posix_spawn_file_actions_addclosefrom_np(&fa, STDERR_FILENO + 1);

	posix_spawnattr_init(&sa);
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_setflags(&sa, POSIX_SPAWN_SETPGROUP |
	    POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setpgroup(&sa, 0);
	posix_spawnattr_setsigmask(&sa, &none);
	posix_spawnattr_setsigdefault(&sa, &all);	/* SIGPIPE too */

	r = posix_spawn(pid, spec->path, &fa, &sa, spec->argv, spec->envp);
	posix_spawnattr_destroy(&sa);
	posix_spawn_file_actions_destroy(&fa);
	return (r);
}

struct exec_job *
exec_start(const struct exec_spec *spec, exec_line_cb line_cb,
    exec_done_cb done_cb, void *arg, char **cause)
{
	struct exec_job	*job;
	int		 in[2] = { -1, -1 }, out[2], err[2], r;
	pid_t		 pid;

	if (exec.shutdown) {
		*cause = xstrdup("shutting down");
		return (NULL);
	}
	if (spec->stdin_max > 0 && exec_pipe(in, 1, cause) != 0)
		return (NULL);
	if (exec_pipe(out, 0, cause) != 0) {
		exec_close_pair(in);
		return (NULL);
	}
	if (exec_pipe(err, 0, cause) != 0) {
		exec_close_pair(in);
		exec_close_pair(out);
		return (NULL);
	}
	r = exec_spawn(spec, in[0], out[1], err[1], &pid);
	if (in[0] != -1)
		close(in[0]);
	close(out[1]);
	close(err[1]);
	if (r != 0) {
		xasprintf(cause, "%s: %s", spec->path, strerror(r));
		if (in[1] != -1)
			close(in[1]);
		close(out[0]);
		close(err[0]);
		return (NULL);
	}

	job = xcalloc(1, sizeof *job);
	job->state = EXEC_RUNNING;
	job->pid = pid;
	job->name = xstrdup(spec->name != NULL ? spec->name : spec->path);
	job->out_fd = out[0];
	job->err_fd = err[0];
	job->in_fd = in[1];
	job->wmax = spec->stdin_max;
	job->err_cb = spec->err_cb;
	if (job->in_fd != -1)
		job->in_ev = event_new(exec.base, job->in_fd, EV_WRITE |
		    EV_PERSIST, exec_in_cb, job);
	job->buf = xmalloc(EXEC_LINE_MAX);
	job->line_cb = line_cb;
	job->done_cb = done_cb;
	job->arg = arg;
	job->out_ev = event_new(exec.base, job->out_fd, EV_READ | EV_PERSIST,
	    exec_out_cb, job);
	job->err_ev = event_new(exec.base, job->err_fd, EV_READ | EV_PERSIST,
	    exec_err_cb, job);
	job->wake_ev = event_new(exec.base, -1, 0, exec_wake_cb, job);
	job->kill_ev = evtimer_new(exec.base, exec_kill_cb, job);
	job->linger_ev = evtimer_new(exec.base, exec_linger_cb, job);
	event_add(job->out_ev, NULL);
	event_add(job->err_ev, NULL);
	TAILQ_INSERT_TAIL(&exec.jobs, job, entry);
	exec.count++;
	log_debug("exec pid=%ld (%s): started %s", (long)pid, job->name,
	    spec->path);
	return (job);
}

pid_t
exec_pid(const struct exec_job *job)
{
	return (job->pid);
}

void
exec_pause(struct exec_job *job)
{
	job->paused = 1;
}

void
exec_resume(struct exec_job *job)
{
	if (!job->paused)
		return;
	job->paused = 0;
	exec_wake(job);
}

/* The output is no longer wanted: end the program, and its group. */
void
exec_kill(struct exec_job *job)
{
	struct timeval	tv = { EXEC_KILL_GRACE, 0 };

	if (job->state == EXEC_KILLING || job->state == EXEC_DONE)
		return;
	job->killed = 1;
	exec_close_stdin(job);
	exec_close_out(job);
	exec_close_err(job);
	job->len = 0;
	if (!job->reaped) {
		exec_signal(job, SIGTERM);
		evtimer_add(job->kill_ev, &tv);
	}
	exec_set_state(job, EXEC_KILLING);
	exec_wake(job);
}

static long long
exec_now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

/*
 * Shutdown: every program gets SIGTERM (most already have, as their calls
 * were cancelled), SIGKILL after the grace period, and is reaped; the wait
 * is bounded. The loop is not run meanwhile, so nothing new starts.
 */
void
exec_shutdown(void)
{
	struct exec_job		*job, *job1;
	struct timespec		 poll = { 0, EXEC_SHUTDOWN_POLL_MS * 1000000L };
	long long		 start, now;
	int			 sigkilled = 0;

	exec.shutdown = 1;
	TAILQ_FOREACH(job, &exec.jobs, entry)
		exec_kill(job);
	if (exec.count > 0)
		log_info("waiting for %u program%s to exit", exec.count,
		    exec.count == 1 ? "" : "s");

	start = exec_now_ms();
	for (;;) {
		exec_reap();
		TAILQ_FOREACH_SAFE(job, &exec.jobs, entry, job1)
			exec_job_update(job);
		if (TAILQ_EMPTY(&exec.jobs))
			break;
		now = exec_now_ms();
		if (!sigkilled && now - start >= EXEC_KILL_GRACE * 1000LL) {
			TAILQ_FOREACH(job, &exec.jobs, entry)
				exec_signal(job, SIGKILL);
			sigkilled = 1;
		}
		if (now - start >= EXEC_KILL_GRACE * 1000LL +
		    EXEC_SHUTDOWN_EXTRA_MS)
			break;
		nanosleep(&poll, NULL);
	}
	TAILQ_FOREACH_SAFE(job, &exec.jobs, entry, job1) {
		log_error("exec pid=%ld (%s): did not exit after SIGKILL, "
		    "left behind", (long)job->pid, job->name);
		job->reaped = 1;
		job->wstatus = SIGKILL;	/* as if killed by it */
		exec_finish(job);
	}

	if (exec.sigchld != NULL) {
		event_free(exec.sigchld);
		exec.sigchld = NULL;
	}
}

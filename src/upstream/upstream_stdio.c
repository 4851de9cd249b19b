/*
 * The stdio transport of an upstream (upstream_int.h): a program run
 * through exec.c (own process group, reaped through SIGCHLD, killed with
 * its group), our messages on its stdin and its on its stdout, one JSON
 * object per line of at most max_message; its stderr goes to the log a
 * line at a time, rate-limited. A run is the program's life: closing it
 * kills the program, and the run ends when it has been reaped.
 */
#include <sys/types.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "conf.h"
#include "exec.h"
#include "log.h"
#include "upstream_int.h"
#include "xmalloc.h"

/* Lines of stderr logged per upstream per interval; then a count. */
#define UPSTREAM_STDERR_LINES	20
#define UPSTREAM_STDERR_MS	10000

struct upstream_stdio {
	struct exec_job		*job;
	char			*name;
	char			*sid;
	long			 pid;
	size_t			 max;		/* max_message */
	int			 closed;	/* for good: nothing is read */

	char			*line;		/* a line being reassembled */
	size_t			 linelen;
	size_t			 linesize;

	uint64_t		 err_window_ms;
	u_int			 err_lines;
	u_int			 err_suppressed;

	const struct upstream_transport_cbs *cbs;
	void			*arg;
};

/*
 * A piece of a line of stdout: exec.c splits lines at EXEC_LINE_MAX, so
 * longer messages are put together here, up to max_message.
 */
static void
upstream_stdio_line_cb(const char *p, size_t len, int newline, void *arg)
{
	struct upstream_stdio	*s = arg;

	if (s->closed)
		return;
	if (s->linelen == 0 && newline) {
		s->cbs->message(p, len, 0, s->arg);
		return;
	}
	if (s->linelen + len > s->max) {
		s->linelen = 0;
		s->cbs->failed("it sent a message longer than max_message",
		    s->arg);
		return;
	}
	if (s->linelen + len > s->linesize) {
		s->linesize = s->linesize == 0 ? 2 * EXEC_LINE_MAX :
		    s->linesize;
		while (s->linesize < s->linelen + len)
			s->linesize *= 2;
		s->line = xrealloc(s->line, s->linesize);
	}
	memcpy(s->line + s->linelen, p, len);
	s->linelen += len;
	if (!newline && len == EXEC_LINE_MAX)
		return;		/* more of it comes */
	len = s->linelen;
	s->linelen = 0;
	s->cbs->message(s->line, len, 0, s->arg);
	if (s->linesize > 4 * EXEC_LINE_MAX) {
		free(s->line);
		s->line = NULL;
		s->linesize = 0;
	}
}

/* A line of stderr: to the log, at most so many per interval. */
static void
upstream_stdio_err_cb(const char *p, size_t len, void *arg)
{
	struct upstream_stdio	*s = arg;
	uint64_t		 now = clock_now_ms();
	char			*text;
	size_t			 i;

	if (now - s->err_window_ms >= UPSTREAM_STDERR_MS) {
		if (s->err_suppressed > 0)
			log_warn("upstream=%s session=%s pid=%ld: %u lines of "
			    "stderr not logged in the last %d s", s->name,
			    s->sid, s->pid, s->err_suppressed,
			    UPSTREAM_STDERR_MS / 1000);
		s->err_window_ms = now;
		s->err_lines = 0;
		s->err_suppressed = 0;
	}
	if (s->err_lines >= UPSTREAM_STDERR_LINES) {
		s->err_suppressed++;
		return;
	}
	s->err_lines++;
	text = xmalloc(len + 1);
	for (i = 0; i < len; i++)
		text[i] = ((u_char)p[i] < ' ' && p[i] != '\t') ? '?' : p[i];
	text[len] = '\0';
	log_info("upstream=%s session=%s pid=%ld stderr: %s", s->name,
	    s->sid, s->pid, text);
	free(text);
}

static void
upstream_stdio_free(struct upstream_stdio *s)
{
	free(s->line);
	free(s->name);
	free(s->sid);
	free(s);
}

/* The program has been reaped: the run is over. */
static void
upstream_stdio_done_cb(const struct exec_result *res, void *arg)
{
	struct upstream_stdio	*s = arg;
	char			*how;

	if (res->exited)
		xasprintf(&how, "exited with status %d", res->status);
	else
		xasprintf(&how, "killed by signal %d", res->status);
	s->job = NULL;
	s->cbs->ended(res->killed, how, s->arg);
	free(how);
	upstream_stdio_free(s);
}

static long
upstream_stdio_pid(void *arg)
{
	struct upstream_stdio	*s = arg;

	return (s->pid);
}

static const char *
upstream_stdio_send(void *arg, const char *line, size_t len, int64_t id,
    struct auth_principal *who)
{
	struct upstream_stdio	*s = arg;

	if (exec_write(s->job, line, len) != 0)
		return ("it does not read its input (stdin full or closed)");
	return (NULL);
}

/* The program is killed with its group; the run ends when it is reaped. */
static int
upstream_stdio_close(void *arg, int stopping)
{
	struct upstream_stdio	*s = arg;

	if (stopping) {
		s->closed = 1;
		exec_close_stdin(s->job);
	}
	exec_kill(s->job);
	return (0);
}

static const struct upstream_transport upstream_stdio_ops = {
	.broken = "killing it",
	.pid = upstream_stdio_pid,
	.send = upstream_stdio_send,
	.close = upstream_stdio_close,
};

/* The program's environment: what the SDKs pass their stdio servers. */
static char **
upstream_stdio_env(const struct conf_upstream *def)
{
	static const char *const inherit[] = {
		"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"
	};
	char		**env;
	const char	 *v;
	size_t		  n = 0, i, j, len;
	int		  set;

	env = xcalloc(def->nenv + sizeof inherit / sizeof inherit[0] + 1,
	    sizeof *env);
	for (i = 0; i < def->nenv; i++)
		env[n++] = xstrdup(def->env[i]);
	for (i = 0; i < sizeof inherit / sizeof inherit[0]; i++) {
		len = strlen(inherit[i]);
		set = 0;
		for (j = 0; j < def->nenv; j++) {
			if (strncmp(def->env[j], inherit[i], len) == 0 &&
			    def->env[j][len] == '=')
				set = 1;
		}
		if (!set && (v = getenv(inherit[i])) != NULL)
			xasprintf(&env[n++], "%s=%s", inherit[i], v);
	}
	env[n] = NULL;
	return (env);
}

void *
upstream_stdio_open(const struct conf_upstream *def, const char *name,
    const char *sid, const struct upstream_transport_cbs *cbs, void *arg,
    const struct upstream_transport **ops, char **cause)
{
	struct upstream_stdio	*s;
	struct exec_spec	 spec;
	char			**env, *why = NULL;

	s = xcalloc(1, sizeof *s);
	s->name = xstrdup(name);
	s->sid = xstrdup(sid);
	s->max = (size_t)def->max_line;
	s->cbs = cbs;
	s->arg = arg;
	memset(&spec, 0, sizeof spec);
	env = upstream_stdio_env(def);
	spec.path = def->program;
	spec.argv = def->argv;
	spec.envp = env;
	spec.cwd = def->cwd;
	spec.name = name;
	spec.stdin_max = (size_t)def->max_line * 2;
	spec.err_cb = upstream_stdio_err_cb;
	s->job = exec_start(&spec, upstream_stdio_line_cb,
	    upstream_stdio_done_cb, s, &why);
	xfree_words(env);
	if (s->job == NULL) {
		xasprintf(cause, "cannot run %s: %s", def->program, why);
		free(why);
		upstream_stdio_free(s);
		return (NULL);
	}
	s->pid = (long)exec_pid(s->job);
	s->err_window_ms = clock_now_ms();
	*ops = &upstream_stdio_ops;
	return (s);
}

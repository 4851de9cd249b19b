/*
 * Logging, one line per event, to stderr (under systemd the journal, in a
 * container the runtime's log) or to a file reopened on request (log
 * rotation). A line is formatted whole and written with one write(2), so
 * lines never interleave and a full disk loses lines, not the process.
 * Text lines are "TIME LEVEL MESSAGE", control characters in the message
 * escaped (log_text_escape); JSON lines are one object each, for
 * collectors, with the message escaped (bytes that are not UTF-8 as \u00XX,
 * so the line stays valid JSON whatever a client sent). libevent's
 * internal warnings are bridged in so they are not lost on a daemon
 * without a terminal.
 *
 * A line that something outside the process can cause again and again (a
 * client's bad cursor, a full descriptor table, a stalled event log) goes
 * through log_limited() with a cause: each cause gets LOG_LIMIT_LINES lines
 * per LOG_LIMIT_INTERVAL_MS, and the lines it lost are counted and said in
 * one summary line when its interval is over. Causes are string literals
 * in the code, so the table of them is small and never grows with input.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "clock.h"
#include "log.h"
#include "utf8.h"
#include "xmalloc.h"

/* A message longer than this is cut (and says so). */
#define LOG_MSG_MAX		4096
/* Its line: time, level, the message escaped (6 bytes a byte at worst),
 * trace ids. */
#define LOG_LINE_MAX		(256 + 6 * LOG_MSG_MAX)

/* Distinct causes tracked; more share the last slot. */
#define LOG_LIMIT_CAUSES	64

struct log_limit {
	const char	*cause;
	uint64_t	 start_ms;	/* of the current interval */
	unsigned int	 lines;		/* written in it */
	unsigned long	 suppressed;	/* lost in it */
	enum log_level	 level;		/* the highest of those lost */
};

enum log_level log_level = LOG_LEVEL_INFO;
int (*log_trace_ids)(char *, char *);

static int		 log_fd = STDERR_FILENO;
static char		*log_path;	/* NULL: stderr */
static int		 log_json;

static struct log_limit	log_limits[LOG_LIMIT_CAUSES];
static size_t		log_nlimits;

static void	log_vwrite(enum log_level, const char *, va_list);

static const char *log_level_names[LOG_LEVEL_MAX] = {
	"debug", "info", "warn", "error"
};

static void
log_event_cb(int severity, const char *msg)
{
	enum log_level	level;

	switch (severity) {
	case EVENT_LOG_DEBUG:
		level = LOG_LEVEL_DEBUG;
		break;
	case EVENT_LOG_MSG:
		level = LOG_LEVEL_INFO;
		break;
	case EVENT_LOG_WARN:
		level = LOG_LEVEL_WARN;
		break;
	default:
		level = LOG_LEVEL_ERROR;
		break;
	}
	/* One cause for all of libevent: it speaks for sockets we accept. */
	log_limited(level, "libevent", "libevent: %s", msg);
}

void
log_init(enum log_level level)
{
	log_level = level;
	event_set_log_callback(log_event_cb);
}

int
log_level_parse(const char *name, enum log_level *level)
{
	int	i;

	for (i = 0; i < LOG_LEVEL_MAX; i++) {
		if (strcmp(name, log_level_names[i]) == 0) {
			*level = i;
			return (0);
		}
	}
	return (-1);
}

const char *
log_level_name(enum log_level level)
{
	if (level >= LOG_LEVEL_MAX)
		return ("unknown");
	return (log_level_names[level]);
}

/*
 * Where lines go from now on: path (appended to, created 0640) or stderr
 * (path NULL), as text or JSON. -1 with the reason when path cannot be
 * opened; lines keep going where they went.
 */
int
log_open(const char *path, int json, char **cause)
{
	int	fd = STDERR_FILENO;

	if (path != NULL && (fd = open(path, O_WRONLY | O_APPEND | O_CREAT |
	    O_CLOEXEC | O_NOCTTY, 0640)) == -1) {
		xasprintf(cause, "log_file %s: %s", path, strerror(errno));
		return (-1);
	}
	if (log_fd != STDERR_FILENO)
		close(log_fd);
	free(log_path);
	log_path = path != NULL ? xstrdup(path) : NULL;
	log_fd = fd;
	log_json = json;
	return (0);
}

/*
 * After the file was moved away (rotation): the same path again. Lines go
 * on to the old file if the path cannot be opened now.
 */
void
log_reopen(void)
{
	char	*path, *cause;

	if (log_path == NULL)
		return;
	path = xstrdup(log_path);
	if (log_open(path, log_json, &cause) == 0)
		log_info("log file %s reopened", path);
	else {
		log_error("%s; logging on to the file open before", cause);
		free(cause);
	}
	free(path);
}

/* msg as the inside of a JSON string, at p (room for 6 bytes a byte). */
static size_t
log_json_escape(char *p, const char *msg, size_t len)
{
	static const char	 hex[] = "0123456789abcdef";
	char			*start = p;
	unsigned char		 c;
	size_t			 i, n;

	for (i = 0; i < len; i += n) {
		c = (unsigned char)msg[i];
		n = 1;
		if (c == '"' || c == '\\') {
			*p++ = '\\';
			*p++ = (char)c;
		} else if (c == '\n') {
			*p++ = '\\';
			*p++ = 'n';
		} else if (c == '\t') {
			*p++ = '\\';
			*p++ = 't';
		} else if (c < 0x20 || c == 0x7f ||
		    (c >= 0x80 && utf8_sequence(msg + i, len - i, 0) == 0)) {
			memcpy(p, "\\u00", 4);
			p[4] = hex[c >> 4];
			p[5] = hex[c & 0xf];
			p += 6;
		} else {
			n = utf8_sequence(msg + i, len - i, 0);
			memcpy(p, msg + i, n);
			p += n;
		}
	}
	return ((size_t)(p - start));
}

/*
 * msg for a text line, at p (room for 6 bytes a byte): what peers send
 * reaches log lines (names, messages, URLs), and a newline or an escape
 * sequence in one would forge a line or drive the terminal reading it.
 * So control characters (C0, DEL, C1) become \n, \r, \t or \xHH (C1 as
 * \u00HH), as do bytes that are not UTF-8; a backslash stays one, so a
 * line is never split, though "\n" may also be what a peer sent.
 */
static size_t
log_text_escape(char *p, const char *msg, size_t len)
{
	static const char	 hex[] = "0123456789abcdef";
	char			*start = p;
	unsigned char		 c;
	size_t			 i, n;

	for (i = 0; i < len; i += n) {
		c = (unsigned char)msg[i];
		n = c < 0x80 ? 1 : utf8_sequence(msg + i, len - i, 0);
		if (c == '\n' || c == '\r' || c == '\t') {
			*p++ = '\\';
			*p++ = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
		} else if (c < 0x20 || c == 0x7f || n == 0) {
			memcpy(p, "\\x", 2);
			p[2] = hex[c >> 4];
			p[3] = hex[c & 0xf];
			p += 4;
			n = 1;
		} else if (n == 2 && c == 0xc2 &&
		    (unsigned char)msg[i + 1] <= 0x9f) {
			memcpy(p, "\\u00", 4);
			p[4] = hex[(unsigned char)msg[i + 1] >> 4];
			p[5] = hex[msg[i + 1] & 0xf];
			p += 6;
		} else {
			memcpy(p, msg + i, n);
			p += n;
		}
	}
	return ((size_t)(p - start));
}

static void
log_vwrite(enum log_level level, const char *fmt, va_list ap)
{
	static char	 line[LOG_LINE_MAX];
	char		 msg[LOG_MSG_MAX], stamp[40], tid[33], sid[17];
	struct timespec	 ts;
	struct tm	 tm;
	size_t		 len, mlen;
	int		 n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	len = strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(stamp + len, sizeof stamp - len, ".%03ldZ",
	    ts.tv_nsec / 1000000);
	if ((n = vsnprintf(msg, sizeof msg, fmt, ap)) < 0)
		n = 0;
	if ((size_t)n >= sizeof msg) {
		mlen = sizeof msg - 1;
		memcpy(msg + mlen - 5, "[...]", 5);
	} else
		mlen = (size_t)n;
	if (log_json) {
		len = (size_t)snprintf(line, sizeof line,
		    "{\"time\":\"%s\",\"level\":\"%s\",\"msg\":\"", stamp,
		    log_level_name(level));
		len += log_json_escape(line + len, msg, mlen);
		if (log_trace_ids != NULL && log_trace_ids(tid, sid))
			len += (size_t)snprintf(line + len, sizeof line - len,
			    "\",\"trace_id\":\"%s\",\"span_id\":\"%s", tid,
			    sid);
		memcpy(line + len, "\"}\n", 3);
		len += 3;
	} else {
		len = (size_t)snprintf(line, sizeof line, "%s %s ", stamp,
		    log_level_name(level));
		len += log_text_escape(line + len, msg, mlen);
		line[len++] = '\n';
	}
	/* A short or failed write loses this line; nothing else can be done
	   with it, and the daemon must not stop over it. */
	while (write(log_fd, line, len) == -1 && errno == EINTR)
		;
}

void
log_write(enum log_level level, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vwrite(level, fmt, ap);
	va_end(ap);
}

static struct log_limit *
log_limit_find(const char *cause)
{
	struct log_limit	*l;
	size_t			 i;

	for (i = 0; i < log_nlimits; i++) {
		if (strcmp(log_limits[i].cause, cause) == 0)
			return (&log_limits[i]);
	}
	if (log_nlimits == LOG_LIMIT_CAUSES)
		return (&log_limits[LOG_LIMIT_CAUSES - 1]);
	l = &log_limits[log_nlimits++];
	memset(l, 0, sizeof *l);
	l->cause = cause;
	return (l);
}

/* Ends l's interval if it is over, saying what it suppressed. */
static void
log_limit_roll(struct log_limit *l, uint64_t now)
{
	if (now - l->start_ms < LOG_LIMIT_INTERVAL_MS)
		return;
	if (l->suppressed > 0)
		log_write(l->level, "log: %lu more \"%s\" line%s suppressed "
		    "in %d s (at most %d per interval)", l->suppressed,
		    l->cause, l->suppressed == 1 ? "" : "s",
		    LOG_LIMIT_INTERVAL_MS / 1000, LOG_LIMIT_LINES);
	l->start_ms = now;
	l->lines = 0;
	l->suppressed = 0;
}

/*
 * Whether a line of `cause` may be written at time now (ms, monotonic);
 * if not, it is counted for the summary. log_limited() asks with the
 * clock; tests ask with their own.
 */
int
log_limit_pass(const char *cause, enum log_level level, uint64_t now)
{
	struct log_limit	*l = log_limit_find(cause);

	if (l->lines == 0 && l->suppressed == 0)
		l->start_ms = now;	/* a quiet cause starts afresh */
	log_limit_roll(l, now);
	if (l->lines < LOG_LIMIT_LINES) {
		l->lines++;
		return (1);
	}
	if (l->suppressed == 0 || level > l->level)
		l->level = level;
	l->suppressed++;
	return (0);
}

/* The summaries of causes whose interval ended in silence (the cron). */
void
log_limit_flush(uint64_t now)
{
	size_t	i;

	for (i = 0; i < log_nlimits; i++) {
		if (log_limits[i].suppressed > 0)
			log_limit_roll(&log_limits[i], now);
	}
}

void
log_limited(enum log_level level, const char *cause, const char *fmt, ...)
{
	va_list	ap;

	if (level < log_level || !log_limit_pass(cause, level, clock_now_ms()))
		return;
	va_start(ap, fmt);
	log_vwrite(level, fmt, ap);
	va_end(ap);
}

void
log_cron(void)
{
	log_limit_flush(clock_now_ms());
}

/* At exit: what is still suppressed is said now, as if every interval
 * were over. */
void
log_limit_end(void)
{
	log_limit_flush(UINT64_MAX);
}

void
fatalx(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_ERROR, fmt, ap);
	va_end(ap);
	exit(1);
}

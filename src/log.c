/*
 * Logging to stderr, one line per event. Under systemd stderr goes to the
 * journal, which adds its own timestamps; the level prefix lets journald and
 * humans filter alike. libevent's internal warnings are bridged in so they
 * are not lost on a daemon without a terminal.
 *
 * A line that something outside the process can cause again and again (a
 * client's bad cursor, a full descriptor table, a stalled event log) goes
 * through log_limited() with a cause: each cause gets LOG_LIMIT_LINES lines
 * per LOG_LIMIT_INTERVAL_MS, and the lines it lost are counted and said in
 * one summary line when its interval is over. Causes are string literals
 * in the code, so the table of them is small and never grows with input.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "clock.h"
#include "log.h"

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

static void
log_vwrite(enum log_level level, const char *fmt, va_list ap)
{
	struct timespec	ts;
	struct tm	tm;
	char		stamp[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
	flockfile(stderr);
	fprintf(stderr, "%s.%03ldZ %s ", stamp, ts.tv_nsec / 1000000,
	    log_level_name(level));
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	funlockfile(stderr);
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

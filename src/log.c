/*
 * Logging to stderr, one line per event. Under systemd stderr goes to the
 * journal, which adds its own timestamps; the level prefix lets journald and
 * humans filter alike. libevent's internal warnings are bridged in so they
 * are not lost on a daemon without a terminal.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "log.h"

enum log_level log_level = LOG_LEVEL_INFO;

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
	if (level >= log_level)
		log_write(level, "libevent: %s", msg);
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

void
fatalx(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_ERROR, fmt, ap);
	va_end(ap);
	exit(1);
}

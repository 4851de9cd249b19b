/*
 * Event-log statuses by name: for log lines, and the words the redis
 * script answers with.
 */
#include "eventlog_status.h"

static const char *eventlog_status_names[EVENTLOG_STATUS_MAX] = {
	"ok", "conflict", "unavailable", "not-found", "trimmed", "expired",
	"ahead", "ended", "cancelled", "full"
};

const char *
eventlog_status_name(enum eventlog_status status)
{
	if (status >= EVENTLOG_STATUS_MAX)
		return ("unknown");
	return (eventlog_status_names[status]);
}

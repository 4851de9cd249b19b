/*
 * What an event-log operation answers. A leaf of its own: the backends
 * speak these names (the redis script answers them as text), and the
 * event-log API that dispatches to the backends must not be needed to
 * read them.
 */
#ifndef MCPD_EVENTLOG_STATUS_H
#define MCPD_EVENTLOG_STATUS_H

enum eventlog_status {
	EVENTLOG_OK,
	EVENTLOG_CONFLICT,	/* compare failed: log head is not expected */
	EVENTLOG_UNAVAILABLE,	/* backend down or timed out */
	EVENTLOG_NOT_FOUND,	/* no such session, or no such stream */
	EVENTLOG_TRIMMED,	/* read: requested entry fell out of retention */
	EVENTLOG_EXPIRED,	/* read: stream existed and its TTL ended */
	EVENTLOG_AHEAD,		/* read: requested entry beyond the head */
	EVENTLOG_ENDED,		/* append: stream already has its last entry */
	EVENTLOG_CANCELLED,	/* the log is shutting down */
	EVENTLOG_FULL,		/* task: no room for another record */
	EVENTLOG_STATUS_MAX
};

/* "ok", "conflict", "not-found"...; "unknown" past the last. */
const char	*eventlog_status_name(enum eventlog_status);

#endif

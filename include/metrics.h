/* Process-wide counters, logged by the cron and shown on /healthz. */
#ifndef MCPD_METRICS_H
#define MCPD_METRICS_H

#include <stdint.h>

#include <cjson/cJSON.h>

struct metrics {
	uint64_t	producers_paused;	/* times a producer waited */
	uint64_t	slow_consumers_closed;	/* backpressure-disconnects */
	uint64_t	bytes_queued;		/* unsent SSE bytes, last cron */
	uint64_t	events_committed;
	uint64_t	events_written;
};

extern struct metrics metrics;

void	 metrics_log_changes(void);
cJSON	*metrics_json(void);

#endif

/*
 * Process-wide counters. They are logged when they change (at most once a
 * minute, from the cron) and shown on /healthz, so an operator sees
 * backpressure at work without a metrics stack.
 */
#include <string.h>

#include "clock.h"
#include "log.h"
#include "metrics.h"

#define METRICS_LOG_INTERVAL_MS	60000

struct metrics metrics;

void
metrics_log_changes(void)
{
	static struct metrics	last;
	static uint64_t		last_ms;
	uint64_t		now = clock_now_ms();

	if (now - last_ms < METRICS_LOG_INTERVAL_MS ||
	    (last.producers_paused == metrics.producers_paused &&
	    last.slow_consumers_closed == metrics.slow_consumers_closed &&
	    last.bytes_queued == metrics.bytes_queued))
		return;
	log_info("metrics: producers_paused=%llu slow_consumers_closed=%llu "
	    "bytes_queued=%llu events_committed=%llu events_written=%llu",
	    (unsigned long long)metrics.producers_paused,
	    (unsigned long long)metrics.slow_consumers_closed,
	    (unsigned long long)metrics.bytes_queued,
	    (unsigned long long)metrics.events_committed,
	    (unsigned long long)metrics.events_written);
	memcpy(&last, &metrics, sizeof last);
	last_ms = now;
}

cJSON *
metrics_json(void)
{
	cJSON	*m = cJSON_CreateObject();

	cJSON_AddNumberToObject(m, "producers_paused",
	    (double)metrics.producers_paused);
	cJSON_AddNumberToObject(m, "slow_consumers_closed",
	    (double)metrics.slow_consumers_closed);
	cJSON_AddNumberToObject(m, "bytes_queued",
	    (double)metrics.bytes_queued);
	cJSON_AddNumberToObject(m, "events_committed",
	    (double)metrics.events_committed);
	cJSON_AddNumberToObject(m, "events_written",
	    (double)metrics.events_written);
	return (m);
}

/*
 * Process-wide counters. They are logged when they change (at most once a
 * minute, from the cron) and shown on /healthz, so an operator sees
 * backpressure at work without a metrics stack; prometheus.c exposes them
 * all on /metrics.
 *
 * Every table here has a fixed size: a label value (an HTTP status, a
 * tool's name) gets a slot of its own while there is one, and shares the
 * last one ("other") after, so no client can grow them.
 */
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "metrics.h"

#define METRICS_LOG_INTERVAL_MS	60000

struct metrics metrics;

/* Event-log appends: Redis on loopback answers in well under 1 ms. */
const double metrics_append_bounds[METRICS_BUCKETS] = {
	0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
	0.5, 1
};
/* Tool calls: an echo in microseconds, a program for up to minutes. */
const double metrics_tool_bounds[METRICS_BUCKETS] = {
	0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60
};

const char *const metrics_method_names[METRICS_METHODS] = {
	"GET", "POST", "DELETE", "other"
};

const char *const metrics_outcome_names[METRICS_OUTCOMES] = {
	"ok", "tool_error", "rpc_error", "cancelled"
};

void
metrics_observe(struct metrics_histogram *h, const double *bounds,
    uint64_t usec)
{
	double	seconds = (double)usec / 1e6;
	int	i;

	for (i = 0; i < METRICS_BUCKETS && seconds > bounds[i]; i++)
		;
	h->buckets[i]++;
	h->count++;
	h->sum += seconds;
}

/* An append the log answered after usec microseconds; ok: committed. */
void
metrics_append(uint64_t usec, int ok)
{
	metrics.appends++;
	if (!ok)
		metrics.append_failures++;
	metrics_observe(&metrics.append_duration, metrics_append_bounds, usec);
}

/* A response started with this status. */
void
metrics_http(enum metrics_method method, int status)
{
	int	i;

	for (i = 0; i < METRICS_STATUSES - 1; i++) {
		if (metrics.http_status[i] == status)
			break;
		if (metrics.http_status[i] == 0) {
			metrics.http_status[i] = status;
			break;
		}
	}
	if (i == METRICS_STATUSES - 1)
		metrics.http_status[i] = -1;	/* "other" */
	metrics.http[method][i]++;
}

/* A tool call ended after usec microseconds. */
void
metrics_tool_call(const char *name, enum metrics_outcome outcome,
    uint64_t usec)
{
	struct metrics_tool	*t;
	size_t			 i;

	for (i = 0; i < metrics.ntools; i++) {
		if (strcmp(metrics.tools[i].name, name) == 0)
			break;
	}
	if (i == metrics.ntools) {
		if (metrics.ntools < METRICS_TOOLS) {
			snprintf(metrics.tools[i].name,
			    sizeof metrics.tools[i].name, "%s", name);
			metrics.ntools++;
		} else {
			i = METRICS_TOOLS;
			strlcpy(metrics.tools[i].name, "other",
			    sizeof metrics.tools[i].name);
		}
	}
	t = &metrics.tools[i];
	t->outcomes[outcome]++;
	metrics_observe(&t->duration, metrics_tool_bounds, usec);
}

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
	cJSON_AddNumberToObject(m, "credential_tokens",
	    (double)metrics.credential_tokens);
	cJSON_AddNumberToObject(m, "credential_failures",
	    (double)metrics.credential_failures);
	return (m);
}

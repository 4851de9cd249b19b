/*
 * Process-wide counters and histograms: logged by the cron, shown on
 * /healthz and exposed for Prometheus on /metrics (prometheus.c). Only
 * plain stores here; what is counted is decided where it happens.
 */
#ifndef MCPD_METRICS_H
#define MCPD_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* Upper bounds of a histogram's buckets, in seconds; +Inf follows. */
#define METRICS_BUCKETS		12

struct metrics_histogram {
	uint64_t	buckets[METRICS_BUCKETS + 1];	/* not cumulative */
	uint64_t	count;
	double		sum;		/* seconds */
};

/* HTTP methods and statuses counted apart; the rest share "other". */
enum metrics_method {
	METRICS_GET,
	METRICS_POST,
	METRICS_DELETE,
	METRICS_OTHER_METHOD,
	METRICS_METHODS
};
#define METRICS_STATUSES	24

/* How a tool call ended. */
enum metrics_outcome {
	METRICS_TOOL_OK,		/* a result */
	METRICS_TOOL_ERROR,		/* a result with isError */
	METRICS_TOOL_FAILED,		/* a JSON-RPC error */
	METRICS_TOOL_CANCELLED,		/* cancelled, or its session went */
	METRICS_OUTCOMES
};
/* Tools counted apart (a name is a label); the rest share "other". */
#define METRICS_TOOLS		128

struct metrics_tool {
	char				 name[129];
	uint64_t			 outcomes[METRICS_OUTCOMES];
	struct metrics_histogram	 duration;
};

struct metrics {
	uint64_t	producers_paused;	/* times a producer waited */
	uint64_t	slow_consumers_closed;	/* backpressure-disconnects */
	uint64_t	bytes_queued;		/* unsent SSE bytes, last cron */
	uint64_t	events_committed;
	uint64_t	events_written;
	uint64_t	streams;		/* stream objects alive */

	uint64_t	appends;		/* event-log appends answered */
	uint64_t	append_failures;	/* of which not committed */
	struct metrics_histogram append_duration;

	int		http_status[METRICS_STATUSES];	/* 0: free slot */
	uint64_t	http[METRICS_METHODS][METRICS_STATUSES];

	struct metrics_tool tools[METRICS_TOOLS + 1];	/* + "other" */
	size_t		ntools;

	uint64_t	credential_tokens;	/* got from token endpoints */
	uint64_t	credential_failures;	/* token requests that failed */
};

extern struct metrics metrics;
extern const double metrics_append_bounds[METRICS_BUCKETS];
extern const double metrics_tool_bounds[METRICS_BUCKETS];
extern const char *const metrics_method_names[METRICS_METHODS];
extern const char *const metrics_outcome_names[METRICS_OUTCOMES];

void	 metrics_observe(struct metrics_histogram *, const double *,
	     uint64_t);
void	 metrics_append(uint64_t, int);
void	 metrics_http(enum metrics_method, int);
void	 metrics_tool_call(const char *, enum metrics_outcome, uint64_t);
void	 metrics_log_changes(void);
cJSON	*metrics_json(void);

#endif

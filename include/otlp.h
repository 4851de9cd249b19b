/*
 * The OTLP/HTTP exporter of finished spans (JSON encoding): spans are
 * queued in batches, each batch POSTed as one ExportTraceServiceRequest
 * with the resource's attributes and the instrumentation scope, one
 * request at a time, through http_client.c. It knows nothing of what the
 * spans say (trace.c encodes them, the layers name them).
 *
 * The queue holds at most queue_max spans; a span pushed past it is
 * dropped and counted, never waited for, so a receiver that is down or
 * slow costs memory up to that bound and nothing else. A batch leaves
 * when it holds batch_max spans or interval_ms after its first span.
 * A request the receiver answers 429, 502, 503 or 504, or that gets no
 * answer, is sent again after a back-off (doubling from
 * OTLP_BACKOFF_MIN_MS, or the Retry-After it was given), up to
 * OTLP_ATTEMPTS attempts; any other answer than 2xx drops the batch, as
 * OTLP says (a partial success is not sent again either).
 */
#ifndef MCPD_OTLP_H
#define MCPD_OTLP_H

#include <stddef.h>
#include <stdint.h>

struct event_base;

#define OTLP_ATTEMPTS		5
#define OTLP_BACKOFF_MIN_MS	250
#define OTLP_BACKOFF_MAX_MS	30000

struct otlp_settings {
	const char		*url;		/* .../v1/traces */
	char *const		*headers;	/* "Name: value" each */
	size_t			 nheaders;
	char *const		*resource;	/* "key=value" each */
	size_t			 nresource;
	const char		*scope_name;
	const char		*scope_version;
	size_t			 queue_max;	/* spans */
	size_t			 batch_max;	/* spans a request */
	int			 interval_ms;
	int			 timeout_ms;	/* a request */
};

struct otlp_stats {
	uint64_t	exported;	/* spans the receiver took */
	uint64_t	dropped_full;	/* pushed past queue_max */
	uint64_t	dropped_failed;	/* their batch was not taken */
	uint64_t	rejected;	/* a partial success refused them */
	uint64_t	requests_ok;
	uint64_t	requests_failed;	/* each failed attempt */
	size_t		queued;		/* spans waiting, in flight */
	size_t		queued_bytes;
};

/*
 * Starts, or takes new settings (copied; a reload's): NULL stops
 * exporting, dropping what is queued (counted).
 */
void		otlp_configure(struct event_base *,
		    const struct otlp_settings *);
/* A span in the OTLP/JSON mapping (copied): 0, or -1 when dropped. */
int		otlp_push(const char *, size_t);
/* Sends what is queued now, each batch once (shutdown). */
void		otlp_flush(void);
/* Whether something is queued or in flight. */
int		otlp_busy(void);
void		otlp_get_stats(struct otlp_stats *);
/* Ends the request in flight and frees the queue (counted as dropped). */
void		otlp_shutdown(void);

#endif

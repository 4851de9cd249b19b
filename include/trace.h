/*
 * Tracing: W3C trace contexts and OpenTelemetry spans, knowing nothing of
 * MCP (the layers that own an operation name its span and its attributes).
 * A finished span that was sampled is encoded in the OTLP/JSON mapping and
 * handed to the exporter (otlp.c); one that was not is only a context to
 * pass on.
 *
 * Every function takes NULL for a span and does nothing with it: that is
 * what trace_start returns while tracing is off. Sampling is parent-based:
 * a span with a parent has the parent's decision (a sampled parent from a
 * client is honoured), a root is sampled when the low 56 bits of its
 * random trace id reach the threshold of the ratio, so every instance that
 * sees the same trace id decides alike. A root that is not sampled is the
 * one static non-recording span (no allocation, no formatting: the cost of
 * ratio 0), and its children are that span too.
 *
 * A span has one owner, who ends it once (trace_end); a child holds a copy
 * of its parent's context, never a pointer to the parent, so the parent
 * may end first. The current span (trace_enter, trace_leave) is what the
 * code running now works for: the parent of what it starts without one at
 * hand, and the trace_id and span_id of the log lines it writes.
 */
#ifndef MCPD_TRACE_H
#define MCPD_TRACE_H

#include <stddef.h>
#include <stdint.h>

/* "00-" trace-id "-" parent-id "-" flags, and its NUL. */
#define TRACE_PARENT_LEN	55
/* The longest tracestate passed on (W3C: at least 512). */
#define TRACE_STATE_MAX		512

#define TRACE_FLAG_SAMPLED	0x01
#define TRACE_FLAG_RANDOM	0x02

/* OTLP's span kinds. */
enum trace_kind {
	TRACE_INTERNAL = 1,
	TRACE_SERVER = 2,
	TRACE_CLIENT = 3
};

/* What a context holds. */
enum trace_ctx_state {
	TRACE_CTX_NONE,		/* nothing: a span under it is a root */
	TRACE_CTX_IDS,		/* trace and span ids, and the flags */
	TRACE_CTX_DROPPED	/* a root not sampled: neither are children */
};

/* A span's context, small enough to be copied by value. */
struct trace_ctx {
	uint8_t		trace_id[16];
	uint8_t		span_id[8];
	uint8_t		flags;		/* W3C trace flags */
	uint8_t		state;		/* enum trace_ctx_state */
	uint8_t		remote;		/* came from a peer */
};

struct trace_span;

/* Whether tracing is on (an exporter is configured); read it, do not set. */
extern int	 trace_enabled;

/* On or off, and the ratio of roots sampled (0 to 1). */
void		 trace_configure(int, double);
/* Whether some roots are sampled (the ratio is not 0). */
int		 trace_sampling(void);

/*
 * A W3C traceparent header's value as a remote context: 0, or -1 when it
 * is not one (the whole header is then ignored, as W3C says).
 */
int		 trace_parse(const char *, struct trace_ctx *);
/* Whether a tracestate value may be passed on (W3C's list, bounded). */
int		 trace_state_ok(const char *);
/* ctx as a traceparent (TRACE_PARENT_LEN + 1 bytes); -1 without ids. */
int		 trace_format(const struct trace_ctx *, char *);
/* The ids in lowercase hex, for log lines (33 and 17 bytes). */
void		 trace_hex(const struct trace_ctx *, char *, char *);

/*
 * A span named name (copied, cut at 127 bytes) under parent (NULL or no
 * ids: a root), whose tracestate was state (NULL: none; passed on by the
 * span and its children). NULL while tracing is off.
 */
struct trace_span *trace_start(const char *, enum trace_kind,
		     const struct trace_ctx *, const char *);
/* The same under a parent span (NULL: a root, unless tracing is off). */
struct trace_span *trace_child(const char *, enum trace_kind,
		     const struct trace_span *);
/* Ends the span: exported if it was sampled; it is gone afterwards. */
void		 trace_end(struct trace_span *);

int		 trace_recording(const struct trace_span *);
/* Its context (NULL for NULL), valid while the span is. */
const struct trace_ctx *trace_span_ctx(const struct trace_span *);
const char	*trace_span_state(const struct trace_span *);
/* Its traceparent (TRACE_PARENT_LEN + 1 bytes); -1 if it has none. */
int		 trace_traceparent(const struct trace_span *, char *);

void		 trace_rename(struct trace_span *, const char *);
void		 trace_attr_str(struct trace_span *, const char *,
		     const char *);
void		 trace_attr_strn(struct trace_span *, const char *,
		     const char *, size_t);
void		 trace_attr_int(struct trace_span *, const char *, int64_t);
void		 trace_attr_bool(struct trace_span *, const char *, int);
/* error.type, and the ERROR status with its message (NULL: none). */
void		 trace_error(struct trace_span *, const char *,
		     const char *);
/* A link to ctx (one with ids; at most TRACE_LINKS_MAX, then counted). */
void		 trace_link(struct trace_span *, const struct trace_ctx *);

struct trace_span *trace_current(void);
/* span is current until trace_leave is given what this returned. */
int		 trace_enter(struct trace_span *);
void		 trace_leave(int);

/* Spans begun and not ended (each is owned by something alive). */
size_t		 trace_live(void);

#endif

/*
 * Tracing for the process (src/core/telemetry.c): the configuration's
 * otel_* directives given to trace.c (on, the ratio) and otlp.c (where
 * and how spans go, the resource), at start-up and on every reload; and
 * the flush of what is queued at exit.
 */
#ifndef MCPD_TELEMETRY_H
#define MCPD_TELEMETRY_H

struct conf;
struct event_base;

void	telemetry_configure(struct event_base *, const struct conf *);
void	telemetry_flush(struct event_base *, const struct conf *);

#endif

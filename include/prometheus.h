/* /metrics: the Prometheus text exposition format (version 0.0.4). */
#ifndef MCPD_PROMETHEUS_H
#define MCPD_PROMETHEUS_H

#include <stddef.h>

#define PROMETHEUS_CONTENT_TYPE	"text/plain; version=0.0.4; charset=utf-8"

char	*prometheus_text(size_t *);

#endif

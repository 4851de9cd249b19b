/*
 * Tracing for the process (telemetry.h). The resource every span carries:
 * service.name (otel_service_name), service.version (mcpd's),
 * service.instance.id (otel_instance_id, or a UUID drawn once per
 * process), then otel_resource's, which win over those three.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "clock.h"
#include "conf.h"
#include "http_client.h"
#include "log.h"
#include "mcpd.h"
#include "otlp.h"
#include "random.h"
#include "telemetry.h"
#include "trace.h"
#include "xmalloc.h"

/* The longest exit waits for the last export (otel_timeout, at most). */
#define TELEMETRY_FLUSH_MAX_MS	5000

static char	telemetry_uuid[37];

/* A version 4 UUID, drawn once: this process's instance id. */
static const char *
telemetry_instance(const struct conf *conf)
{
	static const char	 hex[] = "0123456789abcdef";
	unsigned char		 b[16];
	size_t			 i, n = 0;

	if (conf->otel_instance_id != NULL)
		return (conf->otel_instance_id);
	if (telemetry_uuid[0] != '\0')
		return (telemetry_uuid);
	random_bytes(b, sizeof b);
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	for (i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			telemetry_uuid[n++] = '-';
		telemetry_uuid[n++] = hex[b[i] >> 4];
		telemetry_uuid[n++] = hex[b[i] & 0xf];
	}
	telemetry_uuid[n] = '\0';
	return (telemetry_uuid);
}

/* Whether the operator's attributes name key (KEY=...). */
static int
telemetry_overridden(const struct conf *conf, const char *key)
{
	size_t	i, len = strlen(key);

	for (i = 0; i < conf->notel_resource; i++) {
		if (strncmp(conf->otel_resource[i], key, len) == 0 &&
		    conf->otel_resource[i][len] == '=')
			return (1);
	}
	return (0);
}

void
telemetry_configure(struct event_base *base, const struct conf *conf)
{
	struct otlp_settings	 set;
	char			**res;
	size_t			 n = 0, i;

	if (conf->otel_endpoint == NULL) {
		if (trace_enabled)
			log_info("tracing off");
		trace_configure(0, 0);
		otlp_configure(base, NULL);
		return;
	}
	res = xcalloc(conf->notel_resource + 4, sizeof *res);
	if (!telemetry_overridden(conf, "service.name"))
		xasprintf(&res[n++], "service.name=%s",
		    conf->otel_service_name);
	if (!telemetry_overridden(conf, "service.version"))
		xasprintf(&res[n++], "service.version=%s", MCPD_VERSION);
	if (!telemetry_overridden(conf, "service.instance.id"))
		xasprintf(&res[n++], "service.instance.id=%s",
		    telemetry_instance(conf));
	for (i = 0; i < conf->notel_resource; i++)
		res[n++] = xstrdup(conf->otel_resource[i]);

	memset(&set, 0, sizeof set);
	set.url = conf->otel_endpoint;
	set.headers = conf->otel_headers;
	set.nheaders = conf->notel_headers;
	set.resource = res;
	set.nresource = n;
	set.scope_name = "mcpd";
	set.scope_version = MCPD_VERSION;
	set.queue_max = (size_t)conf->otel_queue;
	set.batch_max = (size_t)conf->otel_batch;
	set.interval_ms = (int)conf->otel_interval_ms;
	set.timeout_ms = (int)conf->otel_timeout * 1000;
	otlp_configure(base, &set);
	trace_configure(1, conf->otel_sample);
	for (i = 0; i < n; i++)
		free(res[i]);
	free(res);
	log_info("tracing on: spans to %s, sample %g, instance %s",
	    conf->otel_endpoint, conf->otel_sample, telemetry_instance(conf));
}

static void
telemetry_deadline_cb(evutil_socket_t fd, short events, void *arg)
{
	*(int *)arg = 1;
}

/*
 * At exit, after the sessions are gone (their spans ended): what is
 * queued is sent, each batch once, for otel_timeout at most (and
 * TELEMETRY_FLUSH_MAX_MS), with the loop running; then the exporter is
 * freed, and what was not sent is counted as dropped.
 */
void
telemetry_flush(struct event_base *base, const struct conf *conf)
{
	struct event	*deadline;
	struct timeval	 tv;
	long long	 ms;
	int		 expired = 0;

	trace_configure(0, 0);
	if (otlp_busy()) {
		ms = conf->otel_timeout * 1000;
		if (ms > TELEMETRY_FLUSH_MAX_MS)
			ms = TELEMETRY_FLUSH_MAX_MS;
		tv.tv_sec = ms / 1000;
		tv.tv_usec = (ms % 1000) * 1000;
		deadline = evtimer_new(base, telemetry_deadline_cb, &expired);
		evtimer_add(deadline, &tv);
		otlp_flush();
		while (otlp_busy() && !expired)
			event_base_loop(base, EVLOOP_ONCE);
		event_free(deadline);
	}
	otlp_shutdown();
	/* Its request, if one is left, and what the requests set up. */
	http_client_shutdown();
}

/*
 * The metrics as Prometheus scrapes them: the counters and histograms of
 * metrics.c, the gauges read from the modules that know them (sessions,
 * SSE responses, exec children), and the process metrics every exporter
 * gives (memory, descriptors, CPU, start time), under the names and units
 * Prometheus' conventions ask for (mcpd_ prefix, _total counters,
 * seconds and bytes).
 *
 * The text is built whole for each scrape; its size is bounded by the
 * tables it is made from (metrics.h), a few tens of kilobytes at most.
 */
#include <sys/resource.h>
#include <sys/time.h>

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "auth.h"
#include "conf.h"
#include "credential.h"
#include "drain.h"
#include "eventlog.h"
#include "exec.h"
#include "health.h"
#include "limit.h"
#include "mcpd.h"
#include "metrics.h"
#include "otlp.h"
#include "prometheus.h"
#include "provider_openapi.h"
#include "provider_upstream.h"
#include "server.h"
#include "session.h"
#include "spool.h"
#include "trace.h"
#include "view.h"
#include "xmalloc.h"

struct prom {
	char	*buf;
	size_t	 len;
	size_t	 size;
};

static void __attribute__((format(printf, 2, 3)))
prom_printf(struct prom *p, const char *fmt, ...)
{
	va_list	ap;
	int	n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(p->buf + p->len, p->size - p->len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if ((size_t)n < p->size - p->len) {
			p->len += (size_t)n;
			return;
		}
		p->size = p->size * 2 + (size_t)n;
		p->buf = xrealloc(p->buf, p->size);
	}
}

static void
prom_head(struct prom *p, const char *name, const char *type,
    const char *help)
{
	prom_printf(p, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
prom_value(struct prom *p, const char *name, const char *type,
    const char *help, double value)
{
	prom_head(p, name, type, help);
	prom_printf(p, "%s %.17g\n", name, value);
}

/* A label value with \, " and newline escaped, as the format asks. */
static void
prom_label(struct prom *p, const char *value)
{
	const char	*s;

	for (s = value; *s != '\0'; s++) {
		if (*s == '\\' || *s == '"')
			prom_printf(p, "\\%c", *s);
		else if (*s == '\n')
			prom_printf(p, "\\n");
		else
			prom_printf(p, "%c", *s);
	}
}

/* One histogram's series; labels is "" or 'name="value",'. */
static void
prom_histogram(struct prom *p, const char *name, const char *labels,
    const struct metrics_histogram *h, const double *bounds)
{
	uint64_t	cumulative = 0;
	int		i;

	for (i = 0; i < METRICS_BUCKETS; i++) {
		cumulative += h->buckets[i];
		prom_printf(p, "%s_bucket{%sle=\"%g\"} %llu\n", name, labels,
		    bounds[i], (unsigned long long)cumulative);
	}
	cumulative += h->buckets[METRICS_BUCKETS];
	prom_printf(p, "%s_bucket{%sle=\"+Inf\"} %llu\n", name, labels,
	    (unsigned long long)cumulative);
	if (*labels != '\0')
		prom_printf(p, "%s_sum{%.*s} %.17g\n%s_count{%.*s} %llu\n",
		    name, (int)strlen(labels) - 1, labels, h->sum, name,
		    (int)strlen(labels) - 1, labels,
		    (unsigned long long)h->count);
	else
		prom_printf(p, "%s_sum %.17g\n%s_count %llu\n", name, h->sum,
		    name, (unsigned long long)h->count);
}

static void
prom_http(struct prom *p)
{
	int	m, i, code;

	prom_head(p, "mcpd_http_responses_total", "counter",
	    "HTTP responses by request method and status code.");
	for (m = 0; m < METRICS_METHODS; m++) {
		for (i = 0; i < METRICS_STATUSES; i++) {
			if ((code = metrics.http_status[i]) == 0 ||
			    metrics.http[m][i] == 0)
				continue;
			if (code < 0)
				prom_printf(p, "mcpd_http_responses_total{"
				    "method=\"%s\",code=\"other\"} %llu\n",
				    metrics_method_names[m],
				    (unsigned long long)metrics.http[m][i]);
			else
				prom_printf(p, "mcpd_http_responses_total{"
				    "method=\"%s\",code=\"%d\"} %llu\n",
				    metrics_method_names[m], code,
				    (unsigned long long)metrics.http[m][i]);
		}
	}
}

static void
prom_tools(struct prom *p)
{
	const struct metrics_tool	*t;
	size_t				 i, n = metrics.ntools;
	int				 o;
	char				*labels;

	if (metrics.tools[METRICS_TOOLS].name[0] != '\0')
		n = METRICS_TOOLS + 1;
	prom_head(p, "mcpd_tool_calls_total", "counter",
	    "Tool calls that ended, by tool and outcome (ok, tool_error: a "
	    "result with isError, rpc_error: a JSON-RPC error, cancelled).");
	for (i = 0; i < n; i++) {
		if ((t = &metrics.tools[i])->name[0] == '\0')
			continue;
		for (o = 0; o < METRICS_OUTCOMES; o++) {
			prom_printf(p, "mcpd_tool_calls_total{tool=\"");
			prom_label(p, t->name);
			prom_printf(p, "\",outcome=\"%s\"} %llu\n",
			    metrics_outcome_names[o],
			    (unsigned long long)t->outcomes[o]);
		}
	}
	prom_head(p, "mcpd_tool_call_duration_seconds", "histogram",
	    "How long tool calls took, from the request to the response.");
	for (i = 0; i < n; i++) {
		if ((t = &metrics.tools[i])->name[0] == '\0')
			continue;
		/* Names are checked at load: letters, digits, "_-." only. */
		xasprintf(&labels, "tool=\"%s\",", t->name);
		prom_histogram(p, "mcpd_tool_call_duration_seconds", labels,
		    &t->duration, metrics_tool_bounds);
		free(labels);
	}
}

/* Names are checked at load: letters, digits, "_-." only. */
static void
prom_upstreams(struct prom *p)
{
	struct provider_upstream_stats	 st;
	size_t				 i, n = provider_upstream_count();

	if (n == 0)
		return;
	prom_head(p, "mcpd_upstream_up", "gauge", "1 while the upstream MCP "
	    "server's shared (or catalog) session is ready.");
	for (i = 0; i < n; i++) {
		provider_upstream_stats(i, &st);
		prom_printf(p, "mcpd_upstream_up{upstream=\"%s\"} %d\n",
		    st.name, st.up);
	}
	prom_head(p, "mcpd_upstream_instances", "gauge", "Upstream sessions "
	    "running (programs, or HTTP sessions): the shared or catalog one, "
	    "and one per client session with sharing session.");
	for (i = 0; i < n; i++) {
		provider_upstream_stats(i, &st);
		prom_printf(p, "mcpd_upstream_instances{upstream=\"%s\"} %u\n",
		    st.name, st.instances);
	}
	prom_head(p, "mcpd_upstream_requests_inflight", "gauge", "Requests "
	    "forwarded to the upstream and not answered yet.");
	for (i = 0; i < n; i++) {
		provider_upstream_stats(i, &st);
		prom_printf(p, "mcpd_upstream_requests_inflight{upstream=\"%s\"} "
		    "%u\n", st.name, st.inflight);
	}
	prom_head(p, "mcpd_upstream_exits_total", "counter", "Times an "
	    "upstream session ended other than by mcpd stopping it (the "
	    "program exited or was killed, a failed handshake or transport); "
	    "each is followed by a restart.");
	for (i = 0; i < n; i++) {
		provider_upstream_stats(i, &st);
		prom_printf(p, "mcpd_upstream_exits_total{upstream=\"%s\"} "
		    "%llu\n", st.name, st.exits);
	}
}

/* Names are checked at load: letters, digits, "_-." only. */
static void
prom_openapis(struct prom *p)
{
	struct provider_openapi_stats	 st;
	size_t				 i, n = provider_openapi_count();

	if (n == 0)
		return;
	prom_head(p, "mcpd_openapi_tools", "gauge", "Tools served from the "
	    "openapi block's document (0 while it has none).");
	for (i = 0; i < n; i++) {
		provider_openapi_stats(i, &st);
		prom_printf(p, "mcpd_openapi_tools{openapi=\"%s\"} %zu\n",
		    st.name, st.tools);
	}
	prom_head(p, "mcpd_openapi_calls_inflight", "gauge", "Calls of the "
	    "block's tools whose HTTP request has not ended.");
	for (i = 0; i < n; i++) {
		provider_openapi_stats(i, &st);
		prom_printf(p, "mcpd_openapi_calls_inflight{openapi=\"%s\"} "
		    "%zu\n", st.name, st.inflight);
	}
	prom_head(p, "mcpd_openapi_document_failures_total", "counter",
	    "Times the block's document could not be read, fetched or taken "
	    "(what it served before stays).");
	for (i = 0; i < n; i++) {
		provider_openapi_stats(i, &st);
		prom_printf(p, "mcpd_openapi_document_failures_total{openapi="
		    "\"%s\"} %llu\n", st.name, st.failures);
	}
}

/* Limit names are checked at load: letters, digits, "_-." only. */
static void
prom_limits(struct prom *p)
{
	struct limit_stat	st;
	struct limit_totals	t;
	size_t			i, n = limit_stat_count();
	int			r;

	if (n == 0 && server.conf->nlimits == 0)
		return;
	prom_head(p, "mcpd_limit_admitted_total", "counter", "tools/call "
	    "requests a limit covered and admitted, by limit.");
	for (i = 0; i < n; i++) {
		limit_stat(i, &st);
		prom_printf(p, "mcpd_limit_admitted_total{limit=\"%s\"} %llu\n",
		    st.name, (unsigned long long)st.admitted);
	}
	prom_head(p, "mcpd_limited_total", "counter", "tools/call requests "
	    "refused by a limit (429, or -32023), by limit and reason (rate, "
	    "quota, concurrency, unavailable: limit_fallback refuse while "
	    "Redis could not answer).");
	for (i = 0; i < n; i++) {
		limit_stat(i, &st);
		for (r = 0; r < LIMIT_REASONS; r++)
			prom_printf(p, "mcpd_limited_total{limit=\"%s\","
			    "reason=\"%s\"} %llu\n", st.name,
			    limit_reason_name(r),
			    (unsigned long long)st.refused[r]);
	}
	prom_head(p, "mcpd_limit_running", "gauge", "Calls holding a "
	    "concurrency slot of the limit on this instance.");
	for (i = 0; i < n; i++) {
		limit_stat(i, &st);
		prom_printf(p, "mcpd_limit_running{limit=\"%s\"} %llu\n",
		    st.name, (unsigned long long)st.running);
	}
	limit_totals(&t);
	prom_value(p, "mcpd_limit_keys", "gauge", "Keys (limit and what it "
	    "counts apart) this instance tracks.", (double)t.keys);
	prom_value(p, "mcpd_limit_store_calls_total", "counter", "Calls to "
	    "Redis for limits (leases of tokens, slots, tokens given back): "
	    "far fewer than checks while leases serve them.",
	    (double)t.store_calls);
	prom_value(p, "mcpd_limit_fallbacks_total", "counter", "Checks made "
	    "while Redis could not answer them (limit_fallback).",
	    (double)t.fallbacks);
	prom_value(p, "mcpd_limit_overflows_total", "counter", "Calls not "
	    "limited because every one of the keys tracked was in use.",
	    (double)t.overflows);
}

static void
prom_audit(struct prom *p)
{
	struct spool_stats	st;

	if (server.conf->audit_log == NULL && !audit_enabled())
		return;
	audit_stats(&st);
	prom_head(p, "mcpd_audit_lines_total", "counter", "Audit lines, by "
	    "what became of them: written, dropped (the queue was full: "
	    "audit_queue), failed (the write or the open failed: a full disk, "
	    "a closed pipe).");
	prom_printf(p, "mcpd_audit_lines_total{result=\"written\"} %llu\n"
	    "mcpd_audit_lines_total{result=\"dropped\"} %llu\n"
	    "mcpd_audit_lines_total{result=\"failed\"} %llu\n",
	    (unsigned long long)st.written, (unsigned long long)st.dropped,
	    (unsigned long long)st.failed);
	prom_value(p, "mcpd_audit_queued_bytes", "gauge", "Bytes of audit "
	    "lines waiting for the writer.", (double)st.queued);
}

static long
prom_open_fds(void)
{
	DIR		*d;
	struct dirent	*de;
	long		 n = 0;

	if ((d = opendir("/proc/self/fd")) == NULL)
		return (-1);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] != '.')
			n++;
	}
	closedir(d);
	return (n - 1);		/* the directory's own descriptor */
}

/* Tracing's exporter (otlp.c), while otel_endpoint is set. */
static void
prom_otel(struct prom *p)
{
	struct otlp_stats	st;

	if (server.conf->otel_endpoint == NULL)
		return;
	otlp_get_stats(&st);
	prom_value(p, "mcpd_otel_spans_exported_total", "counter",
	    "Spans the OTLP receiver took.", (double)st.exported);
	prom_head(p, "mcpd_otel_spans_dropped_total", "counter", "Spans not "
	    "exported: the queue was full (otel_queue), their request "
	    "failed for good, or the receiver refused them.");
	prom_printf(p, "mcpd_otel_spans_dropped_total{reason=\"queue_full\"} "
	    "%llu\nmcpd_otel_spans_dropped_total{reason=\"export_failed\"} "
	    "%llu\nmcpd_otel_spans_dropped_total{reason=\"rejected\"} %llu\n",
	    (unsigned long long)st.dropped_full,
	    (unsigned long long)st.dropped_failed,
	    (unsigned long long)st.rejected);
	prom_head(p, "mcpd_otel_export_requests_total", "counter",
	    "Export requests (attempts) by result.");
	prom_printf(p, "mcpd_otel_export_requests_total{result=\"ok\"} %llu\n"
	    "mcpd_otel_export_requests_total{result=\"failed\"} %llu\n",
	    (unsigned long long)st.requests_ok,
	    (unsigned long long)st.requests_failed);
	prom_value(p, "mcpd_otel_queue_spans", "gauge", "Spans waiting to be "
	    "exported or in flight.", (double)st.queued);
	prom_value(p, "mcpd_otel_queue_bytes", "gauge", "Bytes of the spans "
	    "waiting to be exported or in flight.", (double)st.queued_bytes);
	prom_value(p, "mcpd_otel_spans_open", "gauge", "Spans begun and not "
	    "ended yet (each belongs to a request, call or job running).",
	    (double)trace_live());
}

static void
prom_process(struct prom *p)
{
	struct rusage	 ru;
	struct rlimit	 rl;
	FILE		*f;
	unsigned long	 pages = 0, rss = 0;
	long		 fds, page = sysconf(_SC_PAGESIZE);

	if ((f = fopen("/proc/self/statm", "r")) != NULL) {
		if (fscanf(f, "%lu %lu", &pages, &rss) != 2)
			pages = rss = 0;
		fclose(f);
	}
	prom_value(p, "process_resident_memory_bytes", "gauge",
	    "Resident memory size in bytes.", (double)rss * (double)page);
	prom_value(p, "process_virtual_memory_bytes", "gauge",
	    "Virtual memory size in bytes.", (double)pages * (double)page);
	if ((fds = prom_open_fds()) >= 0)
		prom_value(p, "process_open_fds", "gauge",
		    "Number of open file descriptors.", (double)fds);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		prom_value(p, "process_max_fds", "gauge",
		    "Maximum number of open file descriptors.",
		    (double)rl.rlim_cur);
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		prom_value(p, "process_cpu_seconds_total", "counter",
		    "Total user and system CPU time spent in seconds.",
		    (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
		    ((double)ru.ru_utime.tv_usec +
		    (double)ru.ru_stime.tv_usec) / 1e6);
	prom_value(p, "process_start_time_seconds", "gauge",
	    "Start time of the process since the Unix epoch in seconds.",
	    (double)server.start_time);
}

/* A Redis Cluster's nodes: role and state, and the slots each serves. */
static void
prom_eventlog_nodes(struct prom *p, const struct eventlog_where *w)
{
	size_t	i;

	prom_head(p, "mcpd_eventlog_node_info", "gauge", "Each Redis Cluster "
	    "node mcpd has mapped: its role as it says and its connection's "
	    "state (ready, connecting, closed: out of the slot map); "
	    "always 1.");
	for (i = 0; i < w->nnodes; i++) {
		prom_printf(p, "mcpd_eventlog_node_info{server=\"");
		prom_label(p, w->nodes[i].server);
		prom_printf(p, "\",role=\"");
		prom_label(p, w->nodes[i].role != NULL ? w->nodes[i].role : "");
		prom_printf(p, "\",state=\"");
		prom_label(p, w->nodes[i].state);
		prom_printf(p, "\"} 1\n");
	}
	prom_head(p, "mcpd_eventlog_node_slots", "gauge", "The slots the "
	    "slot map gives each Redis Cluster node (16384 in all).");
	for (i = 0; i < w->nnodes; i++) {
		prom_printf(p, "mcpd_eventlog_node_slots{server=\"");
		prom_label(p, w->nodes[i].server);
		prom_printf(p, "\"} %d\n", w->nodes[i].slots);
	}
}

/*
 * The shared event log: which server (its address, password masked; the
 * server it is on and that server's role), over TLS or not, and the
 * failovers and connections seen.
 */
static void
prom_eventlog(struct prom *p)
{
	struct eventlog_where	w;

	eventlog_describe(server.eventlog, &w);
	prom_head(p, "mcpd_eventlog_info", "gauge", "The event log's address "
	    "(its password as ***), the server it is on, that server's role "
	    "and whether the connection is TLS; always 1.");
	prom_printf(p, "mcpd_eventlog_info{address=\"");
	prom_label(p, w.address);
	prom_printf(p, "\",server=\"");
	prom_label(p, w.server != NULL ? w.server : "");
	prom_printf(p, "\",role=\"");
	prom_label(p, w.role != NULL ? w.role : "");
	prom_printf(p, "\",tls=\"%s\",tls_version=\"", !w.tls ? "off" :
	    w.tls_verify ? "on" : "on-unverified");
	prom_label(p, w.tls_version != NULL ? w.tls_version : "");
	prom_printf(p, "\"} 1\n");
	prom_value(p, "mcpd_eventlog_failovers_total", "counter", "Changes of "
	    "primary the event log followed (Sentinel).",
	    (double)w.failovers);
	prom_value(p, "mcpd_eventlog_connects_total", "counter", "Command "
	    "connections to the event log set up (the first, and each "
	    "reconnection).", (double)w.connects);
	if (w.nodes != NULL)
		prom_eventlog_nodes(p, &w);
}

/* The whole exposition, allocated; *len is its length. */
char *
prometheus_text(size_t *len)
{
	struct prom	p = { xmalloc(16384), 0, 16384 };

	prom_head(&p, "mcpd_info", "gauge", "The version of mcpd and its "
	    "event log; always 1.");
	prom_printf(&p, "mcpd_info{version=\"%s\",eventlog=\"%s\"} 1\n",
	    MCPD_VERSION, server.conf->eventlog == CONF_EVENTLOG_MEMORY ?
	    "memory" : "redis");
	prom_value(&p, "mcpd_sessions", "gauge",
	    "Sessions this process holds.", (double)session_count());
	prom_value(&p, "mcpd_streams", "gauge",
	    "Streams this process writes or shows (request and standalone).",
	    (double)metrics.streams);
	prom_value(&p, "mcpd_sse_responses", "gauge",
	    "SSE responses open (streams being shown to a client).",
	    (double)view_count());
	prom_value(&p, "mcpd_sse_queued_bytes", "gauge",
	    "SSE bytes written and not yet sent, at the last cron tick.",
	    (double)metrics.bytes_queued);
	prom_value(&p, "mcpd_exec_children", "gauge",
	    "Programs of exec tools running (not reaped yet).",
	    (double)exec_count());
	prom_value(&p, "mcpd_events_committed_total", "counter",
	    "Events the event log committed for this process.",
	    (double)metrics.events_committed);
	prom_value(&p, "mcpd_events_written_total", "counter",
	    "Events written to SSE responses.",
	    (double)metrics.events_written);
	prom_value(&p, "mcpd_producers_paused_total", "counter",
	    "Times a producer was paused because its client fell behind "
	    "(block policy).", (double)metrics.producers_paused);
	prom_value(&p, "mcpd_slow_consumers_closed_total", "counter",
	    "SSE responses closed because their client fell behind (close "
	    "policy).", (double)metrics.slow_consumers_closed);
	prom_value(&p, "mcpd_eventlog_up", "gauge", "1 while the event log "
	    "takes operations, 0 while it is unreachable.",
	    (double)eventlog_available(server.eventlog));
	if (server.shared)
		prom_eventlog(&p);
	prom_value(&p, "mcpd_ready", "gauge", "1 while /readyz answers 200 "
	    "(start-up done, event log reachable, not draining).",
	    (double)(health_not_ready() == NULL));
	prom_value(&p, "mcpd_draining", "gauge", "1 from the start of a drain "
	    "(SIGTERM, SIGUSR2) on.", (double)drain_active());
	if (auth_enabled())
		prom_value(&p, "mcpd_auth_waiting", "gauge", "Requests waiting "
		    "for a key set or an introspection answer (max_pending "
		    "bounds them).", (double)auth_pending());
	prom_head(&p, "mcpd_eventlog_appends_total", "counter",
	    "Event-log appends answered, committed or failed.");
	prom_printf(&p, "mcpd_eventlog_appends_total{result=\"committed\"} "
	    "%llu\nmcpd_eventlog_appends_total{result=\"failed\"} %llu\n",
	    (unsigned long long)(metrics.appends - metrics.append_failures),
	    (unsigned long long)metrics.append_failures);
	prom_head(&p, "mcpd_eventlog_append_duration_seconds", "histogram",
	    "How long the event log took to answer an append.");
	prom_histogram(&p, "mcpd_eventlog_append_duration_seconds", "",
	    &metrics.append_duration, metrics_append_bounds);
	prom_value(&p, "mcpd_credential_tokens_total", "counter", "Tokens "
	    "got from token endpoints for upstreams' credentials (client "
	    "credentials and token exchanges).",
	    (double)metrics.credential_tokens);
	prom_value(&p, "mcpd_credential_failures_total", "counter", "Token "
	    "requests for upstreams' credentials that were refused or "
	    "failed.", (double)metrics.credential_failures);
	prom_value(&p, "mcpd_credential_tokens_cached", "gauge", "Tokens kept "
	    "for upstreams' credentials (mcpd's own and exchanged ones).",
	    (double)credential_cached());
	prom_http(&p);
	prom_tools(&p);
	prom_upstreams(&p);
	prom_openapis(&p);
	prom_limits(&p);
	prom_audit(&p);
	prom_otel(&p);
	prom_process(&p);
	*len = p.len;
	return (p.buf);
}

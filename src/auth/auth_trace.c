/*
 * Tracing of a check's outbound requests (auth_jwt.c's key set fetch,
 * auth_introspect.c's introspection): a CLIENT span each, as
 * OpenTelemetry's HTTP client spans have it ("{method}", url.full,
 * http.response.status_code; a status of 400 or more, or none, is an
 * error), and its traceparent header for the server.
 */
#include <stdio.h>

#include "auth_int.h"
#include "http_client.h"
#include "trace.h"

/*
 * Under the current span (the token check's); none without one: a key
 * set fetched by its refresh timer is nobody's request.
 */
struct trace_span *
auth_trace_request(const char *method, const char *url)
{
	struct trace_span	*sp;

	if (trace_current() == NULL)
		return (NULL);
	sp = trace_child(method, TRACE_CLIENT, trace_current());
	trace_attr_str(sp, "http.request.method", method);
	trace_attr_str(sp, "url.full", url);
	return (sp);
}

/* Its traceparent: 0 and tp set, or -1. */
int
auth_trace_header(const struct trace_span *sp, char *tp)
{
	return (trace_traceparent(sp, tp));
}

void
auth_trace_response(struct trace_span *sp, struct http_client *hc)
{
	char	code[16];
	int	status = http_client_status(hc);

	if (status != 0) {
		trace_attr_int(sp, "http.response.status_code", status);
		if (status >= 400) {
			snprintf(code, sizeof code, "%d", status);
			trace_error(sp, code, NULL);
		}
	} else
		trace_error(sp, "connection", http_client_error(hc));
	trace_end(sp);
}

/*
 * HTTP replies with JSON bodies. Every 503 goes through reply_unavailable,
 * so none goes out without the Retry-After that tells a client when to
 * come back (docs/protocol.md, Requests and statuses).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "access.h"
#include "jsonrpc.h"
#include "metrics.h"
#include "reply.h"

/*
 * The methods the access log names and the metrics count one by one; any
 * other is "other" in both.
 */
static const struct {
	enum evhttp_cmd_type	 cmd;
	const char		*name;
	enum metrics_method	 metric;
} reply_methods[] = {
	{ EVHTTP_REQ_GET, "GET", METRICS_GET },
	{ EVHTTP_REQ_POST, "POST", METRICS_POST },
	{ EVHTTP_REQ_DELETE, "DELETE", METRICS_DELETE },
	{ EVHTTP_REQ_PUT, "PUT", METRICS_OTHER_METHOD },
	{ EVHTTP_REQ_PATCH, "PATCH", METRICS_OTHER_METHOD },
	{ EVHTTP_REQ_OPTIONS, "OPTIONS", METRICS_OTHER_METHOD },
	{ EVHTTP_REQ_HEAD, "HEAD", METRICS_OTHER_METHOD },
};
#define REPLY_NMETHODS	(sizeof reply_methods / sizeof reply_methods[0])

static int
reply_method_index(struct evhttp_request *req)
{
	enum evhttp_cmd_type	cmd = evhttp_request_get_command(req);
	size_t			i;

	for (i = 0; i < REPLY_NMETHODS; i++) {
		if (reply_methods[i].cmd == cmd)
			return ((int)i);
	}
	return (-1);
}

const char *
reply_method(struct evhttp_request *req)
{
	int	i = reply_method_index(req);

	return (i == -1 ? "other" : reply_methods[i].name);
}

/* The session a response is about: the one it names, or the request's. */
const char *
reply_session(struct evhttp_request *req)
{
	const char	*sid;

	if ((sid = evhttp_find_header(evhttp_request_get_output_headers(req),
	    "Mcp-Session-Id")) == NULL)
		sid = evhttp_find_header(evhttp_request_get_input_headers(req),
		    "Mcp-Session-Id");
	return (sid);
}

/* Every response that starts is counted by method and status here. */
void
reply_count(struct evhttp_request *req, int status)
{
	int	i = reply_method_index(req);

	metrics_http(i == -1 ? METRICS_OTHER_METHOD : reply_methods[i].metric,
	    status);
}

/* A whole reply (body NULL: none). */
void
reply_send(struct evhttp_request *req, int status, struct evbuffer *body)
{
	char	path[ACCESS_PATH_MAX + 1];

	reply_count(req, status);
	if (access_enabled()) {
		access_path(path, evhttp_request_get_uri(req));
		access_line(reply_method(req), path, status,
		    reply_session(req), 0, body != NULL ?
		    evbuffer_get_length(body) : 0, access_take(req));
	}
	evhttp_send_reply(req, status, NULL, body);
}

void
reply_json(struct evhttp_request *req, int status, cJSON *json)
{
	struct evbuffer	*buf = evbuffer_new();
	char		*text;

	text = jsonrpc_print(json);
	cJSON_Delete(json);
	evbuffer_add(buf, text, strlen(text));
	free(text);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "application/json");
	reply_send(req, status, buf);
	evbuffer_free(buf);
}

void
reply_error(struct evhttp_request *req, int status, int code,
    const char *message, cJSON *data)
{
	reply_json(req, status, jsonrpc_error(NULL, code, message, data));
}

void
reply_empty(struct evhttp_request *req, int status)
{
	reply_send(req, status, NULL);
}

void
reply_unavailable(struct evhttp_request *req, int retry_after,
    const char *message)
{
	char	seconds[16];

	snprintf(seconds, sizeof seconds, "%d", retry_after);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Retry-After", seconds);
	reply_error(req, 503, JSONRPC_UNAVAILABLE, message, NULL);
}

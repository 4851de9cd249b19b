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

#include "jsonrpc.h"
#include "reply.h"

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
	evhttp_send_reply(req, status, NULL, buf);
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
	evhttp_send_reply(req, status, NULL, NULL);
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

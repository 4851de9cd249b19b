/*
 * HTTP replies with JSON bodies: the whole answers of the MCP endpoint (a
 * JSON-RPC response, an error with its status, an empty status), for
 * transport.c and view.c alike. A leaf: it knows evhttp and JSON-RPC's
 * error shape, nothing of sessions or streams.
 */
#ifndef MCPD_REPLY_H
#define MCPD_REPLY_H

#include <cjson/cJSON.h>

struct evbuffer;
struct evhttp_request;

/* Counts a response by method and status; reply_send counts and sends. */
void	reply_count(struct evhttp_request *, int);
void	reply_send(struct evhttp_request *, int, struct evbuffer *);
const char *reply_method(struct evhttp_request *);
const char *reply_session(struct evhttp_request *);

/* Sends json (and frees it) as the body of a status reply. */
void	reply_json(struct evhttp_request *, int, cJSON *);
/* A JSON-RPC error with no id: status, code, message, data (taken) or NULL. */
void	reply_error(struct evhttp_request *, int, int, const char *, cJSON *);
void	reply_empty(struct evhttp_request *, int);
/* 503 with Retry-After: seconds, and the message as a JSON-RPC error. */
void	reply_unavailable(struct evhttp_request *, int, const char *);

#endif

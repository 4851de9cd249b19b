/* The Streamable HTTP transport: the request handler for the MCP endpoint. */
#ifndef MCPD_TRANSPORT_H
#define MCPD_TRANSPORT_H

#include <cjson/cJSON.h>

/* Seconds a client may take to send one request, or to read a reply. */
#define TRANSPORT_REQUEST_TIMEOUT	30

struct evhttp;
struct evhttp_request;

void	transport_init(struct evhttp *, const char *);
void	transport_reply_json(struct evhttp_request *, int, cJSON *);
void	transport_reply_error(struct evhttp_request *, int, int,
	    const char *, cJSON *);

#endif

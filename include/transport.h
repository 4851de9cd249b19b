/* The Streamable HTTP transport: the request handler for the MCP endpoint. */
#ifndef MCPD_TRANSPORT_H
#define MCPD_TRANSPORT_H

struct evhttp;

void	transport_init(struct evhttp *, const char *);

#endif

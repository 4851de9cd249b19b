/* The process: event loop, listener, signals, the periodic cron. */
#ifndef MCPD_SERVER_H
#define MCPD_SERVER_H

struct conf;
struct event_base;
struct evhttp;

int		 server_run(const struct conf *);
struct evhttp	*server_http_new(struct event_base *, const struct conf *);

#endif

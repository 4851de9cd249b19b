/*
 * The process: event loop, listener, signals, the periodic cron, and what
 * every module shares (kept in one place, as Redis keeps its `server`).
 */
#ifndef MCPD_SERVER_H
#define MCPD_SERVER_H

#include <stdint.h>

/* Seconds a client may take to send one request, or to read a reply. */
#define SERVER_REQUEST_TIMEOUT	30

struct conf;
struct event;
struct event_base;
struct eventlog;
struct evconnlistener;
struct evhttp;
struct evhttp_bound_socket;

struct server {
	struct event_base	*base;
	const struct conf	*conf;
	struct eventlog		*eventlog;
	int			 shared;	/* other processes use the log */

	struct evhttp		*http;
	struct evhttp_bound_socket *bound;	/* NULL: not accepting */
	struct evconnlistener	*lev;
	int			 port;		/* listened on */
	long long		 start_time;	/* seconds since the epoch */
	struct event		*resume_ev;
	unsigned long long	 nofile;	/* the open file limit */
	uint64_t		 refusing_since;	/* 0: accept works */
	uint64_t		 last_refusal;
	unsigned long long	 refusals;
};
extern struct server server;

void		 server_init(struct event_base *, const struct conf *,
		     struct eventlog *);
int		 server_run(struct conf *);
struct evhttp	*server_http_new(struct event_base *, const struct conf *);
void		 server_http_limits(struct evhttp *, const struct conf *);

#endif

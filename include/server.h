/* The process: event loop, listener, signals, the periodic cron. */
#ifndef MCPD_SERVER_H
#define MCPD_SERVER_H

struct conf;

int	server_run(const struct conf *);

#endif

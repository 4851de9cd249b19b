/*
 * The service manager's notify protocol (sd_notify(3)): readiness, status,
 * reloads, stopping and watchdog pings, as datagrams to $NOTIFY_SOCKET.
 * Without that variable (not under systemd) every call does nothing.
 */
#ifndef MCPD_NOTIFY_H
#define MCPD_NOTIFY_H

#include <stdint.h>

void		 notify_init(void);
void		 notify_close(void);
int		 notify_enabled(void);
void		 notify_send(const char *, ...)
		     __attribute__((format(printf, 1, 2)));
uint64_t	 notify_watchdog_usec(void);

#endif

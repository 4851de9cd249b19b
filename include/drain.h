/*
 * Draining (SIGTERM, SIGINT, SIGUSR2): leaving a load balancer's pool
 * without losing a call. The sequence is stated at the top of drain.c.
 */
#ifndef MCPD_DRAIN_H
#define MCPD_DRAIN_H

void	drain_init(void (*)(void), void (*)(void));
void	drain_free(void);
void	drain_signal(int);
int	drain_active(void);
int	drain_closing(void);

#endif

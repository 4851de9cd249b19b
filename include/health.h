/*
 * Readiness and liveness (/readyz, /livez, /healthz): health.c.
 */
#ifndef MCPD_HEALTH_H
#define MCPD_HEALTH_H

void		 health_init(void);
void		 health_cron(void);
int		 health_log_available(void);
const char	*health_not_ready(void);
const char	*health_not_ready_reason(void);
int		 health_live(void);

#endif

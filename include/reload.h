/* SIGHUP: the configuration file read again and taken up (reload.c). */
#ifndef MCPD_RELOAD_H
#define MCPD_RELOAD_H

int	reload_conf(void);

#endif

#ifndef MCPD_SEAL_H
#define MCPD_SEAL_H

#include <stddef.h>
#include <stdint.h>

struct conf;
struct event_base;
struct eventlog;

/* How long a sealed text opens after it was sealed. */
#define SEAL_LIFETIME_MS	(15 * 60 * 1000)
/*
 * How far in the opener's future a sealing time may be: the bound on how
 * much the wall clocks of the instances sharing a log may disagree.
 */
#define SEAL_SKEW_MS		(30 * 1000)

int	 seal_load(const struct conf *, int, char **);
void	 seal_start(struct event_base *, struct eventlog *);
void	 seal_stop(void);
int	 seal_ready(void);
char	*seal_sign(const char *);
char	*seal_open(const char *, const char **);
/* The same at a given wall-clock time (ms since the epoch), for tests. */
char	*seal_sign_at(const char *, uint64_t);
char	*seal_open_at(const char *, uint64_t, const char **);

#endif

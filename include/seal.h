#ifndef MCPD_SEAL_H
#define MCPD_SEAL_H

#include <stddef.h>

struct conf;

int	 seal_load(const struct conf *, int, char **);
int	 seal_shared_key(void);
char	*seal_sign(const char *);
char	*seal_open(const char *, const char **);

#endif

#ifndef MCPD_BASE64_H
#define MCPD_BASE64_H

#include <stddef.h>

char	*base64_encode(const void *, size_t, int);
int	 base64_decode(const char *, size_t, int, unsigned char **, size_t *);

#endif

/* Allocation that never fails visibly: out of memory aborts the daemon. */
#ifndef MCPD_XMALLOC_H
#define MCPD_XMALLOC_H

#include <stddef.h>

void	*xmalloc(size_t);
void	*xcalloc(size_t, size_t);
void	*xrealloc(void *, size_t);
void	*xreallocarray(void *, size_t, size_t);
char	*xstrdup(const char *);
char	*xstrndup(const char *, size_t);
char	*xmemdup(const void *, size_t);
void	 xfree_words(char **);
int	 xasprintf(char **, const char *, ...)
	    __attribute__((format(printf, 2, 3)));

/* Routes cJSON's allocations through the functions above. */
void	 xmalloc_init_cjson(void);

#endif

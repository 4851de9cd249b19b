/*
 * Allocation wrappers. A daemon that runs out of memory cannot serve anyone
 * correctly, so it stops loudly instead of limping on with NULLs.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "xmalloc.h"

static void
xmalloc_oom(size_t size)
{
	fprintf(stderr, "mcpd: out of memory allocating %zu bytes\n", size);
	abort();
}

void *
xmalloc(size_t size)
{
	void	*p;

	if (size == 0)
		size = 1;
	if ((p = malloc(size)) == NULL)
		xmalloc_oom(size);
	return (p);
}

void *
xcalloc(size_t n, size_t size)
{
	void	*p;

	if (n == 0 || size == 0)
		n = size = 1;
	if ((p = calloc(n, size)) == NULL)
		xmalloc_oom(n * size);
	return (p);
}

void *
xrealloc(void *old, size_t size)
{
	void	*p;

	if (size == 0)
		size = 1;
	if ((p = realloc(old, size)) == NULL)
		xmalloc_oom(size);
	return (p);
}

void *
xreallocarray(void *old, size_t n, size_t size)
{
	if (size != 0 && n > SIZE_MAX / size)
		xmalloc_oom(SIZE_MAX);
	return (xrealloc(old, n * size));
}

char *
xstrdup(const char *s)
{
	return (xstrndup(s, strlen(s)));
}

char *
xstrndup(const char *s, size_t len)
{
	return (xmemdup(s, strnlen(s, len)));
}

/*
 * A copy of len bytes that may hold NULs, with a NUL after them: event
 * data is counted, and the terminator lets it be read as a string too.
 */
char *
xmemdup(const void *p, size_t len)
{
	char	*copy;

	if (len == SIZE_MAX)
		xmalloc_oom(len);
	copy = xmalloc(len + 1);
	memcpy(copy, p, len);
	copy[len] = '\0';
	return (copy);
}

/*
 * Frees a NULL-terminated list of allocated strings and the list (an argv,
 * an environment, a directive's words); NULL is no list.
 */
void
xfree_words(char **list)
{
	char	**p;

	if (list == NULL)
		return;
	for (p = list; *p != NULL; p++)
		free(*p);
	free(list);
}

int
xasprintf(char **ret, const char *fmt, ...)
{
	va_list	 ap;
	int	 n;

	va_start(ap, fmt);
	n = vasprintf(ret, fmt, ap);
	va_end(ap);
	if (n < 0)
		xmalloc_oom(0);
	return (n);
}

void
xmalloc_init_cjson(void)
{
	cJSON_Hooks	hooks = { xmalloc, free };

	cJSON_InitHooks(&hooks);
}

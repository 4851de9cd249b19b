/* Failure reporting for the harnesses' oracles. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

void
fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
	va_list	ap;

	fprintf(stderr, "\n%s:%d: oracle failed: %s\n  ", file, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

void
fuzz_print_bytes(const char *what, const void *p, size_t len)
{
	const unsigned char	*s = p;
	size_t			 i;

	fprintf(stderr, "  %s (%zu bytes): \"", what, len);
	for (i = 0; i < len && i < 2048; i++) {
		if (s[i] == '\\' || s[i] == '"')
			fprintf(stderr, "\\%c", s[i]);
		else if (s[i] >= 0x20 && s[i] < 0x7f)
			fputc(s[i], stderr);
		else
			fprintf(stderr, "\\x%02x", s[i]);
	}
	fprintf(stderr, "\"%s\n", i < len ? "..." : "");
}

char *
fuzz_strndup(const uint8_t *data, size_t size)
{
	char	*s;

	if ((s = malloc(size + 1)) == NULL)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return (s);
}

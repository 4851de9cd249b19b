/* UTF-8 as RFC 3629 defines it: no overlong forms, surrogates or values
 * past U+10FFFF. */
#ifndef MCPD_UTF8_H
#define MCPD_UTF8_H

#include <stddef.h>

/*
 * The flag for text that must hold no NUL (a program's output made a JSON
 * string, where U+0000 would be cut short by every C reader of it).
 */
#define UTF8_NO_NUL	0x1

size_t	utf8_sequence(const char *, size_t, int);

#endif

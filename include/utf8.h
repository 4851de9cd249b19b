/* UTF-8 as RFC 3629 defines it: no overlong forms, surrogates or values
 * past U+10FFFF. */
#ifndef MCPD_UTF8_H
#define MCPD_UTF8_H

#include <stddef.h>

size_t	utf8_sequence(const char *, size_t);

#endif

/*
 * What the libFuzzer harnesses share. A broken oracle is reported like a
 * crash (abort), so libFuzzer saves the input and minimises it.
 */
#ifndef MCPD_FUZZ_H
#define MCPD_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#define FUZZ_CHECK(cond, ...) do {					\
	if (!(cond))							\
		fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);	\
} while (0)

void	fuzz_fail(const char *, int, const char *, const char *, ...)
	    __attribute__((format(printf, 4, 5), noreturn));
/* Prints bytes as a C string literal, for failure messages. */
void	fuzz_print_bytes(const char *, const void *, size_t);
/* A NUL-terminated copy of the input (which may hold NULs itself). */
char	*fuzz_strndup(const uint8_t *, size_t);

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);
int	LLVMFuzzerInitialize(int *, char ***);

#endif

/* Randomness from the OS, for ids that must not be guessed or repeated. */
#ifndef MCPD_RANDOM_H
#define MCPD_RANDOM_H

#include <stddef.h>
#include <stdint.h>

void		random_bytes(void *, size_t);
uint64_t	random_u48(void);
void		random_hex(char *, size_t);
/* Fast, not secret: unique ids (trace and span ids), never secrets. */
uint64_t	random_fast_u64(void);

#endif

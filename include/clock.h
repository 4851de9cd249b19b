/* Monotonic time for deadlines and TTLs (never jumps with the wall clock). */
#ifndef MCPD_CLOCK_H
#define MCPD_CLOCK_H

#include <stdint.h>

uint64_t	clock_now_ms(void);

#endif

/*
 * Time. Monotonic for deadlines and TTLs (never jumps with the wall
 * clock); wall-clock only for what is compared across processes.
 */
#ifndef MCPD_CLOCK_H
#define MCPD_CLOCK_H

#include <stdint.h>

uint64_t	clock_now_ms(void);
uint64_t	clock_now_us(void);
uint64_t	clock_wall_ms(void);
/* Wall clock in nanoseconds since the epoch (span times). */
uint64_t	clock_wall_ns(void);

#endif

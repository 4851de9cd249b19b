/*
 * OS randomness. getrandom() blocks only before the kernel pool is seeded
 * at boot, and failing to get randomness would make session ids guessable,
 * so an error here is fatal rather than papered over.
 *
 * Small requests are served from a pool filled RANDOM_POOL bytes at a
 * time: every call opens a stream with a fresh random number, and a
 * getrandom() per call was one of the eight system calls of a durable echo
 * (docs/architecture.md, Performance). The bytes are the kernel's all the
 * same; each is handed out once and wiped from the pool as it goes, so
 * what the pool still holds was never seen by anyone. No child shares it:
 * exec.c starts children with posix_spawn, so none of our code runs in
 * a copy of this process to draw from a copy of the pool.
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "log.h"
#include "random.h"

#define RANDOM_POOL	512	/* bytes fetched at once */
#define RANDOM_POOL_MAX	64	/* larger requests go to the kernel */

static unsigned char	random_pool[RANDOM_POOL];
static size_t		random_pool_left;	/* at the end of the pool */

static void
random_os(void *buf, size_t len)
{
	unsigned char	*p = buf;
	ssize_t		 n;

	while (len > 0) {
		n = getrandom(p, len, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fatalx("getrandom failed (errno %d)", errno);
		}
		p += n;
		len -= (size_t)n;
	}
}

void
random_bytes(void *buf, size_t len)
{
	unsigned char	*from;

	if (len > RANDOM_POOL_MAX) {
		random_os(buf, len);
		return;
	}
	if (random_pool_left < len) {
		random_os(random_pool, sizeof random_pool);
		random_pool_left = sizeof random_pool;
	}
	from = random_pool + sizeof random_pool - random_pool_left;
	memcpy(buf, from, len);
	explicit_bzero(from, len);
	random_pool_left -= len;
}

/*
 * Stream numbers are 48 bits so they stay exact in JavaScript numbers and
 * short in SSE ids; zero is skipped so "0-N" never names a real stream.
 */
uint64_t
random_u48(void)
{
	uint64_t	v;

	do {
		random_bytes(&v, sizeof v);
		v &= 0xffffffffffffULL;
	} while (v == 0);
	return (v);
}

/* Fills buf with len - 1 hex digits (4 random bits each) and a NUL. */
void
random_hex(char *buf, size_t len)
{
	static const char	 digits[] = "0123456789abcdef";
	unsigned char		 raw[64];
	size_t			 i, n = len - 1;

	if (n > sizeof raw)
		n = sizeof raw;
	random_bytes(raw, n);
	for (i = 0; i < n; i++)
		buf[i] = digits[raw[i] & 0xf];
	buf[n] = '\0';
}

/*
 * Ids that must be unique but need not be secret (trace and span ids):
 * xoshiro256** seeded once from the OS, so each costs a few instructions
 * and no system call. Not for anything a client could profit from
 * guessing: those take random_bytes.
 */
static uint64_t	random_fast_s[4];
static int	random_fast_seeded;

static inline uint64_t
random_fast_rotl(uint64_t x, int k)
{
	return ((x << k) | (x >> (64 - k)));
}

uint64_t
random_fast_u64(void)
{
	uint64_t	*s = random_fast_s, r, t;

	if (!random_fast_seeded) {
		do
			random_bytes(s, sizeof random_fast_s);
		while ((s[0] | s[1] | s[2] | s[3]) == 0);
		random_fast_seeded = 1;
	}
	r = random_fast_rotl(s[1] * 5, 7) * 9;
	t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = random_fast_rotl(s[3], 45);
	return (r);
}

/*
 * Sealed text (seal.c): HMAC-SHA256 over a text and the wall-clock time it
 * was sealed, with the keys held in memory, four slots of them: the
 * current key signs; it, the previous, the next and the retired key open.
 * statekey.c fills the slots.
 */
#ifndef MCPD_SEAL_H
#define MCPD_SEAL_H

#include <stddef.h>
#include <stdint.h>

/* How long a sealed text opens after it was sealed. */
#define SEAL_LIFETIME_MS	(15 * 60 * 1000)
/*
 * How far in the opener's future a sealing time may be: the bound on how
 * much the wall clocks of the instances sharing a log may disagree.
 */
#define SEAL_SKEW_MS		(30 * 1000)
/* A key's size: at least SEAL_KEY_MIN bytes, less than SEAL_KEY_MAX. */
#define SEAL_KEY_MIN		32
#define SEAL_KEY_MAX		1024

enum seal_slot {
	SEAL_CURRENT,	/* signs, and opens */
	SEAL_PREVIOUS,	/* the keyring's: opens */
	SEAL_NEXT,	/* the keyring's: opens */
	SEAL_RETIRED,	/* state_key_previous_file: opens */
	SEAL_SLOTS
};

/* A key file into a SEAL_KEY_MAX buffer: 0 and its length, or -1. */
int	 seal_read_key(const char *, unsigned char *, size_t *, char **);
int	 seal_key_size_ok(size_t);
int	 seal_set_key(enum seal_slot, const void *, size_t);
int	 seal_has_key(enum seal_slot);
int	 seal_same_key(enum seal_slot, const void *, size_t);

/* NULL without a current key. */
char	*seal_sign(const char *);
char	*seal_open(const char *, const char **);
/* The same at a given wall-clock time (ms since the epoch), for tests. */
char	*seal_sign_at(const char *, uint64_t);
char	*seal_open_at(const char *, uint64_t, const char **);

#endif

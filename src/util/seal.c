/*
 * Sealed text: what mcpd hands a client to bring back unchanged (the
 * requestState of MRTR), signed with HMAC-SHA256 and stamped with the
 * wall-clock time it was sealed, so that any instance can open it and
 * tell how old it is.
 *
 * A sealed text is base64url(text) "." T "." base64url(mac): T the
 * sealing time in milliseconds since the epoch (decimal), the mac over
 * everything before its dot. It opens for SEAL_LIFETIME_MS after T by the
 * opener's clock, and is refused if T is more than SEAL_SKEW_MS in the
 * opener's future (the instances' clocks disagree by more than they may).
 * Wall-clock time, not the monotonic clock: two hosts' monotonic clocks
 * count from their own boots and compare to nothing.
 *
 * The keys are held here, in memory, in four slots (enum seal_slot): the
 * current key signs, and it and the previous, next and retired keys open.
 * Where they come from (key files, or the event log's keyring, rotated)
 * is statekey.c's business; this file only seals and opens, and calls
 * nothing outside util/.
 */
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "base64.h"
#include "clock.h"
#include "log.h"
#include "seal.h"
#include "xmalloc.h"

#define SEAL_MAC_LEN	32

struct seal_key {
	unsigned char	 bytes[SEAL_KEY_MAX];
	size_t		 len;
	int		 set;
};

static struct seal_key	seal_keys[SEAL_SLOTS];

/*
 * Reads a key file into key (SEAL_KEY_MAX bytes): at least SEAL_KEY_MIN
 * bytes, a final newline dropped. 0 and *len, or -1 and *cause.
 */
int
seal_read_key(const char *path, unsigned char *key, size_t *len,
    char **cause)
{
	ssize_t	n;
	size_t	got = 0;
	int	fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return (-1);
	}
	while ((n = read(fd, key + got, SEAL_KEY_MAX - got)) > 0)
		got += (size_t)n;
	close(fd);
	if (n == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return (-1);
	}
	while (got > 0 && (key[got - 1] == '\n' || key[got - 1] == '\r'))
		got--;
	if (got < SEAL_KEY_MIN || got == SEAL_KEY_MAX) {
		explicit_bzero(key, SEAL_KEY_MAX);
		xasprintf(cause, "%s: a key has %d to %d bytes", path,
		    SEAL_KEY_MIN, SEAL_KEY_MAX - 1);
		return (-1);
	}
	*len = got;
	return (0);
}

/* Whether len bytes make a key (0: none, which is allowed too). */
int
seal_key_size_ok(size_t len)
{
	return (len == 0 || (len >= SEAL_KEY_MIN && len < SEAL_KEY_MAX));
}

/* The key of a slot (len 0: none); -1 if it has a size no key has. */
int
seal_set_key(enum seal_slot slot, const void *key, size_t len)
{
	struct seal_key	*k = &seal_keys[slot];

	if (!seal_key_size_ok(len))
		return (-1);
	explicit_bzero(k, sizeof *k);
	if (len == 0)
		return (0);
	memcpy(k->bytes, key, len);
	k->len = len;
	k->set = 1;
	return (0);
}

int
seal_has_key(enum seal_slot slot)
{
	return (seal_keys[slot].set);
}

/* Whether slot holds this very key. */
int
seal_same_key(enum seal_slot slot, const void *key, size_t len)
{
	const struct seal_key	*k = &seal_keys[slot];

	return (k->set && len > 0 && k->len == len &&
	    memcmp(k->bytes, key, len) == 0);
}

static void
seal_mac(const struct seal_key *key, const char *data, size_t len,
    unsigned char *mac)
{
	unsigned int	maclen = SEAL_MAC_LEN;

	if (HMAC(EVP_sha256(), key->bytes, (int)key->len,
	    (const unsigned char *)data, len, mac, &maclen) == NULL)
		fatalx("seal: HMAC-SHA256 failed");
}

/* text sealed at now (wall clock, ms), or NULL without a current key. */
char *
seal_sign_at(const char *text, uint64_t now)
{
	unsigned char	 mac[SEAL_MAC_LEN];
	char		*body, *stamped, *sig, *sealed;

	if (!seal_keys[SEAL_CURRENT].set)
		return (NULL);
	body = base64_encode(text, strlen(text), 1);
	xasprintf(&stamped, "%s.%llu", body, (unsigned long long)now);
	free(body);
	seal_mac(&seal_keys[SEAL_CURRENT], stamped, strlen(stamped), mac);
	sig = base64_encode(mac, sizeof mac, 1);
	xasprintf(&sealed, "%s.%s", stamped, sig);
	free(stamped);
	free(sig);
	return (sealed);
}

char *
seal_sign(const char *text)
{
	return (seal_sign_at(text, clock_wall_ms()));
}

static int
seal_verify(const struct seal_key *key, const char *data, size_t len,
    const unsigned char *mac)
{
	unsigned char	want[SEAL_MAC_LEN];

	if (!key->set)
		return (0);
	seal_mac(key, data, len, want);
	return (CRYPTO_memcmp(want, mac, sizeof want) == 0);
}

/* A sealing time: canonical decimal milliseconds. */
static int
seal_time(const char *s, size_t len, uint64_t *t)
{
	size_t	i;

	if (len == 0 || len > 15 || (s[0] == '0' && len > 1))
		return (-1);	/* 15 digits: until the year 33658 */
	*t = 0;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return (-1);
		*t = *t * 10 + (uint64_t)(s[i] - '0');
	}
	return (0);
}

/*
 * The text sealed in s (allocated), opened at now (wall clock, ms); or
 * NULL and a static *cause.
 */
char *
seal_open_at(const char *s, uint64_t now, const char **cause)
{
	const char	*dot1, *dot2;
	unsigned char	*mac, *text = NULL;
	size_t		 maclen, len;
	uint64_t	 t;
	int		 ok, slot;

	*cause = "requestState is not one this server issued";
	if ((dot2 = strrchr(s, '.')) == NULL || dot2 == s ||
	    (dot1 = memrchr(s, '.', (size_t)(dot2 - s))) == NULL ||
	    seal_time(dot1 + 1, (size_t)(dot2 - dot1 - 1), &t) != 0 ||
	    base64_decode(dot2 + 1, strlen(dot2 + 1), 1, &mac, &maclen) != 0)
		return (NULL);
	len = (size_t)(dot2 - s);
	ok = 0;
	for (slot = 0; maclen == SEAL_MAC_LEN && slot < SEAL_SLOTS && !ok;
	    slot++)
		ok = seal_verify(&seal_keys[slot], s, len, mac);
	free(mac);
	if (!ok) {
		*cause = "requestState failed its integrity check";
		return (NULL);
	}
	if (t > now + SEAL_SKEW_MS) {
		*cause = "requestState was sealed in the future: the servers' "
		    "clocks disagree; start the request again";
		return (NULL);
	}
	if (now > t && now - t > SEAL_LIFETIME_MS) {
		*cause = "requestState has expired; start the request again";
		return (NULL);
	}
	if (base64_decode(s, (size_t)(dot1 - s), 1, &text, &len) != 0 ||
	    strlen((char *)text) != len) {
		free(text);
		return (NULL);
	}
	return ((char *)text);
}

char *
seal_open(const char *s, const char **cause)
{
	return (seal_open_at(s, clock_wall_ms(), cause));
}

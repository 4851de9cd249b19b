/*
 * Sealed text: what mcpd hands a client to bring back unchanged (the
 * requestState of MRTR), signed with HMAC-SHA256 under a key every
 * instance shares (conf: state_key_file). A sealed text is
 * base64url(text) "." base64url(mac). Opening accepts the current key or
 * the previous one (state_key_previous_file), so a key is rotated without
 * failing the rounds in flight: install the new key with the old one as
 * previous on every instance, then drop the previous one once every
 * instance has the new key and the rounds sealed with the old have ended.
 * Without a key file a random key is drawn at start-up: fine for one
 * instance, but the others cannot open what it sealed.
 *
 * The only file that includes OpenSSL.
 */
#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "base64.h"
#include "conf.h"
#include "log.h"
#include "random.h"
#include "seal.h"
#include "xmalloc.h"

#define SEAL_KEY_MIN	32
#define SEAL_KEY_MAX	1024
#define SEAL_MAC_LEN	32

struct seal_key {
	unsigned char	 bytes[SEAL_KEY_MAX];
	size_t		 len;
	int		 set;
};

static struct {
	struct seal_key	 current;
	struct seal_key	 previous;
	int		 shared;	/* current came from a file */
} seal;

/* Reads a key file: at least SEAL_KEY_MIN bytes, a final newline dropped. */
static int
seal_read(const char *path, struct seal_key *key, char **cause)
{
	ssize_t	n;
	size_t	len = 0;
	int	fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return (-1);
	}
	while ((n = read(fd, key->bytes + len, sizeof key->bytes - len)) > 0)
		len += (size_t)n;
	close(fd);
	if (n == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return (-1);
	}
	while (len > 0 && (key->bytes[len - 1] == '\n' ||
	    key->bytes[len - 1] == '\r'))
		len--;
	if (len < SEAL_KEY_MIN || len == sizeof key->bytes) {
		xasprintf(cause, "%s: a key has %d to %d bytes", path,
		    SEAL_KEY_MIN, SEAL_KEY_MAX - 1);
		return (-1);
	}
	key->len = len;
	key->set = 1;
	return (0);
}

/*
 * Takes up the keys conf names (at start-up, and again on a reload);
 * -1 with *cause if a file cannot be used, and the keys stay as they
 * were. first: no key yet, draw one if conf names none.
 */
int
seal_load(const struct conf *conf, int first, char **cause)
{
	struct seal_key	current, previous;

	memset(&current, 0, sizeof current);
	memset(&previous, 0, sizeof previous);
	if (conf->state_key_file != NULL &&
	    seal_read(conf->state_key_file, &current, cause) != 0)
		return (-1);
	if (conf->state_key_previous_file != NULL &&
	    seal_read(conf->state_key_previous_file, &previous, cause) != 0)
		return (-1);
	if (!current.set) {
		if (!first && !seal.shared)
			return (0);	/* keep the drawn key */
		random_bytes(current.bytes, SEAL_KEY_MIN);
		current.len = SEAL_KEY_MIN;
		current.set = 1;
	}
	seal.shared = conf->state_key_file != NULL;
	seal.current = current;
	seal.previous = previous;
	return (0);
}

/* Whether the key is one other instances can share (from a file). */
int
seal_shared_key(void)
{
	return (seal.shared);
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

char *
seal_sign(const char *text)
{
	unsigned char	 mac[SEAL_MAC_LEN];
	char		*body, *sig, *sealed;

	body = base64_encode(text, strlen(text), 1);
	seal_mac(&seal.current, body, strlen(body), mac);
	sig = base64_encode(mac, sizeof mac, 1);
	xasprintf(&sealed, "%s.%s", body, sig);
	free(body);
	free(sig);
	return (sealed);
}

static int
seal_verify(const struct seal_key *key, const char *body, size_t len,
    const unsigned char *mac)
{
	unsigned char	want[SEAL_MAC_LEN];

	if (!key->set)
		return (0);
	seal_mac(key, body, len, want);
	return (CRYPTO_memcmp(want, mac, sizeof want) == 0);
}

/* The text sealed in s (allocated), or NULL and a static *cause. */
char *
seal_open(const char *s, const char **cause)
{
	const char	*dot = strchr(s, '.');
	unsigned char	*mac, *text = NULL;
	size_t		 maclen, len;
	int		 ok;

	*cause = "requestState is not one this server issued";
	if (dot == NULL ||
	    base64_decode(dot + 1, strlen(dot + 1), 1, &mac, &maclen) != 0)
		return (NULL);
	ok = maclen == SEAL_MAC_LEN &&
	    (seal_verify(&seal.current, s, (size_t)(dot - s), mac) ||
	    seal_verify(&seal.previous, s, (size_t)(dot - s), mac));
	free(mac);
	if (!ok) {
		*cause = "requestState failed its integrity check";
		return (NULL);
	}
	if (base64_decode(s, (size_t)(dot - s), 1, &text, &len) != 0 ||
	    strlen((char *)text) != len) {
		free(text);
		return (NULL);
	}
	return ((char *)text);
}

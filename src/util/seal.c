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
 * The keys come from one of two places.
 *
 * state_key_file: that key signs; it and state_key_previous_file's open.
 * The operator rotates them (docs/protocol.md).
 *
 * Otherwise the event log's keyring (eventlog_keyring), which every
 * instance sharing the log reads: at start-up, on a reload and every
 * SEAL_REFRESH_MS; the log rotates it every state_key_rotation. Its
 * current key signs; its previous, current and next keys open (and
 * state_key_previous_file's, for a move from a key file to the log). A
 * rotation refuses nothing in flight:
 *  - a key is the ring's next for a whole period before it is current,
 *    so an instance that has not yet heard of a rotation opens what those
 *    that have sign;
 *  - a key stays the ring's previous for a whole period after, so what an
 *    instance signs before it hears of a rotation opens until the next
 *    one, a period after the reading it signed with at the earliest.
 *    A state lives SEAL_LIFETIME_MS, so a reading may sign for a period
 *    less that (and a refresh, for margin): SEAL_STALE_MS. An instance
 *    that could not read the ring for longer signs nothing.
 * Until the ring has been read once nothing is signed either: seal_ready
 * says so, and /readyz and MRTR answer 503 meanwhile.
 *
 * The only file that includes OpenSSL.
 */
#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "base64.h"
#include "clock.h"
#include "conf.h"
#include "eventlog.h"
#include "log.h"
#include "random.h"
#include "seal.h"
#include "xmalloc.h"

#define SEAL_KEY_MIN	32
#define SEAL_KEY_MAX	1024
#define SEAL_MAC_LEN	32
#define SEAL_RANDOM	32		/* bytes of a key put in the ring */
#define SEAL_REFRESH_MS	(60 * 1000)	/* the ring read again */
#define SEAL_RETRY_MS	1000		/* the log down, or a reading failed */
#define SEAL_STALE_MS(period)	((period) - SEAL_LIFETIME_MS - SEAL_REFRESH_MS)

struct seal_key {
	unsigned char	 bytes[SEAL_KEY_MAX];
	size_t		 len;
	int		 set;
};

enum seal_source {
	SEAL_NONE,
	SEAL_FILE,	/* state_key_file */
	SEAL_LOG	/* the event log's keyring */
};

static struct {
	enum seal_source	 source;
	struct seal_key		 current;	/* signs */
	struct seal_key		 previous;	/* the ring's */
	struct seal_key		 next;		/* the ring's */
	struct seal_key		 retired;	/* state_key_previous_file */
	uint64_t		 period_ms;	/* state_key_rotation */

	struct eventlog		*log;		/* SEAL_LOG, once started */
	struct event		*timer;
	int			 asking;	/* a reading in flight */
	uint64_t		 generation;	/* of the ring read */
	uint64_t		 read_ms;	/* when (monotonic); 0: never */
} seal;

static void	seal_ask(void);

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

static void
seal_forget_ring(void)
{
	memset(&seal.current, 0, sizeof seal.current);
	memset(&seal.previous, 0, sizeof seal.previous);
	memset(&seal.next, 0, sizeof seal.next);
	seal.generation = 0;
	seal.read_ms = 0;
}

/*
 * Takes up the keys conf names (at start-up, and again on a reload);
 * -1 with *cause if a file cannot be used, and the keys stay as they
 * were. Without state_key_file the ring is read (again) from the log.
 */
int
seal_load(const struct conf *conf, int first, char **cause)
{
	struct seal_key	current, retired;

	memset(&current, 0, sizeof current);
	memset(&retired, 0, sizeof retired);
	if (conf->state_key_file != NULL &&
	    seal_read(conf->state_key_file, &current, cause) != 0)
		return (-1);
	if (conf->state_key_previous_file != NULL &&
	    seal_read(conf->state_key_previous_file, &retired, cause) != 0)
		return (-1);
	seal.retired = retired;
	seal.period_ms = (uint64_t)conf->state_key_rotation * 1000;
	if (current.set) {
		seal_forget_ring();
		seal.source = SEAL_FILE;
		seal.current = current;
		return (0);
	}
	if (first || seal.source != SEAL_LOG)
		seal_forget_ring();
	seal.source = SEAL_LOG;
	seal_ask();
	return (0);
}

/* Whether the keys can sign now (the ring read, and not too long ago). */
int
seal_ready(void)
{
	if (seal.source != SEAL_LOG)
		return (seal.current.set);
	return (seal.read_ms != 0 &&
	    clock_now_ms() - seal.read_ms <= SEAL_STALE_MS(seal.period_ms));
}

static void
seal_arm(uint64_t ms)
{
	struct timeval	tv = { (time_t)(ms / 1000),
			    (suseconds_t)(ms % 1000) * 1000 };

	if (seal.timer != NULL)
		evtimer_add(seal.timer, &tv);
}

static int
seal_ring_key(struct seal_key *key, const char *s)
{
	size_t	len = strlen(s);

	memset(key, 0, sizeof *key);
	if (len == 0)
		return (0);	/* no previous key yet */
	if (len < SEAL_KEY_MIN || len >= sizeof key->bytes)
		return (-1);
	memcpy(key->bytes, s, len);
	key->len = len;
	key->set = 1;
	return (0);
}

static int
seal_same(const struct seal_key *a, const struct seal_key *b)
{
	return (a->set && b->set && a->len == b->len &&
	    memcmp(a->bytes, b->bytes, a->len) == 0);
}

/* A ring read: its keys replace ours. Never logged: only generations. */
static void
seal_take_ring(const struct eventlog_keyring *ring)
{
	struct seal_key	current, previous, next;
	int		known;

	if (seal_ring_key(&current, ring->current) != 0 || !current.set ||
	    seal_ring_key(&previous, ring->previous) != 0 ||
	    seal_ring_key(&next, ring->next) != 0 || !next.set) {
		log_limited(LOG_LEVEL_WARN, "seal-ring", "state key: the event "
		    "log's keyring holds a key of a size it never writes; "
		    "kept the keys read before");
		return;
	}
	/* Rotated (once or twice) since: a key we knew is still there. */
	known = seal_same(&seal.current, &previous) ||
	    seal_same(&seal.current, &current) ||
	    seal_same(&seal.next, &previous) ||
	    seal_same(&seal.next, &current);
	if (seal.generation == 0)
		log_info("state key: keyring generation %llu read from the "
		    "event log (rotated every %llus)",
		    (unsigned long long)ring->generation,
		    (unsigned long long)(seal.period_ms / 1000));
	else if (!known)
		log_warn("state key: the event log's keyring was replaced "
		    "(generation %llu, was %llu; Redis lost it?): "
		    "requestStates sealed with the old keys are refused",
		    (unsigned long long)ring->generation,
		    (unsigned long long)seal.generation);
	else if (ring->generation != seal.generation)
		log_info("state key: keyring generation %llu read from the "
		    "event log", (unsigned long long)ring->generation);
	seal.current = current;
	seal.previous = previous;
	seal.next = next;
	seal.generation = ring->generation;
	seal.read_ms = clock_now_ms();
}

static void
seal_ring_cb(enum eventlog_status status, const struct eventlog_keyring *ring,
    void *arg)
{
	seal.asking = 0;
	if (status == EVENTLOG_CANCELLED || seal.source != SEAL_LOG)
		return;
	if (status != EVENTLOG_OK) {
		log_limited(LOG_LEVEL_WARN, "seal-ring", "state key: the event "
		    "log's keyring could not be read (%s)%s",
		    eventlog_status_name(status), seal_ready() ? "" :
		    "; no requestState can be issued until it is");
		seal_arm(SEAL_RETRY_MS);
		return;
	}
	seal_take_ring(ring);
	seal_arm(SEAL_REFRESH_MS);
}

/* Reads the ring now, or as soon as the log can take operations. */
static void
seal_ask(void)
{
	unsigned char	 bytes[SEAL_RANDOM];
	char		 fresh[2][2 * SEAL_RANDOM + 1];
	int		 i;
	size_t		 j;

	if (seal.source != SEAL_LOG || seal.log == NULL || seal.asking)
		return;
	if (!eventlog_available(seal.log)) {
		/* seal_available_cb may come sooner. */
		seal_arm(SEAL_RETRY_MS);
		return;
	}
	/* Keys in hex, as `openssl rand -hex 32` writes a key file. */
	for (i = 0; i < 2; i++) {
		random_bytes(bytes, sizeof bytes);
		for (j = 0; j < sizeof bytes; j++)
			snprintf(fresh[i] + 2 * j, 3, "%02x", bytes[j]);
	}
	explicit_bzero(bytes, sizeof bytes);
	seal.asking = 1;
	eventlog_keyring(seal.log, seal.period_ms, fresh[0], fresh[1],
	    seal_ring_cb, NULL);
	explicit_bzero(fresh, sizeof fresh);
}

static void
seal_timer_cb(evutil_socket_t fd, short events, void *arg)
{
	seal_ask();
}

/*
 * The log (re)connected: read the ring at once, before a request needs
 * it (and it may be another ring, if Redis lost its data).
 */
static void
seal_available_cb(void *arg)
{
	seal_ask();
}

/* The log is there: the ring can be read (and then kept up to date). */
void
seal_start(struct event_base *base, struct eventlog *el)
{
	seal.log = el;
	seal.timer = evtimer_new(base, seal_timer_cb, NULL);
	eventlog_on_available(el, seal_available_cb, NULL);
	seal_ask();
}

/* Before the log goes: no reading is asked for any more. */
void
seal_stop(void)
{
	if (seal.log != NULL)
		eventlog_on_available(seal.log, NULL, NULL);
	if (seal.timer != NULL)
		event_free(seal.timer);
	seal.timer = NULL;
	seal.log = NULL;
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

/* text sealed at now (wall clock, ms), or NULL if no key may sign. */
char *
seal_sign_at(const char *text, uint64_t now)
{
	unsigned char	 mac[SEAL_MAC_LEN];
	char		*body, *stamped, *sig, *sealed;

	if (!seal_ready())
		return (NULL);
	body = base64_encode(text, strlen(text), 1);
	xasprintf(&stamped, "%s.%llu", body, (unsigned long long)now);
	free(body);
	seal_mac(&seal.current, stamped, strlen(stamped), mac);
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
	int		 ok;

	*cause = "requestState is not one this server issued";
	if ((dot2 = strrchr(s, '.')) == NULL || dot2 == s ||
	    (dot1 = memrchr(s, '.', (size_t)(dot2 - s))) == NULL ||
	    seal_time(dot1 + 1, (size_t)(dot2 - dot1 - 1), &t) != 0 ||
	    base64_decode(dot2 + 1, strlen(dot2 + 1), 1, &mac, &maclen) != 0)
		return (NULL);
	len = (size_t)(dot2 - s);
	ok = maclen == SEAL_MAC_LEN &&
	    (seal_verify(&seal.current, s, len, mac) ||
	    seal_verify(&seal.previous, s, len, mac) ||
	    seal_verify(&seal.next, s, len, mac) ||
	    seal_verify(&seal.retired, s, len, mac));
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

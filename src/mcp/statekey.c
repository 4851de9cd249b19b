/*
 * Where the requestState keys come from (seal.c holds them).
 *
 * state_key_file: that key signs; it and state_key_previous_file's open.
 * The operator rotates them (docs/protocol.md).
 *
 * Otherwise the event log's keyring (eventlog_keyring), which every
 * instance sharing the log reads: at start-up, on a reload and every
 * STATEKEY_REFRESH_MS; the log rotates it every state_key_rotation. Its
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
 *    less that (and a refresh, for margin): STATEKEY_STALE_MS. An instance
 *    that could not read the ring for longer signs nothing.
 * Until the ring has been read once nothing is signed either:
 * statekey_ready says so, and /readyz and MRTR answer 503 meanwhile.
 */
#include <sys/types.h>

#include <stdio.h>
#include <string.h>

#include <event2/event.h>

#include "clock.h"
#include "conf.h"
#include "eventlog.h"
#include "log.h"
#include "random.h"
#include "seal.h"
#include "statekey.h"

#define STATEKEY_RANDOM		32	/* bytes of a key put in the ring */
#define STATEKEY_REFRESH_MS	(60 * 1000)	/* the ring read again */
#define STATEKEY_RETRY_MS	1000	/* the log down, or a reading failed */
#define STATEKEY_STALE_MS(period) \
	((period) - SEAL_LIFETIME_MS - STATEKEY_REFRESH_MS)

enum statekey_source {
	STATEKEY_NONE,
	STATEKEY_FILE,	/* state_key_file */
	STATEKEY_LOG	/* the event log's keyring */
};

static struct {
	enum statekey_source	 source;
	uint64_t		 period_ms;	/* state_key_rotation */
	struct eventlog		*log;		/* STATEKEY_LOG, once started */
	struct event		*timer;
	int			 asking;	/* a reading in flight */
	uint64_t		 generation;	/* of the ring read */
	uint64_t		 read_ms;	/* when (monotonic); 0: never */
} statekey;

static void	statekey_ask(void);

static void
statekey_forget_ring(void)
{
	seal_set_key(SEAL_CURRENT, NULL, 0);
	seal_set_key(SEAL_PREVIOUS, NULL, 0);
	seal_set_key(SEAL_NEXT, NULL, 0);
	statekey.generation = 0;
	statekey.read_ms = 0;
}

/*
 * Takes up the keys conf names (at start-up, and again on a reload);
 * -1 with *cause if a file cannot be used, and the keys stay as they
 * were. Without state_key_file the ring is read (again) from the log.
 */
int
statekey_load(const struct conf *conf, int first, char **cause)
{
	unsigned char	current[SEAL_KEY_MAX], retired[SEAL_KEY_MAX];
	size_t		currentlen = 0, retiredlen = 0;
	int		rc = -1;

	if (conf->state_key_file != NULL && seal_read_key(conf->state_key_file,
	    current, &currentlen, cause) != 0)
		goto out;
	if (conf->state_key_previous_file != NULL && seal_read_key(
	    conf->state_key_previous_file, retired, &retiredlen, cause) != 0)
		goto out;
	seal_set_key(SEAL_RETIRED, retired, retiredlen);
	statekey.period_ms = (uint64_t)conf->state_key_rotation * 1000;
	rc = 0;
	if (currentlen > 0) {
		statekey_forget_ring();
		statekey.source = STATEKEY_FILE;
		seal_set_key(SEAL_CURRENT, current, currentlen);
		goto out;
	}
	if (first || statekey.source != STATEKEY_LOG)
		statekey_forget_ring();
	statekey.source = STATEKEY_LOG;
	statekey_ask();
out:
	explicit_bzero(current, sizeof current);
	explicit_bzero(retired, sizeof retired);
	return (rc);
}

/* Whether the keys can sign now (the ring read, and not too long ago). */
int
statekey_ready(void)
{
	if (statekey.source != STATEKEY_LOG)
		return (seal_has_key(SEAL_CURRENT));
	return (statekey.read_ms != 0 && clock_now_ms() - statekey.read_ms <=
	    STATEKEY_STALE_MS(statekey.period_ms));
}

static void
statekey_arm(uint64_t ms)
{
	struct timeval	tv = { (time_t)(ms / 1000),
			    (suseconds_t)(ms % 1000) * 1000 };

	if (statekey.timer != NULL)
		evtimer_add(statekey.timer, &tv);
}

/* A ring read: its keys replace ours. Never logged: only generations. */
static void
statekey_take_ring(const struct eventlog_keyring *ring)
{
	size_t	current = strlen(ring->current), previous =
		    strlen(ring->previous), next = strlen(ring->next);
	int	known;

	if (current == 0 || next == 0 || !seal_key_size_ok(current) ||
	    !seal_key_size_ok(previous) || !seal_key_size_ok(next)) {
		log_limited(LOG_LEVEL_WARN, "seal-ring", "state key: the event "
		    "log's keyring holds a key of a size it never writes; "
		    "kept the keys read before");
		return;
	}
	/* Rotated (once or twice) since: a key we knew is still there. */
	known = seal_same_key(SEAL_CURRENT, ring->previous, previous) ||
	    seal_same_key(SEAL_CURRENT, ring->current, current) ||
	    seal_same_key(SEAL_NEXT, ring->previous, previous) ||
	    seal_same_key(SEAL_NEXT, ring->current, current);
	if (statekey.generation == 0)
		log_info("state key: keyring generation %llu read from the "
		    "event log (rotated every %llus)",
		    (unsigned long long)ring->generation,
		    (unsigned long long)(statekey.period_ms / 1000));
	else if (!known)
		log_warn("state key: the event log's keyring was replaced "
		    "(generation %llu, was %llu; Redis lost it?): "
		    "requestStates sealed with the old keys are refused",
		    (unsigned long long)ring->generation,
		    (unsigned long long)statekey.generation);
	else if (ring->generation != statekey.generation)
		log_info("state key: keyring generation %llu read from the "
		    "event log", (unsigned long long)ring->generation);
	seal_set_key(SEAL_CURRENT, ring->current, current);
	seal_set_key(SEAL_PREVIOUS, ring->previous, previous);
	seal_set_key(SEAL_NEXT, ring->next, next);
	statekey.generation = ring->generation;
	statekey.read_ms = clock_now_ms();
}

static void
statekey_ring_cb(enum eventlog_status status,
    const struct eventlog_keyring *ring, void *arg)
{
	statekey.asking = 0;
	if (status == EVENTLOG_CANCELLED || statekey.source != STATEKEY_LOG)
		return;
	if (status != EVENTLOG_OK) {
		log_limited(LOG_LEVEL_WARN, "seal-ring", "state key: the event "
		    "log's keyring could not be read (%s)%s",
		    eventlog_status_name(status), statekey_ready() ? "" :
		    "; no requestState can be issued until it is");
		statekey_arm(STATEKEY_RETRY_MS);
		return;
	}
	statekey_take_ring(ring);
	statekey_arm(STATEKEY_REFRESH_MS);
}

/* Reads the ring now, or as soon as the log can take operations. */
static void
statekey_ask(void)
{
	unsigned char	 bytes[STATEKEY_RANDOM];
	char		 fresh[2][2 * STATEKEY_RANDOM + 1];
	int		 i;
	size_t		 j;

	if (statekey.source != STATEKEY_LOG || statekey.log == NULL ||
	    statekey.asking)
		return;
	if (!eventlog_available(statekey.log)) {
		/* statekey_available_cb may come sooner. */
		statekey_arm(STATEKEY_RETRY_MS);
		return;
	}
	/* Keys in hex, as `openssl rand -hex 32` writes a key file. */
	for (i = 0; i < 2; i++) {
		random_bytes(bytes, sizeof bytes);
		for (j = 0; j < sizeof bytes; j++)
			snprintf(fresh[i] + 2 * j, 3, "%02x", bytes[j]);
	}
	explicit_bzero(bytes, sizeof bytes);
	statekey.asking = 1;
	eventlog_keyring(statekey.log, statekey.period_ms, fresh[0], fresh[1],
	    statekey_ring_cb, NULL);
	explicit_bzero(fresh, sizeof fresh);
}

static void
statekey_timer_cb(evutil_socket_t fd, short events, void *arg)
{
	statekey_ask();
}

/*
 * The log (re)connected: read the ring at once, before a request needs
 * it (and it may be another ring, if Redis lost its data).
 */
static void
statekey_available_cb(void *arg)
{
	statekey_ask();
}

void
statekey_start(struct event_base *base, struct eventlog *el)
{
	statekey.log = el;
	statekey.timer = evtimer_new(base, statekey_timer_cb, NULL);
	eventlog_on_available(el, statekey_available_cb, NULL);
	statekey_ask();
}

/* Before the log goes: no reading is asked for any more. */
void
statekey_stop(void)
{
	if (statekey.log != NULL)
		eventlog_on_available(statekey.log, NULL, NULL);
	if (statekey.timer != NULL)
		event_free(statekey.timer);
	statekey.timer = NULL;
	statekey.log = NULL;
}

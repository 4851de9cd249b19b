/*
 * The notice board of changes (announce.h): one function for every
 * producer, a short table of subscribers, and the fan-out to the other
 * instances sharing the log.
 *
 * With a shared log a change goes to every instance through the log's
 * messages (Redis PUBLISH on one channel, ANNOUNCE_CHANNEL, the message
 * channel of the pseudo session "listen"); each instance, this one
 * included, hands it to its ANNOUNCE_EVERYWHERE subscribers when the
 * message comes back. A message is "C<kind><uri>", kind one decimal
 * digit; one this version does not know is a newer instance's and is
 * ignored. What comes back is delivered, never published again, so no
 * change goes round twice. A change of an upstream's has its source after
 * the URI and a NUL, "C<kind><uri>\0<source>": an older instance reads the
 * URI up to the NUL, as it always did, and hears it from no source.
 */
#include <stdlib.h>
#include <string.h>

#include "announce.h"
#include "eventlog.h"
#include "log.h"
#include "server.h"
#include "xmalloc.h"

#define ANNOUNCE_CHANNEL	"listen"
/* Subscribers: the sessions, the listen streams, and room to spare. */
#define ANNOUNCE_MAX_SUBSCRIBERS 8

static const char *const announce_methods[ANNOUNCE_KIND_MAX] = {
	"notifications/tools/list_changed",
	"notifications/prompts/list_changed",
	"notifications/resources/list_changed",
	"notifications/resources/updated",
	NULL
};

static struct {
	struct {
		const struct announce_hooks	*hooks;
		void				*arg;
	}		 subscribers[ANNOUNCE_MAX_SUBSCRIBERS];
	size_t		 n;
	int		 watching;	/* a shared log: the channel watched */
	int		 live;		/* the subscription went live once */
} announce;

const char *
announce_method(enum announce_kind kind)
{
	if ((int)kind < 0 || kind >= ANNOUNCE_KIND_MAX)
		return (NULL);
	return (announce_methods[kind]);
}

/* Subscribing again with the same hooks and arg changes nothing. */
void
announce_subscribe(const struct announce_hooks *hooks, void *arg)
{
	size_t	i;

	for (i = 0; i < announce.n; i++) {
		if (announce.subscribers[i].hooks == hooks &&
		    announce.subscribers[i].arg == arg)
			return;
	}
	if (announce.n == ANNOUNCE_MAX_SUBSCRIBERS)
		fatalx("announce: too many subscribers");
	announce.subscribers[announce.n].hooks = hooks;
	announce.subscribers[announce.n++].arg = arg;
}

void
announce_unsubscribe(const struct announce_hooks *hooks, void *arg)
{
	size_t	i;

	for (i = 0; i < announce.n; i++) {
		if (announce.subscribers[i].hooks == hooks &&
		    announce.subscribers[i].arg == arg) {
			announce.subscribers[i] =
			    announce.subscribers[--announce.n];
			return;
		}
	}
}

static void
announce_deliver(enum announce_reach reach, enum announce_kind kind,
    const char *uri, const char *source)
{
	size_t	i;

	for (i = 0; i < announce.n; i++) {
		if (announce.subscribers[i].hooks->reach == reach)
			announce.subscribers[i].hooks->changed(kind, uri,
			    source, announce.subscribers[i].arg);
	}
}

struct announce_published {
	enum announce_kind	 kind;
	char			*uri;
	char			*source;
};

static void
announce_published_cb(enum eventlog_status status, void *arg)
{
	struct announce_published	*p = arg;

	if (status != EVENTLOG_OK) {
		/* The others cannot hear it; this instance's subscribers can. */
		log_limited(LOG_LEVEL_WARN, "listen-publish", "a change could "
		    "not be published to other instances: %s",
		    eventlog_status_name(status));
		announce_deliver(ANNOUNCE_EVERYWHERE, p->kind, p->uri,
		    p->source);
	}
	free(p->uri);
	free(p->source);
	free(p);
}

/*
 * A change made here: uri NULL or "" unless the kind has one, source the
 * upstream it comes from (NULL or "": mcpd's own providers).
 */
void
announce_change_from(enum announce_kind kind, const char *uri,
    const char *source)
{
	struct announce_published	*p;
	char				*msg;
	size_t				 len, ulen, slen;

	if (uri == NULL)
		uri = "";
	if (source == NULL)
		source = "";
	announce_deliver(ANNOUNCE_HERE, kind, uri, source);
	ulen = strlen(uri);
	slen = strlen(source);
	len = 2 + ulen + (slen > 0 ? 1 + slen : 0);
	if (!announce.watching || len > EVENTLOG_MESSAGE_MAX) {
		announce_deliver(ANNOUNCE_EVERYWHERE, kind, uri, source);
		return;
	}
	msg = xmalloc(len + 1);
	msg[0] = 'C';
	msg[1] = '0' + (int)kind;
	memcpy(msg + 2, uri, ulen);
	if (slen > 0) {
		msg[2 + ulen] = '\0';
		memcpy(msg + 3 + ulen, source, slen);
	}
	p = xmalloc(sizeof *p);
	p->kind = kind;
	p->uri = xstrdup(uri);
	p->source = xstrdup(source);
	eventlog_publish(server.eventlog, ANNOUNCE_CHANNEL, msg, len,
	    announce_published_cb, p);
	free(msg);
}

void
announce_change(enum announce_kind kind, const char *uri)
{
	announce_change_from(kind, uri, NULL);
}

/* Any instance's change, this one's included: delivered, not published. */
static void
announce_message_cb(const char *sid, const char *msg, size_t len, void *arg)
{
	const char	*nul;
	char		*uri, *source;

	if (len < 2 || msg[0] != 'C' || msg[1] < '0' ||
	    msg[1] >= '0' + ANNOUNCE_KIND_MAX)
		return;		/* a newer instance's, or not ours */
	if ((nul = memchr(msg + 2, '\0', len - 2)) != NULL) {
		uri = xstrndup(msg + 2, nul - (msg + 2));
		source = xstrndup(nul + 1, len - (size_t)(nul + 1 - msg));
	} else {
		uri = xstrndup(msg + 2, len - 2);
		source = xstrdup("");
	}
	announce_deliver(ANNOUNCE_EVERYWHERE, (enum announce_kind)(msg[1] -
	    '0'), uri, source);
	free(uri);
	free(source);
}

/*
 * The subscription is (again) live: k = 0 says what was published
 * meanwhile may be lost, and the subscribers that cannot make up for it
 * hear so.
 */
static void
announce_watch_cb(const char *sid, uint64_t k, uint64_t seq, void *arg)
{
	size_t	i;

	if (k != 0)
		return;
	if (announce.live) {
		for (i = 0; i < announce.n; i++) {
			if (announce.subscribers[i].hooks->reach ==
			    ANNOUNCE_EVERYWHERE &&
			    announce.subscribers[i].hooks->lost != NULL)
				announce.subscribers[i].hooks->lost("the "
				    "subscription to other instances' changes "
				    "was lost", announce.subscribers[i].arg);
		}
	}
	announce.live = 1;
}

int
announce_hearing(void)
{
	return (!announce.watching || (announce.live &&
	    eventlog_available(server.eventlog)));
}

void
announce_init(void)
{
	if (!server.shared || announce.watching)
		return;
	eventlog_watch(server.eventlog, ANNOUNCE_CHANNEL, announce_watch_cb,
	    announce_message_cb, NULL);
	announce.watching = 1;
}

void
announce_shutdown(void)
{
	if (announce.watching)
		eventlog_unwatch(server.eventlog, ANNOUNCE_CHANNEL,
		    announce_watch_cb, announce_message_cb, NULL);
	announce.watching = 0;
	announce.live = 0;
}

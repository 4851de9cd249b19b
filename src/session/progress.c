/*
 * Delivery progress shared between processes (progress.h). A view writes
 * entries one batch at a time, so telling each would cost a Redis round
 * trip per batch per stream: instead each stream has at most one telling
 * in flight (the note, then the message, pipelined), and what is delivered
 * meanwhile goes in the next one. The table holds the streams with a
 * telling in flight, at most PROGRESS_MAX; it forgets a stream once its
 * last telling is answered. Streams are named by session id and K: no
 * pointer into sessions, streams or views is kept.
 */
#include <sys/tree.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "cursor.h"
#include "eventlog.h"
#include "log.h"
#include "peer.h"
#include "progress.h"
#include "server.h"
#include "session.h"
#include "xmalloc.h"

#define PROGRESS_MAX		65536
#define PROGRESS_NAME_LEN	32	/* "p:K" */

struct progress {
	char			 sid[SESSION_ID_LEN + 1];
	uint64_t		 k;
	uint64_t		 told;		/* in the telling in flight */
	uint64_t		 want;		/* delivered since */
	int			 owed;		/* answers of the telling */
	RB_ENTRY(progress)	 entry;
};
RB_HEAD(progress_tree, progress);

static struct progress_tree	progress_table = RB_INITIALIZER(&progress_table);
static size_t			progress_count;

static int
progress_cmp(struct progress *a, struct progress *b)
{
	if (a->k != b->k)
		return (a->k < b->k ? -1 : 1);
	return (strcmp(a->sid, b->sid));
}
RB_GENERATE_STATIC(progress_tree, progress, entry, progress_cmp);

static void
progress_name(char *name, uint64_t k)
{
	snprintf(name, PROGRESS_NAME_LEN, "p:%llu", (unsigned long long)k);
}

static void	progress_send(struct progress *);

static void
progress_told_cb(enum eventlog_status status, void *arg)
{
	struct progress	*p = arg;

	if (status != EVENTLOG_OK && status != EVENTLOG_CANCELLED)
		log_limited(LOG_LEVEL_WARN, "progress", "session=%s "
		    "stream=%llu: delivery progress not shared: %s", p->sid,
		    (unsigned long long)p->k, eventlog_status_name(status));
	if (--p->owed > 0)
		return;
	if (p->want > p->told && status != EVENTLOG_CANCELLED) {
		progress_send(p);
		return;
	}
	RB_REMOVE(progress_tree, &progress_table, p);
	progress_count--;
	free(p);
}

/*
 * The note first: a writer reading it on receipt of the message, or after
 * missing it, finds at least what the message said.
 */
static void
progress_send(struct progress *p)
{
	char	name[PROGRESS_NAME_LEN], msg[PEER_DELIVERED_BUFSIZE];
	char	value[CURSOR_BUFSIZE];
	size_t	len;

	p->told = p->want;
	p->owed = 2;
	progress_name(name, p->k);
	len = cursor_format_seq(value, sizeof value, p->told);
	eventlog_note_set(server.eventlog, p->sid, name, value, len,
	    (uint64_t)server.conf->session_ttl * 1000, progress_told_cb, p);
	len = peer_format_delivered(msg, sizeof msg, p->k, p->told);
	eventlog_publish(server.eventlog, p->sid, msg, len, progress_told_cb,
	    p);
}

void
progress_tell(const char *sid, uint64_t k, uint64_t seq)
{
	struct progress	 find, *p;

	strlcpy(find.sid, sid, sizeof find.sid);
	find.k = k;
	if ((p = RB_FIND(progress_tree, &progress_table, &find)) != NULL) {
		if (seq > p->want)
			p->want = seq;	/* goes with the next telling */
		return;
	}
	if (progress_count >= PROGRESS_MAX) {
		log_limited(LOG_LEVEL_WARN, "progress-full", "session=%s "
		    "stream=%llu: %d streams' delivery progress in flight; "
		    "this one waits for its next write", sid,
		    (unsigned long long)k, PROGRESS_MAX);
		return;
	}
	p = xcalloc(1, sizeof *p);
	memcpy(p->sid, find.sid, sizeof p->sid);
	p->k = k;
	p->want = seq;
	RB_INSERT(progress_tree, &progress_table, p);
	progress_count++;
	progress_send(p);
}

size_t
progress_pending(void)
{
	return (progress_count);
}

struct progress_read {
	char			 sid[SESSION_ID_LEN + 1];
	uint64_t		 k;
	progress_read_fn	 cb;
	void			*arg;
};

static void
progress_note_cb(enum eventlog_status status, const char *value, size_t len,
    void *arg)
{
	struct progress_read	*r = arg;
	uint64_t		 seq = 0;

	if (status != EVENTLOG_OK ||
	    cursor_parse_seq(value, len, &seq) != 0)
		seq = 0;
	r->cb(r->sid, r->k, seq, r->arg);
	free(r);
}

/* What views anywhere delivered of stream K, as far as the note says. */
void
progress_read(const char *sid, uint64_t k, progress_read_fn cb, void *arg)
{
	struct progress_read	*r;
	char			 name[PROGRESS_NAME_LEN];

	r = xcalloc(1, sizeof *r);
	strlcpy(r->sid, sid, sizeof r->sid);
	r->k = k;
	r->cb = cb;
	r->arg = arg;
	progress_name(name, k);
	eventlog_note_get(server.eventlog, sid, name, progress_note_cb, r);
}

/*
 * SSE views. A view never holds events of its own: it remembers the next
 * entry it owes its client and pulls from the event log whenever the log
 * may have more and the connection has room (output under
 * sse_high_watermark). When the connection drains, the view pulls again.
 * A streaming view watches its stream (stream_watch): the stream calls the
 * view's hooks below, and an entry this process commits comes with its
 * bytes, which a caught-up view writes without reading them back.
 *
 * evhttp gives no disconnect notice before the first write, keeps read and
 * write timeouts that would kill idle streams, and has no output limit;
 * each of those is handled here, where the code meets it (view_open and
 * the keep-alive timer, view_peer_closed_cb, the high watermark).
 *
 * Written is not received (docs/protocol.md, Backpressure). An entry written to
 * the connection may still sit in its output buffer or in the kernel's
 * send queue, and a cut loses it; under the block policy the stream's
 * producers run stream_window entries past what the view reports, so the
 * view reports an entry only once its client can be assumed to have it:
 * the client named it in Last-Event-ID, or every byte up to the entry's
 * end has left the output buffer and been acknowledged by the peer
 * (SIOCOUTQ counts what the kernel has not sent or not seen acknowledged).
 * Each write of entries leaves a mark (its last entry, where it ends in
 * the bytes this view queued); the marks are checked when the output
 * drains and then on a timer that backs off while nothing is
 * acknowledged. What a proxy acknowledged and has not forwarded nobody can
 * see: the window leaves room for it (conf.c, conf_check_window).
 */
#include <sys/ioctl.h>
#include <sys/queue.h>
#include <sys/socket.h>

#ifdef __linux__
#include <linux/sockios.h>
#endif

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "clock.h"
#include "conf.h"
#include "cursor.h"
#include "eventlog.h"
#include "jsonrpc.h"
#include "lease.h"
#include "log.h"
#include "mcp.h"
#include "metrics.h"
#include "reply.h"
#include "server.h"
#include "session.h"
#include "sse.h"
#include "stream.h"
#include "view.h"
#include "xmalloc.h"

/* Entries pulled per log read. */
#define VIEW_BATCH		64
/* Bytes a client may send on a streaming connection before it is cut. */
#define VIEW_MAX_INPUT		(64 * 1024)
/*
 * Writes of entries not yet acknowledged that a view tells apart; past
 * this the newest mark grows to cover the next write (its entries are
 * reported a little later, never earlier).
 */
#define VIEW_MARKS		32
/* The acknowledgement check backs off from 1 ms to 200 ms while it waits. */
#define VIEW_ACK_MIN_MS		1
#define VIEW_ACK_MAX_MS		200

/* A write of entries up to seq, ending at byte end of what the view sent. */
struct view_mark {
	uint64_t		 seq;
	uint64_t		 end;
};

enum view_state {
	VIEW_VALIDATING,	/* resume cursor being checked, no reply yet */
	VIEW_STREAMING,
	VIEW_CLOSED,		/* detached from HTTP and from the session */
	VIEW_STATE_MAX
};

static const char *view_state_names[VIEW_STATE_MAX] = {
	"validating", "streaming", "closed"
};

struct view {
	enum view_state		 state;
	struct evhttp_request	*req;
	struct evhttp_connection *evcon;
	struct session		*session;
	uint64_t		 k;
	uint64_t		 next;		/* next entry owed */
	int64_t			 last_written;	/* -1: none yet */
	uint64_t		 resume_from;	/* cursor N while validating */
	char			 resume_text[CURSOR_BUFSIZE];
	int			 loss_checked;	/* lease_lost_get answered */
	struct eventlog_info	 resume_info;	/* the read it checks */
	int			 primes;	/* client takes priming events */
	int			 dirty;		/* the log may have more */
	int			 reading;	/* a log read is in flight */
	int			 freeing;	/* free on the next turn */
	struct stream_watcher	*watch;		/* while streaming */
	uint64_t		 committed;	/* last local commit seen */
	int			 sole;		/* only this process writes */
	struct evbuffer		*taken;		/* commits taken this turn */
	uint64_t		 taken_upto;	/* last entry in taken */
	int			 blocks;	/* policy block, else close */
	int64_t			 close_after;	/* polling: end after it; -1 */
	int			 open;		/* the log says more will come */
	struct event		*grace_ev;	/* close: over-watermark timer */
	uint64_t		 last_write_ms;
	uint64_t		 last_drain_ms;	/* output last seen empty */
	/* What the client received (see the top of this file). */
	uint64_t		 sent;		/* bytes queued on the connection */
	struct view_mark	 marks[VIEW_MARKS];	/* a ring, oldest first */
	unsigned int		 mark_first;
	unsigned int		 nmarks;
	uint64_t		 marked;	/* last entry marked */
	uint64_t		 received;	/* last entry reported received */
	struct event		*ack_ev;	/* checks the marks again */
	uint64_t		 ack_ms;	/* its current period */
	struct reply_sse	*sse;		/* its response, once begun */
	TAILQ_ENTRY(view)	 entry;
	TAILQ_ENTRY(view)	 tentry;	/* on view_takenq */
};
TAILQ_HEAD(view_list, view);

static struct view_list	view_all = TAILQ_HEAD_INITIALIZER(view_all);
static size_t		view_n;
/*
 * Views holding entries taken from commits. They go out at the end of the
 * loop turn: commits come in bursts (a batch answered by the log), and a
 * burst leaves as one chunk rather than a chunk per entry.
 */
static struct view_list	view_takenq = TAILQ_HEAD_INITIALIZER(view_takenq);
static struct event	*view_taken_ev;

static void	view_pump(struct view *);
static void	view_flush(struct view *);
static void	view_grace_cb(evutil_socket_t, short, void *);
static void	view_ack_cb(evutil_socket_t, short, void *);
static void	view_slow_disconnect(struct view *);

/* What the view's stream calls (stream.h); arg is the view. */
static void	view_committed(void *, const struct eventlog_entry *, int);
static void	view_wakeup(void *, uint64_t);
static void	view_lost(void *, uint64_t);
static void	view_close(void *, const char *);
static void	view_abort(void *, const char *);
static int	view_close_after(void *, uint64_t);
static uint64_t	view_received(void *);

static const struct stream_hooks view_hooks = {
	view_committed,
	view_wakeup,
	view_lost,
	view_close,
	view_abort,
	view_close_after,
	view_received
};

static void
view_set_state(struct view *v, enum view_state state)
{
	log_debug("session=%s stream=%llu view %s -> %s",
	    session_id(v->session), (unsigned long long)v->k,
	    view_state_names[v->state], view_state_names[state]);
	v->state = state;
}

static struct view *
view_new(struct evhttp_request *req, struct session *s, uint64_t k)
{
	struct view	*v;

	v = xcalloc(1, sizeof *v);
	v->req = req;
	v->evcon = evhttp_request_get_connection(req);
	v->session = s;
	v->k = k;
	v->last_written = -1;
	v->close_after = -1;
	v->primes = mcp_version_at_least(session_version(s),
	    "2025-11-25");
	v->blocks = stream_policy_blocks(s, k);
	v->grace_ev = evtimer_new(server.base, view_grace_cb, v);
	v->ack_ev = evtimer_new(server.base, view_ack_cb, v);
	v->ack_ms = VIEW_ACK_MIN_MS;
	session_ref(s);
	TAILQ_INSERT_TAIL(&view_all, v, entry);
	view_n++;
	return (v);
}

static void
view_free_cb(evutil_socket_t fd, short events, void *arg)
{
	struct view	*v = arg;

	if (v->taken != NULL)
		evbuffer_free(v->taken);
	event_free(v->grace_ev);
	event_free(v->ack_ev);
	session_unref(v->session);
	free(v);
}

/*
 * A closed view goes once its read is answered, on a later loop turn: the
 * stream or the connection whose callback closed it may still hold it.
 */
static void
view_maybe_free(struct view *v)
{
	if (v->state != VIEW_CLOSED || v->reading || v->freeing)
		return;
	v->freeing = 1;
	TAILQ_REMOVE(&view_all, v, entry);
	view_n--;
	event_base_once(server.base, -1, EV_TIMEOUT, view_free_cb, v, NULL);
}

static void
view_detach(struct view *v)
{
	if (v->taken != NULL && evbuffer_get_length(v->taken) > 0) {
		TAILQ_REMOVE(&view_takenq, v, tentry);
		evbuffer_drain(v->taken, evbuffer_get_length(v->taken));
	}
	evtimer_del(v->grace_ev);
	evtimer_del(v->ack_ev);
	if (v->watch != NULL) {
		stream_unwatch(v->watch);
		v->watch = NULL;
	}
	view_set_state(v, VIEW_CLOSED);
	v->req = NULL;
	v->evcon = NULL;
}

/* The peer went away. evhttp hands the request to us to finish. */
static void
view_peer_closed_cb(struct evhttp_connection *evcon, void *arg)
{
	struct view	*v = arg;

	log_debug("session=%s stream=%llu client disconnected after %lld",
	    session_id(v->session), (unsigned long long)v->k,
	    (long long)v->last_written);
	reply_sse_end(v->sse, REPLY_SSE_GONE);
	v->sse = NULL;
	view_detach(v);
	view_maybe_free(v);
}

/* Unsent: on the connection, or taken and not yet written. */
static size_t
view_output_len(struct view *v)
{
	struct bufferevent	*bev;
	size_t			 len = 0;

	if (v->taken != NULL)
		len = evbuffer_get_length(v->taken);
	bev = evhttp_connection_get_bufferevent(v->evcon);
	return (len + evbuffer_get_length(bufferevent_get_output(bev)));
}

static int
view_congested(struct view *v)
{
	return (view_output_len(v) >=
	    (size_t)server.conf->sse_high_watermark);
}

/*
 * Bytes of the connection that may not have reached the peer: still in
 * the output buffer, or in the kernel's send queue (not sent, or sent and
 * not acknowledged). Without SIOCOUTQ (not Linux) the kernel's share
 * cannot be seen and counts as received.
 */
static size_t
view_unacked(struct view *v)
{
	struct bufferevent	*bev;
	int			 queued = 0;

	bev = evhttp_connection_get_bufferevent(v->evcon);
#ifdef SIOCOUTQ
	if (ioctl(bufferevent_getfd(bev), SIOCOUTQ, &queued) != 0 ||
	    queued < 0)
		queued = 0;	/* no socket: the connection is going */
#endif
	return (evbuffer_get_length(bufferevent_get_output(bev)) +
	    (size_t)queued);
}

/*
 * The client has entries up to seq: the stream hears it (paused producers
 * go on; with a shared log, a writer elsewhere is told).
 */
static void
view_tell_received(struct view *v, uint64_t seq)
{
	if (seq <= v->received)
		return;
	v->received = seq;
	if (v->watch != NULL)
		stream_watcher_delivered(v->watch, seq);
}

static void
view_ack_arm(struct view *v)
{
	struct timeval	tv = { (time_t)(v->ack_ms / 1000),
			    (suseconds_t)(v->ack_ms % 1000) * 1000 };

	evtimer_add(v->ack_ev, &tv);
}

/*
 * Reports the writes whose every byte the peer acknowledged. While some
 * wait, the check comes again: soon after progress, then less and less
 * often (a client that does not read costs a check per VIEW_ACK_MAX_MS).
 */
static void
view_ack_check(struct view *v)
{
	struct view_mark	*m;
	uint64_t		 acked, unacked, seq = v->received;

	if (v->state != VIEW_STREAMING || v->nmarks == 0)
		return;
	unacked = view_unacked(v);
	acked = v->sent > unacked ? v->sent - unacked : 0;
	while (v->nmarks > 0 &&
	    (m = &v->marks[v->mark_first])->end <= acked) {
		seq = m->seq;
		v->mark_first = (v->mark_first + 1) % VIEW_MARKS;
		v->nmarks--;
	}
	if (v->nmarks > 0) {
		if (seq > v->received)
			v->ack_ms = VIEW_ACK_MIN_MS;
		else if ((v->ack_ms *= 2) > VIEW_ACK_MAX_MS)
			v->ack_ms = VIEW_ACK_MAX_MS;
		view_ack_arm(v);
	}
	view_tell_received(v, seq);
}

static void
view_ack_cb(evutil_socket_t fd, short events, void *arg)
{
	view_ack_check(arg);
}

/*
 * Entries up to upto end at the last byte sent: a mark. Past VIEW_MARKS
 * unacknowledged writes, the newest mark moves on instead.
 */
static void
view_mark(struct view *v, uint64_t upto)
{
	struct view_mark	*m;
	unsigned int		 i;

	if (upto <= v->marked)
		return;
	v->marked = upto;
	if (v->nmarks < VIEW_MARKS)
		v->nmarks++;
	i = (v->mark_first + v->nmarks - 1) % VIEW_MARKS;
	m = &v->marks[i];
	m->seq = upto;
	m->end = v->sent;
	if (!evtimer_pending(v->ack_ev, NULL)) {
		v->ack_ms = VIEW_ACK_MIN_MS;
		view_ack_arm(v);
	}
}

static void
view_drained_cb(struct evhttp_connection *evcon, void *arg)
{
	struct view	*v = arg;

	v->last_drain_ms = clock_now_ms();
	evtimer_del(v->grace_ev);
	view_ack_check(v);
	view_pump(v);
}

static void
view_grace_arm(struct view *v, uint64_t ms)
{
	struct timeval	tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) *
			    1000 };

	evtimer_add(v->grace_ev, &tv);
}

/*
 * Writes a chunk holding entries up to upto (0: none). The drain callback
 * fires when the connection's output is empty again: that is when a view
 * refills. Under the close policy a view left over the watermark starts
 * its grace period. evhttp only queues the chunk (the loop writes it), so
 * what the output grew by is this chunk with its framing: the view counts
 * it to know where its entries end.
 */
static void
view_send(struct view *v, struct evbuffer *buf, uint64_t upto)
{
	struct evbuffer	*out;
	size_t		 was, now;

	out = bufferevent_get_output(evhttp_connection_get_bufferevent(
	    v->evcon));
	was = evbuffer_get_length(out);
	reply_sse_chunk(v->sse, buf, view_drained_cb, v);
	now = evbuffer_get_length(out);
	v->sent += now > was ? now - was : 0;
	view_mark(v, upto);
	v->last_write_ms = clock_now_ms();
	if (!v->blocks && view_output_len(v) > 0 &&
	    !evtimer_pending(v->grace_ev, NULL))
		view_grace_arm(v, (uint64_t)server.conf->slow_consumer_grace_ms);
}

static void
view_write(struct view *v, struct evbuffer *buf, uint64_t upto)
{
	view_flush(v);
	view_send(v, buf, upto);
}

/* Writes the entries taken from commits, ahead of anything else. */
static void
view_flush(struct view *v)
{
	if (v->taken == NULL || evbuffer_get_length(v->taken) == 0)
		return;
	TAILQ_REMOVE(&view_takenq, v, tentry);
	view_send(v, v->taken, v->taken_upto);
}

static void
view_taken_cb(evutil_socket_t fd, short events, void *arg)
{
	struct view	*v;

	while ((v = TAILQ_FIRST(&view_takenq)) != NULL)
		view_flush(v);
}

/*
 * Ends the response with its terminal chunk and hands the connection back
 * to evhttp for the client's next request. Every end goes this way: a
 * client that pools connections (Node's fetch) reuses one as soon as a
 * response has ended, so closing it after the end, unannounced, loses the
 * request it sends next (a `Connection: close` added now would not reach
 * the client: the head is gone, and evhttp would close after the end).
 */
static void
view_finish(struct view *v)
{
	view_flush(v);
	reply_sse_end(v->sse, REPLY_SSE_DONE);
	v->sse = NULL;
	view_detach(v);
	view_maybe_free(v);
}

static void
view_start(struct view *v)
{
	evhttp_add_header(evhttp_request_get_output_headers(v->req),
	    "Mcp-Session-Id", session_id(v->session));
	v->sse = reply_sse_start(v->req, v->k, view_peer_closed_cb, v);

	view_set_state(v, VIEW_STREAMING);
	v->watch = stream_watch(v->session, v->k, v->sole, &view_hooks, v);
	v->last_write_ms = v->last_drain_ms = clock_now_ms();
	/*
	 * A resumed client has what its Last-Event-ID names; a new view
	 * starts after the head, and owes nothing before it.
	 */
	v->marked = v->next > 0 ? v->next - 1 : 0;
	view_tell_received(v, v->marked);
}

/* Formats the entries the view owes, in order; returns how many. */
static size_t
view_format_entries(struct view *v, struct evbuffer *buf,
    const struct eventlog_entry *entries, size_t n)
{
	char		 id[CURSOR_BUFSIZE];
	long		 retry = server.conf->sse_retry_ms;
	size_t		 i;

	for (i = 0; i < n; i++) {
		if (v->close_after >= 0 &&
		    entries[i].seq > (uint64_t)v->close_after)
			break;		/* left for the client's resume */
		if (entries[i].seq != v->next) {
			/* Invariant 2: the log gave us a hole. */
			log_error("session=%s stream=%llu expected entry %llu, "
			    "log returned %llu", session_id(v->session),
			    (unsigned long long)v->k,
			    (unsigned long long)v->next,
			    (unsigned long long)entries[i].seq);
			break;
		}
		v->next++;
		cursor_format(id, sizeof id, v->k, entries[i].seq);
		if (entries[i].seq == 0) {
			if (v->primes)
				sse_event(buf, id, NULL, "", 0, retry);
			continue;
		}
		sse_event(buf, id, NULL, entries[i].data, entries[i].len, -1);
		v->last_written = (int64_t)entries[i].seq;
	}
	return (i);
}

static void
view_write_entries(struct view *v, const struct eventlog_entry *entries,
    size_t n)
{
	struct evbuffer	*buf = evbuffer_new();
	size_t		 done;

	done = view_format_entries(v, buf, entries, n);
	if (evbuffer_get_length(buf) > 0) {
		metrics.events_written += done;
		view_write(v, buf, v->next - 1);
	}
	evbuffer_free(buf);
}

/*
 * Close policy: the client did not keep up. It hears why, and from which id
 * to resume (the last one queued to it), and the producer never waited.
 */
/*
 * Close policy. A consumer is slow when its connection has not once been
 * drained for slow_consumer_grace_ms while there is more for it: output
 * over the watermark, or entries waiting in the log until it drains.
 */
static void
view_grace_cb(evutil_socket_t fd, short events, void *arg)
{
	struct view	*v = arg;
	uint64_t	 grace = (uint64_t)server.conf->slow_consumer_grace_ms;
	uint64_t	 stuck = clock_now_ms() - v->last_drain_ms;

	if (v->state != VIEW_STREAMING || view_output_len(v) == 0)
		return;
	if (stuck < grace) {
		view_grace_arm(v, grace - stuck);
		return;
	}
	if (!view_congested(v) && !v->dirty) {
		view_grace_arm(v, grace);	/* nothing more owed yet */
		return;
	}
	log_limited(LOG_LEVEL_WARN, "slow-consumer", "session=%s stream=%llu "
	    "slow consumer: %zu bytes unsent, not drained for %llu ms",
	    session_id(v->session), (unsigned long long)v->k,
	    view_output_len(v), (unsigned long long)stuck);
	view_slow_disconnect(v);
}

/*
 * Ends a slow consumer's response with its terminal event, which names
 * the last id queued to this connection: what the client holds once it
 * has read everything before the event.
 */
static void
view_slow_disconnect(struct view *v)
{
	struct evbuffer	*buf;
	char		 id[CURSOR_BUFSIZE];

	cursor_format(id, sizeof id, v->k, v->next > 0 ? v->next - 1 : 0);
	log_limited(LOG_LEVEL_WARN, "slow-consumer", "session=%s stream=%llu "
	    "disconnecting a slow consumer after %s", session_id(v->session),
	    (unsigned long long)v->k, id);
	metrics.slow_consumers_closed++;
	view_flush(v);
	buf = evbuffer_new();
	sse_backpressure_disconnect(buf, id, "slow-consumer",
	    server.conf->sse_retry_ms);
	evhttp_send_reply_chunk(v->req, buf);
	evbuffer_free(buf);
	view_finish(v);
}

static void
view_resume_failed(struct view *v, enum eventlog_status status,
    const struct eventlog_info *info)
{
	const char	*reason;
	cJSON		*data;
	char		 id[CURSOR_BUFSIZE];

	switch (status) {
	case EVENTLOG_TRIMMED:
		reason = "trimmed";
		break;
	case EVENTLOG_EXPIRED:
		reason = "expired";
		break;
	case EVENTLOG_AHEAD:
		reason = "ahead";
		log_limited(LOG_LEVEL_ERROR, "resume-ahead", "resumability "
		    "violation: session=%s cursor=%s head=%llu-%llu: the log "
		    "lost committed entries", session_id(v->session),
		    v->resume_text, (unsigned long long)v->k,
		    (unsigned long long)(info != NULL ? info->head : 0));
		break;
	case EVENTLOG_NOT_FOUND:
		reason = "unknown-stream";
		info = NULL;
		break;
	default:
		reply_unavailable(v->req, 1,
		    "Event log unavailable, retry later");
		return;
	}
	data = cJSON_CreateObject();
	cJSON_AddStringToObject(data, "reason", reason);
	cJSON_AddStringToObject(data, "last_event_id", v->resume_text);
	if (info != NULL) {
		if (info->oldest <= info->head) {
			cursor_format(id, sizeof id, v->k, info->oldest);
			cJSON_AddStringToObject(data, "oldest", id);
		}
		cursor_format(id, sizeof id, v->k, info->head);
		cJSON_AddStringToObject(data, "head", id);
	}
	log_limited(LOG_LEVEL_INFO, "resume-refused", "session=%s resume from "
	    "%s refused: %s", session_id(v->session), v->resume_text, reason);
	reply_error(v->req, 410, JSONRPC_RESUME_FAILED,
	    "Cannot resume from Last-Event-ID", data);
}

/* Polling: ends the response once it has shown entry close_after. */
static int
view_poll_done(struct view *v)
{
	if (v->close_after < 0 || v->next <= (uint64_t)v->close_after)
		return (0);
	log_debug("session=%s stream=%llu view ended for polling after %llu",
	    session_id(v->session), (unsigned long long)v->k,
	    (unsigned long long)v->close_after);
	view_finish(v);
	return (1);
}

static void	view_read(struct view *, uint64_t);

/*
 * A loss is checked (lease.h): a cursor the log lost is answered as one
 * past its head, whatever took its id since; any other is read again,
 * now without the check.
 */
static void
view_loss_cb(int found, uint64_t head, uint64_t issued, void *arg)
{
	struct view	*v = arg;

	v->reading = 0;
	v->loss_checked = 1;
	if (v->state == VIEW_CLOSED) {
		view_maybe_free(v);
		return;
	}
	if (found && v->resume_from > head && v->resume_from <= issued) {
		view_resume_failed(v, EVENTLOG_AHEAD, &v->resume_info);
		view_detach(v);
		view_maybe_free(v);
		return;
	}
	view_read(v, v->next);
}

/*
 * Whether a resume that the read allows must first be checked against a
 * loss of the log (and is being: 1). When the log lost entries a call
 * had committed, the call's error took the first of those ids again, and
 * ended the stream (lease_answer): a client holding the lost entry of
 * that id, or of any id up to the new head, must hear 410 "ahead", not a
 * 200 that ends at once, again on every resume. Only an ended stream of
 * a shared log can be such, and a cursor past entry 0.
 */
static int
view_check_loss(struct view *v, const struct eventlog_info *info)
{
	if (!server.shared || v->loss_checked || !info->ended ||
	    v->resume_from == 0)
		return (0);
	v->resume_info = *info;
	v->resume_info.data = NULL;
	v->resume_info.len = 0;
	v->reading = 1;
	lease_lost_get(session_id(v->session), v->k, view_loss_cb, v);
	return (1);
}

static void
view_read_cb(enum eventlog_status status, const struct eventlog_entry *entries,
    size_t n, const struct eventlog_info *info, void *arg)
{
	struct view	*v = arg;
	struct evbuffer	*buf;

	v->reading = 0;
	if (v->state == VIEW_CLOSED) {
		view_maybe_free(v);
		return;
	}
	if (v->state == VIEW_VALIDATING) {
		if (session_closed(v->session)) {
			reply_error(v->req, 404,
			    JSONRPC_SESSION_NOT_FOUND, "Session not found",
			    NULL);
			view_detach(v);
			view_maybe_free(v);
			return;
		}
		/*
		 * 200 when every entry after K-N is retained (the log answered
		 * the read from N + 1) and N is no further than the head; a
		 * cursor past the head is "ahead" even when N + 1 would not
		 * be, which the read alone cannot tell for N = UINT64_MAX.
		 */
		if (status == EVENTLOG_OK && v->resume_from > info->head)
			status = EVENTLOG_AHEAD;
		if (status == EVENTLOG_OK && view_check_loss(v, info))
			return;
		if (status != EVENTLOG_OK) {
			view_resume_failed(v, status, info);
			view_detach(v);
			view_maybe_free(v);
			return;
		}
		view_start(v);
		if (v->primes) {
			buf = evbuffer_new();
			sse_retry(buf, server.conf->sse_retry_ms);
			view_write(v, buf, 0);
			evbuffer_free(buf);
		}
	}
	if (status == EVENTLOG_TRIMMED) {
		/*
		 * Retention moved past this view's position: it did not keep
		 * up. It is told so like any slow consumer; the client
		 * resumes from its own last id and hears "trimmed" then.
		 */
		log_limited(LOG_LEVEL_WARN, "slow-consumer", "session=%s "
		    "stream=%llu view fell behind retention at %llu",
		    session_id(v->session), (unsigned long long)v->k,
		    (unsigned long long)v->next);
		view_slow_disconnect(v);
		return;
	}
	/*
	 * AHEAD here: the log lost entries this view had shown (its next
	 * entry is past head + 1). The client resumes from what it got and
	 * the same read refuses it, 410 "ahead", or the loss note does when
	 * a call's error took that id since (view_check_loss): it is never
	 * answered 200 for nothing again.
	 */
	if (status != EVENTLOG_OK) {
		log_limited(LOG_LEVEL_WARN, "view-read", "session=%s "
		    "stream=%llu view ends: log read %s",
		    session_id(v->session), (unsigned long long)v->k,
		    eventlog_status_name(status));
		view_finish(v);
		return;
	}
	view_write_entries(v, entries, n);
	v->open = !info->ended;
	if (view_poll_done(v))
		return;
	if (info->ended && v->next > info->head) {
		view_finish(v);
		return;
	}
	if (n == VIEW_BATCH || v->next <= info->head ||
	    v->next <= v->committed)
		v->dirty = 1;
	view_pump(v);
}

static void
view_read(struct view *v, uint64_t from)
{
	v->reading = 1;
	v->dirty = 0;
	eventlog_read(server.eventlog, session_id(v->session), v->k, from,
	    VIEW_BATCH, view_read_cb, v);
}

static void
view_pump(struct view *v)
{
	if (v->state != VIEW_STREAMING || v->reading || !v->dirty)
		return;
	if (view_congested(v))
		return;		/* view_drained_cb pumps again */
	view_read(v, v->next);
}

struct view *
view_open(struct evhttp_request *req, struct session *s, uint64_t k,
    uint64_t from, int64_t prime, int sole)
{
	struct view	*v;
	struct evbuffer	*buf;
	char		 id[CURSOR_BUFSIZE];

	v = view_new(req, s, k);
	v->next = from;
	v->sole = sole;
	view_start(v);
	if (prime >= 0 && v->primes) {
		buf = evbuffer_new();
		cursor_format(id, sizeof id, k, (uint64_t)prime);
		sse_event(buf, id, NULL, "", 0, server.conf->sse_retry_ms);
		view_write(v, buf, 0);
		evbuffer_free(buf);
	}
	/* A sole writer's stream tells its view of every later commit. */
	v->dirty = !sole;
	view_pump(v);
	return (v);
}

void
view_resume(struct evhttp_request *req, struct session *s,
    const struct cursor *from)
{
	struct view	*v;
	uint64_t	 n = from->seq;

	v = view_new(req, s, from->stream);
	v->resume_from = n;
	/* A cursor has one spelling: this is the client's Last-Event-ID. */
	cursor_format(v->resume_text, sizeof v->resume_text, from->stream, n);
	/*
	 * The last representable N has no next entry; reading from N itself
	 * is past every head, so the log answers "ahead" as it must.
	 */
	v->next = n < UINT64_MAX ? n + 1 : n;
	view_read(v, v->next);
}

/* The log may have more for the view: it reads when it has room. */
static void
view_wakeup(void *arg, uint64_t seq)
{
	struct view	*v = arg;

	v->dirty = 1;
	view_pump(v);
}

/* Formats e to go out at the end of this loop turn. */
static void
view_take(struct view *v, const struct eventlog_entry *e)
{
	size_t	was;

	if (v->taken == NULL)
		v->taken = evbuffer_new();
	if (view_taken_ev == NULL)
		view_taken_ev = event_new(server.base, -1, 0,
		    view_taken_cb, NULL);
	was = evbuffer_get_length(v->taken);
	metrics.events_written += view_format_entries(v, v->taken, e, 1);
	if (evbuffer_get_length(v->taken) > was)
		v->taken_upto = v->next - 1;
	if (was == 0 && evbuffer_get_length(v->taken) > 0) {
		TAILQ_INSERT_TAIL(&view_takenq, v, tentry);
		event_active(view_taken_ev, EV_TIMEOUT, 0);
	}
}

/*
 * This process just committed entry e (ended: the stream's last). A view
 * that owes exactly it, has no read in flight and room on its connection
 * writes it as it is instead of reading it back; any other pulls as usual.
 * A read in flight may or may not have seen e: its callback reads again if
 * not, instead of every commit during a read asking for another.
 */
static void
view_committed(void *arg, const struct eventlog_entry *e, int ended)
{
	struct view	*v = arg;

	if (e->seq > v->committed)
		v->committed = e->seq;
	if (v->state == VIEW_STREAMING && v->reading && !v->dirty)
		return;		/* the read's callback sees v->committed */
	if (v->state != VIEW_STREAMING || v->dirty || e->seq != v->next ||
	    e->data == NULL || view_congested(v)) {
		view_wakeup(v, e->seq);
		return;
	}
	view_take(v, e);
	v->open = !ended;
	if (view_poll_done(v))
		return;
	if (ended && v->next > e->seq)
		view_finish(v);
}

/* The session closes: the response ends as if its stream had. */
static void
view_close(void *arg, const char *reason)
{
	struct view	*v = arg;

	if (v->state != VIEW_STREAMING)
		return;
	log_debug("session=%s stream=%llu view closed: %s",
	    session_id(v->session), (unsigned long long)v->k, reason);
	view_finish(v);
}

/*
 * Cuts the connection mid-response, with whatever is still unsent: for a
 * view that must not end as if its stream had. Taken over, the client
 * resumed elsewhere and this connection is most likely half-open; at
 * shutdown the process goes. The client sees its response fail rather
 * than end, does not keep the connection for reuse, and resumes from its
 * last id.
 */
static void
view_abort(void *arg, const char *reason)
{
	struct view		*v = arg;
	struct reply_sse	*sse = v->sse;

	if (v->state != VIEW_STREAMING)
		return;
	log_debug("session=%s stream=%llu connection cut: %s",
	    session_id(v->session), (unsigned long long)v->k, reason);
	v->sse = NULL;
	view_detach(v);
	view_maybe_free(v);
	/* The request goes with its connection: it was never ended. */
	reply_sse_end(sse, REPLY_SSE_CUT);
}

/*
 * Nothing after entry `head` will be committed: the stream's log lost it.
 * The response ends, as a stream's end does, once the view has shown what
 * was committed (at once if it has, or if reading it fails), so the client
 * resumes from its cursor and hears why instead of waiting on keep-alives.
 */
static void
view_lost(void *arg, uint64_t head)
{
	struct view	*v = arg;

	if (v->state != VIEW_STREAMING)
		return;
	if (v->close_after < 0 || head < (uint64_t)v->close_after)
		v->close_after = (int64_t)head;
	if (v->reading)
		return;		/* the read's callback checks */
	if (!view_poll_done(v))
		view_wakeup(v, head);
}

/* The last entry this view's client is known to have received. */
static uint64_t
view_received(void *arg)
{
	struct view	*v = arg;

	return (v->received);
}

/*
 * Polling (SEP-1699): the response ends, as a normal end of stream, once
 * entry `upto` is written, so the client holds a cursor at or after it and
 * comes back with GET and Last-Event-ID; the stream itself goes on. Only
 * for clients that take priming events: others might hold no cursor yet.
 */
static int
view_close_after(void *arg, uint64_t upto)
{
	struct view	*v = arg;

	if (v->state != VIEW_STREAMING || !v->primes)
		return (-1);
	if (v->close_after < 0 || upto < (uint64_t)v->close_after)
		v->close_after = (int64_t)upto;
	if (!v->reading)
		view_poll_done(v);	/* else the read's callback checks */
	return (0);
}

/*
 * Once a second: keep idle streams alive through proxies with a comment,
 * and cut connections whose client keeps sending on a response stream.
 */
void
view_cron(void)
{
	struct view		*v, *v1;
	struct bufferevent	*bev;
	struct evbuffer		*buf;
	uint64_t		 now = clock_now_ms();
	uint64_t		 idle = (uint64_t)server.conf->sse_keepalive *
				    1000;
	uint64_t		 queued;

	queued = 0;
	TAILQ_FOREACH_SAFE(v, &view_all, entry, v1) {
		if (v->state != VIEW_STREAMING)
			continue;
		queued += view_output_len(v);
		bev = evhttp_connection_get_bufferevent(v->evcon);
		if (evbuffer_get_length(bufferevent_get_input(bev)) >
		    VIEW_MAX_INPUT) {
			log_limited(LOG_LEVEL_WARN, "client-input",
			    "session=%s stream=%llu client sends on a stream; "
			    "closing", session_id(v->session),
			    (unsigned long long)v->k);
			/* What it sent is no request to answer next. */
			view_abort(v, "client sends on a stream");
			continue;
		}
		if (now - v->last_write_ms < idle ||
		    view_output_len(v) > 0)
			continue;
		buf = evbuffer_new();
		sse_comment(buf, "keepalive");
		view_write(v, buf, 0);
		evbuffer_free(buf);
	}
	metrics.bytes_queued = queued;
	metrics_log_changes();
}

/*
 * Every LEASE_CHECK_MS, with a shared log (server.c's lease timer, not the
 * cron: it bounds how late a dead writer is found): a stream nobody here
 * writes may have lost its writer.
 */
void
view_check_orphans(void)
{
	struct view	*v;

	TAILQ_FOREACH(v, &view_all, entry) {
		if (v->state == VIEW_STREAMING && v->open)
			stream_check_orphan(v->session, v->k);
	}
}

/*
 * Ends a response for its client to resume elsewhere: what is taken goes
 * out (it is committed), then a retry: field and the chunked end. Whatever
 * the view had not written yet waits in the log for that resume. The
 * connection stays as its head said (view_finish): a response begun once
 * the drain closed the listener announced Connection: close, so evhttp
 * closes it after the end; an older one stays reusable, and the client's
 * resume on it is answered with Connection: close (the drain ends that
 * response again), so the one after goes through the balancer.
 */
static void
view_retry_end(struct view *v)
{
	struct evbuffer	*buf;

	log_debug("session=%s stream=%llu view ended by the drain after %lld",
	    session_id(v->session), (unsigned long long)v->k,
	    (long long)v->last_written);
	view_flush(v);
	buf = evbuffer_new();
	sse_retry(buf, server.conf->sse_retry_ms);
	evhttp_send_reply_chunk(v->req, buf);
	evbuffer_free(buf);
	view_finish(v);
}

/*
 * Whether a view's client waits here, during a drain, for the rest of its
 * stream: a request stream this process writes, whose calls are over (or
 * interrupted) and whose end is coming, or one whose read is in flight
 * (asked again next time). With the memory log every request stream is
 * such, as no other process could show it. The standalone stream never
 * ends, and one written elsewhere is shown as well by another instance.
 */
static int
view_drain_stays(struct view *v)
{
	struct stream	*sa = session_standalone(v->session);

	if (sa != NULL && stream_id(sa) == v->k)
		return (0);
	return (!server.shared || v->reading ||
	    (v->watch != NULL && stream_watcher_local(v->watch)));
}

/*
 * The drain's calls are over: responses that will not end here soon end
 * now, with retry:. Returns how many stay for their stream's end (the
 * drain asks again until none does).
 */
size_t
view_drain_step(void)
{
	struct view	*v, *v1;
	size_t		 n = 0;

	TAILQ_FOREACH_SAFE(v, &view_all, entry, v1) {
		if (v->state != VIEW_STREAMING)
			continue;
		if (view_drain_stays(v))
			n++;
		else
			view_retry_end(v);
	}
	return (n);
}

/* The drain is over: every response still open ends with retry:. */
size_t
view_drain_end(void)
{
	struct view	*v, *v1;
	size_t		 n = 0;

	TAILQ_FOREACH_SAFE(v, &view_all, entry, v1) {
		if (v->state != VIEW_STREAMING)
			continue;
		view_retry_end(v);
		n++;
	}
	return (n);
}

void
view_shutdown(void)
{
	struct view	*v, *v1;

	TAILQ_FOREACH_SAFE(v, &view_all, entry, v1)
		view_abort(v, "shutdown");
}

size_t
view_count(void)
{
	return (view_n);
}

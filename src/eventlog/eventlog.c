/*
 * The event-log API. Callers see one asynchronous interface; the backend
 * behind it is chosen by the `eventlog` directive.
 */
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "eventlog.h"
#include "log.h"
#include "random.h"
#include "xmalloc.h"

struct eventlog {
	const struct eventlog_ops	*ops;
	void				*backend;
};

struct eventlog *
eventlog_create(struct event_base *base, const struct conf *conf,
    char **cause)
{
	struct eventlog	*el;

	el = xcalloc(1, sizeof *el);
	switch (conf->eventlog) {
	case CONF_EVENTLOG_MEMORY:
		el->backend = eventlog_memory_create(base, conf, &el->ops,
		    cause);
		break;
	case CONF_EVENTLOG_REDIS:
		if (conf->redis_kind == CONF_REDIS_CLUSTER)
			el->backend = eventlog_redis_cluster_create(base, conf,
			    &el->ops, cause);
		else
			el->backend = eventlog_redis_create(base, conf,
			    &el->ops, cause);
		break;
	default:
		xasprintf(cause, "unknown event log backend");
		break;
	}
	if (el->backend == NULL) {
		free(el);
		return (NULL);
	}
	return (el);
}

void
eventlog_free(struct eventlog *el)
{
	if (el == NULL)
		return;
	el->ops->free(el->backend);
	free(el);
}

uint64_t
eventlog_new_stream_id(void)
{
	return (random_u48());
}

void
eventlog_session_store(struct eventlog *el, const char *sid,
    const char *meta, size_t len, eventlog_done_cb cb, void *arg)
{
	el->ops->session_store(el->backend, sid, meta, len, cb, arg);
}

void
eventlog_session_update(struct eventlog *el, const char *sid,
    const char *meta, size_t len, eventlog_done_cb cb, void *arg)
{
	el->ops->session_update(el->backend, sid, meta, len, cb, arg);
}

void
eventlog_session_load(struct eventlog *el, const char *sid,
    eventlog_load_cb cb, void *arg)
{
	el->ops->session_load(el->backend, sid, cb, arg);
}

void
eventlog_session_delete(struct eventlog *el, const char *sid,
    eventlog_done_cb cb, void *arg)
{
	el->ops->session_delete(el->backend, sid, cb, arg);
}

void
eventlog_stream_create(struct eventlog *el, const char *sid, uint64_t k,
    eventlog_append_cb cb, void *arg)
{
	el->ops->stream_create(el->backend, sid, k, cb, arg);
}

void
eventlog_append(struct eventlog *el, const char *sid, uint64_t k,
    uint64_t seq, const char *data, size_t len, int flags,
    eventlog_append_cb cb, void *arg)
{
	el->ops->append(el->backend, sid, k, seq, data, len, flags, cb, arg);
}

void
eventlog_stream_end(struct eventlog *el, const char *sid, uint64_t k,
    eventlog_append_cb cb, void *arg)
{
	el->ops->stream_end(el->backend, sid, k, cb, arg);
}

void
eventlog_read(struct eventlog *el, const char *sid, uint64_t k,
    uint64_t from, size_t max, eventlog_read_cb cb, void *arg)
{
	el->ops->read(el->backend, sid, k, from, max, cb, arg);
}

/* Whether other processes commit to this log (so sessions are shared). */
int
eventlog_shared(const struct eventlog *el)
{
	return (el->ops->watch != NULL);
}

int
eventlog_available(const struct eventlog *el)
{
	if (el->ops->available == NULL)
		return (1);
	return (el->ops->available(el->backend));
}

void
eventlog_describe(const struct eventlog *el, struct eventlog_where *w)
{
	memset(w, 0, sizeof *w);
	w->address = el->ops->name;
	if (el->ops->describe != NULL)
		el->ops->describe(el->backend, w);
}

int
eventlog_reconfigure(struct eventlog *el, const struct conf *conf,
    char **cause)
{
	if (el->ops->reconfigure == NULL)
		return (0);
	return (el->ops->reconfigure(el->backend, conf, cause));
}

void
eventlog_on_available(struct eventlog *el, void (*cb)(void *), void *arg)
{
	if (el->ops->on_available != NULL)
		el->ops->on_available(el->backend, cb, arg);
}

uint64_t
eventlog_steady_ms(const struct eventlog *el)
{
	if (el->ops->steady == NULL)
		return (UINT64_MAX);
	return (el->ops->steady(el->backend));
}

const char *
eventlog_name(const struct eventlog *el)
{
	return (el->ops->name);
}

void
eventlog_watch(struct eventlog *el, const char *sid, eventlog_watch_cb cb,
    eventlog_message_cb mcb, void *arg)
{
	if (el->ops->watch != NULL)
		el->ops->watch(el->backend, sid, cb, mcb, arg);
}

void
eventlog_unwatch(struct eventlog *el, const char *sid, eventlog_watch_cb cb,
    eventlog_message_cb mcb, void *arg)
{
	if (el->ops->unwatch != NULL)
		el->ops->unwatch(el->backend, sid, cb, mcb, arg);
}

void
eventlog_publish(struct eventlog *el, const char *sid, const char *msg,
    size_t len, eventlog_done_cb cb, void *arg)
{
	if (len > EVENTLOG_MESSAGE_MAX || (len > 0 && msg[0] == '!'))
		fatalx("session=%s: a message the log cannot carry (%zu "
		    "bytes)", sid, len);
	el->ops->publish(el->backend, sid, msg, len, cb, arg);
}

void
eventlog_note_set(struct eventlog *el, const char *sid, const char *name,
    const char *value, size_t len, uint64_t ttl_ms, eventlog_done_cb cb,
    void *arg)
{
	el->ops->note_set(el->backend, sid, name, value, len, ttl_ms, cb, arg);
}

void
eventlog_note_get(struct eventlog *el, const char *sid, const char *name,
    eventlog_load_cb cb, void *arg)
{
	el->ops->note_get(el->backend, sid, name, cb, arg);
}

void
eventlog_task_put(struct eventlog *el, const char *tid, uint64_t rev,
    const char *rec, size_t len, uint64_t ttl_ms, int final,
    eventlog_done_cb cb, void *arg)
{
	/* No task id in the line: it is the task's secret. */
	if (rev == 0)
		fatalx("a task's revision 0 is never written");
	el->ops->task_put(el->backend, tid, rev, rec, len, ttl_ms, final, cb,
	    arg);
}

void
eventlog_task_get(struct eventlog *el, const char *tid, eventlog_task_cb cb,
    void *arg)
{
	el->ops->task_get(el->backend, tid, cb, arg);
}

void
eventlog_keyring(struct eventlog *el, uint64_t period_ms, const char *fresh1,
    const char *fresh2, eventlog_keyring_cb cb, void *arg)
{
	size_t	l1 = strlen(fresh1), l2 = strlen(fresh2);

	if (period_ms == 0 || l1 == 0 || l1 > EVENTLOG_KEY_MAX || l2 == 0 ||
	    l2 > EVENTLOG_KEY_MAX)
		fatalx("keyring: a period of 0 or a key the log cannot keep");
	el->ops->keyring(el->backend, period_ms, fresh1, fresh2, cb, arg);
}

void
eventlog_take(struct eventlog *el, const struct eventlog_take *t,
    eventlog_take_cb cb, void *arg)
{
	if (el->ops->take == NULL)
		fatalx("eventlog_take: the %s log keeps no limits",
		    el->ops->name);
	el->ops->take(el->backend, t, cb, arg);
}

void
eventlog_slot(struct eventlog *el, enum eventlog_slot_op op, const char *key,
    uint64_t max, uint64_t ttl_ms, const char *const *members, size_t n,
    eventlog_slot_cb cb, void *arg)
{
	if (el->ops->slot == NULL)
		fatalx("eventlog_slot: the %s log keeps no limits",
		    el->ops->name);
	el->ops->slot(el->backend, op, key, max, ttl_ms, members, n, cb, arg);
}

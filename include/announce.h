/*
 * The one notice board of changes clients hear about: a list of tools,
 * prompts or resources changed, a resource was updated, a task's status
 * changed. Whoever makes a change (a provider, an upstream, task.c) calls
 * announce_change and nothing else; whoever tells clients (the sessions'
 * standalone streams, the listen streams of the stateless path) subscribes
 * here, so no producer names a transport and none is forgotten.
 *
 * A subscriber hears each change once. Its reach says which:
 *  - ANNOUNCE_HERE: the changes made in this process. Sessions' streams
 *    are in the event log, which every instance writing to them shares:
 *    were each instance to tell them of every change, they would hear it
 *    once per instance.
 *  - ANNOUNCE_EVERYWHERE: the changes of every instance sharing the log,
 *    this one included (with a shared log, published on one channel and
 *    heard when the message comes back; a message heard is never
 *    published again). Its lost hook says changes may have been missed:
 *    the subscription to the channel was lost and is live again.
 * Hooks run inside announce_change or inside the log's message callback;
 * they must not subscribe or unsubscribe.
 *
 * A change has a source: the upstream block it comes from, or "" for
 * mcpd's own providers. Subscribers tell it only to what serves that
 * source (an endpoint's sessions and listen streams, protocol.md,
 * Endpoints).
 */
#ifndef MCPD_ANNOUNCE_H
#define MCPD_ANNOUNCE_H

/* What changed. The numbers go between instances: append only. */
enum announce_kind {
	ANNOUNCE_TOOLS,			/* tools/list_changed */
	ANNOUNCE_PROMPTS,		/* prompts/list_changed */
	ANNOUNCE_RESOURCES,		/* resources/list_changed */
	ANNOUNCE_RESOURCE_UPDATED,	/* resources/updated: uri */
	ANNOUNCE_TASK,			/* a task's status: uri is its id */
	ANNOUNCE_KIND_MAX
};

enum announce_reach {
	ANNOUNCE_HERE,
	ANNOUNCE_EVERYWHERE
};

struct announce_hooks {
	enum announce_reach	 reach;
	/* A change (uri "" unless the kind has one) and its source. */
	void			(*changed)(enum announce_kind, const char *,
				    const char *, void *);
	/* ANNOUNCE_EVERYWHERE: changes may have been missed (may be NULL). */
	void			(*lost)(const char *, void *);
};

/* The notification method of a kind (NULL for ANNOUNCE_TASK). */
const char	*announce_method(enum announce_kind);

void		 announce_subscribe(const struct announce_hooks *, void *);
void		 announce_unsubscribe(const struct announce_hooks *, void *);
/* A change of mcpd's own providers (source ""). */
void		 announce_change(enum announce_kind, const char *);
/* A change of source (an upstream block's name; NULL or "": mcpd's). */
void		 announce_change_from(enum announce_kind, const char *,
		     const char *);

/*
 * Whether every instance's changes can be heard now: always without a
 * shared log; with one, once the subscription is live and while the log
 * is available.
 */
int		 announce_hearing(void);
void		 announce_init(void);
void		 announce_shutdown(void);

#endif

/*
 * One connection to a Redis server: TCP, a unix socket, or TCP with TLS,
 * speaking RESP with hiredis's parser (redisReader) and nothing else of
 * hiredis. Commands go out in the order sent, the commands of one loop
 * turn in one write at its end; each reply goes to the oldest command
 * still waiting for one, and a reply nothing waits for (pub/sub messages,
 * a subscription's confirmations) to the push callback.
 *
 * The rules hiredis's async API keeps, kept here: every command sent with
 * a callback has it called exactly once, with its reply, or with NULL when
 * the link goes; never inside redis_link_send. A link closed from inside
 * one of its own callbacks is freed once that callback returns. What the
 * link says through its callbacks never carries what was sent (a password
 * in an AUTH is not in any error text).
 */
#ifndef MCPD_REDIS_LINK_H
#define MCPD_REDIS_LINK_H

#include <stddef.h>

struct event_base;
struct redisReply;
struct redis_link;
struct redis_link_tls;

/* Where a link goes: host and port (TCP, TLS), or path (a unix socket). */
struct redis_link_addr {
	const char	*host;
	int		 port;
	const char	*path;
	int		 tls;
};

/* How a TLS link checks the server (redis_tls_* directives). */
struct redis_link_tls_conf {
	const char	*ca_file;	/* NULL: the system's store */
	const char	*cert_file;	/* with key_file: a client certificate */
	const char	*key_file;
	const char	*server_name;	/* NULL: the address's host */
	int		 verify;	/* 0: no checks at all (warned) */
};

typedef void	(*redis_link_reply_cb)(struct redis_link *,
		    struct redisReply *, void *);

/*
 * What a link tells its owner (any may be NULL), with the arg given to
 * redis_link_open:
 *   up	the connection is there (with TLS: the handshake is done).
 *   push	a reply no command waits for; freed after the callback.
 *   down	the link failed by itself (closed by the server, an I/O or
 *		TLS error, a protocol error): why says so. The link is
 *		freed after the callbacks still owed (NULL replies) have
 *		run; forget it here. Not called for redis_link_close.
 *   flush	the commands of this loop turn are about to be written; a
 *		command sent now goes with them.
 */
struct redis_link_events {
	void	(*up)(struct redis_link *, void *);
	void	(*push)(struct redis_link *, struct redisReply *, void *);
	void	(*down)(struct redis_link *, const char *, void *);
	void	(*flush)(struct redis_link *, void *);
};

/*
 * The TLS settings of every link to one Redis deployment. Checks the
 * files now: NULL with *cause if one cannot be used. Links keep what
 * they need, so it may be freed while they live.
 */
struct redis_link_tls *redis_link_tls_new(const struct redis_link_tls_conf *,
		    char **);
void		 redis_link_tls_free(struct redis_link_tls *);

/*
 * Starts connecting (the host name is resolved now). NULL with *cause
 * when it cannot even start; every later failure is a down callback.
 * tls is needed when addr->tls is set.
 */
struct redis_link *redis_link_open(struct event_base *,
		    const struct redis_link_addr *, struct redis_link_tls *,
		    const struct redis_link_events *, void *, char **);
/*
 * Sends a command written in the protocol (len bytes, copied); cb hears
 * its reply. With a NULL cb nothing waits for a reply: what the server
 * answers arrives as pushes (pub/sub commands, whose confirmations may
 * come after messages). -1 if the link is closing: cb is not called.
 */
int		 redis_link_send(struct redis_link *, const char *, size_t,
		    redis_link_reply_cb, void *);
/* The same, written from argc arguments. */
int		 redis_link_sendv(struct redis_link *, redis_link_reply_cb,
		    void *, int, const char *const *, const size_t *);
/* The same, from NUL-terminated strings, the last followed by NULL. */
int		 redis_link_command(struct redis_link *, redis_link_reply_cb,
		    void *, ...) __attribute__((sentinel));
/* AUTH [USER] PASSWORD (user NULL: the password alone). */
int		 redis_link_auth(struct redis_link *, const char *,
		    const char *, redis_link_reply_cb, void *);
/*
 * Closes the link now: the callbacks owed get NULL replies (now, or
 * after the callback of this link that is running returns), then the
 * link is freed. NULL is fine.
 */
void		 redis_link_close(struct redis_link *);

/*
 * Called from a reply callback: the reply is the callback's to keep
 * (freeReplyObject), not freed when the callback returns.
 */
void		 redis_link_take_reply(struct redis_link *);
/* Commands sent and not answered yet. */
size_t		 redis_link_pending(const struct redis_link *);
/* Whether the link is up (connected, TLS handshake done). */
int		 redis_link_is_up(const struct redis_link *);
/*
 * What the link waits for while it is not up, for a connect that takes
 * too long: "TCP connect", "TLS handshake (is it a plaintext port? ...)".
 */
const char	*redis_link_waiting_for(const struct redis_link *);
/* A TLS link's protocol and cipher once up; NULL otherwise. */
const char	*redis_link_tls_version(const struct redis_link *);
const char	*redis_link_tls_cipher(const struct redis_link *);

#endif

/*
 * The Redis side of the redis event log: the key layout, the Lua script that
 * makes every operation one atomic step, and the parsing of what Redis
 * answers. No I/O here, so all of it is testable without a server.
 */
#ifndef MCPD_REDIS_SCRIPT_H
#define MCPD_REDIS_SCRIPT_H

#include <stddef.h>
#include <stdint.h>

#include "eventlog.h"

struct redisReply;

/* What one call of the script answered. */
struct redis_script_result {
	enum eventlog_status	 status;
	int			 has_info;
	struct eventlog_info	 info;
	struct eventlog_entry	*entries;	/* read: point into the reply */
	size_t			 nentries;
};

/* One message on a subscription connection. */
enum redis_pubsub_kind {
	REDIS_PUBSUB_SUBSCRIBE,
	REDIS_PUBSUB_UNSUBSCRIBE,
	REDIS_PUBSUB_MESSAGE,
	REDIS_PUBSUB_OTHER
};

struct redis_pubsub {
	enum redis_pubsub_kind	 kind;
	const char		*channel;	/* points into the reply */
	size_t			 channellen;
	uint64_t		 k;		/* message: the committed id */
	uint64_t		 seq;
	const char		*data;		/* or k == 0: a message */
	size_t			 len;
};

/*
 * The script's text: with sharded, Redis Cluster's variant, which
 * publishes with SPUBLISH (and whose check op asks for SSUBSCRIBE).
 */
const char	*redis_script_source(int);

/*
 * The layout this mcpd reads and writes (docs/protocol.md, Redis layout),
 * and the key that marks a store with it. Layout 1, before the mark, had
 * the same keys and plain channels: on one Redis, instances of layouts 1
 * and 2 agree. An instance refuses a store marked with another layout.
 */
#define REDIS_SCRIPT_LAYOUT		2
#define REDIS_SCRIPT_LAYOUT_KEY		"mcpd:{layout}:version"
/* The layout op's answer, {'ok', N}: -1 if it has another shape. */
int		 redis_script_layout(const struct redisReply *, int *);

/*
 * Key and channel names of a session: their pieces (head, SID, tail, and
 * for a stream K), printf formats of the SID (and K, an unsigned long
 * long), and the same names allocated.
 */
#define REDIS_SCRIPT_KEY_HEAD		"mcpd:{"
#define REDIS_SCRIPT_META_TAIL		"}:meta"
#define REDIS_SCRIPT_STREAM_TAIL	"}:s:"
#define REDIS_SCRIPT_CHANNEL_TAIL	"}:events"
#define REDIS_SCRIPT_NOTE_TAIL		"}:x:"
#define REDIS_SCRIPT_FIELD_HEAD		"k:"	/* then K, in the meta */
#define REDIS_SCRIPT_META_KEY		"mcpd:{%s}:meta"
#define REDIS_SCRIPT_STREAM_KEY		"mcpd:{%s}:s:%llu"
#define REDIS_SCRIPT_STREAM_PREFIX	"mcpd:{%s}:s:"
#define REDIS_SCRIPT_CHANNEL		"mcpd:{%s}:events"
#define REDIS_SCRIPT_NOTE_KEY		"mcpd:{%s}:x:%s"
#define REDIS_SCRIPT_TASK_KEY		"mcpd:{%s}:task"
/* The keyring and its rotation mark (one slot: one hash tag). */
#define REDIS_SCRIPT_KEYRING_KEY	"mcpd:{keyring}:keys"
#define REDIS_SCRIPT_KEYRING_MARK	"mcpd:{keyring}:rotated"
/*
 * A limit's bucket and its slots, for one key ("NAME:HEX"): their hash
 * tag (REDIS_SCRIPT_LIMIT_TAG) is the key's own, so in a Cluster its
 * operations go to the node of that key's slot, not a session's.
 */
#define REDIS_SCRIPT_LIMIT_TAG		"l:%s"
#define REDIS_SCRIPT_BUCKET_KEY		"mcpd:{l:%s}:b"
#define REDIS_SCRIPT_SLOTS_KEY		"mcpd:{l:%s}:c"
/* On the channel, before a message of eventlog_publish (2 bytes). */
#define REDIS_SCRIPT_MESSAGE_HEAD	"m "
char		*redis_script_meta_key(const char *);
char		*redis_script_note_key(const char *, const char *);
char		*redis_script_stream_key(const char *, uint64_t);
char		*redis_script_stream_prefix(const char *);
char		*redis_script_channel(const char *);
char		*redis_script_limit_tag(const char *);
char		*redis_script_task_key(const char *);
char		*redis_script_limit_key(const char *, int);

/*
 * Parses the script's answer: {status} or {status, head, oldest, ended,
 * [seq, data]...}. Returns -1 with *cause set (allocated) if the reply does
 * not have that shape. Entries are allocated; clear the result after use.
 */
int		 redis_script_result(const struct redisReply *,
		     struct redis_script_result *, char **);
void		 redis_script_result_clear(struct redis_script_result *);
/*
 * Parses the keyring operation's answer, {"ok", generation, previous,
 * current, next}: the ring points into the reply. -1 if it has another
 * shape (a key empty or over EVENTLOG_KEY_MAX, previous excepted, which
 * is empty until the first rotation).
 */
int		 redis_script_keyring(const struct redisReply *,
		     struct eventlog_keyring *);

/*
 * The take operation's answer, {"ok", granted, wait_ms, day, quota}, and
 * the slot operation's, {"ok", 0|1}; -1 for another shape.
 */
int		 redis_script_taken(const struct redisReply *,
		     struct eventlog_taken *);
int		 redis_script_slot(const struct redisReply *, int *);
/* An error reply saying the script is not in the server's cache. */
int		 redis_script_noscript(const struct redisReply *);
/*
 * What INFO says of a server: which run it is, the keys of one DB, its
 * role (master, slave), maxmemory-policy ("" if not said), and whether
 * it is a node of a Redis Cluster (cluster_enabled: 1, 0, or -1 when
 * not said).
 */
struct redis_info {
	char		 run_id[41];
	long long	 keys;
	char		 role[16];
	char		 policy[32];
	int		 cluster;
};
/* Parses an INFO answer for database db; -1 if it names no run id. */
int		 redis_script_info(const struct redisReply *, int,
		     struct redis_info *);
/*
 * What an error reply says of the connection: nothing (an error of one
 * operation), or that nothing will run on it until the cause is gone:
 * the password or user refused, the ACL, the server's role (a replica),
 * or a passing state (loading, busy). why gets the cause, in words,
 * with the reply (which never holds a password).
 */
enum redis_script_refusal {
	REDIS_REFUSED_NONE,
	REDIS_REFUSED_AUTH,
	REDIS_REFUSED_ACL,
	REDIS_REFUSED_ROLE,
	REDIS_REFUSED_BUSY
};
enum redis_script_refusal redis_script_refusal(const struct redisReply *,
		     char *, size_t);
/* The command the script's line N calls ("XADD"), or NULL. */
const char	*redis_script_command_at(int);
/* Classifies a subscription reply; -1 if it is malformed. */
int		 redis_script_pubsub(const struct redisReply *,
		     struct redis_pubsub *);

#endif

/*
 * The redis event log's directives: the eventlog address in its four
 * forms, the credentials (in the URL, or a user and a password file read
 * at start-up and at every reload), the TLS settings, and how they must
 * agree with each other. A password is never put in an error text: a
 * URL is shown with its user information masked.
 *
 *   redis://[USER[:PASSWORD]@]HOST[:PORT][/DB]
 *   rediss://[USER[:PASSWORD]@]HOST[:PORT][/DB]		(TLS)
 *   unix:///PATH[?db=N]
 *   redis-sentinel://[USER[:PASSWORD]@]H1[:P1],H2[:P2].../MASTER[/DB]
 *   redis-cluster://[USER[:PASSWORD]@]H1[:P1],H2[:P2]...
 *
 * USER and PASSWORD are percent-decoded (RFC 3986, as Redis clients take
 * them: an "@", ":" or "/" in them is written %40, %3A, %2F); so is PATH.
 * The port defaults to 6379 (26379 for a sentinel), DB to 0. A cluster's
 * nodes (seeds: any of its nodes, from which mcpd learns the others) go
 * where the sentinels do; a cluster has database 0 only.
 */
#include <sys/un.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf_int.h"
#include "xmalloc.h"

#define CONF_REDIS_PORT		6379
#define CONF_SENTINEL_PORT	26379
#define CONF_REDIS_DB_MAX	15
#define CONF_SENTINELS_MAX	16
#define CONF_SECRET_MAX		4096	/* bytes of a password file */
#define CONF_REDIS_NAME_MAX	256	/* a user, a sentinel service */

/* What one eventlog URL says, before it is taken. */
struct conf_redis_url {
	enum conf_redis_kind	 kind;
	char			*host;
	int			 port;
	char			*path;
	char			*master;
	struct conf_redis_node	*sentinels;
	size_t			 nsentinels;
	int			 db;
	char			*user;
	char			*password;
};

static void
conf_redis_secret_free(char *s)
{
	if (s != NULL) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

static void
conf_redis_nodes_free(struct conf_redis_node *nodes, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		free(nodes[i].host);
	free(nodes);
}

static void
conf_redis_url_clear(struct conf_redis_url *u)
{
	free(u->host);
	free(u->path);
	free(u->master);
	conf_redis_nodes_free(u->sentinels, u->nsentinels);
	free(u->user);
	conf_redis_secret_free(u->password);
	memset(u, 0, sizeof *u);
}

/* The fields the eventlog URL sets, freed (a secret zeroed first). */
static void
conf_redis_address_free(struct conf *conf)
{
	conf_redis_secret_free(conf->redis_url);
	free(conf->redis_name);
	free(conf->redis_host);
	free(conf->redis_path);
	free(conf->redis_master);
	conf_redis_nodes_free(conf->redis_sentinels, conf->nredis_sentinels);
	free(conf->redis_url_user);
	conf_redis_secret_free(conf->redis_url_password);
	conf->redis_url = conf->redis_name = conf->redis_host = NULL;
	conf->redis_path = conf->redis_master = NULL;
	conf->redis_sentinels = NULL;
	conf->nredis_sentinels = 0;
	conf->redis_url_user = conf->redis_url_password = NULL;
	conf->redis_kind = CONF_REDIS_TCP;
	conf->redis_port = CONF_REDIS_PORT;
	conf->redis_db = 0;
}

void
conf_redis_free(void *base)
{
	struct conf	*conf = base;

	conf_redis_address_free(conf);
	conf_redis_secret_free(conf->redis_password);
	conf_redis_secret_free(conf->redis_sentinel_password);
	conf->redis_password = conf->redis_sentinel_password = NULL;
}

/*
 * s with its user information (user and password) shown as "***": what
 * an error about a URL may show.
 */
static char *
conf_redis_mask(const char *s)
{
	const char	*p, *end, *at = NULL;
	char		*out;

	if ((p = strstr(s, "://")) == NULL)
		return (xstrdup(s));
	p += 3;
	end = p + strcspn(p, "/?");
	for (; p < end; p++) {
		if (*p == '@')
			at = p;
	}
	if (at == NULL)
		return (xstrdup(s));
	p = strstr(s, "://") + 3;
	xasprintf(&out, "%.*s***%s", (int)(p - s), s, at);
	return (out);
}

static int
conf_redis_hex(int c)
{
	if (c >= '0' && c <= '9')
		return (c - '0');
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return (c - 'a' + 10);
	return (-1);
}

/* Percent-decodes len bytes of s; NULL for a bad escape or a NUL. */
static char *
conf_redis_decode(const char *s, size_t len)
{
	char	*out = xmalloc(len + 1), *q = out;
	size_t	 i;
	int	 hi, lo;

	for (i = 0; i < len; i++) {
		if (s[i] != '%') {
			*q++ = s[i];
			continue;
		}
		if (i + 2 >= len) {
			free(out);
			return (NULL);
		}
		if ((hi = conf_redis_hex((unsigned char)s[i + 1])) < 0 ||
		    (lo = conf_redis_hex((unsigned char)s[i + 2])) < 0 ||
		    (hi == 0 && lo == 0)) {
			free(out);
			return (NULL);
		}
		*q++ = (char)(hi << 4 | lo);
		i += 2;
	}
	*q = '\0';
	return (out);
}

/* DB: 0 to 15, as written ("" is 0). */
static int
conf_redis_db(const char *s, size_t len, int *db)
{
	if (len == 0) {
		*db = 0;
		return (0);
	}
	if (len > 2 || strspn(s, "0123456789") < len)
		return (-1);
	*db = (int)strtol(s, NULL, 10);
	return (*db <= CONF_REDIS_DB_MAX ? 0 : -1);
}

/* USER[:PASSWORD] of an authority, len bytes. */
static int
conf_redis_userinfo(const char *s, size_t len, struct conf_redis_url *u,
    char **why)
{
	const char	*colon = memchr(s, ':', len);
	size_t		 ulen = colon != NULL ? (size_t)(colon - s) : len;

	if (ulen > 0 && (u->user = conf_redis_decode(s, ulen)) == NULL) {
		xasprintf(why, "a bad %%-escape in the user");
		return (-1);
	}
	if (colon != NULL && (u->password = conf_redis_decode(colon + 1,
	    len - ulen - 1)) == NULL) {
		xasprintf(why, "a bad %%-escape in the password");
		return (-1);
	}
	if (u->password != NULL && *u->password == '\0') {
		free(u->password);
		u->password = NULL;
	}
	if (u->user == NULL && u->password == NULL) {
		xasprintf(why, "an empty user and password before \"@\"");
		return (-1);
	}
	if (u->user != NULL && strlen(u->user) > CONF_REDIS_NAME_MAX) {
		xasprintf(why, "the user is longer than %d bytes",
		    CONF_REDIS_NAME_MAX);
		return (-1);
	}
	return (0);
}

/* unix:///PATH[?db=N] */
static int
conf_redis_parse_unix(const char *p, struct conf_redis_url *u, char **why)
{
	const char		*q = strchr(p, '?');
	size_t			 len = q != NULL ? (size_t)(q - p) : strlen(p);
	struct sockaddr_un	 sun;

	if (*p != '/') {
		xasprintf(why, "expected unix:///PATH (an absolute path)");
		return (-1);
	}
	if ((u->path = conf_redis_decode(p, len)) == NULL) {
		xasprintf(why, "a bad %%-escape in the path");
		return (-1);
	}
	if (strlen(u->path) >= sizeof sun.sun_path) {
		xasprintf(why, "the socket path is longer than %zu bytes",
		    sizeof sun.sun_path - 1);
		return (-1);
	}
	if (q != NULL && (strncmp(q, "?db=", 4) != 0 ||
	    conf_redis_db(q + 4, strlen(q + 4), &u->db) != 0 ||
	    q[4] == '\0')) {
		xasprintf(why, "expected ?db=N after the path (N 0 to %d)",
		    CONF_REDIS_DB_MAX);
		return (-1);
	}
	return (0);
}

/* H1[:P1],H2[:P2]... of a sentinel or cluster URL, len bytes. */
static int
conf_redis_parse_sentinels(const char *s, size_t len,
    struct conf_redis_url *u, char **why)
{
	int		 cluster = u->kind == CONF_REDIS_CLUSTER;
	const char	*what = cluster ? "node" : "sentinel";
	const char	*p = s, *end = s + len, *comma;
	char		*one, *sub;
	int		 rc;

	while (p < end) {
		if ((comma = memchr(p, ',', (size_t)(end - p))) == NULL)
			comma = end;
		if (u->nsentinels == CONF_SENTINELS_MAX) {
			xasprintf(why, "more than %d %ss",
			    CONF_SENTINELS_MAX, what);
			return (-1);
		}
		u->sentinels = xreallocarray(u->sentinels, u->nsentinels + 1,
		    sizeof *u->sentinels);
		one = xstrndup(p, (size_t)(comma - p));
		rc = conf_parse_hostport(one, cluster ? CONF_REDIS_PORT :
		    CONF_SENTINEL_PORT,
		    &u->sentinels[u->nsentinels].host,
		    &u->sentinels[u->nsentinels].port, &sub);
		free(one);
		if (rc != 0) {
			xasprintf(why, "%s %zu: %s", what, u->nsentinels + 1,
			    sub);
			free(sub);
			return (-1);
		}
		u->nsentinels++;
		if (u->sentinels[u->nsentinels - 1].port == 0) {
			xasprintf(why, "%s %zu: port 0", what,
			    u->nsentinels);
			return (-1);
		}
		p = comma + 1;
	}
	if (u->nsentinels == 0 || s[len - 1] == ',') {
		xasprintf(why, "expected H1:P1,H2:P2,... (the %ss)", what);
		return (-1);
	}
	return (0);
}

/* /MASTER[/DB] of a sentinel URL. */
static int
conf_redis_parse_master(const char *p, struct conf_redis_url *u, char **why)
{
	const char	*slash;
	size_t		 len;

	if (*p == '/')
		p++;
	slash = strchr(p, '/');
	len = slash != NULL ? (size_t)(slash - p) : strlen(p);
	if (len == 0 || len > CONF_REDIS_NAME_MAX ||
	    strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789._-") < len) {
		xasprintf(why, "expected /MASTER[/DB] after the sentinels, "
		    "MASTER the name the sentinels monitor");
		return (-1);
	}
	u->master = xstrndup(p, len);
	if (slash != NULL && (conf_redis_db(slash + 1, strlen(slash + 1),
	    &u->db) != 0 || slash[1] == '\0')) {
		xasprintf(why, "database must be 0 to %d", CONF_REDIS_DB_MAX);
		return (-1);
	}
	return (0);
}

/*
 * The part after "://" of redis://, rediss://, redis-sentinel:// and
 * redis-cluster://.
 */
static int
conf_redis_parse_network(const char *p, struct conf_redis_url *u,
    char **why)
{
	const char	*end = p + strcspn(p, "/"), *at = NULL, *q, *hosts;
	char		*hostport, *sub;
	int		 rc;

	if (strchr(p, '?') != NULL || strchr(p, '#') != NULL) {
		xasprintf(why, "no query or fragment is taken");
		return (-1);
	}
	for (q = p; q < end; q++) {
		if (*q == '@')
			at = q;
	}
	hosts = p;
	if (at != NULL) {
		if (conf_redis_userinfo(p, (size_t)(at - p), u, why) != 0)
			return (-1);
		hosts = at + 1;
	}
	if (u->kind == CONF_REDIS_SENTINEL) {
		if (conf_redis_parse_sentinels(hosts, (size_t)(end - hosts), u,
		    why) != 0)
			return (-1);
		return (conf_redis_parse_master(end, u, why));
	}
	if (u->kind == CONF_REDIS_CLUSTER) {
		if (conf_redis_parse_sentinels(hosts, (size_t)(end - hosts), u,
		    why) != 0)
			return (-1);
		if (*end != '\0') {
			xasprintf(why, "nothing is taken after the nodes (a "
			    "cluster has database 0 only)");
			return (-1);
		}
		return (0);
	}
	hostport = xstrndup(hosts, (size_t)(end - hosts));
	rc = conf_parse_hostport(hostport, CONF_REDIS_PORT, &u->host, &u->port,
	    &sub);
	free(hostport);
	if (rc != 0) {
		xasprintf(why, "%s", sub);
		free(sub);
		return (-1);
	}
	if (u->port == 0) {
		xasprintf(why, "port 0");
		return (-1);
	}
	if (*end == '/' && (conf_redis_db(end + 1, strlen(end + 1),
	    &u->db) != 0 || end[1] == '\0')) {
		xasprintf(why, "database must be 0 to %d", CONF_REDIS_DB_MAX);
		return (-1);
	}
	return (0);
}

/* A host for a name: an IPv6 address in brackets. */
static void
conf_redis_name_host(char **name, const char *host, int port)
{
	char	*s;

	xasprintf(&s, "%s%s%s%s:%d", *name, strchr(host, ':') != NULL ? "[" :
	    "", host, strchr(host, ':') != NULL ? "]" : "", port);
	free(*name);
	*name = s;
}

/* The URL again, from its parts, its password shown as "***". */
static char *
conf_redis_name(const struct conf_redis_url *u)
{
	static const char	*schemes[] = { "redis://", "rediss://",
				    "unix://", "redis-sentinel://",
				    "redis-cluster://" };
	char			*name, *s;
	size_t			 i;

	xasprintf(&name, "%s%s%s%s", schemes[u->kind], u->user != NULL ?
	    u->user : "", u->password != NULL ? ":***" : "",
	    u->user != NULL || u->password != NULL ? "@" : "");
	switch (u->kind) {
	case CONF_REDIS_TCP:
	case CONF_REDIS_TLS:
		conf_redis_name_host(&name, u->host, u->port);
		xasprintf(&s, "%s/%d", name, u->db);
		break;
	case CONF_REDIS_UNIX:
		xasprintf(&s, "%s%s?db=%d", name, u->path, u->db);
		break;
	case CONF_REDIS_SENTINEL:
	case CONF_REDIS_CLUSTER:
		for (i = 0; i < u->nsentinels; i++) {
			if (i > 0) {
				xasprintf(&s, "%s,", name);
				free(name);
				name = s;
			}
			conf_redis_name_host(&name, u->sentinels[i].host,
			    u->sentinels[i].port);
		}
		if (u->kind == CONF_REDIS_SENTINEL)
			xasprintf(&s, "%s/%s/%d", name, u->master, u->db);
		else
			s = xstrdup(name);
		break;
	default:
		s = xstrdup(name);
		break;
	}
	free(name);
	return (s);
}

/*
 * memory | redis:// | rediss:// | unix:// | redis-sentinel:// |
 * redis-cluster://
 */
int
conf_parse_eventlog(void *base, const struct conf_entry *ce, const char *s,
    char **why)
{
	static const struct {
		const char		*scheme;
		enum conf_redis_kind	 kind;
	} schemes[] = {
		{ "redis://", CONF_REDIS_TCP },
		{ "rediss://", CONF_REDIS_TLS },
		{ "unix://", CONF_REDIS_UNIX },
		{ "redis-sentinel://", CONF_REDIS_SENTINEL },
		{ "redis-cluster://", CONF_REDIS_CLUSTER },
	};
	struct conf		*conf = base;
	struct conf_redis_url	 u;
	const char		*p = NULL;
	char			*sub = NULL, *mask;
	size_t			 i;
	int			 rc;

	if (strcmp(s, "memory") == 0) {
		conf->eventlog = CONF_EVENTLOG_MEMORY;
		conf_redis_address_free(conf);
		return (0);
	}
	memset(&u, 0, sizeof u);
	for (i = 0; i < CONF_NITEMS(schemes); i++) {
		if (strncasecmp(s, schemes[i].scheme,
		    strlen(schemes[i].scheme)) == 0) {
			p = s + strlen(schemes[i].scheme);
			u.kind = schemes[i].kind;
			break;
		}
	}
	mask = conf_redis_mask(s);
	if (p == NULL) {
		xasprintf(why, "expected memory, redis://, rediss://, unix://, "
		    "redis-sentinel:// or redis-cluster://, not \"%s\"", mask);
		free(mask);
		return (-1);
	}
	if (u.kind == CONF_REDIS_UNIX)
		rc = conf_redis_parse_unix(p, &u, &sub);
	else
		rc = conf_redis_parse_network(p, &u, &sub);
	if (rc != 0) {
		xasprintf(why, "invalid redis URL \"%s\" (%s)", mask, sub);
		free(sub);
		free(mask);
		conf_redis_url_clear(&u);
		return (-1);
	}
	free(mask);

	conf_redis_address_free(conf);
	conf->eventlog = CONF_EVENTLOG_REDIS;
	conf->redis_kind = u.kind;
	conf->redis_url = xstrdup(s);
	conf->redis_name = conf_redis_name(&u);
	conf->redis_host = u.host;
	conf->redis_port = u.kind == CONF_REDIS_TCP ||
	    u.kind == CONF_REDIS_TLS ? u.port : CONF_REDIS_PORT;
	conf->redis_path = u.path;
	conf->redis_master = u.master;
	conf->redis_sentinels = u.sentinels;
	conf->nredis_sentinels = u.nsentinels;
	conf->redis_db = u.db;
	conf->redis_url_user = u.user;
	conf->redis_url_password = u.password;
	return (0);
}

/*
 * A password file: its first line, without the line end. Read as it is
 * parsed, at start-up and at every reload, so a rotated password is
 * taken up by SIGHUP. Its text never reaches an error line.
 */
static int
conf_redis_read_secret(const char *path, char **secret, char **why)
{
	char	 buf[CONF_SECRET_MAX + 2];
	ssize_t	 n;
	size_t	 len = 0;
	int	 fd;

	*secret = NULL;
	if ((fd = open(path, O_RDONLY|O_CLOEXEC)) < 0) {
		xasprintf(why, "cannot read %s: %s", path, strerror(errno));
		return (-1);
	}
	while (len < sizeof buf - 1 &&
	    (n = read(fd, buf + len, sizeof buf - 1 - len)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			xasprintf(why, "cannot read %s: %s", path,
			    strerror(errno));
			close(fd);
			explicit_bzero(buf, sizeof buf);
			return (-1);
		}
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	len = strcspn(buf, "\r\n");
	if (len > CONF_SECRET_MAX || memchr(buf, '\0', len) != NULL)
		xasprintf(why, "%s: the password (its first line) must be 1 "
		    "to %d bytes without NUL", path, CONF_SECRET_MAX);
	else if (len == 0)
		xasprintf(why, "%s: no password on its first line", path);
	else {
		buf[len] = '\0';
		*secret = xstrdup(buf);
	}
	explicit_bzero(buf, sizeof buf);
	return (*secret != NULL ? 0 : -1);
}

/*
 * none | PATH, for redis_password_file and redis_sentinel_password_file:
 * the path at offset, what it holds at offset2.
 */
int
conf_parse_password_file(void *base, const struct conf_entry *ce,
    const char *s, char **why)
{
	char	**path = (char **)((char *)base + ce->offset);
	char	**secret = (char **)((char *)base + ce->offset2);
	char	 *value;

	if (strcmp(s, "none") == 0) {
		free(*path);
		conf_redis_secret_free(*secret);
		*path = *secret = NULL;
		return (0);
	}
	if (*s != '/') {
		xasprintf(why, "expected none or an absolute path, not "
		    "\"%s\"", s);
		return (-1);
	}
	if (conf_redis_read_secret(s, &value, why) != 0)
		return (-1);
	free(*path);
	conf_redis_secret_free(*secret);
	*path = xstrdup(s);
	*secret = value;
	return (0);
}

/* A user name: printable, no space (none: the default user). */
int
conf_check_redis_user(const char *s, char **value, char **why)
{
	const char	*p;

	if (strcmp(s, "none") == 0) {
		*value = NULL;
		return (0);
	}
	for (p = s; *p != '\0'; p++) {
		if (!isgraph((unsigned char)*p))
			break;
	}
	if (*p != '\0' || p - s > CONF_REDIS_NAME_MAX) {
		xasprintf(why, "a user name is 1 to %d printable characters "
		    "without spaces", CONF_REDIS_NAME_MAX);
		return (-1);
	}
	*value = xstrdup(s);
	return (0);
}

/* none | NAME, for redis_tls_server_name. */
int
conf_check_server_name(const char *s, char **value, char **why)
{
	size_t	len = strlen(s);

	if (strcmp(s, "none") == 0) {
		*value = NULL;
		return (0);
	}
	if (len == 0 || len > 253 || strspn(s, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.:") != len) {
		xasprintf(why, "expected none, a host name or an address, not "
		    "\"%s\"", s);
		return (-1);
	}
	*value = xstrdup(s);
	return (0);
}

/* none | PATH (absolute), for the TLS files. */
int
conf_check_tls_file(const char *s, char **value, char **why)
{
	if (strcmp(s, "none") == 0) {
		*value = NULL;
		return (0);
	}
	if (*s != '/') {
		xasprintf(why, "expected none or an absolute path, not "
		    "\"%s\"", s);
		return (-1);
	}
	*value = xstrdup(s);
	return (0);
}

/* What the redis directives must agree on, once the file is read. */
int
conf_redis_done(void *base, const char *file, char **cause)
{
	struct conf	*conf = base;
	const char	*what = NULL;
	int		 sentinel = conf->redis_kind == CONF_REDIS_SENTINEL;
	int		 cluster = conf->redis_kind == CONF_REDIS_CLUSTER;

	if (conf->eventlog != CONF_EVENTLOG_REDIS)
		return (0);
	if (conf->redis_tls && !sentinel && !cluster)
		what = "redis_tls on is for redis-sentinel:// and "
		    "redis-cluster:// addresses (one server over TLS is "
		    "rediss://)";
	else if (!conf_redis_tls(conf) && (conf->redis_tls_ca_file != NULL ||
	    conf->redis_tls_cert_file != NULL ||
	    conf->redis_tls_key_file != NULL ||
	    conf->redis_tls_server_name != NULL || !conf->redis_tls_verify))
		what = "redis_tls_* directives are set, but the eventlog "
		    "address does not use TLS (rediss://, or "
		    "redis-sentinel:// or redis-cluster:// with redis_tls on)";
	else if ((conf->redis_tls_cert_file == NULL) !=
	    (conf->redis_tls_key_file == NULL))
		what = "redis_tls_cert_file and redis_tls_key_file go together";
	else if (conf->redis_url_user != NULL && conf->redis_user != NULL)
		what = "a user is in both the eventlog URL and redis_user";
	else if (conf->redis_url_password != NULL &&
	    conf->redis_password_file != NULL)
		what = "a password is in both the eventlog URL and "
		    "redis_password_file";
	else if (conf_redis_user(conf) != NULL &&
	    conf_redis_password(conf) == NULL)
		what = "a Redis user needs a password (in the eventlog URL, "
		    "or redis_password_file)";
	else if (!sentinel && (conf->redis_sentinel_user != NULL ||
	    conf->redis_sentinel_password_file != NULL))
		what = "redis_sentinel_user and redis_sentinel_password_file "
		    "are for redis-sentinel:// addresses";
	else if (conf->redis_sentinel_user != NULL &&
	    conf->redis_sentinel_password == NULL)
		what = "redis_sentinel_user needs redis_sentinel_password_file";
	if (what == NULL)
		return (0);
	/* The eventlog line: the address the others must agree with. */
	xasprintf(cause, "%s:%d: %s", file, conf->eventlog_line, what);
	return (-1);
}

/* Copies of old's nodes. */
static struct conf_redis_node *
conf_redis_nodes_copy(const struct conf_redis_node *nodes, size_t n)
{
	struct conf_redis_node	*copy;
	size_t			 i;

	if (n == 0)
		return (NULL);
	copy = xcalloc(n, sizeof *copy);
	for (i = 0; i < n; i++) {
		copy[i].host = xstrdup(nodes[i].host);
		copy[i].port = nodes[i].port;
	}
	return (copy);
}

/*
 * A reload: the address (and whether a sentinel URL is TLS) keep old's;
 * the credentials and the TLS files are taken up. 1 if new differed.
 */
int
conf_redis_keep(void *base, const void *oldbase)
{
	struct conf		*new = base;
	const struct conf	*old = oldbase;

	if (new->eventlog == old->eventlog && new->redis_tls == old->redis_tls &&
	    !conf_str_differ(new->redis_url, old->redis_url))
		return (0);
	conf_redis_address_free(new);
	new->eventlog = old->eventlog;
	new->redis_tls = old->redis_tls;
	new->redis_kind = old->redis_kind;
	new->redis_url = conf_str_copy(old->redis_url);
	new->redis_name = conf_str_copy(old->redis_name);
	new->redis_host = conf_str_copy(old->redis_host);
	new->redis_port = old->redis_port;
	new->redis_path = conf_str_copy(old->redis_path);
	new->redis_master = conf_str_copy(old->redis_master);
	new->redis_sentinels = conf_redis_nodes_copy(old->redis_sentinels,
	    old->nredis_sentinels);
	new->nredis_sentinels = old->nredis_sentinels;
	new->redis_db = old->redis_db;
	new->redis_url_user = conf_str_copy(old->redis_url_user);
	new->redis_url_password = conf_str_copy(old->redis_url_password);
	return (1);
}

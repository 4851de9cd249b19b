/*
 * The configuration file's engine. Every directive is one row of a table
 * (conf_table.c, and the blocks' tables in conf_tool.c, conf_auth.c and
 * conf_upstream.c): its name, type, bounds, default, place in its struct
 * and help text. Parsing, the defaults, `mcpd --help`, mcpd.conf(5) and
 * mcpd.conf.example (conf_print.c) all come from the tables, so a new
 * directive is one new row.
 *
 * Reading happens in two layers. The lexer turns lines into words (double
 * quotes, escapes, comments) and gathers "NAME ARG... {" ... "}" into a tree
 * of directives; the dispatcher looks each directive up in a table and hands
 * its words to the row's type, or its whole block to the row's handler. A
 * block handler may run the same dispatcher over the block's lines with a
 * table of its own (the offsets then point into the block's struct). Checks
 * that involve more than one directive run once the file has been read.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "conf_int.h"
#include "log.h"
#include "xmalloc.h"

#define CONF_MAX_DEPTH		8		/* blocks inside blocks */
#define CONF_MAX_FILE		(1024 * 1024)	/* bytes */
#define CONF_ORIGIN_MAX		320		/* canonical origin, with NUL */
#define CONF_HOST_MAX		253		/* longest DNS name */
#define CONF_REPLICAS_MAX	16
#define CONF_DEFAULT_PATH	"/usr/local/bin:/usr/bin:/bin"
#define CONF_URL_MAX		2048
#define CONF_SECRET_MAX		4096

/* Enums are written through an int pointer. */
_Static_assert(sizeof (enum conf_backpressure) == sizeof (int),
    "enum conf_backpressure is not int-sized");

const struct conf_enum conf_param_types[] = {
	{ "string", CONF_PARAM_STRING },
	{ "integer", CONF_PARAM_INTEGER },
	{ "number", CONF_PARAM_NUMBER },
	{ "boolean", CONF_PARAM_BOOLEAN },
	{ NULL, 0 }
};

/* ---------------------------------------------------------------------
 * Lexer: text to lines of words.
 */

struct conf_lexer {
	const char	*file;
	const char	*next;		/* start of the next line */
	int		 line;		/* number of the last line read */
};

struct conf_line {
	int		 line;
	int		 argc;
	char		**argv;
	int		 open;		/* ended with an unquoted "{" */
	int		 close;		/* was a lone unquoted "}" */
};

struct conf_buf {
	char		*data;
	size_t		 len;
	size_t		 size;
};

static void
conf_buf_add(struct conf_buf *b, char ch)
{
	if (b->len + 1 >= b->size) {
		b->size = b->size == 0 ? 64 : b->size * 2;
		b->data = xrealloc(b->data, b->size);
	}
	b->data[b->len++] = ch;
	b->data[b->len] = '\0';
}

static void
conf_line_clear(struct conf_line *ln)
{
	int	i;

	for (i = 0; i < ln->argc; i++)
		free(ln->argv[i]);
	free(ln->argv);
	memset(ln, 0, sizeof *ln);
}

static int
conf_lex_space(char ch)
{
	return (ch == ' ' || ch == '\t' || ch == '\r');
}

static int
conf_lex_end(char ch)
{
	return (ch == '\0' || ch == '\n' || ch == '#' || conf_lex_space(ch));
}

static int
conf_lex_control(char ch)
{
	u_char	uch = ch;

	return ((uch < 0x20 && uch != '\t') || uch == 0x7f);
}

/*
 * Split the line at cl->next into words, appended to ln with quoted[] saying
 * which were quoted, and move cl->next to the following line.
 */
static int
conf_lex_words(struct conf_lexer *cl, struct conf_line *ln, int **quoted,
    char **cause)
{
	const char	*p = cl->next;
	struct conf_buf	 b;
	int		 q;

	for (;;) {
		while (conf_lex_space(*p))
			p++;
		if (*p == '\0' || *p == '\n' || *p == '#')
			break;

		b.data = xstrdup("");
		b.len = 0;
		b.size = 1;
		q = (*p == '"');
		if (q) {
			for (p++; *p != '"'; p++) {
				if (*p == '\0' || *p == '\n') {
					xasprintf(cause, "%s:%d: unterminated "
					    "quoted string", cl->file, cl->line);
					goto fail;
				}
				if (*p == '\\') {
					p++;
					if (*p != '"' && *p != '\\') {
						xasprintf(cause, "%s:%d: invalid "
						    "escape in quoted string "
						    "(only \\\" and \\\\)",
						    cl->file, cl->line);
						goto fail;
					}
				} else if (conf_lex_control(*p))
					goto control;
				conf_buf_add(&b, *p);
			}
			p++;
			if (!conf_lex_end(*p)) {
				xasprintf(cause, "%s:%d: missing space after "
				    "quoted string", cl->file, cl->line);
				goto fail;
			}
		} else {
			for (; !conf_lex_end(*p); p++) {
				if (*p == '"') {
					xasprintf(cause, "%s:%d: unexpected "
					    "quote inside a word", cl->file,
					    cl->line);
					goto fail;
				}
				if (conf_lex_control(*p))
					goto control;
				conf_buf_add(&b, *p);
			}
		}

		ln->argv = xrealloc(ln->argv, (ln->argc + 1) *
		    sizeof *ln->argv);
		*quoted = xrealloc(*quoted, (ln->argc + 1) * sizeof **quoted);
		ln->argv[ln->argc] = b.data;
		(*quoted)[ln->argc] = q;
		ln->argc++;
	}

	while (*p != '\0' && *p != '\n')
		p++;
	if (*p == '\n')
		p++;
	cl->next = p;
	return (0);

control:
	xasprintf(cause, "%s:%d: invalid character 0x%02x", cl->file,
	    cl->line, (u_char)*p);
fail:
	free(b.data);
	return (-1);
}

/*
 * Read the next line that has words. Returns 1 with the line in ln, 0 at the
 * end of the text, -1 on error.
 */
static int
conf_lex_line(struct conf_lexer *cl, struct conf_line *ln, char **cause)
{
	int	*quoted = NULL, last;

	memset(ln, 0, sizeof *ln);
	while (*cl->next != '\0') {
		cl->line++;
		if (conf_lex_words(cl, ln, &quoted, cause) != 0)
			goto fail;
		if (ln->argc == 0)
			continue;
		ln->line = cl->line;

		/* Braces count only as words of their own, unquoted. */
		last = ln->argc - 1;
		if (!quoted[last] && strcmp(ln->argv[last], "{") == 0) {
			if (ln->argc == 1) {
				xasprintf(cause, "%s:%d: \"{\" without a "
				    "directive", cl->file, cl->line);
				goto fail;
			}
			free(ln->argv[last]);
			ln->argc--;
			ln->open = 1;
		} else if (!quoted[0] && strcmp(ln->argv[0], "}") == 0) {
			if (ln->argc != 1) {
				xasprintf(cause, "%s:%d: \"}\" must be on a "
				    "line of its own", cl->file, cl->line);
				goto fail;
			}
			free(ln->argv[0]);
			ln->argc = 0;
			ln->close = 1;
		}
		for (last = 0; last < ln->argc; last++) {
			if (quoted[last])
				continue;
			if (strcmp(ln->argv[last], "{") == 0 ||
			    strcmp(ln->argv[last], "}") == 0) {
				xasprintf(cause, "%s:%d: unexpected \"%s\"",
				    cl->file, cl->line, ln->argv[last]);
				goto fail;
			}
		}
		free(quoted);
		return (1);
	}
	free(quoted);
	return (0);

fail:
	free(quoted);
	conf_line_clear(ln);
	return (-1);
}

static void
conf_directive_clear(struct conf_directive *cd)
{
	size_t	i;
	int	j;

	for (i = 0; i < cd->nchildren; i++)
		conf_directive_clear(&cd->children[i]);
	free(cd->children);
	for (j = 0; j < cd->argc; j++)
		free(cd->argv[j]);
	free(cd->argv);
	memset(cd, 0, sizeof *cd);
}

/* Move a lexed line into a directive. */
static void
conf_directive_set(struct conf_directive *cd, struct conf_line *ln)
{
	memset(cd, 0, sizeof *cd);
	cd->line = ln->line;
	cd->argc = ln->argc;
	cd->argv = ln->argv;
	ln->argv = NULL;
	ln->argc = 0;
}

/* Read the lines of cd's block up to its closing brace. */
static int
conf_read_block(struct conf_lexer *cl, struct conf_directive *cd, int depth,
    char **cause)
{
	struct conf_line	 ln;
	struct conf_directive	*child;
	int			 r;

	cd->has_block = 1;
	if (depth > CONF_MAX_DEPTH) {
		xasprintf(cause, "%s:%d: blocks nested too deeply", cl->file,
		    cd->line);
		return (-1);
	}
	for (;;) {
		if ((r = conf_lex_line(cl, &ln, cause)) == -1)
			return (-1);
		if (r == 0) {
			xasprintf(cause, "%s:%d: %s: block not closed "
			    "(missing \"}\")", cl->file, cd->line,
			    cd->argv[0]);
			return (-1);
		}
		if (ln.close) {
			conf_line_clear(&ln);
			return (0);
		}
		cd->children = xrealloc(cd->children,
		    (cd->nchildren + 1) * sizeof *cd->children);
		child = &cd->children[cd->nchildren++];
		conf_directive_set(child, &ln);
		if (ln.open &&
		    conf_read_block(cl, child, depth + 1, cause) != 0)
			return (-1);
	}
}

/* ---------------------------------------------------------------------
 * Values.
 */

static int
conf_host_char(char ch)
{
	return (isalnum((u_char)ch) || ch == '-' || ch == '.' || ch == '_');
}

/* A port, 0 to 65535, digits only. */
static int
conf_parse_port(const char *s, int *port)
{
	size_t	len = strlen(s);

	if (len == 0 || len > 5 || strspn(s, "0123456789") != len)
		return (-1);
	*port = atoi(s);
	if (*port > 65535)
		return (-1);
	return (0);
}

/*
 * Split HOST:PORT. HOST is a name, an IPv4 address or an IPv6 address in
 * brackets (returned without them). Without a port, dflt is used if it is
 * not -1.
 */
int
conf_parse_hostport(const char *s, int dflt, char **hostp, int *portp,
    char **why)
{
	const char	*end, *rest;
	char		*host;
	struct in6_addr	 in6;
	struct in_addr	 in4;
	size_t		 len;

	if (*s == '[') {
		if ((end = strchr(s, ']')) == NULL) {
			xasprintf(why, "missing \"]\" in \"%s\"", s);
			return (-1);
		}
		host = xstrndup(s + 1, end - s - 1);
		if (inet_pton(AF_INET6, host, &in6) != 1) {
			xasprintf(why, "invalid IPv6 address \"%s\"", host);
			goto fail;
		}
		rest = end + 1;
	} else {
		if ((end = strchr(s, ':')) == NULL)
			end = s + strlen(s);
		else if (strchr(end + 1, ':') != NULL) {
			xasprintf(why, "invalid address \"%s\" (an IPv6 "
			    "address goes in brackets)", s);
			return (-1);
		}
		if (*end == '\0' && dflt == -1) {
			xasprintf(why, "missing port in \"%s\"", s);
			return (-1);
		}
		host = xstrndup(s, end - s);
		len = strlen(host);
		if (len == 0) {
			xasprintf(why, "missing host in \"%s\"", s);
			goto fail;
		}
		if (len > CONF_HOST_MAX ||
		    strspn(host, "abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._") != len ||
		    *host == '-' || *host == '.') {
			xasprintf(why, "invalid host \"%s\"", host);
			goto fail;
		}
		if (strspn(host, "0123456789.") == len &&
		    inet_pton(AF_INET, host, &in4) != 1) {
			xasprintf(why, "invalid IPv4 address \"%s\"", host);
			goto fail;
		}
		rest = end;
	}

	if (*rest == '\0') {
		if (dflt == -1) {
			xasprintf(why, "missing port in \"%s\"", s);
			goto fail;
		}
		*portp = dflt;
	} else if (*rest != ':') {
		xasprintf(why, "invalid address \"%s\"", s);
		goto fail;
	} else if (conf_parse_port(rest + 1, portp) != 0) {
		xasprintf(why, "invalid port \"%s\"", rest + 1);
		goto fail;
	}
	*hostp = host;
	return (0);

fail:
	free(host);
	return (-1);
}

/* Multiplier of a number's unit suffix for type, or 0 if not one. */
static long long
conf_unit(enum conf_type type, const char *suffix)
{
	static const struct {
		enum conf_type	 type;
		const char	*suffix;
		long long	 factor;
	} units[] = {
		{ CONF_INTEGER, "", 1 },
		{ CONF_SIZE, "", 1 },
		{ CONF_SIZE, "b", 1 },
		{ CONF_SIZE, "k", CONF_KIB },
		{ CONF_SIZE, "kb", CONF_KIB },
		{ CONF_SIZE, "kib", CONF_KIB },
		{ CONF_SIZE, "m", CONF_MIB },
		{ CONF_SIZE, "mb", CONF_MIB },
		{ CONF_SIZE, "mib", CONF_MIB },
		{ CONF_SIZE, "g", CONF_GIB },
		{ CONF_SIZE, "gb", CONF_GIB },
		{ CONF_SIZE, "gib", CONF_GIB },
		{ CONF_SECONDS, "", 1 },
		{ CONF_SECONDS, "s", 1 },
		{ CONF_SECONDS, "m", 60 },
		{ CONF_SECONDS, "h", 3600 },
		{ CONF_SECONDS, "d", 86400 },
		{ CONF_MILLISECONDS, "", 1 },
		{ CONF_MILLISECONDS, "ms", 1 },
		{ CONF_MILLISECONDS, "s", 1000 },
	};
	size_t	i;

	for (i = 0; i < CONF_NITEMS(units); i++) {
		if (units[i].type == type &&
		    strcasecmp(units[i].suffix, suffix) == 0)
			return (units[i].factor);
	}
	return (0);
}

static int
conf_parse_number(enum conf_type type, const char *s, long long *v,
    char **why)
{
	static const char *const kinds[][2] = {
		[CONF_INTEGER] = { "number", "" },
		[CONF_SIZE] = { "size", " (bytes, or with k, m or g)" },
		[CONF_SECONDS] = { "time", " (seconds, or with s, m, h or d)" },
		[CONF_MILLISECONDS] = { "time",
		    " (milliseconds, or with ms or s)" },
	};
	const char	*p = s;
	char		*end;
	long long	 n, factor;

	if (*p == '-')
		p++;
	if (!isdigit((u_char)*p))
		goto invalid;
	errno = 0;
	n = strtoll(s, &end, 10);
	if ((factor = conf_unit(type, end)) == 0)
		goto invalid;
	if (errno == ERANGE || n > LLONG_MAX / factor ||
	    n < LLONG_MIN / factor) {
		xasprintf(why, "%s is too large", s);
		return (-1);
	}
	*v = n * factor;
	return (0);

invalid:
	xasprintf(why, "invalid %s \"%s\"%s", kinds[type][0], s,
	    kinds[type][1]);
	return (-1);
}

/* Write v as it would be written in the file. */
void
conf_format_number(enum conf_type type, long long v, char *buf, size_t len)
{
	if (type == CONF_SIZE && v != 0 && v % CONF_GIB == 0)
		snprintf(buf, len, "%lldg", v / CONF_GIB);
	else if (type == CONF_SIZE && v != 0 && v % CONF_MIB == 0)
		snprintf(buf, len, "%lldm", v / CONF_MIB);
	else if (type == CONF_SIZE && v != 0 && v % CONF_KIB == 0)
		snprintf(buf, len, "%lldk", v / CONF_KIB);
	else
		snprintf(buf, len, "%lld", v);
}

/* The names of an enum's values, "a|b|c". */
char *
conf_enum_names(const struct conf_enum *values)
{
	const struct conf_enum	*e;
	struct conf_buf		 b;
	const char		*p;

	b.data = xstrdup("");
	b.len = 0;
	b.size = 1;
	for (e = values; e->name != NULL; e++) {
		if (e != values)
			conf_buf_add(&b, '|');
		for (p = e->name; *p != '\0'; p++)
			conf_buf_add(&b, *p);
	}
	return (b.data);
}

int
conf_parse_enum(const struct conf_enum *values, const char *s, int *v,
    char **why)
{
	const struct conf_enum	*e;
	char			*names;

	for (e = values; e->name != NULL; e++) {
		if (strcmp(e->name, s) == 0) {
			*v = e->value;
			return (0);
		}
	}
	names = conf_enum_names(values);
	xasprintf(why, "expected %s, not \"%s\"", names, s);
	free(names);
	return (-1);
}

/* Set one directive's value(s) on cs->base. */
static int
conf_set(void *base, const struct conf_entry *ce, int argc, char **argv,
    char **why)
{
	char		*field = (char *)base + ce->offset;
	char		*s, **list;
	char		 lo[32], hi[32];
	long long	 n;
	int		 i, port;

	if (ce->type != CONF_WORDS && ce->type != CONF_LINE && argc > 1) {
		xasprintf(why, "unexpected extra value \"%s\"", argv[1]);
		return (-1);
	}

	switch (ce->type) {
	case CONF_STRING:
		if (ce->check != NULL) {
			if (ce->check(argv[0], &s, why) != 0)
				return (-1);
		} else
			s = xstrdup(argv[0]);
		free(*(char **)field);
		*(char **)field = s;
		return (0);
	case CONF_HOSTPORT:
		if (conf_parse_hostport(argv[0], -1, &s, &port, why) != 0)
			return (-1);
		if (port < ce->min || port > ce->max) {
			xasprintf(why, "port %d out of range (%lld to %lld)",
			    port, ce->min, ce->max);
			free(s);
			return (-1);
		}
		free(*(char **)field);
		*(char **)field = s;
		*(int *)((char *)base + ce->offset2) = port;
		return (0);
	case CONF_INTEGER:
	case CONF_SIZE:
	case CONF_SECONDS:
	case CONF_MILLISECONDS:
		if (conf_parse_number(ce->type, argv[0], &n, why) != 0)
			return (-1);
		if (n < ce->min || n > ce->max) {
			conf_format_number(ce->type, ce->min, lo, sizeof lo);
			conf_format_number(ce->type, ce->max, hi, sizeof hi);
			xasprintf(why, "%s out of range (%s to %s)", argv[0],
			    lo, hi);
			return (-1);
		}
		*(long long *)field = n;
		return (0);
	case CONF_BOOL:
	case CONF_ENUM:
		return (conf_parse_enum(ce->values, argv[0], (int *)field,
		    why));
	case CONF_WORDS:
		list = xcalloc(argc + 1, sizeof *list);
		for (i = 0; i < argc; i++) {
			if (ce->check == NULL)
				list[i] = xstrdup(argv[i]);
			else if (ce->check(argv[i], &list[i], why) != 0) {
				xfree_words(list);
				return (-1);
			}
		}
		xfree_words(*(char ***)field);
		*(char ***)field = list;
		*(size_t *)((char *)base + ce->offset2) = argc;
		return (0);
	case CONF_CUSTOM:
		return (ce->parse(base, ce, argv[0], why));
	case CONF_LINE:
		return (ce->line(base, ce, argc, argv, why));
	case CONF_BLOCK:
		break;
	}
	xasprintf(why, "cannot be set");
	return (-1);
}

/* Set every directive of a table that has a default. */
void
conf_set_defaults(void *base, const struct conf_entry *entries, size_t n)
{
	const struct conf_entry	*ce;
	char			*why, *def;
	size_t			 i;

	for (i = 0; i < n; i++) {
		ce = &entries[i];
		if (ce->type == CONF_WORDS && ce->def == NULL) {
			*(char ***)((char *)base + ce->offset) =
			    xcalloc(1, sizeof (char *));
			continue;
		}
		if (ce->def == NULL)
			continue;
		def = (char *)ce->def;
		if (conf_set(base, ce, 1, &def, &why) != 0)
			fatalx("conf: default of %s: %s", ce->name, why);
	}
}

/* Look a directive up in cs and apply it. */
int
conf_apply(struct conf_scope *cs, const struct conf_directive *cd,
    const char *file, char **cause)
{
	const struct conf_entry	*ce = NULL;
	const char		*name = cd->argv[0];
	char			*why;
	size_t			 i;

	for (i = 0; i < cs->nentries; i++) {
		if (strcmp(cs->entries[i].name, name) == 0) {
			ce = &cs->entries[i];
			break;
		}
	}
	if (ce == NULL) {
		xasprintf(cause, "%s:%d: unknown directive \"%s\"", file,
		    cd->line, name);
		return (-1);
	}

	if (cd->has_block && ce->type != CONF_BLOCK && ce->block != NULL)
		return (ce->block(cs->base, ce, cd, file, cause));
	if (ce->type == CONF_BLOCK) {
		if (!cd->has_block) {
			xasprintf(cause, "%s:%d: %s: expected \"%s %s\"", file,
			    cd->line, name, name, ce->args);
			return (-1);
		}
		return (ce->block(cs->base, ce, cd, file, cause));
	}
	if (cd->has_block) {
		xasprintf(cause, "%s:%d: %s does not take a block", file,
		    cd->line, name);
		return (-1);
	}
	if (cs->seen[i] != 0 && (ce->flags & CONF_REPEAT) == 0) {
		xasprintf(cause, "%s:%d: duplicate %s (first set on line %d)",
		    file, cd->line, name, cs->seen[i]);
		return (-1);
	}
	if (cs->seen[i] == 0)
		cs->seen[i] = cd->line;
	if (cd->argc < 2) {
		xasprintf(cause, "%s:%d: %s: missing value", file, cd->line,
		    name);
		return (-1);
	}
	if (conf_set(cs->base, ce, cd->argc - 1, cd->argv + 1, &why) != 0) {
		xasprintf(cause, "%s:%d: %s: %s", file, cd->line, name, why);
		free(why);
		return (-1);
	}
	return (0);
}

/* ---------------------------------------------------------------------
 * Directives with their own syntax.
 */

int
conf_check_path(const char *s, char **value, char **why)
{
	const char	*p;

	if (*s != '/') {
		xasprintf(why, "path must start with \"/\", not \"%s\"", s);
		return (-1);
	}
	for (p = s; *p != '\0'; p++) {
		if (*p == '?' || *p == '#' || *p == ' ' || *p == '\t') {
			xasprintf(why, "invalid path \"%s\"", s);
			return (-1);
		}
	}
	*value = xstrdup(s);
	return (0);
}

/* "stderr", or an absolute path to a file (not checked before opening). */
int
conf_check_log_file(const char *s, char **value, char **why)
{
	if (strcmp(s, "stderr") != 0 && *s != '/') {
		xasprintf(why, "log_file must be stderr or an absolute path, "
		    "not \"%s\"", s);
		return (-1);
	}
	*value = xstrdup(s);
	return (0);
}

/* "none", "syslog", or an absolute path (opened when the daemon starts). */
int
conf_check_audit_log(const char *s, char **value, char **why)
{
	if (strcmp(s, "none") == 0) {
		*value = NULL;
		return (0);
	}
	if (strcmp(s, "syslog") != 0 && *s != '/') {
		xasprintf(why, "audit_log must be none, syslog or an absolute "
		    "path, not \"%s\"", s);
		return (-1);
	}
	*value = xstrdup(s);
	return (0);
}

int
conf_check_key_file(const char *s, char **value, char **why)
{
	if (strcmp(s, "none") == 0) {
		*value = NULL;
		return (0);
	}
	if (*s != '/') {
		xasprintf(why, "a key file must be none or an absolute path, "
		    "not \"%s\"", s);
		return (-1);
	}
	*value = xstrdup(s);
	return (0);
}

/*
 * Parse an origin as a browser sends it, http[s]://HOST[:PORT], and write
 * its canonical form to buf (CONF_ORIGIN_MAX bytes): scheme and host in
 * lower case, an IPv6 address in its shortest form, the scheme's default
 * port left out. *loopback says whether HOST is localhost, 127.0.0.1 or
 * [::1].
 */
static int
conf_origin_parse(const char *s, char *buf, int *loopback)
{
	const char	*p, *end, *scheme;
	char		 host[CONF_HOST_MAX + 3], a6[INET6_ADDRSTRLEN];
	struct in6_addr	 in6;
	size_t		 n;
	int		 port, dflt;

	if (strncasecmp(s, "http://", 7) == 0) {
		scheme = "http";
		dflt = 80;
		p = s + 7;
	} else if (strncasecmp(s, "https://", 8) == 0) {
		scheme = "https";
		dflt = 443;
		p = s + 8;
	} else
		return (-1);

	if (*p == '[') {
		if ((end = strchr(p, ']')) == NULL)
			return (-1);
		n = end - p - 1;
		if (n == 0 || n >= sizeof a6)
			return (-1);
		memcpy(a6, p + 1, n);
		a6[n] = '\0';
		if (inet_pton(AF_INET6, a6, &in6) != 1 ||
		    inet_ntop(AF_INET6, &in6, a6, sizeof a6) == NULL)
			return (-1);
		snprintf(host, sizeof host, "[%s]", a6);
		p = end + 1;
	} else {
		for (n = 0; conf_host_char(*p); p++) {
			if (n == CONF_HOST_MAX)
				return (-1);
			host[n++] = tolower((u_char)*p);
		}
		if (n == 0 || host[0] == '-' || host[0] == '.')
			return (-1);
		host[n] = '\0';
	}

	port = dflt;
	if (*p == ':') {
		if (conf_parse_port(p + 1, &port) != 0 || port == 0)
			return (-1);
	} else if (*p != '\0')
		return (-1);

	if (port == dflt)
		snprintf(buf, CONF_ORIGIN_MAX, "%s://%s", scheme, host);
	else
		snprintf(buf, CONF_ORIGIN_MAX, "%s://%s:%d", scheme, host,
		    port);
	*loopback = (strcmp(host, "localhost") == 0 ||
	    strcmp(host, "127.0.0.1") == 0 || strcmp(host, "[::1]") == 0);
	return (0);
}

int
conf_check_origin(const char *s, char **value, char **why)
{
	char	buf[CONF_ORIGIN_MAX];
	int	loopback;

	if (strchr(s, '*') != NULL) {
		xasprintf(why, "invalid origin \"%s\" (no wildcards: list "
		    "each origin)", s);
		return (-1);
	}
	if (conf_origin_parse(s, buf, &loopback) != 0) {
		xasprintf(why, "invalid origin \"%s\" (expected "
		    "http://HOST[:PORT] or https://HOST[:PORT])", s);
		return (-1);
	}
	*value = xstrdup(buf);
	return (0);
}

/* primary | replicas:N */
int
conf_parse_commit(void *base, const struct conf_entry *ce, const char *s,
    char **why)
{
	struct conf	*conf = base;
	const char	*p;
	size_t		 len;
	int		 n;

	if (strcmp(s, "primary") == 0) {
		conf->commit_replicas = 0;
		return (0);
	}
	if (strncmp(s, "replicas:", 9) == 0) {
		p = s + 9;
		len = strlen(p);
		if (len > 0 && len <= 2 && strspn(p, "0123456789") == len) {
			n = atoi(p);
			if (n >= 1 && n <= CONF_REPLICAS_MAX) {
				conf->commit_replicas = n;
				return (0);
			}
		}
	}
	xasprintf(why, "expected primary or replicas:N (N 1 to %d), not "
	    "\"%s\"", CONF_REPLICAS_MAX, s);
	return (-1);
}

int
conf_parse_log_level(void *base, const struct conf_entry *ce, const char *s,
    char **why)
{
	struct conf	*conf = base;
	enum log_level	 level;

	if (log_level_parse(s, &level) != 0) {
		xasprintf(why, "expected %s, not \"%s\"", ce->args, s);
		return (-1);
	}
	conf->log_level = level;
	return (0);
}

/* ---------------------------------------------------------------------
 * Syntax the blocks share: names, directories, environments,
 * programs, scopes.
 */

/* Letters, digits and the characters of extra; at least one, at most max. */
int
conf_name_ok(const char *s, const char *extra, size_t max)
{
	size_t	len = strlen(s), i;

	if (len == 0 || len > max)
		return (0);
	for (i = 0; i < len; i++) {
		if (!isalnum((u_char)s[i]) && strchr(extra, s[i]) == NULL)
			return (0);
	}
	return (1);
}

/* Names as tool names are, or "" for no prefix. */
int
conf_check_prefix(const char *s, char **value, char **why)
{
	if (*s != '\0' && !conf_name_ok(s, "_-.", CONF_PREFIX_MAX)) {
		xasprintf(why, "invalid prefix \"%s\" (up to %d letters, "
		    "digits, \"_\", \"-\" or \".\")", s, CONF_PREFIX_MAX);
		return (-1);
	}
	*value = xstrdup(s);
	return (0);
}

/* An absolute path to an existing directory. */
int
conf_check_dir(const char *s, char **value, char **why)
{
	struct stat	sb;

	if (*s != '/') {
		xasprintf(why, "\"%s\" is not an absolute path", s);
		return (-1);
	}
	if (stat(s, &sb) != 0) {
		xasprintf(why, "\"%s\": %s", s, strerror(errno));
		return (-1);
	}
	if (!S_ISDIR(sb.st_mode)) {
		xasprintf(why, "\"%s\" is not a directory", s);
		return (-1);
	}
	*value = xstrdup(s);
	return (0);
}

/* NAME=VALUE onto an environment list; each NAME once. */
int
conf_env_add(char ***env, size_t *nenv, const char *s, char **why)
{
	const char	*eq = strchr(s, '=');
	size_t		 n, i;

	if (eq == NULL) {
		xasprintf(why, "expected NAME=VALUE, not \"%s\"", s);
		return (-1);
	}
	n = eq - s;
	if (n == 0 || isdigit((u_char)*s) || strspn(s,
	    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
	    != n) {
		xasprintf(why, "invalid variable name \"%.*s\" (letters, "
		    "digits and \"_\", not starting with a digit)", (int)n, s);
		return (-1);
	}
	for (i = 0; i < *nenv; i++) {
		if (strncmp((*env)[i], s, n + 1) == 0) {
			xasprintf(why, "%.*s is set twice", (int)n, s);
			return (-1);
		}
	}
	*env = xrealloc(*env, (*nenv + 2) * sizeof **env);
	(*env)[(*nenv)++] = xstrdup(s);
	(*env)[*nenv] = NULL;
	return (0);
}

/* Whether path is a regular file we may execute; else *why says why not. */
static int
conf_check_program(const char *path, char **why)
{
	struct stat	sb;

	if (stat(path, &sb) != 0) {
		xasprintf(why, "program \"%s\": %s", path, strerror(errno));
		return (-1);
	}
	if (!S_ISREG(sb.st_mode)) {
		xasprintf(why, "program \"%s\" is not a regular file", path);
		return (-1);
	}
	if (access(path, X_OK) != 0) {
		xasprintf(why, "program \"%s\" is not executable", path);
		return (-1);
	}
	return (0);
}

/*
 * An absolute path as it is, or a name looked up in PATH as a shell would
 * (relative directories in PATH are skipped).
 */
int
conf_find_program(const char *name, char **path, char **why)
{
	const char	*search, *p, *end;
	char		*candidate, *sub;
	size_t		 n;

	if (strchr(name, '/') != NULL) {
		if (*name != '/') {
			xasprintf(why, "program must be an absolute path or a "
			    "name found in PATH, not \"%s\"", name);
			return (-1);
		}
		if (conf_check_program(name, why) != 0)
			return (-1);
		*path = xstrdup(name);
		return (0);
	}
	if ((search = getenv("PATH")) == NULL || *search == '\0')
		search = CONF_DEFAULT_PATH;
	for (p = search; *p != '\0'; p = end) {
		if ((end = strchr(p, ':')) == NULL)
			end = p + strlen(p);
		n = end - p;
		if (*end == ':')
			end++;
		if (n == 0 || *p != '/')
			continue;
		xasprintf(&candidate, "%.*s/%s", (int)n, p, name);
		if (conf_check_program(candidate, &sub) == 0) {
			*path = candidate;
			return (0);
		}
		free(sub);
		free(candidate);
	}
	xasprintf(why, "program \"%s\" not found in PATH (%s)", name, search);
	return (-1);
}

int
conf_scope_ok(const char *s)
{
	const u_char	*p;

	if (*s == '\0' || strlen(s) > 256)
		return (0);
	for (p = (const u_char *)s; *p != '\0'; p++) {
		if (*p < 0x21 || *p > 0x7e || *p == '"' || *p == '\\')
			return (0);
	}
	return (1);
}

int
conf_check_scope(const char *s, char **value, char **why)
{
	if (!conf_scope_ok(s)) {
		xasprintf(why, "invalid scope \"%s\" (printable ASCII, no "
		    "blank, quote or backslash, at most 256)", s);
		return (-1);
	}
	*value = xstrdup(s);
	return (0);
}

/*
 * An absolute http or https URL with a host and no fragment: what the
 * metadata documents and the outbound requests need. http is allowed for
 * loopback set-ups and tests; docs/authorization.md says to use https.
 */
int
conf_check_url(const char *s, char **value, char **why)
{
	const char	*p;
	size_t		 len = strlen(s);

	if (strncasecmp(s, "https://", 8) == 0)
		p = s + 8;
	else if (strncasecmp(s, "http://", 7) == 0)
		p = s + 7;
	else {
		xasprintf(why, "\"%s\" is not an http:// or https:// URL", s);
		return (-1);
	}
	if (len > CONF_URL_MAX || *p == '\0' || *p == '/' || *p == ':' ||
	    strchr(s, '#') != NULL) {
		xasprintf(why, "invalid URL \"%s\" (a host is needed, no "
		    "fragment, at most %d bytes)", s, CONF_URL_MAX);
		return (-1);
	}
	for (p = s; *p != '\0'; p++) {
		if ((u_char)*p <= 0x20 || (u_char)*p >= 0x7f || *p == '"' ||
		    *p == '\\') {
			xasprintf(why, "invalid character in URL \"%s\"", s);
			return (-1);
		}
	}
	*value = xstrdup(s);
	return (0);
}

/* An absolute path to a regular file mcpd can read now. */
int
conf_check_file(const char *s, char **value, char **why)
{
	struct stat	sb;

	if (*s != '/') {
		xasprintf(why, "\"%s\" is not an absolute path", s);
		return (-1);
	}
	if (stat(s, &sb) != 0 || access(s, R_OK) != 0) {
		xasprintf(why, "\"%s\": %s", s, strerror(errno));
		return (-1);
	}
	if (!S_ISREG(sb.st_mode)) {
		xasprintf(why, "\"%s\" is not a regular file", s);
		return (-1);
	}
	*value = xstrdup(s);
	return (0);
}

/*
 * The first line of a secret file, without its newline: printable ASCII
 * (a value that goes into an HTTP header), never shown in an error.
 */
int
conf_read_secret(const char *path, char **secret, char **why)
{
	FILE	*f;
	char	 buf[CONF_SECRET_MAX + 2];
	size_t	 len, i;

	if ((f = fopen(path, "r")) == NULL) {
		xasprintf(why, "\"%s\": %s", path, strerror(errno));
		return (-1);
	}
	if (fgets(buf, sizeof buf, f) == NULL)
		buf[0] = '\0';
	fclose(f);
	len = strcspn(buf, "\r\n");
	buf[len] = '\0';
	for (i = 0; i < len; i++) {
		if ((u_char)buf[i] < 0x20 || (u_char)buf[i] >= 0x7f)
			break;
	}
	if (len == 0 || len > CONF_SECRET_MAX || i < len) {
		explicit_bzero(buf, sizeof buf);
		xasprintf(why, "\"%s\": the secret must be one line of 1 to "
		    "%d printable ASCII characters", path, CONF_SECRET_MAX);
		return (-1);
	}
	*secret = xstrdup(buf);
	explicit_bzero(buf, sizeof buf);
	return (0);
}

/* ---------------------------------------------------------------------
 * Checks that need the whole file.
 */

/* The line a directive of cs was set on, 0 if it was not. */
int
conf_scope_line(struct conf_scope *cs, const char *name)
{
	size_t	i;

	for (i = 0; i < cs->nentries; i++) {
		if (strcmp(cs->entries[i].name, name) == 0)
			return (cs->seen[i]);
	}
	return (0);
}

/*
 * The block window against retention (docs/protocol.md, Backpressure: written is
 * not received). A producer runs at most stream_window entries past what
 * its client's connection acknowledged (view.c). What a proxy or the
 * client's own socket acknowledged and did not hand on is invisible here
 * and lost at a cut, and the client resumes from before it: retention must
 * keep that too. So the window is at most half of stream_maxlen, and the
 * other half is room for as much again in flight (an intermediary holding
 * up to a window of events at the cut). Unset, the window is the table's
 * default (256), or half of stream_maxlen when that is less. A
 * stream_maxlen below 2 leaves no room for a window of one.
 *
 * file and maxlen_line name where stream_maxlen was set; running says the
 * stream_maxlen is the running one (a reload keeps it).
 */
static int
conf_check_window(struct conf *conf, const char *file, int maxlen_line,
    int running, char **cause)
{
	long long	most = conf->stream_maxlen / 2;

	if (conf->stream_window_line == 0 && conf->stream_window > most)
		conf->stream_window = most;
	if (most < 1) {
		xasprintf(cause, "%s:%d: stream_maxlen (%lld) leaves no room "
		    "for events in flight: stream_window may be at most half "
		    "of it and is at least 1, so stream_maxlen must be at "
		    "least 2", file, maxlen_line, conf->stream_maxlen);
		return (-1);
	}
	if (conf->stream_window > most) {
		xasprintf(cause, "%s:%d: stream_window (%lld) leaves too "
		    "little room for events in flight: it may be at most half "
		    "of %sstream_maxlen (%lld), %lld", file,
		    conf->stream_window_line, conf->stream_window,
		    running ? "the running " : "", conf->stream_maxlen, most);
		return (-1);
	}
	return (0);
}

/* Checks that involve more than one directive, once all are read. */
static int
conf_check(struct conf *conf, struct conf_scope *cs, const char *file,
    char **cause)
{
	const struct conf_entry	*ce;
	size_t			 i;

	conf->stream_window_line = conf_scope_line(cs, "stream_window");
	conf->eventlog_line = conf_scope_line(cs, "eventlog");
	if (conf_check_window(conf, file, conf_scope_line(cs,
	    "stream_maxlen"), 0, cause) != 0)
		return (-1);
	for (i = 0; i < conf_table_main.n; i++) {
		ce = &conf_table_main.entries[i];
		if (ce->done != NULL && ce->done(conf, file, cause) != 0)
			return (-1);
	}
	return (0);
}

/* ---------------------------------------------------------------------
 * Public interface.
 */

struct conf *
conf_default(void)
{
	struct conf	*conf;

	conf = xcalloc(1, sizeof *conf);
	conf->refs = 1;
	conf_set_defaults(conf, conf_table_main.entries, conf_table_main.n);
	return (conf);
}

/*
 * Another holder of a configuration: a reload replaces server.conf while
 * running exec calls still use their tool's definition from the one they
 * started with. Each holder calls conf_free once; the last one frees.
 */
const struct conf *
conf_ref(const struct conf *conf)
{
	((struct conf *)conf)->refs++;
	return (conf);
}

/* A holder's conf_free, for the const pointer conf_ref gave it. */
void
conf_release(const struct conf *conf)
{
	conf_free((struct conf *)conf);
}

int
conf_str_differ(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return (a != b);
	return (strcmp(a, b) != 0);
}

static void
conf_str_keep(char **dst, const char *src)
{
	free(*dst);
	*dst = src != NULL ? xstrdup(src) : NULL;
}

int
conf_words_differ(char **a, size_t na, char **b, size_t nb)
{
	size_t	i;

	if (na != nb)
		return (1);
	for (i = 0; i < na; i++) {
		if (strcmp(a[i], b[i]) != 0)
			return (1);
	}
	return (0);
}

char **
conf_words_copy(char **list, size_t n)
{
	char	**copy;
	size_t	  i;

	copy = xcalloc(n + 1, sizeof *copy);
	for (i = 0; i < n; i++)
		copy[i] = xstrdup(list[i]);
	return (copy);
}

char *
conf_str_copy(const char *s)
{
	return (s != NULL ? xstrdup(s) : NULL);
}

/*
 * A reload: the directives a running process cannot take up (what it
 * listens on, the event log and what the log was created with) keep the
 * values of old, and their names are put in names (*n of them, at most
 * max). -1 with the reason when what remains is inconsistent.
 */
int
conf_keep_restart_only(struct conf *new, const struct conf *old,
    const char **names, size_t max, size_t *n, char **cause)
{
	const struct conf_entry	*ce;
	size_t			 i;

	*n = 0;
#define CONF_KEEP(name, differ, keep) do {				\
	if (differ) {							\
		keep;							\
		if (*n < max)						\
			names[(*n)++] = name;				\
	}								\
} while (0)
#define CONF_KEEP_NUM(name, f)						\
	CONF_KEEP(name, new->f != old->f, new->f = old->f)

	CONF_KEEP("listen", conf_str_differ(new->listen_host,
	    old->listen_host) || new->listen_port != old->listen_port,
	    (conf_str_keep(&new->listen_host, old->listen_host),
	    new->listen_port = old->listen_port));
	CONF_KEEP("endpoint", conf_str_differ(new->endpoint, old->endpoint),
	    conf_str_keep(&new->endpoint, old->endpoint));
	CONF_KEEP_NUM("commit", commit_replicas);
	CONF_KEEP_NUM("eventlog_outage_grace", eventlog_outage_grace);
	CONF_KEEP_NUM("eventlog_wait", eventlog_wait);
	CONF_KEEP_NUM("stream_maxlen", stream_maxlen);
	CONF_KEEP_NUM("stream_ttl", stream_ttl);
	CONF_KEEP_NUM("session_ttl", session_ttl);
	CONF_KEEP_NUM("session_max_streams", session_max_streams);
#undef CONF_KEEP_NUM
#undef CONF_KEEP
	/*
	 * What is read at start-up only and needs more than a field (the
	 * auth blocks, the eventlog address): their rows keep it.
	 */
	for (i = 0; i < conf_table_main.n; i++) {
		ce = &conf_table_main.entries[i];
		if (ce->keep != NULL && ce->keep(new, old) && *n < max)
			names[(*n)++] = ce->name;
	}
	/* What was taken up must fit what was kept (eventlog: credentials). */
	for (i = 0; i < conf_table_main.n; i++) {
		ce = &conf_table_main.entries[i];
		if (ce->keep != NULL && ce->done != NULL &&
		    ce->done(new, new->path, cause) != 0)
			return (-1);
	}
	/* An unset window is at most half of the stream_maxlen kept. */
	return (conf_check_window(new, new->path, 0, 1, cause));
}

struct conf *
conf_parse_string(const char *text, const char *file, char **cause)
{
	struct conf		*conf;
	struct conf_lexer	 cl;
	struct conf_line	 ln;
	struct conf_directive	 cd;
	struct conf_scope	 cs;
	int			*seen;
	int			 r;

	if (file == NULL)
		file = "-";
	conf = conf_default();
	conf->path = xstrdup(file);

	seen = xcalloc(conf_table_main.n, sizeof *seen);
	cs.entries = conf_table_main.entries;
	cs.nentries = conf_table_main.n;
	cs.base = conf;
	cs.seen = seen;

	cl.file = file;
	cl.next = text;
	cl.line = 0;
	for (;;) {
		if ((r = conf_lex_line(&cl, &ln, cause)) == -1)
			goto fail;
		if (r == 0)
			break;
		if (ln.close) {
			xasprintf(cause, "%s:%d: unexpected \"}\"", file,
			    ln.line);
			conf_line_clear(&ln);
			goto fail;
		}
		conf_directive_set(&cd, &ln);
		r = 0;
		if (ln.open)
			r = conf_read_block(&cl, &cd, 1, cause);
		if (r == 0)
			r = conf_apply(&cs, &cd, file, cause);
		conf_directive_clear(&cd);
		if (r != 0)
			goto fail;
	}
	if (conf_check(conf, &cs, file, cause) != 0)
		goto fail;
	free(seen);
	return (conf);

fail:
	free(seen);
	conf_free(conf);
	return (NULL);
}

struct conf *
conf_load(const char *path, char **cause)
{
	FILE		*f;
	struct conf	*conf;
	char		*text;
	size_t		 len, n;

	if ((f = fopen(path, "r")) == NULL) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return (NULL);
	}
	text = xmalloc(CONF_MAX_FILE + 1);
	len = 0;
	while ((n = fread(text + len, 1, CONF_MAX_FILE + 1 - len, f)) > 0)
		len += n;
	if (ferror(f)) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (len > CONF_MAX_FILE) {
		xasprintf(cause, "%s: file is larger than %d bytes", path,
		    CONF_MAX_FILE);
		goto fail;
	}
	if (memchr(text, '\0', len) != NULL) {
		xasprintf(cause, "%s: file contains a NUL byte", path);
		goto fail;
	}
	text[len] = '\0';
	fclose(f);

	conf = conf_parse_string(text, path, cause);
	free(text);
	return (conf);

fail:
	fclose(f);
	free(text);
	return (NULL);
}

void
conf_free(struct conf *conf)
{
	const struct conf_entry	*ce;
	char			*field;
	size_t			 i;

	if (conf == NULL || --conf->refs > 0)
		return;
	for (i = 0; i < conf_table_main.n; i++) {
		ce = &conf_table_main.entries[i];
		field = (char *)conf + ce->offset;
		if (ce->type == CONF_STRING || ce->type == CONF_HOSTPORT)
			free(*(char **)field);
		else if (ce->type == CONF_WORDS)
			xfree_words(*(char ***)field);
		/* A block's, the eventlog row's, or what the block form of a
		   plain row added. */
		if (ce->free != NULL)
			ce->free(conf);
	}
	/* Fields set by custom parsers. */
	free(conf->redis_password_file);
	free(conf->redis_sentinel_password_file);
	free(conf->path);
	free(conf);
}

static int
conf_host_loopback(const char *host)
{
	return (strcmp(host, "localhost") == 0 ||
	    strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0);
}

const char *
conf_warning(const struct conf *conf)
{
	if (conf->auth == NULL && conf->ntools > 0 &&
	    !conf_host_loopback(conf->listen_host))
		return ("exec tools are enabled on a listen address that is "
		    "not loopback, and there is no auth block: anyone who "
		    "reaches the port can run them");
	return (NULL);
}

const char *
conf_param_type_name(enum conf_param_type type)
{
	const struct conf_enum	*e;

	for (e = conf_param_types; e->name != NULL; e++) {
		if (e->value == (int)type)
			return (e->name);
	}
	return ("?");
}

/* Log lines from now on go where and as this configuration says. */
int
conf_log_open(const struct conf *conf, char **cause)
{
	log_init(conf->log_level);
	return (log_open(strcmp(conf->log_file, "stderr") == 0 ? NULL :
	    conf->log_file, conf->log_format == CONF_LOG_JSON, cause));
}

int
conf_origin_allowed(const struct conf *conf, const char *origin)
{
	char	buf[CONF_ORIGIN_MAX];
	size_t	i;
	int	loopback;

	if (origin == NULL)
		return (1);
	if (conf_origin_parse(origin, buf, &loopback) != 0)
		return (0);
	if (conf->nallowed_origins == 0)
		return (loopback);
	for (i = 0; i < conf->nallowed_origins; i++) {
		if (strcmp(conf->allowed_origins[i], buf) == 0)
			return (1);
	}
	return (0);
}

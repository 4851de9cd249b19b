/*
 * Limit blocks: limit NAME { ... }, a bound on how often, how much and how
 * many at once callers may call tools (src/mcp/limit.c enforces them,
 * docs/limits.md says how): its table and its parser, which checks that
 * the block bounds something and keys it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "conf_int.h"
#include "xmalloc.h"

/* Tokens a period, calls a day: large, and far from overflowing. */
#define CONF_LIMIT_MAX		1000000000LL

static conf_line_cb	conf_limit_key;
static conf_parse_cb	conf_limit_rate;
static conf_parse_cb	conf_limit_quota;
static conf_check_cb	conf_limit_pattern;

static const struct conf_enum conf_limit_keys[] = {
	{ "principal", CONF_LIMIT_KEY_PRINCIPAL },
	{ "client", CONF_LIMIT_KEY_CLIENT },
	{ "tool", CONF_LIMIT_KEY_TOOL },
	{ "upstream", CONF_LIMIT_KEY_UPSTREAM },
	{ NULL, 0 }
};

/* The directives inside "limit NAME { }"; into struct conf_limit. */
#define CONF_LIMIT_OFF(f)	offsetof(struct conf_limit, f)
static const struct conf_entry conf_limit_entries[] = {
	{ .name = "key", .type = CONF_LINE, .line = conf_limit_key,
	  .args = "principal|client|tool|upstream...",
	  .help = "What the limit counts apart: each principal (the token's "
	  "issuer and subject), each client id, each tool, each upstream "
	  "(mcpd's own tools count as upstream \"-\"), or each combination "
	  "of the words given (key principal tool: every principal's calls "
	  "of every tool). Without auth every caller is the same anonymous "
	  "principal, with no client id. Required." },
	{ .name = "rate", .type = CONF_CUSTOM, .parse = conf_limit_rate,
	  .args = "N/s|N/m|N/h",
	  .help = "Calls a second, minute or hour, on average (a token "
	  "bucket refilled at this rate). A call past it is refused with "
	  "the time until a token is due." },
	{ .name = "burst", .type = CONF_INTEGER,
	  .offset = CONF_LIMIT_OFF(burst), .min = 1, .max = CONF_LIMIT_MAX,
	  .def_text = "N of rate",
	  .help = "The bucket's size: calls that may come at once after a "
	  "quiet while, on top of the rate." },
	{ .name = "concurrency", .type = CONF_INTEGER,
	  .offset = CONF_LIMIT_OFF(concurrency), .min = 1, .max = 1000000,
	  .def_text = "none",
	  .help = "Calls running at once for one key, over every instance "
	  "sharing the redis event log; a call past it is refused until "
	  "one ends." },
	{ .name = "quota", .type = CONF_CUSTOM, .parse = conf_limit_quota,
	  .args = "N/day", .def_text = "none",
	  .help = "Calls a day (UTC) for one key; past it, calls are "
	  "refused until midnight UTC." },
	{ .name = "tools", .type = CONF_WORDS,
	  .offset = CONF_LIMIT_OFF(tools), .offset2 = CONF_LIMIT_OFF(ntools),
	  .check = conf_limit_pattern, .args = "PATTERN...",
	  .def_text = "every tool",
	  .help = "The tools it covers, by the names clients call them, as "
	  "shell patterns (echo, stream*, fs_*)." },
	{ .name = "endpoints", .type = CONF_WORDS,
	  .offset = CONF_LIMIT_OFF(endpoints),
	  .offset2 = CONF_LIMIT_OFF(nendpoints), .check = conf_check_path,
	  .args = "PATH...", .def_text = "every endpoint",
	  .help = "The endpoint paths it covers: only calls arriving on one "
	  "of them count." },
};

const struct conf_table conf_limit_table = {
	conf_limit_entries, CONF_NITEMS(conf_limit_entries)
};

const char conf_limit_examples[] =
"Examples: remove the \"# \" before the lines of a block to use it.\n"
"\n"
"limit per-caller {\n"
"    key principal\n"
"    rate 10/s\n"
"    burst 20\n"
"    concurrency 4\n"
"    quota 10000/day\n"
"}\n"
"\n"
"limit slow-tools {\n"
"    key principal tool\n"
"    rate 30/m\n"
"    tools deploy fs_*\n"
"}\n";

static void
conf_limit_clear(struct conf_limit *l)
{
	free(l->name);
	xfree_words(l->tools);
	xfree_words(l->endpoints);
	memset(l, 0, sizeof *l);
}

static int
conf_limit_key(void *base, const struct conf_entry *ce, int argc,
    char **argv, char **why)
{
	struct conf_limit	*l = base;
	int			 i, key;

	for (i = 0; i < argc; i++) {
		if (conf_parse_enum(conf_limit_keys, argv[i], &key, why) != 0)
			return (-1);
		if (l->keys & key) {
			xasprintf(why, "%s given twice", argv[i]);
			return (-1);
		}
		l->keys |= key;
	}
	return (0);
}

/* "N/UNIT": N from 1 to CONF_LIMIT_MAX, and what follows the slash. */
static int
conf_limit_count(const char *s, long long *n, const char **unit, char **why)
{
	char	*end;

	errno = 0;
	*n = strtoll(s, &end, 10);
	if (s[0] < '0' || s[0] > '9' || errno != 0 || *end != '/' ||
	    *n < 1 || *n > CONF_LIMIT_MAX) {
		xasprintf(why, "expected N/UNIT with N from 1 to %lld, not "
		    "\"%s\"", CONF_LIMIT_MAX, s);
		return (-1);
	}
	*unit = end + 1;
	return (0);
}

static int
conf_limit_rate(void *base, const struct conf_entry *ce, const char *s,
    char **why)
{
	struct conf_limit	*l = base;
	const char		*unit;
	long long		 n;

	if (conf_limit_count(s, &n, &unit, why) != 0)
		return (-1);
	if (strcmp(unit, "s") == 0)
		l->period_ms = 1000;
	else if (strcmp(unit, "m") == 0)
		l->period_ms = 60 * 1000;
	else if (strcmp(unit, "h") == 0)
		l->period_ms = 3600 * 1000;
	else {
		xasprintf(why, "expected N/s, N/m or N/h, not \"%s\"", s);
		return (-1);
	}
	l->rate = n;
	return (0);
}

static int
conf_limit_quota(void *base, const struct conf_entry *ce, const char *s,
    char **why)
{
	struct conf_limit	*l = base;
	const char		*unit;
	long long		 n;

	if (conf_limit_count(s, &n, &unit, why) != 0)
		return (-1);
	if (strcmp(unit, "day") != 0 && strcmp(unit, "d") != 0) {
		xasprintf(why, "expected N/day, not \"%s\"", s);
		return (-1);
	}
	l->quota = n;
	return (0);
}

/* A shell pattern of tool names: printable, no blank. */
static int
conf_limit_pattern(const char *s, char **value, char **why)
{
	const char	*p;

	for (p = s; *p != '\0'; p++) {
		if ((unsigned char)*p <= ' ' || (unsigned char)*p == 0x7f) {
			xasprintf(why, "invalid tool pattern \"%s\"", s);
			return (-1);
		}
	}
	*value = xstrdup(s);
	return (0);
}

int
conf_limit_block(void *base, const struct conf_entry *ce,
    const struct conf_directive *cd, const char *file, char **cause)
{
	struct conf		*conf = base;
	struct conf_limit	 l;
	struct conf_scope	 cs;
	int			 seen[CONF_NITEMS(conf_limit_entries)];
	size_t			 i;

	if (cd->argc != 2) {
		xasprintf(cause, "%s:%d: limit: expected \"limit %s\"", file,
		    cd->line, ce->args);
		return (-1);
	}
	if (!conf_name_ok(cd->argv[1], "_-.", CONF_TOOL_NAME_MAX)) {
		xasprintf(cause, "%s:%d: limit: invalid name \"%s\" (1 to %d "
		    "letters, digits, \"_\", \"-\" or \".\")", file, cd->line,
		    cd->argv[1], CONF_TOOL_NAME_MAX);
		return (-1);
	}
	for (i = 0; i < conf->nlimits; i++) {
		if (strcmp(conf->limits[i].name, cd->argv[1]) != 0)
			continue;
		xasprintf(cause, "%s:%d: duplicate limit %s (first declared "
		    "on line %d)", file, cd->line, cd->argv[1],
		    conf->limits[i].line);
		return (-1);
	}

	memset(&l, 0, sizeof l);
	l.name = xstrdup(cd->argv[1]);
	l.line = cd->line;
	conf_set_defaults(&l, conf_limit_entries,
	    CONF_NITEMS(conf_limit_entries));
	memset(seen, 0, sizeof seen);
	cs.entries = conf_limit_entries;
	cs.nentries = CONF_NITEMS(conf_limit_entries);
	cs.base = &l;
	cs.seen = seen;
	for (i = 0; i < cd->nchildren; i++) {
		if (conf_apply(&cs, &cd->children[i], file, cause) != 0)
			goto fail;
	}

	if (l.keys == 0) {
		xasprintf(cause, "%s:%d: limit %s: missing \"key principal|"
		    "client|tool|upstream...\"", file, cd->line, l.name);
		goto fail;
	}
	if (l.rate == 0 && l.concurrency == 0 && l.quota == 0) {
		xasprintf(cause, "%s:%d: limit %s: it limits nothing (rate, "
		    "concurrency or quota)", file, cd->line, l.name);
		goto fail;
	}
	if (l.rate == 0 && conf_scope_line(&cs, "burst") != 0) {
		xasprintf(cause, "%s:%d: limit %s: burst without rate", file,
		    conf_scope_line(&cs, "burst"), l.name);
		goto fail;
	}
	if (l.rate != 0 && l.burst == 0)
		l.burst = l.rate;

	conf->limits = xreallocarray(conf->limits, conf->nlimits + 1,
	    sizeof *conf->limits);
	conf->limits[conf->nlimits++] = l;
	return (0);

fail:
	conf_limit_clear(&l);
	return (-1);
}

/* What the limit blocks put into base: conf_free's. */
void
conf_limit_free(void *base)
{
	struct conf	*conf = base;
	size_t		 i;

	for (i = 0; i < conf->nlimits; i++)
		conf_limit_clear(&conf->limits[i]);
	free(conf->limits);
}

const struct conf_limit *
conf_limit_find(const struct conf *conf, const char *name)
{
	size_t	i;

	for (i = 0; i < conf->nlimits; i++) {
		if (strcmp(conf->limits[i].name, name) == 0)
			return (&conf->limits[i]);
	}
	return (NULL);
}

/*
 * The configuration parser (src/conf/conf.c) on any text. The conf module does
 * not print a loaded configuration, so consistency is checked by
 * transforming the text in ways that must not change its meaning. Oracles:
 * - a text is accepted (no cause) or refused with a one-line cause
 *   "FILE:LINE: message" whose LINE is a line of the text;
 * - a comment line put in front changes nothing but shifts that LINE by
 *   one; a line break added at the end changes nothing;
 * - an accepted configuration keeps what its consumers rely on (the
 *   endpoint is a path, the window fits the retention, every exec tool has
 *   a program and its argument references name its params);
 * - all of it is freed (LeakSanitizer).
 */
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "fuzz.h"
#include "xmalloc.h"

#define FILE_NAME	"fuzz.conf"

struct outcome {
	int	 ok;
	int	 line;		/* of the cause, when refused */
};

static const char	*conf_text;

static void
fail_dump(void)
{
	fuzz_print_bytes("conf", conf_text, strlen(conf_text));
}

static void
check_conf(const struct conf *conf)
{
	const struct conf_tool	*t;
	size_t			 i, j;

	FUZZ_CHECK(conf->endpoint != NULL && conf->endpoint[0] == '/',
	    "endpoint \"%s\"", conf->endpoint);
	FUZZ_CHECK(conf->listen_host != NULL && conf->listen_port >= 0 &&
	    conf->listen_port <= 65535, "listen port %d", conf->listen_port);
	FUZZ_CHECK(conf->stream_window >= 1 &&
	    conf->stream_window <= conf->stream_maxlen,
	    "stream_window %lld, stream_maxlen %lld", conf->stream_window,
	    conf->stream_maxlen);
	FUZZ_CHECK(conf->max_body > 0 && conf->max_header_size > 0,
	    "size limits %lld %lld", conf->max_body, conf->max_header_size);
	FUZZ_CHECK(conf->ntools == 0 || conf->tools != NULL, "tools lost");
	for (i = 0; i < conf->ntools; i++) {
		t = &conf->tools[i];
		FUZZ_CHECK(t->name != NULL && t->program != NULL &&
		    t->argv != NULL && t->argc >= 1 && t->argv[t->argc] == NULL,
		    "tool %zu incomplete", i);
		FUZZ_CHECK(conf_tool_find(conf, t->name) == t,
		    "tool %s is not found by its name (a duplicate?)", t->name);
		for (j = 0; j < t->argc; j++)
			FUZZ_CHECK(t->argv_param[j] < (int)t->nparams,
			    "tool %s: argument %zu names param %d of %zu",
			    t->name, j, t->argv_param[j], t->nparams);
	}
}

static struct outcome
parse(const char *text, int nlines)
{
	struct outcome	 o = { 0, 0 };
	struct conf	*conf;
	char		*cause = NULL, *end;
	const char	*p;
	size_t		 plen = strlen(FILE_NAME ":");

	conf = conf_parse_string(text, FILE_NAME, &cause);
	if (conf != NULL) {
		FUZZ_CHECK(cause == NULL, "accepted with a cause: %s", cause);
		check_conf(conf);
		conf_free(conf);
		o.ok = 1;
		return (o);
	}
	if (cause == NULL)
		fail_dump();
	FUZZ_CHECK(cause != NULL, "refused without a cause");
	if (strncmp(cause, FILE_NAME ":", plen) != 0)
		fail_dump();
	FUZZ_CHECK(strncmp(cause, FILE_NAME ":", plen) == 0,
	    "the cause does not name the file: %s", cause);
	o.line = (int)strtol(cause + plen, &end, 10);
	if (end == cause + plen || *end != ':' || o.line < 1 ||
	    o.line > nlines)
		fail_dump();
	FUZZ_CHECK(end > cause + plen && *end == ':' && o.line >= 1 &&
	    o.line <= nlines, "the cause names no line of the %d: %s",
	    nlines, cause);
	for (p = cause; *p != '\0'; p++) {
		if ((unsigned char)*p < 0x20 && *p != '\t')
			fail_dump();
		FUZZ_CHECK((unsigned char)*p >= 0x20 || *p == '\t',
		    "a control character in the cause: %s", cause);
	}
	free(cause);
	return (o);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	xmalloc_init_cjson();
	return (0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct outcome	 a, b, c;
	char		*text, *shifted, *ended;
	const char	*p;
	int		 nlines = 1;

	/* conf_load refuses a NUL; the parser sees text up to one. */
	text = fuzz_strndup(data, size);
	conf_text = text;
	for (p = text; *p != '\0'; p++)
		nlines += (*p == '\n');
	a = parse(text, nlines);

	xasprintf(&shifted, "# a comment\n%s", text);
	b = parse(shifted, nlines + 1);
	FUZZ_CHECK(a.ok == b.ok && (a.ok || b.line == a.line + 1),
	    "a comment line in front changes the outcome: %s line %d, "
	    "then %s line %d", a.ok ? "ok" : "refused", a.line,
	    b.ok ? "ok" : "refused", b.line);

	xasprintf(&ended, "%s\n", text);
	c = parse(ended, nlines + 1);
	FUZZ_CHECK(a.ok == c.ok && a.line == c.line,
	    "a line break at the end changes the outcome: %s line %d, "
	    "then %s line %d", a.ok ? "ok" : "refused", a.line,
	    c.ok ? "ok" : "refused", c.line);

	free(ended);
	free(shifted);
	free(text);
	return (0);
}

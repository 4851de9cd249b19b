/*
 * The tracing directives' own syntax (their rows are in conf_table.c):
 * where spans go (otel_endpoint), the headers sent with them, their
 * values read from files (otel_header), the sampling ratio (otel_sample)
 * and the resource attributes the operator adds (otel_resource).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf_int.h"
#include "xmalloc.h"

#define CONF_OTEL_URL_MAX	2048
#define CONF_OTEL_VALUE_MAX	4096	/* bytes of a header value */
#define CONF_OTEL_HEADERS	32
#define CONF_OTEL_PATH		"/v1/traces"

/*
 * none, or the OTLP/HTTP receiver's URL: http or https, a host, no user
 * (credentials go in otel_header, whose values stay out of every line),
 * no fragment. Like OTEL_EXPORTER_OTLP_ENDPOINT, a URL whose path is
 * empty or "/" gets /v1/traces; any other path is used as it is.
 */
int
conf_check_otel_endpoint(const char *s, char **value, char **why)
{
	const char	*host, *p;
	size_t		 len = strlen(s), hostlen;

	if (strcmp(s, "none") == 0) {
		*value = NULL;
		return (0);
	}
	if (strncasecmp(s, "https://", 8) == 0)
		host = s + 8;
	else if (strncasecmp(s, "http://", 7) == 0)
		host = s + 7;
	else {
		xasprintf(why, "\"%s\" is not none, nor an http:// or https:// "
		    "URL", s);
		return (-1);
	}
	hostlen = strcspn(host, "/?");
	if (len > CONF_OTEL_URL_MAX || hostlen == 0 || *host == ':' ||
	    strchr(s, '#') != NULL) {
		xasprintf(why, "invalid URL \"%s\" (a host is needed, no "
		    "fragment, at most %d bytes)", s, CONF_OTEL_URL_MAX);
		return (-1);
	}
	if (memchr(host, '@', hostlen) != NULL) {
		xasprintf(why, "the URL must not carry credentials (put them "
		    "in otel_header)");
		return (-1);
	}
	for (p = s; *p != '\0'; p++) {
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f ||
		    *p == '"' || *p == '\\') {
			xasprintf(why, "invalid character in URL \"%s\"", s);
			return (-1);
		}
	}
	p = host + hostlen;
	if (*p == '\0' || strcmp(p, "/") == 0)
		xasprintf(value, "%.*s%s", (int)(p - s), s, CONF_OTEL_PATH);
	else
		*value = xstrdup(s);
	return (0);
}

/* A ratio from 0 to 1, written as a decimal number. */
int
conf_parse_otel_sample(void *base, const struct conf_entry *ce,
    const char *s, char **why)
{
	char	*end;
	double	 d;

	errno = 0;
	d = strtod(s, &end);
	if (*s == '\0' || *end != '\0' || errno != 0 || !(d >= 0 && d <= 1) ||
	    strspn(s, "0123456789.") != strlen(s)) {
		xasprintf(why, "expected a ratio from 0 to 1 (0.25), not "
		    "\"%s\"", s);
		return (-1);
	}
	((struct conf *)base)->otel_sample = d;
	return (0);
}

/* RFC 9110's token, the characters of a header's name. */
static int
conf_otel_token(const char *s)
{
	const char	*p;

	if (*s == '\0' || strlen(s) > 256)
		return (0);
	for (p = s; *p != '\0'; p++) {
		if (!isalnum((unsigned char)*p) &&
		    strchr("!#$%&'*+-.^_`|~", *p) == NULL)
			return (0);
	}
	return (1);
}

/* The first line of file path, printable, as a header's value. */
static int
conf_otel_value(const char *path, char **value, char **why)
{
	FILE	*f;
	char	 buf[CONF_OTEL_VALUE_MAX + 2];
	size_t	 len, i;

	if (*path != '/') {
		xasprintf(why, "\"%s\" is not an absolute path", path);
		return (-1);
	}
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
		if ((unsigned char)buf[i] < 0x20 && buf[i] != '\t')
			break;
	}
	if (len == 0 || len > CONF_OTEL_VALUE_MAX || i < len ||
	    buf[len - 1] == ' ' || buf[0] == ' ') {
		explicit_bzero(buf, sizeof buf);
		xasprintf(why, "\"%s\": the value must be one line of 1 to %d "
		    "bytes, without control characters or spaces around it",
		    path, CONF_OTEL_VALUE_MAX);
		return (-1);
	}
	*value = xstrdup(buf);
	explicit_bzero(buf, sizeof buf);
	return (0);
}

/*
 * otel_header NAME FILE: a header every export request carries, its value
 * the first line of FILE (read at start-up and on every reload, so a
 * rotated key is taken up by SIGHUP). Kept as "NAME: VALUE".
 */
int
conf_line_otel_header(void *base, const struct conf_entry *ce, int argc,
    char **argv, char **why)
{
	static const char *const reserved[] = { "Content-Type",
	    "Content-Length", "Host", "Connection", "Transfer-Encoding" };
	struct conf	*conf = base;
	char		*value, *line;
	size_t		 i;

	if (argc != 2) {
		xasprintf(why, "expected NAME FILE");
		return (-1);
	}
	if (!conf_otel_token(argv[0])) {
		xasprintf(why, "\"%s\" is not a header name", argv[0]);
		return (-1);
	}
	for (i = 0; i < sizeof reserved / sizeof reserved[0]; i++) {
		if (strcasecmp(argv[0], reserved[i]) == 0) {
			xasprintf(why, "%s is set by mcpd", reserved[i]);
			return (-1);
		}
	}
	for (i = 0; i < conf->notel_headers; i++) {
		if (strncasecmp(conf->otel_headers[i], argv[0],
		    strlen(argv[0])) == 0 &&
		    conf->otel_headers[i][strlen(argv[0])] == ':') {
			xasprintf(why, "duplicate header %s", argv[0]);
			return (-1);
		}
	}
	if (conf->notel_headers == CONF_OTEL_HEADERS) {
		xasprintf(why, "at most %d headers", CONF_OTEL_HEADERS);
		return (-1);
	}
	if (conf_otel_value(argv[1], &value, why) != 0)
		return (-1);
	xasprintf(&line, "%s: %s", argv[0], value);
	explicit_bzero(value, strlen(value));
	free(value);
	conf->otel_headers = xreallocarray(conf->otel_headers,
	    conf->notel_headers + 2, sizeof *conf->otel_headers);
	conf->otel_headers[conf->notel_headers++] = line;
	conf->otel_headers[conf->notel_headers] = NULL;
	return (0);
}

void
conf_otel_headers_free(void *base)
{
	struct conf	*conf = base;
	size_t		 i;

	for (i = 0; i < conf->notel_headers; i++) {
		explicit_bzero(conf->otel_headers[i],
		    strlen(conf->otel_headers[i]));
		free(conf->otel_headers[i]);
	}
	free(conf->otel_headers);
	conf->otel_headers = NULL;
	conf->notel_headers = 0;
}

/* KEY=VALUE: a key of OpenTelemetry's attribute names, a value. */
int
conf_check_otel_attribute(const char *s, char **value, char **why)
{
	const char	*eq = strchr(s, '='), *p;

	if (eq == NULL || eq == s || eq[1] == '\0' || eq - s > 255 ||
	    strlen(eq + 1) > 255) {
		xasprintf(why, "expected KEY=VALUE, not \"%s\"", s);
		return (-1);
	}
	for (p = s; p < eq; p++) {
		if (!isalnum((unsigned char)*p) && *p != '.' && *p != '_' &&
		    *p != '-') {
			xasprintf(why, "invalid attribute name in \"%s\"", s);
			return (-1);
		}
	}
	*value = xstrdup(s);
	return (0);
}

/* A service name: printable, no space, 1 to 255 bytes. */
int
conf_check_otel_name(const char *s, char **value, char **why)
{
	const char	*p;

	if (*s == '\0' || strlen(s) > 255) {
		xasprintf(why, "expected 1 to 255 bytes");
		return (-1);
	}
	for (p = s; *p != '\0'; p++) {
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p == 0x7f) {
			xasprintf(why, "invalid character in \"%s\"", s);
			return (-1);
		}
	}
	*value = xstrdup(s);
	return (0);
}

/* random (drawn at start-up: NULL here), or a name as above. */
int
conf_check_otel_instance(const char *s, char **value, char **why)
{
	if (strcmp(s, "random") == 0) {
		*value = NULL;
		return (0);
	}
	return (conf_check_otel_name(s, value, why));
}

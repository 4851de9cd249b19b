/* A test's configuration text, parsed or refused (confparse.h). */
#include <stdlib.h>
#include <string.h>

#include "confparse.h"
#include "unit.h"

#include "conf.h"

struct conf *
parse_ok(const char *text)
{
	struct conf	*c;
	char		*cause = NULL;

	c = conf_parse_string(text, "t.conf", &cause);
	if (c == NULL)
		ck_abort_msg("unexpected error for \"%s\": %s", text, cause);
	ck_assert_ptr_null(cause);
	return (c);
}

/* The cause conf_parse_string gives for text, which it must refuse. */
static char *
refused(const char *text)
{
	struct conf	*c;
	char		*cause = NULL;

	c = conf_parse_string(text, "t.conf", &cause);
	ck_assert_msg(c == NULL, "no error for \"%s\"", text);
	ck_assert_ptr_nonnull(cause);
	return (cause);
}

void
expect_error(const char *text, const char *want)
{
	char	*cause = refused(text);

	ck_assert_str_eq(cause, want);
	free(cause);
}

void
expect_error_has(const char *text, const char *part)
{
	char	*cause = refused(text);

	ck_assert_msg(strstr(cause, part) != NULL, "\"%s\" lacks \"%s\"",
	    cause, part);
	free(cause);
}

/*
 * Unit tests for the pure parts of provider_exec.c: a call's arguments
 * checked against the params and substituted into the exec line, the
 * inputSchema, and program output made JSON-safe.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confparse.h"
#include "unit.h"

#include "conf.h"
#include "provider_exec.h"
#include "xmalloc.h"

static struct conf	*conf;

static void
setup(void)
{
	conf = parse_ok(
	    "tool t {\n"
	    "    param s string required \"A string\"\n"
	    "    param i integer\n"
	    "    param x number\n"
	    "    param b boolean\n"
	    "    exec /bin/echo -n {s} \"{i}\" lit{s} {x} {b} {s} {}\n"
	    "}\n"
	    "tool none {\n"
	    "    exec /bin/true a b\n"
	    "}\n");
}

static void
teardown(void)
{
	conf_free(conf);
}

/* argv for a JSON text of arguments, or NULL with *cause. */
static char **
argv_for(const char *tool, const char *json, char **cause)
{
	cJSON	*args = json == NULL ? NULL : cJSON_Parse(json);
	char	**argv;

	ck_assert(json == NULL || args != NULL);
	*cause = NULL;
	argv = provider_exec_argv(conf_tool_find(conf, tool), args, cause);
	cJSON_Delete(args);
	return (argv);
}

/* The words of argv joined with "|". */
static char *
joined(char **argv)
{
	char	*s = xstrdup(""), *t;
	size_t	 i;

	for (i = 0; argv[i] != NULL; i++) {
		xasprintf(&t, "%s%s%s", s, i == 0 ? "" : "|", argv[i]);
		free(s);
		s = t;
	}
	return (s);
}

static void
expect_argv(const char *json, const char *want)
{
	char	**argv, *cause, *got;

	argv = argv_for("t", json, &cause);
	ck_assert_msg(argv != NULL, "%s: %s", json, cause);
	got = joined(argv);
	ck_assert_str_eq(got, want);
	free(got);
	xfree_words(argv);
}

static void
expect_invalid(const char *json, const char *want)
{
	char	**argv, *cause;

	argv = argv_for("t", json, &cause);
	ck_assert_msg(argv == NULL, "%s accepted", json);
	ck_assert_str_eq(cause, want);
	free(cause);
}

START_TEST(test_substitution)
{
	/* Each {NAME} word is the value, whole; other words stay. */
	expect_argv("{\"s\": \"a b  $(c) *\\n\\\"'\", \"i\": 7, \"x\": 2.5, "
	    "\"b\": true}",
	    "/bin/echo|-n|a b  $(c) *\n\"'|7|lit{s}|2.5|true|a b  $(c) *\n"
	    "\"'|{}");
	/* Optional arguments left out are empty words; order is free. */
	expect_argv("{\"b\": false, \"s\": \"\"}",
	    "/bin/echo|-n|||lit{s}||false||{}");
	expect_argv("{\"s\": \"{i}\"}", "/bin/echo|-n|{i}||lit{s}|||{i}|{}");
}
END_TEST

START_TEST(test_numbers)
{
	expect_argv("{\"s\":\"\",\"i\":0}", "/bin/echo|-n||0|lit{s}||||{}");
	expect_argv("{\"s\":\"\",\"i\":-0}", "/bin/echo|-n||0|lit{s}||||{}");
	expect_argv("{\"s\":\"\",\"i\":2.0}", "/bin/echo|-n||2|lit{s}||||{}");
	expect_argv("{\"s\":\"\",\"i\":-123456789}",
	    "/bin/echo|-n||-123456789|lit{s}||||{}");
	expect_argv("{\"s\":\"\",\"i\":1e15}",
	    "/bin/echo|-n||1000000000000000|lit{s}||||{}");
	expect_argv("{\"s\":\"\",\"i\":9007199254740992}",
	    "/bin/echo|-n||9007199254740992|lit{s}||||{}");
	expect_argv("{\"s\":\"\",\"x\":0.1}", "/bin/echo|-n|||lit{s}|0.1|||{}");
	expect_argv("{\"s\":\"\",\"x\":-2.5e-7}",
	    "/bin/echo|-n|||lit{s}|-2.5e-07|||{}");
	expect_argv("{\"s\":\"\",\"x\":1e21}",
	    "/bin/echo|-n|||lit{s}|1e+21|||{}");
	expect_argv("{\"s\":\"\",\"x\":42}", "/bin/echo|-n|||lit{s}|42|||{}");
	expect_argv("{\"s\":\"\",\"x\":1e15}",
	    "/bin/echo|-n|||lit{s}|1e+15|||{}");
	expect_argv("{\"s\":\"\",\"x\":0.30000000000000004}",
	    "/bin/echo|-n|||lit{s}|0.30000000000000004|||{}");
}
END_TEST

START_TEST(test_invalid)
{
	char	**argv, *cause;

	expect_invalid("{}", "missing required argument 's'");
	expect_invalid("{\"i\": 1}", "missing required argument 's'");
	expect_invalid("{\"s\": 1}", "argument 's' must be a string");
	expect_invalid("{\"s\": null}", "argument 's' must be a string");
	expect_invalid("{\"s\": [\"a\"]}", "argument 's' must be a string");
	expect_invalid("{\"s\": \"\", \"i\": 1.5}",
	    "argument 'i' must be an integer");
	expect_invalid("{\"s\": \"\", \"i\": \"1\"}",
	    "argument 'i' must be an integer");
	expect_invalid("{\"s\": \"\", \"i\": true}",
	    "argument 'i' must be an integer");
	expect_invalid("{\"s\": \"\", \"i\": 9007199254740994}",
	    "argument 'i' must be an integer");
	expect_invalid("{\"s\": \"\", \"i\": 1e300}",
	    "argument 'i' must be an integer");
	expect_invalid("{\"s\": \"\", \"x\": \"2\"}",
	    "argument 'x' must be a number");
	expect_invalid("{\"s\": \"\", \"x\": {}}",
	    "argument 'x' must be a number");
	expect_invalid("{\"s\": \"\", \"b\": 1}",
	    "argument 'b' must be a boolean (true or false)");
	expect_invalid("{\"s\": \"\", \"b\": \"true\"}",
	    "argument 'b' must be a boolean (true or false)");
	expect_invalid("{\"s\": \"\", \"y\": 1}", "unknown argument 'y'");
	expect_invalid("{\"S\": \"\"}", "unknown argument 'S'");
	expect_invalid("{\"s\": \"a\", \"s\": \"b\"}",
	    "argument 's' is given twice");
	expect_invalid("[1]", "arguments must be an object");
	/* No arguments at all: fine without required params. */
	argv = argv_for("t", NULL, &cause);
	ck_assert_ptr_null(argv);
	ck_assert_str_eq(cause, "missing required argument 's'");
	free(cause);
	argv = argv_for("none", NULL, &cause);
	ck_assert_ptr_nonnull(argv);
	ck_assert_str_eq(argv[0], "/bin/true");
	ck_assert_str_eq(argv[2], "b");
	ck_assert_ptr_null(argv[3]);
	xfree_words(argv);
	argv = argv_for("none", "{\"a\": 1}", &cause);
	ck_assert_ptr_null(argv);
	ck_assert_str_eq(cause, "unknown argument 'a'");
	free(cause);
}
END_TEST

START_TEST(test_schema)
{
	cJSON	*schema;
	char	*text;

	schema = provider_exec_schema(conf_tool_find(conf, "t"));
	text = cJSON_PrintUnformatted(schema);
	ck_assert_str_eq(text, "{\"type\":\"object\",\"properties\":{"
	    "\"s\":{\"type\":\"string\",\"description\":\"A string\"},"
	    "\"i\":{\"type\":\"integer\"},\"x\":{\"type\":\"number\"},"
	    "\"b\":{\"type\":\"boolean\"}},\"required\":[\"s\"],"
	    "\"additionalProperties\":false}");
	free(text);
	cJSON_Delete(schema);

	schema = provider_exec_schema(conf_tool_find(conf, "none"));
	text = cJSON_PrintUnformatted(schema);
	ck_assert_str_eq(text, "{\"type\":\"object\",\"properties\":{},"
	    "\"additionalProperties\":false}");
	free(text);
	cJSON_Delete(schema);
}
END_TEST

static void
expect_text(const char *in, size_t len, const char *want)
{
	char	*got = provider_exec_text(in, len);

	ck_assert_str_eq(got, want);
	free(got);
}

#define FFFD	"\xef\xbf\xbd"

START_TEST(test_text)
{
	expect_text("", 0, "");
	expect_text("plain text\t\r\n", 13, "plain text\t\r\n");
	expect_text("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14,
	    "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	expect_text("a\0b", 3, "a" FFFD "b");
	expect_text("\xff\xfe", 2, FFFD FFFD);
	expect_text("\xc0\x80", 2, FFFD FFFD);		/* overlong NUL */
	expect_text("\xe0\x80\xaf", 3, FFFD FFFD FFFD);	/* overlong */
	expect_text("\xed\xa0\x80", 3, FFFD FFFD FFFD);	/* surrogate */
	expect_text("\xf4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD); /* > U+10FFFF */
	expect_text("\xf4\x8f\xbf\xbf", 4, "\xf4\x8f\xbf\xbf");
	expect_text("ab\xe2\x82", 4, "ab" FFFD FFFD);	/* cut at the end */
	expect_text("\x80x", 2, FFFD "x");
	/* The length given is what counts, not a NUL. */
	expect_text("abcdef", 3, "abc");
}
END_TEST

static Suite *
exec_args_suite(void)
{
	Suite	*s = suite_create("exec_args");
	TCase	*tc = tcase_create("exec_args");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_substitution);
	tcase_add_test(tc, test_numbers);
	tcase_add_test(tc, test_invalid);
	tcase_add_test(tc, test_schema);
	tcase_add_test(tc, test_text);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(exec_args_suite)

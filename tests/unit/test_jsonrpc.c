/*
 * Unit tests for jsonrpc.c: the UTF-8 and nesting checks run before cJSON,
 * parsing, message classification, and the shapes of built messages.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

#include "jsonrpc.h"
#include "xmalloc.h"

/* Byte strings with explicit lengths (some hold NULs or end mid-sequence). */
struct bytes {
	const char	*s;
	size_t		 len;
	const char	*what;
};
#define B(lit, what)	{ lit, sizeof (lit) - 1, what }

static const struct bytes utf8_good[] = {
	B("", "empty"),
	B("plain ascii {}[]\"\\", "ascii"),
	B("\x00\x7f", "NUL and DEL"),
	B("\xc2\x80", "U+0080, smallest 2-byte"),
	B("\xc3\xa9", "U+00E9"),
	B("\xdf\xbf", "U+07FF, largest 2-byte"),
	B("\xe0\xa0\x80", "U+0800, smallest 3-byte"),
	B("\xe2\x82\xac", "U+20AC"),
	B("\xed\x9f\xbf", "U+D7FF, just below the surrogates"),
	B("\xee\x80\x80", "U+E000, just above the surrogates"),
	B("\xef\xbf\xbf", "U+FFFF"),
	B("\xf0\x90\x80\x80", "U+10000, smallest 4-byte"),
	B("\xf0\x9f\x98\x80", "U+1F600"),
	B("\xf4\x8f\xbf\xbf", "U+10FFFF, the last code point"),
	B("a\xc3\xa9z\xe2\x82\xac\xf0\x9f\x98\x80!", "mixed"),
	B("{\"t\":\"\xe6\x97\xa5\xe6\x9c\xac\"}", "JSON with CJK"),
};

static const struct bytes utf8_bad[] = {
	/* Continuation bytes out of place or missing. */
	B("\x80", "lone continuation"),
	B("\xbf", "lone continuation 0xbf"),
	B("a\x80z", "continuation after ascii"),
	B("\xc3\x28", "2-byte, bad continuation"),
	B("\xc3\xc3\xa9", "2-byte, lead as continuation"),
	B("\xe2\x28\xac", "3-byte, bad 2nd"),
	B("\xe2\x82\x28", "3-byte, bad 3rd"),
	B("\xf0\x28\x98\x80", "4-byte, bad 2nd"),
	B("\xf0\x9f\x28\x80", "4-byte, bad 3rd"),
	B("\xf0\x9f\x98\x28", "4-byte, bad 4th"),
	/* Overlong forms. */
	B("\xc0\x80", "overlong NUL"),
	B("\xc0\xaf", "overlong '/'"),
	B("\xc1\xbf", "overlong U+007F"),
	B("\xe0\x80\x80", "3-byte overlong NUL"),
	B("\xe0\x9f\xbf", "3-byte overlong U+07FF"),
	B("\xf0\x80\x80\x80", "4-byte overlong NUL"),
	B("\xf0\x8f\xbf\xbf", "4-byte overlong U+FFFF"),
	/* UTF-16 surrogates. */
	B("\xed\xa0\x80", "U+D800"),
	B("\xed\xaf\xbf", "U+DBFF"),
	B("\xed\xb0\x80", "U+DC00"),
	B("\xed\xbf\xbf", "U+DFFF"),
	B("\xed\xa0\xbd\xed\xb8\x80", "CESU-8 surrogate pair"),
	/* Past U+10FFFF. */
	B("\xf4\x90\x80\x80", "U+110000"),
	B("\xf5\x80\x80\x80", "lead 0xf5"),
	B("\xf7\xbf\xbf\xbf", "lead 0xf7"),
	/* Leads that never start a sequence. */
	B("\xf8\x88\x80\x80\x80", "5-byte form"),
	B("\xfc\x84\x80\x80\x80\x80", "6-byte form"),
	B("\xfe", "0xfe"),
	B("\xff", "0xff"),
	/* Truncated at the end of the input. */
	B("\xc3", "2-byte, 1 of 2"),
	B("\xe2\x82", "3-byte, 2 of 3"),
	B("\xe2", "3-byte, 1 of 3"),
	B("\xf0\x9f\x98", "4-byte, 3 of 4"),
	B("\xf0", "4-byte, 1 of 4"),
	B("{\"a\":\"x\xe2\x82", "JSON ending mid-sequence"),
};

START_TEST(test_utf8_good)
{
	const struct bytes	*b = &utf8_good[_i];

	ck_assert_msg(jsonrpc_utf8_valid(b->s, b->len) == 1, "%s refused",
	    b->what);
}
END_TEST

START_TEST(test_utf8_bad)
{
	const struct bytes	*b = &utf8_bad[_i];

	ck_assert_msg(jsonrpc_utf8_valid(b->s, b->len) == 0, "%s accepted",
	    b->what);
}
END_TEST

/* Only len bytes count: a sequence cut by len is truncated. */
START_TEST(test_utf8_length)
{
	ck_assert_int_eq(jsonrpc_utf8_valid("\xc3\xa9", 1), 0);
	ck_assert_int_eq(jsonrpc_utf8_valid("\xf0\x9f\x98\x80", 3), 0);
	ck_assert_int_eq(jsonrpc_utf8_valid("ab\xff", 2), 1);
	ck_assert_int_eq(jsonrpc_utf8_valid("\xff", 0), 1);
}
END_TEST

/* A string of n '[' then n ']'. */
static char *
nested(int n, size_t *lenp)
{
	char	*s = xmalloc((size_t)n * 2 + 1);

	memset(s, '[', (size_t)n);
	memset(s + n, ']', (size_t)n);
	s[n * 2] = '\0';
	*lenp = (size_t)n * 2;
	return (s);
}

static int
depth_ok(const char *s, int max)
{
	return (jsonrpc_depth_ok(s, strlen(s), max));
}

START_TEST(test_depth_limit)
{
	char	*s;
	size_t	 len;

	ck_assert_int_eq(depth_ok("", 0), 1);
	ck_assert_int_eq(depth_ok("1", 0), 1);
	ck_assert_int_eq(depth_ok("[]", 0), 0);
	ck_assert_int_eq(depth_ok("[]", 1), 1);
	ck_assert_int_eq(depth_ok("{}", 1), 1);
	ck_assert_int_eq(depth_ok("[[]]", 1), 0);
	ck_assert_int_eq(depth_ok("[[]]", 2), 1);
	/* Siblings do not add up. */
	ck_assert_int_eq(depth_ok("[[],[],{},{}]", 2), 1);
	ck_assert_int_eq(depth_ok("[[],[],{},{\"a\":[]}]", 3), 1);
	ck_assert_int_eq(depth_ok("[[],[],{},{\"a\":[]}]", 2), 0);
	ck_assert_int_eq(depth_ok("{\"a\":[{\"b\":[]}]}", 4), 1);
	ck_assert_int_eq(depth_ok("{\"a\":[{\"b\":[]}]}", 3), 0);

	s = nested(JSONRPC_MAX_DEPTH, &len);
	ck_assert_int_eq(jsonrpc_depth_ok(s, len, JSONRPC_MAX_DEPTH), 1);
	free(s);
	s = nested(JSONRPC_MAX_DEPTH + 1, &len);
	ck_assert_int_eq(jsonrpc_depth_ok(s, len, JSONRPC_MAX_DEPTH), 0);
	ck_assert_int_eq(jsonrpc_depth_ok(s, len, JSONRPC_MAX_DEPTH + 1), 1);
	free(s);

	/* Only the first len bytes are looked at. */
	ck_assert_int_eq(jsonrpc_depth_ok("[[[", 1, 1), 1);
}
END_TEST

START_TEST(test_depth_strings)
{
	/* Brackets inside strings do not count. */
	ck_assert_int_eq(depth_ok("\"[[[[{{{{\"", 0), 1);
	ck_assert_int_eq(depth_ok("{\"a\":\"[[[{{{\"}", 1), 1);
	ck_assert_int_eq(depth_ok("{\"[[[\":\"]]]\"}", 1), 1);
	/* An escaped quote does not end the string. */
	ck_assert_int_eq(depth_ok("[\"\\\"[[[\"]", 1), 1);
	ck_assert_int_eq(depth_ok("[\"\\\"\\\"{{\\\"\"]", 1), 1);
	/* An escaped backslash does not escape the quote after it. */
	ck_assert_int_eq(depth_ok("[\"\\\\\",[[]]]", 2), 0);
	ck_assert_int_eq(depth_ok("[\"\\\\\",[[]]]", 3), 1);
	/* Strings end: brackets after them count again. */
	ck_assert_int_eq(depth_ok("[\"]]]]\",[[]]]", 2), 0);
	ck_assert_int_eq(depth_ok("[\"]]]]\",[[]]]", 3), 1);
}
END_TEST

static void
expect_parse_error(const char *body, size_t len, const char *what)
{
	cJSON	*json;
	int		 code = 0;
	const char	*cause = NULL;

	json = jsonrpc_parse(body, len, &code, &cause);
	ck_assert_msg(json == NULL, "%s: parsed", what);
	ck_assert_int_eq(code, JSONRPC_PARSE_ERROR);
	ck_assert_ptr_nonnull(cause);
	ck_assert_msg(strncmp(cause, "Parse error", 11) == 0, "%s: cause %s",
	    what, cause);
}

static cJSON *
parse_ok(const char *body, size_t len)
{
	cJSON	*json;
	int		 code = 0;
	const char	*cause = NULL;

	json = jsonrpc_parse(body, len, &code, &cause);
	ck_assert_msg(json != NULL, "\"%s\": %s", body,
	    cause != NULL ? cause : "(no cause)");
	return (json);
}

static const struct bytes parse_bad[] = {
	B("", "empty body"),
	B("   ", "only blanks"),
	B("{", "unclosed object"),
	B("[1,2", "unclosed array"),
	B("{\"a\":}", "missing value"),
	B("{\"a\" 1}", "missing colon"),
	B("{'a':1}", "single quotes"),
	B("{\"a\":1,}", "trailing comma"),
	B("nul", "bad literal"),
	B("\"abc", "unterminated string"),
	/* Trailing garbage after a complete value. */
	B("{} x", "trailing word"),
	B("{}{}", "two objects"),
	B("[]]", "extra closer"),
	B("1 2", "two numbers"),
	B("{\"jsonrpc\":\"2.0\"},", "trailing comma after value"),
	B("{}\r\n\t x", "garbage after blanks"),
	/* NUL is not JSON whitespace, nor allowed raw inside a string. */
	B("{}\0", "trailing NUL"),
	B("{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}\0\0", "trailing NULs"),
	B("{} \0 ", "NUL between blanks"),
	B("{\"a\":\"x\0y\"}", "NUL inside a string"),
	B("{\"method\":\"tools/call\0evil\"}", "NUL cutting a method"),
	/* Control characters inside strings must be escaped. */
	B("{\"a\":\"x\ny\"}", "raw LF in a string"),
	B("{\"a\":\"x\ty\"}", "raw TAB in a string"),
	B("{\"a\":\"\x1f\"}", "raw 0x1f in a string"),
	/* Refused before cJSON sees them. */
	B("{\"a\":\"\xff\"}", "invalid UTF-8 in a string"),
	B("{\"a\":\"\xed\xa0\x80\"}", "surrogate in a string"),
	/* Past double range: cJSON reads infinity and would print null. */
	B("{\"a\":1e400}", "number beyond double range"),
	B("[0,-2e308]", "negative number beyond double range"),
	B("{\"p\":{\"_meta\":{\"progressToken\":1E999}}}",
	    "nested huge number"),
};

START_TEST(test_parse_bad)
{
	expect_parse_error(parse_bad[_i].s, parse_bad[_i].len,
	    parse_bad[_i].what);
}
END_TEST

/* An empty evbuffer pulls up to NULL: no arithmetic on that pointer. */
START_TEST(test_parse_null_body)
{
	expect_parse_error(NULL, 0, "empty body as a NULL pointer");
}
END_TEST

START_TEST(test_parse_good)
{
	cJSON		*json;
	const char	*body =
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
	const char	*text = "{\"x\":1}garbage not looked at";

	json = parse_ok(body, strlen(body));
	ck_assert(cJSON_IsObject(json));
	ck_assert_str_eq(cJSON_GetObjectItem(json, "method")->valuestring,
	    "ping");
	cJSON_Delete(json);

	/* Trailing JSON whitespace is fine. */
	json = parse_ok("[1] \t\r\n ", 8);
	ck_assert(cJSON_IsArray(json));
	cJSON_Delete(json);

	/* Bodies are not NUL-terminated: only len bytes are parsed. */
	json = parse_ok(text, 7);
	ck_assert_int_eq(cJSON_GetObjectItem(json, "x")->valueint, 1);
	cJSON_Delete(json);

	json = parse_ok("{\"t\":\"\xc3\xa9\"}", 10);
	ck_assert_str_eq(cJSON_GetObjectItem(json, "t")->valuestring,
	    "\xc3\xa9");
	cJSON_Delete(json);
}
END_TEST

START_TEST(test_parse_depth)
{
	cJSON	*json;
	char	*s;
	size_t	 len;

	s = nested(JSONRPC_MAX_DEPTH, &len);
	json = parse_ok(s, len);
	cJSON_Delete(json);
	free(s);

	s = nested(JSONRPC_MAX_DEPTH + 1, &len);
	expect_parse_error(s, len, "65 levels");
	free(s);

	/* Far too deep: refused without recursing. */
	s = nested(200000, &len);
	expect_parse_error(s, len, "200000 levels");
	free(s);

	/* Deep objects count the same as arrays. */
	{
		char	buf[JSONRPC_MAX_DEPTH * 8 + 16], *p = buf;
		int	i;

		for (i = 0; i <= JSONRPC_MAX_DEPTH; i++)
			p += sprintf(p, "{\"a\":");
		p += sprintf(p, "1");
		for (i = 0; i <= JSONRPC_MAX_DEPTH; i++)
			*p++ = '}';
		*p = '\0';
		expect_parse_error(buf, strlen(buf), "65 nested objects");
	}
}
END_TEST

/*
 * An accepted integer id must come back byte for byte: cJSON prints with
 * %1.15g, so ids beyond 15 digits are refused rather than mangled.
 */
START_TEST(test_id_echo_large)
{
	static const char	*ids[] = {
		"9007199254740991", "-9007199254740991", "9007199254740990",
		"999999999999999", "-999999999999999", "123456789012345"
	};
	char			 body[256], want[256], bad[1024] = "";
	cJSON			*req, *msg;
	const char		*cause;
	int			 code;
	const char		*why;
	char			*text;
	size_t			 i;

	for (i = 0; i < sizeof ids / sizeof ids[0]; i++) {
		snprintf(body, sizeof body,
		    "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"ping\"}",
		    ids[i]);
		req = jsonrpc_parse(body, strlen(body), &code, &why);
		ck_assert_ptr_nonnull(req);
		if (jsonrpc_classify(req, &cause) == JSONRPC_REQUEST) {
			/* Accepted: then it must come back unchanged. */
			msg = jsonrpc_result(cJSON_GetObjectItem(req, "id"),
			    NULL);
			text = cJSON_PrintUnformatted(msg);
			snprintf(want, sizeof want, "{\"jsonrpc\":\"2.0\","
			    "\"id\":%s,\"result\":{}}", ids[i]);
			if (strcmp(text, want) != 0) {
				/* Collected: nothing leaks on failure. */
				snprintf(bad + strlen(bad),
				    sizeof bad - strlen(bad), " id %s echoed "
				    "as %s;", ids[i], text);
			}
			free(text);
			cJSON_Delete(msg);
		}
		cJSON_Delete(req);
	}
	ck_assert_msg(bad[0] == '\0', "ids not echoed exactly:%s", bad);
}
END_TEST

static enum jsonrpc_kind
classify(const char *text, const char **cause)
{
	cJSON			*json;
	enum jsonrpc_kind	 kind;

	json = cJSON_Parse(text);
	ck_assert_msg(json != NULL, "test JSON does not parse: %s", text);
	*cause = NULL;
	kind = jsonrpc_classify(json, cause);
	cJSON_Delete(json);
	return (kind);
}

static const struct {
	const char		*text;
	enum jsonrpc_kind	 kind;
} classify_cases[] = {
	/* Requests. */
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
	    JSONRPC_REQUEST },
	{ "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"ping\"}",
	    JSONRPC_REQUEST },
	{ "{\"jsonrpc\":\"2.0\",\"id\":-7,\"method\":\"ping\"}",
	    JSONRPC_REQUEST },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1.0,\"method\":\"ping\"}",
	    JSONRPC_REQUEST },
	{ "{\"jsonrpc\":\"2.0\",\"id\":999999999999999,\"method\":\"ping\"}",
	    JSONRPC_REQUEST },
	{ "{\"jsonrpc\":\"2.0\",\"id\":9007199254740991,\"method\":\"ping\"}",
	    JSONRPC_INVALID },
	{ "{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"method\":\"ping\"}",
	    JSONRPC_REQUEST },
	{ "{\"jsonrpc\":\"2.0\",\"id\":\"\",\"method\":\"ping\"}",
	    JSONRPC_REQUEST },
	{ "{\"method\":\"tools/list\",\"params\":{},\"id\":2,"
	    "\"jsonrpc\":\"2.0\"}",
	    JSONRPC_REQUEST },
	{ "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"x\",\"params\":[1,2]}",
	    JSONRPC_REQUEST },
	/* Notifications. */
	{ "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
	    JSONRPC_NOTIFICATION },
	{ "{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{\"a\":1}}",
	    JSONRPC_NOTIFICATION },
	{ "{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":[]}",
	    JSONRPC_NOTIFICATION },
	/* Responses. */
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", JSONRPC_RESPONSE },
	{ "{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"result\":null}",
	    JSONRPC_RESPONSE },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-1,"
	    "\"message\":\"m\"}}", JSONRPC_RESPONSE },
	{ "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
	    "\"message\":\"m\"}}", JSONRPC_RESPONSE },
	/* Invalid: envelope. */
	{ "[]", JSONRPC_INVALID },
	{ "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]",
	    JSONRPC_INVALID },
	{ "1", JSONRPC_INVALID },
	{ "\"ping\"", JSONRPC_INVALID },
	{ "null", JSONRPC_INVALID },
	{ "{}", JSONRPC_INVALID },
	{ "{\"id\":1,\"method\":\"ping\"}", JSONRPC_INVALID },
	{ "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}",
	    JSONRPC_INVALID },
	{ "{\"jsonrpc\":\"2.0 \",\"id\":1,\"method\":\"ping\"}",
	    JSONRPC_INVALID },
	{ "{\"jsonrpc\":\"2\",\"id\":1,\"method\":\"ping\"}", JSONRPC_INVALID },
	{ "{\"jsonrpc\":2.0,\"id\":1,\"method\":\"ping\"}", JSONRPC_INVALID },
	{ "{\"jsonrpc\":null,\"id\":1,\"method\":\"ping\"}", JSONRPC_INVALID },
	{ "{\"JSONRPC\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
	    JSONRPC_INVALID },
	/* Invalid: method. */
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", JSONRPC_INVALID },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":null}", JSONRPC_INVALID },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":{}}", JSONRPC_INVALID },
	{ "{\"jsonrpc\":\"2.0\",\"method\":true}", JSONRPC_INVALID },
	/* Invalid: request id. */
	{ "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}",
	    JSONRPC_INVALID },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}",
	    JSONRPC_INVALID },
	{ "{\"jsonrpc\":\"2.0\",\"id\":-0.25,\"method\":\"ping\"}",
	    JSONRPC_INVALID },
	{ "{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}",
	    JSONRPC_INVALID },
	/* Past any integer range (jsonrpc_id_valid casts to long long). */
	{ "{\"jsonrpc\":\"2.0\",\"id\":1e300,\"method\":\"ping\"}",
	    JSONRPC_INVALID },
	{ "{\"jsonrpc\":\"2.0\",\"id\":-1e300,\"method\":\"ping\"}",
	    JSONRPC_INVALID },
	{ "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}",
	    JSONRPC_INVALID },
	{ "{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}",
	    JSONRPC_INVALID },
	/* Invalid: params. */
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":5}",
	    JSONRPC_INVALID },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":\"s\"}",
	    JSONRPC_INVALID },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":true}",
	    JSONRPC_INVALID },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":null}",
	    JSONRPC_INVALID },
	{ "{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":7}",
	    JSONRPC_INVALID },
	/* Invalid: responses. */
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{\"code\":1,"
	    "\"message\":\"m\"}}", JSONRPC_INVALID },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1}", JSONRPC_INVALID },
	{ "{\"jsonrpc\":\"2.0\",\"result\":{}}", JSONRPC_INVALID },
	{ "{\"jsonrpc\":\"2.0\",\"id\":2.5,\"result\":{}}", JSONRPC_INVALID },
	{ "{\"jsonrpc\":\"2.0\",\"id\":false,\"result\":{}}", JSONRPC_INVALID },
};

START_TEST(test_classify)
{
	const char		*cause = NULL;
	enum jsonrpc_kind	 kind;

	kind = classify(classify_cases[_i].text, &cause);
	ck_assert_msg(kind == classify_cases[_i].kind,
	    "%s: kind %d, want %d (cause %s)", classify_cases[_i].text,
	    (int)kind, (int)classify_cases[_i].kind,
	    cause != NULL ? cause : "none");
	if (kind == JSONRPC_INVALID) {
		ck_assert_ptr_nonnull(cause);
		ck_assert_msg(strncmp(cause, "Invalid Request", 15) == 0,
		    "cause %s", cause);
	}
}
END_TEST

/*
 * \u0000 in a body: cJSON would end the string there, so every string that
 * held one is refused, never read cut. The envelope is refused by
 * jsonrpc_classify; a request's params are left for dispatch (-32602 with
 * the id), which finds them with jsonrpc_has_nul.
 */
static const struct {
	const char		*text;
	enum jsonrpc_kind	 kind;
	int			 params_nul;
} nul_cases[] = {
	/* Methods, ids, member names, any string outside params. */
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\\u0000x\"}",
	    JSONRPC_INVALID, 0 },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\\u0000\"}",
	    JSONRPC_INVALID, 0 },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\\u0000\"}",
	    JSONRPC_INVALID, 0 },
	{ "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/\\u0000\"}",
	    JSONRPC_INVALID, 0 },
	{ "{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000b\",\"method\":\"ping\"}",
	    JSONRPC_INVALID, 0 },
	{ "{\"jsonrpc\":\"2.0\\u0000\",\"id\":1,\"method\":\"ping\"}",
	    JSONRPC_INVALID, 0 },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\\u0000x\":\"tools/list\","
	    "\"method\":\"ping\"}", JSONRPC_INVALID, 0 },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\\u0000\":"
	    "{}}", JSONRPC_INVALID, 0 },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\":[[\"\\u0000"
	    "\"]]}", JSONRPC_INVALID, 0 },
	/* A second "params" is not the one dispatch reads. */
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{},"
	    "\"params\":{\"a\":\"\\u0000\"}}", JSONRPC_INVALID, 0 },
	/* No answer can carry an id: refused whole. */
	{ "{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{\"a\":\"\\u0000\"}}",
	    JSONRPC_INVALID, 1 },
	{ "{\"jsonrpc\":\"2.0\",\"id\":\"r\",\"result\":{\"t\":\"a\\u0000\"}}",
	    JSONRPC_INVALID, 0 },
	{ "{\"jsonrpc\":\"2.0\",\"id\":\"r\",\"error\":{\"code\":1,"
	    "\"message\":\"\\u0000\"}}", JSONRPC_INVALID, 0 },
	{ "{\"jsonrpc\":\"2.0\",\"id\":\"r\\u0000\",\"result\":{}}",
	    JSONRPC_INVALID, 0 },
	/* A request's params: its own check, in dispatch. */
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
	    "{\"name\":\"echo\\u0000zzz\"}}", JSONRPC_REQUEST, 1 },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
	    "{\"name\":\"echo\",\"arguments\":{\"text\":\"a\\u0000b\"}}}",
	    JSONRPC_REQUEST, 1 },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
	    "{\"name\":\"echo\",\"arguments\":{\"text\\u0000\":\"a\"}}}",
	    JSONRPC_REQUEST, 1 },
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":[1,[{\"a\":"
	    "[\"\\u0000\"]}]]}", JSONRPC_REQUEST, 1 },
	/* An escaped backslash before u0000 is text. */
	{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
	    "{\"name\":\"echo\",\"arguments\":{\"text\":\"a\\\\u0000b\"}}}",
	    JSONRPC_REQUEST, 0 },
	{ "{\"jsonrpc\":\"2.0\",\"id\":\"\\\\u0000\",\"method\":\"ping\","
	    "\"params\":{\"\\\\\\\\u0000\":\"\\u0001\"}}", JSONRPC_REQUEST, 0 },
};

START_TEST(test_classify_nul)
{
	const char		*text = nul_cases[_i].text, *cause = NULL;
	enum jsonrpc_kind	 kind;
	cJSON			*json;

	json = parse_ok(text, strlen(text));
	kind = jsonrpc_classify(json, &cause);
	ck_assert_msg(kind == nul_cases[_i].kind, "%s: kind %d, want %d "
	    "(cause %s)", text, (int)kind, (int)nul_cases[_i].kind,
	    cause != NULL ? cause : "none");
	if (kind == JSONRPC_INVALID)
		ck_assert_msg(strstr(cause, "NUL") != NULL, "cause %s", cause);
	ck_assert_int_eq(jsonrpc_has_nul(cJSON_GetObjectItem(json, "params")),
	    nul_cases[_i].params_nul);
	cJSON_Delete(json);
}
END_TEST

/* Strings around the NUL are kept whole, escapes elsewhere still decode. */
START_TEST(test_nul_not_cut)
{
	const char	*body = "{\"a\":\"x\\u0000yz\",\"b\":\"\\u00e9\\\\u0000\","
	    "\"c\":\"\\u0000\\u0000\",\"d\":\"\\\\\\u0000\"}";
	cJSON		*json, *item;

	json = parse_ok(body, strlen(body));
	item = cJSON_GetObjectItem(json, "a");
	ck_assert_int_eq(jsonrpc_has_nul(item), 1);
	ck_assert_uint_eq(strlen(item->valuestring), 4);
	ck_assert(strncmp(item->valuestring, "x", 1) == 0);
	ck_assert_str_eq(item->valuestring + 2, "yz");
	item = cJSON_GetObjectItem(json, "b");
	ck_assert_int_eq(jsonrpc_has_nul(item), 0);
	ck_assert_str_eq(item->valuestring, "\xc3\xa9\\u0000");
	item = cJSON_GetObjectItem(json, "c");
	ck_assert_int_eq(jsonrpc_has_nul(item), 1);
	ck_assert_uint_eq(strlen(item->valuestring), 2);
	/* An escaped backslash, then a real \u0000. */
	item = cJSON_GetObjectItem(json, "d");
	ck_assert_int_eq(jsonrpc_has_nul(item), 1);
	ck_assert(item->valuestring[0] == '\\');
	ck_assert_int_eq(jsonrpc_has_nul(json), 1);
	ck_assert_int_eq(jsonrpc_has_nul(NULL), 0);
	cJSON_Delete(json);

	/* Outside a string the escape is malformed JSON, as it always was. */
	expect_parse_error("[\\u0000]", 8, "escape outside a string");
	expect_parse_error("{\"a\":\"\\ud800\\u0000\"}", 20,
	    "high surrogate, then \\u0000");
}
END_TEST

/* An invalid message is answered with its id only if it reads back exact. */
START_TEST(test_reply_id)
{
	static const struct {
		const char	*text;
		const char	*want;	/* printed id, NULL for none */
	} cases[] = {
		{ "{\"id\":7,\"method\":5}", "7" },
		{ "{\"id\":\"s\",\"method\":5}", "\"s\"" },
		{ "{\"id\":\"a\\u0000b\",\"method\":\"ping\"}", NULL },
		{ "{\"id\":{\"a\":1},\"method\":\"ping\"}", NULL },
		{ "{\"id\":1.5,\"method\":\"ping\"}", NULL },
		{ "{\"id\":1e300,\"method\":\"ping\"}", NULL },
		{ "{\"id\":null}", NULL },
		{ "{\"method\":\"ping\"}", NULL },
	};
	const cJSON	*id;
	cJSON		*json;
	char		*text;
	size_t		 i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		json = parse_ok(cases[i].text, strlen(cases[i].text));
		id = jsonrpc_reply_id(json);
		if (cases[i].want == NULL)
			ck_assert_msg(id == NULL, "%s: id echoed",
			    cases[i].text);
		else {
			ck_assert_ptr_nonnull(id);
			text = cJSON_PrintUnformatted(id);
			ck_assert_str_eq(text, cases[i].want);
			free(text);
		}
		cJSON_Delete(json);
	}
}
END_TEST

/* Prints msg without blanks, compares, and frees it. */
static void
expect_json(cJSON *msg, const char *want)
{
	char	*text;

	ck_assert_ptr_nonnull(msg);
	text = cJSON_PrintUnformatted(msg);
	ck_assert_ptr_nonnull(text);
	ck_assert_str_eq(text, want);
	free(text);
	cJSON_Delete(msg);
}

START_TEST(test_result_shape)
{
	cJSON	*id, *result, *msg;

	id = cJSON_CreateNumber(7);
	expect_json(jsonrpc_result(id, NULL),
	    "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}");

	result = cJSON_CreateObject();
	cJSON_AddStringToObject(result, "k", "v");
	msg = jsonrpc_result(id, result);
	/* The result is taken over, the id is copied. */
	ck_assert_ptr_eq(cJSON_GetObjectItem(msg, "result"), result);
	ck_assert_ptr_ne(cJSON_GetObjectItem(msg, "id"), id);
	expect_json(msg,
	    "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"k\":\"v\"}}");
	cJSON_Delete(id);

	/* No id (a reply to nothing known) is null. */
	expect_json(jsonrpc_result(NULL, NULL),
	    "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}");
}
END_TEST

START_TEST(test_error_shape)
{
	cJSON	*id, *data;

	expect_json(jsonrpc_error(NULL, JSONRPC_PARSE_ERROR, "Parse error",
	    NULL), "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":"
	    "{\"code\":-32700,\"message\":\"Parse error\"}}");

	id = cJSON_CreateString("req-1");
	data = cJSON_CreateObject();
	cJSON_AddStringToObject(data, "reason", "trimmed");
	expect_json(jsonrpc_error(id, JSONRPC_INVALID_PARAMS, "gone", data),
	    "{\"jsonrpc\":\"2.0\",\"id\":\"req-1\",\"error\":"
	    "{\"code\":-32602,\"message\":\"gone\","
	    "\"data\":{\"reason\":\"trimmed\"}}}");
	cJSON_Delete(id);

	id = cJSON_CreateNull();
	expect_json(jsonrpc_error(id, JSONRPC_INVALID_REQUEST, "bad", NULL),
	    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":"
	    "{\"code\":-32600,\"message\":\"bad\"}}");
	cJSON_Delete(id);
}
END_TEST

START_TEST(test_notification_shape)
{
	cJSON	*params;

	expect_json(jsonrpc_notification("notifications/initialized", NULL),
	    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");

	params = cJSON_CreateObject();
	cJSON_AddNumberToObject(params, "progress", 1);
	cJSON_AddNumberToObject(params, "total", 3);
	expect_json(jsonrpc_notification("notifications/progress", params),
	    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
	    "\"params\":{\"progress\":1,\"total\":3}}");
}
END_TEST

/* The id of a parsed request comes back byte for byte in the answer. */
START_TEST(test_id_echo)
{
	static const char	*ids[] = {
		"1", "0", "-42", "2147483648", "450359962737049",
		"-123456789012345", "\"abc\"", "\"\"",
		"\"a\\\"b\\\\c\"", "\"\xc3\xa9\\u00e9\"", "\"123\""
	};
	char			 body[256], want[256];
	cJSON			*req, *id;
	const char		*cause;
	int			 code;
	const char		*why;
	size_t			 i;

	for (i = 0; i < sizeof ids / sizeof ids[0]; i++) {
		snprintf(body, sizeof body,
		    "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"ping\"}",
		    ids[i]);
		req = jsonrpc_parse(body, strlen(body), &code, &why);
		ck_assert_ptr_nonnull(req);
		ck_assert_int_eq(jsonrpc_classify(req, &cause),
		    JSONRPC_REQUEST);
		id = cJSON_GetObjectItem(req, "id");

		snprintf(want, sizeof want,
		    "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}", ids[i]);
		/* cJSON prints \u00e9 as the raw character. */
		if (strstr(ids[i], "\\u00e9") != NULL)
			snprintf(want, sizeof want, "{\"jsonrpc\":\"2.0\","
			    "\"id\":\"\xc3\xa9\xc3\xa9\",\"result\":{}}");
		expect_json(jsonrpc_result(id, NULL), want);

		snprintf(want, sizeof want, "{\"jsonrpc\":\"2.0\",\"id\":%s,"
		    "\"error\":{\"code\":-32601,\"message\":\"nope\"}}",
		    ids[i]);
		if (strstr(ids[i], "\\u00e9") != NULL)
			snprintf(want, sizeof want, "{\"jsonrpc\":\"2.0\","
			    "\"id\":\"\xc3\xa9\xc3\xa9\",\"error\":{\"code\":"
			    "-32601,\"message\":\"nope\"}}");
		expect_json(jsonrpc_error(id, JSONRPC_METHOD_NOT_FOUND, "nope",
		    NULL), want);

		cJSON_Delete(req);
	}
}
END_TEST

START_TEST(test_id_dup_equal)
{
	cJSON	*one = cJSON_CreateNumber(1);
	cJSON	*one2 = cJSON_CreateNumber(1);
	cJSON	*s1 = cJSON_CreateString("1");
	cJSON	*a = cJSON_CreateString("a");
	cJSON	*a2 = cJSON_CreateString("a"), *dup;

	ck_assert_int_eq(jsonrpc_id_equal(one, one2), 1);
	ck_assert_int_eq(jsonrpc_id_equal(a, a2), 1);
	ck_assert_int_eq(jsonrpc_id_equal(one, s1), 0);
	ck_assert_int_eq(jsonrpc_id_equal(a, s1), 0);
	ck_assert_int_eq(jsonrpc_id_equal(NULL, one), 0);
	ck_assert_int_eq(jsonrpc_id_equal(one, NULL), 0);
	ck_assert_int_eq(jsonrpc_id_equal(NULL, NULL), 0);

	dup = jsonrpc_id_dup(a);
	ck_assert_ptr_ne(dup, a);
	ck_assert_int_eq(jsonrpc_id_equal(dup, a), 1);
	cJSON_Delete(dup);

	dup = jsonrpc_id_dup(NULL);
	ck_assert(cJSON_IsNull(dup));
	cJSON_Delete(dup);

	cJSON_Delete(one);
	cJSON_Delete(one2);
	cJSON_Delete(s1);
	cJSON_Delete(a);
	cJSON_Delete(a2);
}
END_TEST

/* jsonrpc_print writes what cJSON would, numbers of every kind included. */
START_TEST(test_print_numbers)
{
	static const double	 nums[] = {
		0, 7, -3, 1.5, -2.25, 1e300, -1e-300, 1e20, 123456789012345,
		9007199254740992.0, 9007199254740994.0, -9007199254740992.0,
		0.1, 3.0e15
	};
	cJSON			*msg, *arr, *copy;
	char			*want, *got;
	size_t			 i;

	msg = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(msg, "a");
	for (i = 0; i < sizeof nums / sizeof nums[0]; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateNumber(nums[i]));
	cJSON_AddNumberToObject(cJSON_AddObjectToObject(msg, "o"), "n", 42);
	cJSON_AddNumberToObject(msg, "z", -0.0);
	cJSON_AddStringToObject(msg, "s", "12");
	copy = cJSON_Duplicate(msg, 1);
	want = cJSON_PrintUnformatted(copy);
	got = jsonrpc_print(msg);
	ck_assert_str_eq(got, want);
	ck_assert_ptr_nonnull(strstr(got, "\"n\":42}"));
	free(want);
	free(got);
	cJSON_Delete(copy);
	cJSON_Delete(msg);
}
END_TEST

/*
 * jsonrpc_print is a printer of its own (cJSON's is slow): on random
 * trees (every kind of value, strings of every byte, numbers of every
 * magnitude, NaN and infinities, deep nesting) it writes exactly what
 * cJSON_PrintUnformatted() writes, and fails where it fails.
 */
static uint64_t	print_rng = 88172645463325252ULL;

static uint64_t
print_rand(uint64_t n)
{
	print_rng ^= print_rng << 13;
	print_rng ^= print_rng >> 7;
	print_rng ^= print_rng << 17;
	return (n == 0 ? print_rng : print_rng % n);
}

static double
print_random_number(void)
{
	static const double	 special[] = {
		0.0, -0.0, 1.0, -1.0, 0.1, 0.5, 1e15, 1e15 - 1, -1e15 + 1,
		999999999999999.0, 1000000000000001.0, 9007199254740993.0,
		2147483647.0, 2147483648.0, -2147483648.0, -2147483649.0,
		1e-7, 123.456, 1e300, -1e-300, 4.9e-324, 1.7976931348623157e308,
		0.30000000000000004, 100.0 / 3.0
	};
	double			 d;
	uint64_t		 bits;

	switch (print_rand(6)) {
	case 0:
		return (special[print_rand(sizeof special / sizeof special[0])]);
	case 1:
		return ((double)(int64_t)print_rand(0) /
		    (double)(1ULL << print_rand(64)));
	case 2:
		bits = print_rand(0);
		memcpy(&d, &bits, sizeof d);
		return (d);	/* NaN and infinities too */
	case 3:
		return ((double)((int64_t)print_rand(2000001) - 1000000));
	case 4:
		return ((double)(int64_t)print_rand(0) / 1e3);
	default:
		return ((double)print_rand(1ULL << print_rand(54)) *
		    (print_rand(2) ? 1 : -1));
	}
}

static char *
print_random_string(char *buf, size_t size)
{
	size_t	n = print_rand(size), i;

	for (i = 0; i < n; i++) {
		buf[i] = (char)(1 + print_rand(255));
		if (print_rand(3) == 0)
			buf[i] = "\"\\\b\f\n\r\t\x01\x1f\x7f a"[print_rand(13)];
	}
	buf[n] = '\0';
	return (buf);
}

static cJSON *
print_random_tree(int depth)
{
	cJSON	*item, *child;
	char	 key[24], str[40];
	int	 n, i;

	switch (print_rand(depth > 0 ? 9 : 6)) {
	case 0:
		return (cJSON_CreateNull());
	case 1:
		return (cJSON_CreateBool((int)print_rand(2)));
	case 2:
	case 3:
		return (cJSON_CreateNumber(print_random_number()));
	case 4:
		return (cJSON_CreateString(print_random_string(str,
		    sizeof str)));
	case 5:
		return (cJSON_CreateRaw("[1,\"raw\"]"));
	case 6:
		item = cJSON_CreateArray();
		n = (int)print_rand(5);
		for (i = 0; i < n; i++)
			cJSON_AddItemToArray(item, print_random_tree(depth - 1));
		return (item);
	default:
		item = cJSON_CreateObject();
		n = (int)print_rand(5);
		for (i = 0; i < n; i++) {
			child = print_random_tree(depth - 1);
			cJSON_AddItemToObject(item, print_random_string(key,
			    sizeof key), child);
		}
		return (item);
	}
}

START_TEST(test_print_like_cjson)
{
	cJSON	*tree, *bad;
	char	*want, *got;
	int	 i;

	for (i = 0; i < 20000; i++) {
		tree = print_random_tree(5);
		want = cJSON_PrintUnformatted(tree);
		got = jsonrpc_print(tree);
		ck_assert_ptr_nonnull(want);
		ck_assert_msg(got != NULL && strcmp(got, want) == 0,
		    "tree %d: cJSON printed %s, jsonrpc_print %s", i, want,
		    got != NULL ? got : "NULL");
		free(want);
		free(got);
		cJSON_Delete(tree);
	}

	/* Long strings, escapes across the printer's 4 KiB pieces. */
	for (i = 0; i < 20; i++) {
		char	*big;
		size_t	 n = 4000 + print_rand(9000), j;

		big = xmalloc(n + 1);
		for (j = 0; j < n; j++)
			big[j] = print_rand(50) == 0 ? "\n\"\\\x01"[
			    print_rand(4)] : (char)(32 + print_rand(200));
		big[n] = '\0';
		tree = cJSON_CreateString(big);
		want = cJSON_PrintUnformatted(tree);
		got = jsonrpc_print(tree);
		ck_assert_str_eq(got, want);
		free(want);
		free(got);
		free(big);
		cJSON_Delete(tree);
	}

	/* A string without text is "", a raw item without text fails. */
	tree = cJSON_CreateString("x");
	free(tree->valuestring);
	tree->valuestring = NULL;
	got = jsonrpc_print(tree);
	ck_assert_str_eq(got, "\"\"");
	free(got);
	cJSON_Delete(tree);
	tree = cJSON_CreateArray();
	bad = cJSON_CreateRaw("1");
	free(bad->valuestring);
	bad->valuestring = NULL;
	cJSON_AddItemToArray(tree, bad);
	ck_assert_ptr_null(cJSON_PrintUnformatted(tree));
	ck_assert_ptr_null(jsonrpc_print(tree));
	bad->type = cJSON_Invalid;
	ck_assert_ptr_null(cJSON_PrintUnformatted(tree));
	ck_assert_ptr_null(jsonrpc_print(tree));
	cJSON_Delete(tree);
}
END_TEST

/* jsonrpc_take moves a parsed message; the emptied original deletes alone. */
START_TEST(test_take)
{
	static const char	 text[] =
	    "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},7]";
	cJSON			*msg, *taken;
	char			*got;

	msg = cJSON_Parse(text);
	taken = jsonrpc_take(msg);
	ck_assert(cJSON_IsNull(msg));
	ck_assert_ptr_null(msg->child);
	cJSON_Delete(msg);
	got = jsonrpc_print(taken);
	ck_assert_str_eq(got, text);
	free(got);
	cJSON_Delete(taken);
}
END_TEST

#define NITEMS(a)	((int)(sizeof (a) / sizeof (a)[0]))

static Suite *
jsonrpc_suite(void)
{
	Suite	*s = suite_create("jsonrpc");
	TCase	*tc;

	xmalloc_init_cjson();

	tc = tcase_create("utf8");
	tcase_add_loop_test(tc, test_utf8_good, 0, NITEMS(utf8_good));
	tcase_add_loop_test(tc, test_utf8_bad, 0, NITEMS(utf8_bad));
	tcase_add_test(tc, test_utf8_length);
	suite_add_tcase(s, tc);

	tc = tcase_create("depth");
	tcase_add_test(tc, test_depth_limit);
	tcase_add_test(tc, test_depth_strings);
	suite_add_tcase(s, tc);

	tc = tcase_create("parse");
	tcase_add_loop_test(tc, test_parse_bad, 0, NITEMS(parse_bad));
	tcase_add_test(tc, test_parse_null_body);
	tcase_add_test(tc, test_parse_good);
	tcase_add_test(tc, test_parse_depth);
	suite_add_tcase(s, tc);

	tc = tcase_create("id_echo");
	tcase_add_test(tc, test_id_echo_large);
	suite_add_tcase(s, tc);

	tc = tcase_create("classify");
	tcase_add_loop_test(tc, test_classify, 0, NITEMS(classify_cases));
	tcase_add_loop_test(tc, test_classify_nul, 0, NITEMS(nul_cases));
	tcase_add_test(tc, test_nul_not_cut);
	tcase_add_test(tc, test_reply_id);
	suite_add_tcase(s, tc);

	tc = tcase_create("build");
	tcase_add_test(tc, test_result_shape);
	tcase_add_test(tc, test_error_shape);
	tcase_add_test(tc, test_notification_shape);
	tcase_add_test(tc, test_id_echo);
	tcase_add_test(tc, test_id_dup_equal);
	tcase_add_test(tc, test_print_numbers);
	tcase_add_test(tc, test_print_like_cjson);
	tcase_add_test(tc, test_take);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(jsonrpc_suite)

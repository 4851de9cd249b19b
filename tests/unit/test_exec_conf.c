/*
 * Unit tests for the tool blocks of conf.c: every directive of a block,
 * "{NAME}" words, program lookup, the checks that need the whole block or
 * the whole file, and every error with its "FILE:LINE:" prefix.
 */
#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "confparse.h"
#include "unit.h"

#include "conf.h"

/* A one-tool file: "tool t {" on line 1, then lines, then "}". */
static void
expect_tool_error(const char *lines, const char *want)
{
	char	*text;

	if (asprintf(&text, "tool t {\n%s}\n", lines) == -1)
		ck_abort();
	expect_error(text, want);
	free(text);
}

static struct conf *
parse_tool(const char *lines)
{
	struct conf	*conf;
	char		*text;

	if (asprintf(&text, "tool t {\n%s}\n", lines) == -1)
		ck_abort();
	conf = parse_ok(text);
	free(text);
	ck_assert_uint_eq(conf->ntools, 1);
	return (conf);
}

START_TEST(test_full_block)
{
	struct conf		*conf;
	const struct conf_tool	*t;

	conf = parse_ok("listen 127.0.0.1:1\n"
	    "tool count_lines {\n"
	    "    description \"Print n numbered lines\"  # a comment\n"
	    "    param n integer required \"How many lines\"\n"
	    "    exec /bin/sh -c \"i=1; while [ $i -le $0 ]; do echo line $i; "
	    "i=$((i+1)); done\" {n}\n"
	    "    timeout 10\n"
	    "    max_output 64k\n"
	    "    env LANG=C.UTF-8\n"
	    "    env \"GREETING=hello world\"\n"
	    "    env X=a=b\n"
	    "    cwd /tmp\n"
	    "    max_concurrency 3\n"
	    "    param label string \"A label\"\n"
	    "    param ratio number\n"
	    "    param loud boolean required\n"
	    "}\n"
	    "max_children 5\n");
	ck_assert_int_eq(conf->max_children, 5);
	ck_assert_uint_eq(conf->ntools, 1);
	t = &conf->tools[0];
	ck_assert_str_eq(t->name, "count_lines");
	ck_assert_int_eq(t->line, 2);
	ck_assert_str_eq(t->description, "Print n numbered lines");
	ck_assert_str_eq(t->program, "/bin/sh");
	ck_assert_uint_eq(t->argc, 4);
	ck_assert_str_eq(t->argv[0], "/bin/sh");
	ck_assert_str_eq(t->argv[1], "-c");
	ck_assert_str_eq(t->argv[2], "i=1; while [ $i -le $0 ]; do echo line "
	    "$i; i=$((i+1)); done");
	ck_assert_str_eq(t->argv[3], "{n}");
	ck_assert_ptr_null(t->argv[4]);
	ck_assert_int_eq(t->argv_param[0], -1);
	ck_assert_int_eq(t->argv_param[1], -1);
	ck_assert_int_eq(t->argv_param[2], -1);
	ck_assert_int_eq(t->argv_param[3], 0);
	ck_assert_int_eq(t->timeout, 10);
	ck_assert_int_eq(t->max_output, 64 * 1024);
	ck_assert_uint_eq(t->nenv, 3);
	ck_assert_str_eq(t->env[0], "LANG=C.UTF-8");
	ck_assert_str_eq(t->env[1], "GREETING=hello world");
	ck_assert_str_eq(t->env[2], "X=a=b");
	ck_assert_ptr_null(t->env[3]);
	ck_assert_str_eq(t->cwd, "/tmp");
	ck_assert_int_eq(t->max_concurrency, 3);

	ck_assert_uint_eq(t->nparams, 4);
	ck_assert_str_eq(t->params[0].name, "n");
	ck_assert_int_eq(t->params[0].type, CONF_PARAM_INTEGER);
	ck_assert_int_eq(t->params[0].required, 1);
	ck_assert_str_eq(t->params[0].description, "How many lines");
	ck_assert_str_eq(t->params[1].name, "label");
	ck_assert_int_eq(t->params[1].type, CONF_PARAM_STRING);
	ck_assert_int_eq(t->params[1].required, 0);
	ck_assert_str_eq(t->params[1].description, "A label");
	ck_assert_int_eq(t->params[2].type, CONF_PARAM_NUMBER);
	ck_assert_ptr_null(t->params[2].description);
	ck_assert_int_eq(t->params[3].type, CONF_PARAM_BOOLEAN);
	ck_assert_int_eq(t->params[3].required, 1);
	ck_assert_ptr_null(t->params[3].description);

	ck_assert_ptr_eq(conf_tool_find(conf, "count_lines"), t);
	ck_assert_ptr_null(conf_tool_find(conf, "count"));
	conf_free(conf);
}
END_TEST

START_TEST(test_defaults)
{
	struct conf		*conf;
	const struct conf_tool	*t;

	conf = parse_ok("listen a:1\n");
	ck_assert_uint_eq(conf->ntools, 0);
	ck_assert_ptr_null(conf->tools);
	ck_assert_int_eq(conf->max_children, 64);
	conf_free(conf);

	conf = parse_tool("exec /bin/true\n");
	t = &conf->tools[0];
	ck_assert_ptr_null(t->description);
	ck_assert_uint_eq(t->nparams, 0);
	ck_assert_uint_eq(t->argc, 1);
	ck_assert_int_eq(t->timeout, 60);
	ck_assert_int_eq(t->max_output, 1024 * 1024);
	ck_assert_int_eq(t->max_concurrency, 0);
	ck_assert_ptr_null(t->env);
	ck_assert_uint_eq(t->nenv, 0);
	ck_assert_ptr_null(t->cwd);
	conf_free(conf);
}
END_TEST

START_TEST(test_several_tools)
{
	struct conf	*conf;

	conf = parse_ok("tool a {\nexec /bin/true\n}\n"
	    "builtin_tools off\n"
	    "tool b.c-d_e {\n  exec /bin/false\n}\n"
	    "tool echo {\nexec /bin/echo\n}\n");
	ck_assert_uint_eq(conf->ntools, 3);
	ck_assert_str_eq(conf->tools[0].name, "a");
	ck_assert_str_eq(conf->tools[1].name, "b.c-d_e");
	ck_assert_int_eq(conf->tools[1].line, 5);
	ck_assert_str_eq(conf->tools[2].name, "echo");
	ck_assert_str_eq(conf->tools[2].program, "/bin/echo");
	conf_free(conf);

	expect_error("tool a {\nexec /bin/true\n}\n\ntool a {\nexec /bin/true\n"
	    "}\n", "t.conf:5: duplicate tool a (first declared on line 1)");
	/* Built-in names clash only while builtin_tools is on, wherever it
	   is set; the tool's line is named. */
	expect_error("tool x {\nexec /bin/true\n}\ntool stream {\nexec "
	    "/bin/true\n}\nbuiltin_tools on\n", "t.conf:4: tool stream: the "
	    "name is taken by a built-in tool (builtin_tools is on)");
	expect_error("builtin_tools on\ntool notify {\nexec /bin/true\n}\n",
	    "t.conf:2: tool notify: the name is taken by a built-in tool "
	    "(builtin_tools is on)");
}
END_TEST

START_TEST(test_names)
{
	char	name[200], text[400], want[400];

	expect_error("tool a/b {\nexec /bin/true\n}\n", "t.conf:1: tool: "
	    "invalid name \"a/b\" (1 to 128 letters, digits, \"_\", \"-\" or "
	    "\".\")");
	expect_error("tool \"\" {\nexec /bin/true\n}\n", "t.conf:1: tool: "
	    "invalid name \"\" (1 to 128 letters, digits, \"_\", \"-\" or "
	    "\".\")");
	memset(name, 'n', 128);
	name[128] = '\0';
	snprintf(text, sizeof text, "tool %s {\nexec /bin/true\n}\n", name);
	conf_free(parse_ok(text));
	strcat(name, "n");
	snprintf(text, sizeof text, "tool %s {\nexec /bin/true\n}\n", name);
	snprintf(want, sizeof want, "t.conf:1: tool: invalid name \"%s\" (1 "
	    "to 128 letters, digits, \"_\", \"-\" or \".\")", name);
	expect_error(text, want);
}
END_TEST

START_TEST(test_params)
{
	expect_tool_error("param\nexec /bin/true\n",
	    "t.conf:2: param: missing value");
	expect_tool_error("param n\nexec /bin/true\n", "t.conf:2: param: "
	    "expected \"param NAME string|integer|number|boolean [required] "
	    "[STRING]\"");
	expect_tool_error("param n int\nexec /bin/true\n", "t.conf:2: param: "
	    "type of n: expected string|integer|number|boolean, not \"int\"");
	expect_tool_error("param 1n string\nexec /bin/true\n", "t.conf:2: "
	    "param: invalid name \"1n\" (letters, digits, \"_\" and \"-\", "
	    "starting with a letter or \"_\", at most 64)");
	expect_tool_error("param a.b string\nexec /bin/true\n", "t.conf:2: "
	    "param: invalid name \"a.b\" (letters, digits, \"_\" and \"-\", "
	    "starting with a letter or \"_\", at most 64)");
	expect_tool_error("exec /bin/true\nparam n string\nparam n integer\n",
	    "t.conf:4: param: n is declared twice");
	expect_tool_error("param n string required \"d\" x\nexec /bin/true\n",
	    "t.conf:2: param: unexpected extra value \"x\"");
	expect_tool_error("param n string \"d\" required\nexec /bin/true\n",
	    "t.conf:2: param: unexpected extra value \"required\"");
}
END_TEST

START_TEST(test_exec_words)
{
	struct conf		*conf;
	const struct conf_tool	*t;

	/* {NAME} may name a param declared after the exec line. */
	conf = parse_tool("exec /bin/echo {} \"{a b}\" {-x} x{a} {a}x {a} "
	    "\"{b_2}\" {{a}}\nparam a string\nparam b_2 integer\n");
	t = &conf->tools[0];
	ck_assert_uint_eq(t->argc, 9);
	ck_assert_int_eq(t->argv_param[1], -1);	/* {} */
	ck_assert_int_eq(t->argv_param[2], -1);	/* {a b} */
	ck_assert_str_eq(t->argv[2], "{a b}");
	ck_assert_int_eq(t->argv_param[3], -1);	/* {-x} */
	ck_assert_int_eq(t->argv_param[4], -1);	/* x{a} */
	ck_assert_int_eq(t->argv_param[5], -1);	/* {a}x */
	ck_assert_int_eq(t->argv_param[6], 0);
	ck_assert_int_eq(t->argv_param[7], 1);
	ck_assert_int_eq(t->argv_param[8], -1);	/* {{a}} */
	conf_free(conf);

	expect_tool_error("param a string\nexec /bin/echo {a} {b}\n",
	    "t.conf:3: exec: {b} is not a param of tool t");
	expect_tool_error("param a string\nexec {a}\n",
	    "t.conf:3: exec: PROGRAM cannot be an argument ({a})");
	expect_tool_error("exec\n", "t.conf:2: exec: missing value");
	expect_tool_error("exec /bin/true\nexec /bin/true\n",
	    "t.conf:3: duplicate exec (first set on line 2)");
	expect_tool_error("description x\n",
	    "t.conf:1: tool t: missing \"exec PROGRAM [ARG...]\"");
	expect_tool_error("exec /bin/true {\nx\n}\n",
	    "t.conf:2: exec does not take a block");
}
END_TEST

START_TEST(test_programs)
{
	struct conf	*conf;
	char		 dir[] = "/tmp/test_exec_conf.XXXXXX", path[128];
	char		 text[512], want[512];
	FILE		*f;

	expect_tool_error("exec /nonexistent/prog\n", "t.conf:2: exec: "
	    "program \"/nonexistent/prog\": No such file or directory");
	expect_tool_error("exec /tmp\n",
	    "t.conf:2: exec: program \"/tmp\" is not a regular file");
	expect_tool_error("exec ./prog\n", "t.conf:2: exec: program must be "
	    "an absolute path or a name found in PATH, not \"./prog\"");
	expect_tool_error("exec bin/prog\n", "t.conf:2: exec: program must be "
	    "an absolute path or a name found in PATH, not \"bin/prog\"");

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/prog", dir);
	f = fopen(path, "w");
	fputs("#!/bin/sh\necho hi\n", f);
	fclose(f);
	chmod(path, 0644);
	snprintf(text, sizeof text, "tool t {\nexec %s\n}\n", path);
	snprintf(want, sizeof want, "t.conf:2: exec: program \"%s\" is not "
	    "executable", path);
	expect_error(text, want);

	/* Names are looked up in PATH (absolute directories only). */
	setenv("PATH", ".:relative:/nonexistent::", 1);
	snprintf(want, sizeof want, "t.conf:2: exec: program \"prog\" not "
	    "found in PATH (.:relative:/nonexistent::)");
	expect_tool_error("exec prog\n", want);
	chmod(path, 0755);
	snprintf(text, sizeof text, "/nonexistent:%s:/bin", dir);
	setenv("PATH", text, 1);
	conf = parse_tool("exec prog -x\n");
	ck_assert_str_eq(conf->tools[0].program, path);
	ck_assert_str_eq(conf->tools[0].argv[0], "prog");
	conf_free(conf);
	/* Without PATH, the usual directories. */
	unsetenv("PATH");
	conf = parse_tool("exec sh\n");
	ck_assert(strcmp(conf->tools[0].program, "/usr/bin/sh") == 0 ||
	    strcmp(conf->tools[0].program, "/bin/sh") == 0);
	conf_free(conf);
	setenv("PATH", "/usr/bin:/bin", 1);

	unlink(path);
	rmdir(dir);
}
END_TEST

START_TEST(test_values)
{
	expect_tool_error("exec /bin/true\ntimeout 0\n",
	    "t.conf:3: timeout: 0 out of range (1 to 86400)");
	expect_tool_error("exec /bin/true\ntimeout 2d\n",
	    "t.conf:3: timeout: 2d out of range (1 to 86400)");
	expect_tool_error("exec /bin/true\nmax_output 100\n",
	    "t.conf:3: max_output: 100 out of range (1k to 16m)");
	expect_tool_error("exec /bin/true\nmax_concurrency 0\n",
	    "t.conf:3: max_concurrency: 0 out of range (1 to 65536)");
	expect_tool_error("exec /bin/true\ncwd tmp\n",
	    "t.conf:3: cwd: \"tmp\" is not an absolute path");
	expect_tool_error("exec /bin/true\ncwd /nonexistent\n",
	    "t.conf:3: cwd: \"/nonexistent\": No such file or directory");
	expect_tool_error("exec /bin/true\ncwd /bin/sh\n",
	    "t.conf:3: cwd: \"/bin/sh\" is not a directory");
	expect_tool_error("exec /bin/true\ncwd /\ncwd /tmp\n",
	    "t.conf:4: duplicate cwd (first set on line 3)");
	expect_tool_error("exec /bin/true\ndescription a b\n",
	    "t.conf:3: description: unexpected extra value \"b\"");
	expect_tool_error("exec /bin/true\nenv A\n",
	    "t.conf:3: env: expected NAME=VALUE, not \"A\"");
	expect_tool_error("exec /bin/true\nenv =x\n", "t.conf:3: env: invalid "
	    "variable name \"\" (letters, digits and \"_\", not starting with "
	    "a digit)");
	expect_tool_error("exec /bin/true\nenv A-B=x\n", "t.conf:3: env: "
	    "invalid variable name \"A-B\" (letters, digits and \"_\", not "
	    "starting with a digit)");
	expect_tool_error("exec /bin/true\nenv A=1\nenv A=2\n",
	    "t.conf:4: env: A is set twice");
	expect_tool_error("exec /bin/true\nenv A=1 B=2\n",
	    "t.conf:3: env: unexpected extra value \"B=2\"");
	expect_tool_error("exec /bin/true\nlisten a:1\n",
	    "t.conf:3: unknown directive \"listen\"");
	expect_error("max_children 0\n",
	    "t.conf:1: max_children: 0 out of range (1 to 4096)");
	/* Tool directives are not global ones. */
	expect_error("timeout 5\n", "t.conf:1: unknown directive \"timeout\"");
}
END_TEST

static char *
generate(void (*fn)(FILE *))
{
	FILE	*f;
	char	*buf = NULL;
	size_t	 len;

	f = open_memstream(&buf, &len);
	fn(f);
	fclose(f);
	return (buf);
}

START_TEST(test_documented)
{
	static const char *in_block[] = {
		"description STRING",
		("param NAME string|integer|number|boolean "
		"[required] [STRING]"), "exec PROGRAM [ARG...]",
		"timeout SECONDS", "max_output BYTES", "env NAME=VALUE",
		"cwd DIR", "max_concurrency N"
	};
	char	*ex, *help, key[128];
	size_t	 i;

	ex = generate(conf_print_example);
	help = generate(conf_print_help);
	for (i = 0; i < sizeof in_block / sizeof in_block[0]; i++) {
		snprintf(key, sizeof key, "\n#   %s\n", in_block[i]);
		ck_assert_msg(strstr(ex, key) != NULL, "example lacks %s",
		    in_block[i]);
		snprintf(key, sizeof key, "\n        %s\n", in_block[i]);
		ck_assert_msg(strstr(help, key) != NULL, "help lacks %s",
		    in_block[i]);
	}
	ck_assert_ptr_nonnull(strstr(ex, "\n# tool journal {\n"));
	ck_assert_ptr_nonnull(strstr(ex, "\ntool date {\n"));
	ck_assert_ptr_nonnull(strstr(ex, "tool busy"));
	ck_assert_ptr_nonnull(strstr(ex, "\n#max_children 64\n"));
	free(ex);
	free(help);
}
END_TEST

/* The commented-out examples are valid once uncommented (on a system that
   has their programs). */
START_TEST(test_examples_parse)
{
	struct conf	*conf;
	char		*ex, *p, *end, *out, *o, *cause = NULL;
	size_t		 len;
	int		 in = 0;

	ex = generate(conf_print_example);
	out = o = calloc(1, strlen(ex) + 1);
	for (p = ex; *p != '\0'; p = end + 1) {
		end = strchr(p, '\n');
		len = end + 1 - p;
		if (!in && strncmp(p, "# tool ", 7) == 0 &&
		    memmem(p, len, "...", 3) == NULL)
			in = 1;
		if (in) {		/* "# " and a line of a block */
			p += 2;
			len -= 2;
			if (*p == '#')
				continue;
			if (strncmp(p, "}\n", 2) == 0)
				in = 0;
		} else if (*p == '#')
			continue;
		memcpy(o, p, len);
		o += len;
	}
	/* Programs that may be missing here are swapped for /bin/true. */
	while ((p = strstr(out, "/bin/journalctl")) != NULL)
		memcpy(p, "/bin/true      ", 15);
	while ((p = strstr(out, "/bin/ping")) != NULL)
		memcpy(p, "/bin/true", 9);
	conf = conf_parse_string(out, "example", &cause);
	if (conf == NULL)
		fprintf(stderr, "%s", out);
	ck_assert_msg(conf != NULL, "uncommented tool examples: %s", cause);
	ck_assert_uint_eq(conf->ntools, 5);
	ck_assert_str_eq(conf->tools[0].name, "disk_usage");
	ck_assert_str_eq(conf->tools[1].name, "journal");
	ck_assert_int_eq(conf->tools[1].argv_param[3], 0);
	ck_assert_int_eq(conf->tools[1].argv_param[5], 1);
	ck_assert_str_eq(conf->tools[3].name, "find_files");
	ck_assert_str_eq(conf->tools[3].argv[2], "find /srv -type f -name "
	    "\"$1\" | head -n 100");
	ck_assert_str_eq(conf->tools[4].name, "date");
	conf_free(conf);
	free(out);
	free(ex);
}
END_TEST

static Suite *
exec_conf_suite(void)
{
	Suite	*s = suite_create("exec_conf");
	TCase	*tc = tcase_create("exec_conf");

	setenv("PATH", "/usr/bin:/bin", 1);
	tcase_add_test(tc, test_full_block);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_several_tools);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_params);
	tcase_add_test(tc, test_exec_words);
	tcase_add_test(tc, test_programs);
	tcase_add_test(tc, test_values);
	tcase_add_test(tc, test_documented);
	tcase_add_test(tc, test_examples_parse);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(exec_conf_suite)

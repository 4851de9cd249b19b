/*
 * Tool blocks: tool NAME { ... }, a program served as an MCP tool. The
 * block's lines go through the engine (conf_apply) with the table below;
 * then come the checks that need the whole block ("{NAME}" words of exec
 * against the params), and, once the whole file is read, the names
 * against the built-in tools.
 */
#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "conf_int.h"
#include "xmalloc.h"

#define CONF_PARAM_NAME_MAX	64

/* Tool names the built-in provider serves (docs/protocol.md). */
static const char *const conf_tool_builtin[] = {
	"echo", "stream", "notify"
};

static conf_parse_cb	conf_tool_env;
static conf_line_cb	conf_tool_param;
static conf_line_cb	conf_tool_exec;

static const struct conf_enum conf_tool_task_values[] = {
	{ "forbidden", CONF_TASK_FORBIDDEN },
	{ "optional", CONF_TASK_OPTIONAL },
	{ "required", CONF_TASK_REQUIRED },
	{ NULL, 0 }
};

/* The directives inside "tool NAME { }"; offsets into struct conf_tool. */
#define CONF_TOOL_OFF(f)	offsetof(struct conf_tool, f)
static const struct conf_entry conf_tool_entries[] = {
	{ .name = "description", .type = CONF_STRING,
	  .offset = CONF_TOOL_OFF(description), .args = "STRING",
	  .help = "What the tool does, in words for the model: the tool's "
	  "description in tools/list." },
	{ .name = "param", .type = CONF_LINE, .line = conf_tool_param,
	  .flags = CONF_REPEAT,
	  .args = "NAME string|integer|number|boolean [required] [STRING]",
	  .help = "One argument of the tool: its name (letters, digits, "
	  "\"_\" and \"-\"), its JSON type, whether calls must give it, "
	  "and its description. The params make the tool's inputSchema. A "
	  "call whose arguments have another type, lack a required one or "
	  "name one not declared gets an isError result and runs nothing." },
	{ .name = "exec", .type = CONF_LINE, .line = conf_tool_exec,
	  .args = "PROGRAM [ARG...]",
	  .help = "The program and its arguments, run directly: no shell "
	  "is involved unless PROGRAM is one. PROGRAM is an absolute path, "
	  "or a name looked up in mcpd's PATH when the file is read; it "
	  "must exist and be executable. An ARG that is exactly {NAME} is "
	  "replaced by the value of argument NAME as one word, never split "
	  "or expanded: strings as given, integers in digits, numbers in "
	  "JSON notation, booleans as true or false, and an optional "
	  "argument the call leaves out as an empty word. With a shell, "
	  "pass values as its positional parameters (sh -c \"... "
	  "\\\"$1\\\" ...\" sh {NAME}), never inside the script. "
	  "Required." },
	{ .name = "timeout", .type = CONF_SECONDS,
	  .offset = CONF_TOOL_OFF(timeout), .min = 1, .max = 86400,
	  .def = "60",
	  .help = "How long one call may run. Then, as when the call is "
	  "cancelled, its session deleted or mcpd shut down, the program's "
	  "process group gets SIGTERM and SIGKILL 2 seconds later; a timed "
	  "out call ends with an isError result. Shutdown waits until every "
	  "program has been reaped (3 seconds at most)." },
	{ .name = "max_output", .type = CONF_SIZE,
	  .offset = CONF_TOOL_OFF(max_output), .min = CONF_KIB,
	  .max = 16 * CONF_MIB, .def = "1m",
	  .help = "Bytes of standard output kept for the result; beyond "
	  "them the result is cut and says so. Progress notifications "
	  "carry every line regardless." },
	{ .name = "env", .type = CONF_CUSTOM, .parse = conf_tool_env,
	  .flags = CONF_REPEAT, .args = "NAME=VALUE",
	  .help = "One variable of the program's environment, which holds "
	  "nothing else: mcpd's own environment is not passed on (set PATH "
	  "here if the program needs one). Quote the whole word when VALUE "
	  "has blanks: env \"GREETING=hello world\"." },
	{ .name = "cwd", .type = CONF_STRING, .offset = CONF_TOOL_OFF(cwd),
	  .check = conf_check_dir, .args = "DIR",
	  .def_text = "mcpd's working directory",
	  .help = "Working directory of the program, an absolute path to a "
	  "directory that exists when the file is read." },
	{ .name = "max_concurrency", .type = CONF_INTEGER,
	  .offset = CONF_TOOL_OFF(max_concurrency), .min = 1, .max = 65536,
	  .def_text = "no limit of its own, only max_children",
	  .help = "Calls of this tool running at once; a call beyond this "
	  "gets the isError result \"tool busy\"." },
	{ .name = "scope", .type = CONF_STRING, .offset = CONF_TOOL_OFF(scope),
	  .check = conf_check_scope, .args = "SCOPE",
	  .def_text = "none: every token that passes auth may call it",
	  .help = "With an auth block, the OAuth scope a token needs to "
	  "call this tool: tools/list shows the tool only to tokens that "
	  "have it, and a tools/call without it is answered 403 with "
	  "error=\"insufficient_scope\". Without an auth block it has no "
	  "effect." },
	{ .name = "task", .type = CONF_ENUM,
	  .offset = CONF_TOOL_OFF(task_support),
	  .values = conf_tool_task_values, .def = "forbidden",
	  .help = "Whether a call may run as a task (the "
	  "io.modelcontextprotocol/tasks extension; tools/list says it as "
	  "execution.taskSupport): optional runs it as a task when the "
	  "client's request declares the extension, and as a plain call "
	  "otherwise; required refuses a call whose request does not "
	  "declare it (-32021); forbidden never makes it a task. A task's "
	  "call answers at once with the task, its program runs on, and "
	  "its result is kept for task_ttl, readable from any instance "
	  "with the redis event log." },
};

const struct conf_table conf_tool_table = {
	conf_tool_entries, CONF_NITEMS(conf_tool_entries)
};

/* Commented out in the example file: "# " goes before each line. */
const char conf_tool_examples[] =
"Examples: remove the \"# \" before the lines of a block to use it.\n"
"\n"
"tool disk_usage {\n"
"    description \"Size, use and free space of the mounted file systems\"\n"
"    exec /bin/df --human-readable --print-type --exclude-type=tmpfs\n"
"    timeout 10\n"
"}\n"
"\n"
"tool journal {\n"
"    description \"The latest lines of a systemd unit's journal\"\n"
"    param unit string required \"Unit name, such as nginx.service\"\n"
"    param lines integer required \"How many lines\"\n"
"    exec /bin/journalctl --no-pager --unit {unit} --lines {lines}\n"
"    timeout 20\n"
"    max_output 256k\n"
"    max_concurrency 4\n"
"}\n"
"\n"
"# Each reply line reaches the client as it comes, as a progress\n"
"# notification, when the call has a progressToken.\n"
"tool ping {\n"
"    description \"Send 4 ICMP echo requests to a host and show the replies\"\n"
"    param host string required \"Host name or IP address\"\n"
"    exec /bin/ping -c 4 -W 2 -- {host}\n"
"    timeout 15\n"
"}\n"
"\n"
"# A shell gets values as positional parameters, never inside its script.\n"
"tool find_files {\n"
"    description \"Files under /srv whose name matches a pattern, "
    "at most 100\"\n"
"    param pattern string required \"Shell-style pattern, such as *.log\"\n"
"    exec /bin/sh -c \"find /srv -type f -name \\\"$1\\\" | "
    "head -n 100\" sh {pattern}\n"
"    env PATH=/usr/bin:/bin\n"
"    timeout 30\n"
"}\n";

/* Active in the example file: harmless, and every Debian system has it. */
const char conf_tool_example_active[] =
"tool date {\n"
"    description \"The server's current date and time in UTC (ISO 8601)\"\n"
"    exec /bin/date -u +%Y-%m-%dT%H:%M:%SZ\n"
"    timeout 5\n"
"}\n";

static int
conf_tool_param_name_ok(const char *s)
{
	return (conf_name_ok(s, "_-", CONF_PARAM_NAME_MAX) &&
	    !isdigit((u_char)*s) && *s != '-');
}

/*
 * The index of the param a word "{NAME}" refers to; -1 if NAME is not a
 * param of the tool, -2 if the word is not of that form.
 */
static int
conf_tool_param_ref(const struct conf_tool *tool, const char *word)
{
	size_t	len = strlen(word), i;
	char	name[CONF_PARAM_NAME_MAX + 1];

	if (len < 3 || len - 2 > CONF_PARAM_NAME_MAX || word[0] != '{' ||
	    word[len - 1] != '}')
		return (-2);
	memcpy(name, word + 1, len - 2);
	name[len - 2] = '\0';
	if (!conf_tool_param_name_ok(name))
		return (-2);
	for (i = 0; i < tool->nparams; i++) {
		if (strcmp(tool->params[i].name, name) == 0)
			return ((int)i);
	}
	return (-1);
}

static void
conf_tool_clear(struct conf_tool *tool)
{
	size_t	i;

	free(tool->name);
	free(tool->description);
	for (i = 0; i < tool->nparams; i++) {
		free(tool->params[i].name);
		free(tool->params[i].description);
	}
	free(tool->params);
	free(tool->program);
	xfree_words(tool->argv);
	free(tool->argv_param);
	xfree_words(tool->env);
	free(tool->cwd);
	free(tool->scope);
	memset(tool, 0, sizeof *tool);
}

/* env NAME=VALUE; each NAME once per tool. */
static int
conf_tool_env(void *base, const struct conf_entry *ce, const char *s,
    char **why)
{
	struct conf_tool	*tool = base;

	return (conf_env_add(&tool->env, &tool->nenv, s, why));
}

/* param NAME TYPE [required] [STRING] */
static int
conf_tool_param(void *base, const struct conf_entry *ce, int argc,
    char **argv, char **why)
{
	struct conf_tool	*tool = base;
	struct conf_param	 param;
	char			*names;
	int			 type, i = 2;
	size_t			 j;

	if (argc < 2) {
		xasprintf(why, "expected \"param %s\"", ce->args);
		return (-1);
	}
	if (!conf_tool_param_name_ok(argv[0])) {
		xasprintf(why, "invalid name \"%s\" (letters, digits, \"_\" "
		    "and \"-\", starting with a letter or \"_\", at most %d)",
		    argv[0], CONF_PARAM_NAME_MAX);
		return (-1);
	}
	for (j = 0; j < tool->nparams; j++) {
		if (strcmp(tool->params[j].name, argv[0]) == 0) {
			xasprintf(why, "%s is declared twice", argv[0]);
			return (-1);
		}
	}
	if (conf_parse_enum(conf_param_types, argv[1], &type, why) != 0) {
		free(*why);
		names = conf_enum_names(conf_param_types);
		xasprintf(why, "type of %s: expected %s, not \"%s\"", argv[0],
		    names, argv[1]);
		free(names);
		return (-1);
	}
	memset(&param, 0, sizeof param);
	param.type = type;
	if (i < argc && strcmp(argv[i], "required") == 0) {
		param.required = 1;
		i++;
	}
	if (i < argc)
		param.description = xstrdup(argv[i++]);
	if (i < argc) {
		xasprintf(why, "unexpected extra value \"%s\"", argv[i]);
		free(param.description);
		return (-1);
	}
	param.name = xstrdup(argv[0]);
	tool->params = xrealloc(tool->params,
	    (tool->nparams + 1) * sizeof *tool->params);
	tool->params[tool->nparams++] = param;
	return (0);
}

/* exec PROGRAM [ARG...]; "{NAME}" words are resolved after the block. */
static int
conf_tool_exec(void *base, const struct conf_entry *ce, int argc,
    char **argv, char **why)
{
	struct conf_tool	*tool = base;
	char			*path;
	int			 i;

	if (conf_tool_param_ref(tool, argv[0]) != -2) {
		xasprintf(why, "PROGRAM cannot be an argument (%s)", argv[0]);
		return (-1);
	}
	if (conf_find_program(argv[0], &path, why) != 0)
		return (-1);
	tool->program = path;
	tool->argc = argc;
	tool->argv = xcalloc(argc + 1, sizeof *tool->argv);
	tool->argv_param = xcalloc(argc, sizeof *tool->argv_param);
	for (i = 0; i < argc; i++) {
		tool->argv[i] = xstrdup(argv[i]);
		tool->argv_param[i] = -1;
	}
	return (0);
}

/* The line tool NAME was declared on, 0 if it was not (yet). */
static int
conf_tool_line(const struct conf *conf, const char *name)
{
	size_t	i;

	for (i = 0; i < conf->ntools; i++) {
		if (strcmp(conf->tools[i].name, name) == 0)
			return (conf->tools[i].line);
	}
	return (0);
}

/*
 * tool NAME { ... }: the block's lines go through conf_apply with the tool
 * table, then come the checks that need the whole block.
 */
int
conf_tool_block(void *base, const struct conf_entry *ce,
    const struct conf_directive *cd, const char *file, char **cause)
{
	struct conf		*conf = base;
	struct conf_tool	 tool;
	struct conf_scope	 cs;
	int			 seen[CONF_NITEMS(conf_tool_entries)];
	int			 line, ref;
	size_t			 i;

	if (cd->argc != 2) {
		xasprintf(cause, "%s:%d: tool: expected \"tool %s\"", file,
		    cd->line, ce->args);
		return (-1);
	}
	if (!conf_name_ok(cd->argv[1], "_-.", CONF_TOOL_NAME_MAX)) {
		xasprintf(cause, "%s:%d: tool: invalid name \"%s\" (1 to %d "
		    "letters, digits, \"_\", \"-\" or \".\")", file, cd->line,
		    cd->argv[1], CONF_TOOL_NAME_MAX);
		return (-1);
	}
	if ((line = conf_tool_line(conf, cd->argv[1])) != 0) {
		xasprintf(cause, "%s:%d: duplicate tool %s (first declared on "
		    "line %d)", file, cd->line, cd->argv[1], line);
		return (-1);
	}

	memset(&tool, 0, sizeof tool);
	tool.name = xstrdup(cd->argv[1]);
	tool.line = cd->line;
	conf_set_defaults(&tool, conf_tool_entries,
	    CONF_NITEMS(conf_tool_entries));
	memset(seen, 0, sizeof seen);
	cs.entries = conf_tool_entries;
	cs.nentries = CONF_NITEMS(conf_tool_entries);
	cs.base = &tool;
	cs.seen = seen;
	for (i = 0; i < cd->nchildren; i++) {
		if (conf_apply(&cs, &cd->children[i], file, cause) != 0)
			goto fail;
	}

	if ((line = conf_scope_line(&cs, "exec")) == 0) {
		xasprintf(cause, "%s:%d: tool %s: missing \"exec PROGRAM "
		    "[ARG...]\"", file, cd->line, tool.name);
		goto fail;
	}
	for (i = 1; i < tool.argc; i++) {
		if ((ref = conf_tool_param_ref(&tool, tool.argv[i])) == -1) {
			xasprintf(cause, "%s:%d: exec: %s is not a param of "
			    "tool %s", file, line, tool.argv[i], tool.name);
			goto fail;
		}
		tool.argv_param[i] = ref < 0 ? -1 : ref;
	}

	conf->tools = xrealloc(conf->tools,
	    (conf->ntools + 1) * sizeof *conf->tools);
	conf->tools[conf->ntools++] = tool;
	return (0);

fail:
	conf_tool_clear(&tool);
	return (-1);
}

/* Tool names against the built-in ones, once builtin_tools is known. */
int
conf_tool_done(void *base, const char *file, char **cause)
{
	struct conf	*conf = base;
	size_t		 i, j;

	for (i = 0; conf->builtin_tools && i < conf->ntools; i++) {
		for (j = 0; j < CONF_NITEMS(conf_tool_builtin); j++) {
			if (strcmp(conf->tools[i].name,
			    conf_tool_builtin[j]) != 0)
				continue;
			xasprintf(cause, "%s:%d: tool %s: the name is taken by "
			    "a built-in tool (builtin_tools is on)", file,
			    conf->tools[i].line, conf->tools[i].name);
			return (-1);
		}
	}
	return (0);
}

/* What the tool blocks put into base: conf_free's. */
void
conf_tool_free(void *base)
{
	struct conf	*conf = base;
	size_t		 i;

	for (i = 0; i < conf->ntools; i++)
		conf_tool_clear(&conf->tools[i]);
	free(conf->tools);
}

const struct conf_tool *
conf_tool_find(const struct conf *conf, const char *name)
{
	size_t	i;

	for (i = 0; i < conf->ntools; i++) {
		if (strcmp(conf->tools[i].name, name) == 0)
			return (&conf->tools[i]);
	}
	return (NULL);
}

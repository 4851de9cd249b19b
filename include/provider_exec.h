/*
 * Exec tools: the conf's "tool NAME { }" blocks served as MCP tools, each
 * call running the tool's program through exec.c. The provider itself is
 * provider_exec in provider.h; these are the pure parts, for tests.
 */
#ifndef MCPD_PROVIDER_EXEC_H
#define MCPD_PROVIDER_EXEC_H

#include <stddef.h>

#include <cjson/cJSON.h>

struct conf_tool;

/* The tool's inputSchema, from its params. */
cJSON	*provider_exec_schema(const struct conf_tool *);
/*
 * The argument vector for a call's arguments (an object, or NULL for
 * none): NULL-terminated, or NULL with *cause set when the arguments do not
 * fit the params. Free it with xfree_words.
 */
char	**provider_exec_argv(const struct conf_tool *, const cJSON *, char **);
/* Program output as a JSON-safe string: bad UTF-8 and NUL become U+FFFD. */
char	*provider_exec_text(const char *, size_t);

#endif

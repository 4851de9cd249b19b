/*
 * OpenAPI 3.0 and 3.1 descriptions made MCP tools (src/openapi/): a
 * document, JSON or YAML, read into a catalog of operations, each with
 * the tool clients see (name, description, inputSchema, outputSchema)
 * and what a call needs to make its HTTP request. Nothing here does I/O
 * or keeps state between calls: bytes in, a catalog out; a call's
 * arguments in, a request out. docs/openapi.md says what is made of what.
 *
 * A document is refused as a whole (openapi_spec_parse returns NULL) when
 * it cannot be read or is hostile: larger than max_spec, not UTF-8, not
 * OpenAPI 3.0 or 3.1, more operations than max_operations, YAML aliases
 * expanding past OPENAPI_MAX_NODES, nesting past OPENAPI_MAX_NESTING, a
 * chain of more than OPENAPI_MAX_REF_HOPS $refs or a cycle of them, an
 * enum of more than OPENAPI_MAX_ENUM values, a tool's schema past
 * OPENAPI_TOOL_NODES nodes once its $refs are expanded, or all of them
 * past OPENAPI_CATALOG_NODES. An operation whose tool cannot be made
 * (a schema deeper than max_depth, an external $ref, a body that is not
 * JSON, a method mcpd does not send, ...) is skipped: the skipped hook
 * hears it once, with the reason.
 */
#ifndef MCPD_OPENAPI_H
#define MCPD_OPENAPI_H

#include <stddef.h>

#include <cjson/cJSON.h>

#define OPENAPI_MAX_NESTING	256	/* of the document */
#define OPENAPI_MAX_NODES	1000000	/* of the document, aliases expanded */
#define OPENAPI_MAX_ALIASES	100000	/* YAML aliases */
#define OPENAPI_MAX_REF_HOPS	64	/* $refs followed to reach a node */
#define OPENAPI_MAX_ENUM	1000	/* values of one enum */
#define OPENAPI_TOOL_NODES	20000	/* schema objects of one tool */
#define OPENAPI_CATALOG_NODES	1000000	/* of all the tools */
#define OPENAPI_NAME_MAX	128	/* a tool's name, prefix included */

struct openapi_spec;
struct openapi_op;

struct openapi_options {
	const char	*prefix;	/* before every tool's name ("") */
	/* fnmatch(3) patterns: of name, operationId or "METHOD:/path" */
	char *const	*allow;		/* NULL: every operation */
	size_t		 nallow;
	char *const	*deny;
	size_t		 ndeny;
	size_t		 max_spec;	/* bytes */
	size_t		 max_operations;
	int		 max_depth;	/* of a schema, as built */
	/* An operation left out: "METHOD /path" (operationId), why. */
	void		(*skipped)(const char *, const char *, void *);
	void		*arg;
};

/*
 * YAML (1.2 core schema; one document) or JSON as cJSON, or NULL with
 * *cause. Plain YAML scalars are null, booleans, integers and floats as
 * the core schema has them (yes, on and 0x1F-like YAML 1.1 words stay
 * strings but for 0x and 0o numbers); keys are strings; merge keys (<<)
 * are taken; tags other than the core ones are refused.
 */
cJSON		*openapi_yaml_parse(const char *, size_t, char **);
/* The document in buf, JSON or YAML (by its first character), bounded. */
cJSON		*openapi_spec_doc(const char *, size_t, size_t, char **);

struct openapi_spec *openapi_spec_parse(const char *, size_t,
		     const struct openapi_options *, char **);
void		 openapi_spec_free(struct openapi_spec *);
/* "3.0.3", info.title (or ""), the first server's URL (or NULL). */
const char	*openapi_spec_version(const struct openapi_spec *);
const char	*openapi_spec_title(const struct openapi_spec *);
const char	*openapi_spec_server(const struct openapi_spec *);
size_t		 openapi_spec_count(const struct openapi_spec *);
size_t		 openapi_spec_skipped(const struct openapi_spec *);
const struct openapi_op *openapi_spec_op(const struct openapi_spec *,
		     size_t);
const struct openapi_op *openapi_spec_find(const struct openapi_spec *,
		     const char *);

const char	*openapi_spec_op_name(const struct openapi_op *);
const char	*openapi_spec_op_method(const struct openapi_op *);
const char	*openapi_spec_op_path(const struct openapi_op *);
/* The tool: name, title, description, inputSchema, outputSchema, ... */
const cJSON	*openapi_spec_op_tool(const struct openapi_op *);
/*
 * Whether a JSON response goes into structuredContent as {"result": it}
 * (its schema is not an object's, so outputSchema wraps it).
 */
int		 openapi_spec_op_wraps(const struct openapi_op *);
int		 openapi_spec_op_has_output(const struct openapi_op *);

/* One HTTP request of a call, as openapi_request_build makes it. */
struct openapi_header {
	char	*name;
	char	*value;
};

struct openapi_request {
	const char		*method;
	char			*url;
	struct openapi_header	*headers;
	size_t			 nheaders;
	char			*body;		/* NULL: none */
	size_t			 bodylen;
};

/*
 * The request a call with these arguments makes, against base (the API's
 * URL, no trailing "/"); -1 with *cause (for the caller's isError) when
 * the arguments cannot make one: one missing, unknown, or a value that
 * cannot go where it goes (a control character in a header).
 */
int		 openapi_request_build(const struct openapi_op *,
		     const char *, const cJSON *, struct openapi_request *,
		     char **);
void		 openapi_request_clear(struct openapi_request *);

#endif

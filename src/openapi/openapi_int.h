/*
 * What the files of src/openapi/ share (only they include it):
 *
 *	openapi_yaml.c		YAML to cJSON
 *	openapi_schema.c	$refs followed, a Schema Object made JSON
 *				Schema 2020-12 (a tool's inputSchema or
 *				outputSchema)
 *	openapi_spec.c		the document read into operations, each with
 *				its tool and its parameters' places
 *	openapi_request.c	a call's arguments made an HTTP request
 */
#ifndef MCPD_OPENAPI_INT_H
#define MCPD_OPENAPI_INT_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "openapi.h"

enum openapi_in {
	OPENAPI_IN_PATH,
	OPENAPI_IN_QUERY,
	OPENAPI_IN_HEADER,
	OPENAPI_IN_COOKIE
};

enum openapi_style {
	OPENAPI_STYLE_SIMPLE,
	OPENAPI_STYLE_LABEL,
	OPENAPI_STYLE_MATRIX,
	OPENAPI_STYLE_FORM,
	OPENAPI_STYLE_SPACE,		/* spaceDelimited */
	OPENAPI_STYLE_PIPE,		/* pipeDelimited */
	OPENAPI_STYLE_DEEP		/* deepObject */
};

/* Where one argument of a tool goes in its request. */
struct openapi_param {
	char		*arg;		/* its property in inputSchema */
	char		*name;		/* as the API knows it */
	int		 in;		/* enum openapi_in */
	int		 style;		/* enum openapi_style */
	int		 explode;
	int		 reserved;	/* allowReserved */
	int		 required;
	int		 json;		/* content application/json: as JSON */
};

/* The argument a JSON request body comes from. */
#define OPENAPI_BODY_ARG	"body"

struct openapi_op {
	char			*name;		/* the tool's */
	const char		*method;	/* GET, ... */
	char			*path;		/* template, as in the spec */
	struct openapi_param	*params;
	size_t			 nparams;
	int			 body;		/* 0 none, 1 may, 2 must */
	char			*body_type;	/* its media type */
	int			 output;	/* outputSchema made */
	int			 wraps;		/* structuredContent {result} */
	cJSON			*tool;
};

struct openapi_spec {
	char			*version;
	char			*title;
	char			*server;	/* NULL: none */
	struct openapi_op	*ops;
	size_t			 nops;
	size_t			 skipped;
};

/* Why a build stopped: the operation is skipped, or the document refused. */
enum openapi_fail {
	OPENAPI_OK,
	OPENAPI_SKIP,
	OPENAPI_REFUSE
};

enum openapi_dir {
	OPENAPI_INPUT,		/* readOnly properties left out */
	OPENAPI_OUTPUT		/* writeOnly ones */
};

struct openapi_def;

/*
 * One schema being built (a tool's input, or its output): its $defs, the
 * targets of the $refs being expanded (a $ref back to one of them is a
 * cycle, kept as a $ref into $defs), and what it has cost.
 */
struct openapi_build {
	const cJSON		*doc;
	int			 v31;
	int			 dir;		/* enum openapi_dir */
	int			 max_depth;
	size_t			 nodes;		/* schema objects of this one */
	size_t			*total;		/* of the whole catalog */
	const cJSON		**stack;
	size_t			 nstack;
	size_t			 stacksize;
	struct openapi_def	*defs;
	size_t			 ndefs;
	int			 fail;		/* enum openapi_fail */
	char			*why;
};

void		 openapi_schema_init(struct openapi_build *, const cJSON *, int,
		     int, int, size_t *);
/* A Schema Object as JSON Schema 2020-12, or NULL (b->fail, b->why). */
cJSON		*openapi_schema_build(struct openapi_build *, const cJSON *);
/* The $defs the schema's cycles need, into root; -1 on failure. */
int		 openapi_schema_defs(struct openapi_build *, cJSON *);
void		 openapi_schema_clear(struct openapi_build *);
/*
 * What node is once its $refs are followed (a Parameter, Request Body,
 * Response or Path Item Object may be one), or NULL with *fail and *why.
 */
const cJSON	*openapi_schema_resolve(const cJSON *, int, const cJSON *,
		     int *, char **);

#endif

/*
 * What the parts of the configuration share (src/conf/ only): the
 * directive tables' row type, the engine's functions the tables and block
 * parsers call, and the tables themselves.
 *
 *	conf.c		the engine: lexer, values, directives with their own
 *			syntax, the checks, the public interface
 *	conf_table.c	the main table: every top-level directive
 *	conf_tool.c	tool NAME { }: its table and its parser
 *	conf_auth.c	auth { }: the same
 *	conf_upstream.c	upstream NAME { }: the same
 *	conf_endpoint.c	endpoint PATH { }: the same
 *	conf_catalog.c	the catalog lines upstream and endpoint blocks
 *			share (tools allow|deny, rename, description)
 *	conf_credential.c credentials { } inside an upstream block
 *	conf_openapi.c	openapi NAME { }: the same
 *	conf_limit.c	limit NAME { }: the same
 *	conf_redis.c	the redis event log's address, credentials and TLS
 *	conf_otel.c	the tracing directives' own syntax
 *	conf_print.c	mcpd -h, mcpd -M and mcpd.conf.example, from the tables
 */
#ifndef MCPD_CONF_INT_H
#define MCPD_CONF_INT_H

#include <stddef.h>

#include "conf.h"

#define CONF_NITEMS(a)		(sizeof (a) / sizeof (a)[0])
#define CONF_TOOL_NAME_MAX	128		/* as MCP allows */
#define CONF_PREFIX_MAX		64		/* before tool names */
#define CONF_SECRET_MAX		4096		/* one line of a file */

#define CONF_KIB		1024LL
#define CONF_MIB		(1024LL * 1024)
#define CONF_GIB		(1024LL * 1024 * 1024)

/*
 * One line of the file, split into words, and the lines of its block if it
 * ended with "{". argv[0] is the directive's name.
 */
struct conf_directive {
	int			 line;
	int			 argc;
	char			**argv;
	int			 has_block;
	struct conf_directive	*children;
	size_t			 nchildren;
};

enum conf_type {
	CONF_STRING,		/* one word; char * */
	CONF_HOSTPORT,		/* HOST:PORT; char * at offset, int at offset2 */
	CONF_INTEGER,		/* long long */
	CONF_SIZE,		/* bytes, suffix k, m or g; long long */
	CONF_SECONDS,		/* suffix s, m, h or d; long long */
	CONF_MILLISECONDS,	/* suffix ms or s; long long */
	CONF_BOOL,		/* on or off; int */
	CONF_ENUM,		/* one of values; int */
	CONF_WORDS,		/* one or more words; char ** (NULL-terminated)
				   at offset, size_t count at offset2 */
	CONF_CUSTOM,		/* one word given to the row's parse */
	CONF_LINE,		/* all the words given to the row's line */
	CONF_BLOCK		/* NAME ... { }, given to the row's block */
};

/*
 * A row of another type with a block handler takes both forms: the plain
 * line is its type's, "NAME ARG... {" ... "}" goes to the handler (endpoint
 * PATH, and endpoint PATH { ... }).
 */

struct conf_enum {
	const char	*name;
	int		 value;
};

struct conf_entry;
struct conf_table;

/*
 * A word checker validates one word and returns the value to store
 * (allocated) or -1 with the reason in *why.
 */
typedef int	conf_check_cb(const char *, char **, char **);
/* A custom parser sets the fields of base from one word. */
typedef int	conf_parse_cb(void *, const struct conf_entry *, const char *,
		    char **);
/* A line parser sets the fields of base from all the words. */
typedef int	conf_line_cb(void *, const struct conf_entry *, int, char **,
		    char **);
/* A block handler; its errors carry file and line (of the block's lines). */
typedef int	conf_block_cb(void *, const struct conf_entry *,
		    const struct conf_directive *, const char *, char **);

#define CONF_EXAMPLE_ACTIVE	0x1	/* set, not commented, in the example */
#define CONF_REPEAT		0x2	/* may appear more than once */

struct conf_entry {
	const char		*name;
	enum conf_type		 type;
	size_t			 offset;
	size_t			 offset2;
	long long		 min;
	long long		 max;
	const struct conf_enum	*values;	/* CONF_ENUM */
	conf_check_cb		*check;		/* CONF_STRING, CONF_WORDS */
	conf_parse_cb		*parse;		/* CONF_CUSTOM */
	conf_line_cb		*line;		/* CONF_LINE */
	conf_block_cb		*block;		/* CONF_BLOCK */
	const struct conf_table	*sub;		/* CONF_BLOCK: its directives */
	/*
	 * CONF_BLOCK (free also CONF_LINE, and the eventlog row, whose
	 * parser fills fields of its own), each optional: free what the
	 * row put into base (conf_free); check it once the whole file is
	 * read; and, for what a running process cannot take up, keep old's
	 * in new on a reload (1 if they differed; a row with a check is
	 * checked again then). The engine names no row: it calls these
	 * through the table.
	 */
	void			(*free)(void *);
	int			(*done)(void *, const char *, char **);
	int			(*keep)(void *, const void *);
	const char		*args;		/* synopsis; NULL: from type */
	const char		*def;		/* one word, as in the file */
	const char		*def_text;	/* documents a NULL def */
	/* The example file's value (NULL: def); a block's commented-out
	   examples, and its active ones. */
	const char		*example;
	const char		*example_active;
	/* A row that takes a block too: its commented-out block examples. */
	const char		*block_example;
	/*
	 * Not a block: more example values, one per line, shown commented
	 * out after the directive's own line (and in mcpd.conf(5)).
	 */
	const char		*examples;
	int			 flags;
	const char		*section;	/* heading printed before it */
	const char		*help;
};

/* A table of directives: the main one, or a block's. */
struct conf_table {
	const struct conf_entry	*entries;
	size_t			 n;
};

/* A table of directives and the struct its offsets point into. */
struct conf_scope {
	const struct conf_entry	*entries;
	size_t			 nentries;
	void			*base;
	int			*seen;		/* line each was set on, or 0 */
};

/* conf.c */
extern const struct conf_enum conf_param_types[];
conf_check_cb	 conf_check_path;
conf_check_cb	 conf_check_log_file;
conf_check_cb	 conf_check_audit_log;
conf_check_cb	 conf_check_key_file;
conf_check_cb	 conf_check_origin;
conf_check_cb	 conf_check_dir;
conf_check_cb	 conf_check_scope;
conf_check_cb	 conf_check_url;
conf_check_cb	 conf_check_file;
conf_check_cb	 conf_check_prefix;
conf_parse_cb	 conf_parse_commit;
conf_parse_cb	 conf_parse_log_level;
int		 conf_name_ok(const char *, const char *, size_t);
int		 conf_read_secret(const char *, char **, char **);
int		 conf_parse_hostport(const char *, int, char **, int *,
		     char **);
int		 conf_env_add(char ***, size_t *, const char *, char **);
int		 conf_find_program(const char *, char **, char **);
void		 conf_format_number(enum conf_type, long long, char *, size_t);
char		*conf_enum_names(const struct conf_enum *);
int		 conf_parse_enum(const struct conf_enum *, const char *, int *,
		     char **);
void		 conf_set_defaults(void *, const struct conf_entry *, size_t);
int		 conf_apply(struct conf_scope *, const struct conf_directive *,
		     const char *, char **);
int		 conf_scope_line(struct conf_scope *, const char *);
int		 conf_str_differ(const char *, const char *);
char		*conf_str_copy(const char *);
int		 conf_words_differ(char **, size_t, char **, size_t);
char		**conf_words_copy(char **, size_t);

/* conf_redis.c */
conf_parse_cb	 conf_parse_eventlog;
conf_parse_cb	 conf_parse_password_file;
conf_check_cb	 conf_check_redis_user;
conf_check_cb	 conf_check_server_name;
conf_check_cb	 conf_check_tls_file;
int		 conf_redis_done(void *, const char *, char **);
int		 conf_redis_keep(void *, const void *);
void		 conf_redis_free(void *);
/* conf_otel.c */
conf_check_cb	 conf_check_otel_endpoint;
conf_check_cb	 conf_check_otel_attribute;
conf_check_cb	 conf_check_otel_name;
conf_check_cb	 conf_check_otel_instance;
conf_parse_cb	 conf_parse_otel_sample;
conf_line_cb	 conf_line_otel_header;
void		 conf_otel_headers_free(void *);

/* conf_table.c */
extern const struct conf_table conf_table_main;

/* conf_tool.c */
extern const struct conf_table conf_tool_table;
extern const char conf_tool_examples[];
extern const char conf_tool_example_active[];
conf_block_cb	 conf_tool_block;
void		 conf_tool_free(void *);
int		 conf_tool_done(void *, const char *, char **);

/* conf_auth.c */
extern const struct conf_table conf_auth_table;
extern const char conf_auth_examples[];
conf_block_cb	 conf_auth_block;
void		 conf_auth_free(void *);
int		 conf_auth_keep(void *, const void *);

/* conf_upstream.c */
extern const struct conf_table conf_upstream_table;
extern const char conf_upstream_examples[];
conf_block_cb	 conf_upstream_block;
void		 conf_upstream_free(void *);
int		 conf_upstream_done(void *, const char *, char **);

/* conf_endpoint.c */
extern const struct conf_table conf_endpoint_table;
extern const char conf_endpoint_examples[];
conf_block_cb	 conf_endpoint_block;
void		 conf_endpoint_free(void *);
int		 conf_endpoint_done(void *, const char *, char **);

/* conf_catalog.c: lines whose row's offset is a struct conf_catalog. */
conf_line_cb	 conf_catalog_tools;
conf_line_cb	 conf_catalog_prompts;
conf_line_cb	 conf_catalog_resources;
conf_line_cb	 conf_catalog_rename;
conf_line_cb	 conf_catalog_describe;
void		 conf_catalog_clear(struct conf_catalog *);

/* conf_credential.c: a block whose row's offset is a conf_credentials *. */
extern const struct conf_table conf_credentials_table;
conf_block_cb	 conf_credentials_block;
void		 conf_credentials_delete(struct conf_credentials *);

/* conf_openapi.c */
extern const struct conf_table conf_openapi_table;
extern const char conf_openapi_examples[];
conf_block_cb	 conf_openapi_block;
void		 conf_openapi_free(void *);
int		 conf_openapi_done(void *, const char *, char **);

/* conf_limit.c */
extern const struct conf_table conf_limit_table;
extern const char conf_limit_examples[];
conf_block_cb	 conf_limit_block;
void		 conf_limit_free(void *);

#endif

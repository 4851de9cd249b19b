/*
 * The configuration a test writes as text, parsed as conf_load parses a
 * file (named "t.conf" in causes), or refused with the cause expected:
 * what the tests of conf.c and of each block it reads share.
 */
#ifndef MCPD_CONFPARSE_H
#define MCPD_CONFPARSE_H

struct conf;

/* text must parse; its configuration. */
struct conf	*parse_ok(const char *);
/* text must be refused with exactly the cause want. */
void		 expect_error(const char *, const char *);
/* text must be refused with a cause that contains part. */
void		 expect_error_has(const char *, const char *);

#endif

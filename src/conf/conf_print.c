/*
 * Documentation from the directive tables: mcpd -h (conf_print_help),
 * mcpd.conf(5) (conf_print_man, mcpd -M) and mcpd.conf.example
 * (conf_print_example, mcpd -e), each a walk over the main table and the
 * blocks' tables inside it. A new directive is documented by its row.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_int.h"
#include "xmalloc.h"

/* Print text word-wrapped to width columns, each line after prefix. */
static void
conf_print_wrapped(FILE *f, const char *prefix, const char *text,
    size_t width)
{
	const char	*p = text, *word;
	size_t		 col = 0, len;

	for (;;) {
		while (*p == ' ')
			p++;
		if (*p == '\0')
			break;
		word = p;
		while (*p != ' ' && *p != '\0')
			p++;
		len = p - word;
		if (col != 0 && col + 1 + len > width) {
			fputc('\n', f);
			col = 0;
		}
		if (col == 0) {
			fputs(prefix, f);
			col = strlen(prefix);
		} else {
			fputc(' ', f);
			col++;
		}
		fwrite(word, 1, len, f);
		col += len;
	}
	if (col != 0)
		fputc('\n', f);
}

/* The words after the directive's name in a synopsis. */
static char *
conf_print_synopsis(const struct conf_entry *ce)
{
	if (ce->args != NULL)
		return (xstrdup(ce->args));
	switch (ce->type) {
	case CONF_INTEGER:
		return (xstrdup("N"));
	case CONF_SIZE:
		return (xstrdup("BYTES"));
	case CONF_SECONDS:
		return (xstrdup("SECONDS"));
	case CONF_MILLISECONDS:
		return (xstrdup("MILLISECONDS"));
	case CONF_BOOL:
	case CONF_ENUM:
		return (conf_enum_names(ce->values));
	case CONF_WORDS:
		return (xstrdup("WORD..."));
	default:
		return (xstrdup("VALUE"));
	}
}

/* "Default: X (range A to B)", or NULL if there is no default. */
static char *
conf_print_default(const struct conf_entry *ce)
{
	char	*s, lo[32], hi[32];

	if (ce->def == NULL) {
		if (ce->def_text == NULL)
			return (NULL);
		xasprintf(&s, "Default: %s", ce->def_text);
		return (s);
	}
	switch (ce->type) {
	case CONF_INTEGER:
	case CONF_SIZE:
	case CONF_SECONDS:
	case CONF_MILLISECONDS:
		conf_format_number(ce->type, ce->min, lo, sizeof lo);
		conf_format_number(ce->type, ce->max, hi, sizeof hi);
		xasprintf(&s, "Default: %s (range %s to %s)", ce->def, lo, hi);
		break;
	default:
		xasprintf(&s, "Default: %s", ce->def);
		break;
	}
	return (s);
}

/* A directive's further examples, "NAME VALUE" each, under its help. */
static void
conf_print_examples(FILE *f, const struct conf_entry *ce, const char *prefix)
{
	const char	*p, *end;

	if (ce->examples == NULL)
		return;
	fprintf(f, "%sExamples:\n", prefix);
	for (p = ce->examples; *p != '\0'; p = end + 1) {
		if ((end = strchr(p, '\n')) == NULL)
			end = p + strlen(p);
		fprintf(f, "%s  %s %.*s\n", prefix, ce->name, (int)(end - p),
		    p);
		if (*end == '\0')
			break;
	}
}

/*
 * One directive: synopsis after head, help and default after prefix. A
 * block's own directives follow, each after an empty line (blank), one
 * level further in.
 */
static void
conf_print_entry(FILE *f, const struct conf_entry *ce, const char *head,
    const char *prefix, const char *blank, size_t width)
{
	char	*synopsis, *def, *subprefix;
	size_t	 i;

	synopsis = conf_print_synopsis(ce);
	fprintf(f, "%s%s %s\n", head, ce->name, synopsis);
	free(synopsis);
	conf_print_wrapped(f, prefix, ce->help, width);
	conf_print_examples(f, ce, prefix);
	if ((def = conf_print_default(ce)) != NULL) {
		conf_print_wrapped(f, prefix, def, width);
		free(def);
	}
	if (ce->sub == NULL)
		return;
	xasprintf(&subprefix, "%s  ", prefix);
	for (i = 0; i < ce->sub->n; i++) {
		fputs(blank, f);
		conf_print_entry(f, &ce->sub->entries[i], prefix, subprefix,
		    blank, width);
	}
	free(subprefix);
}

/* Examples commented out: each line after "# ". */
static void
conf_print_commented(FILE *f, const char *text)
{
	const char	*p, *end;

	for (p = text; p != NULL && *p != '\0'; p = end + 1) {
		if ((end = strchr(p, '\n')) == NULL)
			end = p + strlen(p);
		if (end == p)
			fputs("#\n", f);
		else
			fprintf(f, "# %.*s\n", (int)(end - p), p);
		if (*end == '\0')
			break;
	}
}

/* A block's examples: the commented ones after "# ", then the active. */
static void
conf_print_block_examples(FILE *f, const struct conf_entry *ce)
{
	conf_print_commented(f, ce->example);
	if (ce->example_active != NULL)
		fprintf(f, "\n%s", ce->example_active);
}

void
conf_print_example(FILE *f)
{
	const struct conf_entry	*ce;
	const char		*value;
	size_t			 i;

	fputs(
"# mcpd.conf: every directive of mcpd with its help text and default.\n"
"#\n"
"# One directive per line: NAME VALUE... A \"#\" outside double quotes\n"
"# starts a comment that runs to the end of the line. A word in double\n"
"# quotes may hold spaces and \"#\"; inside it, \\\" is a quote and \\\\ a\n"
"# backslash. Sizes take k, m or g (KiB, MiB, GiB); times in seconds take\n"
"# s, m, h or d; times in milliseconds take ms or s. A directive may appear\n"
"# only once.\n"
"#\n"
"# Lines \"#NAME VALUE\" show the default (or an example); remove the \"#\"\n"
"# to change it. This file is generated from the table in src/conf/conf.c.\n",
	    f);
	for (i = 0; i < conf_table_main.n; i++) {
		ce = &conf_table_main.entries[i];
		if (ce->section != NULL)
			fprintf(f, "\n# --- %s ---\n", ce->section);
		fputc('\n', f);
		conf_print_entry(f, ce, "# ", "#   ", "#\n", 76);
		if (ce->type == CONF_BLOCK) {
			fputs("#\n", f);
			conf_print_block_examples(f, ce);
			continue;
		}
		if ((value = ce->example) == NULL)
			value = ce->def;
		if (value == NULL)
			continue;
		if (ce->flags & CONF_EXAMPLE_ACTIVE)
			fprintf(f, "%s %s\n", ce->name, value);
		else
			fprintf(f, "#%s %s\n", ce->name, value);
		if (ce->block_example != NULL) {
			fputs("#\n", f);
			conf_print_commented(f, ce->block_example);
		}
	}
}

/*
 * roff: a backslash is \e, and a line may not start with "." or "'" (it
 * would be a request); \& before such a line makes it text.
 */
static void
conf_print_man_text(FILE *f, const char *text)
{
	const char	*p;
	int		 bol = 1;

	for (p = text; *p != '\0'; p++) {
		if (bol && (*p == '.' || *p == '\''))
			fputs("\\&", f);
		bol = (*p == '\n');
		if (*p == '\\')
			fputs("\\e", f);
		else if (*p == '-')
			fputs("\\-", f);
		else
			fputc(*p, f);
	}
}

/* One directive as a tagged paragraph; a block's own directives inside. */
static void
conf_print_man_entry(FILE *f, const struct conf_entry *ce)
{
	char	*synopsis, *def;
	size_t	 i;

	synopsis = conf_print_synopsis(ce);
	fputs(".TP\n\\fB", f);
	conf_print_man_text(f, ce->name);
	fputs("\\fR \\fI", f);
	conf_print_man_text(f, synopsis);
	fputs("\\fR\n", f);
	free(synopsis);
	conf_print_man_text(f, ce->help);
	fputs("\n", f);
	if ((def = conf_print_default(ce)) != NULL) {
		fputs(".br\n", f);
		conf_print_man_text(f, def);
		fputs("\n", f);
		free(def);
	}
	if (ce->sub == NULL)
		return;
	fputs(".RS\n", f);
	for (i = 0; i < ce->sub->n; i++)
		conf_print_man_entry(f, &ce->sub->entries[i]);
	fputs(".RE\n", f);
}

/* A block's examples, as they appear in the example file, unfilled. */
static void
conf_print_man_examples(FILE *f, const struct conf_entry *ce)
{
	fputs(".PP\nExamples:\n.PP\n.nf\n.RS\n", f);
	if (ce->example != NULL)
		conf_print_man_text(f, ce->example);
	if (ce->example_active != NULL) {
		fputs("\n", f);
		conf_print_man_text(f, ce->example_active);
	}
	fputs(".RE\n.fi\n", f);
}

/* The further examples of a directive that is not a block. */
static void
conf_print_man_more(FILE *f, const struct conf_entry *ce)
{
	const char	*p, *end;
	char		*line;

	fputs(".PP\nExamples:\n.PP\n.nf\n.RS\n", f);
	for (p = ce->examples; *p != '\0'; p = end + 1) {
		if ((end = strchr(p, '\n')) == NULL)
			end = p + strlen(p);
		xasprintf(&line, "%s %.*s\n", ce->name, (int)(end - p), p);
		conf_print_man_text(f, line);
		free(line);
		if (*end == '\0')
			break;
	}
	fputs(".RE\n.fi\n", f);
}

/* mcpd.conf(5), from the same table as the example file and -h. */
void
conf_print_man(FILE *f, const char *version)
{
	const struct conf_entry	*ce;
	size_t			 i;

	fprintf(f, ".\\\" Generated by mcpd -M from the table in src/conf/conf.c.\n"
	    ".TH MCPD.CONF 5 \"\" \"mcpd %s\" \"File Formats\"\n", version);
	fputs(
".SH NAME\n"
"mcpd.conf \\- configuration file of mcpd\n"
".SH SYNOPSIS\n"
".I /etc/mcpd/mcpd.conf\n"
".SH DESCRIPTION\n"
".BR mcpd (8)\n"
"reads one configuration file, named with\n"
".BR \\-c .\n"
"It holds one directive per line:\n"
".I NAME VALUE...\n"
"A \"#\" outside double quotes starts a comment that runs to the end of\n"
"the line. A word in double quotes may hold spaces and \"#\"; inside it,\n"
"\\e\" is a quote and \\e\\e a backslash. Sizes take k, m or g (KiB, MiB,\n"
"GiB); times in seconds take s, m, h or d; times in milliseconds take ms\n"
"or s. A directive may appear only once, except where it says otherwise.\n"
"A block directive ends its first line with \"{\" and its last with \"}\",\n"
"with one of its own directives on each line in between.\n"
".PP\n"
"An unknown directive, a value out of its range or a malformed line is\n"
"an error that names the file and line;\n"
".B mcpd \\-t \\-c\n"
".I FILE\n"
"checks a file without starting.\n"
".SH DIRECTIVES\n", f);
	for (i = 0; i < conf_table_main.n; i++) {
		ce = &conf_table_main.entries[i];
		if (ce->section != NULL) {
			fputs(".SS ", f);
			conf_print_man_text(f, ce->section);
			fputs("\n", f);
		}
		conf_print_man_entry(f, ce);
		if (ce->type == CONF_BLOCK)
			conf_print_man_examples(f, ce);
		else if (ce->block_example != NULL) {
			fputs(".PP\nExamples:\n.PP\n.nf\n.RS\n", f);
			conf_print_man_text(f, ce->block_example);
			fputs(".RE\n.fi\n", f);
		}
		if (ce->examples != NULL)
			conf_print_man_more(f, ce);
	}
	fputs(
".SH FILES\n"
".TP\n"
".I /etc/mcpd/mcpd.conf\n"
"The configuration file the packaged service unit names.\n"
".SH SEE ALSO\n"
".BR mcpd (8)\n", f);
}

void
conf_print_help(FILE *f)
{
	const struct conf_entry	*ce;
	size_t			 i;

	fputs("Configuration file directives (one per line, \"#\" starts a "
	    "comment):\n", f);
	for (i = 0; i < conf_table_main.n; i++) {
		ce = &conf_table_main.entries[i];
		if (ce->section != NULL)
			fprintf(f, "\n%s:\n", ce->section);
		conf_print_entry(f, ce, "  ", "        ", "\n", 79);
	}
}

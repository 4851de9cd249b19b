/*
 * Catalogs: the lines an upstream block and an endpoint block share to
 * say which items they serve (tools, prompts, resources: allow and deny
 * shell patterns), and, in an upstream block, under which names and with
 * which descriptions its tools are served (rename, description). The row's
 * offset points at the struct conf_catalog of the block's struct.
 *
 * An item is served when no allow line of its list was given or one of
 * their patterns matches, and no deny pattern matches: deny wins.
 */
#include <fnmatch.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "conf_int.h"
#include "xmalloc.h"

#define CONF_PATTERN_MAX	256
#define CONF_DESCRIPTION_MAX	4096

static struct conf_catalog *
conf_catalog_of(void *base, const struct conf_entry *ce)
{
	return ((struct conf_catalog *)((char *)base + ce->offset));
}

/* [allow|deny] PATTERN...: appended to the list's allow or deny words. */
static int
conf_catalog_patterns(void *base, const struct conf_entry *ce, int list,
    int argc, char **argv, char **why)
{
	struct conf_catalog	*cat = conf_catalog_of(base, ce);
	char			***words;
	size_t			*n;
	int			 i, deny = 0;

	if (strcmp(argv[0], "allow") == 0 || strcmp(argv[0], "deny") == 0) {
		deny = argv[0][0] == 'd';
		argc--;
		argv++;
	}
	if (argc == 0) {
		xasprintf(why, "expected \"%s %s\"", ce->name, ce->args);
		return (-1);
	}
	for (i = 0; i < argc; i++) {
		if (*argv[i] == '\0' || strlen(argv[i]) > CONF_PATTERN_MAX) {
			xasprintf(why, "invalid pattern \"%s\" (1 to %d "
			    "characters)", argv[i], CONF_PATTERN_MAX);
			return (-1);
		}
	}
	words = deny ? &cat->deny[list] : &cat->allow[list];
	n = deny ? &cat->ndeny[list] : &cat->nallow[list];
	*words = xreallocarray(*words, *n + argc + 1, sizeof **words);
	for (i = 0; i < argc; i++)
		(*words)[(*n)++] = xstrdup(argv[i]);
	(*words)[*n] = NULL;
	return (0);
}

int
conf_catalog_tools(void *base, const struct conf_entry *ce, int argc,
    char **argv, char **why)
{
	return (conf_catalog_patterns(base, ce, CONF_CATALOG_TOOLS, argc, argv,
	    why));
}

int
conf_catalog_prompts(void *base, const struct conf_entry *ce, int argc,
    char **argv, char **why)
{
	return (conf_catalog_patterns(base, ce, CONF_CATALOG_PROMPTS, argc,
	    argv, why));
}

int
conf_catalog_resources(void *base, const struct conf_entry *ce, int argc,
    char **argv, char **why)
{
	return (conf_catalog_patterns(base, ce, CONF_CATALOG_RESOURCES, argc,
	    argv, why));
}

static int
conf_catalog_name(const char *s, char **why)
{
	if (!conf_name_ok(s, "_-.", CONF_TOOL_NAME_MAX)) {
		xasprintf(why, "invalid tool name \"%s\" (1 to %d letters, "
		    "digits, \"_\", \"-\" or \".\")", s, CONF_TOOL_NAME_MAX);
		return (-1);
	}
	return (0);
}

/*
 * rename OLD NEW: one name each, an OLD renamed once, a NEW given once
 * (two tools under one name would make a call ambiguous).
 */
int
conf_catalog_rename(void *base, const struct conf_entry *ce, int argc,
    char **argv, char **why)
{
	struct conf_catalog	*cat = conf_catalog_of(base, ce);
	size_t			 i;

	if (argc != 2) {
		xasprintf(why, "expected \"rename %s\"", ce->args);
		return (-1);
	}
	if (conf_catalog_name(argv[0], why) != 0 ||
	    conf_catalog_name(argv[1], why) != 0)
		return (-1);
	for (i = 0; i < cat->nrenames; i++) {
		if (strcmp(cat->renames[i].from, argv[0]) == 0) {
			xasprintf(why, "%s is renamed twice", argv[0]);
			return (-1);
		}
		if (strcmp(cat->renames[i].to, argv[1]) == 0) {
			xasprintf(why, "two tools renamed %s", argv[1]);
			return (-1);
		}
	}
	cat->renames = xreallocarray(cat->renames, cat->nrenames + 1,
	    sizeof *cat->renames);
	cat->renames[cat->nrenames].from = xstrdup(argv[0]);
	cat->renames[cat->nrenames++].to = xstrdup(argv[1]);
	return (0);
}

/* description NAME TEXT: TEXT one word (quote it), each NAME once. */
int
conf_catalog_describe(void *base, const struct conf_entry *ce, int argc,
    char **argv, char **why)
{
	struct conf_catalog	*cat = conf_catalog_of(base, ce);
	size_t			 i;

	if (argc != 2) {
		xasprintf(why, "expected \"description %s\" (quote the text)",
		    ce->args);
		return (-1);
	}
	if (conf_catalog_name(argv[0], why) != 0)
		return (-1);
	if (strlen(argv[1]) > CONF_DESCRIPTION_MAX) {
		xasprintf(why, "the description of %s is longer than %d "
		    "bytes", argv[0], CONF_DESCRIPTION_MAX);
		return (-1);
	}
	for (i = 0; i < cat->ndescriptions; i++) {
		if (strcmp(cat->descriptions[i].from, argv[0]) == 0) {
			xasprintf(why, "%s is described twice", argv[0]);
			return (-1);
		}
	}
	cat->descriptions = xreallocarray(cat->descriptions,
	    cat->ndescriptions + 1, sizeof *cat->descriptions);
	cat->descriptions[cat->ndescriptions].from = xstrdup(argv[0]);
	cat->descriptions[cat->ndescriptions++].to = xstrdup(argv[1]);
	return (0);
}

static void
conf_renames_free(struct conf_rename *list, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		free(list[i].from);
		free(list[i].to);
	}
	free(list);
}

void
conf_catalog_clear(struct conf_catalog *cat)
{
	int	l;

	for (l = 0; l < CONF_CATALOG_MAX; l++) {
		xfree_words(cat->allow[l]);
		xfree_words(cat->deny[l]);
	}
	conf_renames_free(cat->renames, cat->nrenames);
	conf_renames_free(cat->descriptions, cat->ndescriptions);
	memset(cat, 0, sizeof *cat);
}

static int
conf_catalog_matches(char *const *patterns, size_t n, const char *name)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		if (fnmatch(patterns[i], name, 0) == 0)
			return (1);
	}
	return (0);
}

int
conf_catalog_allows(const struct conf_catalog *cat, int l, const char *name)
{
	if (cat == NULL || l < 0 || l >= CONF_CATALOG_MAX)
		return (1);
	if (cat->nallow[l] > 0 &&
	    !conf_catalog_matches(cat->allow[l], cat->nallow[l], name))
		return (0);
	return (!conf_catalog_matches(cat->deny[l], cat->ndeny[l], name));
}

const char *
conf_catalog_served_name(const struct conf_catalog *cat, const char *name)
{
	size_t	i;

	for (i = 0; i < cat->nrenames; i++) {
		if (strcmp(cat->renames[i].from, name) == 0)
			return (cat->renames[i].to);
	}
	return (name);
}

const char *
conf_catalog_own_name(const struct conf_catalog *cat, const char *served)
{
	size_t	i;

	for (i = 0; i < cat->nrenames; i++) {
		if (strcmp(cat->renames[i].to, served) == 0)
			return (cat->renames[i].from);
	}
	for (i = 0; i < cat->nrenames; i++) {
		if (strcmp(cat->renames[i].from, served) == 0)
			return (NULL);	/* served under its new name only */
	}
	return (served);
}

const char *
conf_catalog_description(const struct conf_catalog *cat, const char *name)
{
	size_t	i;

	for (i = 0; i < cat->ndescriptions; i++) {
		if (strcmp(cat->descriptions[i].from, name) == 0)
			return (cat->descriptions[i].to);
	}
	return (NULL);
}

static int
conf_renames_differ(const struct conf_rename *a, size_t na,
    const struct conf_rename *b, size_t nb)
{
	size_t	i;

	if (na != nb)
		return (1);
	for (i = 0; i < na; i++) {
		if (strcmp(a[i].from, b[i].from) != 0 ||
		    strcmp(a[i].to, b[i].to) != 0)
			return (1);
	}
	return (0);
}

int
conf_catalog_differ(const struct conf_catalog *a, const struct conf_catalog *b)
{
	int	l;

	for (l = 0; l < CONF_CATALOG_MAX; l++) {
		if (conf_words_differ(a->allow[l], a->nallow[l], b->allow[l],
		    b->nallow[l]) || conf_words_differ(a->deny[l],
		    a->ndeny[l], b->deny[l], b->ndeny[l]))
			return (1);
	}
	return (conf_renames_differ(a->renames, a->nrenames, b->renames,
	    b->nrenames) || conf_renames_differ(a->descriptions,
	    a->ndescriptions, b->descriptions, b->ndescriptions));
}

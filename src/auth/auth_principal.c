/*
 * Principals: who a token stands for (issuer, subject, client id) and
 * the scopes it carries, reference-counted: a check hands one to its
 * callback, a session and a call keep theirs. Never the token itself.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "auth_int.h"
#include "log.h"
#include "xmalloc.h"

struct auth_principal {
	unsigned int	 refs;
	char		*issuer;
	char		*subject;
	char		*client_id;	/* NULL if none */
	char		**scopes;
	size_t		 nscopes;
};

struct auth_principal *
auth_principal_new(const char *issuer, const char *subject,
    const char *client_id, const char *scopes)
{
	struct auth_principal	*p;
	const char		*s, *end;

	p = xcalloc(1, sizeof *p);
	p->refs = 1;
	p->issuer = xstrdup(issuer);
	p->subject = xstrdup(subject);
	p->client_id = client_id != NULL ? xstrdup(client_id) : NULL;
	for (s = scopes; s != NULL && *s != '\0'; s = end) {
		while (*s == ' ')
			s++;
		if (*s == '\0')
			break;
		end = s + strcspn(s, " ");
		if (p->nscopes == AUTH_SCOPES_MAX)
			break;
		p->scopes = xreallocarray(p->scopes, p->nscopes + 1,
		    sizeof *p->scopes);
		p->scopes[p->nscopes++] = xstrndup(s, end - s);
	}
	return (p);
}

struct auth_principal *
auth_principal_ref(struct auth_principal *p)
{
	if (p != NULL)
		p->refs++;
	return (p);
}

void
auth_principal_unref(struct auth_principal *p)
{
	size_t	i;

	if (p == NULL)
		return;
	if (p->refs == 0)
		fatalx("auth_principal_unref: no reference left");
	if (--p->refs > 0)
		return;
	free(p->issuer);
	free(p->subject);
	free(p->client_id);
	for (i = 0; i < p->nscopes; i++)
		free(p->scopes[i]);
	free(p->scopes);
	free(p);
}

static int
auth_str_same(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return (a == b);
	return (strcmp(a, b) == 0);
}

int
auth_principal_same(const struct auth_principal *a,
    const struct auth_principal *b)
{
	if (a == NULL || b == NULL)
		return (a == b);
	return (auth_str_same(a->issuer, b->issuer) &&
	    auth_str_same(a->subject, b->subject) &&
	    auth_str_same(a->client_id, b->client_id));
}

const char *
auth_principal_issuer(const struct auth_principal *p)
{
	return (p->issuer);
}

const char *
auth_principal_subject(const struct auth_principal *p)
{
	return (p->subject);
}

const char *
auth_principal_client_id(const struct auth_principal *p)
{
	return (p->client_id);
}

int
auth_principal_has_scope(const struct auth_principal *p, const char *scope)
{
	size_t	i;

	for (i = 0; p != NULL && i < p->nscopes; i++) {
		if (strcmp(p->scopes[i], scope) == 0)
			return (1);
	}
	return (0);
}

char *
auth_principal_scopes(const struct auth_principal *p)
{
	char	*s = xstrdup(""), *t;
	size_t	 i;

	for (i = 0; p != NULL && i < p->nscopes; i++) {
		xasprintf(&t, "%s%s%s", s, i == 0 ? "" : " ", p->scopes[i]);
		free(s);
		s = t;
	}
	return (s);
}

cJSON *
auth_principal_json(const struct auth_principal *p)
{
	cJSON	*json = cJSON_CreateObject();

	cJSON_AddStringToObject(json, "iss", p->issuer);
	cJSON_AddStringToObject(json, "sub", p->subject);
	if (p->client_id != NULL)
		cJSON_AddStringToObject(json, "client_id", p->client_id);
	return (json);
}

struct auth_principal *
auth_principal_from_json(const cJSON *json)
{
	const cJSON	*iss, *sub, *cid;

	iss = cJSON_GetObjectItemCaseSensitive(json, "iss");
	sub = cJSON_GetObjectItemCaseSensitive(json, "sub");
	cid = cJSON_GetObjectItemCaseSensitive(json, "client_id");
	if (!cJSON_IsString(iss) || !cJSON_IsString(sub) ||
	    (cid != NULL && !cJSON_IsString(cid)))
		return (NULL);
	return (auth_principal_new(iss->valuestring, sub->valuestring,
	    cid != NULL ? cid->valuestring : NULL, NULL));
}

/*
 * Principals: who a token stands for (issuer, subject, client id), the
 * scopes it carries, its audiences and when it expires, reference-counted:
 * a check hands one to its callback, a session and a call keep theirs.
 *
 * The principal a request's check hands over also keeps the request's
 * token (auth_principal_with_token), because a token exchange toward an
 * upstream (credential.c, RFC 8693) needs the caller's token as its
 * subject_token. It is held in memory only: never in a log line, never in
 * the session's meta or a task's record (auth_principal_json names who,
 * not how), and it is wiped when the principal is freed. A cached
 * principal (a verified JWT, an introspection answer, a static token)
 * holds no token: a copy with the token is made for each request.
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
	char		**aud;		/* NULL: none said (any resource) */
	size_t		 naud;
	double		 exp;		/* wall seconds, 0: unknown */
	char		*token;		/* the request's, or NULL */
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
	for (i = 0; i < p->naud; i++)
		free(p->aud[i]);
	free(p->aud);
	if (p->token != NULL) {
		explicit_bzero(p->token, strlen(p->token));
		free(p->token);
	}
	free(p);
}

/*
 * The audiences a token names (aud, a string or an array of strings, at
 * most AUTH_AUD_MAX of them kept), and its expiry: set once, by whoever
 * made the principal from a token's claims.
 */
void
auth_principal_set_claims(struct auth_principal *p, const cJSON *aud,
    double exp)
{
	const cJSON	*v;

	p->exp = exp;
	if (aud == NULL)
		return;
	p->aud = xcalloc(AUTH_AUD_MAX + 1, sizeof *p->aud);
	if (cJSON_IsString(aud)) {
		p->aud[p->naud++] = xstrdup(aud->valuestring);
		return;
	}
	if (!cJSON_IsArray(aud))
		return;		/* names nothing */
	cJSON_ArrayForEach(v, aud) {
		if (cJSON_IsString(v) && p->naud < AUTH_AUD_MAX)
			p->aud[p->naud++] = xstrdup(v->valuestring);
	}
}

/* A copy of p for one request, holding its token (len bytes). */
struct auth_principal *
auth_principal_with_token(const struct auth_principal *p, const char *token,
    size_t len)
{
	struct auth_principal	*q;
	size_t			 i;

	q = xcalloc(1, sizeof *q);
	q->refs = 1;
	q->issuer = xstrdup(p->issuer);
	q->subject = xstrdup(p->subject);
	q->client_id = p->client_id != NULL ? xstrdup(p->client_id) : NULL;
	if (p->nscopes > 0) {
		q->scopes = xcalloc(p->nscopes, sizeof *q->scopes);
		for (i = 0; i < p->nscopes; i++)
			q->scopes[q->nscopes++] = xstrdup(p->scopes[i]);
	}
	if (p->aud != NULL) {
		q->aud = xcalloc(AUTH_AUD_MAX + 1, sizeof *q->aud);
		for (i = 0; i < p->naud; i++)
			q->aud[q->naud++] = xstrdup(p->aud[i]);
	}
	q->exp = p->exp;
	q->token = xstrndup(token, len);
	return (q);
}

const char *
auth_principal_token(const struct auth_principal *p)
{
	return (p != NULL ? p->token : NULL);
}

double
auth_principal_expiry(const struct auth_principal *p)
{
	return (p != NULL ? p->exp : 0);
}

/* Whether the token is meant for resource: its aud names it, or is none. */
int
auth_principal_audience(const struct auth_principal *p, const char *resource)
{
	size_t	i;

	if (p->aud == NULL)
		return (1);
	for (i = 0; i < p->naud; i++) {
		if (strcmp(p->aud[i], resource) == 0)
			return (1);
	}
	return (0);
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

/*
 * Claims: what a JWT's claims or an introspection answer must say, read
 * the same way for both. A claim that is there but unusable (not a
 * string, too long) refuses the token: it is never replaced by another
 * claim nor read cut short. Pure functions of the JSON.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "auth_int.h"
#include "xmalloc.h"

/* Bytes of a token's scopes read; what follows is not looked at. */
#define AUTH_CLAIM_SCOPES_MAX	4096

/*
 * A string claim: absent (1), a string of at most AUTH_CLAIM_MAX bytes
 * (0, in *v), or there but not usable (-1).
 */
int
auth_claim_text(const cJSON *claims, const char *name, const char **v)
{
	const cJSON	*c = cJSON_GetObjectItemCaseSensitive(claims, name);

	*v = NULL;
	if (c == NULL)
		return (1);
	if (!cJSON_IsString(c) || strlen(c->valuestring) > AUTH_CLAIM_MAX)
		return (-1);
	*v = c->valuestring;
	return (0);
}

/*
 * Who a token's claims name: sub, and client_id (or azp, in a JWT). A
 * client acting for itself (client credentials) may have no sub: its
 * client id is then the subject. 0, or -1 with *why.
 */
int
auth_claim_who(const cJSON *claims, int jwt, const char **sub,
    const char **cid, const char **why)
{
	int	r;

	if ((r = auth_claim_text(claims, "client_id", cid)) < 0) {
		*why = "client_id is not a string (or too long)";
		return (-1);
	}
	if (r > 0 && jwt && auth_claim_text(claims, "azp", cid) < 0) {
		*why = "azp is not a string (or too long)";
		return (-1);
	}
	if ((r = auth_claim_text(claims, "sub", sub)) < 0) {
		*why = "sub is not a string (or too long)";
		return (-1);
	}
	if (r > 0 && (*sub = *cid) == NULL) {
		*why = "no subject (sub) nor client_id";
		return (-1);
	}
	return (0);
}

/* scope (RFC 9068: space-separated) or scp (an array), as one string. */
char *
auth_claim_scopes(const cJSON *claims)
{
	const cJSON	*scope, *v;
	char		*s, *t;

	scope = cJSON_GetObjectItemCaseSensitive(claims, "scope");
	if (cJSON_IsString(scope))
		return (xstrndup(scope->valuestring, AUTH_CLAIM_SCOPES_MAX));
	s = xstrdup("");
	scope = cJSON_GetObjectItemCaseSensitive(claims, "scp");
	cJSON_ArrayForEach(v, scope) {
		if (!cJSON_IsString(v) || strlen(s) > AUTH_CLAIM_SCOPES_MAX)
			continue;
		xasprintf(&t, "%s%s%s", s, *s == '\0' ? "" : " ",
		    v->valuestring);
		free(s);
		s = t;
	}
	return (s);
}

/* A time claim: absent (1), a number of seconds (0), or bad (-1). */
int
auth_claim_time(const cJSON *claims, const char *name, double *t)
{
	const cJSON	*v = cJSON_GetObjectItemCaseSensitive(claims, name);

	if (v == NULL)
		return (1);
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 ||
	    v->valuedouble > 1e13)
		return (-1);
	*t = v->valuedouble;
	return (0);
}

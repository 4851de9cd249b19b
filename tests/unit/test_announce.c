/*
 * Unit tests for announce.c without a shared log: each subscriber hears a
 * change once, whatever its reach, with its URI; subscribing twice is
 * subscribing once; an unsubscribed one hears nothing; a lost
 * subscription cannot happen, and every instance's changes are heard.
 */
#include <string.h>

#include <event2/event.h>

#include "unit.h"

#include "announce.h"
#include "conf.h"
#include "eventlog.h"
#include "log.h"
#include "server.h"

static struct event_base	*base;
static struct conf		*conf;
static struct eventlog		*el;

struct heard {
	int	n[ANNOUNCE_KIND_MAX];
	char	uri[64];
	char	source[64];
	int	lost;
};

static void
heard_cb(enum announce_kind kind, const char *uri, const char *source,
    void *arg)
{
	struct heard	*h = arg;

	ck_assert_int_lt(kind, ANNOUNCE_KIND_MAX);
	h->n[kind]++;
	strlcpy(h->uri, uri, sizeof h->uri);
	strlcpy(h->source, source, sizeof h->source);
}

static void
lost_cb(const char *why, void *arg)
{
	((struct heard *)arg)->lost++;
}

static const struct announce_hooks here = {
	ANNOUNCE_HERE, heard_cb, NULL
};
static const struct announce_hooks everywhere = {
	ANNOUNCE_EVERYWHERE, heard_cb, lost_cb
};

static void
setup(void)
{
	char	*cause = NULL;

	log_level = LOG_LEVEL_ERROR;
	base = event_base_new();
	conf = conf_default();
	conf->eventlog = CONF_EVENTLOG_MEMORY;
	el = eventlog_create(base, conf, &cause);
	ck_assert_msg(el != NULL, "eventlog_create: %s", cause);
	server_init(base, conf, el);
	announce_init();
}

static void
teardown(void)
{
	announce_shutdown();
	eventlog_free(el);
	event_base_free(base);
	conf_free(conf);
}

START_TEST(test_announce_once_each)
{
	struct heard	a, b;

	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	announce_subscribe(&here, &a);
	announce_subscribe(&everywhere, &b);
	announce_subscribe(&everywhere, &b);	/* once is enough */
	ck_assert(announce_hearing());
	announce_change(ANNOUNCE_TOOLS, NULL);
	ck_assert_int_eq(a.n[ANNOUNCE_TOOLS], 1);
	ck_assert_int_eq(b.n[ANNOUNCE_TOOLS], 1);
	ck_assert_str_eq(a.uri, "");
	announce_change(ANNOUNCE_RESOURCE_UPDATED, "test://x");
	ck_assert_int_eq(a.n[ANNOUNCE_RESOURCE_UPDATED], 1);
	ck_assert_int_eq(b.n[ANNOUNCE_RESOURCE_UPDATED], 1);
	ck_assert_str_eq(b.uri, "test://x");
	ck_assert_str_eq(b.source, "");
	/* An upstream's change names it as its source. */
	announce_change_from(ANNOUNCE_RESOURCE_UPDATED, "test://y", "up1");
	ck_assert_int_eq(a.n[ANNOUNCE_RESOURCE_UPDATED], 2);
	ck_assert_int_eq(b.n[ANNOUNCE_RESOURCE_UPDATED], 2);
	ck_assert_str_eq(a.uri, "test://y");
	ck_assert_str_eq(a.source, "up1");
	ck_assert_str_eq(b.source, "up1");
	/* Nothing comes later: the memory log publishes nothing. */
	unit_turns(base, 5);
	ck_assert_int_eq(b.n[ANNOUNCE_RESOURCE_UPDATED], 2);
	ck_assert_int_eq(b.lost, 0);
	announce_unsubscribe(&everywhere, &b);
	announce_change(ANNOUNCE_PROMPTS, NULL);
	ck_assert_int_eq(a.n[ANNOUNCE_PROMPTS], 1);
	ck_assert_int_eq(b.n[ANNOUNCE_PROMPTS], 0);
	announce_unsubscribe(&here, &a);
	announce_change(ANNOUNCE_PROMPTS, NULL);
	ck_assert_int_eq(a.n[ANNOUNCE_PROMPTS], 1);
}
END_TEST

START_TEST(test_announce_methods)
{
	ck_assert_str_eq(announce_method(ANNOUNCE_TOOLS),
	    "notifications/tools/list_changed");
	ck_assert_str_eq(announce_method(ANNOUNCE_PROMPTS),
	    "notifications/prompts/list_changed");
	ck_assert_str_eq(announce_method(ANNOUNCE_RESOURCES),
	    "notifications/resources/list_changed");
	ck_assert_str_eq(announce_method(ANNOUNCE_RESOURCE_UPDATED),
	    "notifications/resources/updated");
	ck_assert_ptr_null(announce_method(ANNOUNCE_TASK));
	ck_assert_ptr_null(announce_method(ANNOUNCE_KIND_MAX));
}
END_TEST

static Suite *
announce_suite(void)
{
	Suite	*s = suite_create("announce");
	TCase	*tc = tcase_create("announce");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_announce_once_each);
	tcase_add_test(tc, test_announce_methods);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(announce_suite)

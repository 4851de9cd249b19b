/* Shared helpers for the Check unit tests. */
#ifndef MCPD_UNIT_H
#define MCPD_UNIT_H

#include <check.h>
#include <stdlib.h>

#include <event2/event.h>

#include "xmalloc.h"

/*
 * What mcpd's main() does before anything else, so that the tests
 * allocate as the daemon does: libevent's memory and cJSON's come from
 * the x* allocators. UNIT_MAIN calls it; a test with a main() of its own
 * calls it first.
 */
static inline void
unit_init(void)
{
	event_set_mem_functions(xmalloc, xrealloc, free);
	xmalloc_init_cjson();
}

/*
 * n turns of the loop, never waiting: what "on a later turn" means in a
 * test, since the memory log and deferred frees answer on the next one.
 */
static inline void
unit_turns(struct event_base *base, int n)
{
	while (n-- > 0)
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
}

/* Each test file defines its suite and uses this as its main. */
#define UNIT_MAIN(suite_fn)						\
int									\
main(void)								\
{									\
	SRunner	*sr;							\
	int	 failed;						\
									\
	unit_init();							\
	sr = srunner_create(suite_fn());				\
	srunner_run_all(sr, CK_NORMAL);					\
	failed = srunner_ntests_failed(sr);				\
	srunner_free(sr);						\
	return (failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE);		\
}

#endif

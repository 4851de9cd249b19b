/* Shared helpers for the Check unit tests. */
#ifndef MCPD_UNIT_H
#define MCPD_UNIT_H

#include <check.h>
#include <stdlib.h>

#include <event2/event.h>

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
	SRunner	*sr = srunner_create(suite_fn());			\
	int	 failed;						\
									\
	srunner_run_all(sr, CK_NORMAL);					\
	failed = srunner_ntests_failed(sr);				\
	srunner_free(sr);						\
	return (failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE);		\
}

#endif

/*
 * The keys that seal requestState (seal.c's slots): from key files
 * (state_key_file, state_key_previous_file), or else the event log's
 * keyring, read at start-up, on a reload and again and again (statekey.c).
 */
#ifndef MCPD_STATEKEY_H
#define MCPD_STATEKEY_H

struct conf;
struct event_base;
struct eventlog;

/* conf's keys (first: at start-up); -1 and *cause leave them as they were. */
int	 statekey_load(const struct conf *, int, char **);
/* The log is there: the ring can be read (and then kept up to date). */
void	 statekey_start(struct event_base *, struct eventlog *);
void	 statekey_stop(void);
/* Whether a requestState can be sealed and opened now. */
int	 statekey_ready(void);

#endif

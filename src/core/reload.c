/*
 * SIGHUP: the configuration file is read again and taken up by the
 * running process, as nginx and Redis operators expect.
 *
 * A file that does not parse, or whose directives contradict each other,
 * changes nothing: one error line names FILE:LINE and the running
 * configuration stays. Directives only a restart can change (what the
 * process listens on, the event log, and what the log's streams and
 * sessions were created with) keep their running values, with a line for
 * each that changed. Everything else applies at once to new work: the log
 * level and destination, the audit log, origins, limits (HTTP's, and the
 * limit blocks: for calls that start after), timeouts, backpressure of new
 * streams, the redis event log's credentials (its password files read
 * again) and TLS files, for the connections it makes from now on,
 * providers and the tools' definitions (server.c sets evhttp's
 * limits once this returns 0). A running exec call
 * finishes with the definition it started with: it holds the conf it
 * started under (conf_ref), which is freed after its last holder.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "clock.h"
#include "conf.h"
#include "limit.h"
#include "eventlog.h"
#include "log.h"
#include "notify.h"
#include "provider.h"
#include "reload.h"
#include "server.h"
#include "statekey.h"
#include "telemetry.h"

/* More than conf_keep_restart_only can name. */
#define RELOAD_KEPT_MAX	16

/* Log lines go where the new file says; if they cannot, where they went. */
static void
reload_log(const struct conf *conf)
{
	char	*cause;

	if (conf_log_open(conf, &cause) != 0) {
		log_error("reload: %s; logging on where it did", cause);
		free(cause);
	}
}

/* 0 when the file was taken up, -1 when the running one stays. */
int
reload_conf(void)
{
	const struct conf	*old = server.conf;
	struct conf		*new;
	const char		*kept[RELOAD_KEPT_MAX];
	size_t			 nkept, i;
	char			*cause = NULL;

	notify_send("RELOADING=1\nMONOTONIC_USEC=%llu",
	    (unsigned long long)clock_now_us());
	log_info("reload: reading %s", old->path);
	if ((new = conf_load(old->path, &cause)) == NULL ||
	    conf_keep_restart_only(new, old, kept, RELOAD_KEPT_MAX, &nkept,
	    &cause) != 0 ||
	    eventlog_reconfigure(server.eventlog, new, &cause) != 0) {
		log_error("reload: %s; the running configuration stays",
		    cause);
		free(cause);
		conf_free(new);
		notify_send("READY=1\nSTATUS=reload failed: the configuration "
		    "file has an error (see the log); running the previous one");
		return (-1);
	}
	if (statekey_load(new, 0, &cause) != 0) {
		log_error("reload: %s; the running configuration stays",
		    cause);
		free(cause);
		/* The log goes back to what it ran with (it read it before). */
		if (eventlog_reconfigure(server.eventlog, old, &cause) != 0) {
			log_error("reload: the event log keeps the new "
			    "credentials and TLS files: the old ones: %s",
			    cause);
			free(cause);
		}
		conf_free(new);
		notify_send("READY=1\nSTATUS=reload failed: the configuration "
		    "file has an error (see the log); running the previous one");
		return (-1);
	}
	for (i = 0; i < nkept; i++)
		log_warn("reload: %s changed in %s; it needs a restart and "
		    "keeps its running value until then", kept[i], new->path);

	reload_log(new);
	server.conf = new;
	provider_init(new);
	audit_configure(new);
	limit_reload();
	telemetry_configure(server.base, new);
	conf_release(old);
	log_info("reload: %s applied: log level %s, %zu exec tools, builtin "
	    "tools %s", new->path, log_level_name(new->log_level),
	    new->ntools, new->builtin_tools ? "on" : "off");
	notify_send("READY=1\nSTATUS=configuration reloaded from %s",
	    new->path);
	return (0);
}

/*
 * mcpd: a Model Context Protocol server over Streamable HTTP whose SSE ids
 * are durable event-log offsets.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "auth.h"
#include "conf.h"
#include "log.h"
#include "mcpd.h"
#include "provider_openapi.h"
#include "server.h"
#include "statekey.h"
#include "xmalloc.h"

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: mcpd [-t] -c FILE\n"
	    "       mcpd -e        print an example configuration\n"
	    "       mcpd -h        this help and the configuration keys\n"
	    "       mcpd -M        print the manual page mcpd.conf(5)\n"
	    "       mcpd -V        version\n"
	    "  -c FILE  run in the foreground with FILE\n"
	    "  -t       check FILE and exit\n");
}

int
main(int argc, char **argv)
{
	struct conf	*conf;
	const char	*path = NULL;
	char		*cause = NULL;
	int		 ch, check = 0, rc;

	/*
	 * First, before any libevent call allocates: libevent's memory then
	 * comes from the x* allocators too, so an event, timer or buffer it
	 * cannot allocate stops the daemon loudly instead of coming back NULL
	 * to a caller that would use it (event_base_once included: with the
	 * loop's base, EV_TIMEOUT and no timeout, memory is all it can lack).
	 */
	event_set_mem_functions(xmalloc, xrealloc, free);
	xmalloc_init_cjson();
	log_init(LOG_LEVEL_INFO);
	while ((ch = getopt(argc, argv, "c:ehMtV")) != -1) {
		switch (ch) {
		case 'c':
			path = optarg;
			break;
		case 'e':
			conf_print_example(stdout);
			return (0);
		case 'h':
			usage(stdout);
			conf_print_help(stdout);
			return (0);
		case 'M':
			conf_print_man(stdout, MCPD_VERSION);
			return (0);
		case 't':
			check = 1;
			break;
		case 'V':
			printf("mcpd %s\n", MCPD_VERSION);
			return (0);
		default:
			usage(stderr);
			return (2);
		}
	}
	if (path == NULL || optind != argc) {
		usage(stderr);
		return (2);
	}
	if ((conf = conf_load(path, &cause)) == NULL) {
		fprintf(stderr, "mcpd: %s\n", cause);
		free(cause);
		return (1);
	}
	if (check) {
		if (auth_check_files(conf, &cause) != 0 ||
		    provider_openapi_check(conf, stdout, 1, &cause) != 0) {
			fprintf(stderr, "mcpd: %s\n", cause);
			free(cause);
			conf_free(conf);
			return (1);
		}
		if (conf_warning(conf) != NULL)
			fprintf(stderr, "mcpd: %s: warning: %s\n", path,
			    conf_warning(conf));
		printf("mcpd: %s: configuration ok\n", path);
		conf_free(conf);
		return (0);
	}
	/* A document that cannot make tools stops mcpd as a conf error does. */
	if (provider_openapi_check(conf, NULL, 0, &cause) != 0) {
		fprintf(stderr, "mcpd: %s\n", cause);
		free(cause);
		conf_free(conf);
		return (1);
	}
	if (conf_log_open(conf, &cause) != 0) {
		fprintf(stderr, "mcpd: %s\n", cause);
		free(cause);
		conf_free(conf);
		return (1);
	}
	if (statekey_load(conf, 1, &cause) != 0) {
		fprintf(stderr, "mcpd: state_key_file: %s\n", cause);
		free(cause);
		conf_free(conf);
		return (1);
	}
	rc = server_run(conf);
	return (rc);
}

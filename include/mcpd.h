/* What every part of mcpd may say about mcpd itself. */
#ifndef MCPD_MCPD_H
#define MCPD_MCPD_H

/* serverInfo.version, the User-Agent of outbound requests, /metrics. */
#define MCPD_VERSION	"0.1.0"

#endif

/*
 * Unit tests for conf.c: the directive table, the file syntax, every error
 * class with its "FILE:LINE:" prefix, origins, and the example file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "confparse.h"
#include "unit.h"

#include "conf.h"
#include "log.h"
#include "xmalloc.h"

#define EXAMPLE_PATH	"mcpd.conf.example"
#define EXAMPLE_NEW	"build/mcpd.conf.example.new"

/* Every directive of the table; the example and --help must name them. */
static const char *all_keys[] = {
	"listen", "endpoint", "allowed_origins", "max_body",
	"max_header_size", "eventlog", "commit", "stream_maxlen",
	"stream_window", "stream_ttl", "session_ttl", "max_sessions",
	"session_max_streams", "request_timeout", "max_views",
	"sse_high_watermark", "sse_keepalive", "sse_retry_ms",
	"slow_consumer_grace_ms", "backpressure_request",
	"backpressure_standalone", "builtin_tools", "fixtures",
	"max_children", "tool", "log_level", "auth", "otel_endpoint",
	"otel_header", "otel_sample", "otel_service_name", "otel_instance_id",
	"otel_resource", "otel_queue", "otel_batch", "otel_interval_ms",
	"otel_timeout"
};

/* Parse "key value" and return the conf. */
static struct conf *
parse_kv(const char *key, const char *value)
{
	char		 text[512];

	snprintf(text, sizeof text, "%s %s\n", key, value);
	return (parse_ok(text));
}

/* The long long field after "key value". */
static long long
parse_ll(const char *key, const char *value, size_t off)
{
	struct conf	*conf = parse_kv(key, value);
	long long	 v = *(long long *)((char *)conf + off);

	conf_free(conf);
	return (v);
}

static void
expect_kv_error(const char *key, const char *value, const char *want)
{
	char	text[512];

	snprintf(text, sizeof text, "%s %s\n", key, value);
	expect_error(text, want);
}

static char *
read_file(const char *path, size_t *lenp)
{
	FILE	*f;
	char	*buf;
	long	 len;

	if ((f = fopen(path, "r")) == NULL)
		return (NULL);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(len + 1);
	ck_assert_int_eq(fread(buf, 1, len, f), (size_t)len);
	buf[len] = '\0';
	fclose(f);
	*lenp = len;
	return (buf);
}

static char *
generate(void (*fn)(FILE *), size_t *lenp)
{
	FILE	*f;
	char	*buf = NULL;

	f = open_memstream(&buf, lenp);
	ck_assert_ptr_nonnull(f);
	fn(f);
	fclose(f);
	return (buf);
}

static void
check_defaults(const struct conf *conf)
{
	ck_assert_str_eq(conf->listen_host, "127.0.0.1");
	ck_assert_int_eq(conf->listen_port, 8080);
	ck_assert_str_eq(conf->endpoint, "/mcp");
	ck_assert_int_eq(conf->eventlog, CONF_EVENTLOG_MEMORY);
	ck_assert_ptr_null(conf->redis_host);
	ck_assert_int_eq(conf->redis_port, 6379);
	ck_assert_int_eq(conf->redis_db, 0);
	ck_assert_int_eq(conf->commit_replicas, 0);
	ck_assert_int_eq(conf->stream_maxlen, 1000);
	ck_assert_int_eq(conf->stream_window, 256);
	ck_assert_int_eq(conf->stream_ttl, 300);
	ck_assert_int_eq(conf->session_ttl, 1800);
	ck_assert_int_eq(conf->max_sessions, 10000);
	ck_assert_int_eq(conf->session_max_streams, 256);
	ck_assert_int_eq(conf->max_views, 10000);
	ck_assert_int_eq(conf->sse_high_watermark, 256 * 1024);
	ck_assert_int_eq(conf->sse_keepalive, 15);
	ck_assert_int_eq(conf->sse_retry_ms, 1000);
	ck_assert_int_eq(conf->slow_consumer_grace_ms, 5000);
	ck_assert_int_eq(conf->backpressure_request,
	    CONF_BACKPRESSURE_BLOCK);
	ck_assert_int_eq(conf->backpressure_standalone,
	    CONF_BACKPRESSURE_CLOSE);
	ck_assert_int_eq(conf->max_body, 4 * 1024 * 1024);
	ck_assert_int_eq(conf->max_header_size, 16 * 1024);
	ck_assert_int_eq(conf->request_timeout, 60);
	ck_assert_int_eq(conf->builtin_tools, 0);
	ck_assert_int_eq(conf->fixtures_conformance, 0);
	ck_assert_int_eq(conf->max_children, 64);
	ck_assert_ptr_nonnull(conf->allowed_origins);
	ck_assert_ptr_null(conf->allowed_origins[0]);
	ck_assert_uint_eq(conf->nallowed_origins, 0);
	ck_assert_int_eq(conf->log_level, LOG_LEVEL_INFO);
	ck_assert_ptr_null(conf->otel_headers);
	ck_assert_uint_eq(conf->notel_headers, 0);
	ck_assert(conf->otel_sample == 1.0);
	ck_assert_str_eq(conf->otel_service_name, "mcpd");
	ck_assert_ptr_null(conf->otel_instance_id);
	ck_assert_int_eq(conf->otel_queue, 4096);
	ck_assert_int_eq(conf->otel_batch, 512);
	ck_assert_int_eq(conf->otel_interval_ms, 1000);
	ck_assert_int_eq(conf->otel_timeout, 10);
}

START_TEST(test_defaults)
{
	struct conf	*conf;

	conf = conf_default();
	check_defaults(conf);
	ck_assert_ptr_null(conf->path);
	conf_free(conf);
	conf_free(NULL);
}
END_TEST

START_TEST(test_empty)
{
	struct conf	*conf;

	conf = parse_ok("");
	check_defaults(conf);
	ck_assert_str_eq(conf->path, "t.conf");
	conf_free(conf);

	conf = parse_ok("\n\n   \t\n# only a comment\n\t# indented\n");
	check_defaults(conf);
	conf_free(conf);
}
END_TEST

START_TEST(test_all_keys)
{
	struct conf	*conf;

	conf = parse_ok(
	    "listen 0.0.0.0:9000\n"
	    "endpoint /api/mcp\n"
	    "eventlog redis://redis.local:6380/2\n"
	    "commit replicas:2\n"
	    "stream_maxlen 5000\n"
	    "stream_window 2500\n"
	    "stream_ttl 10m\n"
	    "session_ttl 1h\n"
	    "max_sessions 7\n"
	    "session_max_streams 2\n"
	    "max_views 3\n"
	    "sse_high_watermark 1m\n"
	    "sse_keepalive 30\n"
	    "sse_retry_ms 2s\n"
	    "slow_consumer_grace_ms 0\n"
	    "backpressure_request close\n"
	    "backpressure_standalone block\n"
	    "max_body 10m\n"
	    "max_header_size 32k\n"
	    "request_timeout 2m\n"
	    "builtin_tools on\n"
	    "fixtures conformance\n"
	    "allowed_origins https://a.example http://b.example:8080\n"
	    "log_level debug\n");
	ck_assert_str_eq(conf->listen_host, "0.0.0.0");
	ck_assert_int_eq(conf->listen_port, 9000);
	ck_assert_str_eq(conf->endpoint, "/api/mcp");
	ck_assert_int_eq(conf->eventlog, CONF_EVENTLOG_REDIS);
	ck_assert_str_eq(conf->redis_host, "redis.local");
	ck_assert_int_eq(conf->redis_port, 6380);
	ck_assert_int_eq(conf->redis_db, 2);
	ck_assert_int_eq(conf->commit_replicas, 2);
	ck_assert_int_eq(conf->stream_maxlen, 5000);
	ck_assert_int_eq(conf->stream_window, 2500);
	ck_assert_int_eq(conf->stream_ttl, 600);
	ck_assert_int_eq(conf->session_ttl, 3600);
	ck_assert_int_eq(conf->max_sessions, 7);
	ck_assert_int_eq(conf->session_max_streams, 2);
	ck_assert_int_eq(conf->max_views, 3);
	ck_assert_int_eq(conf->sse_high_watermark, 1024 * 1024);
	ck_assert_int_eq(conf->sse_keepalive, 30);
	ck_assert_int_eq(conf->sse_retry_ms, 2000);
	ck_assert_int_eq(conf->slow_consumer_grace_ms, 0);
	ck_assert_int_eq(conf->backpressure_request,
	    CONF_BACKPRESSURE_CLOSE);
	ck_assert_int_eq(conf->backpressure_standalone,
	    CONF_BACKPRESSURE_BLOCK);
	ck_assert_int_eq(conf->max_body, 10 * 1024 * 1024);
	ck_assert_int_eq(conf->max_header_size, 32 * 1024);
	ck_assert_int_eq(conf->request_timeout, 120);
	ck_assert_int_eq(conf->builtin_tools, 1);
	ck_assert_int_eq(conf->fixtures_conformance, 1);
	ck_assert_uint_eq(conf->nallowed_origins, 2);
	ck_assert_str_eq(conf->allowed_origins[0], "https://a.example");
	ck_assert_str_eq(conf->allowed_origins[1], "http://b.example:8080");
	ck_assert_ptr_null(conf->allowed_origins[2]);
	ck_assert_int_eq(conf->log_level, LOG_LEVEL_DEBUG);
	conf_free(conf);
}
END_TEST

START_TEST(test_integer)
{
	size_t	off = offsetof(struct conf, stream_maxlen);

	ck_assert_int_eq(parse_ll("stream_maxlen", "256", off), 256);
	ck_assert_int_eq(parse_ll("stream_maxlen", "1000000", off), 1000000);
	ck_assert_int_eq(parse_ll("stream_maxlen", "0300", off), 300);
	off = offsetof(struct conf, max_sessions);
	ck_assert_int_eq(parse_ll("max_sessions", "1", off), 1);
	ck_assert_int_eq(parse_ll("max_sessions", "10000000", off), 10000000);
	off = offsetof(struct conf, session_max_streams);
	ck_assert_int_eq(parse_ll("session_max_streams", "2", off), 2);

	expect_kv_error("stream_maxlen", "0",
	    "t.conf:1: stream_maxlen: 0 out of range (1 to 1000000)");
	expect_kv_error("stream_maxlen", "1000001",
	    "t.conf:1: stream_maxlen: 1000001 out of range (1 to 1000000)");
	expect_kv_error("stream_maxlen", "-1",
	    "t.conf:1: stream_maxlen: -1 out of range (1 to 1000000)");
	expect_kv_error("session_max_streams", "1",
	    "t.conf:1: session_max_streams: 1 out of range (2 to 100000)");
	expect_kv_error("max_views", "1000001",
	    "t.conf:1: max_views: 1000001 out of range (1 to 1000000)");
	expect_kv_error("max_sessions", "0",
	    "t.conf:1: max_sessions: 0 out of range (1 to 10000000)");
	expect_kv_error("stream_maxlen", "12x",
	    "t.conf:1: stream_maxlen: invalid number \"12x\"");
	expect_kv_error("stream_maxlen", "1k",
	    "t.conf:1: stream_maxlen: invalid number \"1k\"");
	expect_kv_error("stream_maxlen", "+5",
	    "t.conf:1: stream_maxlen: invalid number \"+5\"");
	expect_kv_error("stream_maxlen", "0x10",
	    "t.conf:1: stream_maxlen: invalid number \"0x10\"");
	expect_kv_error("stream_maxlen", "1.5",
	    "t.conf:1: stream_maxlen: invalid number \"1.5\"");
	expect_kv_error("stream_maxlen", "-",
	    "t.conf:1: stream_maxlen: invalid number \"-\"");
	expect_kv_error("stream_maxlen", "\"\"",
	    "t.conf:1: stream_maxlen: invalid number \"\"");
	expect_kv_error("stream_maxlen", "99999999999999999999",
	    "t.conf:1: stream_maxlen: 99999999999999999999 is too large");
}
END_TEST

START_TEST(test_size)
{
	size_t	off = offsetof(struct conf, max_body);

	ck_assert_int_eq(parse_ll("max_body", "1024", off), 1024);
	ck_assert_int_eq(parse_ll("max_body", "1k", off), 1024);
	ck_assert_int_eq(parse_ll("max_body", "2K", off), 2048);
	ck_assert_int_eq(parse_ll("max_body", "3kb", off), 3072);
	ck_assert_int_eq(parse_ll("max_body", "4KiB", off), 4096);
	ck_assert_int_eq(parse_ll("max_body", "5000b", off), 5000);
	ck_assert_int_eq(parse_ll("max_body", "4m", off), 4194304);
	ck_assert_int_eq(parse_ll("max_body", "4M", off), 4194304);
	ck_assert_int_eq(parse_ll("max_body", "4MiB", off), 4194304);
	ck_assert_int_eq(parse_ll("max_body", "4mb", off), 4194304);
	ck_assert_int_eq(parse_ll("max_body", "1g", off), 1073741824);
	ck_assert_int_eq(parse_ll("max_body", "1GiB", off), 1073741824);
	ck_assert_int_eq(parse_ll("max_body", "1024m", off), 1073741824);
	off = offsetof(struct conf, sse_high_watermark);
	ck_assert_int_eq(parse_ll("sse_high_watermark", "4k", off), 4096);
	ck_assert_int_eq(parse_ll("sse_high_watermark", "64m", off),
	    64 * 1024 * 1024);
	off = offsetof(struct conf, max_header_size);
	ck_assert_int_eq(parse_ll("max_header_size", "1m", off), 1048576);

	expect_kv_error("max_body", "1023",
	    "t.conf:1: max_body: 1023 out of range (1k to 1g)");
	expect_kv_error("max_body", "2g",
	    "t.conf:1: max_body: 2g out of range (1k to 1g)");
	expect_kv_error("max_body", "1025m",
	    "t.conf:1: max_body: 1025m out of range (1k to 1g)");
	expect_kv_error("sse_high_watermark", "1k",
	    "t.conf:1: sse_high_watermark: 1k out of range (4k to 64m)");
	expect_kv_error("sse_high_watermark", "65m",
	    "t.conf:1: sse_high_watermark: 65m out of range (4k to 64m)");
	expect_kv_error("max_header_size", "2m",
	    "t.conf:1: max_header_size: 2m out of range (1k to 1m)");
	expect_kv_error("max_body", "k", "t.conf:1: max_body: invalid size "
	    "\"k\" (bytes, or with k, m or g)");
	expect_kv_error("max_body", "1.5k", "t.conf:1: max_body: invalid "
	    "size \"1.5k\" (bytes, or with k, m or g)");
	expect_kv_error("max_body", "4kk", "t.conf:1: max_body: invalid "
	    "size \"4kk\" (bytes, or with k, m or g)");
	expect_kv_error("max_body", "4t", "t.conf:1: max_body: invalid "
	    "size \"4t\" (bytes, or with k, m or g)");
	expect_kv_error("max_body", "9999999999999g",
	    "t.conf:1: max_body: 9999999999999g is too large");
}
END_TEST

START_TEST(test_seconds)
{
	size_t	off = offsetof(struct conf, stream_ttl);

	ck_assert_int_eq(parse_ll("stream_ttl", "1", off), 1);
	ck_assert_int_eq(parse_ll("stream_ttl", "30s", off), 30);
	ck_assert_int_eq(parse_ll("stream_ttl", "5m", off), 300);
	ck_assert_int_eq(parse_ll("stream_ttl", "2h", off), 7200);
	ck_assert_int_eq(parse_ll("stream_ttl", "7d", off), 604800);
	off = offsetof(struct conf, session_ttl);
	ck_assert_int_eq(parse_ll("session_ttl", "10", off), 10);
	ck_assert_int_eq(parse_ll("session_ttl", "30d", off), 2592000);
	off = offsetof(struct conf, sse_keepalive);
	ck_assert_int_eq(parse_ll("sse_keepalive", "1h", off), 3600);
	off = offsetof(struct conf, request_timeout);
	ck_assert_int_eq(parse_ll("request_timeout", "3600", off), 3600);

	expect_kv_error("stream_ttl", "0",
	    "t.conf:1: stream_ttl: 0 out of range (1 to 604800)");
	expect_kv_error("stream_ttl", "8d",
	    "t.conf:1: stream_ttl: 8d out of range (1 to 604800)");
	expect_kv_error("session_ttl", "9",
	    "t.conf:1: session_ttl: 9 out of range (10 to 2592000)");
	expect_kv_error("sse_keepalive", "0",
	    "t.conf:1: sse_keepalive: 0 out of range (1 to 3600)");
	expect_kv_error("request_timeout", "61m",
	    "t.conf:1: request_timeout: 61m out of range (1 to 3600)");
	expect_kv_error("stream_ttl", "5x", "t.conf:1: stream_ttl: invalid "
	    "time \"5x\" (seconds, or with s, m, h or d)");
	expect_kv_error("stream_ttl", "5ms", "t.conf:1: stream_ttl: invalid "
	    "time \"5ms\" (seconds, or with s, m, h or d)");
}
END_TEST

START_TEST(test_milliseconds)
{
	size_t	off = offsetof(struct conf, sse_retry_ms);

	ck_assert_int_eq(parse_ll("sse_retry_ms", "0", off), 0);
	ck_assert_int_eq(parse_ll("sse_retry_ms", "1500", off), 1500);
	ck_assert_int_eq(parse_ll("sse_retry_ms", "250ms", off), 250);
	ck_assert_int_eq(parse_ll("sse_retry_ms", "3s", off), 3000);
	ck_assert_int_eq(parse_ll("sse_retry_ms", "600000", off), 600000);
	off = offsetof(struct conf, slow_consumer_grace_ms);
	ck_assert_int_eq(parse_ll("slow_consumer_grace_ms", "600s", off),
	    600000);

	expect_kv_error("sse_retry_ms", "600001",
	    "t.conf:1: sse_retry_ms: 600001 out of range (0 to 600000)");
	expect_kv_error("slow_consumer_grace_ms", "601s",
	    "t.conf:1: slow_consumer_grace_ms: 601s out of range "
	    "(0 to 600000)");
	expect_kv_error("sse_retry_ms", "1m", "t.conf:1: sse_retry_ms: "
	    "invalid time \"1m\" (milliseconds, or with ms or s)");
}
END_TEST

START_TEST(test_bool_enum)
{
	struct conf	*conf;

	conf = parse_kv("builtin_tools", "on");
	ck_assert_int_eq(conf->builtin_tools, 1);
	conf_free(conf);
	conf = parse_kv("builtin_tools", "off");
	ck_assert_int_eq(conf->builtin_tools, 0);
	conf_free(conf);
	expect_kv_error("builtin_tools", "yes",
	    "t.conf:1: builtin_tools: expected on|off, not \"yes\"");
	expect_kv_error("builtin_tools", "ON",
	    "t.conf:1: builtin_tools: expected on|off, not \"ON\"");

	conf = parse_kv("fixtures", "conformance");
	ck_assert_int_eq(conf->fixtures_conformance, 1);
	conf_free(conf);
	conf = parse_kv("fixtures", "off");
	ck_assert_int_eq(conf->fixtures_conformance, 0);
	conf_free(conf);
	expect_kv_error("fixtures", "on",
	    "t.conf:1: fixtures: expected conformance|off, not \"on\"");

	conf = parse_ok("backpressure_request close\n"
	    "backpressure_standalone block\n");
	ck_assert_int_eq(conf->backpressure_request,
	    CONF_BACKPRESSURE_CLOSE);
	ck_assert_int_eq(conf->backpressure_standalone,
	    CONF_BACKPRESSURE_BLOCK);
	conf_free(conf);
	expect_kv_error("backpressure_request", "drop",
	    "t.conf:1: backpressure_request: expected block|close, "
	    "not \"drop\"");
	expect_kv_error("backpressure_standalone", "evict",
	    "t.conf:1: backpressure_standalone: expected block|close, "
	    "not \"evict\"");

	conf = parse_kv("log_level", "warn");
	ck_assert_int_eq(conf->log_level, LOG_LEVEL_WARN);
	conf_free(conf);
	conf = parse_kv("log_level", "error");
	ck_assert_int_eq(conf->log_level, LOG_LEVEL_ERROR);
	conf_free(conf);
	expect_kv_error("log_level", "verbose",
	    "t.conf:1: log_level: expected debug|info|warn|error, "
	    "not \"verbose\"");
}
END_TEST

START_TEST(test_listen_good)
{
	static const struct {
		const char	*value;
		const char	*host;
		int		 port;
	} cases[] = {
		{ "127.0.0.1:8080", "127.0.0.1", 8080 },
		{ "0.0.0.0:80", "0.0.0.0", 80 },
		{ "localhost:0", "localhost", 0 },
		{ "mcp.example.com:65535", "mcp.example.com", 65535 },
		{ "[::1]:8080", "::1", 8080 },
		{ "[::]:443", "::", 443 },
		{ "[fe80::1:2]:1", "fe80::1:2", 1 },
		{ "[::ffff:10.0.0.1]:9", "::ffff:10.0.0.1", 9 },
		{ "\"[::1]:8080\"", "::1", 8080 },
	};
	struct conf	*conf;
	size_t		 i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		conf = parse_kv("listen", cases[i].value);
		ck_assert_str_eq(conf->listen_host, cases[i].host);
		ck_assert_int_eq(conf->listen_port, cases[i].port);
		conf_free(conf);
	}
}
END_TEST

START_TEST(test_listen_bad)
{
	expect_kv_error("listen", "8080",
	    "t.conf:1: listen: missing port in \"8080\"");
	expect_kv_error("listen", "localhost",
	    "t.conf:1: listen: missing port in \"localhost\"");
	expect_kv_error("listen", ":8080",
	    "t.conf:1: listen: missing host in \":8080\"");
	expect_kv_error("listen", "host:",
	    "t.conf:1: listen: invalid port \"\"");
	expect_kv_error("listen", "host:65536",
	    "t.conf:1: listen: invalid port \"65536\"");
	expect_kv_error("listen", "host:123456",
	    "t.conf:1: listen: invalid port \"123456\"");
	expect_kv_error("listen", "host:-1",
	    "t.conf:1: listen: invalid port \"-1\"");
	expect_kv_error("listen", "host:http",
	    "t.conf:1: listen: invalid port \"http\"");
	expect_kv_error("listen", "::1:8080",
	    "t.conf:1: listen: invalid address \"::1:8080\" (an IPv6 "
	    "address goes in brackets)");
	expect_kv_error("listen", "[::1]",
	    "t.conf:1: listen: missing port in \"[::1]\"");
	expect_kv_error("listen", "[::1]8080",
	    "t.conf:1: listen: invalid address \"[::1]8080\"");
	expect_kv_error("listen", "[::1:8080",
	    "t.conf:1: listen: missing \"]\" in \"[::1:8080\"");
	expect_kv_error("listen", "[zz::1]:80",
	    "t.conf:1: listen: invalid IPv6 address \"zz::1\"");
	expect_kv_error("listen", "[127.0.0.1]:80",
	    "t.conf:1: listen: invalid IPv6 address \"127.0.0.1\"");
	expect_kv_error("listen", "256.1.1.1:80",
	    "t.conf:1: listen: invalid IPv4 address \"256.1.1.1\"");
	expect_kv_error("listen", "user@host:80",
	    "t.conf:1: listen: invalid host \"user@host\"");
	expect_kv_error("listen", "*:80",
	    "t.conf:1: listen: invalid host \"*\"");
	expect_kv_error("listen", "-bad:80",
	    "t.conf:1: listen: invalid host \"-bad\"");
	expect_kv_error("listen", "a:1 b:2",
	    "t.conf:1: listen: unexpected extra value \"b:2\"");
}
END_TEST

START_TEST(test_endpoint)
{
	struct conf	*conf;

	conf = parse_kv("endpoint", "/");
	ck_assert_str_eq(conf->endpoint, "/");
	conf_free(conf);
	conf = parse_kv("endpoint", "/v1/mcp");
	ck_assert_str_eq(conf->endpoint, "/v1/mcp");
	conf_free(conf);

	expect_kv_error("endpoint", "mcp",
	    "t.conf:1: endpoint: path must start with \"/\", not \"mcp\"");
	expect_kv_error("endpoint", "\"\"",
	    "t.conf:1: endpoint: path must start with \"/\", not \"\"");
	expect_kv_error("endpoint", "/mcp?x=1",
	    "t.conf:1: endpoint: invalid path \"/mcp?x=1\"");
	expect_kv_error("endpoint", "\"/a b\"",
	    "t.conf:1: endpoint: invalid path \"/a b\"");
}
END_TEST

START_TEST(test_eventlog_good)
{
	static const struct {
		const char	*value;
		const char	*host;
		int		 port;
		int		 db;
	} cases[] = {
		{ "redis://localhost", "localhost", 6379, 0 },
		{ "redis://127.0.0.1:6380", "127.0.0.1", 6380, 0 },
		{ "redis://127.0.0.1:6380/3", "127.0.0.1", 6380, 3 },
		{ "redis://r.example/15", "r.example", 6379, 15 },
		{ "redis://[::1]:7000/0", "::1", 7000, 0 },
		{ "redis://[::1]", "::1", 6379, 0 },
		{ "REDIS://h:1/01", "h", 1, 1 },
	};
	struct conf	*conf;
	size_t		 i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		conf = parse_kv("eventlog", cases[i].value);
		ck_assert_int_eq(conf->eventlog, CONF_EVENTLOG_REDIS);
		ck_assert_str_eq(conf->redis_host, cases[i].host);
		ck_assert_int_eq(conf->redis_port, cases[i].port);
		ck_assert_int_eq(conf->redis_db, cases[i].db);
		conf_free(conf);
	}

	conf = parse_kv("eventlog", "memory");
	ck_assert_int_eq(conf->eventlog, CONF_EVENTLOG_MEMORY);
	ck_assert_ptr_null(conf->redis_host);
	conf_free(conf);
}
END_TEST

/*
 * The four address forms, their credentials percent-decoded, and the
 * name every log line shows: the password as ***.
 */
START_TEST(test_eventlog_forms)
{
	struct conf	*conf;

	conf = parse_kv("eventlog", "redis://mcpd:p%40ss%3Aw%2Frd@h:6380/2");
	ck_assert_int_eq(conf->redis_kind, CONF_REDIS_TCP);
	ck_assert_str_eq(conf->redis_url_user, "mcpd");
	ck_assert_str_eq(conf->redis_url_password, "p@ss:w/rd");
	ck_assert_str_eq(conf_redis_user(conf), "mcpd");
	ck_assert_str_eq(conf_redis_password(conf), "p@ss:w/rd");
	ck_assert_str_eq(conf->redis_host, "h");
	ck_assert_int_eq(conf->redis_port, 6380);
	ck_assert_int_eq(conf->redis_db, 2);
	ck_assert_str_eq(conf->redis_name, "redis://mcpd:***@h:6380/2");
	ck_assert(!conf_redis_tls(conf));
	conf_free(conf);

	conf = parse_kv("eventlog", "redis://:secret@[::1]");
	ck_assert_ptr_null(conf->redis_url_user);
	ck_assert_str_eq(conf->redis_url_password, "secret");
	ck_assert_str_eq(conf->redis_name, "redis://:***@[::1]:6379/0");
	conf_free(conf);

	conf = parse_kv("eventlog", "rediss://r.example.com:6380");
	ck_assert_int_eq(conf->redis_kind, CONF_REDIS_TLS);
	ck_assert(conf_redis_tls(conf));
	ck_assert_ptr_null(conf_redis_user(conf));
	ck_assert_ptr_null(conf_redis_password(conf));
	ck_assert_str_eq(conf->redis_name, "rediss://r.example.com:6380/0");
	conf_free(conf);

	conf = parse_kv("eventlog", "unix:///run/redis%20x/r.sock?db=3");
	ck_assert_int_eq(conf->redis_kind, CONF_REDIS_UNIX);
	ck_assert_str_eq(conf->redis_path, "/run/redis x/r.sock");
	ck_assert_int_eq(conf->redis_db, 3);
	ck_assert_str_eq(conf->redis_name, "unix:///run/redis x/r.sock?db=3");
	conf_free(conf);

	conf = parse_kv("eventlog", "unix:///r.sock");
	ck_assert_int_eq(conf->redis_db, 0);
	conf_free(conf);

	conf = parse_kv("eventlog",
	    "redis-sentinel://u:pw@10.0.0.1,s2:26380,[::1]:5/my-master.1/4");
	ck_assert_int_eq(conf->redis_kind, CONF_REDIS_SENTINEL);
	ck_assert_uint_eq(conf->nredis_sentinels, 3);
	ck_assert_str_eq(conf->redis_sentinels[0].host, "10.0.0.1");
	ck_assert_int_eq(conf->redis_sentinels[0].port, 26379);
	ck_assert_str_eq(conf->redis_sentinels[1].host, "s2");
	ck_assert_int_eq(conf->redis_sentinels[1].port, 26380);
	ck_assert_str_eq(conf->redis_sentinels[2].host, "::1");
	ck_assert_int_eq(conf->redis_sentinels[2].port, 5);
	ck_assert_str_eq(conf->redis_master, "my-master.1");
	ck_assert_int_eq(conf->redis_db, 4);
	ck_assert_str_eq(conf->redis_name, "redis-sentinel://u:***@"
	    "10.0.0.1:26379,s2:26380,[::1]:5/my-master.1/4");
	/* The sentinels share the data's credentials unless told. */
	ck_assert_str_eq(conf_redis_sentinel_user(conf), "u");
	ck_assert_str_eq(conf_redis_sentinel_password(conf), "pw");
	ck_assert(!conf_redis_tls(conf));
	conf_free(conf);

	conf = parse_ok("eventlog redis-sentinel://s1,s2/m\nredis_tls on\n");
	ck_assert(conf_redis_tls(conf));
	conf_free(conf);

	conf = parse_kv("eventlog",
	    "redis-cluster://mcpd:p%40w@10.0.0.1:7000,r2,[::1]:7002");
	ck_assert_int_eq(conf->redis_kind, CONF_REDIS_CLUSTER);
	ck_assert_uint_eq(conf->nredis_sentinels, 3);
	ck_assert_str_eq(conf->redis_sentinels[0].host, "10.0.0.1");
	ck_assert_int_eq(conf->redis_sentinels[0].port, 7000);
	ck_assert_str_eq(conf->redis_sentinels[1].host, "r2");
	ck_assert_int_eq(conf->redis_sentinels[1].port, 6379);
	ck_assert_str_eq(conf->redis_sentinels[2].host, "::1");
	ck_assert_int_eq(conf->redis_sentinels[2].port, 7002);
	ck_assert_int_eq(conf->redis_db, 0);
	ck_assert_str_eq(conf->redis_name, "redis-cluster://mcpd:***@"
	    "10.0.0.1:7000,r2:6379,[::1]:7002");
	ck_assert_str_eq(conf_redis_user(conf), "mcpd");
	ck_assert_str_eq(conf_redis_password(conf), "p@w");
	ck_assert(!conf_redis_tls(conf));
	conf_free(conf);

	conf = parse_ok("eventlog redis-cluster://n1:7000\nredis_tls on\n");
	ck_assert(conf_redis_tls(conf));
	ck_assert_uint_eq(conf->nredis_sentinels, 1);
	conf_free(conf);
}
END_TEST

/* Credentials and TLS settings, and how they must agree. */
START_TEST(test_eventlog_credentials)
{
	struct conf	*conf;
	char		 dir[] = "/tmp/mcpd-conf-test.XXXXXX", path[128], *text;
	FILE		*f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/pw", dir);
	f = fopen(path, "w");
	fputs("s3cret\nsecond line\n", f);
	fclose(f);

	xasprintf(&text, "eventlog redis://h\nredis_user mcpd\n"
	    "redis_password_file %s\n", path);
	conf = parse_ok(text);
	free(text);
	ck_assert_str_eq(conf_redis_user(conf), "mcpd");
	ck_assert_str_eq(conf_redis_password(conf), "s3cret");
	ck_assert_str_eq(conf->redis_name, "redis://h:6379/0");
	conf_free(conf);

	/* The URL's user with the file's password. */
	xasprintf(&text, "eventlog redis://mcpd@h\nredis_password_file %s\n",
	    path);
	conf = parse_ok(text);
	free(text);
	ck_assert_str_eq(conf_redis_user(conf), "mcpd");
	ck_assert_str_eq(conf_redis_password(conf), "s3cret");
	conf_free(conf);

	xasprintf(&text, "eventlog redis://:pw@h\nredis_password_file %s\n",
	    path);
	expect_error(text, "t.conf:1: a password is in both the eventlog URL "
	    "and redis_password_file");
	free(text);
	expect_error("eventlog redis://u:p@h\nredis_user v\n", "t.conf:1: a "
	    "user is in both the eventlog URL and redis_user");
	expect_error("eventlog redis://h\nredis_user v\n", "t.conf:1: a Redis "
	    "user needs a password (in the eventlog URL, or "
	    "redis_password_file)");
	expect_error("eventlog redis://h\nredis_password_file /nonexistent\n",
	    "t.conf:2: redis_password_file: cannot read /nonexistent: No such "
	    "file or directory");
	expect_error("eventlog redis://h\nredis_password_file pw\n",
	    "t.conf:2: redis_password_file: expected none or an absolute "
	    "path, not \"pw\"");
	f = fopen(path, "w");
	fputs("\n", f);
	fclose(f);
	xasprintf(&text, "redis_password_file %s\n", path);
	expect_error_has(text, "no password on its first line");
	free(text);
	unlink(path);
	rmdir(dir);

	expect_error("eventlog redis://h\nredis_tls_ca_file /ca.pem\n",
	    "t.conf:1: redis_tls_* directives are set, but the eventlog address "
	    "does not use TLS (rediss://, or redis-sentinel:// or "
	    "redis-cluster:// with redis_tls on)");
	expect_error("eventlog redis://h\nredis_tls on\n", "t.conf:1: "
	    "redis_tls on is for redis-sentinel:// and redis-cluster:// "
	    "addresses (one server over TLS is rediss://)");
	expect_error("eventlog rediss://h\nredis_tls_cert_file /c.pem\n",
	    "t.conf:1: redis_tls_cert_file and redis_tls_key_file go together");
	expect_error("eventlog redis://h\nredis_sentinel_user u\n", "t.conf:1: "
	    "redis_sentinel_user and redis_sentinel_password_file are for "
	    "redis-sentinel:// addresses");
	expect_error("eventlog redis-sentinel://s/m\nredis_sentinel_user u\n",
	    "t.conf:1: redis_sentinel_user needs redis_sentinel_password_file");
	conf = parse_ok("eventlog rediss://h\nredis_tls_ca_file /ca.pem\n"
	    "redis_tls_server_name r.example\nredis_tls_verify off\n");
	ck_assert_str_eq(conf->redis_tls_ca_file, "/ca.pem");
	ck_assert_str_eq(conf->redis_tls_server_name, "r.example");
	ck_assert_int_eq(conf->redis_tls_verify, 0);
	conf_free(conf);
	/* With the memory log they change nothing, and are no error. */
	conf = parse_ok("redis_tls_ca_file /ca.pem\n");
	conf_free(conf);
}
END_TEST

/*
 * A reload keeps the address; it takes up the credentials (a password
 * file read again) and the TLS files.
 */
START_TEST(test_eventlog_reload)
{
	struct conf	*old, *new;
	const char	*names[8];
	size_t		 n;
	char		*cause = NULL;

	old = parse_ok("eventlog redis://u:one@h:1/2\n");
	new = parse_ok("eventlog redis://u:two@other:3/4\n");
	ck_assert_int_eq(conf_keep_restart_only(new, old, names, 8, &n,
	    &cause), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(names[0], "eventlog");
	ck_assert_str_eq(new->redis_host, "h");
	ck_assert_int_eq(new->redis_port, 1);
	ck_assert_int_eq(new->redis_db, 2);
	ck_assert_str_eq(conf_redis_password(new), "one");
	ck_assert_str_eq(new->redis_name, "redis://u:***@h:1/2");
	conf_free(new);

	new = parse_ok("eventlog redis://u:one@h:1/2\nredis_tls_verify on\n");
	ck_assert_int_eq(conf_keep_restart_only(new, old, names, 8, &n,
	    &cause), 0);
	ck_assert_uint_eq(n, 0);
	conf_free(new);
	conf_free(old);

	/* What is taken up must fit the address kept. */
	old = parse_ok("eventlog redis://u:one@h\n");
	new = parse_ok("eventlog redis://h\n");
	new->redis_user = strdup("v");
	ck_assert_int_eq(conf_keep_restart_only(new, old, names, 8, &n,
	    &cause), -1);
	ck_assert_str_eq(cause, "t.conf:1: a user is in both the eventlog URL "
	    "and redis_user");
	free(cause);
	conf_free(new);
	conf_free(old);
}
END_TEST

START_TEST(test_eventlog_bad)
{
	expect_kv_error("eventlog", "disk",
	    "t.conf:1: eventlog: expected memory, redis://, rediss://, "
	    "unix://, redis-sentinel:// or redis-cluster://, not \"disk\"");
	expect_kv_error("eventlog", "http://h:6379",
	    "t.conf:1: eventlog: expected memory, redis://, rediss://, "
	    "unix://, redis-sentinel:// or redis-cluster://, not "
	    "\"http://h:6379\"");
	/* A password never reaches an error line. */
	expect_kv_error("eventlog", "http://u:secret@h:6379",
	    "t.conf:1: eventlog: expected memory, redis://, rediss://, "
	    "unix://, redis-sentinel:// or redis-cluster://, not "
	    "\"http://***@h:6379\"");
	expect_kv_error("eventlog", "redis://u:secret@h:0",
	    "t.conf:1: eventlog: invalid redis URL \"redis://***@h:0\" "
	    "(port 0)");
	expect_kv_error("eventlog", "redis://u:se%zzcret@h",
	    "t.conf:1: eventlog: invalid redis URL \"redis://***@h\" "
	    "(a bad %-escape in the password)");
	expect_kv_error("eventlog", "redis://u:a%00b@h",
	    "t.conf:1: eventlog: invalid redis URL \"redis://***@h\" "
	    "(a bad %-escape in the password)");
	expect_kv_error("eventlog", "redis://@h",
	    "t.conf:1: eventlog: invalid redis URL \"redis://***@h\" "
	    "(an empty user and password before \"@\")");
	expect_kv_error("eventlog", "redis://h?db=1",
	    "t.conf:1: eventlog: invalid redis URL \"redis://h?db=1\" "
	    "(no query or fragment is taken)");
	expect_kv_error("eventlog", "unix://relative/r.sock",
	    "t.conf:1: eventlog: invalid redis URL \"unix://relative/r.sock\" "
	    "(expected unix:///PATH (an absolute path))");
	expect_kv_error("eventlog", "unix:///r.sock?db=16",
	    "t.conf:1: eventlog: invalid redis URL \"unix:///r.sock?db=16\" "
	    "(expected ?db=N after the path (N 0 to 15))");
	expect_kv_error("eventlog", "unix:///r.sock?timeout=1",
	    "t.conf:1: eventlog: invalid redis URL "
	    "\"unix:///r.sock?timeout=1\" (expected ?db=N after the path (N 0 "
	    "to 15))");
	expect_error_has("eventlog unix:///0123456789012345678901234567890123"
	    "45678901234567890123456789012345678901234567890123456789012345678"
	    "90123456789012345678901234567890\n",
	    "(the socket path is longer than 107 bytes)");
	expect_kv_error("eventlog", "redis-sentinel://a:1,b:2",
	    "t.conf:1: eventlog: invalid redis URL "
	    "\"redis-sentinel://a:1,b:2\" (expected /MASTER[/DB] after the "
	    "sentinels, MASTER the name the sentinels monitor)");
	expect_kv_error("eventlog", "redis-sentinel://a:1,,b:2/m",
	    "t.conf:1: eventlog: invalid redis URL "
	    "\"redis-sentinel://a:1,,b:2/m\" (sentinel 2: missing host in "
	    "\"\")");
	expect_kv_error("eventlog", "redis-sentinel://a:1,b:2/m/16",
	    "t.conf:1: eventlog: invalid redis URL "
	    "\"redis-sentinel://a:1,b:2/m/16\" (database must be 0 to 15)");
	expect_kv_error("eventlog", "redis-cluster://a:1,b:2/0",
	    "t.conf:1: eventlog: invalid redis URL "
	    "\"redis-cluster://a:1,b:2/0\" (nothing is taken after the nodes "
	    "(a cluster has database 0 only))");
	expect_kv_error("eventlog", "redis-cluster://a:1,",
	    "t.conf:1: eventlog: invalid redis URL "
	    "\"redis-cluster://a:1,\" (expected H1:P1,H2:P2,... (the "
	    "nodes))");
	expect_kv_error("eventlog", "redis-cluster://u:secret@a:0",
	    "t.conf:1: eventlog: invalid redis URL "
	    "\"redis-cluster://***@a:0\" (node 1: port 0)");
	expect_kv_error("eventlog", "redis-sentinel://a:1/m x",
	    "t.conf:1: eventlog: unexpected extra value \"x\"");
	expect_kv_error("eventlog", "redis://",
	    "t.conf:1: eventlog: invalid redis URL \"redis://\" "
	    "(missing host in \"\")");
	expect_kv_error("eventlog", "redis:///1",
	    "t.conf:1: eventlog: invalid redis URL \"redis:///1\" "
	    "(missing host in \"\")");
	expect_kv_error("eventlog", "redis://h:",
	    "t.conf:1: eventlog: invalid redis URL \"redis://h:\" "
	    "(invalid port \"\")");
	expect_kv_error("eventlog", "redis://h:70000",
	    "t.conf:1: eventlog: invalid redis URL \"redis://h:70000\" "
	    "(invalid port \"70000\")");
	expect_kv_error("eventlog", "redis://h:0",
	    "t.conf:1: eventlog: invalid redis URL \"redis://h:0\" "
	    "(port 0)");
	expect_kv_error("eventlog", "redis://h:1/16",
	    "t.conf:1: eventlog: invalid redis URL \"redis://h:1/16\" "
	    "(database must be 0 to 15)");
	expect_kv_error("eventlog", "redis://h/",
	    "t.conf:1: eventlog: invalid redis URL \"redis://h/\" "
	    "(database must be 0 to 15)");
	expect_kv_error("eventlog", "redis://h/x",
	    "t.conf:1: eventlog: invalid redis URL \"redis://h/x\" "
	    "(database must be 0 to 15)");
	expect_kv_error("eventlog", "redis://h/1/2",
	    "t.conf:1: eventlog: invalid redis URL \"redis://h/1/2\" "
	    "(database must be 0 to 15)");
	expect_kv_error("eventlog", "redis://::1:6379",
	    "t.conf:1: eventlog: invalid redis URL \"redis://::1:6379\" "
	    "(invalid address \"::1:6379\" (an IPv6 address goes in "
	    "brackets))");
	expect_kv_error("eventlog", "memory redis://h",
	    "t.conf:1: eventlog: unexpected extra value \"redis://h\"");
}
END_TEST

START_TEST(test_commit)
{
	struct conf	*conf;

	conf = parse_kv("commit", "primary");
	ck_assert_int_eq(conf->commit_replicas, 0);
	conf_free(conf);
	conf = parse_kv("commit", "replicas:1");
	ck_assert_int_eq(conf->commit_replicas, 1);
	conf_free(conf);
	conf = parse_kv("commit", "replicas:16");
	ck_assert_int_eq(conf->commit_replicas, 16);
	conf_free(conf);

	expect_kv_error("commit", "replicas:0", "t.conf:1: commit: expected "
	    "primary or replicas:N (N 1 to 16), not \"replicas:0\"");
	expect_kv_error("commit", "replicas:17", "t.conf:1: commit: expected "
	    "primary or replicas:N (N 1 to 16), not \"replicas:17\"");
	expect_kv_error("commit", "replicas:", "t.conf:1: commit: expected "
	    "primary or replicas:N (N 1 to 16), not \"replicas:\"");
	expect_kv_error("commit", "replicas", "t.conf:1: commit: expected "
	    "primary or replicas:N (N 1 to 16), not \"replicas\"");
	expect_kv_error("commit", "replicas:-1", "t.conf:1: commit: expected "
	    "primary or replicas:N (N 1 to 16), not \"replicas:-1\"");
	expect_kv_error("commit", "all", "t.conf:1: commit: expected "
	    "primary or replicas:N (N 1 to 16), not \"all\"");
}
END_TEST

START_TEST(test_allowed_origins_parse)
{
	static const char *bad[] = {
		"null", "http://", "https://a.example/", "http://a.example/x",
		"http://a.example:0", "http://a.example:65536",
		"http://a.example:", "ftp://a.example", "http://u@a.example",
		"http://a.example?x", "http://[::1", "http://[nope]",
		"//a.example", "http://-a.example",
	};
	struct conf	*conf;
	char		 want[256];
	size_t		 i;

	conf = parse_kv("allowed_origins", "HTTPS://App.Example.COM "
	    "http://x.example:80 https://y.example:443 "
	    "https://z.example:8443 http://[0:0::1]:3000 \"http://q.example\"");
	ck_assert_uint_eq(conf->nallowed_origins, 6);
	ck_assert_str_eq(conf->allowed_origins[0], "https://app.example.com");
	ck_assert_str_eq(conf->allowed_origins[1], "http://x.example");
	ck_assert_str_eq(conf->allowed_origins[2], "https://y.example");
	ck_assert_str_eq(conf->allowed_origins[3], "https://z.example:8443");
	ck_assert_str_eq(conf->allowed_origins[4], "http://[::1]:3000");
	ck_assert_str_eq(conf->allowed_origins[5], "http://q.example");
	ck_assert_ptr_null(conf->allowed_origins[6]);
	conf_free(conf);

	expect_kv_error("allowed_origins", "*",
	    "t.conf:1: allowed_origins: invalid origin \"*\" (no wildcards: "
	    "list each origin)");
	expect_kv_error("allowed_origins", "https://*.example.com",
	    "t.conf:1: allowed_origins: invalid origin "
	    "\"https://*.example.com\" (no wildcards: list each origin)");
	expect_kv_error("allowed_origins", "https://ok.example example.com",
	    "t.conf:1: allowed_origins: invalid origin \"example.com\" "
	    "(expected http://HOST[:PORT] or https://HOST[:PORT])");

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(want, sizeof want, "t.conf:1: allowed_origins: "
		    "invalid origin \"%s\" (expected http://HOST[:PORT] or "
		    "https://HOST[:PORT])", bad[i]);
		expect_kv_error("allowed_origins", bad[i], want);
	}
}
END_TEST

START_TEST(test_origin_allowed_default)
{
	struct conf	*conf = conf_default();

	ck_assert(conf_origin_allowed(conf, "http://localhost"));
	ck_assert(conf_origin_allowed(conf, "http://localhost:3000"));
	ck_assert(conf_origin_allowed(conf, "https://localhost:8443"));
	ck_assert(conf_origin_allowed(conf, "HTTP://LOCALHOST:1"));
	ck_assert(conf_origin_allowed(conf, "http://127.0.0.1"));
	ck_assert(conf_origin_allowed(conf, "http://127.0.0.1:8080"));
	ck_assert(conf_origin_allowed(conf, "http://[::1]"));
	ck_assert(conf_origin_allowed(conf, "https://[::1]:9000"));
	ck_assert(conf_origin_allowed(conf, "http://[0:0:0:0:0:0:0:1]:5"));
	ck_assert(conf_origin_allowed(conf, NULL));

	ck_assert(!conf_origin_allowed(conf, "null"));
	ck_assert(!conf_origin_allowed(conf, ""));
	ck_assert(!conf_origin_allowed(conf, "http://example.com"));
	ck_assert(!conf_origin_allowed(conf, "http://localhost.evil.com"));
	ck_assert(!conf_origin_allowed(conf, "http://127.0.0.1.evil.com"));
	ck_assert(!conf_origin_allowed(conf, "http://evil.com:80@localhost"));
	ck_assert(!conf_origin_allowed(conf, "http://127.0.0.2"));
	ck_assert(!conf_origin_allowed(conf, "http://localhost/"));
	ck_assert(!conf_origin_allowed(conf, "ws://localhost"));
	ck_assert(!conf_origin_allowed(conf, "file://localhost"));
	ck_assert(!conf_origin_allowed(conf, "localhost"));
	conf_free(conf);
}
END_TEST

START_TEST(test_origin_allowed_list)
{
	struct conf	*conf;

	conf = parse_kv("allowed_origins",
	    "https://app.example.com http://dev.example:8080");
	ck_assert(conf_origin_allowed(conf, "https://app.example.com"));
	ck_assert(conf_origin_allowed(conf, "https://APP.example.com"));
	ck_assert(conf_origin_allowed(conf, "HTTPS://app.example.com"));
	ck_assert(conf_origin_allowed(conf, "https://app.example.com:443"));
	ck_assert(conf_origin_allowed(conf, "http://dev.example:8080"));
	ck_assert(conf_origin_allowed(conf, NULL));

	ck_assert(!conf_origin_allowed(conf, "http://app.example.com"));
	ck_assert(!conf_origin_allowed(conf, "https://app.example.com:8443"));
	ck_assert(!conf_origin_allowed(conf, "https://app.example.com/"));
	ck_assert(!conf_origin_allowed(conf, "https://evil.app.example.com"));
	ck_assert(!conf_origin_allowed(conf, "https://app.example.com.evil"));
	ck_assert(!conf_origin_allowed(conf, "http://dev.example"));
	ck_assert(!conf_origin_allowed(conf, "http://dev.example:8081"));
	ck_assert(!conf_origin_allowed(conf, "null"));
	/* A configured list replaces the loopback default. */
	ck_assert(!conf_origin_allowed(conf, "http://localhost"));
	ck_assert(!conf_origin_allowed(conf, "http://127.0.0.1:8080"));
	conf_free(conf);
}
END_TEST

START_TEST(test_quoting)
{
	struct conf	*conf;

	/* Quoted words, quoted keys, escapes, trailing comment. */
	conf = parse_ok("\"endpoint\" \"/a\\\"b\\\\c\" # comment \"x\n");
	ck_assert_str_eq(conf->endpoint, "/a\"b\\c");
	conf_free(conf);

	/* A quoted "#" is not a comment: the value reaches the checker. */
	expect_error("endpoint \"/a#b\"\n",
	    "t.conf:1: endpoint: invalid path \"/a#b\"");
	/* An unquoted "#" starts a comment, even inside a word. */
	conf = parse_ok("endpoint /a#b\n");
	ck_assert_str_eq(conf->endpoint, "/a");
	conf_free(conf);
	/* A comment right after a quoted word. */
	conf = parse_ok("endpoint \"/q\"# comment\n");
	ck_assert_str_eq(conf->endpoint, "/q");
	conf_free(conf);
	/* Quoted braces are words, not blocks. */
	expect_error("endpoint \"{\"\n", "t.conf:1: endpoint: path must "
	    "start with \"/\", not \"{\"");
	expect_error("\"}\"\n", "t.conf:1: unknown directive \"}\"");
	expect_error("\"{\"\n", "t.conf:1: unknown directive \"{\"");
	/* Quoted words may hold spaces and tabs. */
	expect_error("endpoint \"/a\tb\"\n",
	    "t.conf:1: endpoint: invalid path \"/a\tb\"");

	/* Tabs, CRLF, indentation, no final newline. */
	conf = parse_ok("\t listen\t\t[::1]:1  \r\n\r\n  stream_maxlen 500\r\n"
	    "log_level \"warn\"");
	ck_assert_str_eq(conf->listen_host, "::1");
	ck_assert_int_eq(conf->listen_port, 1);
	ck_assert_int_eq(conf->stream_maxlen, 500);
	ck_assert_int_eq(conf->log_level, LOG_LEVEL_WARN);
	conf_free(conf);
}
END_TEST

START_TEST(test_syntax_errors)
{
	expect_error("\n\nendpoint \"/abc\n", "t.conf:3: unterminated "
	    "quoted string");
	expect_error("endpoint \"/abc\nlisten a:1\"\n", "t.conf:1: "
	    "unterminated quoted string");
	expect_error("# x\nendpoint \"/a\\n\"\n", "t.conf:2: invalid escape "
	    "in quoted string (only \\\" and \\\\)");
	expect_error("endpoint \"/a\\\n", "t.conf:1: invalid escape "
	    "in quoted string (only \\\" and \\\\)");
	expect_error("endpoint \"/a\"b\n", "t.conf:1: missing space after "
	    "quoted string");
	expect_error("endpoint /a\"b\"\n", "t.conf:1: unexpected quote "
	    "inside a word");
	expect_error("endpoint /a\001\n", "t.conf:1: invalid character 0x01");
	expect_error("endpoint \"/a\033\"\n",
	    "t.conf:1: invalid character 0x1b");
	expect_error("\n}\n", "t.conf:2: unexpected \"}\"");
	expect_error("{\n}\n", "t.conf:1: \"{\" without a directive");
	expect_error("tool x { y\n}\n", "t.conf:1: unexpected \"{\"");
	expect_error("tool x {\n} y\n", "t.conf:2: \"}\" must be on a line "
	    "of its own");
	expect_error("tool x {\na } b\n}\n", "t.conf:2: unexpected \"}\"");
	expect_error("listen a:1\n\ntool x {\ncommand y\n",
	    "t.conf:3: tool: block not closed (missing \"}\")");
	expect_error("tool x {\nsub {\n}\n",
	    "t.conf:1: tool: block not closed (missing \"}\")");
	expect_error("tool x {\nsub {\ncommand y\n}\n",
	    "t.conf:1: tool: block not closed (missing \"}\")");
	expect_error("tool a {\nb {\nc {\nd {\ne {\nf {\ng {\nh {\ni {\n"
	    "}\n}\n}\n}\n}\n}\n}\n}\n}\n}\n",
	    "t.conf:9: blocks nested too deeply");
}
END_TEST

START_TEST(test_directive_errors)
{
	expect_error("listen a:1\nfoo bar\n",
	    "t.conf:2: unknown directive \"foo\"");
	expect_error("Listen a:1\n", "t.conf:1: unknown directive \"Listen\"");
	expect_error("\n\n\nstream_maxlen\n",
	    "t.conf:4: stream_maxlen: missing value");
	expect_error("allowed_origins # none\n",
	    "t.conf:1: allowed_origins: missing value");
	expect_error("stream_maxlen 5 6\n",
	    "t.conf:1: stream_maxlen: unexpected extra value \"6\"");
	expect_error("builtin_tools on off\n",
	    "t.conf:1: builtin_tools: unexpected extra value \"off\"");
	expect_error("stream_maxlen 10\n# c\nstream_maxlen 10\n",
	    "t.conf:3: duplicate stream_maxlen (first set on line 1)");
	expect_error("allowed_origins http://a\nallowed_origins http://b\n",
	    "t.conf:2: duplicate allowed_origins (first set on line 1)");
	expect_error("eventlog memory\neventlog memory\n",
	    "t.conf:2: duplicate eventlog (first set on line 1)");
	expect_error("stream_ttl 10 {\nfoo\n}\n",
	    "t.conf:1: stream_ttl does not take a block");
	expect_error("endpoint /x {\nfoo\n}\n",
	    "t.conf:2: unknown directive \"foo\"");
	/* The first error in the file is the one reported. */
	expect_error("stream_maxlen 0\nfoo\n",
	    "t.conf:1: stream_maxlen: 0 out of range (1 to 1000000)");
}
END_TEST

START_TEST(test_tool_block)
{
	struct conf	*conf;

	/* The block's own lines are checked with the tool table. */
	expect_error("listen 127.0.0.1:1\n"
	    "\n"
	    "tool echo2 {\n"
	    "\tcommand \"/bin/echo\" \"{}\" # a comment }\n"
	    "\targs {\n"
	    "\t\tx 1\n"
	    "\t}\n"
	    "\n"
	    "}\n",
	    "t.conf:4: unknown directive \"command\"");
	expect_error("tool empty {\n}\n",
	    "t.conf:1: tool empty: missing \"exec PROGRAM [ARG...]\"");
	expect_error("tool x\n",
	    "t.conf:1: tool: expected \"tool NAME { ... }\"");
	expect_error("tool {\n}\n",
	    "t.conf:1: tool: expected \"tool NAME { ... }\"");
	expect_error("tool a b {\n}\n",
	    "t.conf:1: tool: expected \"tool NAME { ... }\"");
	/* Errors earlier in the file come first. */
	expect_error("foo\ntool x {\n}\n",
	    "t.conf:1: unknown directive \"foo\"");

	/* The details are in test_exec_conf.c. */
	conf = parse_ok("tool x {\nexec /bin/true\n}\n");
	ck_assert_uint_eq(conf->ntools, 1);
	ck_assert_str_eq(conf->tools[0].name, "x");
	conf_free(conf);
}
END_TEST

/* auth { }: the syntax of issue 14, its checks, and the tool's scope. */
START_TEST(test_auth_block)
{
	struct conf	*conf;
	char		 text[4096], cwd[1024], secret[1200];
	FILE		*f;

	ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
	snprintf(secret, sizeof secret, "%s/build/test_conf.secret", cwd);
	f = fopen(secret, "w");
	ck_assert_ptr_nonnull(f);
	fputs("s3cret\nsecond line\n", f);
	fclose(f);
	snprintf(text, sizeof text,
	    "auth {\n"
	    "    resource https://mcp.example.com/mcp        # canonical\n"
	    "    authorization_server https://auth.example.com "
	    "https://b.example.com\n"
	    "    issuer https://auth.example.com              # JWT iss\n"
	    "    jwks_file %s\n"
	    "    jwks_uri https://auth.example.com/jwks\n"
	    "    introspection https://auth.example.com/introspect client_id "
	    "%s\n"
	    "    scopes mcp read\n"
	    "    token_file %s\n"
	    "}\n"
	    "tool t {\n    exec /bin/true\n    scope deploy\n}\n",
	    secret, secret, secret);
	conf = parse_ok(text);
	ck_assert_ptr_nonnull(conf->auth);
	ck_assert_str_eq(conf->auth->resource, "https://mcp.example.com/mcp");
	ck_assert_uint_eq(conf->auth->nauthorization_servers, 2);
	ck_assert_str_eq(conf->auth->authorization_servers[1],
	    "https://b.example.com");
	ck_assert_str_eq(conf->auth->issuer, "https://auth.example.com");
	ck_assert_str_eq(conf->auth->client_id, "client_id");
	ck_assert_str_eq(conf->auth->client_secret, "s3cret");
	ck_assert_uint_eq(conf->auth->nscopes, 2);
	ck_assert_str_eq(conf->auth->scopes[1], "read");
	ck_assert_int_eq(conf->auth->leeway, 60);
	ck_assert_int_eq(conf->auth->max_token, 8192);
	ck_assert_str_eq(conf->tools[0].scope, "deploy");
	conf_free(conf);

	/* issuer defaults to the first authorization server. */
	conf = parse_ok("auth {\nresource http://127.0.0.1/mcp\n"
	    "authorization_server http://127.0.0.1:9/as\n"
	    "introspection http://127.0.0.1:9/i\n}\n");
	ck_assert_str_eq(conf->auth->issuer, "http://127.0.0.1:9/as");
	ck_assert_ptr_null(conf->auth->client_id);
	ck_assert_ptr_null(conf_warning(conf));
	conf_free(conf);

	expect_error("auth {\nauthorization_server https://a\n"
	    "introspection https://a/i\n}\n",
	    "t.conf:1: auth: missing \"resource URI\"");
	expect_error("auth {\nresource https://r\nintrospection https://a/i\n"
	    "}\n", "t.conf:1: auth: missing \"authorization_server URL...\"");
	expect_error("auth {\nresource https://r\nauthorization_server "
	    "https://a\n}\n", "t.conf:1: auth: no way to check a token (set "
	    "jwks_file, jwks_uri, introspection or token_file)");
	expect_error("auth {\nresource ftp://r\n}\n", "t.conf:2: resource: "
	    "\"ftp://r\" is not an http:// or https:// URL");
	expect_error("auth {\nresource \"https://r#x\"\n}\n", "t.conf:2: "
	    "resource: invalid URL \"https://r#x\" (a host is needed, no "
	    "fragment, at most 2048 bytes)");
	expect_error("auth {\nresource https://r\nresource https://s\n}\n",
	    "t.conf:3: duplicate resource (first set on line 2)");
	expect_error("auth {\nscopes a \"b c\"\n}\n", "t.conf:2: scopes: "
	    "invalid scope \"b c\" (printable ASCII, no blank, quote or "
	    "backslash, at most 256)");
	expect_error("auth {\njwks_file relative.json\n}\n", "t.conf:2: "
	    "jwks_file: \"relative.json\" is not an absolute path");
	expect_error("auth {\nintrospection https://a/i client\n}\n",
	    "t.conf:2: introspection: expected \"introspection URL "
	    "[CLIENT_ID CLIENT_SECRET_FILE]\"");
	expect_error("auth {\nleeway 601\n}\n",
	    "t.conf:2: leeway: 601 out of range (0 to 600)");
	expect_error("auth x {\n}\n", "t.conf:1: auth: expected \"auth {\"");
	expect_error("auth\n", "t.conf:1: auth: expected \"auth { ... }\"");
	expect_error("auth {\nresource https://r\nauthorization_server "
	    "https://a\nintrospection https://a/i\n}\nauth {\n}\n",
	    "t.conf:6: duplicate auth (first set on line 1)");
	expect_error("tool t {\nexec /bin/true\nscope \"a b\"\n}\n",
	    "t.conf:3: scope: invalid scope \"a b\" (printable ASCII, no "
	    "blank, quote or backslash, at most 256)");

	/* Exec tools open to the network without auth are warned about. */
	conf = parse_ok("listen 0.0.0.0:1\ntool t {\nexec /bin/true\n}\n");
	ck_assert_ptr_nonnull(conf_warning(conf));
	conf_free(conf);
	conf = parse_ok("listen 127.0.0.1:1\ntool t {\nexec /bin/true\n}\n");
	ck_assert_ptr_null(conf_warning(conf));
	conf_free(conf);
	unlink(secret);
}
END_TEST

/*
 * The block window leaves room for as much again in flight (issue 22): at
 * most half of stream_maxlen, half of it when unset (at most 256), and a
 * stream_maxlen too small for a window of one is refused.
 */
START_TEST(test_window_maxlen)
{
	static const long long	defaults[][2] = {
		{ 32, 16 }, { 64, 32 }, { 100, 50 }, { 300, 150 },
		{ 512, 256 }, { 1000, 256 }, { 100000, 256 }, { 2, 1 },
		{ 3, 1 }
	};
	struct conf	*conf;
	char		 text[64];
	size_t		 i;

	for (i = 0; i < sizeof defaults / sizeof defaults[0]; i++) {
		snprintf(text, sizeof text, "listen a:1\nstream_maxlen %lld\n",
		    defaults[i][0]);
		conf = parse_ok(text);
		ck_assert_msg(conf->stream_window == defaults[i][1],
		    "stream_maxlen %lld: window %lld, want %lld",
		    defaults[i][0], conf->stream_window, defaults[i][1]);
		conf_free(conf);
	}
	/* stream_window set too close to stream_maxlen: its line is named. */
	expect_error("stream_window 51\nstream_maxlen 100\n",
	    "t.conf:1: stream_window (51) leaves too little room for events "
	    "in flight: it may be at most half of stream_maxlen (100), 50");
	expect_error("stream_maxlen 100\n\nstream_window 100\n",
	    "t.conf:3: stream_window (100) leaves too little room for events "
	    "in flight: it may be at most half of stream_maxlen (100), 50");
	expect_error("stream_maxlen 32\nstream_window 17\n",
	    "t.conf:2: stream_window (17) leaves too little room for events "
	    "in flight: it may be at most half of stream_maxlen (32), 16");
	expect_error("stream_window 501\n",
	    "t.conf:1: stream_window (501) leaves too little room for events "
	    "in flight: it may be at most half of stream_maxlen (1000), 500");
	/* stream_maxlen with no room at all: its line is named. */
	expect_error("listen a:1\nstream_maxlen 1\n",
	    "t.conf:2: stream_maxlen (1) leaves no room for events in "
	    "flight: stream_window may be at most half of it and is at "
	    "least 1, so stream_maxlen must be at least 2");
	expect_error("stream_maxlen 1\nstream_window 1\n",
	    "t.conf:1: stream_maxlen (1) leaves no room for events in "
	    "flight: stream_window may be at most half of it and is at "
	    "least 1, so stream_maxlen must be at least 2");

	conf = parse_ok("stream_maxlen 100\nstream_window 50\n");
	ck_assert_int_eq(conf->stream_window, 50);
	conf_free(conf);
	conf = parse_ok("stream_window 500\n");
	ck_assert_int_eq(conf->stream_window, 500);
	conf_free(conf);
	conf = parse_ok("stream_maxlen 2\nstream_window 1\n");
	conf_free(conf);
}
END_TEST

/*
 * A reload keeps the running stream_maxlen: the new file's window is
 * checked against it, and an unset one is half of it (at most 256).
 */
START_TEST(test_window_reload)
{
	struct conf	*old, *new;
	const char	*names[4];
	size_t		 n;
	char		*cause = NULL;

	old = parse_ok("stream_maxlen 64\n");
	ck_assert_int_eq(old->stream_window, 32);

	new = parse_ok("stream_maxlen 1000\n");
	ck_assert_int_eq(new->stream_window, 256);
	ck_assert_int_eq(conf_keep_restart_only(new, old, names, 4, &n,
	    &cause), 0);
	ck_assert_ptr_null(cause);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(names[0], "stream_maxlen");
	ck_assert_int_eq(new->stream_maxlen, 64);
	ck_assert_int_eq(new->stream_window, 32);
	conf_free(new);

	new = parse_ok("stream_maxlen 1000\nstream_window 33\n");
	ck_assert_int_eq(conf_keep_restart_only(new, old, names, 4, &n,
	    &cause), -1);
	ck_assert_str_eq(cause, "t.conf:2: stream_window (33) leaves too "
	    "little room for events in flight: it may be at most half of the "
	    "running stream_maxlen (64), 32");
	free(cause);
	cause = NULL;
	conf_free(new);

	new = parse_ok("stream_window 32\n");
	ck_assert_int_eq(conf_keep_restart_only(new, old, names, 4, &n,
	    &cause), 0);
	ck_assert_int_eq(new->stream_window, 32);
	conf_free(new);
	conf_free(old);
}
END_TEST

START_TEST(test_load)
{
	struct conf	*conf;
	char		*cause = NULL, path[] = "/tmp/test_conf.XXXXXX";
	char		 want[256];
	FILE		*f;
	int		 fd;

	conf = conf_load("/nonexistent/mcpd.conf", &cause);
	ck_assert_ptr_null(conf);
	ck_assert_str_eq(cause, "/nonexistent/mcpd.conf: No such file or "
	    "directory");
	free(cause);
	cause = NULL;

	conf = conf_load("/tmp", &cause);
	ck_assert_ptr_null(conf);
	ck_assert_str_eq(cause, "/tmp: Is a directory");
	free(cause);
	cause = NULL;

	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	fputs("# test\nlisten [::1]:9\nsse_keepalive 0\n", f);
	fclose(f);
	conf = conf_load(path, &cause);
	ck_assert_ptr_null(conf);
	snprintf(want, sizeof want, "%s:3: sse_keepalive: 0 out of range "
	    "(1 to 3600)", path);
	ck_assert_str_eq(cause, want);
	free(cause);
	cause = NULL;

	f = fopen(path, "w");
	fputs("listen [::1]:9\nsse_keepalive 1\n", f);
	fclose(f);
	conf = conf_load(path, &cause);
	ck_assert_ptr_nonnull(conf);
	ck_assert_str_eq(conf->path, path);
	ck_assert_str_eq(conf->listen_host, "::1");
	ck_assert_int_eq(conf->sse_keepalive, 1);
	conf_free(conf);

	f = fopen(path, "w");
	fwrite("listen a:1\n\0x\n", 1, 14, f);
	fclose(f);
	conf = conf_load(path, &cause);
	ck_assert_ptr_null(conf);
	snprintf(want, sizeof want, "%s: file contains a NUL byte", path);
	ck_assert_str_eq(cause, want);
	free(cause);

	unlink(path);
}
END_TEST

START_TEST(test_example_file)
{
	struct conf	*conf;
	char		*file, *gen, *cause = NULL;
	size_t		 flen, glen;
	FILE		*f;

	gen = generate(conf_print_example, &glen);
	file = read_file(EXAMPLE_PATH, &flen);
	ck_assert_msg(file != NULL, "cannot read " EXAMPLE_PATH
	    " (run the tests from the repository root)");
	if (flen != glen || memcmp(file, gen, glen) != 0) {
		if ((f = fopen(EXAMPLE_NEW, "w")) != NULL) {
			fwrite(gen, 1, glen, f);
			fclose(f);
		}
		ck_abort_msg(EXAMPLE_PATH " differs from conf_print_example(); "
		    "the generated text is in " EXAMPLE_NEW);
	}
	free(file);
	free(gen);

	conf = conf_load(EXAMPLE_PATH, &cause);
	ck_assert_msg(conf != NULL, "example does not parse: %s", cause);
	ck_assert_str_eq(conf->listen_host, "127.0.0.1");
	ck_assert_int_eq(conf->listen_port, 8080);
	ck_assert_str_eq(conf->endpoint, "/mcp");
	ck_assert_int_eq(conf->eventlog, CONF_EVENTLOG_MEMORY);
	ck_assert_int_eq(conf->builtin_tools, 1);
	/* One harmless active tool, the rest commented out. */
	ck_assert_uint_eq(conf->ntools, 1);
	ck_assert_str_eq(conf->tools[0].name, "date");
	conf->builtin_tools = 0;
	check_defaults(conf);
	conf_free(conf);
}
END_TEST

/* Every "#NAME VALUE" line of the example, uncommented, gives the defaults. */
START_TEST(test_example_uncommented)
{
	struct conf	*conf;
	char		*gen, *p, *line, *cause = NULL;
	size_t		 glen;

	gen = generate(conf_print_example, &glen);
	for (line = gen; *line != '\0'; line = p + 1) {
		if ((p = strchr(line, '\n')) == NULL)
			break;
		if (line[0] == '#' && line[1] >= 'a' && line[1] <= 'z')
			line[0] = ' ';
	}
	conf = conf_parse_string(gen, "example", &cause);
	ck_assert_msg(conf != NULL, "uncommented example: %s", cause);
	ck_assert_int_eq(conf->builtin_tools, 1);
	ck_assert_uint_eq(conf->nallowed_origins, 2);
	ck_assert_str_eq(conf->allowed_origins[0], "https://app.example.com");
	conf->builtin_tools = 0;
	/* Its examples: tracing on, one resource attribute. */
	ck_assert_str_eq(conf->otel_endpoint,
	    "http://127.0.0.1:4318/v1/traces");
	ck_assert_uint_eq(conf->notel_resource, 1);
	conf->nallowed_origins = 0;	/* check_defaults wants none */
	free(conf->allowed_origins[0]);
	free(conf->allowed_origins[1]);
	conf->allowed_origins[0] = NULL;
	check_defaults(conf);
	conf_free(conf);
	free(gen);
}
END_TEST

/* The tracing directives: the endpoint, headers from files, the ratio. */
START_TEST(test_otel)
{
	struct conf	*conf;
	char		 path[64], text[256];
	FILE		*f;

	conf = parse_ok("otel_endpoint none\n");
	ck_assert_ptr_null(conf->otel_endpoint);
	conf_free(conf);
	/* An empty path or "/" gets /v1/traces; any other is kept. */
	conf = parse_ok("otel_endpoint http://collector:4318\n");
	ck_assert_str_eq(conf->otel_endpoint,
	    "http://collector:4318/v1/traces");
	conf_free(conf);
	conf = parse_ok("otel_endpoint https://c.example/\n");
	ck_assert_str_eq(conf->otel_endpoint, "https://c.example/v1/traces");
	conf_free(conf);
	conf = parse_ok("otel_endpoint http://c:4318/otlp/v1/traces?x=1\n");
	ck_assert_str_eq(conf->otel_endpoint,
	    "http://c:4318/otlp/v1/traces?x=1");
	conf_free(conf);
	expect_error_has("otel_endpoint ftp://c\n", "not none, nor");
	expect_error_has("otel_endpoint http://u:p@c/\n", "credentials");
	expect_error_has("otel_endpoint http:///v1/traces\n", "a host");

	conf = parse_ok("otel_sample 0.25\notel_instance_id pod-7\n"
	    "otel_resource deployment.environment.name=prod k=v\n");
	ck_assert(conf->otel_sample == 0.25);
	ck_assert_str_eq(conf->otel_instance_id, "pod-7");
	ck_assert_uint_eq(conf->notel_resource, 2);
	ck_assert_str_eq(conf->otel_resource[1], "k=v");
	conf_free(conf);
	expect_error_has("otel_sample 1.5\n", "ratio from 0 to 1");
	expect_error_has("otel_sample -0\n", "ratio from 0 to 1");
	expect_error_has("otel_sample nan\n", "ratio from 0 to 1");
	expect_error_has("otel_resource novalue\n", "KEY=VALUE");
	expect_error_has("otel_resource b@d=1\n", "attribute name");

	/* A header's value is its file's first line, kept with its name. */
	snprintf(path, sizeof path, "/tmp/mcpd-unit-otel-%ld", (long)getpid());
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("Bearer s3cret\nignored\n", f);
	fclose(f);
	snprintf(text, sizeof text, "otel_header Authorization %s\n"
	    "otel_header X-Scope-OrgID %s\n", path, path);
	conf = parse_ok(text);
	ck_assert_uint_eq(conf->notel_headers, 2);
	ck_assert_str_eq(conf->otel_headers[0], "Authorization: Bearer s3cret");
	ck_assert_str_eq(conf->otel_headers[1], "X-Scope-OrgID: Bearer s3cret");
	conf_free(conf);
	snprintf(text, sizeof text, "otel_header Authorization %s\n"
	    "otel_header authorization %s\n", path, path);
	expect_error_has(text, "duplicate header");
	snprintf(text, sizeof text, "otel_header Content-Type %s\n", path);
	expect_error_has(text, "set by mcpd");
	snprintf(text, sizeof text, "otel_header Bad:Name %s\n", path);
	expect_error_has(text, "not a header name");
	expect_error_has("otel_header X-Key /nonexistent/mcpd\n",
	    "No such file");
	expect_error_has("otel_header X-Key\n", "NAME FILE");
	/* The value is never in a cause: an empty file says so bare. */
	f = fopen(path, "w");
	fclose(f);
	snprintf(text, sizeof text, "otel_header X-Key %s\n", path);
	expect_error_has(text, "one line of 1 to");
	unlink(path);
}
END_TEST

START_TEST(test_generated_text)
{
	char	*ex, *help, key[64];
	size_t	 exlen, helplen, i;

	ex = generate(conf_print_example, &exlen);
	help = generate(conf_print_help, &helplen);
	for (i = 0; i < sizeof all_keys / sizeof all_keys[0]; i++) {
		snprintf(key, sizeof key, "\n# %s ", all_keys[i]);
		ck_assert_msg(strstr(ex, key) != NULL, "example lacks %s",
		    all_keys[i]);
		snprintf(key, sizeof key, "\n  %s ", all_keys[i]);
		ck_assert_msg(strstr(help, key) != NULL, "help lacks %s",
		    all_keys[i]);
	}
	/* Active lines and commented defaults. */
	ck_assert_ptr_nonnull(strstr(ex, "\nlisten 127.0.0.1:8080\n"));
	ck_assert_ptr_nonnull(strstr(ex, "\nendpoint /mcp\n"));
	ck_assert_ptr_nonnull(strstr(ex, "\neventlog memory\n"));
	ck_assert_ptr_nonnull(strstr(ex, "\nbuiltin_tools on\n"));
	ck_assert_ptr_nonnull(strstr(ex, "\n#stream_maxlen 1000\n"));
	ck_assert_ptr_nonnull(strstr(ex, "\n#sse_high_watermark 256k\n"));
	ck_assert_ptr_nonnull(strstr(ex, "\n#max_body 4m\n"));
	ck_assert_ptr_nonnull(strstr(ex, "Default: 256k (range 4k to 64m)"));
	ck_assert_ptr_nonnull(strstr(help, "Default: 4m (range 1k to 1g)"));
	free(ex);
	free(help);
}
END_TEST

static Suite *
conf_suite(void)
{
	Suite	*s = suite_create("conf");
	TCase	*tc = tcase_create("conf");

	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_all_keys);
	tcase_add_test(tc, test_integer);
	tcase_add_test(tc, test_size);
	tcase_add_test(tc, test_seconds);
	tcase_add_test(tc, test_milliseconds);
	tcase_add_test(tc, test_bool_enum);
	tcase_add_test(tc, test_listen_good);
	tcase_add_test(tc, test_listen_bad);
	tcase_add_test(tc, test_endpoint);
	tcase_add_test(tc, test_eventlog_good);
	tcase_add_test(tc, test_eventlog_bad);
	tcase_add_test(tc, test_eventlog_forms);
	tcase_add_test(tc, test_eventlog_credentials);
	tcase_add_test(tc, test_eventlog_reload);
	tcase_add_test(tc, test_commit);
	tcase_add_test(tc, test_allowed_origins_parse);
	tcase_add_test(tc, test_origin_allowed_default);
	tcase_add_test(tc, test_origin_allowed_list);
	tcase_add_test(tc, test_quoting);
	tcase_add_test(tc, test_syntax_errors);
	tcase_add_test(tc, test_directive_errors);
	tcase_add_test(tc, test_tool_block);
	tcase_add_test(tc, test_auth_block);
	tcase_add_test(tc, test_window_maxlen);
	tcase_add_test(tc, test_window_reload);
	tcase_add_test(tc, test_load);
	tcase_add_test(tc, test_example_file);
	tcase_add_test(tc, test_example_uncommented);
	tcase_add_test(tc, test_generated_text);
	tcase_add_test(tc, test_otel);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(conf_suite)

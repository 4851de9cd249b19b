/* Unit tests for mcp.c: the protocol revisions and the logging levels. */
#include "unit.h"

#include "mcp.h"

#define V_OLD		"2025-03-26"
#define V_MID		"2025-06-18"
#define V_NEW		"2025-11-25"

START_TEST(test_versions)
{
	size_t	n;

	ck_assert_int_eq(mcp_version_supported(V_OLD), 1);
	ck_assert_int_eq(mcp_version_supported(V_MID), 1);
	ck_assert_int_eq(mcp_version_supported(V_NEW), 1);
	ck_assert_int_eq(mcp_version_supported("2024-11-05"), 0);
	ck_assert_int_eq(mcp_version_supported("2025-06-19"), 0);
	ck_assert_int_eq(mcp_version_supported("2026-01-01"), 0);
	ck_assert_int_eq(mcp_version_supported(""), 0);
	ck_assert_int_eq(mcp_version_supported("2025-06-18 "), 0);
	ck_assert_int_eq(mcp_version_supported("2025-06-1"), 0);
	ck_assert_int_eq(mcp_version_supported("latest"), 0);

	/* The list: oldest first, the preferred last, NULL-terminated. */
	for (n = 0; mcp_versions[n] != NULL; n++)
		;
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(mcp_versions[0], V_OLD);
	ck_assert_str_eq(mcp_versions[1], V_MID);
	ck_assert_str_eq(mcp_versions[2], V_NEW);

	ck_assert_int_eq(mcp_version_at_least(V_NEW, V_NEW), 1);
	ck_assert_int_eq(mcp_version_at_least(V_NEW, V_OLD), 1);
	ck_assert_int_eq(mcp_version_at_least(V_NEW, V_MID), 1);
	ck_assert_int_eq(mcp_version_at_least(V_MID, V_OLD), 1);
	ck_assert_int_eq(mcp_version_at_least(V_MID, V_MID), 1);
	ck_assert_int_eq(mcp_version_at_least(V_OLD, V_MID), 0);
	ck_assert_int_eq(mcp_version_at_least(V_OLD, V_NEW), 0);
	ck_assert_int_eq(mcp_version_at_least(V_MID, V_NEW), 0);
}
END_TEST

START_TEST(test_log_levels)
{
	static const char	*names[] = {
		"debug", "info", "notice", "warning", "error", "critical",
		"alert", "emergency"
	};
	int			 i;

	for (i = 0; i < 8; i++) {
		ck_assert_int_eq(mcp_log_level_parse(names[i]), i);
		ck_assert_str_eq(mcp_log_level_name(i), names[i]);
		ck_assert_int_eq(mcp_log_level_parse(
		    mcp_log_level_name(i)), i);
	}
	ck_assert_int_eq(mcp_log_level_parse("warn"), -1);
	ck_assert_int_eq(mcp_log_level_parse("INFO"), -1);
	ck_assert_int_eq(mcp_log_level_parse(""), -1);
	ck_assert_int_eq(mcp_log_level_parse("emergency "), -1);
	ck_assert_int_eq(mcp_log_level_parse("fatal"), -1);
	/* Out of range falls back to a valid name. */
	ck_assert_str_eq(mcp_log_level_name(-1), "info");
	ck_assert_str_eq(mcp_log_level_name(8), "info");
}
END_TEST

static Suite *
mcp_suite(void)
{
	Suite	*s = suite_create("mcp");
	TCase	*tc;

	tc = tcase_create("tables");
	tcase_add_test(tc, test_versions);
	tcase_add_test(tc, test_log_levels);
	suite_add_tcase(s, tc);
	return (s);
}

UNIT_MAIN(mcp_suite)

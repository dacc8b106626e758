/* test-units.c — size parsing and formatting. */
#include "config.h"

#include <glib.h>

#include <stowage/units.h>

#include "testutil.h"

static void
test_parse_valid(void)
{
  static const struct {
    const char *text;
    guint64 bytes;
  } cases[] = {
    { "16GiB", G_GUINT64_CONSTANT(17179869184) },
    { "16 GiB", G_GUINT64_CONSTANT(17179869184) },
    { "16gib", G_GUINT64_CONSTANT(17179869184) },
    { "1.5 GB", G_GUINT64_CONSTANT(1500000000) },
    { "1.5GiB", G_GUINT64_CONSTANT(1610612736) },
    { "512MiB", G_GUINT64_CONSTANT(536870912) },
    { "4096", 4096 },
    { "4096B", 4096 },
    { " 7 b ", 7 },
    { "0", 0 },
    { "1kB", 1000 },
    { "1KB", 1000 },
    { "1KiB", 1024 },
    { "0.3KiB", 307 },     /* 307.2, truncated */
    { "2 TB", G_GUINT64_CONSTANT(2000000000000) },
    { "240GiB", G_GUINT64_CONSTANT(257698037760) },
    { "1PiB", G_GUINT64_CONSTANT(1125899906842624) },
    { "8PiB", G_GUINT64_CONSTANT(1) << 53 },            /* the largest: what the formats hold */
    { "8192TiB", G_GUINT64_CONSTANT(1) << 53 },
    { "9007199254740992", G_GUINT64_CONSTANT(1) << 53 },
    { "9007199254740991", (G_GUINT64_CONSTANT(1) << 53) - 1 },
    { ".5MiB", 524288 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    guint64 v = 1;
    GError *error = NULL;
    g_assert_true(stw_size_parse(cases[i].text, &v, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(v, ==, cases[i].bytes);
  }
}

static void
test_parse_invalid(void)
{
  static const struct {
    const char *text;
    int code;
    const char *needle;
  } cases[] = {
    { "", STW_UNITS_ERROR_SYNTAX, "expected a number of bytes" },
    { "GiB", STW_UNITS_ERROR_SYNTAX, "'GiB' is not a size" },
    { "abc", STW_UNITS_ERROR_SYNTAX, "KiB, MiB, GiB" },
    { "16G", STW_UNITS_ERROR_SYNTAX, "'16G' is not a size" },
    { "16 GiBs", STW_UNITS_ERROR_SYNTAX, "not a size" },
    { "1e9", STW_UNITS_ERROR_SYNTAX, "not a size" },
    { "1.2.3MB", STW_UNITS_ERROR_SYNTAX, "not a size" },
    { "12 34", STW_UNITS_ERROR_SYNTAX, "not a size" },
    { "-1GiB", STW_UNITS_ERROR_RANGE, "cannot be negative" },
    { "8388609TiB", STW_UNITS_ERROR_RANGE, "too large" },
    { "99999999999999999999", STW_UNITS_ERROR_RANGE, "too large" },
    { "9007199254740993", STW_UNITS_ERROR_RANGE, "at most 2^53 bytes (8 PiB)" },
    { "8PiB 1", STW_UNITS_ERROR_SYNTAX, "not a size" },
    { "8.0000001PiB", STW_UNITS_ERROR_RANGE, "too large" },
    { "9PiB", STW_UNITS_ERROR_RANGE, "too large" },
    { "9223372036854775808", STW_UNITS_ERROR_RANGE, "too large" },
    { "9223372036854775807", STW_UNITS_ERROR_RANGE, "too large" },
    { "1EiB", STW_UNITS_ERROR_SYNTAX, "not a size" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    guint64 v = 42;
    GError *error = NULL;
    g_assert_false(stw_size_parse(cases[i].text, &v, &error));
    g_assert_error(error, STW_UNITS_ERROR, cases[i].code);
    stw_assert_error_contains(error, cases[i].needle);
    g_assert_cmpuint(v, ==, 42); /* untouched on error */
  }
}

static void
test_format(void)
{
  static const struct {
    guint64 bytes;
    const char *text;
  } cases[] = {
    { 0, "0 B" },
    { 1023, "1023 B" },
    { 1024, "1.00 KiB" },
    { 1536, "1.50 KiB" },
    { G_GUINT64_CONSTANT(17179869184), "16.00 GiB" },
    { G_GUINT64_CONSTANT(1742157312), "1.62 GiB" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *s = stw_size_format(cases[i].bytes);
    g_assert_cmpstr(s, ==, cases[i].text);
  }
  /* what is printed parses back to within the printed precision */
  g_autofree char *s = stw_size_format(G_GUINT64_CONSTANT(17179869184));
  guint64 v;
  g_assert_true(stw_size_parse(s, &v, NULL));
  g_assert_cmpuint(v, ==, G_GUINT64_CONSTANT(17179869184));
}

static void
test_duration(void)
{
  static const struct {
    guint64 ns;
    const char *text;
  } cases[] = {
    { 850, "850 ns" }, { 12300, "12.3 us" }, { 4560000, "4.56 ms" }, { 1234000000, "1.234 s" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *s = stw_duration_format(cases[i].ns);
    g_assert_cmpstr(s, ==, cases[i].text);
  }
}

static void
test_size_lists(void)
{
  GArray *a = NULL;
  GError *error = NULL;
  g_assert_true(stw_size_list_parse("8GiB..24GiB:8GiB", &a, &error));
  g_assert_cmpuint(a->len, ==, 3);
  g_assert_cmpuint(g_array_index(a, guint64, 2), ==, 24 * STW_GiB);
  g_array_unref(a);
  g_assert_true(stw_size_list_parse("8GiB, 16GiB", &a, &error));
  g_assert_cmpuint(a->len, ==, 2);
  g_array_unref(a);
  static const struct {
    const char *text, *needle;
  } bad[] = {
    { "24GiB..8GiB:8GiB", "the range is inverted" },
    { "8GiB..24GiB:0", "the step is zero" },
    { "8GiB..24GiB", "the range has no :STEP" },
    { "8GiB..9TiB:1MiB", "more than 1000 points" },
    { "8GiB,,16GiB", "is not a size" },
    { "0..8GiB:4GiB", "a budget of zero" },
    { "eight..16GiB:8GiB", "'eight' is not a size" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_assert_false(stw_size_list_parse(bad[i].text, &a, &error));
    g_assert_true(error->domain == STW_UNITS_ERROR);
    stw_assert_error_contains(error, bad[i].needle);
  }
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/units/parse-valid", test_parse_valid);
  g_test_add_func("/units/parse-invalid", test_parse_invalid);
  g_test_add_func("/units/format", test_format);
  g_test_add_func("/units/duration", test_duration);
  g_test_add_func("/units/size-lists", test_size_lists);
  return g_test_run();
}

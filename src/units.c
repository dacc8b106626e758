/* units.c — see units.h for the accepted grammar. */
#include "config.h"

#include <stowage/units.h>

#include <string.h>

G_DEFINE_QUARK(stw-units-error-quark, stw_units_error)

const char stw_size_units_help[] =
    "a number of bytes, optionally with a fraction and a unit: B; binary KiB, MiB, GiB, "
    "TiB, PiB (powers of 1024); decimal kB, MB, GB, TB, PB (powers of 1000); "
    "e.g. 16GiB, 1.5 GB, 512MiB, 4096";

typedef struct {
  const char *name;     /* lower case */
  guint64 multiplier;   /* bytes per unit */
} SizeUnit;

static const SizeUnit size_units[] = {
  { "", 1 },        { "b", 1 },
  { "kib", STW_KiB }, { "mib", STW_MiB }, { "gib", STW_GiB }, { "tib", STW_TiB },
  { "pib", STW_TiB * 1024 },
  { "kb", 1000ull }, { "mb", 1000000ull }, { "gb", 1000000000ull },
  { "tb", 1000000000000ull }, { "pb", 1000000000000000ull },
};

/* The largest size stowage's files hold (STW_TRACE_MAX_INT), so that every size the command line
 * accepts can be written: 2^53 bytes, 8 PiB. */
static const guint64 size_max = G_GUINT64_CONSTANT(1) << 53;

static gboolean
syntax_error(const char *text, GError **error)
{
  g_set_error(error, STW_UNITS_ERROR, STW_UNITS_ERROR_SYNTAX,
              "'%s' is not a size: expected %s", text, stw_size_units_help);
  return FALSE;
}

gboolean
stw_size_parse(const char *text, guint64 *bytes_out, GError **error)
{
  const char *p = text;
  guint64 whole = 0, frac = 0, frac_scale = 1;
  gboolean any_digit = FALSE;

  g_return_val_if_fail(text != NULL && bytes_out != NULL, FALSE);
  while (g_ascii_isspace(*p))
    p++;
  if (*p == '-') {
    g_set_error(error, STW_UNITS_ERROR, STW_UNITS_ERROR_RANGE,
                "'%s' is not a size: sizes cannot be negative", text);
    return FALSE;
  }
  if (*p == '+')
    p++;
  for (; g_ascii_isdigit(*p); p++) {
    if (whole > (G_MAXUINT64 - 9) / 10) /* the digits alone overflow */
      goto too_large;
    whole = whole * 10 + (guint64)(*p - '0');
    any_digit = TRUE;
  }
  if (*p == '.') {
    p++;
    for (; g_ascii_isdigit(*p); p++) {
      any_digit = TRUE;
      if (frac_scale < G_GUINT64_CONSTANT(1000000000000)) { /* 12 digits are plenty */
        frac = frac * 10 + (guint64)(*p - '0');
        frac_scale *= 10;
      }
    }
  }
  if (!any_digit)
    return syntax_error(text, error);
  while (g_ascii_isspace(*p))
    p++;

  const char *unit_start = p;
  while (g_ascii_isalpha(*p))
    p++;
  size_t unit_len = (size_t)(p - unit_start);
  while (g_ascii_isspace(*p))
    p++;
  if (*p != '\0' || unit_len > 3)
    return syntax_error(text, error);

  char unit[4] = { 0 };
  for (size_t i = 0; i < unit_len; i++)
    unit[i] = g_ascii_tolower(unit_start[i]);

  for (size_t i = 0; i < G_N_ELEMENTS(size_units); i++) {
    if (strcmp(unit, size_units[i].name) != 0)
      continue;
    guint64 m = size_units[i].multiplier;
    if (whole > size_max / m)
      goto too_large;
    guint64 bytes = whole * m;
    /* frac/frac_scale * m, exact in 128 bits, truncated toward zero */
    unsigned __int128 f = (unsigned __int128)frac * m / frac_scale;
    if ((unsigned __int128)bytes + f > size_max)
      goto too_large;
    *bytes_out = bytes + (guint64)f;
    return TRUE;
  }
  return syntax_error(text, error);

too_large:
  g_set_error(error, STW_UNITS_ERROR, STW_UNITS_ERROR_RANGE,
              "'%s' is too large: sizes are at most 2^53 bytes (8 PiB), the largest stowage's "
              "files hold", text);
  return FALSE;
}

char *
stw_size_format(guint64 bytes)
{
  static const char *const names[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
  if (bytes < STW_KiB)
    return g_strdup_printf("%" G_GUINT64_FORMAT " B", bytes);
  double v = (double)bytes / 1024.0;
  size_t i = 0;
  while (v >= 1024.0 && i + 1 < G_N_ELEMENTS(names)) {
    v /= 1024.0;
    i++;
  }
  return g_strdup_printf("%.2f %s", v, names[i]);
}

char *
stw_duration_format(guint64 ns)
{
  if (ns < 1000)
    return g_strdup_printf("%" G_GUINT64_FORMAT " ns", ns);
  if (ns < 1000000)
    return g_strdup_printf("%.1f us", (double)ns / 1e3);
  if (ns < 1000000000)
    return g_strdup_printf("%.2f ms", (double)ns / 1e6);
  return g_strdup_printf("%.3f s", (double)ns / 1e9);
}

/* ---- lists of sizes ------------------------------------------------------------------------- */

#define MAX_POINTS 1000

static gboolean
list_error(GError **error, const char *text, const char *why)
{
  g_set_error(error, STW_UNITS_ERROR, STW_UNITS_ERROR_SYNTAX,
              "'%s' is not a list of sizes: %s (expected FROM..TO:STEP such as 8GiB..80GiB:8GiB, "
              "or sizes separated by commas)", text, why);
  return FALSE;
}

gboolean
stw_size_list_parse(const char *text, GArray **out, GError **error)
{
  GArray *sizes = g_array_new(FALSE, FALSE, sizeof(guint64));
  const char *dots = strstr(text, "..");
  gboolean ok = TRUE;
  if (dots != NULL) {
    const char *colon = strchr(dots, ':');
    g_autofree char *from_s = g_strndup(text, (gsize)(dots - text));
    g_autofree char *to_s = colon ? g_strndup(dots + 2, (gsize)(colon - dots - 2))
                                  : g_strdup(dots + 2);
    guint64 from, to, step;
    if (colon == NULL)
      ok = list_error(error, text, "the range has no :STEP");
    else if (!stw_size_parse(from_s, &from, error) || !stw_size_parse(to_s, &to, error) ||
             !stw_size_parse(colon + 1, &step, error))
      ok = FALSE;
    else if (step == 0)
      ok = list_error(error, text, "the step is zero");
    else if (to < from)
      ok = list_error(error, text, "the range is inverted (TO is below FROM)");
    else if ((to - from) / step >= MAX_POINTS)
      ok = list_error(error, text, "more than 1000 points");
    else
      for (guint64 v = from; v <= to; v += step)
        g_array_append_val(sizes, v);
  } else {
    g_auto(GStrv) parts = g_strsplit(text, ",", -1);
    for (char **p = parts; ok && *p != NULL; p++) {
      guint64 v;
      if (sizes->len >= MAX_POINTS)
        ok = list_error(error, text, "more than 1000 points");
      else if (!stw_size_parse(g_strstrip(*p), &v, error))
        ok = FALSE;
      else
        g_array_append_val(sizes, v);
    }
  }
  if (ok && sizes->len == 0)
    ok = list_error(error, text, "the list is empty");
  for (guint i = 0; ok && i < sizes->len; i++) {
    if (g_array_index(sizes, guint64, i) == 0)
      ok = list_error(error, text, "a budget of zero");
  }
  if (!ok) {
    g_array_unref(sizes);
    return FALSE;
  }
  *out = sizes;
  return TRUE;
}

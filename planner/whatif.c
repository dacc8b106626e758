/* whatif.c — single what-if points and budget lists; see whatif.h. */
#include "config.h"

#include "whatif.h"

#include <string.h>

#include "check.h"
#include "units.h"

#define UNLIMITED (G_GUINT64_CONSTANT(1) << 56) /* 64 PiB: nothing is ever short */
#define MAX_POINTS 1000

void
stw_whatif_point_clear(StwWhatifPoint *p)
{
  g_clear_pointer(&p->why, g_free);
}

void
stw_whatif_run(const StwTrace *t, const StwPlannerOptions *base, StwPolicy policy,
               guint64 gpu_bytes, guint64 unlimited_ns, StwWhatifPoint *out)
{
  memset(out, 0, sizeof *out);
  out->policy = policy;
  out->gpu_bytes = gpu_bytes;
  StwPlannerOptions o = *base;
  o.policy = policy;
  o.budgets.gpu_bytes = gpu_bytes;
  o.progress = NULL;
  GError *error = NULL;
  g_autoptr(StwPlan) p = stw_planner_plan(t, NULL, &o, &error);
  if (p != NULL && !stw_plan_check(p, t, "(what-if plan)", NULL, &error))
    g_clear_pointer(&p, stw_plan_free);
  if (p == NULL) {
    out->why = g_strdup(error->message);
    g_error_free(error);
    return;
  }
  out->feasible = TRUE;
  out->chunk_size_elems = p->chunking->size_elems;
  out->h2d_bytes = p->pred.h2d_bytes;
  out->d2h_bytes = p->pred.d2h_bytes;
  out->comm_bytes = p->pred.comm_bytes;
  out->iteration_ns = p->pred.cost_ns;
  out->peak_gpu_bytes = p->pred.peak_gpu_bytes;
  out->slowdown = unlimited_ns ? (double)out->iteration_ns / (double)unlimited_ns : 0;
}

guint64
stw_whatif_unlimited_ns(const StwTrace *t, const StwPlannerOptions *base)
{
  StwPlannerOptions o = *base;
  o.budgets.cpu_bytes = UNLIMITED;
  o.budgets.reserved_bytes = 0;
  StwWhatifPoint p;
  stw_whatif_run(t, &o, STW_POLICY_STOWAGE, UNLIMITED, 0, &p);
  guint64 ns = p.feasible ? p.iteration_ns : 0;
  stw_whatif_point_clear(&p);
  return ns;
}

static gboolean
list_error(GError **error, const char *text, const char *why)
{
  g_set_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INVALID,
              "'%s' is not a list of sizes: %s (expected FROM..TO:STEP such as 8GiB..80GiB:8GiB, "
              "or sizes separated by commas)", text, why);
  return FALSE;
}

gboolean
stw_parse_size_list(const char *text, GArray **out, GError **error)
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

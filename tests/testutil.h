/* testutil.h — helpers shared by the unit tests. */
#ifndef STW_TESTUTIL_H
#define STW_TESTUTIL_H

#include <string.h>

#include <glib.h>

#include <stowage/hardware.h>
#include <stowage/planner.h>
#include <stowage/synth.h>
#include <stowage/trace.h>
#include <stowage/units.h>

/* Asserts that ERROR is set and its message contains NEEDLE, then clears it. */
#define stw_assert_error_contains(error, needle)                                          \
  G_STMT_START {                                                                            \
    g_assert_nonnull(error);                                                                \
    if (strstr((error)->message, (needle)) == NULL)                                         \
      g_error("error message \"%s\" does not contain \"%s\"", (error)->message, (needle)); \
    g_clear_error(&(error));                                                                \
  } G_STMT_END

/* A synthesized trace of a zoo model on the default hardware profile. */
static inline StwTrace *
stw_test_synth(const char *model, guint64 batch, guint64 seq, gboolean checkpointing)
{
  StwModelConfig cfg;
  StwHardware hw;
  GError *error = NULL;
  g_assert_true(stw_zoo_lookup(model, &cfg, &error));
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, &error));
  StwSynthOptions opt = { .batch = batch, .seq = seq, .dtype = STW_DTYPE_BF16,
                          .checkpointing = checkpointing };
  StwTrace *t = stw_synth_trace(&cfg, &opt, &hw, &error);
  g_assert_no_error(error);
  return t;
}

/* Planner options on the default hardware profile: POLICY, GPU_BYTES of GPU memory, and a host
 * of CPU_BYTES. */
static inline void
stw_test_planner_options(StwPlannerOptions *o, StwPolicy policy, guint64 gpu_bytes,
                         guint64 cpu_bytes)
{
  StwHardware hw;
  g_assert_true(stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, NULL));
  stw_planner_options_init(o, &hw);
  o->policy = policy;
  o->budgets.gpu_bytes = gpu_bytes;
  o->budgets.cpu_bytes = cpu_bytes;
}

/* T's activation peak (the largest non-model peak of its ops) and its model data (16 bytes per
 * parameter: fp32 weights, gradients, master weights and two Adam moments' worth). */
static inline void
stw_test_peak_and_model(const StwTrace *t, guint64 *peak, guint64 *model)
{
  *peak = *model = 0;
  for (guint i = 0; i < t->ops->len; i++)
    *peak = MAX(*peak, stw_trace_op(t, i)->nonmodel_peak_bytes);
  for (guint i = 0; i < t->tensors->len; i++)
    *model += 16 * stw_trace_tensor(t, i)->numel;
}

/* A path under tests/fixtures. Free with g_free. */
static inline char *
stw_test_fixture(const char *name)
{
  return g_test_build_filename(G_TEST_DIST, "fixtures", name, NULL);
}

#endif

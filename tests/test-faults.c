/* test-faults.c — what happens when the device misbehaves or the disk fills: a clear error or a
 * correct recovery, never a half-written file, and after recovery the same losses. */
#include "config.h"

#include <math.h>

#include <glib.h>
#include <glib/gstdio.h>

#include <stowage/trainer.h>
#include <stowage/units.h>

#include "testutil.h"

#define STEPS 4

static GString *
text(void)
{
  GString *s = g_string_new(NULL);
  while (s->len < 8000)
    g_string_append(s, "a device that misbehaves must not change what the model learns. ");
  return s;
}

static void
config(StwTrainerConfig *c)
{
  stw_trainer_config_init(c);
  c->layers = 2;
  c->width = 16;
  c->heads = 2;
  c->context = 8;
  c->batch = 2;
}

/* Trains STEPS steps on BACKEND (taken); returns FALSE at the first failing step, with ERROR. */
static gboolean
train(StwBackend *be, const StwRuntimeOptions *ro, const char *resume, float *losses,
      guint steps, GError **error)
{
  StwTrainerConfig c;
  config(&c);
  g_autoptr(GString) data = text();
  StwTrainer *t = stw_trainer_new(&c, (const guint8 *)data->str, data->len, ro, be, error);
  gboolean ok = t != NULL;
  if (ok && resume != NULL)
    ok = stw_trainer_load(t, resume, error);
  for (guint i = 0; ok && i < steps; i++)
    ok = stw_trainer_step(t, &losses[i], error);
  stw_trainer_free(t);
  be->free(be);
  return ok;
}

/* The losses of a run on a well-behaved device, computed by whichever case needs them first, so
 * that every case also runs alone (-p). */
static float reference[STEPS];
static gboolean have_reference;

static const float *
reference_losses(void)
{
  if (!have_reference) {
    StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE, .device_bytes = 256 * STW_KiB };
    GError *error = NULL;
    g_assert_true(train(stw_backend_host_new(), &ro, NULL, reference, STEPS, &error));
    g_assert_no_error(error);
    have_reference = TRUE;
  }
  return reference;
}

static void
test_reference_losses(void)
{
  const float *r = reference_losses();
  for (guint i = 0; i < STEPS; i++)
    g_assert_true(isfinite(r[i]) && r[i] > 0);
}

static void
test_slow_copies(void)
{
  StwFaults f = { .copy_delay_us = 200 };
  StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE, .device_bytes = 256 * STW_KiB };
  float losses[STEPS];
  GError *error = NULL;
  g_assert_true(train(stw_backend_fault_new(stw_backend_host_new(), &f), &ro, NULL, losses, STEPS,
                      &error));
  g_assert_cmpmem(losses, sizeof losses, reference_losses(), sizeof reference);
}

static void
test_alloc_failure_then_resume(void)
{
  /* two good steps and a checkpoint, then a run whose device fails to allocate */
  g_autofree char *dir = g_dir_make_tmp("stw-fault-XXXXXX", NULL);
  g_autofree char *ckpt = g_build_filename(dir, "c.ckpt", NULL);
  StwTrainerConfig c;
  config(&c);
  g_autoptr(GString) data = text();
  StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE, .device_bytes = 256 * STW_KiB };
  StwBackend *be = stw_backend_host_new();
  GError *error = NULL;
  StwTrainer *t = stw_trainer_new(&c, (const guint8 *)data->str, data->len, &ro, be, &error);
  float l[2];
  g_assert_true(stw_trainer_step(t, &l[0], &error) && stw_trainer_step(t, &l[1], &error));
  g_assert_true(stw_trainer_save(t, ckpt, &error));
  stw_trainer_free(t);
  be->free(be);

  StwFaults f = { .fail_alloc_after = 40 };
  float losses[STEPS];
  g_assert_false(train(stw_backend_fault_new(stw_backend_host_new(), &f), &ro, ckpt, losses,
                       STEPS, &error));
  g_assert_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_BUDGET);
  stw_assert_error_contains(error, "injected allocation failure");
  /* recovery: resume from the checkpoint on a healthy device, the same losses as never failing */
  g_assert_true(train(stw_backend_host_new(), &ro, ckpt, losses, 2, &error));
  g_assert_cmpmem(losses, 2 * sizeof(float), reference_losses() + 2, 2 * sizeof(float));
  g_unlink(ckpt);
  g_rmdir(dir);
}

static void
test_corrupt_copy_detected(void)
{
  StwFaults f = { .corrupt_copy_at = 5 };
  StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE, .device_bytes = 256 * STW_KiB,
                           .verify = TRUE };
  float losses[STEPS];
  GError *error = NULL;
  g_assert_false(train(stw_backend_fault_new(stw_backend_host_new(), &f), &ro, NULL, losses,
                       STEPS, &error));
  g_assert_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_CORRUPT);
  stw_assert_error_contains(error, "chunk item 1 changed in its device-to-host copy");
}

static void
test_failed_copy_then_resume(void)
{
  /* a checkpoint after two good steps, then a device whose 7th copy fails (cudaMemcpyAsync
   * returning an error): the step stops with the failing call named, nothing is trained on data
   * that never arrived, and resuming on a healthy device gives the losses of a run that never
   * failed */
  g_autofree char *dir = g_dir_make_tmp("stw-fault-XXXXXX", NULL);
  g_autofree char *ckpt = g_build_filename(dir, "c.ckpt", NULL);
  StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE, .device_bytes = 256 * STW_KiB };
  float losses[STEPS];
  GError *error = NULL;
  StwTrainerConfig c;
  config(&c);
  g_autoptr(GString) data = text();
  StwBackend *be = stw_backend_host_new();
  StwTrainer *t = stw_trainer_new(&c, (const guint8 *)data->str, data->len, &ro, be, &error);
  g_assert_true(stw_trainer_step(t, &losses[0], &error) && stw_trainer_step(t, &losses[1], &error));
  g_assert_true(stw_trainer_save(t, ckpt, &error));
  stw_trainer_free(t);
  be->free(be);

  for (guint at = 1; at <= 9; at += 4) {
    StwFaults f = { .fail_copy_at = at };
    g_assert_false(train(stw_backend_fault_new(stw_backend_host_new(), &f), &ro, ckpt, losses,
                         STEPS, &error));
    g_assert_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_DEVICE);
    stw_assert_error_contains(error, "a copy failed (injected copy failure)");
    g_clear_error(&error);
  }
  g_assert_true(train(stw_backend_host_new(), &ro, ckpt, losses, 2, &error));
  g_assert_cmpmem(losses, 2 * sizeof(float), reference_losses() + 2, 2 * sizeof(float));
  g_unlink(ckpt);
  g_rmdir(dir);
}

static void
test_stalled_copy_times_out(void)
{
  StwFaults f = { .stall_copy_at = 3 };
  StwRuntimeOptions ro = { .check_store = TRUE, .mode = STW_RUNTIME_PROFILE, .device_bytes = 256 * STW_KiB,
                           .copy_timeout_ms = 100 };
  float losses[STEPS];
  GError *error = NULL;
  g_assert_false(train(stw_backend_fault_new(stw_backend_host_new(), &f), &ro, NULL, losses,
                       STEPS, &error));
  g_assert_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_DEVICE);
  stw_assert_error_contains(error, "a copy did not complete within 100 ms");
}

static void
test_full_disk(void)
{
  g_autofree char *dir = g_dir_make_tmp("stw-fault-XXXXXX", NULL);
  g_autofree char *file = g_build_filename(dir, "t.json", NULL);
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 1, 16, FALSE);
  GError *error = NULL;
  g_assert_true(stw_trace_save(t, file, &error));
  g_setenv("STOWAGE_FAULT_WRITE", "1", TRUE);
  t->model.batch = 99;
  g_assert_false(stw_trace_save(t, file, &error));
  stw_assert_error_contains(error, "No space left on device");
  g_unsetenv("STOWAGE_FAULT_WRITE");
  g_autoptr(StwTrace) back = stw_trace_load(file, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(back->model.batch, ==, 1); /* the old file, whole */
  GDir *d = g_dir_open(dir, 0, NULL);
  g_assert_cmpstr(g_dir_read_name(d), ==, "t.json");
  g_assert_null(g_dir_read_name(d)); /* and no temporary left */
  g_dir_close(d);
  g_unlink(file);
  g_rmdir(dir);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/faults/reference-losses", test_reference_losses);
  g_test_add_func("/faults/slow-copies", test_slow_copies);
  g_test_add_func("/faults/alloc-failure-then-resume", test_alloc_failure_then_resume);
  g_test_add_func("/faults/corrupt-copy-detected", test_corrupt_copy_detected);
  g_test_add_func("/faults/failed-copy-then-resume", test_failed_copy_then_resume);
  g_test_add_func("/faults/stalled-copy-times-out", test_stalled_copy_times_out);
  g_test_add_func("/faults/full-disk", test_full_disk);
  return g_test_run();
}

/* sweep.c — `stowage whatif` in the library: the sweep a request asks for, its points, and its
 * rows as JSON and CSV; see whatif.h and request.h. */
#include "config.h"

#include <stowage/request.h>

#include <string.h>

#include <stowage/synth.h>
#include <stowage/units.h>


void
stw_whatif_sweep_clear(StwWhatifSweep *s)
{
  g_clear_pointer(&s->title, g_free);
  g_clear_pointer(&s->traces, g_ptr_array_unref);
  g_clear_pointer(&s->batches, g_array_unref);
  g_clear_pointer(&s->sizes, g_array_unref);
  g_clear_pointer(&s->budgets, g_array_unref);
  g_clear_pointer(&s->policies, g_array_unref);
  g_clear_pointer(&s->states, g_array_unref);
}

static gboolean
usage(GError **error, const char *message)
{
  g_set_error_literal(error, STW_REQUEST_ERROR, STW_REQUEST_ERROR_USAGE, message);
  return FALSE;
}

/* The model a request of COMMAND names: "model" (a zoo name or a file), or "model-config" (a
 * file, read as one even without a folder in its path); NULL for a trace. */
static gboolean
model_of(const StwRequest *r, const char *command, char **model, GError **error)
{
  const char *name = stw_request_get(r, "model"), *file = stw_request_get(r, "model-config");
  *model = NULL;
  if (name != NULL && file != NULL) {
    g_set_error(error, STW_REQUEST_ERROR, STW_REQUEST_ERROR_USAGE,
                "%s: give --model or --model-config, not both", command);
    return FALSE;
  }
  if (file != NULL)
    *model = strchr(file, '/') != NULL ? g_strdup(file) : g_build_filename(".", file, NULL);
  else
    *model = g_strdup(name);
  return TRUE;
}

/* The synthesis options a request gives for model CFG on HW, the defaults where it does not:
 * batch 1, the model's longest sequence ("seq"), bf16 or fp16 on a GPU without it ("dtype",
 * stw_hardware_default_dtype), "checkpointing" (of segments of
 * "checkpoint-every" blocks, which implies it), naive "attention", eager
 * "kernels", the full "loss", a fused "optimizer-impl", "lora" and "lora-targets", one run
 * ("micro-steps"), no "images" (of "image-size" pixels a side, "vision-trained" what of the
 * tower they train), the loop's (stw_request_loop); the request's texts borrowed. */
static gboolean
synth_options(const StwRequest *r, const StwModelConfig *cfg, const StwHardware *hw,
              StwSynthOptions *so, GError **error)
{
  *so = (StwSynthOptions){ .batch = 1, .seq = cfg->max_seq,
                           .dtype = stw_hardware_default_dtype(hw),
                           .checkpointing = stw_request_get(r, "checkpointing") != NULL,
                           .amp = stw_request_get(r, "amp") != NULL,
                           .kernels = STW_KERNELS_DEFAULT };
  int dtype = so->dtype, attention = so->attention, kernels = so->kernels, loss = so->loss,
      optimizer = so->optimizer_impl, trained = so->vision_trained;
  if (!stw_request_count(r, "seq", 1, cfg->max_seq, &so->seq, error) ||
      !stw_request_count(r, "micro-steps", 1, STW_SYNTH_MAX_MICRO_STEPS, &so->micro_steps,
                         error) ||
      !stw_request_count(r, "checkpoint-every", 1, STW_MODEL_MAX_LAYERS, &so->checkpoint_every,
                         error) ||
      !stw_request_count(r, "images", 1, STW_MODEL_MAX_IMAGES, &so->images, error) ||
      !stw_request_count(r, "image-size", 1, STW_MODEL_MAX_IMAGE, &so->image_size, error) ||
      !stw_request_enum(r, "dtype", stw_dtype_names, &dtype, error) ||
      !stw_request_enum(r, "attention", stw_attention_names, &attention, error) ||
      !stw_request_enum(r, "kernels", stw_kernels_names, &kernels, error) ||
      !stw_request_enum(r, "loss", stw_loss_names, &loss, error) ||
      !stw_request_enum(r, "optimizer-impl", stw_optimizer_impl_names, &optimizer, error) ||
      !stw_request_enum(r, "vision-trained", stw_vision_trained_names, &trained, error) ||
      !stw_request_loop(r, so, error) ||
      !stw_request_lora(r, so, error))
    return FALSE;
  so->checkpointing |= so->checkpoint_every > 0; /* segments are checkpointing's */
  so->optimizer_impl = (StwOptimizerImpl)optimizer;
  so->vision_trained = (StwVisionTrained)trained;
  so->dtype = (StwDtype)dtype;
  so->attention = (StwAttention)attention;
  so->kernels = (StwKernels)kernels;
  so->loss = (StwLoss)loss;
  return TRUE;
}

StwTrace *
stw_request_synth(const StwRequest *r, GError **error)
{
  g_autofree char *model = NULL;
  if (!model_of(r, "synth", &model, error))
    return NULL;
  if (model == NULL) {
    usage(error, "synth: --model or --model-config is required (see 'stowage models')");
    return NULL;
  }
  StwModelConfig cfg;
  StwSynthOptions so;
  StwHardware hw;
  const char *hw_name = stw_request_get(r, "hw");
  if (!stw_model_resolve(model, &cfg, error) ||
      !stw_hardware_lookup(hw_name != NULL ? hw_name : STW_HARDWARE_DEFAULT, &hw, error) ||
      !synth_options(r, &cfg, &hw, &so, error) ||
      !stw_request_count(r, "batch", 1, STW_SYNTH_MAX_BATCH, &so.batch, error) ||
      (stw_request_get(r, "memory") != NULL &&
       !stw_request_budget(r, "memory", &hw.gpu_memory_bytes, error)))
    return NULL;
  so.freeze = stw_request_get(r, "freeze");
  GError *local = NULL;
  StwTrace *t = stw_synth_trace(&cfg, &so, &hw, &local);
  if (t == NULL) { /* the options do not fit the model or the hardware */
    g_set_error(error, STW_REQUEST_ERROR, STW_REQUEST_ERROR_USAGE, "synth: %s", local->message);
    g_error_free(local);
  }
  return t;
}

/* The traces: the one given (GIVEN, borrowed, or the file "trace"), or the model at each batch
 * (one when none is given). */
static gboolean
traces(const StwRequest *r, const StwTrace *given, const char *model, StwWhatifSweep *s,
       GError **error)
{
  if (model == NULL) {
    StwTrace *t = given != NULL ? (StwTrace *)given : stw_trace_load(stw_request_get(r, "trace"),
                                                                     error);
    if (t == NULL)
      return FALSE;
    if (given != NULL) /* borrowed: the array frees nothing */
      g_ptr_array_set_free_func(s->traces, NULL);
    g_ptr_array_add(s->traces, t);
    g_array_set_size(s->batches, 0);
    g_array_append_val(s->batches, t->model.batch);
    return stw_request_planning(r, t, &s->options, error);
  }
  StwModelConfig cfg;
  StwSynthOptions so;
  if (!stw_model_resolve(model, &cfg, error) ||
      !stw_request_planning(r, NULL, &s->options, error) ||
      !synth_options(r, &cfg, &s->options.hw, &so, error))
    return FALSE;
  if (s->batches->len == 0) {
    guint64 one = 1;
    g_array_append_val(s->batches, one);
  }
  for (guint b = 0; b < s->batches->len; b++) {
    so.batch = g_array_index(s->batches, guint64, b);
    GError *local = NULL;
    StwTrace *t = stw_synth_trace(&cfg, &so, &s->options.hw, &local);
    if (t == NULL) {
      g_set_error(error, STW_REQUEST_ERROR, STW_REQUEST_ERROR_USAGE, "whatif: %s",
                  local->message);
      g_error_free(local);
      return FALSE;
    }
    g_ptr_array_add(s->traces, t);
  }
  return TRUE;
}

/* The lists: budgets (each on the device), policies, batches, chunk sizes (0: search). */
static gboolean
lists(const StwRequest *r, StwWhatifSweep *s, GError **error)
{
  GError *local = NULL;
  if (!stw_size_list_parse(stw_request_get(r, "gpu"), &s->budgets, &local)) {
    g_set_error(error, STW_REQUEST_ERROR, STW_REQUEST_ERROR_USAGE, "--gpu: %s", local->message);
    g_error_free(local);
    return FALSE;
  }
  if (!stw_option_enum_list("--policy", stw_request_get(r, "policy"), stw_policy_names,
                            s->policies, error) ||
      !stw_option_count_list("--batch", stw_request_get(r, "batch"), STW_SYNTH_MAX_BATCH,
                             s->batches, error) ||
      !stw_option_count_list("--chunk-size", stw_request_get(r, "chunk-size"),
                             STW_TRACE_MAX_NUMEL, s->sizes, error) ||
      (stw_request_get(r, "optimizer-state") != NULL && /* not given: the trace's */
       !stw_option_enum_list("--optimizer-state", stw_request_get(r, "optimizer-state"),
                             stw_state_dtype_names, s->states, error)))
    return FALSE;
  for (guint i = 0; i < s->states->len; i++) /* the names' indices, as dtypes */
    g_array_index(s->states, int, i) = (int)stw_state_dtype_at(g_array_index(s->states, int, i));
  if (s->states->len == 0) {
    int trace = -1;
    g_array_append_val(s->states, trace);
  }
  if (s->sizes->len == 0) {
    guint64 zero = 0;
    g_array_append_val(s->sizes, zero);
  }
  return TRUE;
}

gboolean
stw_request_whatif(const StwRequest *r, StwWhatifSweep *out, GError **error)
{
  return stw_request_whatif_trace(r, NULL, out, error);
}

gboolean
stw_request_whatif_trace(const StwRequest *r, const StwTrace *trace, StwWhatifSweep *out,
                         GError **error)
{
  memset(out, 0, sizeof *out);
  out->traces = g_ptr_array_new_with_free_func((GDestroyNotify)stw_trace_free);
  out->batches = g_array_new(FALSE, FALSE, sizeof(guint64));
  out->sizes = g_array_new(FALSE, FALSE, sizeof(guint64));
  out->policies = g_array_new(FALSE, FALSE, sizeof(int));
  out->states = g_array_new(FALSE, FALSE, sizeof(int));
  g_autofree char *model = NULL;
  if (!model_of(r, "whatif", &model, error))
    return FALSE;
  if ((model == NULL) == (stw_request_get(r, "trace") == NULL && trace == NULL) ||
      (trace != NULL && stw_request_get(r, "trace") != NULL))
    return usage(error, "whatif: give either one trace file or --model");
  if (stw_request_get(r, "gpu") == NULL)
    return usage(error, "whatif: --gpu LIST is required (e.g. 8GiB..80GiB:8GiB)");
  static const char *const model_only[] = { "batch", "seq", "dtype", "checkpointing",
                                            "checkpoint-every", "amp", "attention", "kernels",
                                            "loss", "micro-steps", "gradients", "collectives",
                                            "optimizer-impl", "reduce-bucket-size",
                                            "sub-group-size", "init",
                                            "images", "image-size", "vision-trained", NULL };
  for (gsize i = 0; model == NULL && model_only[i] != NULL; i++)
    if (stw_request_get(r, model_only[i]) != NULL)
      return usage(error, "whatif: --batch, --seq, --dtype, --checkpointing, "
                   "--checkpoint-every, --amp, --attention, --kernels, --loss, --micro-steps, "
                   "--gradients, --collectives, --optimizer-impl, --reduce-bucket-size, "
                   "--sub-group-size, --init, --images, --image-size and --vision-trained go "
                   "with --model");
  if (!lists(r, out, error) || !traces(r, trace, model, out, error))
    return FALSE;
  for (guint b = 0; b < out->budgets->len; b++)
    if (!stw_request_on_device(r, "gpu", &out->options, g_array_index(out->budgets, guint64, b),
                               error))
      return FALSE;
  const char *what = model != NULL ? model : stw_request_get(r, "trace");
  if (what == NULL)
    what = trace->model.name != NULL ? trace->model.name : "the trace";
  out->title = g_strdup_printf("%s on %s", what, out->options.hw.name);
  return TRUE;
}

GArray *
stw_whatif_sweep_run(StwWhatifSweep *s, void (*progress)(guint done, guint total))
{
  GArray *rows = g_array_new(FALSE, TRUE, sizeof(StwWhatifRow));
  guint total = s->traces->len * s->states->len * s->sizes->len * s->budgets->len *
                    s->policies->len, done = 0;
  StwPlannerOptions o = s->options;
  for (guint ti = 0; ti < s->traces->len; ti++) {
    const StwTrace *t = s->traces->pdata[ti];
    guint64 unlimited;
    for (guint mi = 0; mi < s->states->len; mi++) {
      o.state_dtype = g_array_index(s->states, int, mi);
      /* each state against its own unlimited-memory time (unknown: slowdowns are none) */
      stw_whatif_unlimited(t, &o, &unlimited, NULL);
      for (guint si = 0; si < s->sizes->len; si++) {
        o.chunk_size_elems = g_array_index(s->sizes, guint64, si);
        for (guint bi = 0; bi < s->budgets->len; bi++) {
          for (guint pi = 0; pi < s->policies->len; pi++) {
            StwWhatifRow row = { .batch = g_array_index(s->batches, guint64, ti),
                                 .chunk_size = o.chunk_size_elems };
            stw_whatif_run(t, &o, (StwPolicy)g_array_index(s->policies, int, pi),
                           g_array_index(s->budgets, guint64, bi), unlimited, &row.point);
            g_array_append_val(rows, row);
            if (progress != NULL)
              progress(++done, total);
          }
        }
      }
    }
  }
  return rows;
}

void
stw_whatif_rows_free(GArray *rows)
{
  for (guint i = 0; rows != NULL && i < rows->len; i++)
    stw_whatif_point_clear(&g_array_index(rows, StwWhatifRow, i).point);
  if (rows != NULL)
    g_array_unref(rows);
}

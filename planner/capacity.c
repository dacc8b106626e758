/* capacity.c — `stowage capacity` in the library: the largest model of a family whose checked
 * plan fits, per policy; its request and its record. See whatif.h and request.h. */
#include "config.h"

#include <stowage/request.h>

#include <string.h>

#include <stowage/units.h>

#include "json.h"

/* The search for one policy: the last model that fit, and the smallest that did not and why. */
typedef struct {
  const StwCapacityQuery *q;
  StwPolicy policy;
  void (*progress)(StwPolicy policy, const char *model, gboolean fits);
  StwWhatifPoint last;  /* of the last feasible probe */
  guint64 bound_params; /* the smallest model that did not fit, and why */
  char *bound_why;
} Probe;

/* What stopped a policy at its largest model: the budget the next larger model's plan failed on
 * (the planner's message names it). */
static const char *
bound_by(const Probe *pr)
{
  if (pr->bound_why == NULL)
    return "nothing larger tried";
  if (strstr(pr->bound_why, "host budget") != NULL)
    return "host memory";
  if (strstr(pr->bound_why, "GPU budget") != NULL)
    return "GPU memory";
  return "the model's size";
}

/* Synthesizes CFG and plans it; TRUE when the policy fits. */
static gboolean
fits(Probe *pr, const StwModelConfig *cfg)
{
  const StwPlannerOptions *o = &pr->q->options;
  StwSynthOptions so = pr->q->synth;
  so.seq = MIN(so.seq, cfg->max_seq);
  g_autoptr(StwTrace) t = stw_synth_trace(cfg, &so, &o->hw, NULL);
  if (t == NULL)
    return FALSE;
  StwWhatifPoint pt;
  stw_whatif_run(t, o, pr->policy, o->budgets.gpu_bytes, STW_WHATIF_UNKNOWN, &pt);
  if (pr->progress != NULL)
    pr->progress(pr->policy, cfg->name, pt.feasible);
  if (!pt.feasible) {
    guint64 n = stw_model_param_count(cfg);
    if (pr->bound_why == NULL || n < pr->bound_params) {
      g_free(pr->bound_why);
      pr->bound_why = g_strdup(pt.why);
      pr->bound_params = n;
    }
    stw_whatif_point_clear(&pt);
    return FALSE;
  }
  stw_whatif_point_clear(&pr->last);
  pr->last = pt;
  return TRUE;
}

static void
gpt_of_width(StwModelConfig *c, guint64 hidden, guint64 layers, guint64 seq)
{
  memset(c, 0, sizeof *c);
  g_snprintf(c->name, sizeof c->name, "gpt-h%" G_GUINT64_FORMAT "-l%" G_GUINT64_FORMAT, hidden,
             layers);
  c->arch = STW_ARCH_GPT;
  c->layers = layers;
  c->hidden = hidden;
  c->heads = hidden % 128 == 0 ? hidden / 128 : hidden % 64 == 0 ? hidden / 64 : 1;
  c->kv_heads = c->heads;
  c->ffn = 4 * hidden;
  c->vocab = 50257;
  c->max_seq = MAX(seq, 1024);
  c->tied = TRUE;
}

/* Depths above a bisection's answer that are tried too: feasibility need not be monotone in the
 * layers (a chunk size or a placement that fits one depth can miss the next). */
#define NEIGHBOURS 4

/* The largest GPT of the query's width whose plan fits, by layers: bisected, then the
 * NEIGHBOURS depths above the answer tried, and bisected again above any of them that fits.
 * FALSE when none fits. */
static gboolean
largest_by_layers(Probe *pr, StwModelConfig *best)
{
  guint64 width = pr->q->width, seq = pr->q->synth.seq;
  gboolean any = FALSE;
  guint64 lo = 0, hi = STW_MODEL_MAX_LAYERS;
  for (;;) {
    while (lo < hi) { /* the largest L that fits, in [lo, hi], lo fitting (or 0) */
      guint64 mid = lo + (hi - lo + 1) / 2;
      StwModelConfig c;
      gpt_of_width(&c, width, mid, seq);
      if (fits(pr, &c)) {
        lo = mid;
        *best = c;
        any = TRUE;
      } else {
        hi = mid - 1;
      }
    }
    guint64 above = 0;
    for (guint64 l = lo + 2; l <= MIN(lo + 1 + NEIGHBOURS, STW_MODEL_MAX_LAYERS) && !above; l++) {
      StwModelConfig c; /* lo + 1 failed in the bisection */
      gpt_of_width(&c, width, l, seq);
      if (fits(pr, &c)) {
        above = l;
        *best = c;
        any = TRUE;
      }
    }
    if (above == 0)
      return any;
    lo = above;
    hi = STW_MODEL_MAX_LAYERS;
  }
}

/* The largest of the query's zoo members whose plan fits. FALSE when none fits. */
static gboolean
largest_of(Probe *pr, StwModelConfig *best)
{
  const GArray *members = pr->q->members;
  gboolean any = FALSE;
  for (guint i = 0; i < members->len; i++) {
    const StwModelConfig *c = &g_array_index(members, StwModelConfig, i);
    if (stw_model_param_count(c) <= (any ? stw_model_param_count(best) : 0))
      continue;
    if (fits(pr, c)) {
      *best = *c;
      any = TRUE;
    }
  }
  return any;
}

void
stw_capacity_run(const StwCapacityQuery *q, StwPolicy policy, StwCapacityAnswer *out,
                 void (*progress)(StwPolicy policy, const char *model, gboolean fits))
{
  memset(out, 0, sizeof *out);
  out->policy = policy;
  Probe pr = { .q = q, .policy = policy, .progress = progress };
  out->found = q->by_layers ? largest_by_layers(&pr, &out->best) : largest_of(&pr, &out->best);
  if (out->found) {
    out->params = stw_model_param_count(&out->best);
    /* the smallest failure above the best is what bound it */
    if (pr.bound_params <= out->params)
      g_clear_pointer(&pr.bound_why, g_free);
    out->point = pr.last;
  } else {
    stw_whatif_point_clear(&pr.last);
  }
  out->bound_by = bound_by(&pr);
  g_free(pr.bound_why);
}

void
stw_capacity_answer_clear(StwCapacityAnswer *a)
{
  stw_whatif_point_clear(&a->point);
}

void
stw_capacity_query_clear(StwCapacityQuery *q)
{
  g_clear_pointer(&q->members, g_array_unref);
  g_clear_pointer(&q->policies, g_array_unref);
  g_clear_pointer(&q->assumed, g_free);
  g_clear_pointer(&q->lora_targets, g_free);
}

/* ---- the request ------------------------------------------------------------------------ */

static gboolean
usage(GError **error, const char *message)
{
  g_set_error_literal(error, STW_REQUEST_ERROR, STW_REQUEST_ERROR_USAGE, message);
  return FALSE;
}

/* "family": gpt (layers at a width), or one of the zoo's families and its members. */
static gboolean
family(const StwRequest *r, StwCapacityQuery *q, GError **error)
{
  g_autoptr(GPtrArray) names = g_ptr_array_new();
  g_ptr_array_add(names, (gpointer) "gpt");
  for (int i = 0; stw_zoo_families[i] != NULL; i++)
    g_ptr_array_add(names, (gpointer)stw_zoo_families[i]);
  g_ptr_array_add(names, NULL);
  int f = 0;
  if (!stw_request_enum(r, "family", (const char *const *)names->pdata, &f, error))
    return FALSE;
  q->by_layers = f == 0;
  gsize n_zoo;
  const StwZooEntry *zoo = stw_zoo_entries(&n_zoo);
  for (gsize i = 0; f > 0 && i < n_zoo; i++) {
    if (strcmp(zoo[i].family, stw_zoo_families[f - 1]) == 0)
      g_array_append_val(q->members, zoo[i].config);
  }
  return TRUE;
}

/* The defaults the request took, named, for people. */
static char *
assumed(const StwRequest *r, const StwCapacityQuery *q)
{
  GString *s = g_string_new(NULL);
  gboolean batch = stw_request_get(r, "batch") == NULL, seq = stw_request_get(r, "seq") == NULL;
  if (batch || seq)
    g_string_append(s, batch && seq ? "the batch and sequence" : batch ? "the batch"
                                                                       : "the sequence");
  if (stw_request_get(r, "no-checkpointing") == NULL)
    g_string_append_printf(s, "%scheckpointing", s->len ? ", " : "");
  if (stw_request_get(r, "attention") == NULL)
    g_string_append_printf(s, "%sflash attention", s->len ? ", " : "");
  if (stw_request_get(r, "kernels") == NULL)
    g_string_append_printf(s, "%s%s kernels", s->len ? ", " : "",
                           stw_kernels_name(STW_KERNELS_DEFAULT));
  if (stw_request_get(r, "dtype") == NULL)
    g_string_append_printf(s, "%s%s", s->len ? ", " : "", stw_dtype_name(q->synth.dtype));
  return g_string_free(s, FALSE);
}

/* With LoRA: whether the family has the targets (the first model tried, at one token). */
static gboolean
lora_fits_family(const StwCapacityQuery *q, GError **error)
{
  if (q->synth.lora_rank == 0)
    return TRUE;
  StwModelConfig c;
  if (q->by_layers)
    gpt_of_width(&c, q->width, 1, 1);
  else
    c = g_array_index(q->members, StwModelConfig, 0);
  StwSynthOptions so = q->synth;
  so.batch = so.seq = 1;
  GError *local = NULL;
  g_autoptr(StwTrace) t = stw_synth_trace(&c, &so, &q->options.hw, &local);
  if (t != NULL || !g_error_matches(local, STW_MODEL_ERROR, STW_MODEL_ERROR_INVALID)) {
    g_clear_error(&local);
    return TRUE;
  }
  g_set_error(error, STW_REQUEST_ERROR, STW_REQUEST_ERROR_USAGE, "capacity: %s", local->message);
  g_error_free(local);
  return FALSE;
}

gboolean
stw_request_capacity(const StwRequest *r, StwCapacityQuery *out, GError **error)
{
  memset(out, 0, sizeof *out);
  out->members = g_array_new(FALSE, FALSE, sizeof(StwModelConfig));
  out->policies = g_array_new(FALSE, FALSE, sizeof(int));
  if (stw_request_get(r, "family") == NULL)
    return usage(error, "capacity: --family is required (gpt, gpt2, gpt3, patrickstar, llama, "
                 "mistral, qwen2, neox, bert)");
  if (!stw_request_planning(r, NULL, &out->options, error))
    return FALSE;
  out->options.world_size = MAX(out->options.world_size, 1);
  const StwHardware *hw = &out->options.hw;
  out->width = 4096;
  out->synth = (StwSynthOptions){ .batch = 8, .seq = 1024,
                                  .dtype = stw_hardware_default_dtype(hw),
                                  .checkpointing = stw_request_get(r, "no-checkpointing") == NULL,
                                  .amp = stw_request_get(r, "amp") != NULL,
                                  .attention = STW_ATTENTION_FLASH,
                                  .kernels = STW_KERNELS_DEFAULT };
  int att = out->synth.attention, dt = out->synth.dtype, kern = out->synth.kernels,
      loss = out->synth.loss, optimizer = out->synth.optimizer_impl;
  if (!stw_request_count(r, "batch", 1, STW_SYNTH_MAX_BATCH, &out->synth.batch, error) ||
      !stw_request_count(r, "seq", 1, STW_MODEL_MAX_SEQ, &out->synth.seq, error) ||
      !stw_request_count(r, "micro-steps", 1, STW_SYNTH_MAX_MICRO_STEPS, &out->synth.micro_steps,
                         error) ||
      !stw_request_count(r, "hidden", 64, 65536, &out->width, error) ||
      !stw_request_enum(r, "attention", stw_attention_names, &att, error) ||
      !stw_request_enum(r, "kernels", stw_kernels_names, &kern, error) ||
      !stw_request_enum(r, "loss", stw_loss_names, &loss, error) ||
      !stw_request_enum(r, "optimizer-impl", stw_optimizer_impl_names, &optimizer, error) ||
      !stw_request_enum(r, "dtype", stw_dtype_names, &dt, error) || !family(r, out, error) ||
      !stw_request_lora(r, &out->synth, error) ||
      !stw_request_loop(r, &out->synth, error) ||
      !stw_option_enum_list("--policy", stw_request_get(r, "policy"), stw_policy_names,
                            out->policies, error))
    return FALSE;
  out->lora_targets = g_strdup(out->synth.lora_targets); /* the request's text, kept */
  out->synth.lora_targets = out->lora_targets;
  out->synth.attention = (StwAttention)att;
  out->synth.kernels = (StwKernels)kern;
  out->synth.loss = (StwLoss)loss;
  out->synth.optimizer_impl = (StwOptimizerImpl)optimizer;
  out->synth.dtype = (StwDtype)dt;
  if (hw->flops_per_s[out->synth.dtype] <= 0) {
    g_set_error(error, STW_REQUEST_ERROR, STW_REQUEST_ERROR_USAGE, "--dtype: %s has no %s "
                "compute", hw->name, stw_dtype_name(out->synth.dtype));
    return FALSE;
  }
  if (stw_request_get(r, "hidden") != NULL && !out->by_layers)
    return usage(error, "capacity: --hidden goes with --family gpt; without it the option "
                 "would be ignored");
  if (!lora_fits_family(out, error))
    return FALSE;
  out->assumed = assumed(r, out);
  return TRUE;
}

/* ---- the record ------------------------------------------------------------------------- */

char *
stw_capacity_json(const StwCapacityQuery *q, const StwCapacityAnswer *answers, guint n)
{
  const StwPlannerOptions *o = &q->options;
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "hardware", o->hw.name);
  stw_json_add_u64(root, "gpus", o->world_size);
  stw_json_add_u64(root, "cpu_bytes", o->budgets.cpu_bytes);
  stw_json_add_u64(root, "gpu_bytes", o->budgets.gpu_bytes);
  stw_json_add_u64(root, "batch", q->synth.batch);
  stw_json_add_u64(root, "seq", q->synth.seq);
  stw_json_add_u64(root, "micro_steps", MAX(q->synth.micro_steps, 1));
  cJSON_AddBoolToObject(root, "checkpointing", q->synth.checkpointing);
  cJSON_AddStringToObject(root, "checkpoints", stw_checkpoints_names[q->synth.checkpoints]);
  cJSON_AddStringToObject(root, "attention", stw_attention_name(q->synth.attention));
  cJSON_AddStringToObject(root, "kernels", stw_kernels_name(q->synth.kernels));
  cJSON_AddStringToObject(root, "loss", stw_loss_name(q->synth.loss));
  cJSON_AddStringToObject(root, "optimizer_impl",
                          stw_optimizer_impl_name(q->synth.optimizer_impl));
  if (q->synth.reduce_bucket_size > 0) /* DeepSpeed's, where the loop gives its own */
    stw_json_add_u64(root, "reduce_bucket_size", q->synth.reduce_bucket_size);
  if (q->synth.sub_group_size > 0)
    stw_json_add_u64(root, "sub_group_size", q->synth.sub_group_size);
  cJSON_AddStringToObject(root, "init", stw_init_names[q->synth.init]);
  cJSON_AddStringToObject(root, "dtype", stw_dtype_name(q->synth.dtype));
  cJSON_AddBoolToObject(root, "amp", q->synth.amp);
  if (q->synth.lora_rank > 0) {
    cJSON *lora = cJSON_AddObjectToObject(root, "lora");
    stw_json_add_u64(lora, "rank", q->synth.lora_rank);
    cJSON_AddStringToObject(lora, "targets",
                            q->synth.lora_targets != NULL ? q->synth.lora_targets : "q,v");
  }
  cJSON *arr = cJSON_AddArrayToObject(root, "policies");
  for (guint i = 0; i < n; i++) {
    const StwCapacityAnswer *a = &answers[i];
    cJSON *row = cJSON_CreateObject();
    cJSON_AddStringToObject(row, "policy", stw_policy_names[a->policy]);
    if (a->found) {
      cJSON_AddStringToObject(row, "model", a->best.name);
      stw_json_add_u64(row, "layers", a->best.layers);
      stw_json_add_u64(row, "params", a->params);
      g_autofree char *point = stw_whatif_point_json(&a->point, 0);
      cJSON_AddItemToObject(row, "point", cJSON_Parse(point));
    } else {
      cJSON_AddNullToObject(row, "model");
    }
    cJSON_AddStringToObject(row, "bound_by", a->bound_by);
    cJSON_AddItemToArray(arr, row);
  }
  return stw_json_take_text(root, TRUE);
}

/* request.c — requests parsed and checked once, for the CLI and the bindings; see request.h. */
#include "config.h"

#include <stowage/request.h>

#include <math.h>
#include <string.h>

#include <stowage/units.h>

#include "json.h"

G_DEFINE_QUARK(stw-request-error-quark, stw_request_error)

#define PLANNING_OPTIONS "hw", "cpu", "reserve", "gpus", "nodes", "beyond-device", "activations", \
                         "nvme", "nvme-devices", "storage", "optimizer-state", "pinned", "layout"

static const char *const planning_flags[] = { "beyond-device", "measured-times", NULL };
static const char *const plan_flags[] = { "beyond-device", "oversized", "measured-times", NULL };

/* "measured-times": the commands that plan a trace given (not capacity's synthesized ones) */
static const char *const plan_options[] = { "gpu", PLANNING_OPTIONS, "measured-times", "policy",
                                            "objective", "chunk-size", "oversized",
                                            "gemini-fraction", "margin", "prefetch-bucket",
                                            "zero-stage", NULL };
static const char *const compare_options[] = { "gpu", PLANNING_OPTIONS, "measured-times", NULL };
static const char *const minmem_options[] = { "slowdown", "policy", "host", "gpu",
                                              PLANNING_OPTIONS, "measured-times", NULL };
static const char *const minmem_flags[] = { "beyond-device", "host", "measured-times", NULL };

const StwRequestKind stw_request_plan_kind = { "plan", plan_options, plan_flags };
const StwRequestKind stw_request_compare_kind = { "compare", compare_options, planning_flags };
const StwRequestKind stw_request_minmem_kind = { "minmem", minmem_options, minmem_flags };
static const char *const whatif_options[] = { "trace", "gpu", "policy", "model", "model-config",
                                              "batch", "seq", "dtype", "checkpointing",
                                              "checkpoint-every", "amp", "attention", "kernels",
                                              "loss", "micro-steps", "gradients",
                                              "collectives", "optimizer-impl",
                                              "reduce-bucket-size", "sub-group-size", "init",
                                              "checkpoints", "chunk-size", "lora", "lora-targets",
                                              "images", "image-size", "vision-trained",
                                              PLANNING_OPTIONS,
                                              "measured-times", NULL };
static const char *const whatif_flags[] = { "beyond-device", "checkpointing", "amp",
                                            "measured-times", NULL };
const StwRequestKind stw_request_whatif_kind = { "whatif", whatif_options, whatif_flags };
static const char *const synth_options[] = { "model", "model-config", "batch", "seq", "dtype",
                                             "checkpointing", "checkpoint-every", "amp",
                                             "attention", "kernels", "loss", "micro-steps",
                                             "optimizer-impl", "reduce-bucket-size",
                                             "sub-group-size", "init", "checkpoints", "freeze",
                                             "lora",
                                             "lora-targets",
                                             "images", "image-size", "vision-trained", "hw",
                                             "memory", "gradients", "collectives", NULL };
static const char *const synth_flags[] = { "checkpointing", "amp", NULL };
const StwRequestKind stw_request_synth_kind = { "synth", synth_options, synth_flags };
static const char *const capacity_options[] = { "family", "hidden", "batch", "seq",
                                                "micro-steps", "gradients", "collectives",
                                                "no-checkpointing",
                                                "amp", "attention",
                                                "kernels", "loss", "dtype", "optimizer-impl",
                                                "reduce-bucket-size", "sub-group-size", "init",
                                                "checkpoints", "lora", "lora-targets", "policy",
                                                PLANNING_OPTIONS, NULL };
static const char *const capacity_flags[] = { "beyond-device", "no-checkpointing", "amp",
                                               NULL };
const StwRequestKind stw_request_capacity_kind = { "capacity", capacity_options,
                                                   capacity_flags };

struct StwRequest {
  const StwRequestKind *kind;
  GHashTable *values; /* option -> text, both owned */
};

#define usage(error, ...) stw_fail(error, STW_REQUEST_ERROR, STW_REQUEST_ERROR_USAGE, __VA_ARGS__)

static gboolean
in_list(const char *const *list, const char *name)
{
  for (gsize i = 0; list != NULL && list[i] != NULL; i++)
    if (strcmp(list[i], name) == 0)
      return TRUE;
  return FALSE;
}

StwRequest *
stw_request_new(const StwRequestKind *kind)
{
  StwRequest *r = g_new0(StwRequest, 1);
  r->kind = kind;
  r->values = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  return r;
}

void
stw_request_free(StwRequest *r)
{
  if (r == NULL)
    return;
  g_hash_table_unref(r->values);
  g_free(r);
}

gboolean
stw_request_takes(const StwRequest *r, const char *option)
{
  return in_list(r->kind->options, option);
}

void
stw_request_set(StwRequest *r, const char *option, const char *text)
{
  if (text == NULL)
    g_hash_table_remove(r->values, option);
  else
    g_hash_table_insert(r->values, g_strdup(option), g_strdup(text));
}

void
stw_request_set_flag(StwRequest *r, const char *option, gboolean on)
{
  stw_request_set(r, option, on ? "1" : NULL);
}

const char *
stw_request_get(const StwRequest *r, const char *option)
{
  return g_hash_table_lookup(r->values, option);
}

/* A member's value as an option's text (NULL: not given); FALSE naming it when of no such kind. */
static gboolean
member_text(const StwRequest *r, const char *option, const cJSON *v, gboolean flag, char **text,
            GError **error)
{
  const char *cmd = r->kind->command;
  *text = NULL;
  if (cJSON_IsNull(v))
    return TRUE;
  if (flag) {
    if (!cJSON_IsBool(v))
      return usage(error, "%s: --%s is a flag: expected true or false", cmd, option);
    *text = cJSON_IsTrue(v) ? g_strdup("1") : NULL;
    return TRUE;
  }
  if (cJSON_IsString(v)) {
    *text = g_strdup(v->valuestring);
  } else if (cJSON_IsNumber(v) && isfinite(v->valuedouble)) {
    double d = v->valuedouble;
    *text = d == floor(d) && fabs(d) <= 9007199254740992.0
                ? g_strdup_printf("%.0f", d)
                : g_strdup_printf("%.17g", d);
  } else {
    return usage(error, "%s: --%s: expected a string or a number", cmd, option);
  }
  return TRUE;
}

gboolean
stw_request_set_json(StwRequest *r, const char *json, GError **error)
{
  const char *cmd = r->kind->command;
  if (json == NULL || json[0] == '\0')
    return TRUE;
  g_autoptr(cJSON) o = cJSON_Parse(json);
  if (!cJSON_IsObject(o))
    return usage(error, "%s: the options are not a JSON object", cmd);
  const cJSON *m;
  cJSON_ArrayForEach(m, o) {
    g_autofree char *option = g_strdup(m->string);
    g_strdelimit(option, "_", '-');
    if (!in_list(r->kind->options, option)) {
      g_autofree char *known = g_strjoinv(", ", (char **)r->kind->options);
      return usage(error, "%s: no option '%s' (the options: %s)", cmd, m->string, known);
    }
    char *text = NULL;
    if (!member_text(r, option, m, in_list(r->kind->flags, option), &text, error))
      return FALSE;
    if (text != NULL)
      g_hash_table_insert(r->values, g_strdup(option), text);
    else
      g_hash_table_remove(r->values, option);
  }
  return TRUE;
}

/* ---- one value each ----------------------------------------------------------------------- */

/* The parsers of one option's text: OPTION is named as the CLI spells it, with its dashes. */

gboolean
stw_option_size(const char *option, const char *text, guint64 *out, GError **error)
{
  GError *local = NULL;
  if (text == NULL || stw_size_parse(text, out, &local))
    return TRUE;
  usage(error, "%s: %s", option, local->message);
  g_error_free(local);
  return FALSE;
}

gboolean
stw_option_budget(const char *option, const char *text, guint64 *out, GError **error)
{
  guint64 v = *out;
  if (!stw_option_size(option, text, &v, error))
    return FALSE;
  if (text != NULL && v == 0)
    return usage(error, "%s: the budget must be positive", option);
  *out = v;
  return TRUE;
}

gboolean
stw_option_count(const char *option, const char *text, guint64 min, guint64 max, guint64 *out,
                 GError **error)
{
  guint64 v = 0;
  if (text == NULL)
    return TRUE;
  if (!g_ascii_string_to_unsigned(text, 10, min, max, &v, NULL))
    return usage(error, "%s: '%s' is not valid: expected a whole number from %"
                 G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT, option, text, min, max);
  *out = v;
  return TRUE;
}

gboolean
stw_option_enum(const char *option, const char *text, const char *const *names, int *out,
                GError **error)
{
  if (text == NULL)
    return TRUE;
  for (int i = 0; names[i] != NULL; i++) {
    if (g_ascii_strcasecmp(text, names[i]) == 0) {
      *out = i;
      return TRUE;
    }
  }
  g_autofree char *all = g_strjoinv(", ", (char **)names);
  return usage(error, "%s: '%s' is not one of %s", option, text, all);
}

gboolean
stw_option_number(const char *option, const char *text, double min, double max, double *out,
                  GError **error)
{
  if (text == NULL)
    return TRUE;
  char *end = NULL;
  double v = g_ascii_strtod(text, &end);
  if (end == text || *end != '\0' || !(v >= min && v <= max))
    return usage(error, "%s: '%s' is not a number from %g to %g", option, text, min, max);
  *out = v;
  return TRUE;
}

gboolean
stw_option_enum_list(const char *option, const char *text, const char *const *names,
                     GArray *out, GError **error)
{
  if (text == NULL || strcmp(text, "all") == 0) {
    for (int i = 0; names[i] != NULL; i++)
      g_array_append_val(out, i);
    return TRUE;
  }
  g_auto(GStrv) parts = g_strsplit(text, ",", -1);
  if (parts[0] == NULL) {
    g_autofree char *all = g_strjoinv(", ", (char **)names);
    return usage(error, "%s: the list is empty: give one or more of %s, or all", option, all);
  }
  for (char **p = parts; *p != NULL; p++) {
    int v = 0;
    if (!stw_option_enum(option, g_strstrip(*p), names, &v, error))
      return FALSE;
    g_array_append_val(out, v);
  }
  return TRUE;
}

gboolean
stw_option_count_list(const char *option, const char *text, guint64 max, GArray *out,
                      GError **error)
{
  if (text == NULL)
    return TRUE;
  g_auto(GStrv) parts = g_strsplit(text, ",", -1);
  for (char **p = parts; *p != NULL; p++) {
    guint64 v;
    if (!stw_option_count(option, g_strstrip(*p), 1, max, &v, error))
      return FALSE;
    g_array_append_val(out, v);
  }
  return TRUE;
}

/* The same, of a request's OPTION (named without dashes). */

#define DASHED(option) g_autofree char *dashed = g_strconcat("--", option, NULL)

gboolean
stw_request_size(const StwRequest *r, const char *option, guint64 *out, GError **error)
{
  DASHED(option);
  return stw_option_size(dashed, stw_request_get(r, option), out, error);
}

gboolean
stw_request_budget(const StwRequest *r, const char *option, guint64 *out, GError **error)
{
  DASHED(option);
  return stw_option_budget(dashed, stw_request_get(r, option), out, error);
}

gboolean
stw_request_count(const StwRequest *r, const char *option, guint64 min, guint64 max,
                  guint64 *out, GError **error)
{
  DASHED(option);
  return stw_option_count(dashed, stw_request_get(r, option), min, max, out, error);
}

gboolean
stw_request_loop(const StwRequest *r, StwSynthOptions *so, GError **error)
{
  static const char *const names[] = { "device", "host", "host-via-device", NULL };
  static const StwGradients values[] = { 0, STW_GRADIENTS_HOST, STW_GRADIENTS_HOST_VIA_DEVICE };
  int where = 0, collectives = so->collectives, init = so->init, checkpoints = so->checkpoints;
  if (!stw_request_enum(r, "gradients", names, &where, error) ||
      !stw_request_enum(r, "init", stw_init_names, &init, error) ||
      !stw_request_enum(r, "checkpoints", stw_checkpoints_names, &checkpoints, error) ||
      !stw_request_enum(r, "collectives", stw_collectives_names, &collectives, error) ||
      !stw_request_count(r, "reduce-bucket-size", 1, STW_DEEPSPEED_MAX_BUFFER_ELEMS,
                         &so->reduce_bucket_size, error) ||
      !stw_request_count(r, "sub-group-size", 1, STW_DEEPSPEED_MAX_BUFFER_ELEMS,
                         &so->sub_group_size, error))
    return FALSE;
  so->host_gradients = values[where];
  so->collectives = (StwCollectives)collectives;
  so->init = (StwInit)init;
  so->checkpoints = (StwCheckpoints)checkpoints;
  return TRUE;
}

gboolean
stw_request_lora(const StwRequest *r, StwSynthOptions *so, GError **error)
{
  so->lora_targets = stw_request_get(r, "lora-targets");
  if (so->lora_targets != NULL && stw_request_get(r, "lora") == NULL)
    return usage(error, "--lora-targets: the adapters' rank is --lora RANK's, which is not "
                 "given");
  return stw_request_count(r, "lora", 1, 65536, &so->lora_rank, error);
}

gboolean
stw_request_enum(const StwRequest *r, const char *option, const char *const *names, int *out,
                 GError **error)
{
  DASHED(option);
  return stw_option_enum(dashed, stw_request_get(r, option), names, out, error);
}

gboolean
stw_request_number(const StwRequest *r, const char *option, double min, double max,
                   double *out, GError **error)
{
  DASHED(option);
  return stw_option_number(dashed, stw_request_get(r, option), min, max, out, error);
}

/* OPTION was given only where SATISFIED: else the caller asked for what would be ignored. */
static gboolean
needs(const StwRequest *r, const char *option, const char *what, gboolean satisfied,
      GError **error)
{
  if (stw_request_get(r, option) == NULL || satisfied)
    return TRUE;
  return usage(error, "%s: --%s goes with %s; without it the option would be ignored",
               r->kind->command, option, what);
}

/* ---- what the planning commands share ----------------------------------------------------- */

/* The profile named by "hw", else T's device where stowage has its profile, else the default. */
static gboolean
hardware(const StwRequest *r, const StwTrace *t, StwHardware *hw, GError **error)
{
  const char *name = stw_request_get(r, "hw");
  if (name != NULL)
    return stw_hardware_lookup(name, hw, error);
  if (t != NULL && t->device.name != NULL && stw_hardware_lookup(t->device.name, hw, NULL)) {
    g_strlcpy(hw->origin, "the trace's device, a shipped profile (its sources: "
              "docs/hardware.md)", sizeof hw->origin);
    return TRUE;
  }
  if (!stw_hardware_lookup(STW_HARDWARE_DEFAULT, hw, error))
    return FALSE;
  if (t != NULL && t->device.name != NULL)
    g_snprintf(hw->origin, sizeof hw->origin, "the default: the trace's device, %s, has no "
               "profile of that name (--hw names one)", t->device.name);
  else
    g_strlcpy(hw->origin, "the default (--hw names another)", sizeof hw->origin);
  return TRUE;
}

/* "gpus" and "nodes": the world, "gpus" per node with "nodes" (the profile's node without it),
 * else T's world size (T NULL: left 0, each trace's own); then its topology on the profile. */
static gboolean
world(const StwRequest *r, const StwTrace *t, StwPlannerOptions *o, GError **error)
{
  guint64 gpus = 0, nodes = 0;
  if (!stw_request_count(r, "gpus", 1, STW_PLAN_MAX_WORLD, &gpus, error) ||
      !stw_request_count(r, "nodes", 1, STW_PLAN_MAX_WORLD, &nodes, error))
    return FALSE;
  o->world_size = (guint32)gpus;
  if (nodes > 0) {
    guint64 per_node = gpus != 0 ? gpus : MAX(o->hw.node_gpus, 1);
    if (per_node * nodes > STW_PLAN_MAX_WORLD)
      return usage(error, "--nodes: %" G_GUINT64_FORMAT " nodes of %" G_GUINT64_FORMAT
                   " GPUs are more than the %u ranks a plan holds", nodes, per_node,
                   STW_PLAN_MAX_WORLD);
    o->nodes = (guint32)nodes;
    o->world_size = (guint32)(per_node * nodes);
    if (stw_request_get(r, "cpu") == NULL) /* the profile's host memory is one node's */
      o->budgets.cpu_bytes = o->hw.cpu_memory_bytes > G_MAXUINT64 / nodes
                                 ? G_MAXUINT64
                                 : o->hw.cpu_memory_bytes * nodes;
  }
  if (o->world_size == 0 && t != NULL) /* the world the trace was profiled in */
    o->world_size = MAX(t->device.world_size, 1);
  GError *local = NULL; /* without a trace nor "gpus", each trace planned later says its own */
  if (o->world_size != 0 && !stw_planner_check_topology(&o->hw, o->world_size, o->nodes, &local)) {
    usage(error, "%s", local->message);
    g_error_free(local);
    return FALSE;
  }
  return TRUE;
}

/* "layout": how several GPUs share the chunks; shards refused where the world is one GPU (a
 * world not known yet, left to each trace's: one GPU's plans keep the groups' layout). By
 * default each policy's own where a command predicts, and groups where `plan` writes a plan to
 * train with (the runtime replays groups only). */
static gboolean
layout(const StwRequest *r, StwPlannerOptions *o, GError **error)
{
  int l = r->kind == &stw_request_plan_kind ? STW_LAYOUT_GROUPS : STW_LAYOUT_POLICY;
  if (!stw_request_enum(r, "layout", stw_layout_names, &l, error))
    return FALSE;
  o->layout = (StwLayout)l;
  if (o->layout == STW_LAYOUT_SHARDS && o->world_size == 1)
    return usage(error, "%s: --layout shards: one GPU has no ranks to share its chunks among "
                 "(give --gpus)", r->kind->command);
  return TRUE;
}

gboolean
stw_request_planning(const StwRequest *r, const StwTrace *t, StwPlannerOptions *o,
                     GError **error)
{
  StwHardware hw;
  if (!hardware(r, t, &hw, error))
    return FALSE;
  stw_planner_options_init(o, &hw);
  o->measured_times = stw_request_get(r, "measured-times") != NULL;
  if (o->measured_times && t == NULL)
    return usage(error, "%s: --measured-times goes with a trace; a model is synthesized for its "
                 "profile, and timed there", r->kind->command);
  int activations = o->activations;
  if (!stw_request_enum(r, "activations", stw_activations_names, &activations, error))
    return FALSE;
  o->activations = (StwActivations)activations;
  int state = -1; /* whatif sweeps a list of them (sweep.c) */
  if (r->kind != &stw_request_whatif_kind &&
      !stw_request_enum(r, "optimizer-state", stw_state_dtype_names, &state, error))
    return FALSE;
  if (state >= 0)
    o->state_dtype = (int)stw_state_dtype_at(state);
  if (!stw_request_size(r, "nvme", &o->budgets.storage_bytes, error))
    return FALSE;
  const char *storage = stw_request_get(r, "storage");
  if (storage != NULL && o->budgets.storage_bytes == 0)
    return usage(error, "%s: --storage goes with --nvme SIZE; without it the option would be "
                 "ignored", r->kind->command);
  if (storage != NULL && !stw_hardware_use_storage(&o->hw, storage, error)) {
    g_prefix_error(error, "%s: --storage: ", r->kind->command);
    return FALSE;
  }
  if (o->budgets.storage_bytes > 0 && o->hw.storage_kind[0] == '\0')
    return usage(error, "%s: --nvme: hardware profile %s has no storage tier: measure one with "
                 "`stowage probe --nvme DIR` (or give a profile with a \"storage\" section, "
                 "docs/hardware.md)", r->kind->command, o->hw.name);
  guint64 devices = 0;
  if (!stw_request_count(r, "nvme-devices", 1, STW_HARDWARE_MAX_STORAGE_DEVICES, &devices, error))
    return FALSE;
  if (devices > 0 && o->budgets.storage_bytes == 0)
    return usage(error, "%s: --nvme-devices goes with --nvme SIZE; without it the option would be "
                 "ignored", r->kind->command);
  if (devices > 0)
    stw_hardware_set_storage_devices(&o->hw, (guint32)devices);
  if (o->budgets.storage_bytes > o->hw.storage_bytes && o->hw.storage_bytes > 0)
    return usage(error, "%s: --nvme: %" G_GUINT64_FORMAT " bytes, more than the %"
                 G_GUINT64_FORMAT " the profile %s's storage holds", r->kind->command,
                 o->budgets.storage_bytes, o->hw.storage_bytes, o->hw.name);
  return stw_request_size(r, "cpu", &o->budgets.cpu_bytes, error) &&
         stw_request_size(r, "pinned", &o->budgets.pinned_bytes, error) &&
         stw_request_size(r, "reserve", &o->budgets.reserved_bytes, error) &&
         world(r, t, o, error) && layout(r, o, error);
}

gboolean
stw_request_require(const StwRequest *r, const char *option, GError **error)
{
  if (stw_request_get(r, option) != NULL)
    return TRUE;
  return usage(error, "%s: --%s SIZE is required", r->kind->command, option);
}

gboolean
stw_request_gpu_budget(const StwRequest *r, const char *option, const StwPlannerOptions *o,
                       guint64 *out, GError **error)
{
  if (!stw_request_require(r, option, error))
    return FALSE;
  guint64 bytes = 0;
  if (!stw_request_budget(r, option, &bytes, error) ||
      !stw_request_on_device(r, option, o, bytes, error))
    return FALSE;
  *out = bytes;
  return TRUE;
}

gboolean
stw_request_on_device(const StwRequest *r, const char *option, const StwPlannerOptions *o,
                      guint64 bytes, GError **error)
{
  if (bytes <= o->hw.gpu_memory_bytes || stw_request_get(r, "beyond-device") != NULL)
    return TRUE;
  g_autofree char *b = stw_size_format(bytes);
  g_autofree char *m = stw_size_format(o->hw.gpu_memory_bytes);
  return usage(error, "--%s: %s is more than the %s of GPU memory that %s has: choose a larger "
               "GPU with --hw, or say --beyond-device to plan for one that does not exist",
               option, b, m, o->hw.name);
}

gboolean
stw_request_minmem(const StwRequest *r, const StwTrace *t, StwPlannerOptions *o,
                   StwPolicy *policy, double *allowed, GError **error)
{
  const char *slowdown = stw_request_get(r, "slowdown");
  *allowed = 0.10;
  if (slowdown != NULL) {
    char *end = NULL;
    double v = g_ascii_strtod(slowdown, &end) / 100.0;
    if (end == slowdown || (*end != '\0' && strcmp(end, "%") != 0) || !(v >= 0) || v > 100)
      return usage(error, "--slowdown: '%s' is not a percentage such as 10%%", slowdown);
    *allowed = v;
  }
  int p = STW_POLICY_STOWAGE;
  if (!stw_request_enum(r, "policy", stw_policy_names, &p, error))
    return FALSE;
  *policy = (StwPolicy)p;
  /* --host searches the host budget at one GPU budget (--gpu, or all the profile's) */
  gboolean host = stw_request_get(r, "host") != NULL;
  if (!host && stw_request_get(r, "gpu") != NULL)
    return usage(error, "minmem: --gpu goes with --host (without it minmem searches the GPU "
                 "budget)");
  if (host && stw_request_get(r, "cpu") != NULL)
    return usage(error, "minmem: --host searches the host budget: give the GPU's with --gpu, "
                 "not --cpu");
  if (!stw_request_planning(r, t, o, error))
    return FALSE;
  if (host && stw_request_get(r, "gpu") != NULL)
    return stw_request_gpu_budget(r, "gpu", o, &o->budgets.gpu_bytes, error);
  if (host)
    o->budgets.gpu_bytes = o->hw.gpu_memory_bytes;
  return TRUE;
}

gboolean
stw_request_minmem_run(const StwRequest *r, const StwTrace *t, const StwPlannerOptions *o,
                       StwPolicy policy, double allowed, StwMinmem *out, GError **error)
{
  if (stw_request_get(r, "host") != NULL)
    return stw_whatif_minmem_host(t, o, policy, allowed, o->budgets.gpu_bytes, out, error);
  return stw_whatif_minmem(t, o, policy, allowed, stw_request_get(r, "beyond-device") != NULL,
                           out, error);
}

gboolean
stw_request_plan(const StwRequest *r, const StwTrace *t, StwPlannerOptions *o, GError **error)
{
  if (!stw_request_planning(r, t, o, error) ||
      !stw_request_gpu_budget(r, "gpu", o, &o->budgets.gpu_bytes, error))
    return FALSE;
  int policy = o->policy, objective = o->objective;
  if (!stw_request_enum(r, "policy", stw_policy_names, &policy, error) ||
      !stw_request_enum(r, "objective", stw_objective_names, &objective, error))
    return FALSE;
  o->policy = (StwPolicy)policy;
  o->objective = (StwObjective)objective;
  o->allow_oversized = stw_request_get(r, "oversized") != NULL;
  if (!needs(r, "zero-stage", "--policy zero-offload", o->policy == STW_POLICY_ZERO_OFFLOAD,
             error) ||
      !stw_request_count(r, "zero-stage", 2, 3, &o->zero_stage, error))
    return FALSE;
  return needs(r, "gemini-fraction", "--policy gemini-static",
               o->policy == STW_POLICY_GEMINI_STATIC, error) &&
         needs(r, "margin", "--policy patrickstar", o->policy == STW_POLICY_PATRICKSTAR, error) &&
         needs(r, "prefetch-bucket", "--policy zero-infinity, or zero-offload at --zero-stage 3",
               o->policy == STW_POLICY_ZERO_INFINITY ||
                   (o->policy == STW_POLICY_ZERO_OFFLOAD && o->zero_stage == 3),
               error) &&
         needs(r, "objective", "--policy stowage (the default)", o->policy == STW_POLICY_STOWAGE,
               error) &&
         needs(r, "activations", "--policy stowage (the default; the baselines keep what their "
               "systems keep)", o->policy == STW_POLICY_STOWAGE, error) &&
         stw_request_count(r, "chunk-size", 1, STW_TRACE_MAX_NUMEL, &o->chunk_size_elems,
                           error) &&
         stw_request_count(r, "prefetch-bucket", 1, STW_TRACE_MAX_NUMEL,
                           &o->prefetch_bucket_elems, error) &&
         stw_request_number(r, "gemini-fraction", 0, 1, &o->gemini_fraction, error) &&
         stw_request_number(r, "margin", 0, 1, &o->margin_share, error);
}

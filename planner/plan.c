/* plan.c — the plan model, its schedule's actions, and its one JSON reader and writer. */
#include "config.h"

#include <stowage/plan.h>

#include <string.h>

#include <stowage/files.h>

#include "json.h"

G_DEFINE_QUARK(stw-plan-error-quark, stw_plan_error)

const char *const stw_policy_names[] = { "stowage", "patrickstar", "zero-offload",
                                         "zero-infinity", "gemini-static", "lru", NULL };
const char *const stw_optim_names[] = { "cpu", "gpu", "gpu-resident", "cpu-storage", "storage",
                                         NULL };
static const char *const action_names[] = { "evict", "drop", "fetch", "gather",
                                             "reduce_scatter" };

/* The predictions in the file's order: the one list the reader, the writer, the limits and check
 * share. */
static const struct {
  const char *name;
  gsize offset;      /* into StwPlanPredictions; G_MAXSIZE: peak_op, a guint32 */
  gboolean time, multi;
  guint32 since;     /* the cost model that brought it: older plans do not have it */
} pred_fields[STW_N_PREDICTIONS] = {
#define F(field, time, multi) { #field, G_STRUCT_OFFSET(StwPlanPredictions, field), time, multi, 1 }
  F(h2d_bytes, FALSE, FALSE),    F(d2h_bytes, FALSE, FALSE), F(lower_bound_bytes, FALSE, FALSE),
  F(peak_gpu_bytes, FALSE, FALSE), { "peak_op", G_MAXSIZE, FALSE, FALSE, 1 },
  F(cpu_bytes, FALSE, FALSE),    F(compute_ns, TRUE, FALSE), F(stall_ns, TRUE, FALSE),
  F(cpu_adam_ns, TRUE, FALSE),   F(h2d_ns, TRUE, FALSE),     F(d2h_ns, TRUE, FALSE),
  F(cost_ns, TRUE, FALSE),       F(comm_bytes, FALSE, TRUE), F(comm_ns, TRUE, TRUE),
  { "host_overhead_bytes", G_STRUCT_OFFSET(StwPlanPredictions, host_overhead_bytes), TRUE, FALSE,
    2 },
  /* the storage tier's: written where a plan has optimizer state there */
  { "storage_bytes", G_STRUCT_OFFSET(StwPlanPredictions, storage_bytes), FALSE, FALSE, 3 },
  { "storage_ns", G_STRUCT_OFFSET(StwPlanPredictions, storage_ns), TRUE, FALSE, 3 },
#undef F
};

void
stw_plan_predictions_list(const StwPlanPredictions *p, StwPrediction out[STW_N_PREDICTIONS])
{
  for (gsize f = 0; f < STW_N_PREDICTIONS; f++) {
    guint64 v = pred_fields[f].offset == G_MAXSIZE
                    ? p->peak_op
                    : G_STRUCT_MEMBER(guint64, p, pred_fields[f].offset);
    out[f] = (StwPrediction){ pred_fields[f].name, v, pred_fields[f].time, pred_fields[f].multi };
  }
}

const char *const stw_bound_names[] = { "compute", "h2d", "d2h", "cpu_adam", "storage",
                                        "collectives", NULL };
const char *const stw_bound_words[] = { "compute", "host-to-device copies (PCIe)",
                                        "device-to-host copies (PCIe)", "CPU Adam",
                                        "the storage tier", "the collectives", NULL };

StwBound
stw_plan_bound(const StwPlan *p, guint64 *busy_ns)
{
  const StwPlanPredictions *q = &p->pred;
  const guint64 busy[STW_N_BOUNDS] = { q->compute_ns, q->h2d_ns, q->d2h_ns, q->cpu_adam_ns,
                                       q->storage_ns, p->chunking->world > 1 ? q->comm_ns : 0 };
  StwBound best = STW_BOUND_COMPUTE;
  for (int b = 1; b < STW_N_BOUNDS; b++)
    if (busy[b] > busy[best])
      best = (StwBound)b;
  if (busy_ns != NULL)
    *busy_ns = busy[best];
  return best;
}

guint64
stw_plan_rank_rss(const StwPlan *p)
{
  if (!p->hw.compute_on_host)
    return 0;
  guint64 world = MAX(p->chunking->world, 1);
  return p->pred.peak_gpu_bytes + (p->pred.cpu_bytes + p->pred.host_overhead_bytes) / world;
}

gboolean
stw_plan_within_limits(const StwPlan *p, GError **error)
{
  const struct {
    const char *name;
    guint64 v;
  } budgets[] = { { "gpu_bytes", p->budgets.gpu_bytes }, { "cpu_bytes", p->budgets.cpu_bytes },
                  { "reserved_bytes", p->budgets.reserved_bytes },
                  { "storage_bytes", p->budgets.storage_bytes },
                  { "pinned_bytes", p->budgets.pinned_bytes } };
  for (gsize i = 0; i < G_N_ELEMENTS(budgets); i++) {
    if (budgets[i].v > STW_JSON_INT_MAX) {
      g_set_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INFEASIBLE,
                  "the budget %s of %" G_GUINT64_FORMAT " bytes is more than a plan holds "
                  "(2^53)", budgets[i].name, budgets[i].v);
      return FALSE;
    }
  }
  StwPrediction pr[STW_N_PREDICTIONS];
  stw_plan_predictions_list(&p->pred, pr);
  for (gsize f = 0; f < STW_N_PREDICTIONS; f++) {
    if (pr[f].value > STW_JSON_INT_MAX) {
      g_set_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_INFEASIBLE,
                  "the plan's prediction %s is %" G_GUINT64_FORMAT "%s, more than a plan holds "
                  "(2^53): the trace and the hardware profile describe an iteration beyond "
                  "this world's", pr[f].name, pr[f].value,
                  pr[f].value >= G_GUINT64_CONSTANT(1) << 62 ? " or more" : "");
      return FALSE;
    }
  }
  return TRUE;
}

StwPlan *
stw_plan_new(void)
{
  StwPlan *p = g_new0(StwPlan, 1);
  p->trace_digest = g_strdup("");
  p->trace_file = g_strdup("");
  p->recompute = g_array_new(FALSE, FALSE, sizeof(guint32));
  p->offload = g_array_new(FALSE, FALSE, sizeof(guint32));
  p->moves = g_array_new(FALSE, FALSE, sizeof(StwActivationMove));
  return p;
}

guint8 *
stw_plan_block_choices(const StwPlan *p, guint32 n_blocks, GError **error)
{
  g_autofree guint8 *choice = g_new0(guint8, MAX(n_blocks, 1));
  const struct {
    const char *key;
    const GArray *blocks;
    StwBlockChoice choice;
  } lists[] = { { "recompute", p->recompute, STW_BLOCK_RECOMPUTE },
                { "offload", p->offload, STW_BLOCK_OFFLOAD } };
  for (gsize l = 0; l < G_N_ELEMENTS(lists); l++) {
    for (guint i = 0; i < lists[l].blocks->len; i++) {
      guint32 b = g_array_index(lists[l].blocks, guint32, i);
      if (b >= n_blocks) {
        g_set_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_MISMATCH, "$.trace.%s[%u]: block %u, "
                    "and the trace has %u blocks", lists[l].key, i, b, n_blocks);
        return NULL;
      }
      if (choice[b] != STW_BLOCK_KEEP) {
        g_set_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_MISMATCH, "$.trace.%s[%u]: block %u, "
                    "which the plan recomputes: a block is kept, recomputed or offloaded",
                    lists[l].key, i, b);
        return NULL;
      }
      choice[b] = (guint8)lists[l].choice;
    }
  }
  return g_steal_pointer(&choice);
}

/* Whether T's blocks are decided (a planned trace): as CHOICE says, or otherwise. */
static gboolean
decided_as(const StwTrace *t, const guint8 *choice, gboolean *same)
{
  gboolean decided = FALSE;
  *same = TRUE;
  for (guint32 k = 0; k < t->blocks->len; k++) {
    StwBlockChoice c = g_array_index(t->blocks, StwBlock, k).choice;
    decided |= c != STW_BLOCK_KEEP;
    *same &= c == (StwBlockChoice)choice[k];
  }
  return decided;
}

/* T with the loop buffers of P's ranks (stw_trace_with_loop_buffers), in *OWNED where it has
 * any (what *OWNED held freed). */
static const StwTrace *
with_loop_buffers(const StwPlan *p, const StwTrace *t, StwTrace **owned)
{
  StwTrace *buffered = stw_trace_with_loop_buffers(t, p->chunking->world);
  if (buffered == NULL)
    return t;
  stw_trace_free(*owned);
  *owned = buffered;
  return buffered;
}

const StwTrace *
stw_plan_trace(const StwPlan *p, const StwTrace *t, StwTrace **owned, GError **error)
{
  *owned = NULL;
  if (p->recompute->len == 0 && p->offload->len == 0)
    return with_loop_buffers(p, t, owned);
  g_autofree guint8 *choice = stw_plan_block_choices(p, t->blocks->len, error);
  if (choice == NULL)
    return NULL;
  gboolean same;
  if (decided_as(t, choice, &same)) {
    if (!same)
      g_set_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_MISMATCH, "the trace decides its "
                  "blocks' activations, and not as the plan does");
    return same ? with_loop_buffers(p, t, owned) : NULL;
  }
  GError *local = NULL;
  *owned = stw_trace_decide(t, choice, &local);
  if (*owned == NULL) {
    g_set_error(error, STW_PLAN_ERROR, STW_PLAN_ERROR_MISMATCH, "the plan decides the "
                "activations of its trace's blocks, and this trace's cannot be: %s",
                local->message);
    g_error_free(local);
    return NULL;
  }
  return with_loop_buffers(p, *owned, owned);
}

void
stw_plan_free(StwPlan *p)
{
  if (p == NULL)
    return;
  g_free(p->trace_digest);
  g_free(p->trace_file);
  g_array_unref(p->recompute);
  g_array_unref(p->offload);
  g_array_unref(p->moves);
  stw_chunking_free(p->chunking);
  g_free(p->optim);
  stw_schedule_clear(&p->schedule);
  g_free(p);
}

char *
stw_plan_item_name(const StwChunking *c, guint32 item)
{
  guint32 n = MAX(stw_chunking_count(c), 1);
  guint32 g = stw_plan_item_group(c, item);
  if (g != G_MAXUINT32)
    return g_strdup_printf("group:%u", g);
  return g_strdup_printf("%s:%u", stw_chunk_list_names[MIN(item / n, STW_N_LISTS - 1)], item % n);
}

guint64
stw_plan_group_bytes(const StwChunking *c, guint32 g)
{
  guint64 bytes = 0;
  for (guint32 r = 1; r < c->world; r++) {
    guint32 i = g * c->world + r;
    bytes += i < stw_chunking_count(c)
                 ? stw_chunk_bytes(c, i, STW_LIST_PARAM)
                 : c->size_elems * stw_chunk_list_elem_bytes(STW_LIST_PARAM, c->dtype,
                                                                       c->state_dtype);
  }
  return bytes;
}

guint64
stw_plan_group_chunk_bytes(const StwChunking *c, guint32 g)
{
  guint64 chunk = 0;
  for (guint32 i = g * c->world; i < MIN((g + 1) * c->world, stw_chunking_count(c)); i++)
    chunk = MAX(chunk, stw_chunk_bytes(c, i, STW_LIST_PARAM));
  return chunk;
}

guint64
stw_plan_nonmodel_at(const StwTrace *t, guint32 k)
{
  return MAX(stw_trace_op(t, k)->nonmodel_peak_bytes,
             stw_trace_op(t, (k + 1) % t->ops->len)->nonmodel_peak_bytes);
}

guint64
stw_plan_capacity(const StwTrace *t, const StwBudgets *b, guint32 k)
{
  guint64 usable = stw_budgets_usable(b), nonmodel = stw_plan_nonmodel_at(t, k);
  return nonmodel >= usable ? 0 : usable - nonmodel;
}

guint32
stw_plan_nonmodel_overflow(const StwTrace *t, const StwBudgets *b, guint64 *over_bytes)
{
  for (guint32 k = 0; k < t->ops->len; k++) {
    guint64 taken = stw_plan_nonmodel_at(t, k) + b->reserved_bytes;
    if (taken > b->gpu_bytes) {
      *over_bytes = taken - b->gpu_bytes;
      return k;
    }
  }
  return G_MAXUINT32;
}

/* ---- the schedule ------------------------------------------------------------------------ */

const char *
stw_action_kind_name(StwActionKind kind)
{
  return action_names[kind];
}

/* The order of kinds within a moment: a group's gradients leave before it may be dropped,
 * removals make room for fetches, and a gather needs its rank's own chunk already fetched. */
static int
kind_rank(guint32 kind)
{
  switch (kind) {
  case STW_ACTION_REDUCE_SCATTER: return 0;
  case STW_ACTION_EVICT:
  case STW_ACTION_DROP: return 1;
  case STW_ACTION_FETCH: return 2;
  default: return 3;
  }
}

static int
action_cmp(gconstpointer a, gconstpointer b)
{
  const StwAction *x = a, *y = b;
  if (x->moment != y->moment)
    return x->moment < y->moment ? -1 : 1;
  int xr = kind_rank(x->kind), yr = kind_rank(y->kind);
  if (xr != yr)
    return xr < yr ? -1 : 1;
  if (x->item != y->item)
    return x->item < y->item ? -1 : 1;
  return 0;
}

void
stw_actions_sort(GArray *actions)
{
  g_array_sort(actions, action_cmp);
}

void
stw_schedule_clear(StwSchedule *s)
{
  g_clear_pointer(&s->resident, g_free);
  g_clear_pointer(&s->dirty, g_free);
  if (s->actions != NULL)
    g_array_unref(s->actions);
  s->actions = NULL;
}

/* ---- writing ------------------------------------------------------------------------------ */

static cJSON *
item_ref(const StwChunking *c, guint32 item)
{
  g_autofree char *name = stw_plan_item_name(c, item);
  return cJSON_CreateString(name);
}

char *
stw_plan_to_string(const StwPlan *p, const StwTrace *recorded)
{
  g_autoptr(StwTrace) owned = NULL;
  const StwTrace *t = stw_plan_trace(p, recorded, &owned, NULL);
  if (t == NULL) /* a pair that was never checked: the op names are left out */
    t = recorded;
  const StwChunking *c = p->chunking;
  guint32 n = stw_chunking_count(c);
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "format", STW_PLAN_FORMAT);
  stw_json_add_u64(root, "version", STW_PLAN_VERSION);
  cJSON *tr = cJSON_AddObjectToObject(root, "trace");
  cJSON_AddStringToObject(tr, "digest", p->trace_digest);
  cJSON_AddStringToObject(tr, "file", p->trace_file);
  stw_json_add_u64(tr, "ops", p->trace_ops);
  if (p->recompute->len > 0)
    cJSON_AddItemToObject(tr, "recompute", stw_json_u64_array((const guint32 *)p->recompute->data,
                                                              p->recompute->len));
  if (p->offload->len > 0)
    cJSON_AddItemToObject(tr, "offload", stw_json_u64_array((const guint32 *)p->offload->data,
                                                            p->offload->len));
  if (p->moves->len > 0) /* the offloaded blocks', or the trace's checkpoints on the host */
    cJSON_AddItemToObject(tr, "activation_moves", stw_json_activation_moves(p->moves));
  if (p->retiming.scale > 0) { /* measured on another device, re-timed for the profile */
    cJSON *ot = cJSON_AddObjectToObject(tr, "op_times");
    cJSON_AddNumberToObject(ot, "scale", p->retiming.scale);
    stw_json_add_u64(ot, "op_overhead_ns", p->retiming.op_overhead_ns);
  }
  cJSON_AddStringToObject(root, "policy", stw_policy_names[p->policy]);
  cJSON *b = cJSON_AddObjectToObject(root, "budgets");
  stw_json_add_u64(b, "gpu_bytes", p->budgets.gpu_bytes);
  stw_json_add_u64(b, "cpu_bytes", p->budgets.cpu_bytes);
  stw_json_add_u64(b, "reserved_bytes", p->budgets.reserved_bytes);
  if (p->budgets.storage_bytes > 0)
    stw_json_add_u64(b, "storage_bytes", p->budgets.storage_bytes);
  if (p->budgets.pinned_bytes > 0)
    stw_json_add_u64(b, "pinned_bytes", p->budgets.pinned_bytes);

  cJSON *pr = cJSON_AddObjectToObject(root, "predictions");
  const StwPlanPredictions *q = &p->pred;
  StwPrediction fields[STW_N_PREDICTIONS];
  stw_plan_predictions_list(q, fields);
  for (gsize f = 0; f < STW_N_PREDICTIONS; f++) {
    gboolean storage = pred_fields[f].since >= 3; /* only where the plan uses the tier */
    if ((!fields[f].multi || c->world > 1) && (!storage || q->storage_bytes > 0))
      stw_json_add_u64(pr, fields[f].name, fields[f].value);
  }
  stw_json_add_u64(pr, "cost_model", q->cost_model);

  cJSON_AddItemToObject(root, "hardware", stw_hardware_to_json(&p->hw));

  cJSON *ch = cJSON_AddObjectToObject(root, "chunks");
  stw_json_add_u64(ch, "size_elems", c->size_elems);
  cJSON_AddStringToObject(ch, "dtype", stw_dtype_name(c->dtype));
  stw_json_add_u64(ch, "count", n);
  if (c->world > 1)
    stw_json_add_u64(ch, "world_size", c->world);
  if (c->nodes > 1)
    stw_json_add_u64(ch, "nodes", c->nodes);
  if (c->amsgrad)
    cJSON_AddBoolToObject(ch, "amsgrad", TRUE);
  if (c->shards)
    cJSON_AddBoolToObject(ch, "shards", TRUE);
  if (c->state_dtype != STW_DTYPE_FP32)
    cJSON_AddStringToObject(ch, "optimizer_state", stw_state_dtype_name(c->state_dtype));
  cJSON *layout = cJSON_AddArrayToObject(root, "layout");
  for (guint32 i = 0; i < n; i++) {
    const StwChunk *k = stw_chunking_chunk(c, i);
    cJSON *o = cJSON_CreateObject();
    stw_json_add_u64(o, "chunk", i);
    stw_json_add_u64(o, "capacity_elems", k->capacity_elems);
    stw_json_add_u64(o, "owner", k->owner);
    cJSON_AddStringToObject(o, "optimizer", stw_optim_names[p->optim[i]]);
    if (k->frozen)
      cJSON_AddBoolToObject(o, "frozen", TRUE);
    cJSON *tensors = cJSON_AddArrayToObject(o, "tensors");
    for (guint32 j = 0; j < k->count; j++) {
      const StwPlacement *pl = &g_array_index(c->placements, StwPlacement, k->first + j);
      cJSON *pair = cJSON_CreateArray();
      cJSON_AddItemToArray(pair, stw_json_u64(pl->tensor));
      cJSON_AddItemToArray(pair, stw_json_u64(pl->offset));
      cJSON_AddItemToArray(tensors, pair);
    }
    cJSON_AddItemToArray(layout, o);
  }

  cJSON *initial = cJSON_AddArrayToObject(root, "initial");
  for (guint32 item = 0; item < stw_plan_n_items(c); item++) {
    if (!p->schedule.resident[item])
      continue;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "chunk", item_ref(c, item));
    cJSON_AddBoolToObject(o, "dirty", p->schedule.dirty[item]);
    cJSON_AddItemToArray(initial, o);
  }

  cJSON *sched = cJSON_AddArrayToObject(root, "schedule");
  const StwAction *a = (const StwAction *)p->schedule.actions->data;
  guint32 na = p->schedule.actions->len;
  for (guint32 i = 0; i < na;) {
    guint32 m = a[i].moment;
    cJSON *o = cJSON_CreateObject();
    stw_json_add_u64(o, "moment", m);
    cJSON_AddStringToObject(o, "op", m < t->ops->len ? stw_trace_op(t, m)->name : "(end)");
    cJSON *lists[STW_N_ACTION_KINDS] = { NULL };
    for (; i < na && a[i].moment == m; i++) {
      if (lists[a[i].kind] == NULL)
        lists[a[i].kind] = cJSON_AddArrayToObject(o, action_names[a[i].kind]);
      cJSON_AddItemToArray(lists[a[i].kind], item_ref(c, a[i].item));
    }
    cJSON_AddItemToArray(sched, o);
  }
  char *text = stw_json_print_lines(root);
  cJSON_Delete(root);
  return text;
}

gboolean
stw_plan_save(const StwPlan *p, const StwTrace *t, const char *file, GError **error)
{
  if (!stw_plan_within_limits(p, error))
    return FALSE;
  g_autofree char *text = stw_plan_to_string(p, t);
  return stw_file_write_atomic(file, text, strlen(text), error);
}

/* ---- reading ------------------------------------------------------------------------------ */

static const char *const root_members[] = { "format", "version", "trace", "policy", "budgets",
                                            "predictions", "hardware", "chunks", "layout",
                                            "initial", "schedule", NULL };
static const char *const trace_members[] = { "digest", "file", "ops", "recompute", "offload",
                                             "activation_moves", "op_times", NULL };
static const char *const op_times_members[] = { "scale", "op_overhead_ns", NULL };
static const char *const move_members[] = { "block", "out", "in", "bytes", NULL };
static const char *const budget_members[] = { "gpu_bytes", "cpu_bytes", "reserved_bytes",
                                               "storage_bytes", "pinned_bytes", NULL };
static const char *const chunks_members[] = { "size_elems", "dtype", "count", "world_size", "nodes",
                                              "amsgrad", "optimizer_state", "shards", NULL };
static const char *const layout_members[] = { "chunk", "capacity_elems", "owner", "optimizer",
                                              "frozen", "tensors", NULL };
static const char *const initial_members[] = { "chunk", "dirty", NULL };
static const char *const moment_members[] = { "moment", "op", "evict", "drop", "fetch",
                                              "gather", "reduce_scatter", NULL };

/* The sizes the reader allows, checked before the tree is built (json.h). */
static const StwJsonArrayLimit plan_arrays[] = {
  { "$.trace.recompute", STW_TRACE_MAX_OPS },
  { "$.layout", STW_PLAN_MAX_CHUNKS },
  { "$.layout[].tensors", STW_TRACE_MAX_TENSORS },
  { "$.layout[].tensors[]", 2 },
  { "$.initial", STW_N_LISTS * STW_PLAN_MAX_CHUNKS + STW_PLAN_MAX_CHUNKS },
  { "$.schedule", STW_TRACE_MAX_OPS + 1 },
  { "$.schedule[].evict", STW_PLAN_MAX_ACTIONS },
  { "$.schedule[].drop", STW_PLAN_MAX_ACTIONS },
  { "$.schedule[].fetch", STW_PLAN_MAX_ACTIONS },
  { "$.schedule[].gather", STW_PLAN_MAX_ACTIONS },
  { "$.schedule[].reduce_scatter", STW_PLAN_MAX_ACTIONS },
  { "$.hardware.pcie.pinned", 64 },
  { "$.hardware.pcie.pageable", 64 },
  { NULL, 0 },
};
static const StwJsonLimits plan_limits = { .format = STW_PLAN_FORMAT,
                                           .max_values = STW_PLAN_MAX_VALUES, .max_array = 64,
                                           .arrays = plan_arrays };

typedef struct {
  StwPlan *plan;
  guint32 n_chunks;
  guint32 n_groups;
} Reading;

/* Parses "list:index" or "group:index" at R's current path. */
static gboolean
parse_ref(StwJsonReader *r, const cJSON *item, const Reading *rd, guint32 *out, GError **error)
{
  if (!cJSON_IsString(item))
    return stw_json_fail(r, error, "expected a chunk reference such as \"param:3\"");
  const char *s = item->valuestring, *colon = strchr(s, ':');
  int list = -1;
  for (int l = 0; colon != NULL && stw_chunk_list_names[l] != NULL; l++) {
    if (strlen(stw_chunk_list_names[l]) == (gsize)(colon - s) && strncmp(s, stw_chunk_list_names[l], colon - s) == 0)
      list = l;
  }
  gboolean group = colon != NULL && colon - s == 5 && strncmp(s, "group", 5) == 0;
  guint64 idx = 0;
  if ((list < 0 && !group) || !g_ascii_string_to_unsigned(colon + 1, 10, 0, G_MAXUINT32, &idx,
                                                          NULL))
    return stw_json_fail(r, error, "\"%.64s\" is not a chunk reference (expected LIST:INDEX "
                         "with LIST one of param, master, momentum, variance, or group:INDEX)",
                         s);
  if (group) {
    if (idx >= rd->n_groups)
      return stw_json_fail(r, error, "group %" G_GUINT64_FORMAT " does not exist (the plan has "
                           "%u chunk groups)", idx, rd->n_groups);
    *out = STW_N_LISTS * rd->n_chunks + (guint32)idx;
    return TRUE;
  }
  if (idx >= rd->n_chunks)
    return stw_json_fail(r, error, "chunk %" G_GUINT64_FORMAT " does not exist (the plan has %u "
                         "chunks)", idx, rd->n_chunks);
  *out = (guint32)list * rd->n_chunks + (guint32)idx;
  return TRUE;
}

static gboolean
read_layout(StwJsonReader *r, const cJSON *root, Reading *rd, GError **error)
{
  StwPlan *p = rd->plan;
  const cJSON *chunks = NULL, *layout = NULL;
  guint64 size = 0, count = 0, world = 1, nodes = 1;
  int dtype = 0, state = 0;
  gboolean amsgrad = FALSE, shards = FALSE;
  if (!stw_json_get_object(r, root, "chunks", TRUE, &chunks, error))
    return FALSE;
  gsize saved = stw_json_push_key(r, "chunks");
  if (!stw_json_check_object(r, chunks, chunks_members, error) ||
      !stw_json_get_u64(r, chunks, "size_elems", TRUE, 1, STW_TRACE_MAX_NUMEL, &size, error) ||
      !stw_json_get_enum(r, chunks, "dtype", TRUE, stw_dtype_names, &dtype, error) ||
      !stw_json_get_u64(r, chunks, "count", TRUE, 1, STW_PLAN_MAX_CHUNKS, &count, error) ||
      !stw_json_get_u64(r, chunks, "world_size", FALSE, 1, STW_PLAN_MAX_WORLD, &world, error) ||
      !stw_json_get_u64(r, chunks, "nodes", FALSE, 1, world, &nodes, error) ||
      !stw_json_get_bool(r, chunks, "amsgrad", FALSE, &amsgrad, error) ||
      !stw_json_get_bool(r, chunks, "shards", FALSE, &shards, error) ||
      !stw_json_get_enum(r, chunks, "optimizer_state", FALSE, stw_state_dtype_names, &state,
                         error))
    return FALSE;
  if (shards && (world < 2 || count % world != 0))
    return stw_json_fail_at(r, "shards", error, "a layout of shards needs several ranks "
                            "(world_size) and whole groups: %" G_GUINT64_FORMAT " chunks for %"
                            G_GUINT64_FORMAT " ranks", count, world);
  if (world % nodes != 0)
    return stw_json_fail_at(r, "nodes", error, "%" G_GUINT64_FORMAT " nodes do not divide the %"
                            G_GUINT64_FORMAT " ranks evenly", nodes, world);
  stw_json_pop(r, saved);
  if (!stw_json_get_array(r, root, "layout", TRUE, STW_PLAN_MAX_CHUNKS, &layout, error))
    return FALSE;
  if ((guint64)cJSON_GetArraySize(layout) != count)
    return stw_json_fail_at(r, "layout", error, "%d chunks listed, $.chunks.count says %"
                            G_GUINT64_FORMAT, cJSON_GetArraySize(layout), count);
  StwChunking *c = g_new0(StwChunking, 1);
  p->chunking = c;
  c->size_elems = size;
  c->dtype = (StwDtype)dtype;
  c->world = (guint32)world;
  c->nodes = (guint32)nodes;
  c->amsgrad = amsgrad;
  c->shards = shards;
  c->state_dtype = stw_state_dtype_at(state);
  c->chunks = g_array_new(FALSE, TRUE, sizeof(StwChunk));
  c->placements = g_array_new(FALSE, FALSE, sizeof(StwPlacement));
  p->optim = g_new0(guint8, count);
  rd->n_chunks = (guint32)count;
  guint32 max_id = 0;
  saved = stw_json_push_key(r, "layout");
  guint32 i = 0;
  for (const cJSON *o = layout->child; o != NULL; o = o->next, i++) {
    gsize s2 = stw_json_push_index(r, i);
    StwChunk k = { .first = c->placements->len };
    guint64 idx = 0, owner = 0;
    int optim = 0;
    const cJSON *tensors = NULL;
    if (!stw_json_check_object(r, o, layout_members, error) ||
        !stw_json_get_u64(r, o, "chunk", TRUE, i, i, &idx, error) ||
        !stw_json_get_u64(r, o, "capacity_elems", TRUE, 1, STW_TRACE_MAX_NUMEL,
                          &k.capacity_elems, error) ||
        !stw_json_get_u64(r, o, "owner", TRUE, 0, world - 1, &owner, error) ||
        !stw_json_get_enum(r, o, "optimizer", TRUE, stw_optim_names, &optim, error) ||
        !stw_json_get_bool(r, o, "frozen", FALSE, &k.frozen, error) ||
        !stw_json_get_array(r, o, "tensors", TRUE, STW_TRACE_MAX_TENSORS, &tensors, error))
      return FALSE;
    k.owner = (guint32)owner;
    p->optim[i] = (guint8)optim;
    gsize s3 = stw_json_push_key(r, "tensors");
    guint32 j = 0;
    for (const cJSON *pair = tensors->child; pair != NULL; pair = pair->next, j++) {
      gsize s4 = stw_json_push_index(r, j);
      guint64 id = 0, offset = 0;
      if (!cJSON_IsArray(pair) || cJSON_GetArraySize(pair) != 2)
        return stw_json_fail(r, error, "expected [tensor id, offset]");
      if (!stw_json_as_u64(r, pair->child, 0, STW_TRACE_MAX_TENSORS - 1, &id, error) ||
          !stw_json_as_u64(r, pair->child->next, 0, STW_TRACE_MAX_NUMEL, &offset, error))
        return FALSE;
      if (c->placements->len >= STW_TRACE_MAX_TENSORS)
        return stw_json_fail(r, error, "more than %u tensors placed", STW_TRACE_MAX_TENSORS);
      StwPlacement pl = { .tensor = (guint32)id, .offset = offset };
      g_array_append_val(c->placements, pl);
      max_id = MAX(max_id, (guint32)id);
      k.count++;
      stw_json_pop(r, s4);
    }
    stw_json_pop(r, s3);
    g_array_append_val(c->chunks, k);
    stw_json_pop(r, s2);
  }
  stw_json_pop(r, saved);
  rd->n_groups = stw_chunking_groups(c);
  c->n_tensors = c->placements->len > 0 ? max_id + 1 : 0;
  c->chunk_of = g_new0(guint32, MAX(c->n_tensors, 1));
  c->offset_of = g_new0(guint64, MAX(c->n_tensors, 1));
  for (guint32 ci = 0; ci < c->chunks->len; ci++) {
    const StwChunk *k = stw_chunking_chunk(c, ci);
    for (guint32 j = 0; j < k->count; j++) {
      const StwPlacement *pl = &g_array_index(c->placements, StwPlacement, k->first + j);
      c->chunk_of[pl->tensor] = ci;
      c->offset_of[pl->tensor] = pl->offset;
    }
  }
  return TRUE;
}

static gboolean
read_schedule(StwJsonReader *r, const cJSON *root, Reading *rd, GError **error)
{
  StwPlan *p = rd->plan;
  guint32 n_items = STW_N_LISTS * rd->n_chunks + rd->n_groups;
  const cJSON *initial = NULL, *sched = NULL;
  p->schedule.resident = g_malloc0(n_items);
  p->schedule.dirty = g_malloc0(n_items);
  p->schedule.actions = g_array_new(FALSE, FALSE, sizeof(StwAction));
  p->schedule.feasible = TRUE;
  if (!stw_json_get_array(r, root, "initial", TRUE, n_items, &initial, error) ||
      !stw_json_get_array(r, root, "schedule", TRUE, (gsize)p->trace_ops + 1, &sched, error))
    return FALSE;
  gsize saved = stw_json_push_key(r, "initial");
  guint32 i = 0;
  for (const cJSON *o = initial->child; o != NULL; o = o->next, i++) {
    gsize s2 = stw_json_push_index(r, i);
    guint32 item;
    gboolean dirty = FALSE;
    if (!stw_json_check_object(r, o, initial_members, error))
      return FALSE;
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(o, "chunk");
    if (ref == NULL)
      return stw_json_fail(r, error, "missing required member \"chunk\"");
    gsize s3 = stw_json_push_key(r, "chunk");
    if (!parse_ref(r, ref, rd, &item, error))
      return FALSE;
    stw_json_pop(r, s3);
    if (!stw_json_get_bool(r, o, "dirty", TRUE, &dirty, error))
      return FALSE;
    if (p->schedule.resident[item])
      return stw_json_fail(r, error, "chunk listed twice");
    p->schedule.resident[item] = 1;
    p->schedule.dirty[item] = (guint8)dirty;
    stw_json_pop(r, s2);
  }
  stw_json_pop(r, saved);

  saved = stw_json_push_key(r, "schedule");
  i = 0;
  gint64 last_moment = -1;
  for (const cJSON *o = sched->child; o != NULL; o = o->next, i++) {
    gsize s2 = stw_json_push_index(r, i);
    guint64 m = 0;
    const char *op = NULL;
    if (!stw_json_check_object(r, o, moment_members, error) ||
        !stw_json_get_u64(r, o, "moment", TRUE, 0, p->trace_ops, &m, error) ||
        !stw_json_get_string(r, o, "op", FALSE, STW_TRACE_MAX_NAME, &op, error))
      return FALSE;
    if ((gint64)m <= last_moment)
      return stw_json_fail_at(r, "moment", error, "moments must be listed in increasing order");
    last_moment = (gint64)m;
    for (int kind = 0; kind < STW_N_ACTION_KINDS; kind++) {
      const cJSON *arr = NULL;
      if (!stw_json_get_array(r, o, action_names[kind], FALSE, n_items, &arr, error))
        return FALSE;
      if (arr == NULL)
        continue;
      gsize s3 = stw_json_push_key(r, action_names[kind]);
      guint32 j = 0;
      for (const cJSON *ref = arr->child; ref != NULL; ref = ref->next, j++) {
        gsize s4 = stw_json_push_index(r, j);
        StwAction a = { .moment = (guint32)m, .kind = (guint32)kind };
        if (!parse_ref(r, ref, rd, &a.item, error))
          return FALSE;
        if (p->schedule.actions->len >= STW_PLAN_MAX_ACTIONS)
          return stw_json_fail(r, error, "more than %u actions", STW_PLAN_MAX_ACTIONS);
        g_array_append_val(p->schedule.actions, a);
        stw_json_pop(r, s4);
      }
      stw_json_pop(r, s3);
    }
    stw_json_pop(r, s2);
  }
  stw_json_pop(r, saved);
  stw_actions_sort(p->schedule.actions);
  return TRUE;
}

/* $.trace.KEY: block indices, ascending, into BLOCKS. */
static gboolean
read_block_list(StwJsonReader *r, const cJSON *tr, const char *key, GArray *blocks,
                GError **error)
{
  const cJSON *arr = NULL;
  if (!stw_json_get_array(r, tr, key, FALSE, STW_TRACE_MAX_OPS, &arr, error))
    return FALSE;
  if (arr == NULL)
    return TRUE;
  gsize saved = stw_json_push_key(r, key);
  guint k = 0;
  for (const cJSON *c = arr->child; c != NULL; c = c->next, k++) {
    guint64 v;
    gsize s2 = stw_json_push_index(r, k);
    if (!stw_json_as_u64(r, c, 0, STW_TRACE_MAX_OPS - 1, &v, error))
      return FALSE;
    if (k > 0 && v <= g_array_index(blocks, guint32, k - 1))
      return stw_json_fail(r, error, "block %" G_GUINT64_FORMAT " after block %u: the blocks "
                           "are listed once each, ascending", v,
                           g_array_index(blocks, guint32, k - 1));
    guint32 b = (guint32)v;
    g_array_append_val(blocks, b);
    stw_json_pop(r, s2);
  }
  stw_json_pop(r, saved);
  return TRUE;
}

/* A pair of moments KEY: [moment, done], done >= moment. */
static gboolean
read_moments(StwJsonReader *r, const cJSON *obj, const char *key, guint32 *first,
             guint32 *done, GError **error)
{
  guint64 v[2];
  if (!stw_json_get_pair(r, obj, key, STW_TRACE_MAX_OPS, "[moment, done]: two moments", v,
                         error))
    return FALSE;
  if (v[1] < v[0])
    return stw_json_fail_at(r, key, error, "[%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "]: "
                            "a copy is done at or after the moment it is issued", v[0], v[1]);
  *first = (guint32)v[0];
  *done = (guint32)v[1];
  return TRUE;
}

/* $.trace.activation_moves: the copies of the blocks' activations the plan offloads, or of
 * the checkpoints the trace keeps on the host. */
static gboolean
read_moves(StwJsonReader *r, const cJSON *tr, StwPlan *p, GError **error)
{
  const cJSON *arr = NULL;
  if (!stw_json_get_array(r, tr, "activation_moves", FALSE, STW_TRACE_MAX_OPS, &arr, error))
    return FALSE;
  if (arr == NULL)
    return TRUE;
  gsize saved = stw_json_push_key(r, "activation_moves");
  guint k = 0;
  for (const cJSON *c = arr->child; c != NULL; c = c->next, k++) {
    gsize s2 = stw_json_push_index(r, k);
    StwActivationMove m;
    guint64 block;
    if (!stw_json_check_object(r, c, move_members, error) ||
        !stw_json_get_u64(r, c, "block", TRUE, 0, STW_TRACE_MAX_OPS - 1, &block, error) ||
        !read_moments(r, c, "out", &m.out_moment, &m.out_done, error) ||
        !read_moments(r, c, "in", &m.in_moment, &m.in_done, error) ||
        !stw_json_get_u64(r, c, "bytes", TRUE, 0, STW_TRACE_MAX_INT, &m.bytes, error))
      return FALSE;
    m.block = (guint32)block;
    g_array_append_val(p->moves, m);
    stw_json_pop(r, s2);
  }
  stw_json_pop(r, saved);
  return TRUE;
}

/* "op_times" (optional): how the plan re-timed a trace measured on another device. */
static gboolean
read_op_times(StwJsonReader *r, const cJSON *tr, StwRetiming *out, GError **error)
{
  const cJSON *ot = NULL;
  if (!stw_json_get_object(r, tr, "op_times", FALSE, &ot, error))
    return FALSE;
  if (ot == NULL)
    return TRUE;
  gsize saved = stw_json_push_key(r, "op_times");
  if (!stw_json_check_object(r, ot, op_times_members, error) ||
      !stw_json_get_double(r, ot, "scale", TRUE, 1e-12, 1e12, &out->scale, error) ||
      !stw_json_get_u64(r, ot, "op_overhead_ns", TRUE, 0, STW_RETIMING_MAX_OVERHEAD_NS,
                        &out->op_overhead_ns, error))
    return FALSE;
  stw_json_pop(r, saved);
  return TRUE;
}

static gboolean
read_plan(StwJsonReader *r, const cJSON *root, gpointer out, GError **error)
{
  StwPlan *p = out;
  Reading rd = { .plan = p };
  const char *format = NULL, *digest = NULL, *file = "";
  const cJSON *tr = NULL, *b = NULL, *pr = NULL, *hw = NULL;
  guint64 version = 0, ops = 0;
  int policy = 0;
  if (!stw_json_check_format(r, root, STW_PLAN_FORMAT, error) ||
      !stw_json_check_object(r, root, root_members, error) ||
      !stw_json_get_string(r, root, "format", TRUE, 64, &format, error))
    return FALSE;
  if (!stw_json_get_u64(r, root, "version", TRUE, 0, STW_JSON_INT_MAX, &version, error))
    return FALSE;
  if (version != STW_PLAN_VERSION)
    return stw_json_fail_at(r, "version", error, "unsupported version %" G_GUINT64_FORMAT
                            " (this stowage reads version %d)", version, STW_PLAN_VERSION);
  if (!stw_json_get_object(r, root, "trace", TRUE, &tr, error) ||
      !stw_json_get_enum(r, root, "policy", TRUE, stw_policy_names, &policy, error) ||
      !stw_json_get_object(r, root, "budgets", TRUE, &b, error) ||
      !stw_json_get_object(r, root, "predictions", TRUE, &pr, error) ||
      !stw_json_get_object(r, root, "hardware", TRUE, &hw, error))
    return FALSE;
  p->policy = (StwPolicy)policy;

  gsize saved = stw_json_push_key(r, "trace");
  if (!stw_json_check_object(r, tr, trace_members, error) ||
      !stw_json_get_string(r, tr, "digest", TRUE, 128, &digest, error) ||
      !stw_json_get_string(r, tr, "file", FALSE, 4096, &file, error) ||
      !stw_json_get_u64(r, tr, "ops", TRUE, 1, STW_TRACE_MAX_OPS, &ops, error))
    return FALSE;
  if (strlen(digest) != 64 || strspn(digest, "0123456789abcdef") != 64)
    return stw_json_fail_at(r, "digest", error, "expected 64 lower-case hex digits (SHA-256)");
  g_free(p->trace_digest);
  p->trace_digest = g_strdup(digest);
  g_free(p->trace_file);
  p->trace_file = g_strdup(file);
  p->trace_ops = (guint32)ops;
  if (!read_block_list(r, tr, "recompute", p->recompute, error) ||
      !read_block_list(r, tr, "offload", p->offload, error) || !read_moves(r, tr, p, error) ||
      !read_op_times(r, tr, &p->retiming, error))
    return FALSE;
  stw_json_pop(r, saved);

  saved = stw_json_push_key(r, "budgets");
  if (!stw_json_check_object(r, b, budget_members, error) ||
      !stw_json_get_u64(r, b, "gpu_bytes", TRUE, 1, STW_JSON_INT_MAX, &p->budgets.gpu_bytes,
                        error) ||
      !stw_json_get_u64(r, b, "cpu_bytes", TRUE, 0, STW_JSON_INT_MAX, &p->budgets.cpu_bytes,
                        error) ||
      !stw_json_get_u64(r, b, "reserved_bytes", TRUE, 0, STW_JSON_INT_MAX,
                        &p->budgets.reserved_bytes, error) ||
      !stw_json_get_u64(r, b, "storage_bytes", FALSE, 0, STW_JSON_INT_MAX,
                        &p->budgets.storage_bytes, error) ||
      !stw_json_get_u64(r, b, "pinned_bytes", FALSE, 0, STW_JSON_INT_MAX,
                        &p->budgets.pinned_bytes, error))
    return FALSE;
  stw_json_pop(r, saved);

  saved = stw_json_push_key(r, "predictions");
  const char *members[STW_N_PREDICTIONS + 2];
  for (gsize f = 0; f < STW_N_PREDICTIONS; f++)
    members[f] = pred_fields[f].name;
  members[STW_N_PREDICTIONS] = "cost_model";
  members[STW_N_PREDICTIONS + 1] = NULL;
  if (!stw_json_check_object(r, pr, members, error))
    return FALSE;
  guint64 peak_op = 0, cost_model = 0;
  for (gsize f = 0; f < STW_N_PREDICTIONS; f++) {
    guint64 *field = pred_fields[f].offset == G_MAXSIZE
                         ? &peak_op
                         : &G_STRUCT_MEMBER(guint64, &p->pred, pred_fields[f].offset);
    gboolean required = !pred_fields[f].multi && pred_fields[f].since <= 1;
    if (!stw_json_get_u64(r, pr, pred_fields[f].name, required, 0, STW_JSON_INT_MAX, field,
                          error))
      return FALSE;
  }
  if (!stw_json_get_u64(r, pr, "cost_model", FALSE, 0, G_MAXUINT32, &cost_model, error))
    return FALSE;
  p->pred.cost_model = (guint32)cost_model;
  if (peak_op >= ops)
    return stw_json_fail_at(r, "peak_op", error, "op %" G_GUINT64_FORMAT " does not exist",
                            peak_op);
  p->pred.peak_op = (guint32)peak_op;
  stw_json_pop(r, saved);

  saved = stw_json_push_key(r, "hardware");
  if (!stw_hardware_read(r, hw, &p->hw, error))
    return FALSE;
  stw_json_pop(r, saved);

  return read_layout(r, root, &rd, error) && read_schedule(r, root, &rd, error);
}

static StwPlan *
keep_if(StwPlan *p, gboolean ok)
{
  if (!ok) {
    stw_plan_free(p);
    return NULL;
  }
  return p;
}

StwPlan *
stw_plan_parse(const char *file, const char *text, gsize len, GError **error)
{
  StwPlan *p = stw_plan_new();
  return keep_if(p, stw_json_read_text(file, text, len, &plan_limits, read_plan, p, error));
}

StwPlan *
stw_plan_load(const char *file, GError **error)
{
  StwPlan *p = stw_plan_new();
  return keep_if(p, stw_json_read_file(file, STW_PLAN_MAX_FILE_BYTES, &plan_limits, read_plan, p,
                                       error));
}

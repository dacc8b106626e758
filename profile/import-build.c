/* import-build.c — one iteration's records as a trace: nesting, ops at a depth, stages,
 * durations, memory and parameters; see import.h and docs/profiling.md ("PyTorch files"). */
#include "config.h"

#include "import-internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- parameters from shapes ----------------------------------------------------------------- */

/* The ops that take parameters, and where: the input positions of the weight and the bias. */
static const struct {
  const char *name;
  int weight, bias;
} param_ops[] = {
  { "aten::linear", 1, 2 },       { "aten::conv1d", 1, 2 },       { "aten::conv2d", 1, 2 },
  { "aten::conv3d", 1, 2 },       { "aten::conv_transpose1d", 1, 2 },
  { "aten::conv_transpose2d", 1, 2 }, { "aten::conv_transpose3d", 1, 2 },
  { "aten::convolution", 1, 2 },  { "aten::batch_norm", 1, 2 },   { "aten::layer_norm", 2, 3 },
  { "aten::group_norm", 2, 3 },   { "aten::instance_norm", 1, 2 }, { "aten::rms_norm", 2, -1 },
  { "aten::embedding", 0, -1 },   { "aten::embedding_bag", 0, -1 },
  /* a Conv1D (GPT-2's) is addmm(bias, x, weight): outermost only, as every op here */
  { "aten::addmm", 2, 0 },
};

static StwDtype
dtype_of(const cJSON *type)
{
  if (!cJSON_IsString(type))
    return STW_DTYPE_FP32;
  if (strstr(type->valuestring, "BFloat16") != NULL)
    return STW_DTYPE_BF16;
  if (strstr(type->valuestring, "Half") != NULL)
    return STW_DTYPE_FP16;
  return STW_DTYPE_FP32;
}

static gboolean
shape_of(const cJSON *dims, ImportParam *p)
{
  if (!cJSON_IsArray(dims))
    return FALSE;
  int n = cJSON_GetArraySize(dims);
  if (n < 1 || n > IMPORT_MAX_SHAPE_DIMS)
    return FALSE;
  p->ndim = (guint)n;
  guint64 numel = 1;
  for (int i = 0; i < n; i++) {
    const cJSON *d = cJSON_GetArrayItem(dims, i);
    if (!cJSON_IsNumber(d) || d->valuedouble < 1 || d->valuedouble > 1e12)
      return FALSE;
    p->shape[i] = (guint64)d->valuedouble;
    numel *= p->shape[i];
    if (numel > (G_GUINT64_CONSTANT(1) << 40))
      return FALSE;
  }
  return TRUE;
}

ImportShapes *
import_shapes_of(const char *name, const cJSON *args)
{
  const cJSON *dims = cJSON_GetObjectItemCaseSensitive(args, "Input Dims");
  if (!cJSON_IsArray(dims))
    return NULL;
  const cJSON *types = cJSON_GetObjectItemCaseSensitive(args, "Input type");
  for (gsize i = 0; i < G_N_ELEMENTS(param_ops); i++) {
    if (strcmp(param_ops[i].name, name) != 0)
      continue;
    ImportShapes sh = { 0 };
    const int pos[2] = { param_ops[i].weight, param_ops[i].bias };
    static const char *const roles[2] = { "weight", "bias" };
    for (int k = 0; k < 2; k++) {
      if (pos[k] < 0)
        continue;
      ImportParam *p = &sh.p[sh.n];
      p->role = roles[k];
      p->dtype = dtype_of(cJSON_GetArrayItem(types, pos[k]));
      if (shape_of(cJSON_GetArrayItem(dims, pos[k]), p))
        sh.n++;
    }
    return sh.n > 0 ? g_memdup2(&sh, sizeof sh) : NULL;
  }
  return NULL;
}

void
import_shapes_free(ImportShapes *shapes)
{
  g_free(shapes);
}

/* ---- the device ----------------------------------------------------------------------------- */

void
import_device_info(ImportIteration *it, const cJSON *props, const cJSON *dist)
{
  it->rank = 0;
  it->world_size = 1;
  g_free(it->device_name);
  it->device_name = g_strdup(it->device >= 0 ? "cuda" : "cpu");
  const cJSON *p;
  cJSON_ArrayForEach(p, props) {
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(p, "id");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(p, "name");
    const cJSON *mem = cJSON_GetObjectItemCaseSensitive(p, "totalGlobalMem");
    if (cJSON_IsNumber(id) && (gint64)id->valuedouble == it->device && cJSON_IsString(name)) {
      g_free(it->device_name);
      it->device_name = g_strndup(name->valuestring, 120);
      if (cJSON_IsNumber(mem) && mem->valuedouble > 0 && mem->valuedouble < 9e15)
        it->device_memory = (guint64)mem->valuedouble;
    }
  }
  const cJSON *rank = cJSON_GetObjectItemCaseSensitive(dist, "rank");
  const cJSON *world = cJSON_GetObjectItemCaseSensitive(dist, "world_size");
  if (cJSON_IsNumber(rank) && cJSON_IsNumber(world) && world->valuedouble >= 1 &&
      world->valuedouble <= 65536 && rank->valuedouble >= 0 &&
      rank->valuedouble < world->valuedouble) {
    it->rank = (guint32)rank->valuedouble;
    it->world_size = (guint32)world->valuedouble;
  }
}

/* TEXT of more than STW_TRACE_MAX_NAME bytes as 1000 of them (not cutting a UTF-8 character),
 * "~" and 16 hex digits of the whole's SHA-256 (a new string); NULL when it fits. */
static char *
cap(const char *text)
{
  gsize len = strlen(text);
  if (len <= STW_TRACE_MAX_NAME)
    return NULL;
  gsize keep = 1000;
  while (keep > 0 && ((guchar)text[keep] & 0xc0) == 0x80)
    keep--;
  g_autofree char *digest = g_compute_checksum_for_data(G_CHECKSUM_SHA256,
                                                        (const guchar *)text, len);
  return g_strdup_printf("%.*s~%.16s", (int)keep, text, digest);
}

gboolean
import_bytes_moved(guint64 *moved, gint64 bytes)
{
  return stw_sum_within(moved, bytes < 0 ? -(guint64)bytes : (guint64)bytes,
                        IMPORT_MAX_BYTES_MOVED);
}

const char *
import_capped_name(GStringChunk *chunk, const char *text)
{
  g_autofree char *capped = cap(text);
  return g_string_chunk_insert_const(chunk, capped != NULL ? capped : text);
}

/* *NAME capped in place (names made of capped parts, "path.weight", can still be too long) */
static void
cap_in_place(char **name)
{
  char *capped = cap(*name);
  if (capped != NULL) {
    g_free(*name);
    *name = capped;
  }
}

void
import_iteration_clear(ImportIteration *it)
{
  for (guint i = 0; i < it->n_evs; i++)
    import_shapes_free(it->evs[i].shapes);
  g_clear_pointer(&it->strings, g_string_chunk_free);
  g_clear_pointer(&it->nest_order, g_free);
  g_clear_pointer(&it->evs, g_free);
  g_clear_pointer(&it->kernels, g_free);
  g_clear_pointer(&it->mems, g_free);
  g_clear_pointer(&it->runtimes, g_free);
  g_clear_pointer(&it->device_name, g_free);
  g_clear_pointer(&it->et_reads, g_hash_table_unref);
  g_clear_pointer(&it->et_optimized, g_hash_table_unref);
  g_clear_pointer(&it->et_created, g_hash_table_unref);
  g_clear_pointer(&it->timeline, g_free);
}

/* ---- nesting -------------------------------------------------------------------------------- */

static const ImportEvent *sort_evs;

static int
by_thread_time(const void *a, const void *b)
{
  const ImportEvent *x = &sort_evs[*(const guint32 *)a], *y = &sort_evs[*(const guint32 *)b];
  if (x->tid != y->tid)
    return x->tid < y->tid ? -1 : 1;
  if (x->ts != y->ts)
    return x->ts < y->ts ? -1 : 1;
  if (x->end != y->end)
    return x->end > y->end ? -1 : 1; /* the enclosing one first */
  return *(const guint32 *)a < *(const guint32 *)b ? -1 : 1;
}

static gboolean
is_optimizer(const ImportEvent *e)
{
  return g_str_has_prefix(e->name, "Optimizer.step");
}

static gboolean
is_backward_name(const char *name)
{
  return g_str_has_prefix(name, "autograd::engine::evaluate_function") ||
         strstr(name, "Backward") != NULL || strstr(name, "AccumulateGrad") != NULL;
}

/* Parents and depths per thread (1: outermost); an optimizer step is one unit. What a walk up
 * the parents would find is kept per event, each found from its parent's, so that a chain of
 * any depth costs its length, not its square. */
static void
nest(ImportIteration *it)
{
  guint n = it->n_evs;
  guint32 *order = it->nest_order = g_new(guint32, MAX(n, 1));
  for (guint i = 0; i < n; i++)
    order[i] = i;
  sort_evs = it->evs;
  qsort(order, n, sizeof *order, by_thread_time);
  if (it->strings == NULL)
    it->strings = g_string_chunk_new(4096);
  g_autofree guint32 *stack = g_new(guint32, MAX(n, 1));
  guint top = 0;
  for (guint k = 0; k < n; k++) {
    ImportEvent *e = &it->evs[order[k]];
    if (k > 0 && it->evs[order[k - 1]].tid != e->tid)
      top = 0;
    /* an event ends its enclosing ones that closed before it (microsecond timestamps round:
     * a child may end a fraction after its parent) */
    while (top > 0 && it->evs[stack[top - 1]].end <= e->ts)
      top--;
    e->parent = top > 0 ? stack[top - 1] : G_MAXUINT32;
    e->depth = top + 1;
    const ImportEvent *up = top > 0 ? &it->evs[stack[top - 1]] : NULL;
    e->mdepth = (up != NULL ? up->mdepth : 0) + (e->is_module ? 1 : 0);
    e->shapes_above = up != NULL && (up->shapes != NULL || up->shapes_above);
    e->near_path = up != NULL ? up->near_path : NULL;
    if (e->is_module) {
      const char *cls = e->name + strlen("nn.Module: ");
      g_autofree char *path = e->near_path != NULL ? g_strconcat(e->near_path, ".", cls, NULL)
                                                   : g_strdup(cls);
      e->path = e->near_path = import_capped_name(it->strings, path);
      /* (each ancestor is marked once: the walk stops at the first marked) */
      for (guint32 j = e->parent; j != G_MAXUINT32 && !it->evs[j].has_module_desc;
           j = it->evs[j].parent)
        it->evs[j].has_module_desc = TRUE;
    }
    if (top > 0)
      it->evs[stack[top - 1]].has_children = TRUE;
    stack[top++] = order[k];
  }
}

/* Per-event facts about an event's chain (itself and its ancestors), each from its parent's. */
typedef struct {
  guint32 outer_opt;  /* the outermost optimizer step */
  guint32 inner_opt;  /* the innermost */
  guint32 at_depth;   /* the ancestor at the chosen depth, when it is no module */
  guint32 module;     /* the outermost module at the depth, or a leaf module above it */
  guint32 outer_op;   /* the outermost op whose parent is a module or nothing */
} Chain;

/* Each event's trace op (its unit): by events, its ancestor (or itself) at the chosen depth, a
 * leaf above the depth itself, or an optimizer step above that, the outermost of these; by
 * modules, the innermost optimizer step around it, else a module at the depth or a leaf module
 * above it (the outermost), else the outermost op that no such module holds (the loss, backward,
 * the optimizer). G_MAXUINT32 for an enclosing event above the depth. One pass, parents first. */
static void
assign_units(ImportIteration *it, guint depth, gboolean modules)
{
  const guint32 none = G_MAXUINT32;
  g_autofree Chain *chain = g_new(Chain, MAX(it->n_evs, 1));
  for (guint k = 0; k < it->n_evs; k++) {
    guint32 i = it->nest_order[k];
    ImportEvent *e = &it->evs[i];
    Chain up = { none, none, none, none, none }, *c = &chain[i];
    if (e->parent != none)
      up = chain[e->parent];
    gboolean opt = is_optimizer(e);
    c->outer_opt = up.outer_opt != none ? up.outer_opt : opt ? i : none;
    c->inner_opt = opt ? i : up.inner_opt;
    c->at_depth = e->depth == depth ? (e->is_module ? none : i)
                  : e->depth > depth ? up.at_depth : none;
    c->module = up.module != none ? up.module
                : e->is_module && (e->mdepth == depth ||
                                   (e->mdepth < depth && !e->has_module_desc)) ? i : none;
    c->outer_op = up.outer_op != none ? up.outer_op
                  : !e->is_module && (e->parent == none || it->evs[e->parent].is_module) ? i
                                                                                           : none;
    if (modules) {
      e->unit = c->inner_opt != none ? c->inner_opt
                : c->module != none ? c->module : c->outer_op;
      continue;
    }
    /* the outermost of the candidates on the chain: the one of least depth */
    guint32 leaf = !e->is_module && e->depth < depth && !e->has_children ? i : none;
    guint32 cand[] = { c->outer_opt, c->at_depth, leaf };
    e->unit = none;
    for (int x = 0; x < 3; x++)
      if (cand[x] != none && (e->unit == none || it->evs[cand[x]].depth < it->evs[e->unit].depth))
        e->unit = cand[x];
  }
}

/* The default module depth: the shallowest at which one module class runs more than once (the
 * repeated blocks of a network), else the deepest there is. */
static guint
layer_depth(const ImportIteration *it)
{
  guint deepest = 0;
  for (guint d = 1; d <= 64; d++) {
    g_autoptr(GHashTable) classes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    gboolean any = FALSE;
    for (guint i = 0; i < it->n_evs; i++) {
      const ImportEvent *e = &it->evs[i];
      if (!e->is_module || e->mdepth != d || e->tid != it->main_tid)
        continue;
      any = TRUE;
      /* "nn.Module: GPT2Block_3" is of class "GPT2Block" */
      const char *cls = e->name + strlen("nn.Module: ");
      const char *us = strrchr(cls, '_');
      g_autofree char *c = us != NULL ? g_strndup(cls, (gsize)(us - cls)) : g_strdup(cls);
      if (!g_hash_table_add(classes, g_strdup(c)))
        return d;
    }
    if (!any)
      break;
    deepest = d;
  }
  return MAX(deepest, 1);
}

/* ---- the trace ------------------------------------------------------------------------------ */

typedef struct {
  guint32 ev;               /* the event it is */
  StwStage stage;
  GArray *params;           /* guint32 tensor ids read */
  GArray *grads;            /* guint32 tensor ids whose gradients it writes */
  double gpu_us;            /* its kernels' time */
  guint kernels;
  guint64 nonmodel, peak;
  guint32 pair;             /* backward: the forward unit most of its autograd nodes came from */
  guint32 pair_hits;
} Unit;

static const ImportEvent *sort_units_evs;

static int
unit_by_time(const void *a, const void *b)
{
  const ImportEvent *x = &sort_units_evs[((const Unit *)a)->ev];
  const ImportEvent *y = &sort_units_evs[((const Unit *)b)->ev];
  if (x->ts != y->ts)
    return x->ts < y->ts ? -1 : 1;
  return ((const Unit *)a)->ev < ((const Unit *)b)->ev ? -1 : 1;
}

static void
add_unique(GArray *ids, guint32 id)
{
  for (guint i = 0; i < ids->len; i++)
    if (g_array_index(ids, guint32, i) == id)
      return;
  g_array_append_val(ids, id);
}

/* A parameter's name: the module path where the trace has one, else the op's short name and
 * its occurrence ("linear.3.weight"). */
static char *
param_name(const ImportEvent *e, const char *mpath, const char *role, GHashTable *counts,
           GHashTable *used)
{
  char *name;
  if (mpath != NULL && strchr(mpath, '.') != NULL) {
    /* the module path under the model itself: "GPT2Model_0.GPT2Block_1.Conv1D_4.weight" */
    name = g_strconcat(strchr(mpath, '.') + 1, ".", role, NULL);
  } else if (e->module != NULL) {
    /* "top(GPT2)::transformer.h.3(Block)::attn(Attention)::c_attn(Linear)" */
    g_auto(GStrv) parts = g_strsplit(e->module, "::", -1);
    GString *path = g_string_new(NULL);
    for (guint k = 1; parts[k] != NULL; k++) { /* parts[0] is the model itself */
      char *paren = strchr(parts[k], '(');
      if (paren != NULL)
        *paren = '\0';
      g_string_append_printf(path, "%s%s", path->len ? "." : "", parts[k]);
    }
    g_string_append_printf(path, "%s%s", path->len ? "." : "", role);
    name = g_string_free(path, FALSE);
  } else {
    const char *shortname = g_str_has_prefix(e->name, "aten::") ? e->name + 6 : e->name;
    guint n = GPOINTER_TO_UINT(g_hash_table_lookup(counts, shortname));
    if (g_str_equal(role, "weight") || n == 0)
      g_hash_table_insert(counts, (gpointer)shortname, GUINT_TO_POINTER(++n));
    name = g_strdup_printf("%s.%u.%s", shortname, n - 1, role);
  }
  /* a module that runs twice (or a name that repeats) gets a suffix: names are unique */
  for (guint k = 2; g_hash_table_contains(used, name); k++) {
    char *again = g_strdup_printf("%s#%u", name, k);
    g_free(name);
    name = again;
  }
  g_hash_table_add(used, g_strdup(name));
  return name;
}

static void
units_clear(GArray *units)
{
  for (guint i = 0; i < units->len; i++) {
    Unit *u = &g_array_index(units, Unit, i);
    g_array_unref(u->params);
    g_array_unref(u->grads);
  }
  g_array_unref(units);
}

static int
mem_by_time(const void *a, const void *b)
{
  const ImportMem *x = a, *y = b;
  if (x->ts != y->ts)
    return x->ts < y->ts ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

/* Non-model memory at each unit's start and peak: the running sum of the device's allocations
 * since the iteration began (what was allocated before it — parameters, optimizer state,
 * the caching allocator's blocks — is not the iteration's). */
static void
memory(ImportIteration *it, GArray *units, StwImportReport *rep)
{
  if (it->n_mems > 1)
    qsort(it->mems, it->n_mems, sizeof *it->mems, mem_by_time);
  rep->memory_events = it->n_mems;
  gint64 level = 0, peak = 0;
  guint m = 0;
  rep->has_total_allocated = it->n_mems > 0 && it->mems[0].total >= 0;
  if (rep->has_total_allocated) {
    /* the file's own count before the first event of the iteration */
    rep->allocated_at_start = (guint64)MAX(it->mems[0].total - it->mems[0].bytes, 0);
    for (guint i = 0; i < it->n_mems; i++)
      rep->allocated_peak = MAX(rep->allocated_peak, (guint64)MAX(it->mems[i].total, 0));
  }
  for (guint u = 0; u < units->len; u++) {
    Unit *x = &g_array_index(units, Unit, u);
    const ImportEvent *e = &it->evs[x->ev];
    while (m < it->n_mems && it->mems[m].ts < e->ts) {
      level += it->mems[m++].bytes;
      peak = MAX(peak, level);
    }
    x->nonmodel = (guint64)MAX(level, 0);
    gint64 high = level;
    while (m < it->n_mems && it->mems[m].ts <= e->end) {
      level += it->mems[m++].bytes;
      high = MAX(high, level);
    }
    peak = MAX(peak, high);
    x->peak = (guint64)MAX(high, 0);
  }
  while (m < it->n_mems) {
    level += it->mems[m++].bytes;
    peak = MAX(peak, level);
  }
  rep->peak_above_start = (guint64)MAX(peak, 0);
}

static const ImportRuntime *sort_runtimes;

static int
runtime_by_thread_time(const void *a, const void *b)
{
  const ImportRuntime *x = &sort_runtimes[*(const guint32 *)a];
  const ImportRuntime *y = &sort_runtimes[*(const guint32 *)b];
  if (x->tid != y->tid)
    return x->tid < y->tid ? -1 : 1;
  if (x->ts != y->ts)
    return x->ts < y->ts ? -1 : 1;
  return *(const guint32 *)a < *(const guint32 *)b ? -1 : 1;
}

/* For each runtime call, the event running on its thread at its time (the innermost one that
 * started by then and has not ended; G_MAXUINT32: none): one sweep of the events in nesting
 * order and the calls in time order, with the stack of open events, so that a deep nesting
 * costs its length once rather than once per call. The caller's array. */
static guint32 *
running_events(const ImportIteration *it)
{
  guint32 *out = g_new(guint32, MAX(it->n_runtimes, 1));
  g_autofree guint32 *calls = g_new(guint32, MAX(it->n_runtimes, 1));
  for (guint r = 0; r < it->n_runtimes; r++)
    calls[r] = r;
  sort_runtimes = it->runtimes;
  qsort(calls, it->n_runtimes, sizeof *calls, runtime_by_thread_time);
  g_autofree guint32 *stack = g_new(guint32, MAX(it->n_evs, 1));
  guint top = 0, k = 0;
  gint64 tid = G_MININT64;
  for (guint c = 0; c < it->n_runtimes; c++) {
    const ImportRuntime *rt = &it->runtimes[calls[c]];
    if (c == 0 || rt->tid != tid) {
      tid = rt->tid;
      top = 0;
      while (k < it->n_evs && it->evs[it->nest_order[k]].tid < tid)
        k++;
    }
    /* the events of this thread started by then, nested as nest() nests them */
    for (; k < it->n_evs; k++) {
      const ImportEvent *e = &it->evs[it->nest_order[k]];
      if (e->tid != tid || e->ts > rt->ts)
        break;
      while (top > 0 && it->evs[stack[top - 1]].end <= e->ts)
        top--;
      stack[top++] = it->nest_order[k];
    }
    /* the ended ones go for good: the calls after this one are later still */
    while (top > 0 && it->evs[stack[top - 1]].end < rt->ts)
      top--;
    out[calls[c]] = top > 0 ? stack[top - 1] : G_MAXUINT32;
  }
  return out;
}

/* Durations: the GPU time of the kernels each unit (and the ops inside it) launched, found by
 * the runtime call that launched each (its correlation id, the op around the call), else by the
 * kernel's external id. */
static void
durations(ImportIteration *it, GArray *units, const guint32 *unit_ev, GHashTable *unit_of_ext,
          StwImportReport *rep)
{
  g_autoptr(GHashTable) unit_of_corr = g_hash_table_new_full(g_int64_hash, g_int64_equal,
                                                             g_free, NULL);
  g_autofree guint32 *running = running_events(it);
  for (guint r = 0; r < it->n_runtimes; r++) {
    const ImportRuntime *rt = &it->runtimes[r];
    guint32 ev = running[r];
    if (ev == G_MAXUINT32 || unit_ev[ev] == G_MAXUINT32)
      continue;
    g_hash_table_insert(unit_of_corr, g_memdup2(&rt->correlation, sizeof rt->correlation),
                        GUINT_TO_POINTER(unit_ev[ev] + 1));
  }
  for (guint k = 0; k < it->n_kernels; k++) {
    const ImportKernel *kn = &it->kernels[k];
    if (it->device >= 0 && kn->device >= 0 && kn->device != it->device)
      continue;
    guint u = kn->correlation >= 0
                  ? GPOINTER_TO_UINT(g_hash_table_lookup(unit_of_corr, &kn->correlation))
                  : 0;
    gpointer v;
    if (u == 0 && kn->ext_id >= 0 &&
        g_hash_table_lookup_extended(unit_of_ext, &kn->ext_id, NULL, &v))
      u = GPOINTER_TO_UINT(v) + 1;
    if (u == 0)
      continue;
    Unit *x = &g_array_index(units, Unit, u - 1);
    x->gpu_us += kn->dur;
    x->kernels++;
    rep->kernels++;
  }
}

/* The tensors an event reads, by the execution trace node of the same name with its rf_id (or,
 * in traces that link by it, its external id); NULL when no node links. */
static GArray *
et_reads_of(const ImportIteration *it, const ImportEvent *e)
{
  const ImportEtOp *op = e->rf_id >= 0 ? g_hash_table_lookup(it->et_reads, &e->rf_id) : NULL;
  if ((op == NULL || strcmp(op->name, e->name) != 0) && e->ext_id >= 0)
    op = g_hash_table_lookup(it->et_reads, &e->ext_id);
  return op != NULL && strcmp(op->name, e->name) == 0 ? op->reads : NULL;
}

/* How many of the ops around an event outer_reads looks through: a model's ops nest a few deep
 * (aten::linear over aten::addmm over its views), and a hostile file's thousands cost no more. */
#define OUTER_READS_DEPTH 64

/* Whether an op around event I reads storage ST too: then I's read is the outer op's inner
 * business (addmm's expand of its bias is a view larger than the bias). READS: each event's
 * execution-trace reads (or NULL); READS_UP: each event's nearest enclosing event with some. */
static gboolean
outer_reads(GArray *const *reads, const guint32 *reads_up, guint32 i, gint64 st)
{
  guint steps = 0;
  for (guint32 j = reads_up[i]; j != G_MAXUINT32 && steps < OUTER_READS_DEPTH;
       j = reads_up[j], steps++) {
    for (guint k = 0; k < reads[j]->len; k++)
      if ((gint64)g_array_index(reads[j], ImportTensorRef, k).storage == st)
        return TRUE;
  }
  return FALSE;
}

/* Parameters by tensor identity: the storages that forward ops read and the optimizer updates
 * (with no optimizer step: that no node made during the run), one tensor per storage however
 * many views of it are read, so that tied weights are one. */
static void
params_from_et(ImportIteration *it, GArray *units, const guint32 *unit_ev, StwTrace *t,
               StwImportReport *rep, GHashTable *used)
{
  gboolean optimizer = g_hash_table_size(it->et_optimized) > 0;
  g_autoptr(GHashTable) largest = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free,
                                                        g_free);
  /* each event's reads, and its nearest enclosing event with reads, once (parents first) */
  g_autofree GArray **all_reads = g_new0(GArray *, MAX(it->n_evs, 1));
  g_autofree guint32 *reads_up = g_new(guint32, MAX(it->n_evs, 1));
  for (guint k = 0; k < it->n_evs; k++) {
    guint32 i = it->nest_order[k], p = it->evs[i].parent;
    all_reads[i] = et_reads_of(it, &it->evs[i]);
    reads_up[i] = p == G_MAXUINT32 ? G_MAXUINT32 : all_reads[p] != NULL ? p : reads_up[p];
  }
  for (int pass = 0; pass < 2; pass++) {
    g_autoptr(GHashTable) id_of = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    g_autoptr(GHashTable) counts = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint32 i = 0; i < it->n_evs; i++) {
      const ImportEvent *e = &it->evs[i];
      GArray *reads = all_reads[i];
      if (reads == NULL)
        continue;
      if (pass == 0)
        rep->et_linked++;
      guint32 u = unit_ev[i];
      if (u == G_MAXUINT32 || g_array_index(units, Unit, u).stage != STW_STAGE_FWD)
        continue;
      guint roles_taken = 0; /* the op's weight and bias, each named once */
      for (guint k = 0; k < reads->len; k++) {
        const ImportTensorRef *ref = &g_array_index(reads, ImportTensorRef, k);
        gint64 st = (gint64)ref->storage;
        /* storage ids are the allocator's: an activation's may be reused by optimizer state
         * later, so a parameter is also never made during the run */
        gboolean param = !g_hash_table_contains(it->et_created, &st) &&
                         (!optimizer || g_hash_table_contains(it->et_optimized, &st));
        if (!param || outer_reads(all_reads, reads_up, i, st))
          continue;
        if (pass == 0) {
          ImportTensorRef *big = g_hash_table_lookup(largest, &st);
          if (big == NULL)
            g_hash_table_insert(largest, g_memdup2(&st, sizeof st), g_memdup2(ref, sizeof *ref));
          else if (ref->numel > big->numel)
            *big = *ref; /* the largest of the outermost reads: a slice is smaller */
          continue;
        }
        gpointer v;
        guint32 id;
        if (g_hash_table_lookup_extended(id_of, &st, NULL, &v)) {
          id = GPOINTER_TO_UINT(v);
        } else {
          const ImportTensorRef *big = g_hash_table_lookup(largest, &st);
          /* named as its role in the op that first reads it where its size tells the role */
          const char *role = NULL;
          for (guint r = 0; e->shapes != NULL && r < e->shapes->n && role == NULL; r++) {
            guint64 numel = 1;
            for (guint d = 0; d < e->shapes->p[r].ndim; d++)
              numel *= e->shapes->p[r].shape[d];
            if (numel == ref->numel && !(roles_taken & (1u << r))) {
              role = e->shapes->p[r].role;
              roles_taken |= 1u << r;
            }
          }
          g_autofree char *name = NULL;
          if (role != NULL) {
            name = param_name(e, e->near_path, role, counts, used);
          } else {
            const char *shortname = g_str_has_prefix(e->name, "aten::") ? e->name + 6 : e->name;
            name = g_strdup_printf("%s.storage%" G_GINT64_FORMAT, shortname, st);
            g_hash_table_add(used, g_strdup(name));
          }
          id = stw_trace_add_tensor(t, name, big->dtype, &big->numel, 1);
          g_hash_table_insert(id_of, g_memdup2(&st, sizeof st), GUINT_TO_POINTER(id));
        }
        add_unique(g_array_index(units, Unit, u).params, id);
      }
    }
  }
}

static StwTrace *
fail_empty(ImportIteration *it, GError **error, const char *what)
{
  g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_EMPTY, "%s: %s", it->file, what);
  return NULL;
}

/* One build: the iteration, the units cut from it and the trace made of them. */
typedef struct {
  ImportIteration *it;
  StwImportReport *rep;
  const StwImportOptions *o;
  StwTrace *t;
  GArray *units;            /* Unit, in time order */
  guint32 *unit_ev;         /* per event: its unit, or G_MAXUINT32 */
  GHashTable *unit_of_ext;  /* external id -> unit */
  GHashTable *fwd_of_seq;   /* sequence number -> the forward unit that made the node */
  GHashTable *counts, *used; /* parameter names */
  gboolean modules, saw_bwd, saw_optim;
  guint depth;
  double optim_us;          /* the optimizer step's time, shared by its parameters */
  guint64 optim_nonmodel, optim_peak, cpu_timed;
  guint32 last_bwd_pair;
  double timed_us;          /* the ops' time so far */
  const ImportEvent *over;  /* the event whose time passes what a trace may hold; NULL: none */
} Build;

static void
build_clear(Build *b)
{
  if (b->units != NULL)
    units_clear(b->units);
  g_free(b->unit_ev);
  g_clear_pointer(&b->unit_of_ext, g_hash_table_unref);
  g_clear_pointer(&b->fwd_of_seq, g_hash_table_unref);
  g_clear_pointer(&b->counts, g_hash_table_unref);
  g_clear_pointer(&b->used, g_hash_table_unref);
  stw_trace_free(b->t);
}

/* The process's events, nested, and the depth to cut them at. */
static gboolean
select_events(Build *b, GError **error)
{
  ImportIteration *it = b->it;
  guint kept = 0;
  for (guint i = 0; i < it->n_evs; i++) {
    if (it->pid >= 0 && it->evs[i].pid != it->pid) {
      import_shapes_free(it->evs[i].shapes);
      continue;
    }
    it->evs[kept++] = it->evs[i];
  }
  it->n_evs = kept;
  b->rep->cpu_ops = kept;
  b->rep->start_us = it->t0;
  b->rep->end_us = it->t1;
  b->rep->device_id = it->device;
  if (kept == 0) {
    fail_empty(it, error, "the iteration holds no op events (cpu_op or Operator)");
    return FALSE;
  }
  if (it->main_tid < 0) { /* the thread with the most events */
    g_autoptr(GHashTable) per = g_hash_table_new(g_int64_hash, g_int64_equal);
    guint best = 0;
    for (guint i = 0; i < it->n_evs; i++) {
      guint c = GPOINTER_TO_UINT(g_hash_table_lookup(per, &it->evs[i].tid)) + 1;
      g_hash_table_insert(per, &it->evs[i].tid, GUINT_TO_POINTER(c));
      if (c > best) {
        best = c;
        it->main_tid = it->evs[i].tid;
      }
    }
  }
  nest(it);
  for (guint i = 0; i < it->n_evs; i++)
    b->rep->modules += it->evs[i].is_module ? 1 : 0;
  b->modules = b->rep->modules > 0;
  b->depth = b->o->depth > 0 ? b->o->depth : b->modules ? layer_depth(it) : 1;
  b->rep->depth = b->depth;
  return TRUE;
}

/* The units (the trace's ops before the optimizer's expansion), in time order, and each
 * event's unit. */
static void
cut_units(Build *b)
{
  ImportIteration *it = b->it;
  b->units = g_array_new(FALSE, TRUE, sizeof(Unit));
  assign_units(it, b->depth, b->modules);
  for (guint32 i = 0; i < it->n_evs; i++) {
    if (it->evs[i].unit != i)
      continue;
    Unit u = { .ev = i, .params = g_array_new(FALSE, FALSE, sizeof(guint32)),
               .grads = g_array_new(FALSE, FALSE, sizeof(guint32)), .pair = G_MAXUINT32 };
    g_array_append_val(b->units, u);
  }
  sort_units_evs = it->evs;
  if (b->units->len > 1)
    qsort(b->units->data, b->units->len, sizeof(Unit), unit_by_time);
  for (guint u = 0; u < b->units->len; u++)
    it->evs[g_array_index(b->units, Unit, u).ev].trace_op = u;
  b->unit_of_ext = g_hash_table_new(g_int64_hash, g_int64_equal);
  b->unit_ev = g_new(guint32, MAX(it->n_evs, 1));
  for (guint32 i = 0; i < it->n_evs; i++) {
    guint32 uev = it->evs[i].unit;
    b->unit_ev[i] = uev == G_MAXUINT32 ? G_MAXUINT32 : it->evs[uev].trace_op;
    if (b->unit_ev[i] != G_MAXUINT32 && it->evs[i].ext_id >= 0)
      g_hash_table_insert(b->unit_of_ext, &it->evs[i].ext_id, GUINT_TO_POINTER(b->unit_ev[i]));
  }
}

static Unit *
unit_at(const Build *b, guint32 u)
{
  return &g_array_index(b->units, Unit, u);
}

/* Stages, in order: forward until backward starts, backward until the optimizer steps. */
static void
assign_stages(Build *b)
{
  StwStage stage = STW_STAGE_FWD;
  for (guint u = 0; u < b->units->len; u++) {
    Unit *x = unit_at(b, u);
    const ImportEvent *e = &b->it->evs[x->ev];
    if (is_optimizer(e)) {
      stage = STW_STAGE_OPTIM;
      b->saw_optim = TRUE;
    } else if (stage == STW_STAGE_FWD &&
               (is_backward_name(e->name) || e->tid != b->it->main_tid)) {
      stage = STW_STAGE_BWD;
      b->saw_bwd = TRUE;
    }
    x->stage = stage;
  }
}

/* Which forward unit made each autograd node. An op reports the sequence number autograd will
 * give the next node it makes, so ops that make none (a view of the input ids) share it with
 * the one that does: the last of them in time made the node. */
static void
index_sequences(Build *b)
{
  ImportIteration *it = b->it;
  b->fwd_of_seq = g_hash_table_new(g_int64_hash, g_int64_equal);
  g_autoptr(GHashTable) latest = g_hash_table_new(g_int64_hash, g_int64_equal);
  for (guint32 i = 0; i < it->n_evs; i++) {
    guint32 u = b->unit_ev[i];
    if (u == G_MAXUINT32 || it->evs[i].seq < 0 || unit_at(b, u)->stage != STW_STAGE_FWD)
      continue;
    const ImportEvent *last = g_hash_table_lookup(latest, &it->evs[i].seq);
    if (last == NULL || it->evs[i].ts >= last->ts) {
      g_hash_table_insert(latest, &it->evs[i].seq, &it->evs[i]);
      g_hash_table_insert(b->fwd_of_seq, &it->evs[i].seq, GUINT_TO_POINTER(u));
    }
  }
}

/* Parameters from the recorded shapes of the outermost forward ops that take them
 * (aten::linear, not the aten::addmm inside it). */
static void
params_from_shapes(Build *b)
{
  ImportIteration *it = b->it;
  for (guint32 i = 0; i < it->n_evs; i++) {
    const ImportEvent *e = &it->evs[i];
    guint32 u = b->unit_ev[i];
    if (e->shapes == NULL || u == G_MAXUINT32 || unit_at(b, u)->stage != STW_STAGE_FWD)
      continue;
    if (e->shapes_above)
      continue; /* an op around it takes the parameters (aten::linear over aten::addmm) */
    for (guint k = 0; k < e->shapes->n; k++) {
      const ImportParam *p = &e->shapes->p[k];
      g_autofree char *name = param_name(e, e->near_path, p->role, b->counts, b->used);
      guint32 id = stw_trace_add_tensor(b->t, name, p->dtype, p->shape, p->ndim);
      add_unique(unit_at(b, u)->params, id);
    }
  }
  if (b->t->tensors->len > 0) {
    b->rep->param_source = "shapes";
    stw_trace_warn(b->t, "params_from_shapes", b->t->tensors->len); /* no tensor identity */
  }
}

/* Each backward unit reads and writes the gradients of the forward units whose nodes it ran,
 * and pairs with the first of them (AccumulateGrad and the like pair with none). */
static void
pair_backward(Build *b)
{
  ImportIteration *it = b->it;
  for (guint32 i = 0; i < it->n_evs; i++) {
    guint32 u = b->unit_ev[i];
    gpointer v;
    if (u == G_MAXUINT32 || it->evs[i].seq < 0 || unit_at(b, u)->stage != STW_STAGE_BWD ||
        !g_hash_table_lookup_extended(b->fwd_of_seq, &it->evs[i].seq, NULL, &v))
      continue;
    const Unit *f = unit_at(b, GPOINTER_TO_UINT(v));
    Unit *x = unit_at(b, u);
    for (guint k = 0; k < f->params->len; k++) {
      add_unique(x->params, g_array_index(f->params, guint32, k));
      add_unique(x->grads, g_array_index(f->params, guint32, k));
    }
    if (x->pair == G_MAXUINT32)
      x->pair = GPOINTER_TO_UINT(v);
  }
}

/* With a memory timeline, the categories say which bytes are not model data. */
static gboolean
memory_from_timeline(Build *b, GError **error)
{
  guint n = b->units->len;
  g_autofree double *s0 = g_new(double, MAX(n, 1)), *s1 = g_new(double, MAX(n, 1));
  g_autofree guint64 *nm = g_new(guint64, MAX(n, 1)), *pk = g_new(guint64, MAX(n, 1));
  double first = INFINITY, last = -INFINITY;
  for (guint u = 0; u < n; u++) {
    const ImportEvent *e = &b->it->evs[unit_at(b, u)->ev];
    s0[u] = e->ts;
    s1[u] = e->end;
    first = MIN(first, e->ts);
    last = MAX(last, e->end);
  }
  if (n > 0 && !import_timeline_covers(b->it, b->it->base_ns, first, last, error))
    return FALSE;
  import_timeline_apply(b->it, b->it->base_ns, s0, s1, nm, pk, n);
  for (guint u = 0; u < n; u++) {
    unit_at(b, u)->nonmodel = nm[u];
    unit_at(b, u)->peak = pk[u];
  }
  stw_trace_warn(b->t, "memory_from_timeline", n);
  return TRUE;
}

/* No parameter in the files: the memory held at the iteration's start as one tensor, when the
 * user asks for it and the file has the figure; else an error saying what would show them. */
static gboolean
params_from_memory(Build *b, GError **error)
{
  ImportIteration *it = b->it;
  if (b->o->params_from_memory && b->rep->has_total_allocated && b->rep->allocated_at_start > 0) {
    guint64 numel = b->rep->allocated_at_start / 4;
    stw_trace_add_tensor(b->t, "model_state", STW_DTYPE_FP32, &numel, 1);
    b->rep->param_source = "memory";
    stw_trace_warn(b->t, "params_from_memory", b->rep->allocated_at_start);
    return TRUE;
  }
  if (it->et_reads != NULL)
    g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_EMPTY,
                "%s: the execution trace links %" G_GUINT64_FORMAT " of %u ops but shows no "
                "parameters: no optimizer step updates a tensor the forward ops read, and no "
                "tensor they read outlives the run", it->file, b->rep->et_linked, it->n_evs);
  else
    fail_empty(it, error,
               b->o->params_from_memory
                   ? "no parameters, and no Total Allocated to take the model state from: "
                     "record with profile_memory=True on a newer PyTorch"
                   : "the trace shows no parameters: record with record_shapes=True, give the "
                     "execution trace of the run (--et), or take the memory held at the "
                     "iteration's start as one unattributed model state (--params-from-memory)");
  return FALSE;
}

/* Folds backward unit X (NS long) into OP, the backward op of the same forward unit. */
static void
merge_into(StwOp *op, const Unit *x, guint64 ns)
{
  g_autoptr(GArray) ps = g_array_new(FALSE, FALSE, sizeof(guint32));
  g_autoptr(GArray) gs = g_array_new(FALSE, FALSE, sizeof(guint32));
  g_array_append_vals(ps, op->params, op->n_params);
  g_array_append_vals(gs, op->grads, op->n_grads);
  for (guint k = 0; k < x->params->len; k++)
    add_unique(ps, g_array_index(x->params, guint32, k));
  for (guint k = 0; k < x->grads->len; k++)
    add_unique(gs, g_array_index(x->grads, guint32, k));
  g_free(op->params);
  g_free(op->grads);
  op->n_params = ps->len;
  op->n_grads = gs->len;
  op->params = g_memdup2(ps->data, MAX(ps->len, 1) * sizeof(guint32));
  op->grads = g_memdup2(gs->data, MAX(gs->len, 1) * sizeof(guint32));
  op->duration_ns += ns;
  op->nonmodel_peak_bytes = MAX(op->nonmodel_peak_bytes, MAX(x->peak, x->nonmodel));
}

/* Unit U as an op; by modules, the backward of one forward unit is one op: the run of backward
 * units whose autograd nodes came from it (and those that came from none, AccumulateGrad's). */
static void
emit_unit(Build *b, guint u)
{
  ImportIteration *it = b->it;
  const Unit *x = unit_at(b, u);
  const ImportEvent *e = &it->evs[x->ev];
  double us = it->untimed ? 0 : x->kernels > 0 ? x->gpu_us : e->end - e->ts;
  b->timed_us += MAX(us, 0);
  if (b->over == NULL && b->timed_us * 1000.0 > (double)STW_TRACE_MAX_TOTAL_NS)
    b->over = e;
  if (x->kernels > 0)
    b->rep->ops_gpu_timed++;
  else if (!it->untimed)
    b->cpu_timed++;
  if (x->stage == STW_STAGE_OPTIM && is_optimizer(e)) {
    b->optim_us += us;
    b->optim_nonmodel = MAX(b->optim_nonmodel, x->nonmodel);
    b->optim_peak = MAX(b->optim_peak, x->peak);
    return;
  }
  guint64 ns = (guint64)llround(MAX(us, 0) * 1000.0);
  StwTrace *t = b->t;
  if (b->modules && x->stage == STW_STAGE_BWD && t->ops->len > 0 &&
      b->last_bwd_pair != G_MAXUINT32 && (x->pair == G_MAXUINT32 || x->pair == b->last_bwd_pair)) {
    merge_into(&g_array_index(t->ops, StwOp, t->ops->len - 1), x, ns);
    return;
  }
  /* a module's op is named by its path under the model: "GPT2Model_0.GPT2Block_3" */
  const ImportEvent *named = e;
  if (b->modules && x->stage == STW_STAGE_BWD && x->pair != G_MAXUINT32)
    named = &it->evs[unit_at(b, x->pair)->ev];
  const char *base = named->path != NULL && strchr(named->path, '.') != NULL
                         ? strchr(named->path, '.') + 1
                     : named->path != NULL ? named->path
                                           : named->name;
  g_autofree char *name = named != e ? g_strconcat(base, ".bwd", NULL) : g_strdup(base);
  StwOp *op = stw_trace_add_op(t, name, x->stage, (guint32 *)x->params->data, x->params->len,
                               (guint32 *)x->grads->data, x->grads->len);
  op->duration_ns = ns;
  op->nonmodel_bytes = x->nonmodel;
  op->nonmodel_peak_bytes = MAX(x->peak, x->nonmodel);
  b->last_bwd_pair = x->stage == STW_STAGE_BWD ? x->pair : G_MAXUINT32;
}

/* The optimizer step, one op per parameter as the planner places them, its time shared by
 * size. */
static void
emit_optimizer(Build *b)
{
  StwTrace *t = b->t;
  guint64 total_numel = 0;
  for (guint i = 0; i < t->tensors->len; i++)
    total_numel += stw_trace_tensor(t, i)->numel;
  for (guint32 i = 0; i < t->tensors->len; i++) {
    const StwTensor *x = stw_trace_tensor(t, i);
    g_autofree char *name = g_strconcat("optimizer.", x->name, NULL);
    StwOp *op = stw_trace_add_op(t, name, STW_STAGE_OPTIM, &i, 1, NULL, 0);
    op->duration_ns = (guint64)llround(b->optim_us * 1000.0 * (double)x->numel /
                                       (double)MAX(total_numel, 1));
    op->nonmodel_bytes = b->optim_nonmodel;
    op->nonmodel_peak_bytes = b->optim_peak;
  }
}

/* What the files could not tell, the device and the name; then the trace must validate. */
static gboolean
finish(Build *b, GError **error)
{
  ImportIteration *it = b->it;
  StwTrace *t = b->t;
  stw_trace_warn(t, "unknown_events", b->rep->unknown_events);
  b->rep->ops_cpu_timed = b->cpu_timed;
  stw_trace_warn(t, "cpu_timed_ops", b->cpu_timed);
  if (it->n_mems == 0 && it->timeline == NULL)
    stw_trace_warn(t, "no_memory_events", 1);
  if (it->untimed)
    stw_trace_warn(t, "no_durations", t->ops->len);
  if (!b->saw_bwd)
    stw_trace_warn(t, "no_backward", 1);
  if (!b->saw_optim)
    stw_trace_warn(t, "no_optimizer_step", 1);
  g_free(t->device.name);
  t->device.name = g_strdup(it->device_name != NULL ? it->device_name : "cpu");
  t->device.memory_bytes = it->device_memory;
  t->device.rank = it->rank;
  t->device.world_size = it->world_size;
  g_free(t->model.name);
  t->model.name = g_path_get_basename(it->file);
  /* every name the file gave, or that was made of its names, within what a trace holds */
  cap_in_place(&t->model.name);
  cap_in_place(&t->device.name);
  for (guint i = 0; i < t->tensors->len; i++) {
    StwTensor *x = &g_array_index(t->tensors, StwTensor, i);
    cap_in_place(&x->name);
    for (guint k = 0; x->aliases != NULL && k < x->aliases->len; k++)
      cap_in_place((char **)&x->aliases->pdata[k]);
  }
  for (guint i = 0; i < t->ops->len; i++)
    cap_in_place(&g_array_index(t->ops, StwOp, i).name);
  return stw_trace_validate(t, it->file, error);
}

StwTrace *
import_build(ImportIteration *it, GError **error)
{
  Build b = { .it = it, .rep = it->rep, .o = it->o, .last_bwd_pair = G_MAXUINT32 };
  if (!select_events(&b, error))
    return NULL;
  cut_units(&b);
  assign_stages(&b);
  index_sequences(&b);
  b.t = stw_trace_new();
  b.t->source.kind = STW_SOURCE_KINETO;
  g_free(b.t->source.created);
  g_autoptr(GDateTime) now = g_date_time_new_now_utc();
  b.t->source.created = g_date_time_format(now, "%Y-%m-%dT%H:%M:%SZ");
  b.counts = g_hash_table_new(g_str_hash, g_str_equal);
  b.used = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  if (it->et_reads != NULL) {
    params_from_et(it, b.units, b.unit_ev, b.t, b.rep, b.used);
    b.rep->param_source = "the execution trace";
  } else {
    params_from_shapes(&b);
  }
  pair_backward(&b);
  durations(it, b.units, b.unit_ev, b.unit_of_ext, b.rep);
  memory(it, b.units, b.rep);
  if ((it->timeline != NULL && !memory_from_timeline(&b, error)) ||
      (b.t->tensors->len == 0 && !params_from_memory(&b, error))) {
    build_clear(&b);
    return NULL;
  }
  for (guint i = 0; i < b.t->tensors->len; i++)
    b.rep->param_bytes += stw_tensor_bytes(stw_trace_tensor(b.t, i));
  b.rep->params = b.t->tensors->len;
  for (guint u = 0; u < b.units->len; u++)
    emit_unit(&b, u);
  if (b.over != NULL) {
    g_set_error(error, STW_IMPORT_ERROR, STW_IMPORT_ERROR_INVALID,
                "%s: the iteration's ops take more than 2^53 ns (104 days) in all, what a trace "
                "may hold: the sum passes it at %s (ts %.3f us)", it->file, b.over->name,
                b.over->ts);
    build_clear(&b);
    return NULL;
  }
  emit_optimizer(&b);
  if (!finish(&b, error)) {
    build_clear(&b);
    return NULL;
  }
  StwTrace *t = g_steal_pointer(&b.t);
  build_clear(&b);
  return t;
}

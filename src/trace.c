/* trace.c — the trace model, its validation, and its one JSON reader and writer. */
#include "config.h"

#include <stowage/trace.h>

#include <stowage/files.h>

#include <stowage/errors.h>

/* "FILE: message" in this module's domain */
#define invalid(error, file, ...) \
  stw_fail_file((error), STW_TRACE_ERROR, STW_TRACE_ERROR_INVALID, (file), __VA_ARGS__)

#include <string.h>

#include "json.h"

G_DEFINE_QUARK(stw-trace-error-quark, stw_trace_error)

static const char *const stage_names[] = { "fwd", "bwd", "optim", NULL };
const char *const stw_gradients_names[] = { "chunks", "framework", "host", "host-via-device",
                                             NULL };
static const char *const source_kind_names[] = { "runtime", "cupti", "kineto", "synthetic",
                                                 NULL };

const char *
stw_stage_name(StwStage stage)
{
  return stage_names[stage];
}

const char *
stw_source_kind_name(StwSourceKind kind)
{
  return source_kind_names[kind];
}

guint64
stw_trace_largest_tensor(const StwTrace *t, guint32 *id_out)
{
  guint64 best = 0;
  guint32 id = 0;
  for (guint32 i = 0; i < t->tensors->len; i++) {
    if (stw_trace_tensor(t, i)->numel > best) {
      best = stw_trace_tensor(t, i)->numel;
      id = i;
    }
  }
  if (id_out != NULL)
    *id_out = id;
  return best;
}

guint64
stw_tensor_bytes(const StwTensor *t)
{
  return t->numel * stw_dtype_bytes(t->dtype);
}

static void
tensor_clear(gpointer p)
{
  StwTensor *t = p;
  g_free(t->name);
  if (t->aliases != NULL)
    g_ptr_array_unref(t->aliases);
}

static void
op_clear(gpointer p)
{
  StwOp *op = p;
  g_free(op->name);
  g_free(op->params);
  g_free(op->grads);
}

static void
block_clear(gpointer p)
{
  g_free(((StwBlock *)p)->name);
}

static void
warning_clear(gpointer p)
{
  g_free(((StwTraceWarning *)p)->name);
}

void
stw_trace_warn(StwTrace *t, const char *name, guint64 count)
{
  if (count == 0)
    return;
  for (guint i = 0; i < t->source.warnings->len; i++) {
    StwTraceWarning *w = &g_array_index(t->source.warnings, StwTraceWarning, i);
    if (strcmp(w->name, name) == 0) {
      w->count = MIN(w->count + MIN(count, STW_TRACE_MAX_INT), STW_TRACE_MAX_INT);
      return;
    }
  }
  StwTraceWarning w = { g_strdup(name), MIN(count, STW_TRACE_MAX_INT) };
  g_array_append_val(t->source.warnings, w);
}

StwTrace *
stw_trace_new(void)
{
  StwTrace *t = g_new0(StwTrace, 1);
  t->tensors = g_array_new(FALSE, TRUE, sizeof(StwTensor));
  g_array_set_clear_func(t->tensors, tensor_clear);
  t->ops = g_array_new(FALSE, TRUE, sizeof(StwOp));
  g_array_set_clear_func(t->ops, op_clear);
  t->blocks = g_array_new(FALSE, TRUE, sizeof(StwBlock));
  g_array_set_clear_func(t->blocks, block_clear);
  t->source.kind = STW_SOURCE_SYNTHETIC;
  t->source.tool = g_strdup(PACKAGE_STRING);
  t->source.created = g_strdup("");
  t->source.warnings = g_array_new(FALSE, TRUE, sizeof(StwTraceWarning));
  g_array_set_clear_func(t->source.warnings, warning_clear);
  t->model.name = g_strdup("");
  t->device.name = g_strdup("");
  t->device.world_size = 1;
  t->model.micro_steps = 1;
  return t;
}

void
stw_trace_free(StwTrace *t)
{
  if (t == NULL)
    return;
  g_free(t->source.tool);
  g_free(t->source.created);
  g_array_unref(t->source.warnings);
  g_free(t->model.name);
  g_free(t->device.name);
  g_array_unref(t->tensors);
  g_array_unref(t->ops);
  g_array_unref(t->blocks);
  g_free(t);
}

guint32
stw_trace_add_tensor(StwTrace *trace, const char *name, StwDtype dtype, const guint64 *shape,
                     guint32 ndim)
{
  StwTensor t = { .name = g_strdup(name), .ndim = ndim, .dtype = dtype, .numel = 1 };
  g_assert(ndim >= 1 && ndim <= STW_TRACE_MAX_DIMS);
  for (guint32 i = 0; i < ndim; i++) {
    t.shape[i] = shape[i];
    t.numel *= shape[i];
  }
  t.aliases = g_ptr_array_new_with_free_func(g_free);
  g_array_append_val(trace->tensors, t);
  return trace->tensors->len - 1;
}

StwOp *
stw_trace_add_op(StwTrace *trace, const char *name, StwStage stage, const guint32 *params,
                 guint32 n_params, const guint32 *grads, guint32 n_grads)
{
  StwOp op = {
    .name = g_strdup(name),
    .stage = stage,
    .params = g_memdup2(params, n_params * sizeof(guint32)),
    .n_params = n_params,
    .grads = g_memdup2(grads, n_grads * sizeof(guint32)),
    .n_grads = n_grads,
  };
  g_array_append_val(trace->ops, op);
  return &g_array_index(trace->ops, StwOp, trace->ops->len - 1);
}

/* ---- validation ------------------------------------------------------------------------ */

/* Checks a list of tensor ids: each exists, none twice. SEEN is scratch of n_tensors bytes,
 * all zero on entry and on return. */
static gboolean
check_ids(const char *file, guint32 op_index, const char *what, const guint32 *ids, guint32 n,
          guint32 n_tensors, guint8 *seen, GError **error)
{
  gboolean ok = TRUE;
  guint32 i;
  for (i = 0; i < n && ok; i++) {
    if (ids[i] >= n_tensors)
      ok = invalid(error, file,
                   "$.ops[%u].%s[%u]: tensor id %u does not exist (the trace has %u tensors)",
                   op_index, what, i, ids[i], n_tensors);
    else if (seen[ids[i]])
      ok = invalid(error, file, "$.ops[%u].%s[%u]: tensor id %u is listed twice", op_index,
                   what, i, ids[i]);
    else
      seen[ids[i]] = 1;
  }
  for (guint32 j = 0; j < i; j++) {
    if (ids[j] < n_tensors)
      seen[ids[j]] = 0;
  }
  return ok;
}

StwBlock *
stw_trace_add_block(StwTrace *trace, const char *name, guint32 fwd_first, guint32 fwd_last,
                    guint32 bwd_first, guint32 bwd_last)
{
  StwBlock b = { .name = g_strdup(name), .fwd_first = fwd_first, .fwd_last = fwd_last,
                 .bwd_first = bwd_first, .bwd_last = bwd_last };
  g_array_append_val(trace->blocks, b);
  return &g_array_index(trace->blocks, StwBlock, trace->blocks->len - 1);
}

/* Whether ops [FIRST, LAST] exist and are all of STAGE; FALSE with ERROR naming block I's
 * member WHAT. */
static gboolean
block_ops(const StwTrace *t, const char *file, guint32 i, const char *what, guint32 first,
          guint32 last, StwStage stage, GError **error)
{
  if (first > last || last >= t->ops->len)
    return invalid(error, file, "$.blocks[%u].%s: ops [%u, %u] are not a range of the trace's "
                   "%u ops", i, what, first, last, t->ops->len);
  for (guint32 k = first; k <= last; k++) {
    if (stw_trace_op(t, k)->stage != stage)
      return invalid(error, file, "$.blocks[%u].%s: op %u (%s) is a %s op, and a block's %s "
                     "ops are all %s", i, what, k, stw_trace_op(t, k)->name,
                     stw_stage_name(stw_trace_op(t, k)->stage), what, stw_stage_name(stage));
  }
  return TRUE;
}

/* The blocks' invariants (stw_trace_validate). */
static gboolean
validate_blocks(const StwTrace *t, const char *file, GError **error)
{
  if (t->blocks->len > t->ops->len)
    return invalid(error, file, "$.blocks: %u blocks, more than the %u ops", t->blocks->len,
                   t->ops->len);
  for (guint32 i = 0; i < t->blocks->len; i++) {
    const StwBlock *b = &g_array_index(t->blocks, StwBlock, i);
    if (b->name == NULL || b->name[0] == '\0' || strlen(b->name) > STW_TRACE_MAX_NAME)
      return invalid(error, file, "$.blocks[%u].name: 1 to %d bytes", i, STW_TRACE_MAX_NAME);
    if (!block_ops(t, file, i, "forward", b->fwd_first, b->fwd_last, STW_STAGE_FWD, error) ||
        !block_ops(t, file, i, "backward", b->bwd_first, b->bwd_last, STW_STAGE_BWD, error))
      return FALSE;
    if (b->bwd_first < b->fwd_last)
      return invalid(error, file, "$.blocks[%u].backward: op %u comes before the block's "
                     "forward ends (op %u)", i, b->bwd_first, b->fwd_last);
    const guint64 ints[] = { b->input_bytes, b->saved_bytes, b->forward_ns };
    const char *names[] = { "input_bytes", "saved_bytes", "forward_ns" };
    for (gsize k = 0; k < G_N_ELEMENTS(ints); k++) {
      if (ints[k] > STW_TRACE_MAX_INT)
        return invalid(error, file, "$.blocks[%u].%s: %" G_GUINT64_FORMAT " is more than the "
                       "format's limit of 2^53", i, names[k], ints[k]);
    }
    if (i == 0)
      continue;
    const StwBlock *a = &g_array_index(t->blocks, StwBlock, i - 1);
    if (b->fwd_first <= a->fwd_last)
      return invalid(error, file, "$.blocks[%u].forward: ops [%u, %u] begin before block %s's "
                     "forward ends (op %u): blocks are listed in order, their ops apart", i,
                     b->fwd_first, b->fwd_last, a->name, a->fwd_last);
    for (guint32 k = 0; k < i; k++) {
      const StwBlock *c = &g_array_index(t->blocks, StwBlock, k);
      if (b->bwd_first <= c->bwd_last && c->bwd_first <= b->bwd_last)
        return invalid(error, file, "$.blocks[%u].backward: ops [%u, %u] interleave block "
                       "%s's backward [%u, %u]", i, b->bwd_first, b->bwd_last, c->name,
                       c->bwd_first, c->bwd_last);
    }
  }
  return TRUE;
}

gboolean
stw_trace_validate(const StwTrace *t, const char *file, GError **error)
{
  guint32 n_tensors = t->tensors->len;
  if (n_tensors > STW_TRACE_MAX_TENSORS)
    return invalid(error, file, "$.tensors: more than %u tensors", STW_TRACE_MAX_TENSORS);
  if (t->ops->len > STW_TRACE_MAX_OPS)
    return invalid(error, file, "$.ops: more than %u ops", STW_TRACE_MAX_OPS);
  if (t->ops->len == 0)
    return invalid(error, file, "$.ops: a trace needs at least one op");
  if (n_tensors == 0)
    return invalid(error, file, "$.tensors: a trace needs at least one model tensor (there is "
                   "no model data to plan)");
  if (t->device.world_size < 1 || t->device.world_size > STW_TRACE_MAX_WORLD ||
      t->device.rank >= t->device.world_size)
    return invalid(error, file, "$.device.rank: rank %u is not below world_size %u (at most "
                   "%u)", t->device.rank, t->device.world_size, STW_TRACE_MAX_WORLD);
  if (t->device.memory_bytes > STW_TRACE_MAX_INT)
    return invalid(error, file, "$.device.memory_bytes: more than 2^53 bytes");
  if (t->model.batch > STW_TRACE_MAX_BATCH || t->model.seq > STW_MODEL_MAX_SEQ)
    return invalid(error, file, "$.model: batch %" G_GUINT64_FORMAT " x seq %" G_GUINT64_FORMAT
                   " is beyond the format's limits (%u, %u)", t->model.batch, t->model.seq,
                   STW_TRACE_MAX_BATCH, STW_MODEL_MAX_SEQ);

  /* what the reader refuses, no writer writes: names, lists and values within its limits */
  const char *named[] = { t->model.name, t->device.name };
  for (gsize k = 0; k < G_N_ELEMENTS(named); k++) {
    if (named[k] != NULL && strlen(named[k]) > STW_TRACE_MAX_NAME)
      return invalid(error, file, "$.%s.name: %" G_GSIZE_FORMAT " bytes, more than the %d a "
                     "name holds", k == 0 ? "model" : "device", strlen(named[k]),
                     STW_TRACE_MAX_NAME);
  }
  guint64 values = 200; /* the JSON values of the file, as its reader counts them (a bound) */
  g_autoptr(GHashTable) names = g_hash_table_new(g_str_hash, g_str_equal);
  guint64 total_numel = 0;
  for (guint32 i = 0; i < n_tensors; i++) {
    const StwTensor *x = stw_trace_tensor(t, i);
    guint64 product = 1;
    if (x->name == NULL || x->name[0] == '\0')
      return invalid(error, file, "$.tensors[%u].name: tensor names cannot be empty", i);
    if (x->ndim < 1 || x->ndim > STW_TRACE_MAX_DIMS)
      return invalid(error, file, "$.tensors[%u].shape: expected 1 to %d dimensions", i,
                     STW_TRACE_MAX_DIMS);
    for (guint32 k = 0; k < x->ndim; k++) {
      if (x->shape[k] == 0 || product > STW_TRACE_MAX_NUMEL / x->shape[k])
        return invalid(error, file,
                       "$.tensors[%u].shape[%u]: dimensions must be positive and their "
                       "product at most 2^48", i, k);
      product *= x->shape[k];
    }
    if (product != x->numel)
      return invalid(error, file,
                     "$.tensors[%u].numel: %" G_GUINT64_FORMAT " does not match the shape's "
                     "product %" G_GUINT64_FORMAT, i, x->numel, product);
    total_numel += x->numel; /* at most 2^20 tensors of 2^48: no wrap */
    if (total_numel > STW_TRACE_MAX_TOTAL_NUMEL)
      return invalid(error, file, "$.tensors[%u]: the tensors hold more than 2^49 elements in "
                     "all (2^53 bytes of model data)", i);
    guint n_aliases = x->aliases != NULL ? x->aliases->len : 0;
    if (n_aliases > STW_TRACE_MAX_ALIASES)
      return invalid(error, file, "$.tensors[%u].aliases: more than %d", i,
                     STW_TRACE_MAX_ALIASES);
    for (guint k = 0; k <= n_aliases; k++) {
      const char *name = k == 0 ? x->name : x->aliases->pdata[k - 1];
      if (strlen(name) > STW_TRACE_MAX_NAME)
        return invalid(error, file, "$.tensors[%u]%s: %" G_GSIZE_FORMAT " bytes, more than the "
                       "%d a name holds", i, k == 0 ? ".name" : ".aliases", strlen(name),
                       STW_TRACE_MAX_NAME);
      if (!g_hash_table_add(names, (gpointer)name))
        return invalid(error, file, "$.tensors[%u]: the name \"%s\" is used twice", i, name);
    }
    values += 8 + x->ndim + n_aliases;
  }

  guint32 micro_steps = t->model.micro_steps;
  if (micro_steps < 1 || micro_steps > STW_TRACE_MAX_MICRO_STEPS)
    return invalid(error, file, "$.model.micro_steps: %u is not 1 to %u", micro_steps,
                   STW_TRACE_MAX_MICRO_STEPS);
  if (micro_steps > 1 && t->model.gradients == STW_GRADIENTS_CHUNKS)
    return invalid(error, file, "$.model.micro_steps: %u micro-steps need the gradients apart "
                   "from the parameters (\"gradients\": \"framework\"): written into the "
                   "parameters' chunks, they would be what the next micro-step's forward reads",
                   micro_steps);

  g_autofree guint8 *seen = g_malloc0(MAX(n_tensors, 1));
  StwStage stage = STW_STAGE_FWD;
  guint32 runs = 1; /* forward-backward runs begun so far */
  guint64 total_ns = 0, total_flops = 0;
  for (guint32 i = 0; i < t->ops->len; i++) {
    const StwOp *op = stw_trace_op(t, i);
    if (op->name == NULL || op->name[0] == '\0')
      return invalid(error, file, "$.ops[%u].name: op names cannot be empty", i);
    if (strlen(op->name) > STW_TRACE_MAX_NAME)
      return invalid(error, file, "$.ops[%u].name: %" G_GSIZE_FORMAT " bytes, more than the %d "
                     "a name holds", i, strlen(op->name), STW_TRACE_MAX_NAME);
    if (op->n_params > STW_TRACE_MAX_OP_TENSORS || op->n_grads > STW_TRACE_MAX_OP_TENSORS)
      return invalid(error, file, "$.ops[%u].%s: more than %u tensor ids", i,
                     op->n_params > STW_TRACE_MAX_OP_TENSORS ? "params" : "grads",
                     STW_TRACE_MAX_OP_TENSORS);
    values += 11 + (guint64)op->n_params + op->n_grads;
    if (values > STW_TRACE_MAX_VALUES)
      return invalid(error, file, "$.ops[%u]: the trace would hold more than %u JSON values by "
                     "this op, more than its reader takes", i, STW_TRACE_MAX_VALUES);
    const struct {
      const char *name;
      guint64 v;
    } ints[] = { { "nonmodel_bytes", op->nonmodel_bytes },
                 { "nonmodel_peak_bytes", op->nonmodel_peak_bytes },
                 { "duration_ns", op->duration_ns }, { "flops", op->flops } };
    for (gsize k = 0; k < G_N_ELEMENTS(ints); k++) {
      if (ints[k].v > STW_TRACE_MAX_INT)
        return invalid(error, file, "$.ops[%u].%s: %" G_GUINT64_FORMAT " is more than the "
                       "format's limit of 2^53", i, ints[k].name, ints[k].v);
    }
    /* each term is at most 2^53 and the sums are checked at every step: no wrap */
    total_ns += op->duration_ns;
    total_flops += op->flops;
    if (total_ns > STW_TRACE_MAX_TOTAL_NS)
      return invalid(error, file, "$.ops[%u].duration_ns: the ops' durations add up to more "
                     "than 2^53 ns (104 days) by this op", i);
    if (total_flops > STW_TRACE_MAX_TOTAL_FLOPS)
      return invalid(error, file, "$.ops[%u].flops: the ops' FLOPs add up to more than 2^62 "
                     "by this op", i);
    if (op->stage == STW_STAGE_FWD && stage == STW_STAGE_BWD) {
      if (++runs > micro_steps)
        return invalid(error, file,
                       "$.ops[%u].stage: a fwd op after bwd ops begins forward-backward run %u, "
                       "and the trace has %u (model.micro_steps: a trace of gradient "
                       "accumulation says how many)", i, runs, micro_steps);
    } else if (op->stage < stage) {
      return invalid(error, file,
                     "$.ops[%u].stage: a %s op after %s ops (a trace holds forward and "
                     "backward stages, micro_steps times, then one optimizer stage)", i,
                     stw_stage_name(op->stage), stw_stage_name(stage));
    }
    stage = op->stage;
    if (op->n_grads > 0 && op->stage != STW_STAGE_BWD)
      return invalid(error, file, "$.ops[%u].grads: only bwd ops write gradients", i);
    for (guint32 k = 0; k < op->n_grads; k++) {
      if (op->grads[k] < n_tensors && stw_trace_tensor(t, op->grads[k])->frozen)
        return invalid(error, file, "$.ops[%u].grads[%u]: tensor %s is frozen: it has no "
                       "gradient", i, k, stw_trace_tensor(t, op->grads[k])->name);
    }
    for (guint32 k = 0; op->stage == STW_STAGE_OPTIM && k < op->n_params; k++) {
      if (op->params[k] < n_tensors && stw_trace_tensor(t, op->params[k])->frozen)
        return invalid(error, file, "$.ops[%u].params[%u]: tensor %s is frozen: no optimizer "
                       "op steps it", i, k, stw_trace_tensor(t, op->params[k])->name);
    }
    if (op->nonmodel_peak_bytes < op->nonmodel_bytes)
      return invalid(error, file,
                     "$.ops[%u].nonmodel_peak_bytes: %" G_GUINT64_FORMAT " is below "
                     "nonmodel_bytes %" G_GUINT64_FORMAT, i, op->nonmodel_peak_bytes,
                     op->nonmodel_bytes);
    if (!check_ids(file, i, "params", op->params, op->n_params, n_tensors, seen, error) ||
        !check_ids(file, i, "grads", op->grads, op->n_grads, n_tensors, seen, error))
      return FALSE;
  }
  if (runs < micro_steps)
    return invalid(error, file, "$.model.micro_steps: %u, but the ops hold %u forward-backward "
                   "run%s", micro_steps, runs, runs == 1 ? "" : "s");
  return validate_blocks(t, file, error);
}

/* Whether tensor X's name or one of its aliases matches PATTERN. */
static gboolean
tensor_matches(const StwTensor *x, GPatternSpec *pattern)
{
  if (g_pattern_spec_match_string(pattern, x->name))
    return TRUE;
  for (guint k = 0; x->aliases != NULL && k < x->aliases->len; k++)
    if (g_pattern_spec_match_string(pattern, x->aliases->pdata[k]))
      return TRUE;
  return FALSE;
}

/* Drops the frozen tensors from IDS (N of them), in place. */
static void
drop_frozen(const StwTrace *t, guint32 *ids, guint32 *n)
{
  guint32 k = 0;
  for (guint32 i = 0; i < *n; i++)
    if (!stw_trace_tensor(t, ids[i])->frozen)
      ids[k++] = ids[i];
  *n = k;
}

gboolean
stw_trace_freeze(StwTrace *t, const char *patterns, guint32 *n_out, GError **error)
{
  g_auto(GStrv) list = g_strsplit(patterns, ",", -1);
  guint32 n = 0;
  for (guint p = 0; list[p] != NULL; p++) {
    const char *glob = g_strstrip(list[p]);
    if (*glob == '\0') {
      g_set_error(error, STW_TRACE_ERROR, STW_TRACE_ERROR_INVALID,
                  "--freeze: an empty pattern in \"%s\"", patterns);
      return FALSE;
    }
    GPatternSpec *spec = g_pattern_spec_new(glob);
    guint32 matched = 0;
    for (guint32 i = 0; i < t->tensors->len; i++) {
      StwTensor *x = &g_array_index(t->tensors, StwTensor, i);
      if (!tensor_matches(x, spec))
        continue;
      matched++;
      n += x->frozen ? 0 : 1;
      x->frozen = TRUE;
    }
    g_pattern_spec_free(spec);
    if (matched == 0) {
      g_set_error(error, STW_TRACE_ERROR, STW_TRACE_ERROR_INVALID,
                  "--freeze: \"%s\" matches none of the %u tensors (names such as %s; '*' "
                  "matches any text)", glob, t->tensors->len,
                  t->tensors->len > 0 ? stw_trace_tensor(t, t->tensors->len - 1)->name : "-");
      return FALSE;
    }
  }
  for (guint32 i = 0; i < t->ops->len;) {
    StwOp *op = &g_array_index(t->ops, StwOp, i);
    drop_frozen(t, op->grads, &op->n_grads);
    if (op->stage == STW_STAGE_OPTIM) {
      drop_frozen(t, op->params, &op->n_params);
      if (op->n_params == 0) {
        g_array_remove_index(t->ops, i);
        continue;
      }
    }
    i++;
  }
  if (n_out != NULL)
    *n_out = n;
  return TRUE;
}

guint64
stw_trace_host_gradient_bytes(const StwTrace *t)
{
  guint64 bytes = 0;
  for (guint32 i = 0; stw_gradients_on_host(t->model.gradients) && i < t->tensors->len; i++) {
    const StwTensor *x = stw_trace_tensor(t, i);
    if (!x->frozen)
      bytes += stw_tensor_bytes(x);
  }
  return bytes;
}

guint32
stw_trace_frozen(const StwTrace *t, guint64 *numel_out)
{
  guint32 n = 0;
  guint64 numel = 0;
  for (guint32 i = 0; i < t->tensors->len; i++) {
    const StwTensor *x = stw_trace_tensor(t, i);
    if (x->frozen) {
      n++;
      numel += x->numel;
    }
  }
  if (numel_out != NULL)
    *numel_out = numel;
  return n;
}

/* ---- writing ----------------------------------------------------------------------------- */

/* The trace as JSON; without SOURCE it is the canonical form that stw_trace_digest hashes. */
static cJSON *
trace_to_json(const StwTrace *t, gboolean with_source)
{
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "format", STW_TRACE_FORMAT);
  /* version 1 without blocks, so that the traces before them keep their files and digests */
  stw_json_add_u64(root, "version", t->blocks->len > 0 ? STW_TRACE_VERSION_BLOCKS : 1);
  if (with_source) {
    cJSON *source = cJSON_AddObjectToObject(root, "source");
    cJSON_AddStringToObject(source, "kind", stw_source_kind_name(t->source.kind));
    cJSON_AddStringToObject(source, "tool", t->source.tool);
    cJSON_AddStringToObject(source, "created", t->source.created);
    if (t->source.warnings->len > 0) {
      cJSON *w = cJSON_AddObjectToObject(source, "warnings");
      for (guint i = 0; i < t->source.warnings->len; i++) {
        const StwTraceWarning *x = &g_array_index(t->source.warnings, StwTraceWarning, i);
        stw_json_add_u64(w, x->name, x->count);
      }
    }
  }

  cJSON *model = cJSON_AddObjectToObject(root, "model");
  cJSON_AddStringToObject(model, "name", t->model.name);
  if (t->model.has_config)
    cJSON_AddItemToObject(model, "config", stw_model_config_to_json(&t->model.config, FALSE));
  stw_json_add_u64(model, "batch", t->model.batch);
  stw_json_add_u64(model, "seq", t->model.seq);
  cJSON_AddBoolToObject(model, "checkpointing", t->model.checkpointing);
  cJSON_AddStringToObject(model, "attention", stw_attention_name(t->model.attention));
  if (t->model.kernels != STW_KERNELS_FUSED)
    cJSON_AddStringToObject(model, "kernels", stw_kernels_name(t->model.kernels));
  if (t->model.loss != STW_LOSS_FULL)
    cJSON_AddStringToObject(model, "loss", stw_loss_name(t->model.loss));
  if (t->model.optimizer_impl != STW_OPTIMIZER_FUSED)
    cJSON_AddStringToObject(model, "optimizer_impl",
                            stw_optimizer_impl_name(t->model.optimizer_impl));
  if (t->model.autocast != STW_DTYPE_FP32)
    cJSON_AddStringToObject(model, "autocast", stw_dtype_name(t->model.autocast));
  /* written only when not the default, so that the traces before them keep their digests */
  if (stw_trace_micro_steps(t) > 1)
    stw_json_add_u64(model, "micro_steps", stw_trace_micro_steps(t));
  if (t->model.gradients != STW_GRADIENTS_CHUNKS)
    cJSON_AddStringToObject(model, "gradients", stw_gradients_names[t->model.gradients]);
  if (t->model.collectives != STW_COLLECTIVES_OVERLAPPED)
    cJSON_AddStringToObject(model, "collectives", stw_collectives_names[t->model.collectives]);
  if (t->model.init != STW_INIT_SHARDED)
    cJSON_AddStringToObject(model, "init", stw_init_names[t->model.init]);
  if (t->model.amsgrad)
    cJSON_AddBoolToObject(model, "amsgrad", TRUE);
  if (t->model.images > 0) {
    stw_json_add_u64(model, "images", t->model.images);
    stw_json_add_u64(model, "image_size", t->model.image_size);
  }
  if (t->model.state_dtype != STW_DTYPE_FP32)
    cJSON_AddStringToObject(model, "optimizer_state", stw_state_dtype_name(t->model.state_dtype));
  if (t->model.reduce_bucket_size > 0)
    stw_json_add_u64(model, "reduce_bucket_size", t->model.reduce_bucket_size);
  if (t->model.sub_group_size > 0)
    stw_json_add_u64(model, "sub_group_size", t->model.sub_group_size);

  cJSON *dev = cJSON_AddObjectToObject(root, "device");
  cJSON_AddStringToObject(dev, "name", t->device.name);
  stw_json_add_u64(dev, "memory_bytes", t->device.memory_bytes);
  stw_json_add_u64(dev, "rank", t->device.rank);
  stw_json_add_u64(dev, "world_size", t->device.world_size);
  if (t->device.process_bytes != 0) /* only when measured: the traces before it keep digests */
    stw_json_add_u64(dev, "process_bytes", t->device.process_bytes);
  if (t->device.gpu_process_bytes != 0) /* the same */
    stw_json_add_u64(dev, "gpu_process_bytes", t->device.gpu_process_bytes);

  cJSON *tensors = cJSON_AddArrayToObject(root, "tensors");
  for (guint32 i = 0; i < t->tensors->len; i++) {
    const StwTensor *x = stw_trace_tensor(t, i);
    cJSON *o = cJSON_CreateObject();
    stw_json_add_u64(o, "id", i);
    cJSON_AddStringToObject(o, "name", x->name);
    cJSON *shape = cJSON_AddArrayToObject(o, "shape");
    for (guint32 k = 0; k < x->ndim; k++)
      cJSON_AddItemToArray(shape, stw_json_u64(x->shape[k]));
    stw_json_add_u64(o, "numel", x->numel);
    cJSON_AddStringToObject(o, "dtype", stw_dtype_name(x->dtype));
    if (x->aliases != NULL && x->aliases->len > 0) {
      cJSON *a = cJSON_AddArrayToObject(o, "aliases");
      for (guint k = 0; k < x->aliases->len; k++)
        cJSON_AddItemToArray(a, cJSON_CreateString(x->aliases->pdata[k]));
    }
    if (x->frozen)
      cJSON_AddBoolToObject(o, "frozen", TRUE);
    cJSON_AddItemToArray(tensors, o);
  }

  cJSON *ops = cJSON_AddArrayToObject(root, "ops");
  for (guint32 i = 0; i < t->ops->len; i++) {
    const StwOp *op = stw_trace_op(t, i);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", op->name);
    cJSON_AddStringToObject(o, "stage", stw_stage_name(op->stage));
    cJSON_AddItemToObject(o, "params", stw_json_u64_array(op->params, op->n_params));
    cJSON_AddItemToObject(o, "grads", stw_json_u64_array(op->grads, op->n_grads));
    stw_json_add_u64(o, "nonmodel_bytes", op->nonmodel_bytes);
    stw_json_add_u64(o, "nonmodel_peak_bytes", op->nonmodel_peak_bytes);
    stw_json_add_u64(o, "duration_ns", op->duration_ns);
    if (op->flops > 0)
      stw_json_add_u64(o, "flops", op->flops);
    cJSON_AddItemToArray(ops, o);
  }
  if (t->blocks->len == 0)
    return root;
  cJSON *blocks = cJSON_AddArrayToObject(root, "blocks");
  for (guint32 i = 0; i < t->blocks->len; i++) {
    const StwBlock *b = &g_array_index(t->blocks, StwBlock, i);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", b->name);
    cJSON_AddItemToObject(o, "forward", stw_json_u64_array((guint32[]){ b->fwd_first,
                                                                        b->fwd_last }, 2));
    cJSON_AddItemToObject(o, "backward", stw_json_u64_array((guint32[]){ b->bwd_first,
                                                                         b->bwd_last }, 2));
    stw_json_add_u64(o, "input_bytes", b->input_bytes);
    stw_json_add_u64(o, "saved_bytes", b->saved_bytes);
    stw_json_add_u64(o, "forward_ns", b->forward_ns);
    if (b->choice != STW_BLOCK_KEEP) /* a planned trace's (stw_trace_decide) */
      cJSON_AddStringToObject(o, "activations", stw_block_choice_names[b->choice]);
    cJSON_AddItemToArray(blocks, o);
  }
  return root;
}

char *
stw_trace_to_string(const StwTrace *t, GError **error)
{
  if (!stw_trace_validate(t, "(trace being written)", error))
    return NULL;
  cJSON *root = trace_to_json(t, TRUE);
  char *text = stw_json_print_lines(root);
  cJSON_Delete(root);
  gsize len = strlen(text);
  if (len > STW_TRACE_MAX_FILE_BYTES) { /* what the reader refuses is not written */
    g_set_error(error, STW_TRACE_ERROR, STW_TRACE_ERROR_INVALID, "the trace would be %"
                G_GSIZE_FORMAT " bytes, more than its reader takes (1 GiB)", len);
    g_free(text);
    return NULL;
  }
  return text;
}

gboolean
stw_trace_save(const StwTrace *t, const char *file, GError **error)
{
  g_autofree char *text = stw_trace_to_string(t, error);
  if (text == NULL)
    return FALSE;
  return stw_file_write_atomic(file, text, strlen(text), error);
}

StwDtype
stw_trace_compute_dtype(const StwTrace *t)
{
  if (t->model.autocast != STW_DTYPE_FP32)
    return t->model.autocast;
  return t->tensors->len > 0 ? stw_trace_tensor(t, 0)->dtype : STW_DTYPE_FP32;
}

char *
stw_trace_digest(const StwTrace *t)
{
  cJSON *root = trace_to_json(t, FALSE);
  char *canonical = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  char *hex = g_compute_checksum_for_string(G_CHECKSUM_SHA256, canonical, -1);
  cJSON_free(canonical);
  return hex;
}

/* ---- reading ----------------------------------------------------------------------------- */

static const char *const root_members[] = { "format", "version", "source", "model", "device",
                                            "tensors", "ops", "blocks", NULL };
static const char *const block_members[] = { "name", "forward", "backward", "input_bytes",
                                             "saved_bytes", "forward_ns", "activations",
                                             NULL };
static const char *const source_members[] = { "kind", "tool", "created", "warnings", NULL };
static const char *const model_members[] = { "name", "config", "batch", "seq",
                                             "checkpointing", "attention", "kernels", "loss",
                                             "autocast", "micro_steps", "gradients",
                                             "collectives", "amsgrad",
                                             "optimizer_state", "optimizer_impl", "images",
                                             "image_size", "reduce_bucket_size",
                                             "sub_group_size", "init", NULL };
static const char *const device_members[] = { "name", "memory_bytes", "rank", "world_size",
                                              "process_bytes", "gpu_process_bytes", NULL };
/* The sizes the reader allows, checked before the tree is built (json.h): at most 2^24 values in
 * all, so that no trace file makes the parser hold more than a few GiB whatever its size. */
static const StwJsonArrayLimit trace_arrays[] = {
  { "$.tensors", STW_TRACE_MAX_TENSORS },
  { "$.ops", STW_TRACE_MAX_OPS },
  { "$.tensors[].shape", STW_TRACE_MAX_DIMS },
  { "$.tensors[].aliases", STW_TRACE_MAX_ALIASES },
  { "$.ops[].params", STW_TRACE_MAX_OP_TENSORS },
  { "$.ops[].grads", STW_TRACE_MAX_OP_TENSORS },
  { "$.blocks", STW_TRACE_MAX_OPS },
  { "$.blocks[].forward", 2 },
  { "$.blocks[].backward", 2 },
  { NULL, 0 },
};
static const StwJsonLimits trace_limits = { .format = STW_TRACE_FORMAT,
                                            .max_values = STW_TRACE_MAX_VALUES,
                                            .max_array = 64, .arrays = trace_arrays };

static const char *const tensor_members[] = { "id", "name", "shape", "numel", "dtype",
                                              "aliases", "frozen", NULL };
static const char *const op_members[] = { "name", "stage", "params", "grads", "nonmodel_bytes",
                                          "nonmodel_peak_bytes", "duration_ns", "flops", NULL };

/* "warnings": {"unknown_frees": 3, ...} */
static gboolean
read_warnings(StwJsonReader *r, const cJSON *obj, StwTrace *t, GError **error)
{
  gsize saved = stw_json_push_key(r, "warnings");
  guint n = 0;
  for (const cJSON *w = obj->child; w != NULL; w = w->next, n++) {
    const char *name = w->string;
    if (n >= STW_TRACE_MAX_WARNINGS)
      return stw_json_fail(r, error, "more than %d warnings", STW_TRACE_MAX_WARNINGS);
    if (name == NULL || name[0] == '\0' || strlen(name) > 64 ||
        strspn(name, "abcdefghijklmnopqrstuvwxyz_") != strlen(name))
      return stw_json_fail(r, error, "warning names are lower-case words joined by '_'");
    guint64 count = 0;
    if (!stw_json_get_u64(r, obj, name, TRUE, 0, STW_TRACE_MAX_INT, &count, error))
      return FALSE;
    stw_trace_warn(t, name, count);
  }
  stw_json_pop(r, saved);
  return TRUE;
}

static gboolean
read_source(StwJsonReader *r, const cJSON *obj, StwTrace *t, GError **error)
{
  gsize saved = stw_json_push_key(r, "source");
  const char *tool = "", *created = "";
  int kind = 0;
  const cJSON *warnings = NULL;
  gboolean ok = stw_json_check_object(r, obj, source_members, error) &&
                stw_json_get_enum(r, obj, "kind", TRUE, source_kind_names, &kind, error) &&
                stw_json_get_string(r, obj, "tool", FALSE, STW_TRACE_MAX_NAME, &tool, error) &&
                stw_json_get_string(r, obj, "created", FALSE, 64, &created, error) &&
                stw_json_get_object(r, obj, "warnings", FALSE, &warnings, error) &&
                (warnings == NULL || read_warnings(r, warnings, t, error));
  if (ok) {
    t->source.kind = (StwSourceKind)kind;
    g_free(t->source.tool);
    t->source.tool = g_strdup(tool);
    g_free(t->source.created);
    t->source.created = g_strdup(created);
  }
  stw_json_pop(r, saved);
  return ok;
}

static gboolean
read_model(StwJsonReader *r, const cJSON *obj, StwTrace *t, GError **error)
{
  gsize saved = stw_json_push_key(r, "model");
  const char *name = NULL;
  const cJSON *config = NULL;
  int attention = STW_ATTENTION_NAIVE, kernels = STW_KERNELS_FUSED, loss = STW_LOSS_FULL;
  int gradients = STW_GRADIENTS_CHUNKS, state = 0, autocast = STW_DTYPE_FP32;
  int optimizer_impl = STW_OPTIMIZER_FUSED, collectives = STW_COLLECTIVES_OVERLAPPED;
  int init = STW_INIT_SHARDED;
  guint64 micro_steps = 1;
  gboolean ok =
      stw_json_check_object(r, obj, model_members, error) &&
      stw_json_get_string(r, obj, "name", TRUE, STW_TRACE_MAX_NAME, &name, error) &&
      stw_json_get_object(r, obj, "config", FALSE, &config, error) &&
      stw_json_get_u64(r, obj, "batch", FALSE, 0, STW_TRACE_MAX_BATCH, &t->model.batch, error) &&
      stw_json_get_u64(r, obj, "seq", FALSE, 0, STW_MODEL_MAX_SEQ, &t->model.seq, error) &&
      stw_json_get_bool(r, obj, "checkpointing", FALSE, &t->model.checkpointing, error) &&
      stw_json_get_enum(r, obj, "attention", FALSE, stw_attention_names, &attention, error) &&
      stw_json_get_enum(r, obj, "kernels", FALSE, stw_kernels_names, &kernels, error) &&
      stw_json_get_enum(r, obj, "loss", FALSE, stw_loss_names, &loss, error) &&
      stw_json_get_enum(r, obj, "autocast", FALSE, stw_dtype_names, &autocast, error) &&
      stw_json_get_u64(r, obj, "micro_steps", FALSE, 1, STW_TRACE_MAX_MICRO_STEPS, &micro_steps,
                       error) &&
      stw_json_get_enum(r, obj, "gradients", FALSE, stw_gradients_names, &gradients, error) &&
      stw_json_get_enum(r, obj, "collectives", FALSE, stw_collectives_names, &collectives,
                        error) &&
      stw_json_get_enum(r, obj, "init", FALSE, stw_init_names, &init, error) &&
      stw_json_get_bool(r, obj, "amsgrad", FALSE, &t->model.amsgrad, error) &&
      stw_json_get_enum(r, obj, "optimizer_state", FALSE, stw_state_dtype_names, &state, error) &&
      stw_json_get_enum(r, obj, "optimizer_impl", FALSE, stw_optimizer_impl_names,
                        &optimizer_impl, error) &&
      stw_json_get_u64(r, obj, "images", FALSE, 0, STW_MODEL_MAX_IMAGES, &t->model.images,
                       error) &&
      stw_json_get_u64(r, obj, "image_size", t->model.images > 0, 1, STW_MODEL_MAX_IMAGE,
                       &t->model.image_size, error) &&
      stw_json_get_u64(r, obj, "reduce_bucket_size", FALSE, 1, STW_DEEPSPEED_MAX_BUFFER_ELEMS,
                       &t->model.reduce_bucket_size, error) &&
      stw_json_get_u64(r, obj, "sub_group_size", FALSE, 1, STW_DEEPSPEED_MAX_BUFFER_ELEMS,
                       &t->model.sub_group_size, error);
  /* DeepSpeed's configuration sizes its buffers, which only its step holds */
  const char *zero = t->model.sub_group_size > 0 ? "sub_group_size" : "reduce_bucket_size";
  if (ok && optimizer_impl != STW_OPTIMIZER_DEEPSPEED &&
      (t->model.reduce_bucket_size > 0 || t->model.sub_group_size > 0))
    ok = stw_json_fail_at(r, zero, error, "DeepSpeed's %s goes with optimizer_impl "
                          "\"deepspeed\" (its step on the GPU), and the trace's is \"%s\"",
                          zero, stw_optimizer_impl_names[optimizer_impl]);
  if (ok && config != NULL) {
    gsize s2 = stw_json_push_key(r, "config");
    ok = stw_model_config_read(r, config, FALSE, &t->model.config, error);
    t->model.has_config = ok;
    stw_json_pop(r, s2);
  }
  if (ok) {
    g_free(t->model.name);
    t->model.name = g_strdup(name);
    t->model.attention = (StwAttention)attention;
    t->model.kernels = (StwKernels)kernels;
    t->model.loss = (StwLoss)loss;
    t->model.optimizer_impl = (StwOptimizerImpl)optimizer_impl;
    t->model.autocast = (StwDtype)autocast;
    t->model.micro_steps = (guint32)micro_steps;
    t->model.gradients = (StwGradients)gradients;
    t->model.collectives = (StwCollectives)collectives;
    t->model.init = (StwInit)init;
    t->model.state_dtype = stw_state_dtype_at(state);
  }
  stw_json_pop(r, saved);
  return ok;
}

static gboolean
read_device(StwJsonReader *r, const cJSON *obj, StwTrace *t, GError **error)
{
  gsize saved = stw_json_push_key(r, "device");
  const char *name = NULL;
  guint64 rank = 0, world = 1;
  gboolean ok =
      stw_json_check_object(r, obj, device_members, error) &&
      stw_json_get_string(r, obj, "name", TRUE, STW_TRACE_MAX_NAME, &name, error) &&
      stw_json_get_u64(r, obj, "memory_bytes", TRUE, 0, STW_TRACE_MAX_INT,
                       &t->device.memory_bytes, error) &&
      stw_json_get_u64(r, obj, "world_size", FALSE, 1, STW_TRACE_MAX_WORLD, &world, error) &&
      stw_json_get_u64(r, obj, "rank", FALSE, 0, STW_TRACE_MAX_WORLD, &rank, error) &&
      stw_json_get_u64(r, obj, "process_bytes", FALSE, 1, STW_TRACE_MAX_INT,
                       &t->device.process_bytes, error) &&
      stw_json_get_u64(r, obj, "gpu_process_bytes", FALSE, 1, STW_TRACE_MAX_INT,
                       &t->device.gpu_process_bytes, error);
  if (ok && rank >= world)
    ok = stw_json_fail_at(r, "rank", error, "rank %" G_GUINT64_FORMAT " is not below "
                          "world_size %" G_GUINT64_FORMAT, rank, world);
  if (ok) {
    g_free(t->device.name);
    t->device.name = g_strdup(name);
    t->device.rank = (guint32)rank;
    t->device.world_size = (guint32)world;
  }
  stw_json_pop(r, saved);
  return ok;
}

static gboolean
read_tensor(StwJsonReader *r, const cJSON *obj, guint32 index, StwTrace *t, GError **error)
{
  const char *name = NULL;
  const cJSON *shape = NULL, *aliases = NULL;
  guint64 id = 0, numel = 0, dims[STW_TRACE_MAX_DIMS];
  guint32 ndim = 0;
  int dtype = 0;
  gboolean frozen = FALSE;
  if (!stw_json_check_object(r, obj, tensor_members, error) ||
      !stw_json_get_u64(r, obj, "id", TRUE, 0, STW_TRACE_MAX_TENSORS, &id, error) ||
      !stw_json_get_string(r, obj, "name", TRUE, STW_TRACE_MAX_NAME, &name, error) ||
      !stw_json_get_array(r, obj, "shape", TRUE, STW_TRACE_MAX_DIMS, &shape, error) ||
      !stw_json_get_u64(r, obj, "numel", TRUE, 1, STW_TRACE_MAX_NUMEL, &numel, error) ||
      !stw_json_get_enum(r, obj, "dtype", TRUE, stw_dtype_names, &dtype, error) ||
      !stw_json_get_array(r, obj, "aliases", FALSE, STW_TRACE_MAX_ALIASES, &aliases, error) ||
      !stw_json_get_bool(r, obj, "frozen", FALSE, &frozen, error))
    return FALSE;
  if (id != index)
    return stw_json_fail_at(r, "id", error, "expected %u: tensors are listed in id order",
                            index);
  gsize saved = stw_json_push_key(r, "shape");
  for (const cJSON *d = shape->child; d != NULL; d = d->next, ndim++) {
    gsize s2 = stw_json_push_index(r, ndim);
    gboolean ok = stw_json_as_u64(r, d, 1, STW_TRACE_MAX_NUMEL, &dims[ndim], error);
    stw_json_pop(r, s2);
    if (!ok)
      return FALSE;
  }
  if (ndim == 0)
    return stw_json_fail(r, error, "expected at least one dimension");
  stw_json_pop(r, saved);

  guint32 tid = stw_trace_add_tensor(t, name, (StwDtype)dtype, dims, ndim);
  StwTensor *x = &g_array_index(t->tensors, StwTensor, tid);
  x->numel = numel; /* validation compares it with the shape, avoiding overflow */
  x->frozen = frozen;
  if (aliases != NULL) {
    saved = stw_json_push_key(r, "aliases");
    guint k = 0;
    for (const cJSON *a = aliases->child; a != NULL; a = a->next, k++) {
      if (!cJSON_IsString(a) || strlen(a->valuestring) > STW_TRACE_MAX_NAME ||
          a->valuestring[0] == '\0') {
        gsize s2 = stw_json_push_index(r, k);
        stw_json_fail(r, error, "expected a non-empty name");
        stw_json_pop(r, s2);
        return FALSE;
      }
      g_ptr_array_add(x->aliases, g_strdup(a->valuestring));
    }
    stw_json_pop(r, saved);
  }
  return TRUE;
}

static gboolean
read_id_list(StwJsonReader *r, const cJSON *obj, const char *key, guint32 n_tensors,
             guint32 **ids_out, guint32 *n_out, GError **error)
{
  const cJSON *arr = NULL;
  if (!stw_json_get_array(r, obj, key, TRUE, STW_TRACE_MAX_OP_TENSORS, &arr, error))
    return FALSE;
  guint32 n = (guint32)cJSON_GetArraySize(arr);
  guint32 *ids = g_new(guint32, MAX(n, 1));
  gsize saved = stw_json_push_key(r, key);
  guint32 k = 0;
  for (const cJSON *c = arr->child; c != NULL; c = c->next, k++) {
    guint64 v;
    gsize s2 = stw_json_push_index(r, k);
    if (!stw_json_as_u64(r, c, 0, G_MAXUINT32, &v, error)) {
      g_free(ids);
      return FALSE;
    }
    if (v >= n_tensors) {
      stw_json_fail(r, error, "tensor id %" G_GUINT64_FORMAT " does not exist (the trace has "
                    "%u tensors)", v, n_tensors);
      g_free(ids);
      return FALSE;
    }
    stw_json_pop(r, s2);
    ids[k] = (guint32)v;
  }
  stw_json_pop(r, saved);
  *ids_out = ids;
  *n_out = n;
  return TRUE;
}

static gboolean
read_op(StwJsonReader *r, const cJSON *obj, StwTrace *t, GError **error)
{
  const char *name = NULL;
  int stage = 0;
  if (!stw_json_check_object(r, obj, op_members, error) ||
      !stw_json_get_string(r, obj, "name", TRUE, STW_TRACE_MAX_NAME, &name, error) ||
      !stw_json_get_enum(r, obj, "stage", TRUE, stage_names, &stage, error))
    return FALSE;
  StwOp op = { .stage = (StwStage)stage };
  if (!read_id_list(r, obj, "params", t->tensors->len, &op.params, &op.n_params, error))
    return FALSE;
  if (!read_id_list(r, obj, "grads", t->tensors->len, &op.grads, &op.n_grads, error)) {
    g_free(op.params);
    return FALSE;
  }
  op.name = g_strdup(name);
  g_array_append_val(t->ops, op); /* owned by the trace from here on */
  StwOp *o = &g_array_index(t->ops, StwOp, t->ops->len - 1);
  if (!stw_json_get_u64(r, obj, "nonmodel_bytes", TRUE, 0, STW_TRACE_MAX_INT,
                        &o->nonmodel_bytes, error) ||
      !stw_json_get_u64(r, obj, "nonmodel_peak_bytes", TRUE, 0, STW_TRACE_MAX_INT,
                        &o->nonmodel_peak_bytes, error) ||
      !stw_json_get_u64(r, obj, "duration_ns", TRUE, 0, STW_TRACE_MAX_INT, &o->duration_ns,
                        error) ||
      !stw_json_get_u64(r, obj, "flops", FALSE, 0, STW_TRACE_MAX_INT, &o->flops, error))
    return FALSE;
  if (o->nonmodel_peak_bytes < o->nonmodel_bytes)
    return stw_json_fail_at(r, "nonmodel_peak_bytes", error,
                            "%" G_GUINT64_FORMAT " is below nonmodel_bytes %" G_GUINT64_FORMAT
                            " (the peak during an op cannot be lower than at its start)",
                            o->nonmodel_peak_bytes, o->nonmodel_bytes);
  return TRUE;
}

/* A block's op range KEY: [first, last], op indices. */
static gboolean
read_range(StwJsonReader *r, const cJSON *obj, const char *key, guint32 *first, guint32 *last,
           GError **error)
{
  guint64 v[2];
  if (!stw_json_get_pair(r, obj, key, STW_TRACE_MAX_OPS, "[first, last]: two op indices", v,
                         error))
    return FALSE;
  *first = (guint32)v[0];
  *last = (guint32)v[1];
  return TRUE;
}

static gboolean
read_block(StwJsonReader *r, const cJSON *obj, StwTrace *t, GError **error)
{
  const char *name = NULL;
  guint32 f0, f1, b0, b1;
  if (!stw_json_check_object(r, obj, block_members, error) ||
      !stw_json_get_string(r, obj, "name", TRUE, STW_TRACE_MAX_NAME, &name, error) ||
      !read_range(r, obj, "forward", &f0, &f1, error) ||
      !read_range(r, obj, "backward", &b0, &b1, error))
    return FALSE;
  StwBlock *b = stw_trace_add_block(t, name, f0, f1, b0, b1);
  int choice = STW_BLOCK_KEEP;
  if (!stw_json_get_enum(r, obj, "activations", FALSE, stw_block_choice_names, &choice, error))
    return FALSE;
  b->choice = (StwBlockChoice)choice;
  return stw_json_get_u64(r, obj, "input_bytes", TRUE, 0, STW_TRACE_MAX_INT, &b->input_bytes,
                          error) &&
         stw_json_get_u64(r, obj, "saved_bytes", TRUE, 0, STW_TRACE_MAX_INT, &b->saved_bytes,
                          error) &&
         stw_json_get_u64(r, obj, "forward_ns", TRUE, 0, STW_TRACE_MAX_INT, &b->forward_ns,
                          error);
}

/* "blocks" (version 2): absent in version 1. */
static gboolean
read_blocks(StwJsonReader *r, const cJSON *root, guint64 version, StwTrace *t, GError **error)
{
  const cJSON *blocks = NULL;
  if (!stw_json_get_array(r, root, "blocks", FALSE, STW_TRACE_MAX_OPS, &blocks, error))
    return FALSE;
  if (blocks == NULL)
    return TRUE;
  if (version < STW_TRACE_VERSION_BLOCKS)
    return stw_json_fail_at(r, "blocks", error, "blocks are version %d's, and the trace says "
                            "version %" G_GUINT64_FORMAT, STW_TRACE_VERSION_BLOCKS, version);
  guint32 i = 0;
  gsize saved = stw_json_push_key(r, "blocks");
  for (const cJSON *c = blocks->child; c != NULL; c = c->next, i++) {
    gsize s2 = stw_json_push_index(r, i);
    if (!read_block(r, c, t, error))
      return FALSE;
    stw_json_pop(r, s2);
  }
  stw_json_pop(r, saved);
  return TRUE;
}

static gboolean
read_root(StwJsonReader *r, const cJSON *root, StwTrace *t, GError **error)
{
  const char *format = NULL;
  guint64 version = 0;
  const cJSON *source = NULL, *model = NULL, *device = NULL, *tensors = NULL, *ops = NULL;
  if (!stw_json_check_format(r, root, STW_TRACE_FORMAT, error) ||
      !stw_json_check_object(r, root, root_members, error) ||
      !stw_json_get_string(r, root, "format", TRUE, 64, &format, error))
    return FALSE;
  if (!stw_json_get_u64(r, root, "version", TRUE, 0, STW_JSON_INT_MAX, &version, error))
    return FALSE;
  if (version < 1 || version > STW_TRACE_VERSION)
    return stw_json_fail_at(r, "version", error,
                            "unsupported version %" G_GUINT64_FORMAT " (this stowage reads "
                            "versions 1 to %d)", version, STW_TRACE_VERSION);
  if (!stw_json_get_object(r, root, "source", TRUE, &source, error) ||
      !stw_json_get_object(r, root, "model", TRUE, &model, error) ||
      !stw_json_get_object(r, root, "device", TRUE, &device, error) ||
      !stw_json_get_array(r, root, "tensors", TRUE, STW_TRACE_MAX_TENSORS, &tensors, error) ||
      !stw_json_get_array(r, root, "ops", TRUE, STW_TRACE_MAX_OPS, &ops, error) ||
      !read_source(r, source, t, error) || !read_model(r, model, t, error) ||
      !read_device(r, device, t, error))
    return FALSE;

  guint32 i = 0;
  gsize saved = stw_json_push_key(r, "tensors");
  for (const cJSON *c = tensors->child; c != NULL; c = c->next, i++) {
    gsize s2 = stw_json_push_index(r, i);
    if (!read_tensor(r, c, i, t, error))
      return FALSE;
    stw_json_pop(r, s2);
  }
  stw_json_pop(r, saved);
  i = 0;
  saved = stw_json_push_key(r, "ops");
  for (const cJSON *c = ops->child; c != NULL; c = c->next, i++) {
    gsize s2 = stw_json_push_index(r, i);
    if (!read_op(r, c, t, error))
      return FALSE;
    stw_json_pop(r, s2);
  }
  stw_json_pop(r, saved);
  return read_blocks(r, root, version, t, error);
}

/* Reads and validates a whole trace document into the StwTrace at OUT. */
static gboolean
read_trace(StwJsonReader *r, const cJSON *root, gpointer out, GError **error)
{
  return read_root(r, root, out, error) && stw_trace_validate(out, r->file, error);
}

static StwTrace *
keep_if(StwTrace *t, gboolean ok)
{
  if (!ok) {
    stw_trace_free(t);
    return NULL;
  }
  return t;
}

StwTrace *
stw_trace_parse(const char *file, const char *text, gsize len, GError **error)
{
  StwTrace *t = stw_trace_new();
  return keep_if(t, stw_json_read_text(file, text, len, &trace_limits, read_trace, t, error));
}

StwTrace *
stw_trace_load(const char *file, GError **error)
{
  StwTrace *t = stw_trace_new();
  return keep_if(t, stw_json_read_file(file, STW_TRACE_MAX_FILE_BYTES, &trace_limits, read_trace,
                                       t, error));
}

/* activations.c — a trace with its blocks' activations decided: what keeping a block's
 * activations, recomputing it in backward or offloading them to the host does to the iteration
 * (docs/trace-format.md, "blocks"). */
#include "config.h"

#include <string.h>

#include <stowage/trace.h>

#include "json.h"

const char *const stw_block_choice_names[] = { "keep", "recompute", "offload", "recompute-host",
                                                NULL };
G_STATIC_ASSERT(G_N_ELEMENTS(stw_block_choice_names) == STW_N_BLOCK_CHOICES + 1);

gboolean
stw_block_recomputes(StwBlockChoice choice)
{
  return choice == STW_BLOCK_RECOMPUTE || choice == STW_BLOCK_RECOMPUTE_HOST;
}

gboolean
stw_block_moves(StwBlockChoice choice)
{
  return choice == STW_BLOCK_OFFLOAD || choice == STW_BLOCK_RECOMPUTE_HOST;
}

guint32
stw_trace_blocks_chosen(const StwTrace *t, StwBlockChoice choice)
{
  guint32 n = 0;
  for (guint32 k = 0; k < t->blocks->len; k++)
    n += g_array_index(t->blocks, StwBlock, k).choice == choice;
  return n;
}

/* What recomputing (or offloading) block B frees between its forward and its recomputation: what it keeps,
 * less the input a recomputation starts from. */
static guint64
freed_by(const StwBlock *b)
{
  return b->saved_bytes > b->input_bytes ? b->saved_bytes - b->input_bytes : 0;
}

/* A copy of T's header and tensors, without ops or blocks. */
static StwTrace *
copy_header(const StwTrace *t)
{
  StwTrace *c = stw_trace_new();
  c->source.kind = t->source.kind;
  g_free(c->source.tool);
  c->source.tool = g_strdup(t->source.tool);
  g_free(c->source.created);
  c->source.created = g_strdup(t->source.created);
  for (guint i = 0; i < t->source.warnings->len; i++) {
    const StwTraceWarning *w = &g_array_index(t->source.warnings, StwTraceWarning, i);
    stw_trace_warn(c, w->name, w->count);
  }
  char *name = c->model.name;
  c->model = t->model;
  c->model.name = g_strdup(t->model.name);
  g_free(name);
  g_free(c->device.name);
  c->device = t->device;
  c->device.name = g_strdup(t->device.name);
  for (guint32 i = 0; i < t->tensors->len; i++) {
    const StwTensor *x = stw_trace_tensor(t, i);
    guint32 id = stw_trace_add_tensor(c, x->name, x->dtype, x->shape, x->ndim);
    StwTensor *y = &g_array_index(c->tensors, StwTensor, id);
    y->frozen = x->frozen;
    for (guint k = 0; x->aliases != NULL && k < x->aliases->len; k++)
      g_ptr_array_add(y->aliases, g_strdup(x->aliases->pdata[k]));
  }
  return c;
}

static StwOp *
copy_op(StwTrace *c, const StwOp *op, const char *name, StwStage stage, gboolean grads)
{
  StwOp *o = stw_trace_add_op(c, name, stage, op->params, op->n_params, op->grads,
                              grads ? op->n_grads : 0);
  o->duration_ns = op->duration_ns;
  o->flops = op->flops;
  return o;
}

/* Block B's forward ops again, as NAME.recompute bwd ops right before op I of T (whose memory at
 * its start, with what the recomputed blocks freed, is the base the forward rebuilds on). */
static void
emit_recompute(StwTrace *c, const StwTrace *t, const StwBlock *b, guint32 i, guint64 freed)
{
  const StwOp *op = stw_trace_op(t, i);
  guint64 base = op->nonmodel_bytes - MIN(op->nonmodel_bytes, freed + freed_by(b));
  guint64 start = stw_trace_op(t, b->fwd_first)->nonmodel_bytes;
  for (guint32 k = b->fwd_first; k <= b->fwd_last; k++) {
    const StwOp *f = stw_trace_op(t, k);
    g_autofree char *name = g_strconcat(f->name, ".recompute", NULL);
    StwOp *o = copy_op(c, f, name, STW_STAGE_BWD, FALSE);
    o->nonmodel_bytes = base + (f->nonmodel_bytes - MIN(f->nonmodel_bytes, start));
    o->nonmodel_peak_bytes = base + (f->nonmodel_peak_bytes - MIN(f->nonmodel_peak_bytes, start));
  }
}

/* C's blocks: T's, their ops where they moved to (MOVED), a recomputed block's backward taking
 * its recomputation in, each with its CHOICE; model.checkpointing when every block is
 * recomputed. */
static void
add_blocks(StwTrace *c, const StwTrace *t, const guint8 *choice, const guint32 *moved)
{
  gboolean all = TRUE;
  for (guint32 k = 0; k < t->blocks->len; k++) {
    const StwBlock *b = &g_array_index(t->blocks, StwBlock, k);
    gboolean re = stw_block_recomputes((StwBlockChoice)choice[k]);
    guint32 span = b->fwd_last - b->fwd_first + 1; /* its recomputation's ops */
    StwBlock *d = stw_trace_add_block(c, b->name, moved[b->fwd_first], moved[b->fwd_last],
                                      moved[b->bwd_first] - (re ? span : 0), moved[b->bwd_last]);
    d->input_bytes = b->input_bytes;
    d->saved_bytes = b->saved_bytes;
    d->forward_ns = b->forward_ns;
    d->choice = (StwBlockChoice)choice[k];
    all &= re;
  }
  c->model.checkpointing = all;
}

/* The first backward op of T (one exists where a block does). */
static guint32
first_backward(const StwTrace *t)
{
  guint32 i = 0;
  while (i < t->ops->len && stw_trace_op(t, i)->stage != STW_STAGE_BWD)
    i++;
  return i;
}

GArray *
stw_trace_activation_moves(const StwTrace *t)
{
  GArray *moves = g_array_new(FALSE, FALSE, sizeof(StwActivationMove));
  guint32 nb = t->blocks->len, bwd0 = first_backward(t);
  for (guint32 k = 0; k < nb; k++) {
    const StwBlock *b = &g_array_index(t->blocks, StwBlock, k);
    if (!stw_block_moves(b->choice))
      continue;
    /* the block whose backward runs right before this one's */
    guint32 in = bwd0;
    for (guint32 j = 0; j < nb; j++) {
      guint32 f = g_array_index(t->blocks, StwBlock, j).bwd_first;
      if (f < b->bwd_first && f > in)
        in = f;
    }
    guint32 done = k + 1 < nb ? g_array_index(t->blocks, StwBlock, k + 1).fwd_last + 1
                              : b->fwd_last + 2;
    StwActivationMove m = { k, b->fwd_last + 1, MIN(done, in), in, b->bwd_first,
                            b->choice == STW_BLOCK_OFFLOAD ? freed_by(b) : b->input_bytes };
    g_array_append_val(moves, m);
  }
  return moves;
}

guint64
stw_activation_moves_host_peak(const GArray *moves)
{
  guint64 peak = 0;
  for (guint i = 0; i < moves->len; i++) { /* at each copy out's issue: who holds the host */
    guint32 m = g_array_index(moves, StwActivationMove, i).out_moment;
    guint64 held = 0;
    for (guint j = 0; j < moves->len; j++) {
      const StwActivationMove *x = &g_array_index(moves, StwActivationMove, j);
      if (x->out_moment <= m && m <= x->in_done)
        held += x->bytes;
    }
    peak = MAX(peak, held);
  }
  return peak;
}

cJSON *
stw_json_activation_moves(const GArray *moves)
{
  cJSON *arr = cJSON_CreateArray();
  for (guint i = 0; i < moves->len; i++) {
    const StwActivationMove *m = &g_array_index(moves, StwActivationMove, i);
    cJSON *o = cJSON_CreateObject();
    stw_json_add_u64(o, "block", m->block);
    cJSON_AddItemToObject(o, "out", stw_json_u64_array((guint32[]){ m->out_moment, m->out_done },
                                                       2));
    cJSON_AddItemToObject(o, "in", stw_json_u64_array((guint32[]){ m->in_moment, m->in_done }, 2));
    stw_json_add_u64(o, "bytes", m->bytes);
    cJSON_AddItemToArray(arr, o);
  }
  return arr;
}

void
stw_trace_free_moved_activations(StwTrace *c)
{
  g_autoptr(GArray) moves = stw_trace_activation_moves(c);
  for (guint i = 0; i < moves->len; i++) {
    const StwActivationMove *m = &g_array_index(moves, StwActivationMove, i);
    for (guint32 k = m->out_done; k < m->in_moment; k++) {
      StwOp *op = &g_array_index(c->ops, StwOp, k);
      op->nonmodel_bytes -= MIN(op->nonmodel_bytes, m->bytes);
      op->nonmodel_peak_bytes -= MIN(op->nonmodel_peak_bytes, m->bytes);
    }
  }
}

gboolean
stw_trace_loop_buffers(const StwTrace *t, guint32 world, StwLoopBuffers *out)
{
  *out = (StwLoopBuffers){ 0 };
  if (t->model.optimizer_impl != STW_OPTIMIZER_DEEPSPEED)
    return FALSE;
  guint64 trained = 0, bytes = 0; /* elements, and their gradients' bytes */
  for (guint32 i = 0; i < t->tensors->len; i++) {
    const StwTensor *x = stw_trace_tensor(t, i);
    if (!x->frozen) {
      trained += x->numel;
      bytes = MAX(bytes, stw_dtype_bytes(x->dtype));
    }
  }
  if (trained == 0)
    return FALSE;
  world = MAX(world, 1);
  guint64 part = trained / world + (trained % world != 0);
  out->partition = part * bytes;
  out->reduce_bucket_size = t->model.reduce_bucket_size > 0 ? t->model.reduce_bucket_size
                                                           : STW_DEEPSPEED_REDUCE_BUCKET_ELEMS;
  out->sub_group_size = t->model.sub_group_size > 0 ? t->model.sub_group_size
                                                    : STW_DEEPSPEED_SUB_GROUP_ELEMS;
  out->bucket = MIN(trained, out->reduce_bucket_size) * bytes;
  out->step = MIN(part, out->sub_group_size) * 4;
  return TRUE;
}

StwTrace *
stw_trace_with_loop_buffers(const StwTrace *t, guint32 world)
{
  StwLoopBuffers b;
  if (!stw_trace_loop_buffers(t, world, &b))
    return NULL;
  StwTrace *c = copy_header(t);
  for (guint32 i = 0; i < t->ops->len; i++) {
    const StwOp *op = stw_trace_op(t, i);
    StwOp *o = copy_op(c, op, op->name, op->stage, TRUE);
    guint64 extra = b.partition + (op->stage == STW_STAGE_BWD     ? b.bucket
                                   : op->stage == STW_STAGE_OPTIM ? b.step
                                                                  : 0);
    o->nonmodel_bytes = op->nonmodel_bytes + extra;
    o->nonmodel_peak_bytes = op->nonmodel_peak_bytes + extra;
  }
  for (guint32 k = 0; k < t->blocks->len; k++) {
    const StwBlock *x = &g_array_index(t->blocks, StwBlock, k);
    StwBlock *y = stw_trace_add_block(c, x->name, x->fwd_first, x->fwd_last, x->bwd_first,
                                      x->bwd_last);
    y->input_bytes = x->input_bytes;
    y->saved_bytes = x->saved_bytes;
    y->forward_ns = x->forward_ns;
    y->choice = x->choice;
  }
  return c;
}

StwTrace *
stw_trace_decide(const StwTrace *t, const guint8 *choice, GError **error)
{
  if (t->blocks->len == 0) {
    g_set_error(error, STW_TRACE_ERROR, STW_TRACE_ERROR_INVALID, "the trace has no blocks (a "
                "trace of version 1, or of a source that does not record them): no block's "
                "activations can be decided");
    return NULL;
  }
  gboolean decided = FALSE;
  for (guint32 k = 0; k < t->blocks->len; k++) {
    decided |= g_array_index(t->blocks, StwBlock, k).choice != STW_BLOCK_KEEP;
    if (choice[k] >= STW_N_BLOCK_CHOICES) {
      g_set_error(error, STW_TRACE_ERROR, STW_TRACE_ERROR_INVALID, "block %u (%s): choice %u, "
                  "not keep, recompute, offload or recompute-host", k,
                  g_array_index(t->blocks, StwBlock, k).name, choice[k]);
      return NULL;
    }
  }
  if (t->model.checkpointing || decided || stw_trace_micro_steps(t) > 1) {
    g_set_error(error, STW_TRACE_ERROR, STW_TRACE_ERROR_INVALID,
                "the trace %s: its blocks' activations are decided already",
                t->model.checkpointing ? "recomputes its blocks (profiled with checkpointing)"
                : decided              ? "decides its blocks' activations (a planned trace)"
                                       : "has several micro-steps");
    return NULL;
  }
  guint32 n = t->ops->len, nb = t->blocks->len;
  /* per op: the bytes the recomputed blocks have freed at its start; per op: the blocks whose
   * recomputation comes right before it */
  g_autofree guint64 *freed = g_new0(guint64, n + 1);
  g_autofree gint32 *before = g_new(gint32, n + 1);
  for (guint32 i = 0; i <= n; i++)
    before[i] = -1;
  for (guint32 k = 0; k < nb; k++) {
    const StwBlock *b = &g_array_index(t->blocks, StwBlock, k);
    if (!stw_block_recomputes((StwBlockChoice)choice[k]))
      continue;
    for (guint32 i = b->fwd_last + 1; i < b->bwd_first; i++)
      freed[i] += freed_by(b);
    before[b->bwd_first] = (gint32)k;
  }
  StwTrace *c = copy_header(t);
  g_autofree guint32 *moved = g_new(guint32, n + 1); /* old op index -> new */
  for (guint32 i = 0; i < n; i++) {
    const StwOp *op = stw_trace_op(t, i);
    if (before[i] >= 0) /* the block's forward again, its memory rebuilt as it was */
      emit_recompute(c, t, &g_array_index(t->blocks, StwBlock, before[i]), i, freed[i]);
    moved[i] = c->ops->len;
    StwOp *o = copy_op(c, op, op->name, op->stage, TRUE);
    o->nonmodel_bytes = op->nonmodel_bytes - MIN(op->nonmodel_bytes, freed[i]);
    o->nonmodel_peak_bytes = op->nonmodel_peak_bytes - MIN(op->nonmodel_peak_bytes, freed[i]);
  }
  add_blocks(c, t, choice, moved);
  stw_trace_free_moved_activations(c);
  if (!stw_trace_validate(c, "(the trace with its blocks' activations decided)", error)) {
    stw_trace_free(c);
    return NULL;
  }
  return c;
}

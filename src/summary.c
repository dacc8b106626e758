/* summary.c — trace statistics for `stowage inspect`. */
#include "config.h"

#include <stowage/summary.h>

#include <string.h>

#include "json.h"

static const StwTrace *sort_trace; /* qsort has no user data; inspect is single-threaded */

static int
by_size_desc(const void *a, const void *b)
{
  guint64 x = stw_trace_tensor(sort_trace, *(const guint32 *)a)->numel;
  guint64 y = stw_trace_tensor(sort_trace, *(const guint32 *)b)->numel;
  if (x != y)
    return x > y ? -1 : 1;
  return *(const guint32 *)a < *(const guint32 *)b ? -1 : 1;
}

StwTraceSummary *
stw_trace_summary_new(const StwTrace *t, guint32 top)
{
  StwTraceSummary *s = g_new0(StwTraceSummary, 1);
  guint32 n = t->tensors->len;
  for (guint32 i = 0; i < n; i++) {
    const StwTensor *x = stw_trace_tensor(t, i);
    s->params += x->numel;
    if (x->frozen) {
      s->frozen_params += x->numel;
      s->frozen_tensors++;
    }
    for (int l = 0; l < (x->frozen ? 1 : STW_N_LISTS); l++)
      s->list_bytes[l] += x->numel * stw_chunk_list_elem_bytes((StwChunkList)l, x->dtype,
                                                          t->model.state_dtype) *
                          (l == STW_LIST_VARIANCE && t->model.amsgrad ? 2 : 1);
  }
  for (int l = 0; l < STW_N_LISTS; l++)
    s->model_bytes += s->list_bytes[l];

  for (guint32 i = 0; i < t->ops->len; i++) {
    const StwOp *op = stw_trace_op(t, i);
    if (op->nonmodel_peak_bytes > s->peak_nonmodel_bytes || i == 0) {
      s->peak_nonmodel_bytes = op->nonmodel_peak_bytes;
      s->peak_op = i;
    }
    s->stage_ops[op->stage]++;
    s->stage_ns[op->stage] += op->duration_ns;
    s->stage_flops[op->stage] += op->flops;
  }

  s->blocks = t->blocks->len;
  for (guint32 i = 0; i < t->blocks->len; i++) { /* at most 2^22 terms of 2^53: no wrap */
    const StwBlock *b = &g_array_index(t->blocks, StwBlock, i);
    s->block_saved_bytes += b->saved_bytes;
    s->block_input_bytes += b->input_bytes;
    s->block_forward_ns += b->forward_ns;
  }
  if (s->blocks > 0 && !t->model.checkpointing && stw_trace_micro_steps(t) == 1) {
    g_autofree guint8 *all = g_new(guint8, s->blocks);
    memset(all, STW_BLOCK_RECOMPUTE, s->blocks);
    g_autoptr(StwTrace) re = stw_trace_decide(t, all, NULL);
    for (guint32 i = 0; re != NULL && i < re->ops->len; i++)
      s->recomputed_peak_bytes = MAX(s->recomputed_peak_bytes,
                                     stw_trace_op(re, i)->nonmodel_peak_bytes);
  }

  guint32 *ids = g_new(guint32, MAX(n, 1));
  for (guint32 i = 0; i < n; i++)
    ids[i] = i;
  sort_trace = t;
  qsort(ids, n, sizeof *ids, by_size_desc);
  sort_trace = NULL;
  s->n_largest = MIN(top, n);
  s->largest = ids;
  s->digest = stw_trace_digest(t);
  return s;
}

void
stw_trace_summary_free(StwTraceSummary *s)
{
  if (s == NULL)
    return;
  g_free(s->largest);
  g_free(s->digest);
  g_free(s);
}

cJSON *
stw_trace_summary_to_json(const StwTrace *t, const StwTraceSummary *s)
{
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "model", t->model.name);
  cJSON_AddStringToObject(root, "source", stw_source_kind_name(t->source.kind));
  cJSON_AddStringToObject(root, "device", t->device.name);
  cJSON_AddStringToObject(root, "digest", s->digest);
  stw_json_add_u64(root, "tensors", t->tensors->len);
  stw_json_add_u64(root, "params", s->params);
  cJSON *frozen = cJSON_AddObjectToObject(root, "frozen");
  stw_json_add_u64(frozen, "tensors", s->frozen_tensors);
  stw_json_add_u64(frozen, "params", s->frozen_params);
  stw_json_add_u64(root, "micro_steps", stw_trace_micro_steps(t));
  if (t->model.images > 0) {
    stw_json_add_u64(root, "images", t->model.images);
    stw_json_add_u64(root, "image_size", t->model.image_size);
  }
  cJSON_AddStringToObject(root, "gradients", stw_gradients_names[t->model.gradients]);
  cJSON *md = cJSON_AddObjectToObject(root, "model_bytes");
  for (int l = 0; l < STW_N_LISTS; l++)
    stw_json_add_u64(md, stw_chunk_list_name((StwChunkList)l), s->list_bytes[l]);
  stw_json_add_u64(md, "total", s->model_bytes);
  cJSON *blocks = cJSON_AddObjectToObject(root, "blocks");
  stw_json_add_u64(blocks, "count", s->blocks);
  stw_json_add_u64(blocks, "saved_bytes", s->block_saved_bytes);
  stw_json_add_u64(blocks, "input_bytes", s->block_input_bytes);
  stw_json_add_u64(blocks, "forward_ns", s->block_forward_ns);
  if (s->recomputed_peak_bytes > 0)
    stw_json_add_u64(blocks, "recomputed_peak_bytes", s->recomputed_peak_bytes);
  cJSON *peak = cJSON_AddObjectToObject(root, "peak_nonmodel");
  stw_json_add_u64(peak, "bytes", s->peak_nonmodel_bytes);
  stw_json_add_u64(peak, "op_index", s->peak_op);
  cJSON_AddStringToObject(peak, "op", stw_trace_op(t, s->peak_op)->name);
  cJSON_AddStringToObject(peak, "stage", stw_stage_name(stw_trace_op(t, s->peak_op)->stage));
  cJSON *stages = cJSON_AddObjectToObject(root, "stages");
  for (int st = 0; st < STW_N_STAGES; st++) {
    cJSON *o = cJSON_AddObjectToObject(stages, stw_stage_name((StwStage)st));
    stw_json_add_u64(o, "ops", s->stage_ops[st]);
    stw_json_add_u64(o, "duration_ns", s->stage_ns[st]);
    stw_json_add_u64(o, "flops", s->stage_flops[st]);
  }
  cJSON *largest = cJSON_AddArrayToObject(root, "largest_tensors");
  for (guint32 i = 0; i < s->n_largest; i++) {
    const StwTensor *x = stw_trace_tensor(t, s->largest[i]);
    cJSON *o = cJSON_CreateObject();
    stw_json_add_u64(o, "id", s->largest[i]);
    cJSON_AddStringToObject(o, "name", x->name);
    stw_json_add_u64(o, "numel", x->numel);
    stw_json_add_u64(o, "bytes", stw_tensor_bytes(x));
    cJSON_AddItemToArray(largest, o);
  }
  return root;
}

char *
stw_trace_summary_json(const StwTrace *t, const StwTraceSummary *s)
{
  return stw_json_take_text(stw_trace_summary_to_json(t, s), TRUE);
}

/* chunks.c — packing tensors into chunks in order of first use; see chunks.h. */
#include "config.h"

#include <stowage/chunks.h>

#include <stowage/errors.h>

/* "FILE: message" in this module's domain */
#define invalid(error, file, ...) \
  stw_fail_file((error), STW_CHUNKS_ERROR, STW_CHUNKS_ERROR_INVALID, (file), __VA_ARGS__)

G_DEFINE_QUARK(stw-chunks-error-quark, stw_chunks_error)

/* Tensor ids in order of first use; unused tensors last, in id order. */
static guint32 *
first_use_order(const StwTrace *t)
{
  guint32 n = t->tensors->len, k = 0;
  guint32 *order = g_new(guint32, MAX(n, 1));
  g_autofree guint8 *seen = g_malloc0(MAX(n, 1));
  for (guint32 i = 0; i < t->ops->len; i++) {
    const StwOp *op = stw_trace_op(t, i);
    for (guint32 j = 0; j < op->n_params + op->n_grads; j++) {
      guint32 id = j < op->n_params ? op->params[j] : op->grads[j - op->n_params];
      if (!seen[id]) {
        seen[id] = 1;
        order[k++] = id;
      }
    }
  }
  for (guint32 id = 0; id < n; id++) {
    if (!seen[id])
      order[k++] = id;
  }
  return order;
}

StwChunking *
stw_chunking_pack(const StwTrace *t, guint64 size_elems, gboolean allow_oversized,
                  GError **error)
{
  guint32 largest_id;
  guint64 largest = stw_trace_largest_tensor(t, &largest_id);
  if (size_elems == 0) {
    g_set_error(error, STW_CHUNKS_ERROR, STW_CHUNKS_ERROR_TOO_SMALL,
                "the chunk size must be positive");
    return NULL;
  }
  if (largest > size_elems && !allow_oversized) {
    g_set_error(error, STW_CHUNKS_ERROR, STW_CHUNKS_ERROR_TOO_SMALL,
                "chunk size %" G_GUINT64_FORMAT " elements is below the largest tensor (%s, %"
                G_GUINT64_FORMAT " elements): use a chunk size of at least %" G_GUINT64_FORMAT
                ", or allow oversized tensors a chunk of their own", size_elems,
                stw_trace_tensor(t, largest_id)->name, largest, largest);
    return NULL;
  }
  for (guint32 i = 1; i < t->tensors->len; i++) {
    if (stw_trace_tensor(t, i)->dtype != stw_trace_tensor(t, 0)->dtype) {
      g_set_error(error, STW_CHUNKS_ERROR, STW_CHUNKS_ERROR_INVALID,
                  "tensors %s (%s) and %s (%s) differ in compute dtype: chunks need one",
                  stw_trace_tensor(t, 0)->name, stw_dtype_name(stw_trace_tensor(t, 0)->dtype),
                  stw_trace_tensor(t, i)->name, stw_dtype_name(stw_trace_tensor(t, i)->dtype));
      return NULL;
    }
  }

  StwChunking *c = g_new0(StwChunking, 1);
  c->size_elems = size_elems;
  c->dtype = t->tensors->len > 0 ? stw_trace_tensor(t, 0)->dtype : STW_DTYPE_FP32;
  c->chunks = g_array_new(FALSE, TRUE, sizeof(StwChunk));
  c->placements = g_array_sized_new(FALSE, FALSE, sizeof(StwPlacement), t->tensors->len);
  c->n_tensors = t->tensors->len;
  c->chunk_of = g_new0(guint32, MAX(c->n_tensors, 1));
  c->world = 1;
  c->nodes = 1;
  c->amsgrad = t->model.amsgrad;
  c->state_dtype = t->model.state_dtype;

  /* Frozen and trained tensors fill chunks of their own, each kind its open chunk; a chunk's
   * placements are contiguous in the layout, so they are gathered per chunk at the end. */
  g_autofree guint32 *order = first_use_order(t);
  guint32 open[2] = { G_MAXUINT32, G_MAXUINT32 }; /* per kind (trained, frozen): the chunk
                                                     * being filled */
  g_autoptr(GArray) chunk_tensors = g_array_new(FALSE, FALSE, sizeof(StwPlacement));
  for (guint32 k = 0; k < t->tensors->len; k++) {
    guint32 id = order[k];
    const StwTensor *x = stw_trace_tensor(t, id);
    guint64 numel = x->numel;
    gboolean oversized = numel > size_elems;
    guint32 *o = &open[x->frozen ? 1 : 0];
    StwChunk *ch = *o != G_MAXUINT32 ? &g_array_index(c->chunks, StwChunk, *o) : NULL;
    if (ch == NULL || oversized || ch->used_elems + numel > ch->capacity_elems) {
      StwChunk fresh = { .capacity_elems = oversized ? numel : size_elems,
                         .frozen = x->frozen };
      g_array_append_val(c->chunks, fresh);
      *o = c->chunks->len - 1;
      ch = &g_array_index(c->chunks, StwChunk, *o);
    }
    StwPlacement p = { .tensor = id, .offset = ch->used_elems };
    g_array_append_val(chunk_tensors, p);
    ch->used_elems += numel;
    ch->count++;
    c->chunk_of[id] = *o;
    if (oversized)
      *o = G_MAXUINT32; /* nothing shares an oversized tensor's chunk */
  }
  /* the placements chunk by chunk, each chunk's in the order they were placed */
  guint32 n = c->chunks->len;
  g_autofree guint32 *next = g_new0(guint32, MAX(n, 1));
  for (guint32 i = 0, first = 0; i < n; i++) {
    StwChunk *ch = &g_array_index(c->chunks, StwChunk, i);
    ch->first = next[i] = first;
    first += ch->count;
  }
  g_array_set_size(c->placements, chunk_tensors->len);
  for (guint i = 0; i < chunk_tensors->len; i++) {
    const StwPlacement *p = &g_array_index(chunk_tensors, StwPlacement, i);
    g_array_index(c->placements, StwPlacement, next[c->chunk_of[p->tensor]]++) = *p;
  }
  return c;
}

void
stw_chunking_set_world(StwChunking *c, guint32 world)
{
  c->world = MAX(world, 1);
  for (guint32 i = 0; i < stw_chunking_count(c); i++)
    g_array_index(c->chunks, StwChunk, i).owner = i % c->world;
}

/* Whether chunk I is the last of its kind (trained or frozen) in C. */
static gboolean
is_tail(const StwChunking *c, guint32 i)
{
  gboolean frozen = stw_chunking_chunk(c, i)->frozen;
  for (guint32 k = i + 1; k < stw_chunking_count(c); k++)
    if (stw_chunking_chunk(c, k)->frozen == frozen)
      return FALSE;
  return TRUE;
}

/* Whether C has frozen chunks and one rank: the layouts whose tails are trimmed. */
static gboolean
trims_tails(const StwChunking *c)
{
  if (c->world > 1)
    return FALSE;
  for (guint32 i = 0; i < stw_chunking_count(c); i++)
    if (stw_chunking_chunk(c, i)->frozen)
      return TRUE;
  return FALSE;
}

void
stw_chunking_trim_tails(StwChunking *c)
{
  if (!trims_tails(c))
    return;
  guint32 last[2] = { G_MAXUINT32, G_MAXUINT32 }; /* per kind (trained, frozen) */
  for (guint32 i = 0; i < stw_chunking_count(c); i++)
    last[stw_chunking_chunk(c, i)->frozen ? 1 : 0] = i;
  for (int k = 0; k < 2; k++) {
    StwChunk *ch = last[k] != G_MAXUINT32 ? &g_array_index(c->chunks, StwChunk, last[k]) : NULL;
    if (ch != NULL && ch->capacity_elems == c->size_elems && ch->used_elems > 0)
      ch->capacity_elems = ch->used_elems;
  }
}

void
stw_chunking_free(StwChunking *c)
{
  if (c == NULL)
    return;
  g_array_unref(c->chunks);
  g_array_unref(c->placements);
  g_free(c->chunk_of);
  g_free(c);
}

StwChunking *
stw_chunking_copy(const StwChunking *c)
{
  StwChunking *d = g_new(StwChunking, 1);
  *d = *c;
  d->chunks = g_array_copy(c->chunks);
  d->placements = g_array_copy(c->placements);
  d->chunk_of = g_memdup2(c->chunk_of, MAX(c->n_tensors, 1) * sizeof(guint32));
  return d;
}

/* Elements of chunk CH in LIST: its capacity, or none in a frozen chunk's optimizer lists. */
static guint64
list_elems(const StwChunk *ch, StwChunkList list, guint64 elems)
{
  return ch->frozen && list != STW_LIST_PARAM ? 0 : elems;
}

guint64
stw_chunking_elem_bytes(const StwChunking *c, StwChunkList list)
{
  guint64 bytes = stw_chunk_list_elem_bytes(list, c->dtype, c->state_dtype);
  return list == STW_LIST_VARIANCE && c->amsgrad ? 2 * bytes : bytes;
}

guint64
stw_chunk_bytes(const StwChunking *c, guint32 i, StwChunkList list)
{
  const StwChunk *ch = stw_chunking_chunk(c, i);
  return list_elems(ch, list, ch->capacity_elems) * stw_chunking_elem_bytes(c, list);
}

guint64
stw_chunking_list_bytes(const StwChunking *c, StwChunkList list)
{
  guint64 sum = 0;
  for (guint32 i = 0; i < stw_chunking_count(c); i++)
    sum += stw_chunk_bytes(c, i, list);
  return sum;
}

guint64
stw_chunking_wasted_bytes(const StwChunking *c, StwChunkList list)
{
  guint64 sum = 0;
  for (guint32 i = 0; i < stw_chunking_count(c); i++) {
    const StwChunk *ch = stw_chunking_chunk(c, i);
    sum += list_elems(ch, list, ch->capacity_elems - ch->used_elems) *
           stw_chunking_elem_bytes(c, list);
  }
  return sum;
}

gboolean
stw_chunking_validate(const StwChunking *c, const StwTrace *t, const char *file,
                      GError **error)
{
  if (c->n_tensors != t->tensors->len)
    return invalid(error, file, "$.layout: the layout places %u tensors, the trace has %u",
                   c->n_tensors, t->tensors->len);
  if (c->size_elems == 0)
    return invalid(error, file, "$.chunks.size_elems: must be positive");
  if (c->amsgrad != t->model.amsgrad)
    return invalid(error, file, "$.chunks.amsgrad: the layout %s AMSGrad's largest variances, "
                   "and the trace's optimizer %s", c->amsgrad ? "keeps" : "has no room for",
                   t->model.amsgrad ? "keeps them (model.amsgrad)" : "has none");
  g_autofree guint8 *placed = g_malloc0(MAX(c->n_tensors, 1));
  for (guint32 i = 0; i < stw_chunking_count(c); i++) {
    const StwChunk *ch = stw_chunking_chunk(c, i);
    if (ch->owner != i % MAX(c->world, 1))
      return invalid(error, file, "$.layout[%u].owner: %u, but with %u ranks chunk %u belongs "
                     "to rank %u (chunk index mod the world size)", i, ch->owner, c->world, i,
                     i % MAX(c->world, 1));
    if (ch->capacity_elems < c->size_elems && !(trims_tails(c) && is_tail(c, i)))
      return invalid(error, file, "$.layout[%u].capacity_elems: %" G_GUINT64_FORMAT
                     " is below the chunk size %" G_GUINT64_FORMAT " (only the last chunk of "
                     "each kind, on one rank with frozen chunks, holds less)", i,
                     ch->capacity_elems, c->size_elems);
    if (ch->capacity_elems > c->size_elems && ch->count != 1)
      return invalid(error, file, "$.layout[%u]: a chunk larger than the chunk size "
                     "must hold exactly one (oversized) tensor", i);
    guint64 end_prev = 0, offset_prev = 0;
    guint32 frozen = 0;
    for (guint32 k = 0; k < ch->count; k++) {
      const StwPlacement *p = &g_array_index(c->placements, StwPlacement, ch->first + k);
      if (p->tensor >= c->n_tensors)
        return invalid(error, file, "$.layout[%u].tensors[%u]: tensor id %u does not "
                       "exist", i, k, p->tensor);
      if (placed[p->tensor])
        return invalid(error, file, "$.layout[%u].tensors[%u]: tensor %s is placed "
                       "twice", i, k, stw_trace_tensor(t, p->tensor)->name);
      placed[p->tensor] = 1;
      guint64 numel = stw_trace_tensor(t, p->tensor)->numel;
      const char *name = stw_trace_tensor(t, p->tensor)->name;
      if (p->offset > ch->capacity_elems || numel > ch->capacity_elems - p->offset)
        return invalid(error, file, "$.layout[%u].tensors[%u]: tensor %s of %" G_GUINT64_FORMAT
                       " elements at offset %" G_GUINT64_FORMAT " ends beyond the chunk's %"
                       G_GUINT64_FORMAT " elements", i, k, name, numel, p->offset,
                       ch->capacity_elems);
      if (k > 0 && p->offset < offset_prev)
        return invalid(error, file, "$.layout[%u].tensors[%u]: tensor %s at offset %"
                       G_GUINT64_FORMAT " is listed after one at offset %" G_GUINT64_FORMAT
                       ": a chunk's tensors are listed by offset, ascending", i, k, name,
                       p->offset, offset_prev);
      if (p->offset < end_prev)
        return invalid(error, file, "$.layout[%u].tensors[%u]: tensor %s at offset %"
                       G_GUINT64_FORMAT " overlaps tensor %s before it, which ends at %"
                       G_GUINT64_FORMAT, i, k, name, p->offset,
                       stw_trace_tensor(t, g_array_index(c->placements, StwPlacement,
                                                          ch->first + k - 1).tensor)->name,
                       end_prev);
      end_prev = p->offset + numel;
      offset_prev = p->offset;
      frozen += stw_trace_tensor(t, p->tensor)->frozen ? 1 : 0;
    }
    if (ch->frozen && frozen < ch->count)
      return invalid(error, file, "$.layout[%u].frozen: the chunk holds %u tensor%s that %s "
                     "trained (a frozen chunk keeps no optimizer state)", i, ch->count - frozen,
                     ch->count - frozen == 1 ? "" : "s", ch->count - frozen == 1 ? "is" : "are");
    if (!ch->frozen && ch->count > 0 && frozen == ch->count)
      return invalid(error, file, "$.layout[%u].frozen: every tensor of the chunk is frozen, "
                     "and the chunk is not (its optimizer state would be kept for nothing)", i);
  }
  for (guint32 id = 0; id < c->n_tensors; id++) {
    if (!placed[id])
      return invalid(error, file, "$.layout: tensor %s is in no chunk",
                     stw_trace_tensor(t, id)->name);
  }
  return TRUE;
}

void
stw_chunking_recount(StwChunking *c, const StwTrace *t)
{
  for (guint32 i = 0; i < stw_chunking_count(c); i++) {
    StwChunk *ch = &g_array_index(c->chunks, StwChunk, i);
    ch->used_elems = 0;
    for (guint32 k = 0; k < ch->count; k++) {
      guint32 id = g_array_index(c->placements, StwPlacement, ch->first + k).tensor;
      ch->used_elems += stw_trace_tensor(t, id)->numel;
    }
  }
}

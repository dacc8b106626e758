/* chunks.c — packing tensors into chunks in order of first use; see chunks.h. */
#include "config.h"

#include <stowage/chunks.h>

#include <stowage/errors.h>
#include <stowage/plan.h>

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
  c->offset_of = g_new0(guint64, MAX(c->n_tensors, 1));
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
    c->offset_of[id] = p.offset;
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

/* Where group coordinate POS of a group of chunks of CAPACITY elements falls: the chunk's index
 * in the group, and the offset in it into *OFFSET. */
static guint32
shard_at(guint64 pos, guint64 capacity, guint64 *offset)
{
  *offset = pos % capacity;
  return (guint32)(pos / capacity);
}

/* Where tensor ID begins in a layout of shards: its offset in group coordinates (shard q's
 * offset 0 at q capacities). */
static guint64
group_position(const StwChunking *c, guint32 id)
{
  guint32 i = c->chunk_of[id];
  return (guint64)(i % c->world) * stw_chunking_chunk(c, i)->capacity_elems + c->offset_of[id];
}

/* Each chunk's elements used in a layout of shards: the parts of the tensors in it. */
static void
count_shards(StwChunking *c, const StwTrace *t)
{
  for (guint32 i = 0; i < stw_chunking_count(c); i++)
    g_array_index(c->chunks, StwChunk, i).used_elems = 0;
  for (guint32 id = 0; id < c->n_tensors; id++) {
    guint32 i = c->chunk_of[id];
    guint64 cap = stw_chunking_chunk(c, i)->capacity_elems;
    guint64 pos = group_position(c, id);
    guint64 end = pos + stw_trace_tensor(t, id)->numel;
    for (guint32 g0 = i - i % c->world; pos < end; pos = (pos / cap + 1) * cap) {
      guint64 off;
      guint32 q = shard_at(pos, cap, &off);
      g_array_index(c->chunks, StwChunk, g0 + q).used_elems += MIN(end - pos, cap - off);
    }
  }
}

StwChunking *
stw_chunking_pack_shards(const StwTrace *t, guint64 group_elems, guint32 world,
                         gboolean allow_oversized, GError **error)
{
  g_assert(world > 1);
  g_autoptr(StwChunking) whole = stw_chunking_pack(t, group_elems, allow_oversized, error);
  if (whole == NULL)
    return NULL;
  guint32 n = stw_chunking_count(whole);
  if ((guint64)n * world > STW_PLAN_MAX_CHUNKS) {
    g_set_error(error, STW_CHUNKS_ERROR, STW_CHUNKS_ERROR_TOO_MANY,
                "%u chunks of %" G_GUINT64_FORMAT " elements, each split into %u shards, are "
                "more than the %u chunks a layout holds: use a larger chunk size", n,
                group_elems, world, STW_PLAN_MAX_CHUNKS);
    return NULL;
  }
  StwChunking *c = stw_chunking_copy(whole);
  c->size_elems = (group_elems + world - 1) / world;
  c->shards = TRUE;
  g_array_set_size(c->chunks, 0);
  g_array_set_size(c->placements, 0);
  for (guint32 j = 0; j < n; j++) {
    const StwChunk *w = stw_chunking_chunk(whole, j);
    guint64 cap = MAX((w->capacity_elems + world - 1) / world, c->size_elems);
    guint32 base = c->chunks->len;
    for (guint32 q = 0; q < world; q++) {
      StwChunk k = { .capacity_elems = cap, .frozen = w->frozen, .first = c->placements->len };
      g_array_append_val(c->chunks, k);
    }
    /* the group's tensors in order, each listed in the shard it begins in */
    for (guint32 k = 0; k < w->count; k++) {
      StwPlacement p = g_array_index(whole->placements, StwPlacement, w->first + k);
      guint32 q = shard_at(p.offset, cap, &p.offset);
      StwChunk *s = &g_array_index(c->chunks, StwChunk, base + q);
      if (s->count == 0)
        s->first = c->placements->len;
      s->count++;
      g_array_append_val(c->placements, p);
      c->chunk_of[p.tensor] = base + q;
      c->offset_of[p.tensor] = p.offset;
    }
  }
  for (guint32 i = 1; i < stw_chunking_count(c); i++) { /* empty shards: first where they'd be */
    StwChunk *s = &g_array_index(c->chunks, StwChunk, i);
    const StwChunk *before = stw_chunking_chunk(c, i - 1);
    if (s->count == 0)
      s->first = before->first + before->count;
  }
  stw_chunking_set_world(c, world);
  count_shards(c, t);
  return c;
}

guint32
stw_chunking_owned_chunk(const StwChunking *c, guint32 id)
{
  guint32 i = c->chunk_of[id];
  if (!c->shards)
    return stw_chunking_owned(c, i) ? i : G_MAXUINT32;
  /* rank 0's shard is the group's first, [0, capacity) in group coordinates */
  return group_position(c, id) < stw_chunking_chunk(c, i)->capacity_elems ? i - i % c->world
                                                                          : G_MAXUINT32;
}

guint64
stw_chunking_owned_part(const StwChunking *c, guint32 id, guint64 numel, guint32 *chunk)
{
  *chunk = stw_chunking_owned_chunk(c, id);
  if (*chunk == G_MAXUINT32)
    return 0;
  if (!c->shards)
    return numel;
  return MIN(numel, stw_chunking_chunk(c, *chunk)->capacity_elems - group_position(c, id));
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
  g_free(c->offset_of);
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
  d->offset_of = g_memdup2(c->offset_of, MAX(c->n_tensors, 1) * sizeof(guint64));
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
  if (c->shards && (c->world < 2 || stw_chunking_count(c) % c->world != 0))
    return invalid(error, file, "$.chunks.shards: a layout of shards needs several ranks and "
                   "whole groups (%u chunks, %u ranks)", stw_chunking_count(c), c->world);
  /* a group of shards is checked as one chunk, in its coordinates: shard q's offset 0 at q
   * capacities; PatrickStar's chunks alone */
  guint32 span = c->shards ? c->world : 1;
  g_autofree guint8 *placed = g_malloc0(MAX(c->n_tensors, 1));
  guint64 end_prev = 0, offset_prev = 0;
  guint32 frozen = 0, count = 0, prev = 0;
  for (guint32 i = 0; i < stw_chunking_count(c); i++) {
    const StwChunk *ch = stw_chunking_chunk(c, i);
    const StwChunk *lead = stw_chunking_chunk(c, i - i % span);
    guint32 q = i % span;
    if (ch->owner != i % MAX(c->world, 1))
      return invalid(error, file, "$.layout[%u].owner: %u, but with %u ranks chunk %u belongs "
                     "to rank %u (chunk index mod the world size)", i, ch->owner, c->world, i,
                     i % MAX(c->world, 1));
    if (ch->capacity_elems < c->size_elems && !(trims_tails(c) && is_tail(c, i)))
      return invalid(error, file, "$.layout[%u].capacity_elems: %" G_GUINT64_FORMAT
                     " is below the chunk size %" G_GUINT64_FORMAT " (only the last chunk of "
                     "each kind, on one rank with frozen chunks, holds less)", i,
                     ch->capacity_elems, c->size_elems);
    if (ch->capacity_elems != lead->capacity_elems || ch->frozen != lead->frozen)
      return invalid(error, file, "$.layout[%u]: its %s differs from chunk %u's, the first of "
                     "its group: a group's shards are alike", i, ch->frozen != lead->frozen
                     ? "frozen flag" : "capacity_elems", i - q);
    if (q == 0) {
      end_prev = offset_prev = 0;
      frozen = count = 0;
      for (guint32 j = i; j < i + span; j++)
        count += stw_chunking_chunk(c, j)->count;
    }
    if (ch->capacity_elems > c->size_elems && count != 1)
      return invalid(error, file, "$.layout[%u]: a chunk larger than the chunk size "
                     "must hold exactly one (oversized) tensor%s", i, span > 1 ? " in its group"
                                                                              : "");
    guint64 base = (guint64)q * ch->capacity_elems, room = (span - q) * ch->capacity_elems;
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
      if (p->offset > ch->capacity_elems || numel > room - p->offset)
        return invalid(error, file, "$.layout[%u].tensors[%u]: tensor %s of %" G_GUINT64_FORMAT
                       " elements at offset %" G_GUINT64_FORMAT " ends beyond the %s %"
                       G_GUINT64_FORMAT " elements", i, k, name, numel, p->offset,
                       span > 1 ? "group's" : "chunk's", room);
      guint64 at = base + p->offset;
      if (k > 0 && at < offset_prev)
        return invalid(error, file, "$.layout[%u].tensors[%u]: tensor %s at offset %"
                       G_GUINT64_FORMAT " is listed after one at offset %" G_GUINT64_FORMAT
                       ": a chunk's tensors are listed by offset, ascending", i, k, name,
                       p->offset, offset_prev - base);
      if (at < end_prev)
        return invalid(error, file, "$.layout[%u].tensors[%u]: tensor %s at offset %"
                       G_GUINT64_FORMAT " overlaps tensor %s before it, which ends at %"
                       G_GUINT64_FORMAT, i, k, name, p->offset, stw_trace_tensor(t, prev)->name,
                       end_prev - base); /* (AT >= BASE: it ends in this chunk) */
      end_prev = at + numel;
      prev = p->tensor;
      offset_prev = at;
      frozen += stw_trace_tensor(t, p->tensor)->frozen ? 1 : 0;
    }
    if (q + 1 < span)
      continue; /* the group's flags once its tensors are counted */
    if (ch->frozen && frozen < count)
      return invalid(error, file, "$.layout[%u].frozen: the %s holds %u tensor%s that %s "
                     "trained (a frozen chunk keeps no optimizer state)", i,
                     span > 1 ? "group" : "chunk", count - frozen, count - frozen == 1 ? "" : "s",
                     count - frozen == 1 ? "is" : "are");
    if (!ch->frozen && count > 0 && frozen == count)
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
  if (c->shards) {
    count_shards(c, t);
    return;
  }
  for (guint32 i = 0; i < stw_chunking_count(c); i++) {
    StwChunk *ch = &g_array_index(c->chunks, StwChunk, i);
    ch->used_elems = 0;
    for (guint32 k = 0; k < ch->count; k++) {
      guint32 id = g_array_index(c->placements, StwPlacement, ch->first + k).tensor;
      ch->used_elems += stw_trace_tensor(t, id)->numel;
    }
  }
}

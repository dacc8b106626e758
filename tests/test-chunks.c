/* test-chunks.c — packing tensors into chunks: order, sizes, waste, bad layouts. */
#include "config.h"

#include <glib.h>

#include <stowage/chunks.h>

#include "testutil.h"

static void
test_pack_gpt2(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 1, 64, FALSE);
  GError *error = NULL;
  /* 2^25 elements: wte (38,597,376) is larger, so the size must be at least that */
  g_autoptr(StwChunking) none = stw_chunking_pack(t, G_GUINT64_CONSTANT(1) << 25, FALSE, &error);
  g_assert_null(none);
  g_assert_error(error, STW_CHUNKS_ERROR, STW_CHUNKS_ERROR_TOO_SMALL);
  stw_assert_error_contains(error, "chunk size 33554432 elements is below the largest tensor "
                                   "(wte, 38597376 elements): use a chunk size of at least "
                                   "38597376");

  guint64 size = 40000000;
  g_autoptr(StwChunking) c = stw_chunking_pack(t, size, FALSE, &error);
  g_assert_no_error(error);
  /* first use: embed reads wte then wpe; they share chunk 0 (38,597,376 + 786,432) */
  const StwChunk *c0 = stw_chunking_chunk(c, 0);
  g_assert_cmpuint(c0->count, >=, 2);
  const StwPlacement *p = &g_array_index(c->placements, StwPlacement, c0->first);
  g_assert_cmpuint(p[0].tensor, ==, 0);
  g_assert_cmpuint(p[0].offset, ==, 0);
  g_assert_cmpuint(p[1].tensor, ==, 1);
  g_assert_cmpuint(p[1].offset, ==, 38597376);
  /* every tensor once, all used elements accounted for, one size for all chunks */
  g_assert_true(stw_chunking_validate(c, t, "packed", &error));
  guint64 used = 0;
  for (guint32 i = 0; i < stw_chunking_count(c); i++) {
    g_assert_cmpuint(stw_chunking_chunk(c, i)->capacity_elems, ==, size);
    used += stw_chunking_chunk(c, i)->used_elems;
  }
  g_assert_cmpuint(used, ==, 124439808);
  guint32 n = stw_chunking_count(c);
  g_assert_cmpuint(n, ==, 4); /* 124.4M elements in chunks of 40M, never split */
  g_assert_cmpuint(stw_chunking_list_bytes(c, STW_LIST_PARAM), ==, n * size * 2);
  g_assert_cmpuint(stw_chunking_wasted_bytes(c, STW_LIST_PARAM), ==, (n * size - used) * 2);
  g_assert_cmpuint(stw_chunking_wasted_bytes(c, STW_LIST_MASTER), ==, (n * size - used) * 4);
  g_assert_cmpuint(stw_chunk_bytes(c, 1, STW_LIST_VARIANCE), ==, size * 4);
  /* the LM head reads wte again: the tied tensor is placed once */
  g_assert_cmpuint(c->chunk_of[0], ==, 0);
}

static void
test_oversized(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 1, 64, FALSE);
  GError *error = NULL;
  g_autoptr(StwChunking) c = stw_chunking_pack(t, 3000000, TRUE, &error);
  g_assert_no_error(error);
  const StwChunk *c0 = stw_chunking_chunk(c, 0);
  g_assert_cmpuint(c0->count, ==, 1);
  g_assert_cmpuint(c0->capacity_elems, ==, 38597376);
  g_assert_cmpuint(c0->used_elems, ==, 38597376);
  g_assert_cmpuint(stw_chunking_chunk(c, 1)->capacity_elems, ==, 3000000);
  g_assert_true(stw_chunking_validate(c, t, "packed", &error));
}

static void
test_world_owners(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 1, 64, FALSE);
  g_autoptr(StwChunking) c = stw_chunking_pack(t, 4000000, TRUE, NULL);
  g_assert_cmpuint(c->world, ==, 1);
  g_assert_cmpuint(stw_chunking_groups(c), ==, 0);
  guint32 n = stw_chunking_count(c);
  g_assert_cmpuint(n, ==, 37);
  stw_chunking_set_world(c, 4);
  g_assert_cmpuint(stw_chunking_groups(c), ==, 10); /* 37 chunks: 9 groups of 4, one of 1 */
  for (guint32 i = 0; i < n; i++) {
    g_assert_cmpuint(stw_chunking_chunk(c, i)->owner, ==, i % 4);
    g_assert_true(stw_chunking_owned(c, i) == (i % 4 == 0));
  }
  GError *error = NULL;
  g_assert_true(stw_chunking_validate(c, t, "packed", &error));
  g_array_index(c->chunks, StwChunk, 5).owner = 0;
  g_assert_false(stw_chunking_validate(c, t, "bad.json", &error));
  stw_assert_error_contains(error, "bad.json: $.layout[5].owner: 0, but with 4 ranks chunk 5 "
                            "belongs to rank 1");
}

static void
test_validate_errors(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 1, 64, FALSE);
  GError *error = NULL;
  g_autoptr(StwChunking) c = stw_chunking_pack(t, 40000000, FALSE, NULL);
  StwPlacement *p = &g_array_index(c->placements, StwPlacement, 1);
  p->offset = 100; /* wpe over wte */
  g_assert_false(stw_chunking_validate(c, t, "L", &error));
  stw_assert_error_contains(error, "L: $.layout[0].tensors[1]: tensor wpe at offset 100 "
                                   "overlaps tensor wte before it, which ends at 38597376");
  p->offset = 38597376;
  /* a chunk's list out of offset order is said to be so, not called an overlap */
  StwPlacement *q = &g_array_index(c->placements, StwPlacement, 2);
  guint64 q_offset = q->offset;
  q->offset = 0;
  g_assert_false(stw_chunking_validate(c, t, "L", &error));
  stw_assert_error_contains(error, "L: $.layout[0].tensors[2]: tensor h.0.ln_1.weight at offset "
                                   "0 is listed after one at offset 38597376: a chunk's tensors "
                                   "are listed by offset, ascending");
  q->offset = 39999999;
  g_assert_false(stw_chunking_validate(c, t, "L", &error));
  stw_assert_error_contains(error, "L: $.layout[0].tensors[2]: tensor h.0.ln_1.weight of 768 "
                                   "elements at offset 39999999 ends beyond the chunk's 40000000 "
                                   "elements");
  q->offset = q_offset;
  guint32 saved = p->tensor;
  p->tensor = 0;
  g_assert_false(stw_chunking_validate(c, t, "L", &error));
  stw_assert_error_contains(error, "tensor wte is placed twice");
  p->tensor = saved;
  g_array_index(c->chunks, StwChunk, 0).capacity_elems = 10;
  g_assert_false(stw_chunking_validate(c, t, "L", &error));
  stw_assert_error_contains(error, "capacity_elems: 10 is below the chunk size 40000000");
  g_assert_null(stw_chunking_pack(t, 0, TRUE, &error));
  stw_assert_error_contains(error, "the chunk size must be positive");
}

/* ZeRO-3's and Gemini's layout: the 40M-element packing's chunks each split into 4 shards, every
 * tensor where it was in its chunk, now in group coordinates; rank 0 holds a quarter of each. */
static void
test_shards(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 1, 64, FALSE);
  GError *error = NULL;
  g_autoptr(StwChunking) whole = stw_chunking_pack(t, 40000000, FALSE, &error);
  g_autoptr(StwChunking) c = stw_chunking_pack_shards(t, 40000000, 4, FALSE, &error);
  g_assert_no_error(error);
  g_assert_true(c->shards);
  g_assert_cmpuint(c->world, ==, 4);
  g_assert_cmpuint(c->size_elems, ==, 10000000);
  g_assert_cmpuint(stw_chunking_count(c), ==, 4 * stw_chunking_count(whole));
  g_assert_cmpuint(stw_chunking_groups(c), ==, stw_chunking_count(whole));
  g_assert_true(stw_chunking_validate(c, t, "sharded", &error));
  guint64 used = 0;
  for (guint32 i = 0; i < stw_chunking_count(c); i++) {
    g_assert_cmpuint(stw_chunking_chunk(c, i)->owner, ==, i % 4);
    g_assert_cmpuint(stw_chunking_chunk(c, i)->capacity_elems, ==, 10000000);
    used += stw_chunking_chunk(c, i)->used_elems;
  }
  g_assert_cmpuint(used, ==, 124439808);
  g_assert_cmpuint(stw_chunking_chunk(c, 0)->used_elems, ==, 10000000); /* wte's first part */
  for (guint32 id = 0; id < t->tensors->len; id++) {
    g_assert_cmpuint(c->chunk_of[id] / 4, ==, whole->chunk_of[id]);
    g_assert_cmpuint(c->chunk_of[id] % 4 * 10000000 + c->offset_of[id], ==, whole->offset_of[id]);
  }
  /* rank 0's parts: a quarter of wte (38,597,376 from 0), none of wpe (from 38,597,376) */
  guint32 ch = 0;
  g_assert_cmpuint(stw_chunking_owned_part(c, 0, 38597376, &ch), ==, 10000000);
  g_assert_cmpuint(ch, ==, 0);
  g_assert_cmpuint(stw_chunking_owned_part(c, 1, 786432, &ch), ==, 0);
  g_assert_cmpuint(ch, ==, G_MAXUINT32);
  g_assert_cmpuint(c->chunk_of[1], ==, 3);
  g_assert_cmpuint(c->offset_of[1], ==, 8597376);
  /* PatrickStar's groups: a tensor is its owner's whole */
  g_assert_cmpuint(stw_chunking_owned_part(whole, 1, 786432, &ch), ==, 786432);
  g_assert_cmpuint(ch, ==, 0);

  /* a tensor larger than a chunk: a group of its own, its shards a quarter of it */
  g_assert_null(stw_chunking_pack_shards(t, 20000000, 4, FALSE, &error));
  stw_assert_error_contains(error, "chunk size 20000000 elements is below the largest tensor");
  g_autoptr(StwChunking) o = stw_chunking_pack_shards(t, 20000000, 4, TRUE, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(stw_chunking_chunk(o, 3)->capacity_elems, ==, 9649344); /* 38,597,376 / 4 */
  g_assert_cmpuint(stw_chunking_chunk(o, 4)->capacity_elems, ==, 5000000);
  g_assert_true(stw_chunking_validate(o, t, "sharded", &error));
  /* more shards than a layout holds: said (the planner's search goes on to larger sizes) */
  g_assert_null(stw_chunking_pack_shards(t, 1, 8192, TRUE, &error));
  g_assert_error(error, STW_CHUNKS_ERROR, STW_CHUNKS_ERROR_TOO_MANY);
  stw_assert_error_contains(error, "148 chunks of 1 elements, each split into 8192 shards, are "
                                   "more than the 1048576 chunks a layout holds: use a larger "
                                   "chunk size");
  g_clear_error(&error);

  /* bad layouts, said in group terms */
  StwPlacement *wpe = &g_array_index(c->placements, StwPlacement,
                                     stw_chunking_chunk(c, 3)->first);
  g_assert_cmpuint(wpe->tensor, ==, 1);
  wpe->offset = 9999999;
  g_assert_false(stw_chunking_validate(c, t, "L", &error));
  stw_assert_error_contains(error, "L: $.layout[3].tensors[0]: tensor wpe of 786432 elements at "
                                   "offset 9999999 ends beyond the group's 10000000 elements");
  wpe->offset = 100;
  g_assert_false(stw_chunking_validate(c, t, "L", &error));
  stw_assert_error_contains(error, "L: $.layout[3].tensors[0]: tensor wpe at offset 100 overlaps "
                                   "tensor wte before it, which ends at 8597376");
  wpe->offset = 8597376;
  g_array_index(c->chunks, StwChunk, 2).capacity_elems = 10000001;
  g_assert_false(stw_chunking_validate(c, t, "L", &error));
  stw_assert_error_contains(error, "L: $.layout[2]: its capacity_elems differs from chunk 0's, "
                                   "the first of its group: a group's shards are alike");
  g_array_index(c->chunks, StwChunk, 2).capacity_elems = 10000000;
  c->world = 1;
  g_assert_false(stw_chunking_validate(c, t, "L", &error));
  stw_assert_error_contains(error, "L: $.chunks.shards: a layout of shards needs several ranks");
  c->world = 4;
  g_assert_true(stw_chunking_validate(c, t, "L", &error));
  g_clear_error(&error);
}

static void
test_mixed_dtypes(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 1, 64, FALSE);
  g_array_index(t->tensors, StwTensor, 5).dtype = STW_DTYPE_FP32;
  GError *error = NULL;
  g_assert_null(stw_chunking_pack(t, 40000000, FALSE, &error));
  stw_assert_error_contains(error, "differ in compute dtype");
}

/* Frozen tensors fill chunks of their own, in the same order of first use, and those chunks
 * keep no optimizer state: a LoRA-like GPT-2 with its attention frozen. */
static void
test_frozen(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 1, 64, FALSE);
  GError *error = NULL;
  guint32 frozen = 0;
  g_assert_true(stw_trace_freeze(t, "h.*.attn.*", &frozen, &error));
  g_assert_cmpuint(frozen, ==, 48);
  guint64 size = 40000000;
  g_autoptr(StwChunking) c = stw_chunking_pack(t, size, FALSE, &error);
  g_assert_no_error(error);
  g_assert_true(stw_chunking_validate(c, t, "packed", &error));
  guint64 frozen_numel = 0, frozen_elems = 0;
  stw_trace_frozen(t, &frozen_numel);
  guint32 n_frozen = 0;
  for (guint32 i = 0; i < stw_chunking_count(c); i++) {
    const StwChunk *ch = stw_chunking_chunk(c, i);
    for (guint32 k = 0; k < ch->count; k++) {
      guint32 id = g_array_index(c->placements, StwPlacement, ch->first + k).tensor;
      g_assert_cmpint(stw_trace_tensor(t, id)->frozen, ==, ch->frozen);
      g_assert_cmpuint(c->chunk_of[id], ==, i);
    }
    if (ch->frozen) {
      n_frozen++;
      frozen_elems += ch->used_elems;
      g_assert_cmpuint(stw_chunk_bytes(c, i, STW_LIST_PARAM), ==, size * 2);
      g_assert_cmpuint(stw_chunk_bytes(c, i, STW_LIST_MASTER), ==, 0);
      g_assert_cmpuint(stw_chunk_bytes(c, i, STW_LIST_VARIANCE), ==, 0);
    }
  }
  g_assert_cmpuint(frozen_elems, ==, frozen_numel);
  g_assert_cmpuint(frozen_numel, ==, 12 * (768 * 2304 + 2304 + 768 * 768 + 768));
  g_assert_cmpuint(n_frozen, ==, 1); /* 28.3M elements: one chunk of 40M */
  /* the optimizer's lists hold the trained chunks only */
  g_assert_cmpuint(stw_chunking_list_bytes(c, STW_LIST_MASTER), ==,
                   (stw_chunking_count(c) - 1) * size * 4);
  /* a layout that says otherwise than the trace is refused */
  g_autoptr(StwChunking) bad = stw_chunking_copy(c);
  guint32 f = 0;
  while (!stw_chunking_chunk(bad, f)->frozen)
    f++;
  g_array_index(bad->chunks, StwChunk, f).frozen = FALSE;
  g_assert_false(stw_chunking_validate(bad, t, "edited", &error));
  stw_assert_error_contains(error, "edited: $.layout[1].frozen: every tensor of the chunk is "
                            "frozen, and the chunk is not (its optimizer state would be kept for "
                            "nothing)");
  g_array_index(bad->chunks, StwChunk, f).frozen = TRUE;
  g_array_index(bad->chunks, StwChunk, 0).frozen = TRUE;
  g_assert_false(stw_chunking_validate(bad, t, "edited", &error));
  stw_assert_error_contains(error, "edited: $.layout[0].frozen: the chunk holds 6 tensors that "
                            "are trained (a frozen chunk keeps no optimizer state)");
}

/* AMSGrad's largest variances live after the variances: the variance list twice as large, the
 * rest as without; a layout that says otherwise than the trace is refused. */
static void
test_amsgrad(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 1, 64, FALSE);
  t->model.amsgrad = TRUE;
  GError *error = NULL;
  g_autoptr(StwChunking) c = stw_chunking_pack(t, 40000000, FALSE, &error);
  g_assert_no_error(error);
  g_assert_true(c->amsgrad);
  g_assert_cmpuint(stw_chunking_elem_bytes(c, STW_LIST_VARIANCE), ==, 8);
  g_assert_cmpuint(stw_chunking_elem_bytes(c, STW_LIST_MOMENTUM), ==, 4);
  g_assert_cmpuint(stw_chunking_list_bytes(c, STW_LIST_VARIANCE), ==,
                   2 * stw_chunking_list_bytes(c, STW_LIST_MASTER));
  g_assert_true(stw_chunking_validate(c, t, "packed", &error));
  t->model.amsgrad = FALSE;
  g_assert_false(stw_chunking_validate(c, t, "edited", &error));
  stw_assert_error_contains(error, "edited: $.chunks.amsgrad: the layout keeps AMSGrad's largest "
                            "variances, and the trace's optimizer has none");
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/chunks/pack-gpt2", test_pack_gpt2);
  g_test_add_func("/chunks/oversized", test_oversized);
  g_test_add_func("/chunks/world-owners", test_world_owners);
  g_test_add_func("/chunks/validate-errors", test_validate_errors);
  g_test_add_func("/chunks/shards", test_shards);
  g_test_add_func("/chunks/mixed-dtypes", test_mixed_dtypes);
  g_test_add_func("/chunks/frozen", test_frozen);
  g_test_add_func("/chunks/amsgrad", test_amsgrad);
  return g_test_run();
}

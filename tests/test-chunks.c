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
                                   "overlaps another");
  p->offset = 38597376;
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

static void
test_mixed_dtypes(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 1, 64, FALSE);
  g_array_index(t->tensors, StwTensor, 5).dtype = STW_DTYPE_FP32;
  GError *error = NULL;
  g_assert_null(stw_chunking_pack(t, 40000000, FALSE, &error));
  stw_assert_error_contains(error, "differ in compute dtype");
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/chunks/pack-gpt2", test_pack_gpt2);
  g_test_add_func("/chunks/oversized", test_oversized);
  g_test_add_func("/chunks/world-owners", test_world_owners);
  g_test_add_func("/chunks/validate-errors", test_validate_errors);
  g_test_add_func("/chunks/mixed-dtypes", test_mixed_dtypes);
  return g_test_run();
}

/* test-summary.c — what `stowage inspect` reports. */
#include "config.h"

#include <glib.h>

#include <stowage/summary.h>

#include "json.h"
#include "testutil.h"

static void
test_gpt2(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 8, 1024, FALSE);
  g_autoptr(StwTraceSummary) s = stw_trace_summary_new(t, 3);
  g_assert_cmpuint(s->params, ==, 124439808);
  g_assert_cmpuint(s->list_bytes[STW_LIST_PARAM], ==, 2 * G_GUINT64_CONSTANT(124439808));
  g_assert_cmpuint(s->list_bytes[STW_LIST_MASTER], ==, 4 * G_GUINT64_CONSTANT(124439808));
  g_assert_cmpuint(s->model_bytes, ==, 14 * G_GUINT64_CONSTANT(124439808));
  g_assert_cmpuint(s->stage_ops[STW_STAGE_FWD], ==, 100);
  g_assert_cmpuint(s->stage_ops[STW_STAGE_BWD], ==, 100);
  g_assert_cmpuint(s->stage_ops[STW_STAGE_OPTIM], ==, 148);
  g_assert_cmpstr(stw_trace_op(t, s->peak_op)->name, ==, "loss.bwd");
  g_assert_cmpuint(s->stage_flops[STW_STAGE_BWD], ==, 2 * s->stage_flops[STW_STAGE_FWD]);
  g_assert_cmpuint(s->n_largest, ==, 3);
  g_assert_cmpstr(stw_trace_tensor(t, s->largest[0])->name, ==, "wte");
  g_assert_cmpstr(stw_trace_tensor(t, s->largest[1])->name, ==, "h.0.mlp.c_fc.weight");

  /* integers are written as raw text, so read the JSON back as a consumer would */
  cJSON *built = stw_trace_summary_to_json(t, s);
  char *text = cJSON_Print(built);
  cJSON *j = cJSON_Parse(text);
  cJSON_free(text);
  cJSON_Delete(built);
  const cJSON *md = cJSON_GetObjectItem(j, "model_bytes");
  g_assert_cmpfloat(cJSON_GetObjectItem(md, "total")->valuedouble, ==, 14.0 * 124439808);
  g_assert_cmpstr(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "peak_nonmodel"), "op")->valuestring,
                  ==, "loss.bwd");
  g_assert_cmpint(cJSON_GetArraySize(cJSON_GetObjectItem(j, "largest_tensors")), ==, 3);
  cJSON_Delete(j);
}

static void
test_fp32_lists(void)
{
  /* an fp32 compute copy is 4 bytes; the other three lists are always fp32 */
  g_assert_cmpuint(stw_chunk_list_elem_bytes(STW_LIST_PARAM, STW_DTYPE_FP32, STW_DTYPE_FP32), ==, 4);
  g_assert_cmpuint(stw_chunk_list_elem_bytes(STW_LIST_PARAM, STW_DTYPE_BF16, STW_DTYPE_FP32), ==, 2);
  g_assert_cmpuint(stw_chunk_list_elem_bytes(STW_LIST_VARIANCE, STW_DTYPE_FP16, STW_DTYPE_FP32), ==,
                   4);
  /* bf16 moments: two bytes each, the master weights four still */
  g_assert_cmpuint(stw_chunk_list_elem_bytes(STW_LIST_MOMENTUM, STW_DTYPE_BF16, STW_DTYPE_BF16), ==,
                   2);
  g_assert_cmpuint(stw_chunk_list_elem_bytes(STW_LIST_MASTER, STW_DTYPE_BF16, STW_DTYPE_BF16), ==,
                   4);
  g_assert_cmpstr(stw_chunk_list_name(STW_LIST_MOMENTUM), ==, "momentum");
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/summary/gpt2", test_gpt2);
  g_test_add_func("/summary/fp32-lists", test_fp32_lists);
  return g_test_run();
}

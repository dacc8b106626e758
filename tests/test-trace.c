/* test-trace.c — the trace model: reading, validation of hostile input, round trips, digests. */
#include "config.h"

#include <glib.h>
#include <glib/gstdio.h>

#include <stowage/trace.h>

#include "testutil.h"

/* The canonical digest of tests/fixtures/traces/mini.json. Plans carry trace digests, so a
 * change here breaks every plan ever written: change the canonical form only with a new
 * format version. The value was reproduced independently with the Python snippet in
 * docs/trace-format.md. */
#define MINI_DIGEST "4de2ba5a5d2f5443a88fa5eaa7ab3a00d35096b0b8840d8c844c608f27230447"

static StwTrace *
load_fixture(const char *name, GError **error)
{
  g_autofree char *path = stw_test_fixture(name);
  return stw_trace_load(path, error);
}

static void
test_load_mini(void)
{
  GError *error = NULL;
  g_autoptr(StwTrace) t = load_fixture("traces/mini.json", &error);
  g_assert_no_error(error);
  g_assert_cmpuint(t->tensors->len, ==, 2);
  g_assert_cmpuint(t->ops->len, ==, 4);
  g_assert_cmpstr(t->model.name, ==, "mini");
  g_assert_false(t->model.has_config);
  g_assert_cmpuint(t->model.batch, ==, 1);
  g_assert_cmpuint(t->device.memory_bytes, ==, 1073741824);
  g_assert_cmpuint(t->device.world_size, ==, 1);
  const StwOp *bwd = stw_trace_op(t, 1);
  g_assert_cmpint(bwd->stage, ==, STW_STAGE_BWD);
  g_assert_cmpuint(bwd->n_grads, ==, 2);
  g_assert_cmpuint(bwd->grads[1], ==, 1);
  g_assert_cmpuint(bwd->nonmodel_peak_bytes, ==, 192);
  g_assert_cmpuint(stw_trace_op(t, 0)->flops, ==, 128);
  g_assert_cmpuint(stw_trace_op(t, 1)->flops, ==, 0);
  g_assert_cmpuint(stw_tensor_bytes(stw_trace_tensor(t, 0)), ==, 32);
  g_assert_cmpstr(t->source.tool, ==, "hand-written");
}

static void
test_digest_canonical(void)
{
  g_autoptr(StwTrace) a = load_fixture("traces/mini.json", NULL);
  g_autoptr(StwTrace) b = load_fixture("traces/mini-reordered.json", NULL);
  g_assert_nonnull(a);
  g_assert_nonnull(b);
  g_autofree char *da = stw_trace_digest(a);
  g_autofree char *db = stw_trace_digest(b);
  g_assert_cmpuint(strlen(da), ==, 64);
  g_assert_cmpstr(da, ==, db);  /* key order, spacing and source do not matter */
  g_test_message("mini digest %s", da);
  g_assert_cmpstr(da, ==, MINI_DIGEST);
  /* a change of any planning-relevant value does */
  g_array_index(b->ops, StwOp, 0).nonmodel_peak_bytes++;
  g_autofree char *dc = stw_trace_digest(b);
  g_assert_cmpstr(da, !=, dc);
}

static void
test_roundtrip(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 2, 64, TRUE);
  GError *error = NULL;
  g_autofree char *text = stw_trace_to_string(t, &error);
  g_assert_no_error(error);
  g_autoptr(StwTrace) back = stw_trace_parse("mem.json", text, strlen(text), &error);
  g_assert_no_error(error);
  g_autofree char *d1 = stw_trace_digest(t);
  g_autofree char *d2 = stw_trace_digest(back);
  g_assert_cmpstr(d1, ==, d2);
  g_autofree char *again = stw_trace_to_string(back, &error);
  g_assert_cmpstr(text, ==, again);  /* writing is a fixed point */
  g_assert_true(back->model.has_config);
  g_assert_cmpuint(back->model.config.hidden, ==, 768);
  g_assert_true(back->model.checkpointing);
  const StwTensor *wte = stw_trace_tensor(back, 0);
  g_assert_cmpuint(wte->aliases->len, ==, 1);
  g_assert_cmpstr(wte->aliases->pdata[0], ==, "lm_head.weight");
}

/* Blocks: written as version 2 (a trace without them stays version 1), read back, and refused
 * where they do not fit the ops, each at its JSON path. */
static void
test_blocks(void)
{
  g_autoptr(StwTrace) t = stw_test_synth("gpt2", 2, 64, FALSE);
  g_assert_cmpuint(t->blocks->len, ==, 12);
  GError *error = NULL;
  g_autofree char *text = stw_trace_to_string(t, &error);
  g_assert_no_error(error);
  g_assert_nonnull(strstr(text, "\"version\": 2,"));
  g_autoptr(StwTrace) back = stw_trace_parse("mem.json", text, strlen(text), &error);
  g_assert_no_error(error);
  const StwBlock *b = &g_array_index(back->blocks, StwBlock, 0);
  g_assert_cmpstr(b->name, ==, "h0");
  g_assert_cmpuint(b->fwd_first, ==, 1);
  g_assert_cmpuint(b->bwd_last, ==, 198);
  g_assert_cmpuint(b->saved_bytes, ==, 3344384);
  static const struct {
    const char *from, *to, *needle;
  } cases[] = {
    { "\"version\": 2,", "\"version\": 1,",
      "mem.json: $.blocks: blocks are version 2's, and the trace says version 1" },
    { "\"forward\":[1,8]", "\"forward\":[1,100]", "mem.json: $.blocks[0].forward: op 100 "
      "(loss.bwd) is a bwd op, and a block's forward ops are all fwd" },
    { "\"forward\":[9,16]", "\"forward\":[8,16]", "mem.json: $.blocks[1].forward: ops [8, "
      "16] begin before block h0's forward ends (op 8): blocks are listed in order, their ops "
      "apart" },
    { "\"backward\":[183,190]", "\"backward\":[183,191]", "mem.json: $.blocks[1].backward: "
      "ops [183, 191] interleave block h0's backward [191, 198]" },
    { "\"backward\":[191,198]", "\"backward\":[191,9999]", "mem.json: $.blocks[0].backward: "
      "ops [191, 9999] are not a range of the trace's 348 ops" },
    { "\"forward\":[1,8]", "\"forward\":[1]", "mem.json: $.blocks[0].forward: expected "
      "[first, last]: two op indices" },
    { "\"input_bytes\":196608", "\"input_bytes\":-1", "mem.json: $.blocks[0].input_bytes" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_assert_nonnull(strstr(text, cases[i].from));
    g_autoptr(GString) bad = g_string_new(text);
    g_string_replace(bad, cases[i].from, cases[i].to, 1);
    g_autoptr(StwTrace) x = stw_trace_parse("mem.json", bad->str, bad->len, &error);
    g_assert_null(x);
    stw_assert_error_contains(error, cases[i].needle);
  }
  /* a version-2 file (tests/fixtures/traces/blocks.json: synth of tiny-gpt, 2 layers) */
  g_autoptr(StwTrace) f = load_fixture("traces/blocks.json", NULL);
  g_assert_cmpuint(f->blocks->len, ==, 2);
  g_assert_cmpstr(g_array_index(f->blocks, StwBlock, 1).name, ==, "h1");
  g_assert_cmpuint(g_array_index(f->blocks, StwBlock, 1).saved_bytes, ==, 33920);
  /* without blocks, version 1, as before them */
  g_array_set_size(t->blocks, 0);
  g_autofree char *v1 = stw_trace_to_string(t, &error);
  g_assert_nonnull(strstr(v1, "\"version\": 1,"));
  g_assert_null(strstr(v1, "\"blocks\""));
}

static void
test_save_atomic(void)
{
  g_autoptr(StwTrace) t = load_fixture("traces/mini.json", NULL);
  g_autofree char *dir = g_dir_make_tmp("stw-trace-XXXXXX", NULL);
  g_autofree char *file = g_build_filename(dir, "t.json", NULL);
  GError *error = NULL;
  g_assert_true(stw_trace_save(t, file, &error));
  g_autoptr(StwTrace) back = stw_trace_load(file, &error);
  g_assert_no_error(error);
  /* an invalid trace is refused before anything is written */
  g_array_index(t->ops, StwOp, 0).nonmodel_peak_bytes = 0;
  g_assert_false(stw_trace_save(t, file, &error));
  stw_assert_error_contains(error, "$.ops[0].nonmodel_peak_bytes: 0 is below nonmodel_bytes 64");
  g_autoptr(StwTrace) still = stw_trace_load(file, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(stw_trace_op(still, 0)->nonmodel_peak_bytes, ==, 128);
  g_unlink(file);
  g_rmdir(dir);
}

static void
test_bad_files(void)
{
  static const struct {
    const char *file;
    const char *needle;
  } cases[] = {
    { "bad-truncated.json", "not valid JSON (line 48, column 19, the file ends too early)" },
    { "bad-not-json.json", "not valid JSON (line 1, column 1)" },
    { "bad-empty.json", "the file is empty" },
    { "bad-top-array.json", "$: expected an object, found an array" },
    { "bad-format.json", "$.format: this is a stowage plan (\"stowage-plan\"), not a stowage trace" },
    /* a real plan (stowage plan mini.json --gpu 2240), where a trace is expected */
    { "bad-is-plan.json", "$.format: this is a stowage plan (\"stowage-plan\"), not a stowage trace: give each file where its kind is expected" },
    { "bad-no-tensors.json", "$.tensors: a trace needs at least one model tensor" },
    { "bad-total-duration.json", "$.ops[2].duration_ns: the ops' durations add up to more than 2^53 ns (104 days) by this op" },
    { "bad-huge-flops.json", "$.ops[0].flops: 9007199254740994 is out of range (expected 0 to 9007199254740992)" },
    { "bad-version.json", "$.version: unsupported version 3 (this stowage reads versions 1 to 2)" },
    { "bad-blocks-interleave.json", "$.blocks[1].backward: ops [23, 31] interleave block h0's backward [31, 38]" },
    { "bad-missing-ops.json", "$: missing required member \"ops\"" },
    { "bad-ops-type.json", "$.ops: expected an array, found an object" },
    { "bad-unknown-tensor.json", "$.ops[1].params[1]: tensor id 7 does not exist (the trace has 2 tensors)" },
    { "bad-negative.json", "$.ops[0].nonmodel_bytes: -5 is out of range" },
    { "bad-overflow.json", "$.ops[0].nonmodel_peak_bytes: 1.0000000000000001e+300 is out of range (expected 0 to 9007199254740992)" },
    { "bad-fraction.json", "$.ops[0].duration_ns: expected an integer, found 1.5" },
    { "bad-string-number.json", "$.model.batch: expected an integer, found a string" },
    { "bad-peak-below-start.json", "$.ops[1].nonmodel_peak_bytes: 100 is below nonmodel_bytes 128" },
    { "bad-numel.json", "$.tensors[0].numel: 17 does not match the shape's product 16" },
    { "bad-huge-numel.json", "$.tensors[0].numel: 1.152921504606847e+18 is out of range" },
    { "bad-zero-dim.json", "$.tensors[1].shape[0]: 0 is out of range" },
    { "bad-too-many-dims.json", "$.tensors[1].shape: more than 8 elements" },
    { "bad-duplicate-name.json", "$.tensors[1]: the name \"fc.weight\" is used twice" },
    { "bad-tensor-id.json", "$.tensors[1].id: expected 1: tensors are listed in id order" },
    { "bad-repeated-param.json", "$.ops[0].params[1]: tensor id 1 is listed twice" },
    { "bad-stage-order.json", "$.ops[4].stage: a fwd op after optim ops" },
    { "bad-grads-in-fwd.json", "$.ops[0].grads: only bwd ops write gradients" },
    { "bad-stage-name.json", "$.ops[0].stage: \"sideways\" is not one of \"fwd\", \"bwd\", \"optim\"" },
    { "bad-unknown-member.json", "$.ops[0]: unknown member \"nonmodel_byts\"" },
    { "bad-dtype.json", "$.tensors[0].dtype: \"fp8\" is not one of \"fp32\", \"fp16\", \"bf16\"" },
    { "bad-rank.json", "$.device.rank: rank 2 is not below world_size 2" },
    { "bad-no-ops.json", "$.ops: a trace needs at least one op" },
    { "bad-source-kind.json", "$.source.kind: \"guess\" is not one of" },
    { "bad-model-config.json", "$.model.config: invalid model: heads must divide hidden" },
    { "bad-duplicate-key.json", "$: member \"version\" appears twice" },
    { "bad-frozen-grad.json", "$.ops[1].grads[1]: tensor fc.bias is frozen: it has no gradient" },
    { "bad-frozen-optim.json", "$.ops[4].params[1]: tensor fc.bias is frozen: no optimizer op steps it" },
    { "bad-micro-steps-chunks.json", "$.model.micro_steps: 2 micro-steps need the gradients apart from the parameters (\"gradients\": \"framework\"): written into the parameters' chunks, they would be what the next micro-step's forward reads" },
    { "bad-micro-steps-count.json", "$.model.micro_steps: 3, but the ops hold 2 forward-backward runs" },
    { "bad-fwd-after-bwd.json", "$.ops[2].stage: a fwd op after bwd ops begins forward-backward run 2, and the trace has 1 (model.micro_steps: a trace of gradient accumulation says how many)" },
    { "bad-gradients.json", "$.model.gradients: \"somewhere\" is not one of \"chunks\", \"framework\"" },
    { "bad-kernels.json", "$.model.kernels: \"jit\" is not one of \"fused\", \"eager\"" },
    { "bad-loss.json", "$.model.loss: \"sliced\" is not one of \"full\", \"chunked\"" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *name = g_strconcat("traces/", cases[i].file, NULL);
    g_autofree char *path = stw_test_fixture(name);
    GError *error = NULL;
    g_test_message("%s", cases[i].file);
    StwTrace *t = stw_trace_load(path, &error);
    g_assert_null(t);
    g_assert_nonnull(error);
    /* every message starts with the file it is about */
    g_assert_true(g_str_has_prefix(error->message, path));
    stw_assert_error_contains(error, cases[i].needle);
  }
}

/* Counts beyond the limits are refused before anything is allocated for them. */
static void
test_absurd_counts(void)
{
  GString *s = g_string_new("{\"format\":\"stowage-trace\",\"version\":1,"
                            "\"source\":{\"kind\":\"runtime\"},\"model\":{\"name\":\"m\"},"
                            "\"device\":{\"name\":\"d\",\"memory_bytes\":1},"
                            "\"tensors\":[{\"id\":0,\"name\":\"w\",\"shape\":[1],\"numel\":1,"
                            "\"dtype\":\"fp32\"}],\"ops\":[{\"name\":\"o\",\"stage\":\"fwd\","
                            "\"grads\":[],\"nonmodel_bytes\":0,\"nonmodel_peak_bytes\":0,"
                            "\"duration_ns\":0,\"params\":[");
  for (guint i = 0; i <= STW_TRACE_MAX_OP_TENSORS; i++)
    g_string_append(s, i ? ",0" : "0");
  g_string_append(s, "]}]}");
  GError *error = NULL;
  StwTrace *t = stw_trace_parse("many.json", s->str, s->len, &error);
  g_assert_null(t);
  stw_assert_error_contains(error, "many.json: $.ops[0].params: more than 65536 elements");
  g_string_free(s, TRUE);
}

/* Gradient accumulation and frozen tensors: read, written back the same, in the digest only
 * where they are not the defaults (mini's digest above does not move). */
static void
test_accumulate(void)
{
  GError *error = NULL;
  g_autoptr(StwTrace) t = load_fixture("traces/accumulate.json", &error);
  g_assert_no_error(error);
  g_assert_cmpuint(t->model.micro_steps, ==, 2);
  g_assert_cmpuint(stw_trace_micro_steps(t), ==, 2);
  g_assert_cmpint(t->model.gradients, ==, STW_GRADIENTS_FRAMEWORK);
  g_assert_false(stw_trace_tensor(t, 0)->frozen);
  g_assert_true(stw_trace_tensor(t, 1)->frozen);
  guint64 numel = 0;
  g_assert_cmpuint(stw_trace_frozen(t, &numel), ==, 1);
  g_assert_cmpuint(numel, ==, 4);
  g_autofree char *text = stw_trace_to_string(t, &error);
  g_assert_no_error(error);
  g_assert_nonnull(strstr(text, "\"micro_steps\":2,\"gradients\":\"framework\""));
  g_assert_nonnull(strstr(text, "\"dtype\":\"fp32\",\"frozen\":true}"));
  g_autoptr(StwTrace) again = stw_trace_parse("again", text, strlen(text), &error);
  g_assert_no_error(error);
  g_autofree char *d1 = stw_trace_digest(t), *d2 = stw_trace_digest(again);
  g_assert_cmpstr(d1, ==, d2);
  /* each of them is in the digest */
  g_array_index(again->tensors, StwTensor, 1).frozen = FALSE;
  g_autofree char *d3 = stw_trace_digest(again);
  g_assert_cmpstr(d1, !=, d3);
  again->model.amsgrad = TRUE;
  g_autofree char *amsgrad = stw_trace_to_string(again, &error);
  g_assert_nonnull(strstr(amsgrad, "\"gradients\":\"framework\",\"amsgrad\":true}"));
  g_autoptr(StwTrace) back = stw_trace_parse("amsgrad", amsgrad, strlen(amsgrad), &error);
  g_assert_no_error(error);
  g_assert_true(back->model.amsgrad);
  g_autofree char *d4 = stw_trace_digest(back);
  g_assert_cmpstr(d3, !=, d4);
  /* bf16 moments: written, read back, in the digest; any other dtype refused, naming the field */
  back->model.state_dtype = STW_DTYPE_BF16;
  g_autofree char *bf16 = stw_trace_to_string(back, &error);
  g_assert_nonnull(strstr(bf16, "\"amsgrad\":true,\"optimizer_state\":\"bf16\"}"));
  g_autoptr(StwTrace) bf = stw_trace_parse("bf16", bf16, strlen(bf16), &error);
  g_assert_no_error(error);
  g_assert_cmpint(bf->model.state_dtype, ==, STW_DTYPE_BF16);
  g_autofree char *d5 = stw_trace_digest(bf);
  g_assert_cmpstr(d4, !=, d5);
  g_autofree char *fp16 = g_strdup(bf16);
  memcpy(strstr(fp16, "\"bf16\"}") + 1, "fp16", 4);
  g_assert_null(stw_trace_parse("fp16.json", fp16, strlen(fp16), &error));
  stw_assert_error_contains(error, "$.model.optimizer_state: \"fp16\" is not one of \"fp32\", "
                            "\"bf16\"");
  g_clear_error(&error);
  g_autoptr(StwTrace) mini = load_fixture("traces/mini.json", NULL);
  g_autofree char *mtext = stw_trace_to_string(mini, &error);
  g_assert_null(strstr(mtext, "amsgrad"));
  g_assert_null(strstr(mtext, "optimizer_state"));
  g_assert_null(strstr(mtext, "micro_steps"));
  g_assert_null(strstr(mtext, "gradients"));
  g_assert_null(strstr(mtext, "frozen"));
}

/* stw_trace_freeze: by name or alias, out of the gradients and the optimizer's ops. */
static void
test_freeze(void)
{
  GError *error = NULL;
  g_autoptr(StwTrace) t = load_fixture("traces/mini.json", &error);
  g_assert_no_error(error);
  guint32 n = 0;
  g_assert_true(stw_trace_freeze(t, "fc.b*", &n, &error));
  g_assert_cmpuint(n, ==, 1);
  g_assert_true(stw_trace_tensor(t, 1)->frozen);
  g_assert_cmpuint(t->ops->len, ==, 3); /* adam.fc.bias is gone */
  g_assert_cmpuint(stw_trace_op(t, 1)->n_grads, ==, 1);
  g_assert_cmpuint(stw_trace_op(t, 1)->grads[0], ==, 0);
  g_assert_true(stw_trace_validate(t, "frozen", &error));
  /* again, and both: the weight's optimizer op goes too, nothing is frozen twice */
  g_assert_true(stw_trace_freeze(t, "fc.bias, fc.weight", &n, &error));
  g_assert_cmpuint(n, ==, 1);
  g_assert_cmpuint(t->ops->len, ==, 2);
  g_assert_true(stw_trace_validate(t, "frozen", &error));
  g_assert_false(stw_trace_freeze(t, "lm_head.*", &n, &error));
  stw_assert_error_contains(error, "--freeze: \"lm_head.*\" matches none of the 2 tensors (names "
                            "such as fc.bias; '*' matches any text)");
  g_clear_error(&error);
  g_assert_false(stw_trace_freeze(t, "fc.weight,,", &n, &error));
  stw_assert_error_contains(error, "--freeze: an empty pattern in \"fc.weight,,\"");
}

/* The profiled process's own memory, on the host and on the GPU: written only where measured
 * (the traces before it keep their digests), read back, in the digest, and refused where it is
 * not a positive count. */
static void
test_process_bytes(void)
{
  GError *error = NULL;
  g_autoptr(StwTrace) t = load_fixture("traces/mini.json", &error);
  g_assert_no_error(error);
  g_assert_cmpuint(t->device.process_bytes, ==, 0);
  g_autofree char *before = stw_trace_to_string(t, &error);
  g_assert_null(strstr(before, "process_bytes"));
  g_autofree char *digest = stw_trace_digest(t);
  g_assert_cmpstr(digest, ==, MINI_DIGEST);
  t->device.process_bytes = 734003200;
  g_autofree char *text = stw_trace_to_string(t, &error);
  g_assert_nonnull(strstr(text, "\"process_bytes\":734003200"));
  g_autoptr(StwTrace) back = stw_trace_parse("again.json", text, strlen(text), &error);
  g_assert_no_error(error);
  g_assert_cmpuint(back->device.process_bytes, ==, 734003200);
  g_autofree char *measured = stw_trace_digest(back);
  g_assert_cmpstr(measured, !=, MINI_DIGEST);
  const char *bad[][2] = {
    { "0", "$.device.process_bytes: 0 is out of range" },
    { "\"700MiB\"", "$.device.process_bytes: expected an integer" },
  };
  for (guint k = 0; k < G_N_ELEMENTS(bad); k++) {
    g_autoptr(GString) s = g_string_new(text);
    g_string_replace(s, "734003200", bad[k][0], 1);
    g_assert_null(stw_trace_parse("bad.json", s->str, s->len, &error));
    stw_assert_error_contains(error, bad[k][1]);
    g_clear_error(&error);
  }
  /* the process's GPU memory outside its tensors, the same way */
  back->device.gpu_process_bytes = 536870912;
  g_autofree char *gpu = stw_trace_to_string(back, &error);
  g_assert_nonnull(strstr(gpu, "\"gpu_process_bytes\":536870912"));
  g_autoptr(StwTrace) again = stw_trace_parse("gpu.json", gpu, strlen(gpu), &error);
  g_assert_no_error(error);
  g_assert_cmpuint(again->device.gpu_process_bytes, ==, 536870912);
  g_autofree char *gpu_digest = stw_trace_digest(again);
  g_assert_cmpstr(gpu_digest, !=, measured);
  const char *bad_gpu[][2] = {
    { "0", "$.device.gpu_process_bytes: 0 is out of range" },
    { "-1", "$.device.gpu_process_bytes: -1 is out of range" },
    { "\"512MiB\"", "$.device.gpu_process_bytes: expected an integer" },
  };
  for (guint k = 0; k < G_N_ELEMENTS(bad_gpu); k++) {
    g_autoptr(GString) s = g_string_new(gpu);
    g_string_replace(s, "536870912", bad_gpu[k][0], 1);
    g_assert_null(stw_trace_parse("bad.json", s->str, s->len, &error));
    stw_assert_error_contains(error, bad_gpu[k][1]);
    g_clear_error(&error);
  }
}

static void
test_validate_built(void)
{
  g_autoptr(StwTrace) t = stw_trace_new();
  guint64 shape[] = { 3, 5 };
  guint32 w = stw_trace_add_tensor(t, "w", STW_DTYPE_BF16, shape, 2);
  g_assert_cmpuint(stw_trace_tensor(t, w)->numel, ==, 15);
  GError *error = NULL;
  g_assert_false(stw_trace_validate(t, "built", &error));
  stw_assert_error_contains(error, "built: $.ops: a trace needs at least one op");
  stw_trace_add_op(t, "f", STW_STAGE_FWD, &w, 1, NULL, 0);
  g_assert_true(stw_trace_validate(t, "built", &error));
  stw_trace_add_op(t, "b", STW_STAGE_BWD, &w, 1, &w, 1);
  g_assert_true(stw_trace_validate(t, "built", &error));
  t->device.world_size = 4;
  t->device.rank = 4;
  g_assert_false(stw_trace_validate(t, "built", &error));
  stw_assert_error_contains(error, "rank 4 is not below world_size 4");
  t->device.rank = 0;
  /* what the reader refuses, a writer refuses too: a name over 1,024 bytes, an op of more than
   * 65,536 tensors */
  g_autofree char *long_name = g_strnfill(STW_TRACE_MAX_NAME + 1, 'x');
  stw_trace_add_op(t, long_name, STW_STAGE_OPTIM, &w, 1, NULL, 0);
  g_assert_false(stw_trace_validate(t, "built", &error));
  stw_assert_error_contains(error, "built: $.ops[2].name: 1025 bytes, more than the 1024 a name "
                            "holds");
  g_array_set_size(t->ops, 2);
  g_autofree guint32 *many = g_new0(guint32, STW_TRACE_MAX_OP_TENSORS + 1);
  StwOp *op = stw_trace_add_op(t, "many", STW_STAGE_OPTIM, many, 1, NULL, 0);
  op->n_params = STW_TRACE_MAX_OP_TENSORS + 1; /* (a list the builder was handed) */
  g_free(op->params);
  op->params = g_steal_pointer(&many);
  g_assert_false(stw_trace_validate(t, "built", &error));
  stw_assert_error_contains(error, "built: $.ops[2].params: more than 65536 tensor ids");
  g_array_set_size(t->ops, 2);
  g_free(g_array_index(t->tensors, StwTensor, 0).name);
  g_array_index(t->tensors, StwTensor, 0).name = g_strnfill(2000, 'w');
  g_assert_false(stw_trace_validate(t, "built", &error));
  stw_assert_error_contains(error, "built: $.tensors[0].name: 2000 bytes, more than the 1024");
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/trace/load-mini", test_load_mini);
  g_test_add_func("/trace/digest-canonical", test_digest_canonical);
  g_test_add_func("/trace/roundtrip", test_roundtrip);
  g_test_add_func("/trace/blocks", test_blocks);
  g_test_add_func("/trace/save-atomic", test_save_atomic);
  g_test_add_func("/trace/bad-files", test_bad_files);
  g_test_add_func("/trace/absurd-counts", test_absurd_counts);
  g_test_add_func("/trace/validate-built", test_validate_built);
  g_test_add_func("/trace/accumulate", test_accumulate);
  g_test_add_func("/trace/freeze", test_freeze);
  g_test_add_func("/trace/process-bytes", test_process_bytes);
  return g_test_run();
}

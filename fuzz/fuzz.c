/* fuzz.c — libFuzzer targets for everything stowage reads: one binary per target, chosen at
 * compile time with -DTARGET_<NAME>. Every input must give either a value or a GError, never a
 * crash, a sanitizer report or unbounded allocation. Run them with fuzz/run.sh. */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include <stowage/check.h>
#include <stowage/events-build.h>
#include <stowage/hardware.h>
#include <stowage/import.h>
#include <stowage/model.h>
#include <stowage/plan.h>
#include <stowage/trace.h>
#include <stowage/trainer.h>
#include <stowage/units.h>

#ifdef TARGET_HF
#include "json.h"

/* Every input through the Hugging Face reader, whatever its members say. */
static gboolean
read_as_hf(StwJsonReader *r, const cJSON *root, gpointer out, GError **error)
{
  return stw_model_config_read_hf(r, root, out, error);
}
#endif

/* the trace that plans are checked against (tests/fixtures/traces/mini.json) */
static const char mini[] =
    "{\"format\":\"stowage-trace\",\"version\":1,\"source\":{\"kind\":\"synthetic\"},"
    "\"model\":{\"name\":\"mini\",\"batch\":1,\"seq\":4},\"device\":{\"name\":\"test-gpu\","
    "\"memory_bytes\":1073741824},\"tensors\":[{\"id\":0,\"name\":\"fc.weight\",\"shape\":[4,4],"
    "\"numel\":16,\"dtype\":\"fp16\"},{\"id\":1,\"name\":\"fc.bias\",\"shape\":[4],\"numel\":4,"
    "\"dtype\":\"fp16\"}],\"ops\":[{\"name\":\"fc\",\"stage\":\"fwd\",\"params\":[0,1],\"grads\":[],"
    "\"nonmodel_bytes\":64,\"nonmodel_peak_bytes\":128,\"duration_ns\":1000,\"flops\":128},"
    "{\"name\":\"fc.bwd\",\"stage\":\"bwd\",\"params\":[0],\"grads\":[0,1],\"nonmodel_bytes\":128,"
    "\"nonmodel_peak_bytes\":192,\"duration_ns\":2000},{\"name\":\"adam.fc.weight\",\"stage\":"
    "\"optim\",\"params\":[0],\"grads\":[],\"nonmodel_bytes\":0,\"nonmodel_peak_bytes\":0,"
    "\"duration_ns\":100},{\"name\":\"adam.fc.bias\",\"stage\":\"optim\",\"params\":[1],"
    "\"grads\":[],\"nonmodel_bytes\":0,\"nonmodel_peak_bytes\":0,\"duration_ns\":100}]}";

#if defined(TARGET_CHECKPOINT) || defined(TARGET_TEXT)
/* A trainer small enough to make per input: 1 block of width 8, 2 heads, 4 tokens, batch 1. */
static StwTrainer *
tiny_trainer(const guint8 *text, gsize len, StwBackend *be, GError **error)
{
  StwTrainerConfig c;
  stw_trainer_config_init(&c);
  c.layers = 1;
  c.width = 8;
  c.heads = 2;
  c.context = 4;
  c.batch = 1;
  StwRuntimeOptions ro = { .mode = STW_RUNTIME_PROFILE, .device_bytes = 1u << 24 };
  return stw_trainer_new(&c, text, len, &ro, be, error);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  GError *error = NULL;
  const char *text = (const char *)data;
#if defined(TARGET_TRACE)
  StwTrace *t = stw_trace_parse("fuzz", text, size, &error);
  if (t != NULL) {
    g_free(stw_trace_digest(t));
    g_free(stw_trace_to_string(t, NULL));
    stw_trace_free(t);
  }
#elif defined(TARGET_PLAN)
  StwPlan *p = stw_plan_parse("fuzz", text, size, &error);
  if (p != NULL) {
    StwTrace *t = stw_trace_parse("mini", mini, sizeof mini - 1, NULL);
    GError *e2 = NULL;
    if (stw_plan_check(p, t, "fuzz", NULL, NULL, &e2))
      g_free(stw_plan_to_string(p, t));
    g_clear_error(&e2);
    stw_trace_free(t);
    stw_plan_free(p);
  }
#elif defined(TARGET_HARDWARE)
  StwHardware hw;
  stw_hardware_parse("fuzz", text, size, &hw, &error);
#elif defined(TARGET_MODEL)
  StwModelConfig cfg;
  if (stw_model_config_parse("fuzz", text, size, &cfg, &error) && cfg.layers <= 4 &&
      cfg.hidden <= 4096 && cfg.vocab <= 65536)
    (void)stw_model_param_count(&cfg);
#elif defined(TARGET_HF)
  /* a config.json read as transformers reads it, its parameters counted in checked arithmetic
   * at any size the reader lets through (a model past 2^53 parameters is refused, not wrapped) */
  static const StwJsonLimits limits = { .max_values = 1u << 16, .max_array = 1u << 12 };
  StwModelConfig cfg;
  if (stw_json_read_text("fuzz", text, size, &limits, read_as_hf, &cfg, &error))
    (void)stw_model_param_count(&cfg);
#elif defined(TARGET_SIZE)
  char *s = g_strndup(text, MIN(size, 256));
  guint64 v;
  stw_size_parse(s, &v, &error);
  g_free(s);
#elif defined(TARGET_EVENTS)
  StwEvents *e = stw_events_parse("fuzz", text, size, &error);
  if (e != NULL) {
    StwEventsOptions o;
    stw_events_options_init(&o);
    StwTrace *t = stw_events_build(e, &o, NULL, NULL);
    stw_trace_free(t);
    o.iteration_range = "";
    t = stw_events_build(e, &o, NULL, NULL);
    stw_trace_free(t);
    stw_events_free(e);
  }
#elif defined(TARGET_CHECKPOINT)
  /* a checkpoint from anywhere, for a trainer on a fixed text */
  static const char words[] = "a checkpoint is data from outside: every field is checked.";
  StwBackend *be = stw_backend_host_new();
  StwTrainer *t = tiny_trainer((const guint8 *)words, sizeof words - 1, be, NULL);
  if (t != NULL && stw_trainer_load_data(t, "fuzz", data, size, &error)) {
    float loss;
    stw_trainer_step(t, &loss, NULL);
  }
  stw_trainer_free(t);
  be->free(be);
#elif defined(TARGET_TEXT)
  /* any bytes as the training text: two steps over them */
  StwBackend *be = stw_backend_host_new();
  StwTrainer *t = tiny_trainer(data, size, be, &error);
  float loss;
  for (int i = 0; t != NULL && i < 2 && stw_trainer_step(t, &loss, &error); i++)
    ;
  stw_trainer_free(t);
  be->free(be);
#elif defined(TARGET_IMPORT)
  /* the importer reads files: the input goes to one, read as a Kineto trace by the last
   * iteration and by the whole trace, and as an execution trace and a memory timeline beside
   * the hand-made Kineto trace */
  static char *path = NULL;
  if (path == NULL) {
    int fd = g_file_open_tmp("stw-fuzz-import-XXXXXX.json", &path, NULL);
    if (fd >= 0)
      close(fd);
  }
  if (path == NULL || !g_file_set_contents(path, text, (gssize)size, NULL))
    return 0;
  StwImportOptions o;
  stw_import_options_init(&o);
  for (int pass = 0; pass < 4; pass++) {
    const char *main_file = pass < 2 ? path : "tests/fixtures/pytorch/tied-kineto.json";
    o.iteration = pass == 1 ? STW_IMPORT_WHOLE : STW_IMPORT_LAST;
    o.et_file = pass == 2 ? path : NULL;
    o.timeline_file = pass == 3 ? path : NULL;
    o.params_from_memory = pass == 1;
    StwTrace *t = stw_import(main_file, &o, NULL, &error);
    stw_trace_free(t);
    g_clear_error(&error);
  }
#else
#error "compile with -DTARGET_TRACE, _PLAN, _HARDWARE, _MODEL, _HF, _SIZE, _EVENTS, _CHECKPOINT, _TEXT or _IMPORT"
#endif
  g_clear_error(&error);
  return 0;
}

/* test-json.c — checked JSON reading with paths, exact writing. */
#include "config.h"

#include <glib.h>
#include <glib/gstdio.h>

#include <stowage/files.h>

#include "json-stream.h"
#include "json.h"

#include <gio/gio.h>
#include "testutil.h"

static cJSON *
parse(const char *text)
{
  cJSON *root = NULL;
  GError *error = NULL;
  g_assert_true(stw_json_parse_text("t.json", text, strlen(text), NULL, &root, &error));
  g_assert_no_error(error);
  return root;
}

static void
test_syntax_errors(void)
{
  static const struct {
    const char *text;
    const char *needle;
  } cases[] = {
    { "{\"a\": 1,\n \"b\": }", "t.json: not valid JSON (line 2, column 7)" },
    { "{\"a\": [1, 2", "the file ends too early" },
    { "{} {}", "unexpected text after the JSON value" },
    { "nul", "not valid JSON" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    cJSON *root = NULL;
    GError *error = NULL;
    g_assert_false(stw_json_parse_text("t.json", cases[i].text, strlen(cases[i].text), NULL, &root,
                                       &error));
    g_assert_error(error, STW_JSON_ERROR, STW_JSON_ERROR_SYNTAX);
    stw_assert_error_contains(error, cases[i].needle);
    g_assert_null(root);
  }
  /* deep nesting is refused by the parser, not by the stack */
  GString *deep = g_string_new(NULL);
  for (int i = 0; i < 100000; i++)
    g_string_append_c(deep, '[');
  cJSON *root = NULL;
  GError *error = NULL;
  g_assert_false(stw_json_parse_text("deep.json", deep->str, deep->len, NULL, &root, &error));
  stw_assert_error_contains(error, "deep.json: not valid JSON");
  g_string_free(deep, TRUE);
}

/* A NUL escape would end a name early, so that "a\u0000x" and "a\u0000y" become one name:
 * refused with its line; an escaped backslash before "u0000" is text, and reads. */
static void
test_nul_escape(void)
{
  cJSON *root = NULL;
  GError *error = NULL;
  const char *nul = "{\"names\": [\"a\",\n \"a\\u0000x\"]}";
  g_assert_false(stw_json_parse_text("t.json", nul, strlen(nul), NULL, &root, &error));
  stw_assert_error_contains(error, "t.json: line 2: a NUL character (\\u0000) in a string, which "
                                   "no name or text of stowage's may hold");
  g_clear_error(&error);
  const char *text = "{\"names\": [\"a\\\\u0000x\"]}";
  g_assert_true(stw_json_parse_text("t.json", text, strlen(text), NULL, &root, &error));
  g_assert_cmpstr(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "names"), 0)->valuestring, ==,
                  "a\\u0000x");
  cJSON_Delete(root);
}

static void
test_file_errors(void)
{
  cJSON *root = NULL;
  GError *error = NULL;
  g_assert_false(stw_json_parse_file("/nonexistent/x.json", 100, NULL, &root, &error));
  g_assert_error(error, STW_FILES_ERROR, STW_FILES_ERROR_IO);
  stw_assert_error_contains(error, "/nonexistent/x.json: cannot open");

  g_autofree char *dir = g_dir_make_tmp("stw-json-XXXXXX", NULL);
  g_autofree char *empty = g_build_filename(dir, "empty.json", NULL);
  g_assert_true(g_file_set_contents(empty, "", 0, NULL));
  g_assert_false(stw_json_parse_file(empty, 100, NULL, &root, &error));
  stw_assert_error_contains(error, "the file is empty");

  g_autofree char *big = g_build_filename(dir, "big.json", NULL);
  g_assert_true(g_file_set_contents(big, "[1,2,3,4,5,6,7,8]", -1, NULL));
  g_assert_false(stw_json_parse_file(big, 8, NULL, &root, &error));
  stw_assert_error_contains(error, "more than the limit of 8 bytes");

  g_assert_false(stw_json_parse_file(dir, 100, NULL, &root, &error));
  stw_assert_error_contains(error, "not a regular file");
  g_unlink(empty);
  g_unlink(big);
  g_rmdir(dir);
}

static void
test_reader_paths(void)
{
  cJSON *root = parse("{\"ops\": [{\"n\": 1}, {\"n\": -2, \"s\": 5, \"x\": 1.5, \"b\": 1e300}]}");
  StwJsonReader r;
  stw_json_reader_init(&r, "t.json");
  const cJSON *ops = NULL;
  GError *error = NULL;
  guint64 v = 0;
  g_assert_true(stw_json_get_array(&r, root, "ops", TRUE, 10, &ops, &error));
  gsize saved = stw_json_push_key(&r, "ops");
  gsize s2 = stw_json_push_index(&r, 1);
  const cJSON *op = cJSON_GetArrayItem(ops, 1);
  g_assert_false(stw_json_get_u64(&r, op, "n", TRUE, 0, 100, &v, &error));
  stw_assert_error_contains(error, "t.json: $.ops[1].n: -2 is out of range (expected 0 to 100)");
  g_assert_false(stw_json_get_u64(&r, op, "x", TRUE, 0, 100, &v, &error));
  stw_assert_error_contains(error, "$.ops[1].x: expected an integer, found 1.5");
  g_assert_false(stw_json_get_u64(&r, op, "b", TRUE, 0, G_MAXUINT64, &v, &error));
  stw_assert_error_contains(error, "$.ops[1].b: 1.0000000000000001e+300 is out of range");
  g_assert_false(stw_json_get_string(&r, op, "s", TRUE, 10, NULL, &error));
  stw_assert_error_contains(error, "$.ops[1].s: expected a string, found a number");
  g_assert_false(stw_json_get_u64(&r, op, "missing", TRUE, 0, 1, &v, &error));
  stw_assert_error_contains(error, "$.ops[1]: missing required member \"missing\"");
  v = 77;
  g_assert_true(stw_json_get_u64(&r, op, "missing", FALSE, 0, 1, &v, &error));
  g_assert_cmpuint(v, ==, 77);
  stw_json_pop(&r, s2);
  stw_json_pop(&r, saved);
  g_assert_cmpstr(r.path->str, ==, "$");
  g_assert_false(stw_json_get_array(&r, root, "ops", TRUE, 1, &ops, &error));
  stw_assert_error_contains(error, "$.ops: more than 1 elements");
  stw_json_reader_clear(&r);
  cJSON_Delete(root);
}

static void
test_check_object(void)
{
  static const char *const allowed[] = { "a", "b", NULL };
  StwJsonReader r;
  stw_json_reader_init(&r, "t.json");
  GError *error = NULL;
  cJSON *ok = parse("{\"a\": 1}");
  g_assert_true(stw_json_check_object(&r, ok, allowed, &error));
  cJSON *unknown = parse("{\"a\": 1, \"c\": 2}");
  g_assert_false(stw_json_check_object(&r, unknown, allowed, &error));
  stw_assert_error_contains(error, "unknown member \"c\" (expected one of: a, b)");
  cJSON *twice = parse("{\"a\": 1, \"b\": 2, \"a\": 3}");
  g_assert_false(stw_json_check_object(&r, twice, allowed, &error));
  stw_assert_error_contains(error, "member \"a\" appears twice");
  cJSON *array = parse("[1]");
  g_assert_false(stw_json_check_object(&r, array, allowed, &error));
  stw_assert_error_contains(error, "t.json: $: expected an object, found an array");
  static const char *const names[] = { "fwd", "bwd", NULL };
  cJSON *e = parse("{\"stage\": \"up\"}");
  int idx = -1;
  g_assert_false(stw_json_get_enum(&r, e, "stage", TRUE, names, &idx, &error));
  stw_assert_error_contains(error, "$.stage: \"up\" is not one of \"fwd\", \"bwd\"");
  cJSON_Delete(ok);
  cJSON_Delete(unknown);
  cJSON_Delete(twice);
  cJSON_Delete(array);
  cJSON_Delete(e);
  stw_json_reader_clear(&r);
}

static void
test_exact_integers(void)
{
  cJSON *o = cJSON_CreateObject();
  stw_json_add_u64(o, "max", STW_JSON_INT_MAX);
  stw_json_add_u64(o, "big", G_GUINT64_CONSTANT(1000000000000000));
  stw_json_add_double(o, "bw", 25e9);
  stw_json_add_double(o, "eff", 0.6);
  char *text = cJSON_PrintUnformatted(o);
  g_assert_cmpstr(text, ==,
                  "{\"max\":9007199254740992,\"big\":1000000000000000,\"bw\":2.5e+10,"
                  "\"eff\":0.6}");
  cJSON *back = parse(text);
  StwJsonReader r;
  stw_json_reader_init(&r, "t.json");
  guint64 v = 0;
  g_assert_true(stw_json_get_u64(&r, back, "max", TRUE, 0, G_MAXUINT64, &v, NULL));
  g_assert_cmpuint(v, ==, STW_JSON_INT_MAX);
  stw_json_reader_clear(&r);
  cJSON_free(text);
  cJSON_Delete(o);
  cJSON_Delete(back);
}

static void
test_print_lines(void)
{
  cJSON *o = parse("{\"a\": 1, \"list\": [{\"x\": 1}, {\"x\": 2}], \"empty\": []}");
  g_autofree char *text = stw_json_print_lines(o);
  g_assert_cmpstr(text, ==,
                  "{\n  \"a\": 1,\n  \"list\": [\n    {\"x\":1},\n    {\"x\":2}\n  ],\n"
                  "  \"empty\": []\n}\n");
  cJSON_Delete(o);
}

/* The size of a document is checked in one pass before any tree is built: arrays by their path,
 * values in all, and a file of another kind named for what it is. */
static void
test_prescan(void)
{
  static const StwJsonArrayLimit arrays[] = { { "$.ops[].params", 3 }, { NULL, 0 } };
  const StwJsonLimits l = { .format = "stowage-trace", .max_values = 12, .max_array = 5,
                            .arrays = arrays };
  cJSON *root = NULL;
  GError *error = NULL;
  const char *ok = "{\"format\": \"stowage-trace\", \"ops\": [{\"params\": [1, 2, 3]}]}";
  g_assert_true(stw_json_parse_text("t.json", ok, strlen(ok), &l, &root, &error));
  cJSON_Delete(root);
  const char *params = "{\"ops\": [{\"params\": [1]}, {\"x\": \"]\", \"params\": [1, 2, 3, 4]}]}";
  g_assert_false(stw_json_parse_text("t.json", params, strlen(params), &l, &root, &error));
  stw_assert_error_contains(error, "t.json: $.ops[1].params: more than 3 elements");
  const char *other = "{\"ops\": [[1, 2, 3, 4, 5, 6]]}";
  g_assert_false(stw_json_parse_text("t.json", other, strlen(other), &l, &root, &error));
  stw_assert_error_contains(error, "t.json: $.ops[0]: more than 5 elements");
  const char *many = "{\"a\": [1, 2, 3], \"b\": [1, 2, 3], \"c\": [1, 2, 3], \"d\": [1, 2]}";
  g_assert_false(stw_json_parse_text("t.json", many, strlen(many), &l, &root, &error));
  stw_assert_error_contains(error, "t.json: more than 12 JSON values");
  /* a plan where a trace is expected: its kind, not the limit its arrays break */
  const char *plan = "{\"format\": \"stowage-plan\", \"ops\": [[1, 2, 3, 4, 5, 6]]}";
  g_assert_false(stw_json_parse_text("p.json", plan, strlen(plan), &l, &root, &error));
  stw_assert_error_contains(error, "p.json: $.format: this is a stowage plan (\"stowage-plan\"), "
                                   "not a stowage trace");
  /* found by fuzz/run.sh: a byte the scan took for no token (a form feed, which the parser skips
   * as white space) kept it in place, counting values until the limit, instead of moving on */
  const char *feed = "{\"ops\": [1,\f2]}";
  g_assert_true(stw_json_parse_text("f.json", feed, strlen(feed), &l, &root, &error));
  g_assert_no_error(error);
  cJSON_Delete(root);
  /* what is not JSON is left to the parser, which says where */
  const char *broken = "{\"ops\": [1, 2";
  g_assert_false(stw_json_parse_text("b.json", broken, strlen(broken), &l, &root, &error));
  stw_assert_error_contains(error, "b.json: not valid JSON");
}

typedef struct {
  guint64 elements, sum;
  GString *members;
} StreamSeen;

static gboolean
stream_element(const char *key, guint64 index, const char *text, gsize len, gpointer data,
               GError **error)
{
  StreamSeen *seen = data;
  g_assert_cmpstr(key, ==, "traceEvents");
  g_assert_cmpuint(index, ==, seen->elements);
  g_assert_cmpuint(strlen(text), ==, len);
  cJSON *e = cJSON_ParseWithLength(text, len);
  g_assert_nonnull(e);
  seen->sum += (guint64)cJSON_GetObjectItem(e, "i")->valuedouble;
  cJSON_Delete(e);
  seen->elements++;
  (void)error;
  return TRUE;
}

static gboolean
stream_member(const char *key, guint64 index, const char *text, gsize len, gpointer data,
              GError **error)
{
  StreamSeen *seen = data;
  (void)index;
  (void)error;
  g_string_append_printf(seen->members, "%s=%.*s;", key, (int)len, text);
  return TRUE;
}

/* A document of 3 MiB, elements crossing the reader's 1 MiB buffer, strings holding brackets,
 * quotes and escapes; plain and gzip, whole and cut short. */
static void
test_stream(void)
{
  GString *doc = g_string_new("{\"a\": {\"x\": [1, 2]}, \"n\": 7, \"traceEvents\": [");
  guint64 want_sum = 0;
  for (guint i = 0; i < 30000; i++) {
    g_string_append_printf(doc, "%s{\"i\": %u, \"name\": \"op]}\\\"[{%u\", \"pad\": \"%s\"}",
                           i ? ",\n" : "\n", i, i, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
    want_sum += i;
  }
  g_string_append(doc, "], \"z\": \"s]\\\"}\"}\n");
  g_assert_cmpuint(doc->len, >, 3u << 20);
  g_autofree char *dir = g_dir_make_tmp("stw-stream-XXXXXX", NULL);
  g_autofree char *plain = g_build_filename(dir, "doc.json", NULL);
  g_autofree char *gz = g_build_filename(dir, "doc.json.gz", NULL);
  g_autofree char *cut = g_build_filename(dir, "cut.json", NULL);
  g_assert_true(g_file_set_contents(plain, doc->str, (gssize)doc->len, NULL));
  g_assert_true(g_file_set_contents(cut, doc->str, (gssize)(doc->len / 2), NULL));
  /* gzip it with GIO's compressor */
  g_autoptr(GZlibCompressor) z = g_zlib_compressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP, 6);
  gsize cap = doc->len + 1024, read = 0, written = 0;
  g_autofree char *out = g_malloc(cap);
  g_assert_cmpint(g_converter_convert(G_CONVERTER(z), doc->str, doc->len, out, cap,
                                      G_CONVERTER_INPUT_AT_END, &read, &written, NULL),
                  ==, G_CONVERTER_FINISHED);
  g_assert_true(g_file_set_contents(gz, out, (gssize)written, NULL));
  g_assert_false(stw_json_stream_is_gzip(plain));
  g_assert_true(stw_json_stream_is_gzip(gz));

  static const char *const streamed[] = { "traceEvents", NULL };
  const char *files[] = { plain, gz };
  for (gsize f = 0; f < G_N_ELEMENTS(files); f++) {
    StreamSeen seen = { .members = g_string_new(NULL) };
    StwJsonStreamSpec spec = { .streamed = streamed, .max_element = 4096,
                               .on_element = stream_element, .on_member = stream_member,
                               .data = &seen };
    GError *error = NULL;
    g_assert_true(stw_json_stream_read(files[f], &spec, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(seen.elements, ==, 30000);
    g_assert_cmpuint(seen.sum, ==, want_sum);
    g_assert_cmpstr(seen.members->str, ==, "a={\"x\": [1, 2]};n=7;z=\"s]\\\"}\";");
    g_string_free(seen.members, TRUE);
  }
  /* cut short, and an element over the bound */
  StreamSeen seen = { .members = g_string_new(NULL) };
  StwJsonStreamSpec spec = { .streamed = streamed, .max_element = 4096,
                             .on_element = stream_element, .data = &seen };
  GError *error = NULL;
  g_assert_false(stw_json_stream_read(cut, &spec, &error));
  stw_assert_error_contains(error, "inside a value: truncated?");
  seen.elements = 0;
  seen.sum = 0;
  spec.max_element = 64;
  g_assert_false(stw_json_stream_read(plain, &spec, &error));
  stw_assert_error_contains(error, "traceEvents[0] is larger than 64 bytes");
  g_string_free(seen.members, TRUE);
  g_unlink(plain);
  g_unlink(gz);
  g_unlink(cut);
  g_rmdir(dir);
  g_string_free(doc, TRUE);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/json/syntax-errors", test_syntax_errors);
  g_test_add_func("/json/nul-escape", test_nul_escape);
  g_test_add_func("/json/file-errors", test_file_errors);
  g_test_add_func("/json/reader-paths", test_reader_paths);
  g_test_add_func("/json/check-object", test_check_object);
  g_test_add_func("/json/exact-integers", test_exact_integers);
  g_test_add_func("/json/print-lines", test_print_lines);
  g_test_add_func("/json/prescan", test_prescan);
  g_test_add_func("/json/stream", test_stream);
  return g_test_run();
}

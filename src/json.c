/* json.c — checked reading and exact writing of JSON; see json.h. */
#include "config.h"

#include "json.h"

#include <stowage/files.h>

#include <errno.h>
#include <sys/stat.h>

#include <glib/gstdio.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

G_DEFINE_QUARK(stw-json-error-quark, stw_json_error)

/* Whether TEXT ends inside a string or with brackets left open: the mark of a truncated file. */
static gboolean
ends_early(const char *text, gsize len)
{
  gssize depth = 0;
  gboolean in_string = FALSE, escaped = FALSE;
  for (gsize i = 0; i < len; i++) {
    char c = text[i];
    if (in_string) {
      if (escaped)
        escaped = FALSE;
      else if (c == '\\')
        escaped = TRUE;
      else if (c == '"')
        in_string = FALSE;
    } else if (c == '"') {
      in_string = TRUE;
    } else if (c == '[' || c == '{') {
      depth++;
    } else if (c == ']' || c == '}') {
      depth--;
    }
  }
  return in_string || depth > 0;
}

/* stowage's formats, and what each is called in messages */
static const struct {
  const char *format, *what;
} formats[] = {
  { "stowage-trace", "a stowage trace" },
  { "stowage-plan", "a stowage plan" },
  { "stowage-hardware", "a stowage hardware profile" },
  { "stowage-model", "a stowage model configuration" },
};

static const char *
format_what(const char *format)
{
  for (gsize i = 0; i < G_N_ELEMENTS(formats); i++) {
    if (strcmp(formats[i].format, format) == 0)
      return formats[i].what;
  }
  return NULL;
}

/* "FILE: $.format: this is a stowage plan (...), not a stowage trace: ..." for FOUND where FORMAT
 * is expected; FALSE. */
static gboolean
format_mismatch(const char *file, const char *found, const char *format, GError **error)
{
  const char *what = format_what(found), *want = format_what(format);
  if (what != NULL && want != NULL)
    g_set_error(error, STW_JSON_ERROR, STW_JSON_ERROR_INVALID, "%s: $.format: this is %s "
                "(\"%s\"), not %s: give each file where its kind is expected", file, what,
                found, want);
  else
    g_set_error(error, STW_JSON_ERROR, STW_JSON_ERROR_INVALID, "%s: $.format: expected \"%s\", "
                "found \"%.64s\"", file, format, found);
  return FALSE;
}

/* ---- the size of a document, before its tree ---------------------------------------------- */

const StwJsonLimits stw_json_small_limits = { .max_values = 1u << 16, .max_array = 1u << 12 };

#define PRESCAN_MAX_DEPTH 256

typedef struct {
  gboolean array;
  gsize count;          /* elements so far (arrays), members so far (objects) */
  gsize max;            /* arrays: the limit for this path */
  gsize pattern_len;    /* the pattern's length before this container */
  const char *key;      /* objects: the key of the member being read (into the text) */
  gsize key_len;
  gboolean want_key;    /* objects: the next string is a key */
} Frame;

/* The path of the value being read, with real indices, for the message. */
static char *
frame_path(const Frame *f, guint depth)
{
  GString *p = g_string_new("$");
  for (guint i = 0; i < depth; i++) {
    if (f[i].array)
      g_string_append_printf(p, "[%" G_GSIZE_FORMAT "]", f[i].count > 0 ? f[i].count - 1 : 0);
    else if (f[i].key != NULL)
      g_string_append_printf(p, ".%.*s", (int)MIN(f[i].key_len, 64), f[i].key);
  }
  return g_string_free(p, FALSE);
}

static gsize
array_limit(const StwJsonLimits *l, const char *pattern)
{
  for (const StwJsonArrayLimit *a = l->arrays; a != NULL && a->path != NULL; a++) {
    if (strcmp(a->path, pattern) == 0)
      return a->max;
  }
  return l->max_array;
}

/* A value starts in the innermost container F (depth DEPTH): counted against its limits. */
static gboolean
count_value(const char *file, const StwJsonLimits *l, Frame *f, guint depth, gsize *values,
            GError **error)
{
  if (++*values > l->max_values) {
    g_set_error(error, STW_JSON_ERROR, STW_JSON_ERROR_INVALID,
                "%s: more than %" G_GSIZE_FORMAT " JSON values, more than a file of this kind "
                "holds", file, l->max_values);
    return FALSE;
  }
  if (depth == 0 || !f[depth - 1].array)
    return TRUE;
  Frame *a = &f[depth - 1];
  if (++a->count > a->max) {
    a->count = a->max + 1;
    g_autofree char *path = frame_path(f, depth - 1);
    g_set_error(error, STW_JSON_ERROR, STW_JSON_ERROR_INVALID, "%s: %s: more than %"
                G_GSIZE_FORMAT " elements", file, path, a->max);
    return FALSE;
  }
  return TRUE;
}

/* One pass over TEXT: every array within its limit, the values within theirs. Text that is not
 * JSON is left to the parser, which says where. */
static gboolean
prescan(const char *file, const char *text, gsize len, const StwJsonLimits *l, GError **error)
{
  g_autoptr(GArray) frames = g_array_sized_new(FALSE, FALSE, sizeof(Frame), 16);
  Frame *f = (Frame *)frames->data;
  guint depth = 0;
  gsize values = 0;
  g_autofree char *format = NULL; /* the top-level "format" member, once read */
  g_autoptr(GString) pattern = g_string_new("$");
  const char *p = text, *end = text + len;
  while (p < end) {
    char c = *p;
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == ':') {
      p++;
      continue;
    }
    Frame *top = depth > 0 ? &f[depth - 1] : NULL;
    if (c == ',') {
      if (top != NULL && !top->array)
        top->want_key = TRUE;
      p++;
      continue;
    }
    if (c == '}' || c == ']') {
      if (depth == 0)
        return TRUE;
      g_string_truncate(pattern, f[depth - 1].pattern_len);
      depth--;
      p++;
      continue;
    }
    if (c == '"') {
      const char *s = ++p;
      while (p < end && *p != '"') {
        if (stw_json_is_nul_escape(p, end)) {
          gsize line = 1;
          for (const char *q = text; q < p; q++)
            line += *q == '\n';
          g_autofree char *where = g_strdup_printf("line %" G_GSIZE_FORMAT, line);
          g_set_error(error, STW_JSON_ERROR, STW_JSON_ERROR_INVALID, STW_JSON_NUL_MESSAGE, file,
                      where);
          goto over;
        }
        p += *p == '\\' ? 2 : 1;
      }
      if (p >= end)
        return TRUE;
      if (top != NULL && !top->array && top->want_key) {
        top->key = s;
        top->key_len = (gsize)(p - s);
        top->want_key = FALSE;
      } else {
        if (depth == 1 && top->key_len == 6 && strncmp(top->key, "format", 6) == 0 &&
            format == NULL)
          format = g_strndup(s, (gsize)MIN(p - s, 64));
        if (!count_value(file, l, f, depth, &values, error))
          goto over;
      }
      p++;
      continue;
    }
    if (!count_value(file, l, f, depth, &values, error))
      goto over;
    if (c == '{' || c == '[') {
      if (depth == PRESCAN_MAX_DEPTH)
        return TRUE; /* the parser refuses what is nested this deep */
      if (depth == frames->len) {
        g_array_set_size(frames, depth + 1);
        f = (Frame *)frames->data;
        top = depth > 0 ? &f[depth - 1] : NULL; /* the frames moved */
      }
      Frame n = { .array = c == '[', .pattern_len = pattern->len, .want_key = c == '{' };
      if (top != NULL && top->array)
        g_string_append(pattern, "[]");
      else if (top != NULL && top->key != NULL)
        g_string_append_printf(pattern, ".%.*s", (int)top->key_len, top->key);
      if (n.array)
        n.max = array_limit(l, pattern->str);
      f[depth++] = n;
      p++;
      continue;
    }
    /* a number or a literal (or a byte that is neither, which the parser will refuse): at
     * least one byte, so that the scan always moves on */
    do
      p++;
    while (p < end && *p != ',' && *p != '}' && *p != ']' && !g_ascii_isspace(*p));
  }
  return TRUE;
over:
  /* a file of another kind is named for what it is, rather than for a limit of this kind */
  if (format != NULL && l->format != NULL && strcmp(format, l->format) != 0) {
    g_clear_error(error);
    return format_mismatch(file, format, l->format, error);
  }
  return FALSE;
}

gboolean
stw_json_parse_text(const char *file, const char *text, gsize len, const StwJsonLimits *limits,
                    cJSON **root_out, GError **error)
{
  if (!prescan(file, text, len, limits != NULL ? limits : &stw_json_small_limits, error))
    return FALSE;
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, FALSE);
  if (root == NULL) {
    gsize offset = end != NULL && end >= text ? (gsize)(end - text) : 0;
    if (offset > len)
      offset = len;
    /* report line and column, as editors count them */
    gsize line = 1, col = 1;
    for (gsize i = 0; i < offset; i++) {
      if (text[i] == '\n') {
        line++;
        col = 1;
      } else {
        col++;
      }
    }
    g_set_error(error, STW_JSON_ERROR, STW_JSON_ERROR_SYNTAX,
                "%s: not valid JSON (line %" G_GSIZE_FORMAT ", column %" G_GSIZE_FORMAT
                "%s)", file, line, col,
                ends_early(text, len) ? ", the file ends too early" : "");
    return FALSE;
  }
  /* cJSON stops at the end of the first value; anything but white space after it is an error */
  for (const char *p = end; p != NULL && p < text + len; p++) {
    if (!g_ascii_isspace(*p)) {
      cJSON_Delete(root);
      g_set_error(error, STW_JSON_ERROR, STW_JSON_ERROR_SYNTAX,
                  "%s: unexpected text after the JSON value (byte %" G_GSIZE_FORMAT ")",
                  file, (gsize)(p - text));
      return FALSE;
    }
  }
  *root_out = root;
  return TRUE;
}

gboolean
stw_json_parse_file(const char *file, gsize max_bytes, const StwJsonLimits *limits,
                    cJSON **root_out, GError **error)
{
  char *text = NULL;
  gsize len = 0;
  if (!stw_file_read(file, max_bytes, &text, &len, error))
    return FALSE;
  if (len == 0) {
    g_free(text);
    g_set_error(error, STW_JSON_ERROR, STW_JSON_ERROR_SYNTAX, "%s: the file is empty", file);
    return FALSE;
  }
  gboolean ok = stw_json_parse_text(file, text, len, limits, root_out, error);
  g_free(text);
  return ok;
}

void
stw_json_reader_init(StwJsonReader *r, const char *file)
{
  r->file = file;
  r->path = g_string_new("$");
}

void
stw_json_reader_clear(StwJsonReader *r)
{
  if (r->path != NULL)
    g_string_free(r->path, TRUE);
  r->path = NULL;
}

static gboolean
read_root(const char *file, cJSON *root, StwJsonReadFunc fn, gpointer out, GError **error)
{
  StwJsonReader r;
  stw_json_reader_init(&r, file);
  gboolean ok = fn(&r, root, out, error);
  stw_json_reader_clear(&r);
  cJSON_Delete(root);
  return ok;
}

gboolean
stw_json_read_text(const char *file, const char *text, gsize len, const StwJsonLimits *limits,
                   StwJsonReadFunc fn, gpointer out, GError **error)
{
  cJSON *root = NULL;
  return stw_json_parse_text(file, text, len, limits, &root, error) &&
         read_root(file, root, fn, out, error);
}

gboolean
stw_json_read_file(const char *file, gsize max_bytes, const StwJsonLimits *limits,
                   StwJsonReadFunc fn, gpointer out, GError **error)
{
  cJSON *root = NULL;
  return stw_json_parse_file(file, max_bytes, limits, &root, error) &&
         read_root(file, root, fn, out, error);
}

gsize
stw_json_push_key(StwJsonReader *r, const char *key)
{
  gsize saved = r->path->len;
  g_string_append_printf(r->path, ".%s", key);
  return saved;
}

gsize
stw_json_push_index(StwJsonReader *r, gsize index)
{
  gsize saved = r->path->len;
  g_string_append_printf(r->path, "[%" G_GSIZE_FORMAT "]", index);
  return saved;
}

void
stw_json_pop(StwJsonReader *r, gsize saved_len)
{
  g_string_truncate(r->path, saved_len);
}

static gboolean
fail_va(const StwJsonReader *r, const char *key, GError **error, const char *fmt, va_list ap)
{
  char *msg = g_strdup_vprintf(fmt, ap);
  g_set_error(error, STW_JSON_ERROR, STW_JSON_ERROR_INVALID, "%s: %s%s%s: %s", r->file,
              r->path->str, key != NULL ? "." : "", key != NULL ? key : "", msg);
  g_free(msg);
  return FALSE;
}

gboolean
stw_json_fail(const StwJsonReader *r, GError **error, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fail_va(r, NULL, error, fmt, ap);
  va_end(ap);
  return FALSE;
}

gboolean
stw_json_fail_at(const StwJsonReader *r, const char *key, GError **error, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fail_va(r, key, error, fmt, ap);
  va_end(ap);
  return FALSE;
}

static const char *
type_name(const cJSON *item)
{
  if (cJSON_IsObject(item))
    return "an object";
  if (cJSON_IsArray(item))
    return "an array";
  if (cJSON_IsString(item))
    return "a string";
  if (cJSON_IsNumber(item))
    return "a number";
  if (cJSON_IsBool(item))
    return "a boolean";
  if (cJSON_IsNull(item))
    return "null";
  return "an invalid value";
}

gboolean
stw_json_check_format(const StwJsonReader *r, const cJSON *obj, const char *format,
                      GError **error)
{
  const char *found = NULL;
  if (!cJSON_IsObject(obj))
    return TRUE; /* the object check says what it is */
  if (!stw_json_get_string(r, obj, "format", TRUE, 64, &found, error))
    return FALSE;
  if (strcmp(found, format) == 0)
    return TRUE;
  return format_mismatch(r->file, found, format, error);
}

gboolean
stw_json_check_object(const StwJsonReader *r, const cJSON *obj, const char *const *allowed,
                      GError **error)
{
  if (!cJSON_IsObject(obj))
    return stw_json_fail(r, error, "expected an object, found %s", type_name(obj));
  for (const cJSON *c = obj->child; c != NULL; c = c->next) {
    gboolean known = FALSE;
    for (const char *const *a = allowed; *a != NULL; a++) {
      if (strcmp(*a, c->string) == 0) {
        known = TRUE;
        break;
      }
    }
    if (!known) {
      GString *list = g_string_new(NULL);
      for (const char *const *a = allowed; *a != NULL; a++)
        g_string_append_printf(list, "%s%s", list->len ? ", " : "", *a);
      stw_json_fail(r, error, "unknown member \"%.64s\" (expected one of: %s)", c->string,
                    list->str);
      g_string_free(list, TRUE);
      return FALSE;
    }
    for (const cJSON *d = c->next; d != NULL; d = d->next) {
      if (strcmp(c->string, d->string) == 0)
        return stw_json_fail(r, error, "member \"%s\" appears twice", c->string);
    }
  }
  return TRUE;
}

/* Finds KEY in OBJ; a missing required member is an error, a missing optional one yields NULL. */
static gboolean
member(const StwJsonReader *r, const cJSON *obj, const char *key, gboolean required,
       const cJSON **out, GError **error)
{
  *out = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (*out == NULL && required)
    return stw_json_fail(r, error, "missing required member \"%s\"", key);
  return TRUE;
}

gboolean
stw_json_get_object(const StwJsonReader *r, const cJSON *obj, const char *key,
                    gboolean required, const cJSON **out, GError **error)
{
  const cJSON *m;
  if (!member(r, obj, key, required, &m, error))
    return FALSE;
  if (m == NULL)
    return TRUE;
  if (!cJSON_IsObject(m))
    return stw_json_fail_at(r, key, error, "expected an object, found %s", type_name(m));
  *out = m;
  return TRUE;
}

gboolean
stw_json_get_pair(StwJsonReader *r, const cJSON *obj, const char *key, guint64 max,
                  const char *what, guint64 out[2], GError **error)
{
  const cJSON *arr = NULL;
  if (!stw_json_get_array(r, obj, key, TRUE, 2, &arr, error))
    return FALSE;
  if (cJSON_GetArraySize(arr) != 2)
    return stw_json_fail_at(r, key, error, "expected %s", what);
  gsize saved = stw_json_push_key(r, key);
  guint k = 0;
  for (const cJSON *c = arr->child; c != NULL; c = c->next, k++) {
    gsize s2 = stw_json_push_index(r, k);
    if (!stw_json_as_u64(r, c, 0, max, &out[k], error))
      return FALSE;
    stw_json_pop(r, s2);
  }
  stw_json_pop(r, saved);
  return TRUE;
}

gboolean
stw_json_get_array(const StwJsonReader *r, const cJSON *obj, const char *key,
                   gboolean required, gsize max_len, const cJSON **out, GError **error)
{
  const cJSON *m;
  if (!member(r, obj, key, required, &m, error))
    return FALSE;
  if (m == NULL)
    return TRUE;
  if (!cJSON_IsArray(m))
    return stw_json_fail_at(r, key, error, "expected an array, found %s", type_name(m));
  gsize n = 0;
  for (const cJSON *c = m->child; c != NULL; c = c->next) {
    if (++n > max_len)
      return stw_json_fail_at(r, key, error, "more than %" G_GSIZE_FORMAT " elements",
                              max_len);
  }
  *out = m;
  return TRUE;
}

gboolean
stw_json_get_string(const StwJsonReader *r, const cJSON *obj, const char *key,
                    gboolean required, gsize max_len, const char **out, GError **error)
{
  const cJSON *m;
  if (!member(r, obj, key, required, &m, error))
    return FALSE;
  if (m == NULL)
    return TRUE;
  if (!cJSON_IsString(m) || m->valuestring == NULL)
    return stw_json_fail_at(r, key, error, "expected a string, found %s", type_name(m));
  if (strlen(m->valuestring) > max_len)
    return stw_json_fail_at(r, key, error, "string longer than %" G_GSIZE_FORMAT " bytes",
                            max_len);
  if (!g_utf8_validate(m->valuestring, -1, NULL))
    return stw_json_fail_at(r, key, error, "string is not valid UTF-8");
  *out = m->valuestring;
  return TRUE;
}

static gboolean
number_to_u64(const StwJsonReader *r, const char *key, const cJSON *m, guint64 min,
              guint64 max, guint64 *out, GError **error)
{
  if (!cJSON_IsNumber(m))
    return stw_json_fail_at(r, key, error, "expected an integer, found %s", type_name(m));
  double d = m->valuedouble;
  if (!isfinite(d) || d != floor(d))
    return stw_json_fail_at(r, key, error, "expected an integer, found %g", d);
  if (d < (double)min || d > (double)max) {
    return stw_json_fail_at(r, key, error,
                            "%.17g is out of range (expected %" G_GUINT64_FORMAT " to %"
                            G_GUINT64_FORMAT ")", d, min, max);
  }
  *out = (guint64)d;
  return TRUE;
}

gboolean
stw_json_get_u64(const StwJsonReader *r, const cJSON *obj, const char *key, gboolean required,
                 guint64 min, guint64 max, guint64 *out, GError **error)
{
  const cJSON *m;
  if (!member(r, obj, key, required, &m, error))
    return FALSE;
  if (m == NULL)
    return TRUE;
  return number_to_u64(r, key, m, min, MIN(max, STW_JSON_INT_MAX), out, error);
}

gboolean
stw_json_as_u64(const StwJsonReader *r, const cJSON *item, guint64 min, guint64 max,
                guint64 *out, GError **error)
{
  return number_to_u64(r, NULL, item, min, MIN(max, STW_JSON_INT_MAX), out, error);
}

gboolean
stw_json_get_double(const StwJsonReader *r, const cJSON *obj, const char *key,
                    gboolean required, double min, double max, double *out, GError **error)
{
  const cJSON *m;
  if (!member(r, obj, key, required, &m, error))
    return FALSE;
  if (m == NULL)
    return TRUE;
  if (!cJSON_IsNumber(m))
    return stw_json_fail_at(r, key, error, "expected a number, found %s", type_name(m));
  double d = m->valuedouble;
  if (!isfinite(d) || d < min || d > max)
    return stw_json_fail_at(r, key, error, "%g is out of range (expected %g to %g)", d, min,
                            max);
  *out = d;
  return TRUE;
}

gboolean
stw_json_get_bool(const StwJsonReader *r, const cJSON *obj, const char *key, gboolean required,
                  gboolean *out, GError **error)
{
  const cJSON *m;
  if (!member(r, obj, key, required, &m, error))
    return FALSE;
  if (m == NULL)
    return TRUE;
  if (!cJSON_IsBool(m))
    return stw_json_fail_at(r, key, error, "expected true or false, found %s", type_name(m));
  *out = cJSON_IsTrue(m);
  return TRUE;
}

gboolean
stw_json_get_enum(const StwJsonReader *r, const cJSON *obj, const char *key, gboolean required,
                  const char *const *names, int *out, GError **error)
{
  const char *s = NULL;
  if (!stw_json_get_string(r, obj, key, required, 256, &s, error))
    return FALSE;
  if (s == NULL)
    return TRUE;
  for (int i = 0; names[i] != NULL; i++) {
    if (strcmp(names[i], s) == 0) {
      *out = i;
      return TRUE;
    }
  }
  GString *list = g_string_new(NULL);
  for (int i = 0; names[i] != NULL; i++)
    g_string_append_printf(list, "%s\"%s\"", i ? ", " : "", names[i]);
  stw_json_fail_at(r, key, error, "\"%.64s\" is not one of %s", s, list->str);
  g_string_free(list, TRUE);
  return FALSE;
}

cJSON *
stw_json_u64(guint64 v)
{
  char buf[32];
  g_snprintf(buf, sizeof buf, "%" G_GUINT64_FORMAT, v);
  return cJSON_CreateRaw(buf);
}

void
stw_json_add_u64(cJSON *obj, const char *key, guint64 v)
{
  cJSON_AddItemToObject(obj, key, stw_json_u64(v));
}

void
stw_json_add_double(cJSON *obj, const char *key, double v)
{
  char buf[40];
  /* %.17g round-trips every double; integral values print without an exponent below 1e17 */
  g_snprintf(buf, sizeof buf, "%.17g", v);
  if (strtod(buf, NULL) == v) {
    for (int prec = 6; prec < 17; prec++) {
      char shorter[40];
      g_snprintf(shorter, sizeof shorter, "%.*g", prec, v);
      if (strtod(shorter, NULL) == v) {
        memcpy(buf, shorter, sizeof buf);
        break;
      }
    }
  }
  cJSON_AddItemToObject(obj, key, cJSON_CreateRaw(buf));
}

cJSON *
stw_json_u64_array(const guint32 *v, gsize n)
{
  cJSON *a = cJSON_CreateArray();
  for (gsize i = 0; i < n; i++)
    cJSON_AddItemToArray(a, stw_json_u64(v[i]));
  return a;
}

static void
print_compact(GString *out, const cJSON *item)
{
  char *s = cJSON_PrintUnformatted(item);
  g_string_append(out, s);
  cJSON_free(s);
}

char *
stw_json_print_lines(const cJSON *root)
{
  GString *out = g_string_new("{\n");
  for (const cJSON *c = root->child; c != NULL; c = c->next) {
    char *key = cJSON_PrintUnformatted(&(cJSON){ .type = cJSON_String,
                                                 .valuestring = c->string });
    g_string_append_printf(out, "  %s: ", key);
    cJSON_free(key);
    if (cJSON_IsArray(c) && c->child != NULL) {
      g_string_append(out, "[\n");
      for (const cJSON *e = c->child; e != NULL; e = e->next) {
        g_string_append(out, "    ");
        print_compact(out, e);
        g_string_append(out, e->next != NULL ? ",\n" : "\n");
      }
      g_string_append(out, "  ]");
    } else {
      print_compact(out, c);
    }
    g_string_append(out, c->next != NULL ? ",\n" : "\n");
  }
  g_string_append(out, "}\n");
  return g_string_free(out, FALSE);
}


char *
stw_json_take_text(cJSON *root, gboolean formatted)
{
  char *text = formatted ? cJSON_Print(root) : cJSON_PrintUnformatted(root);
  char *copy = g_strdup(text);
  cJSON_free(text);
  cJSON_Delete(root);
  return copy;
}

/* json-stream.c — large JSON documents element by element; see json-stream.h. */
#include "config.h"

#include "json-stream.h"

#include <stowage/files.h>

#include "json.h"

#include <errno.h>
#include <gio/gio.h>
#include <zlib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <sys/stat.h>
#include <string.h>

#define BUFFER_BYTES (1u << 20)

typedef struct {
  const char *file;
  GInputStream *in;
  guint8 *buf;
  gsize pos, len;
  guint64 offset;   /* bytes of the document consumed before buf */
  gboolean eof;
  GError *io_error; /* a read that failed (a corrupt gzip stream) */
} Reader;

static gboolean
refill(Reader *r)
{
  if (r->eof || r->io_error != NULL)
    return FALSE;
  r->offset += r->len;
  r->pos = 0;
  gssize n = g_input_stream_read(r->in, r->buf, BUFFER_BYTES, NULL, &r->io_error);
  if (n <= 0) {
    r->len = 0;
    r->eof = n == 0;
    return FALSE;
  }
  r->len = (gsize)n;
  return TRUE;
}

/* The next byte without consuming it; -1 at the end (or a read error). */
static int
peek(Reader *r)
{
  if (r->pos >= r->len && !refill(r))
    return -1;
  return r->buf[r->pos];
}

static int
next(Reader *r)
{
  int c = peek(r);
  if (c >= 0)
    r->pos++;
  return c;
}

static int
skip_space(Reader *r)
{
  for (;;) {
    int c = peek(r);
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
      return c;
    r->pos++;
  }
}

static gboolean
fail(Reader *r, GError **error, const char *what)
{
  if (r->io_error != NULL) {
    g_set_error(error, STW_JSON_ERROR, STW_JSON_ERROR_SYNTAX,
                "%s: cannot be read at byte %" G_GUINT64_FORMAT " of its content: %s", r->file,
                r->offset + r->pos, r->io_error->message);
    return FALSE;
  }
  if (peek(r) < 0)
    g_set_error(error, STW_JSON_ERROR, STW_JSON_ERROR_SYNTAX,
                "%s: the file ends at byte %" G_GUINT64_FORMAT " %s: truncated?", r->file,
                r->offset + r->pos, what);
  else
    g_set_error(error, STW_JSON_ERROR, STW_JSON_ERROR_SYNTAX,
                "%s: byte %" G_GUINT64_FORMAT ": expected %s, found '%c'", r->file,
                r->offset + r->pos, what, peek(r));
  return FALSE;
}

/* Which value is being read, for messages only (formatted when one is needed: elements are
 * read by the million). */
typedef struct {
  const char *key; /* the top-level member; NULL: the document's own array */
  guint64 index;   /* the element's */
  gboolean member; /* a member's value (or its name) rather than an element */
} Where;

static char *
where_text(const Where *w)
{
  if (w->member)
    return w->key != NULL ? g_strdup_printf("the member \"%s\"", w->key)
                          : g_strdup("a member name");
  return g_strdup_printf("%s[%" G_GUINT64_FORMAT "]", w->key != NULL ? w->key : "$", w->index);
}

/* Reads one JSON value into OUT (when STORE; at most MAX bytes, else a refusal naming the value
 * at W), checking only that brackets and strings close: the element's own parser checks the
 * rest. */
static gboolean
capture(Reader *r, GString *out, gboolean store, gsize max, const Where *w, GError **error)
{
  g_string_truncate(out, 0);
  int depth = 0;
  gboolean in_string = FALSE, escaped = FALSE;
  char stack[256];
  gboolean done = FALSE;
  while (!done) {
    if (r->pos >= r->len && !refill(r))
      return fail(r, error, in_string || depth > 0 ? "inside a value" : "in a value");
    /* the run of bytes to the next one that matters is copied at once */
    gsize start = r->pos;
    while (r->pos < r->len && !done) {
      guint8 c = r->buf[r->pos];
      if (in_string) {
        r->pos++;
        if (escaped)
          escaped = FALSE;
        else if (c == '\\')
          escaped = TRUE;
        else if (c == '"')
          in_string = FALSE;
        done = !in_string && depth == 0; /* a string scalar */
        continue;
      }
      if (c == '"') {
        in_string = TRUE;
      } else if (c == '{' || c == '[') {
        if (depth == (int)sizeof stack) {
          g_autofree char *what = where_text(w);
          g_set_error(error, STW_JSON_ERROR, STW_JSON_ERROR_SYNTAX,
                      "%s: %s nests more than %zu deep", r->file, what, sizeof stack);
          return FALSE;
        }
        stack[depth++] = c == '{' ? '}' : ']';
      } else if (c == '}' || c == ']') {
        if (depth == 0) {
          done = TRUE; /* the enclosing array or object ends: a scalar ended */
          break;
        }
        if (stack[--depth] != (char)c) {
          r->pos++;
          return fail(r, error, "a matching bracket");
        }
        done = depth == 0;
      } else if (depth == 0 && (c == ',' || c == ' ' || c == '\n' || c == '\r' || c == '\t')) {
        done = TRUE; /* a scalar ended */
        break;
      }
      r->pos++;
    }
    if (store) {
      if (out->len + (r->pos - start) > max) {
        g_autofree char *what = where_text(w);
        g_set_error(error, STW_JSON_ERROR, STW_JSON_ERROR_SYNTAX,
                    "%s: %s is larger than %zu bytes: not a file of this kind, or one this "
                    "reader refuses", r->file, what, max);
        return FALSE;
      }
      g_string_append_len(out, (const char *)r->buf + start, (gssize)(r->pos - start));
    }
  }
  if (store && out->len == 0)
    return fail(r, error, "a value");
  /* each escape: a backslash and the character after it */
  const char *end = out->str + out->len;
  for (const char *p = store ? out->str : end;
       end - p >= 2 && (p = memchr(p, '\\', (gsize)(end - p))) != NULL; p += 2) {
    if (stw_json_is_nul_escape(p, end)) {
      g_autofree char *what = where_text(w);
      g_set_error(error, STW_JSON_ERROR, STW_JSON_ERROR_SYNTAX, STW_JSON_NUL_MESSAGE, r->file,
                  what);
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean
is_streamed(const StwJsonStreamSpec *spec, const char *key)
{
  for (gsize i = 0; spec->streamed != NULL && spec->streamed[i] != NULL; i++)
    if (key != NULL && strcmp(spec->streamed[i], key) == 0)
      return TRUE;
  return key == NULL;
}

/* The elements of the array whose '[' is next. */
static gboolean
read_array(Reader *r, const StwJsonStreamSpec *spec, const char *key, GString *text,
           GError **error)
{
  next(r); /* '[' */
  Where w = { .key = key };
  if (skip_space(r) == ']') {
    next(r);
    return TRUE;
  }
  for (;;) {
    if (!capture(r, text, TRUE, spec->max_element, &w, error) ||
        !spec->on_element(key, w.index, text->str, text->len, spec->data, error))
      return FALSE;
    w.index++;
    int c = skip_space(r);
    next(r);
    if (c == ']')
      return TRUE;
    if (c != ',') {
      r->pos -= c >= 0 ? 1 : 0;
      return fail(r, error, "',' or ']' between elements");
    }
    skip_space(r);
  }
}

static gboolean
read_object(Reader *r, const StwJsonStreamSpec *spec, GString *text, GError **error)
{
  next(r); /* '{' */
  g_autoptr(GString) key = g_string_new(NULL);
  if (skip_space(r) == '}') {
    next(r);
    return TRUE;
  }
  for (;;) {
    if (peek(r) != '"')
      return fail(r, error, "a member name");
    const Where name = { .member = TRUE };
    if (!capture(r, key, TRUE, 4096, &name, error))
      return FALSE;
    /* the name without its quotes (escapes are not expected in the names that matter) */
    g_string_erase(key, 0, 1);
    g_string_truncate(key, key->len > 0 ? key->len - 1 : 0);
    if (skip_space(r) != ':')
      return fail(r, error, "':' after a member name");
    next(r);
    int c = skip_space(r);
    if (c == '[' && is_streamed(spec, key->str)) {
      if (!read_array(r, spec, key->str, text, error))
        return FALSE;
    } else {
      gboolean store = spec->on_member != NULL;
      const Where value = { .key = key->str, .member = TRUE };
      if (!capture(r, text, store, spec->max_element, &value, error) ||
          (store && !spec->on_member(key->str, 0, text->str, text->len, spec->data, error)))
        return FALSE;
    }
    c = skip_space(r);
    next(r);
    if (c == '}')
      return TRUE;
    if (c != ',') {
      r->pos -= c >= 0 ? 1 : 0;
      return fail(r, error, "',' or '}' between members");
    }
    skip_space(r);
  }
}

/* gzip as gunzip reads it: member after member (a file of several, as `cat a.gz b.gz` or a
 * parallel compressor writes, is their contents one after another), with zero bytes after the
 * last ignored. GIO's own decompressor stops at the end of the first member. */
#define STW_TYPE_GUNZIP (stw_gunzip_get_type())
G_DECLARE_FINAL_TYPE(StwGunzip, stw_gunzip, STW, GUNZIP, GObject)

struct _StwGunzip {
  GObject parent;
  z_stream z;
  gboolean between; /* a member has ended: the next bytes begin another, or are zeros */
};

static void stw_gunzip_converter_init(GConverterIface *iface);
G_DEFINE_TYPE_WITH_CODE(StwGunzip, stw_gunzip, G_TYPE_OBJECT,
                        G_IMPLEMENT_INTERFACE(G_TYPE_CONVERTER, stw_gunzip_converter_init))

static void
stw_gunzip_finalize(GObject *object)
{
  inflateEnd(&STW_GUNZIP(object)->z);
  G_OBJECT_CLASS(stw_gunzip_parent_class)->finalize(object);
}

static void
stw_gunzip_class_init(StwGunzipClass *klass)
{
  G_OBJECT_CLASS(klass)->finalize = stw_gunzip_finalize;
}

static void
stw_gunzip_init(StwGunzip *self)
{
  /* 16 + 15: a gzip wrapper (its CRC and length checked) around a window of 2^15 */
  if (inflateInit2(&self->z, 16 + MAX_WBITS) != Z_OK)
    g_error("zlib: cannot start a decompressor (out of memory)");
}

static void
stw_gunzip_reset(GConverter *converter)
{
  StwGunzip *self = STW_GUNZIP(converter);
  inflateReset(&self->z);
  self->between = FALSE;
}

static GConverterResult
stw_gunzip_convert(GConverter *converter, const void *inbuf, gsize inbuf_size, void *outbuf,
                   gsize outbuf_size, GConverterFlags flags, gsize *bytes_read,
                   gsize *bytes_written, GError **error)
{
  StwGunzip *self = STW_GUNZIP(converter);
  const guint8 *in = inbuf;
  gboolean at_end = (flags & G_CONVERTER_INPUT_AT_END) != 0;
  *bytes_read = *bytes_written = 0;
  if (self->between) {
    gsize zeros = 0;
    while (zeros < inbuf_size && in[zeros] == 0)
      zeros++;
    *bytes_read = zeros;
    if (zeros > 0 || (inbuf_size == 0 && at_end))
      return zeros == inbuf_size && at_end ? G_CONVERTER_FINISHED : G_CONVERTER_CONVERTED;
    if (inbuf_size < 2 && !at_end) {
      g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_PARTIAL_INPUT, "more input needed");
      return G_CONVERTER_ERROR;
    }
    if (inbuf_size < 2 || in[0] != 0x1f || in[1] != 0x8b) {
      g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                          "bytes after a gzip member that begin no other member");
      return G_CONVERTER_ERROR;
    }
    inflateReset(&self->z);
    self->between = FALSE;
  }
  /* zlib counts in uInt: a buffer over 4 GiB is taken a part at a time */
  self->z.next_in = (Bytef *)in;
  self->z.avail_in = (uInt)MIN(inbuf_size, G_MAXUINT);
  self->z.next_out = outbuf;
  self->z.avail_out = (uInt)MIN(outbuf_size, G_MAXUINT);
  uInt avail_in = self->z.avail_in, avail_out = self->z.avail_out;
  int ret = inflate(&self->z, Z_NO_FLUSH);
  *bytes_read = avail_in - self->z.avail_in;
  *bytes_written = avail_out - self->z.avail_out;
  switch (ret) {
  case Z_STREAM_END:
    self->between = TRUE;
    return at_end && *bytes_read == inbuf_size ? G_CONVERTER_FINISHED : G_CONVERTER_CONVERTED;
  case Z_OK:
    return G_CONVERTER_CONVERTED;
  case Z_BUF_ERROR: /* no progress: the output is full, or the input ran out inside a member */
    if (avail_out == 0) {
      g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NO_SPACE, "no room for the output");
      return G_CONVERTER_ERROR;
    }
    if (at_end) {
      g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                          "the gzip data ends inside a member (truncated?)");
      return G_CONVERTER_ERROR;
    }
    g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_PARTIAL_INPUT, "more input needed");
    return G_CONVERTER_ERROR;
  case Z_MEM_ERROR:
    g_error("zlib: out of memory");
  default: /* Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR */
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "not valid gzip data (%s)",
                self->z.msg != NULL ? self->z.msg : "a corrupt stream");
    return G_CONVERTER_ERROR;
  }
}

static void
stw_gunzip_converter_init(GConverterIface *iface)
{
  iface->convert = stw_gunzip_convert;
  iface->reset = stw_gunzip_reset;
}

gboolean
stw_json_stream_is_gzip(const char *file)
{
  guint8 magic[2] = { 0 };
  FILE *f = fopen(file, "rb");
  if (f == NULL)
    return FALSE;
  gboolean gz = fread(magic, 1, 2, f) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  fclose(f);
  return gz;
}

GInputStream *
stw_json_stream_open(const char *file, GError **error)
{
  GStatBuf st;
  if (g_stat(file, &st) != 0) {
    g_set_error(error, STW_FILES_ERROR, STW_FILES_ERROR_IO, "%s: cannot open: %s", file,
                g_strerror(errno));
    return NULL;
  }
  if (!S_ISREG(st.st_mode)) {
    g_set_error(error, STW_FILES_ERROR, STW_FILES_ERROR_LIMIT,
                "%s: not a regular file (a trace is read from a file)", file);
    return NULL;
  }
  g_autoptr(GFile) gf = g_file_new_for_path(file);
  GError *local = NULL;
  g_autoptr(GFileInputStream) fin = g_file_read(gf, NULL, &local);
  if (fin == NULL) {
    g_set_error(error, STW_FILES_ERROR, STW_FILES_ERROR_IO, "%s: cannot open: %s", file,
                local->message);
    g_error_free(local);
    return NULL;
  }
  if (!stw_json_stream_is_gzip(file))
    return G_INPUT_STREAM(g_object_ref(fin));
  g_autoptr(StwGunzip) z = g_object_new(STW_TYPE_GUNZIP, NULL);
  return g_converter_input_stream_new(G_INPUT_STREAM(fin), G_CONVERTER(z));
}

gboolean
stw_json_stream_read(const char *file, const StwJsonStreamSpec *spec, GError **error)
{
  g_autoptr(GInputStream) in = stw_json_stream_open(file, error);
  if (in == NULL)
    return FALSE;
  Reader r = { .file = file, .in = in, .buf = g_malloc(BUFFER_BYTES) };
  g_autoptr(GString) text = g_string_new(NULL);
  gboolean ok;
  int c = skip_space(&r);
  if (c == '{')
    ok = read_object(&r, spec, text, error);
  else if (c == '[')
    ok = read_array(&r, spec, NULL, text, error);
  else
    ok = fail(&r, error, c < 0 && r.io_error == NULL && r.offset == 0
                             ? "a JSON document (the file is empty)"
                             : "a JSON object or array");
  if (ok && skip_space(&r) >= 0)
    ok = fail(&r, error, "the end of the file after the document");
  if (ok && r.io_error != NULL)
    ok = fail(&r, error, "the end of the document");
  g_clear_error(&r.io_error);
  g_free(r.buf);
  return ok;
}

/* events.c — the event stream's reader and writer; see events.h. */
#include "config.h"

#include <stowage/events.h>

#include <stdlib.h>
#include <string.h>

#include <stowage/errors.h>
#include <stowage/files.h>
#include <stowage/trace.h>

G_DEFINE_QUARK(stw-events-error-quark, stw_events_error)

/* A stream is read whole and kept as records of 72 bytes and their names: at most 2^24 records
 * (about 1.2 GiB besides the file) from a regular file of at most 1 GiB. */
#define MAX_FILE_BYTES (G_GUINT64_CONSTANT(1) << 30)
#define MAX_ARGS 4096

static void
ev_clear(gpointer p)
{
  StwEventRecord *e = p;
  g_free(e->args);
  g_free(e->name);
}

void
stw_events_free(StwEvents *e)
{
  if (e == NULL)
    return;
  g_free(e->file);
  g_array_unref(e->records);
  g_free(e);
}

static gboolean
num(const char *s, int base, guint64 *out)
{
  return s != NULL && g_ascii_string_to_unsigned(s, base, 0, G_MAXUINT64, out, NULL);
}

/* The rest of LINE after N space-separated words. */
static const char *
rest_after(const char *line, guint n)
{
  const char *p = line;
  for (guint i = 0; i < n && p != NULL; i++) {
    p = strchr(p, ' ');
    if (p != NULL)
      p++;
  }
  return p;
}

#define bad(...) stw_fail_file(error, STW_EVENTS_ERROR, STW_EVENTS_ERROR_SYNTAX, where, __VA_ARGS__)

static gboolean
parse_line(const char *where, char *line, guint lineno, StwEventRecord *e, GError **error)
{
  g_auto(GStrv) w = g_strsplit(line, " ", 0);
  guint n = g_strv_length(w);
  memset(e, 0, sizeof *e);
  e->line = lineno;
  if (n == 0 || w[0][0] == '\0')
    return bad("an empty line");
  if (strcmp(w[0], "push") == 0) {
    const char *name = rest_after(line, 2);
    if (n < 3 || !num(w[1], 10, &e->t) || name == NULL || *name == '\0')
      return bad("expected 'push T NAME'");
    e->kind = STW_EVENT_PUSH;
    e->name = g_strdup(name);
  } else if (strcmp(w[0], "pop") == 0) {
    if (n != 2 || !num(w[1], 10, &e->t))
      return bad("expected 'pop T'");
    e->kind = STW_EVENT_POP;
  } else if (strcmp(w[0], "alloc") == 0) {
    if (n != 4 || !num(w[1], 10, &e->t) || !num(w[2], 16, &e->ptr) || !num(w[3], 10, &e->bytes)
        || e->bytes == 0 || e->bytes > STW_TRACE_MAX_INT)
      return bad("expected 'alloc T PTR BYTES' with PTR in hex and BYTES from 1 to 2^53");
    e->kind = STW_EVENT_ALLOC;
  } else if (strcmp(w[0], "free") == 0) {
    if (n != 3 || !num(w[1], 10, &e->t) || !num(w[2], 16, &e->ptr))
      return bad("expected 'free T PTR'");
    e->kind = STW_EVENT_FREE;
  } else if (strcmp(w[0], "launch") == 0) {
    guint64 nargs;
    if (n < 4 || !num(w[1], 10, &e->t) || !num(w[2], 10, &e->id) || !num(w[3], 10, &nargs) ||
        nargs > MAX_ARGS || n != 4 + nargs)
      return bad("expected 'launch T ID N ARG...' with N arguments (at most %d)", MAX_ARGS);
    e->kind = STW_EVENT_LAUNCH;
    e->n_args = (guint)nargs;
    e->args = g_new(guint64, MAX(nargs, 1));
    for (guint i = 0; i < nargs; i++)
      if (!num(w[4 + i], 16, &e->args[i]))
        return bad("argument %u is not a hex number", i + 1);
  } else if (strcmp(w[0], "kernel") == 0) {
    const char *name = rest_after(line, 4);
    if (n < 5 || !num(w[1], 10, &e->id) || !num(w[2], 10, &e->t) || !num(w[3], 10, &e->end) ||
        name == NULL)
      return bad("expected 'kernel ID START END NAME'");
    e->kind = STW_EVENT_KERNEL;
    /* a record CUPTI delivered before the kernel ended (a forced flush): kept, flagged, and
     * left out by the builder, which counts it */
    e->incomplete = e->end < e->t;
    if (!e->incomplete && e->end - e->t > STW_TRACE_MAX_INT)
      return bad("a kernel of more than 2^53 ns (104 days): END %" G_GUINT64_FORMAT " is too far "
                 "after START %" G_GUINT64_FORMAT, e->end, e->t);
    e->name = g_strdup(name);
  } else if (strcmp(w[0], "thread") == 0) {
    if (n != 2 || !num(w[1], 10, &e->id) || e->id > G_MAXUINT32)
      return bad("expected 'thread N' with N a number");
    e->kind = STW_EVENT_THREAD;
  } else if (strcmp(w[0], "tensor") == 0) {
    guint64 ndim;
    if (n < 4 || !num(w[1], 16, &e->ptr) || !num(w[2], 10, &ndim) || ndim < 1 ||
        ndim > STW_TRACE_MAX_DIMS || n < 4 + ndim)
      return bad("expected 'tensor PTR NDIM D... NAME' with 1 to 8 dimensions");
    e->kind = STW_EVENT_TENSOR;
    e->n_args = (guint)ndim;
    e->args = g_new(guint64, ndim);
    for (guint i = 0; i < ndim; i++)
      if (!num(w[3 + i], 10, &e->args[i]) || e->args[i] == 0)
        return bad("dimension %u is not a positive number", i + 1);
    e->name = g_strdup(rest_after(line, 3 + (guint)ndim));
    if (e->name == NULL || e->name[0] == '\0')
      return bad("the tensor has no name");
  } else {
    return bad("unknown event '%.32s' (expected push, pop, thread, alloc, free, launch, kernel, "
               "tensor)", w[0]);
  }
  return TRUE;
}

/* Host events (push, pop, launch) are written as they happen, on one clock: their times never go
 * back. Allocations and kernels come from the device's activity records, later and in their
 * own order. */
static gboolean
host_event(const StwEventRecord *e)
{
  return e->kind == STW_EVENT_PUSH || e->kind == STW_EVENT_POP || e->kind == STW_EVENT_LAUNCH;
}

StwEvents *
stw_events_parse(const char *file, const char *text, gsize len, GError **error)
{
  StwEvents *e = g_new0(StwEvents, 1);
  e->file = g_strdup(file);
  e->records = g_array_new(FALSE, TRUE, sizeof(StwEventRecord));
  g_array_set_clear_func(e->records, ev_clear);
  guint lineno = 0, last_line = 0;
  guint64 last_t = 0;
  const char *p = text, *end = text + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (gsize)(end - p));
    gsize n = nl ? (gsize)(nl - p) : (gsize)(end - p);
    lineno++;
    if (n > 0) {
      g_autofree char *line = g_strndup(p, n);
      g_autofree char *where = g_strdup_printf("%s:%u", file, lineno);
      StwEventRecord ev = { 0 };
      gboolean ok = FALSE;
      if (e->records->len >= STW_EVENTS_MAX_RECORDS)
        stw_fail_file(error, STW_EVENTS_ERROR, STW_EVENTS_ERROR_SYNTAX, where, "more than %u "
                      "events: a stream holds at most that many", STW_EVENTS_MAX_RECORDS);
      else if (memchr(line, '\0', n) != NULL)
        stw_fail_file(error, STW_EVENTS_ERROR, STW_EVENTS_ERROR_SYNTAX, where, "a NUL byte");
      else if (!parse_line(where, line, lineno, &ev, error))
        ;
      else if (host_event(&ev) && ev.t < last_t)
        stw_fail_file(error, STW_EVENTS_ERROR, STW_EVENTS_ERROR_ORDER, where, "time goes back: %"
                      G_GUINT64_FORMAT " ns, after %" G_GUINT64_FORMAT " at line %u (host events "
                      "are written as they happen)", ev.t, last_t, last_line);
      else
        ok = TRUE;
      if (!ok) {
        ev_clear(&ev);
        stw_events_free(e);
        return NULL;
      }
      if (host_event(&ev)) {
        last_t = ev.t;
        last_line = lineno;
      }
      g_array_append_val(e->records, ev);
    }
    p = nl ? nl + 1 : end;
  }
  return e;
}

StwEvents *
stw_events_load(const char *file, GError **error)
{
  g_autofree char *text = NULL;
  gsize len = 0;
  if (!stw_file_read(file, MAX_FILE_BYTES, &text, &len, error))
    return NULL;
  return stw_events_parse(file, text, len, error);
}

/* ---- writing ----------------------------------------------------------------------------------- */

struct StwEventWriter {
  GString *s;
};

StwEventWriter *
stw_event_writer_new(void)
{
  StwEventWriter *w = g_new0(StwEventWriter, 1);
  w->s = g_string_new(NULL);
  return w;
}

void
stw_event_push(StwEventWriter *w, guint64 t, const char *name)
{
  g_string_append_printf(w->s, "push %" G_GUINT64_FORMAT " %s\n", t, name);
}

void
stw_event_pop(StwEventWriter *w, guint64 t)
{
  g_string_append_printf(w->s, "pop %" G_GUINT64_FORMAT "\n", t);
}

void
stw_event_alloc(StwEventWriter *w, guint64 t, guint64 ptr, guint64 bytes)
{
  g_string_append_printf(w->s, "alloc %" G_GUINT64_FORMAT " %" G_GINT64_MODIFIER "x %"
                         G_GUINT64_FORMAT "\n", t, ptr, bytes);
}

void
stw_event_free(StwEventWriter *w, guint64 t, guint64 ptr)
{
  g_string_append_printf(w->s, "free %" G_GUINT64_FORMAT " %" G_GINT64_MODIFIER "x\n", t, ptr);
}

void
stw_event_launch(StwEventWriter *w, guint64 t, guint64 id, const guint64 *args, guint n)
{
  g_string_append_printf(w->s, "launch %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %u", t, id, n);
  for (guint i = 0; i < n; i++)
    g_string_append_printf(w->s, " %" G_GINT64_MODIFIER "x", args[i]);
  g_string_append_c(w->s, '\n');
}

void
stw_event_kernel(StwEventWriter *w, guint64 id, guint64 start, guint64 end, const char *name)
{
  g_string_append_printf(w->s, "kernel %" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %"
                         G_GUINT64_FORMAT " %s\n", id, start, end, name);
}

void
stw_event_tensor(StwEventWriter *w, guint64 ptr, const guint64 *shape, guint ndim,
                 const char *name)
{
  g_string_append_printf(w->s, "tensor %" G_GINT64_MODIFIER "x %u", ptr, ndim);
  for (guint i = 0; i < ndim; i++)
    g_string_append_printf(w->s, " %" G_GUINT64_FORMAT, shape[i]);
  g_string_append_printf(w->s, " %s\n", name);
}

const char *
stw_event_writer_text(StwEventWriter *w, gsize *len)
{
  if (len != NULL)
    *len = w->s->len;
  return w->s->str;
}

void
stw_event_writer_free(StwEventWriter *w)
{
  if (w == NULL)
    return;
  g_string_free(w->s, TRUE);
  g_free(w);
}

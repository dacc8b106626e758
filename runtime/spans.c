/* spans.c — a range carved first-fit; see spans.h. */
#include "config.h"

#include "spans.h"

typedef struct {
  guint64 offset, bytes;
} Span;

struct StwSpans {
  guint64 bytes, align;
  GArray *free;        /* Span, sorted by offset, coalesced */
  GHashTable *taken;   /* offset + 1 -> bytes */
  guint64 used, high;  /* bytes taken, and the end of the highest span ever taken */
};

StwSpans *
stw_spans_new(guint64 bytes, guint64 align)
{
  g_assert(align > 0 && (align & (align - 1)) == 0);
  StwSpans *s = g_new0(StwSpans, 1);
  s->bytes = bytes / align * align;
  s->align = align;
  s->free = g_array_new(FALSE, FALSE, sizeof(Span));
  s->taken = g_hash_table_new(g_direct_hash, g_direct_equal);
  Span all = { 0, s->bytes };
  if (all.bytes > 0)
    g_array_append_val(s->free, all);
  return s;
}

void
stw_spans_free(StwSpans *s)
{
  if (s == NULL)
    return;
  g_array_unref(s->free);
  g_hash_table_unref(s->taken);
  g_free(s);
}

guint64
stw_spans_bytes(const StwSpans *s)
{
  return s->bytes;
}

guint64
stw_spans_take(StwSpans *s, guint64 bytes)
{
  guint64 need = (MAX(bytes, 1) + s->align - 1) / s->align * s->align;
  for (guint i = 0; i < s->free->len; i++) {
    Span *f = &g_array_index(s->free, Span, i);
    if (f->bytes < need)
      continue;
    guint64 at = f->offset;
    f->offset += need;
    f->bytes -= need;
    if (f->bytes == 0)
      g_array_remove_index(s->free, i);
    g_hash_table_insert(s->taken, GSIZE_TO_POINTER(at + 1), GSIZE_TO_POINTER(need));
    s->used += need;
    s->high = MAX(s->high, at + need);
    return at;
  }
  return STW_SPANS_NONE;
}

guint64
stw_spans_give(StwSpans *s, guint64 offset)
{
  gpointer held = NULL;
  if (!g_hash_table_lookup_extended(s->taken, GSIZE_TO_POINTER(offset + 1), NULL, &held))
    return 0;
  g_hash_table_remove(s->taken, GSIZE_TO_POINTER(offset + 1));
  Span m = { offset, GPOINTER_TO_SIZE(held) };
  s->used -= m.bytes;
  guint i = 0;
  while (i < s->free->len && g_array_index(s->free, Span, i).offset < m.offset)
    i++;
  g_array_insert_val(s->free, i, m);
  /* merged with the neighbours */
  if (i + 1 < s->free->len) {
    Span *a = &g_array_index(s->free, Span, i), *b = &g_array_index(s->free, Span, i + 1);
    if (a->offset + a->bytes == b->offset) {
      a->bytes += b->bytes;
      g_array_remove_index(s->free, i + 1);
    }
  }
  if (i > 0) {
    Span *a = &g_array_index(s->free, Span, i - 1), *b = &g_array_index(s->free, Span, i);
    if (a->offset + a->bytes == b->offset) {
      a->bytes += b->bytes;
      g_array_remove_index(s->free, i);
    }
  }
  return m.bytes;
}

guint64
stw_spans_used(const StwSpans *s)
{
  return s->used;
}

guint64
stw_spans_high(const StwSpans *s)
{
  return s->high;
}

void
stw_spans_each_free(const StwSpans *s, void (*fn)(guint64 offset, guint64 bytes, gpointer data),
                    gpointer data)
{
  for (guint i = 0; i < s->free->len; i++) {
    const Span *f = &g_array_index(s->free, Span, i);
    fn(f->offset, f->bytes, data);
  }
}

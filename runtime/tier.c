/* tier.c — optimizer state on the storage tier: two staging buffers in host memory in front of
 * one file of chunk regions (tier.h). */
#include "config.h"

#include "tier.h"

#include <string.h>

#define NONE G_MAXUINT32
#define PIECE_BYTES (8u << 20) /* the largest request: a region is read in pieces this big */
#define N_BUFFERS 2

typedef enum {
  EMPTY,   /* holds no chunk */
  READING, /* its chunk's region on its way in */
  CLEAN,   /* its chunk's state, as the file has it */
  DIRTY,   /* its chunk's newest state: the file's is older */
  WRITING, /* its chunk's state on its way out (not to be changed until it lands) */
} BufferState;

typedef struct {
  guint8 *mem;
  guint32 chunk;     /* NONE when EMPTY */
  BufferState state;
  guint pending;     /* requests in flight */
  guint64 used;      /* when it was last handed out: the least recent goes first */
  gboolean forget;   /* WRITING: empty once it lands (an iteration reads every chunk anew) */
} Buffer;

struct StwTier {
  StwStorage *io;
  gint file;
  char *path;               /* the file, for messages */
  guint32 n;                /* chunks */
  guint64 *bytes;           /* per chunk: its state's bytes; 0 when it is not here */
  guint64 *offset;          /* per chunk: its region's place in the file */
  guint64 *sum;             /* per chunk: the checksum of its last write */
  guint64 *writes;          /* per chunk: writes so far (in the checksum: an older copy fails) */
  guint32 *tensors, *left;  /* per chunk: tensors stepped an iteration, and still to step */
  guint32 *order, n_order;  /* the chunks by first step */
  guint32 *pos;             /* per chunk: its index in the order */
  Buffer buf[N_BUFFERS];
  guint64 tick;
  StwTierStats st;
};

static gboolean
fail(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static gboolean
fail(GError **error, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error_literal(error, STW_STORAGE_ERROR, STW_STORAGE_ERROR_IO, msg);
  g_free(msg);
  return FALSE;
}

/* Four lanes of 64-bit words, multiplied and folded: a checksum fast beside any storage. */
static guint64
state_sum(const guint8 *p, gsize n)
{
  const guint64 k = 0x9E3779B97F4A7C15ull;
  guint64 h[4] = { 1, 2, 3, 4 };
  gsize i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int l = 0; l < 4; l++) {
      guint64 w;
      memcpy(&w, p + i + 8 * l, 8);
      h[l] = (h[l] ^ w) * k;
      h[l] ^= h[l] >> 29;
    }
  }
  guint64 tail = n;
  for (; i < n; i++)
    tail = (tail ^ p[i]) * 0x100000001B3ull;
  guint64 all = tail;
  for (int l = 0; l < 4; l++)
    all = (all ^ h[l]) * k + (guint64)l;
  return all ^ (all >> 31);
}

static guint64
chunk_sum(const StwTier *t, guint32 ch, const guint8 *mem)
{
  return state_sum(mem, t->bytes[ch]) ^ ((guint64)ch << 40) ^ (t->writes[ch] * 0xD6E8FEB86659FD93ull);
}

static guint64
region_bytes(guint64 bytes)
{
  return (bytes + STW_STORAGE_ALIGN - 1) / STW_STORAGE_ALIGN * STW_STORAGE_ALIGN;
}

StwTier *
stw_tier_new(const char *dir, const char *name, guint32 queue_depth, guint32 n_chunks,
             const guint64 *state_bytes, const guint32 *tensors, const guint32 *order,
             guint32 n_order, GError **error)
{
  StwStorage *io = stw_storage_open(dir, queue_depth, error);
  if (io == NULL)
    return NULL;
  StwTier *t = g_new0(StwTier, 1);
  t->io = io;
  t->path = g_build_filename(dir, name, NULL);
  t->n = n_chunks;
  t->bytes = g_memdup2(state_bytes, MAX(n_chunks, 1) * sizeof(guint64));
  t->offset = g_new0(guint64, MAX(n_chunks, 1));
  t->sum = g_new0(guint64, MAX(n_chunks, 1));
  t->writes = g_new0(guint64, MAX(n_chunks, 1));
  t->tensors = g_memdup2(tensors, MAX(n_chunks, 1) * sizeof(guint32));
  t->left = g_memdup2(tensors, MAX(n_chunks, 1) * sizeof(guint32));
  t->order = g_memdup2(order, MAX(n_order, 1) * sizeof(guint32));
  t->n_order = n_order;
  t->pos = g_new(guint32, MAX(n_chunks, 1));
  for (guint32 c = 0; c < n_chunks; c++)
    t->pos[c] = NONE;
  for (guint32 i = 0; i < n_order; i++)
    t->pos[order[i]] = i;
  guint64 file = 0, largest = 0;
  for (guint32 c = 0; c < n_chunks; c++) {
    t->offset[c] = file;
    file += region_bytes(state_bytes[c]);
    largest = MAX(largest, region_bytes(state_bytes[c]));
  }
  for (int b = 0; b < N_BUFFERS; b++) {
    t->buf[b] = (Buffer){ .mem = stw_storage_buffer(largest), .chunk = NONE, .state = EMPTY };
    if (t->buf[b].mem == NULL) {
      g_set_error(error, STW_STORAGE_ERROR, STW_STORAGE_ERROR_IO,
                  "no host memory for a staging buffer of %" G_GUINT64_FORMAT " bytes", largest);
      stw_tier_free(t);
      return NULL;
    }
  }
  t->file = stw_storage_create(io, name, MAX(file, STW_STORAGE_ALIGN), error);
  if (t->file < 0) {
    stw_tier_free(t);
    return NULL;
  }
  return t;
}

void
stw_tier_free(StwTier *t)
{
  if (t == NULL)
    return;
  stw_storage_close(t->io); /* waits for what is in flight */
  for (int b = 0; b < N_BUFFERS; b++)
    stw_storage_buffer_free(t->buf[b].mem);
  g_free(t->path);
  g_free(t->bytes);
  g_free(t->offset);
  g_free(t->sum);
  g_free(t->writes);
  g_free(t->tensors);
  g_free(t->left);
  g_free(t->order);
  g_free(t->pos);
  g_free(t);
}

const StwStorageInfo *
stw_tier_info(const StwTier *t)
{
  return stw_storage_info(t->io);
}

gboolean
stw_tier_holds(const StwTier *t, guint32 ch)
{
  return t != NULL && ch < t->n && t->bytes[ch] > 0;
}

/* Buffer B's requests all landed: a read checked against what was written. */
static gboolean
landed(StwTier *t, int b, GError **error)
{
  Buffer *x = &t->buf[b];
  if (x->state == WRITING) {
    x->state = x->forget ? EMPTY : CLEAN;
    x->chunk = x->forget ? NONE : x->chunk;
    x->forget = FALSE;
    return TRUE;
  }
  guint32 ch = x->chunk;
  x->state = CLEAN;
  if (chunk_sum(t, ch, x->mem) == t->sum[ch])
    return TRUE;
  x->state = EMPTY;
  x->chunk = NONE;
  return fail(error, "storage file %s: chunk %u's optimizer state (%" G_GUINT64_FORMAT
              " bytes at offset %" G_GUINT64_FORMAT ") is not what was written to it: the file "
              "was altered or the device corrupted it; the run stops (resume from the last "
              "checkpoint: the storage files are rebuilt from it)", t->path, ch, t->bytes[ch],
              t->offset[ch]);
}

/* Completed requests collected, waiting for MIN of them. */
static gboolean
collect(StwTier *t, guint min, GError **error)
{
  guint64 tags[32];
  gint64 start = min > 0 ? g_get_monotonic_time() : 0;
  GError *local = NULL;
  gint got = stw_storage_complete(t->io, min, tags, G_N_ELEMENTS(tags), &local);
  if (min > 0)
    t->st.wait_ns += (guint64)(g_get_monotonic_time() - start) * 1000;
  if (got < 0) {
    /* the chunks whose requests were in flight, named; what they held is not to be trusted */
    g_autoptr(GString) which = g_string_new("");
    for (int b = 0; b < N_BUFFERS; b++) {
      Buffer *x = &t->buf[b];
      if (x->pending == 0)
        continue;
      g_string_append_printf(which, "%schunk %u's optimizer state (%s)", which->len ? " or " : "",
                             x->chunk, x->state == READING ? "being read" : "being written");
      *x = (Buffer){ .mem = x->mem, .chunk = NONE, .state = EMPTY };
    }
    g_propagate_prefixed_error(error, local, "the storage tier, %s: ", which->str);
    return FALSE;
  }
  for (gint i = 0; i < got; i++) {
    Buffer *x = &t->buf[tags[i]];
    if (x->pending > 0 && --x->pending == 0 && !landed(t, (int)tags[i], error))
      return FALSE;
  }
  return TRUE;
}

static gboolean
wait_buffer(StwTier *t, int b, GError **error)
{
  while (t->buf[b].pending > 0)
    if (!collect(t, 1, error))
      return FALSE;
  return TRUE;
}

/* Buffer B's chunk read in (or, with WRITE, written out), in pieces. */
static gboolean
submit(StwTier *t, int b, gboolean write, GError **error)
{
  Buffer *x = &t->buf[b];
  guint32 ch = x->chunk;
  /* a region is never read while a write to it is in flight: the read would get what is half
   * written (another buffer may still be writing CH, one it was told to forget) */
  for (int o = 0; !write && o < N_BUFFERS; o++)
    if (o != b && t->buf[o].chunk == ch && t->buf[o].state == WRITING && !wait_buffer(t, o, error))
      return FALSE;
  if (write) {
    t->writes[ch]++;
    t->sum[ch] = chunk_sum(t, ch, x->mem);
  }
  x->state = write ? WRITING : READING;
  guint64 region = region_bytes(t->bytes[ch]);
  for (guint64 at = 0; at < region; at += PIECE_BYTES) {
    gsize n = (gsize)MIN(PIECE_BYTES, region - at);
    x->pending++;
    if (!stw_storage_submit(t->io, (guint)t->file, write, x->mem + at, n, t->offset[ch] + at,
                            (guint64)b, error)) {
      x->pending--;
      g_prefix_error(error, "the optimizer state on the storage tier: ");
      return FALSE;
    }
  }
  if (write)
    t->st.write_bytes += t->bytes[ch];
  else
    t->st.read_bytes += t->bytes[ch];
  return TRUE;
}

/* Buffer B emptied: its requests landed, its newest copy written first. */
static gboolean
empty_buffer(StwTier *t, int b, GError **error)
{
  if (!wait_buffer(t, b, error))
    return FALSE;
  if (t->buf[b].state == DIRTY && (!submit(t, b, TRUE, error) || !wait_buffer(t, b, error)))
    return FALSE;
  t->buf[b].chunk = NONE;
  t->buf[b].state = EMPTY;
  return TRUE;
}

/* The buffer holding CH's state, or -1. A buffer to be forgotten once its write lands holds it
 * no longer: the iteration reads it anew (and changing it while its write is in flight, then
 * forgetting it, would lose the change). */
static int
find(const StwTier *t, guint32 ch)
{
  for (int b = 0; b < N_BUFFERS; b++)
    if (t->buf[b].chunk == ch && !t->buf[b].forget)
      return b;
  return -1;
}

/* The buffer to give another chunk: an empty one, else one whose state the file has or is
 * getting, else the least recently used. */
static int
victim(const StwTier *t)
{
  static const int rank[] = { [EMPTY] = 0, [CLEAN] = 1, [WRITING] = 2, [READING] = 3,
                              [DIRTY] = 4 };
  int best = 0;
  for (int b = 1; b < N_BUFFERS; b++) {
    const Buffer *x = &t->buf[b], *y = &t->buf[best];
    if (rank[x->state] < rank[y->state] ||
        (rank[x->state] == rank[y->state] && x->used < y->used))
      best = b;
  }
  return best;
}

guint8 *
stw_tier_state(StwTier *t, guint32 ch, gboolean modify, gboolean fresh, GError **error)
{
  g_assert(stw_tier_holds(t, ch));
  int b = find(t, ch);
  if (b < 0) {
    b = victim(t);
    if (!empty_buffer(t, b, error))
      return NULL;
    t->buf[b].chunk = ch;
    if (fresh) {
      memset(t->buf[b].mem, 0, region_bytes(t->bytes[ch]));
      t->buf[b].state = DIRTY;
    } else if (!submit(t, b, FALSE, error)) {
      t->buf[b].chunk = NONE;
      t->buf[b].state = EMPTY;
      return NULL;
    }
  }
  Buffer *x = &t->buf[b];
  if (x->state == READING || (modify && x->state == WRITING)) {
    if (!wait_buffer(t, b, error))
      return NULL;
  }
  if (modify || fresh)
    x->state = DIRTY;
  x->used = ++t->tick;
  return x->mem;
}

/* The read of the chunk after CH in the order, issued when a buffer is free for it. */
static gboolean
prefetch(StwTier *t, guint32 ch, GError **error)
{
  if (!collect(t, 0, error))
    return FALSE;
  guint32 i = t->pos[ch];
  if (i == NONE || i + 1 >= t->n_order || find(t, t->order[i + 1]) >= 0)
    return TRUE;
  for (int b = 0; b < N_BUFFERS; b++) {
    Buffer *x = &t->buf[b];
    if (x->chunk != ch && (x->state == EMPTY || x->state == CLEAN)) {
      x->chunk = t->order[i + 1];
      x->used = ++t->tick;
      return submit(t, b, FALSE, error);
    }
  }
  return TRUE;
}

gboolean
stw_tier_stepped(StwTier *t, guint32 ch, GError **error)
{
  g_assert(stw_tier_holds(t, ch));
  if (t->left[ch] > 0 && --t->left[ch] == 0) {
    t->left[ch] = t->tensors[ch];
    int b = find(t, ch);
    if (b >= 0 && t->buf[b].state == DIRTY && !submit(t, b, TRUE, error))
      return FALSE;
  }
  return prefetch(t, ch, error);
}

gboolean
stw_tier_iteration_end(StwTier *t, GError **error)
{
  for (int b = 0; b < N_BUFFERS; b++) {
    Buffer *x = &t->buf[b];
    if (x->state == DIRTY && t->left[x->chunk] != t->tensors[x->chunk] &&
        !submit(t, b, TRUE, error))
      return FALSE;
  }
  memcpy(t->left, t->tensors, MAX(t->n, 1) * sizeof(guint32));
  return collect(t, 0, error);
}

gboolean
stw_tier_sync(StwTier *t, GError **error)
{
  for (int b = 0; b < N_BUFFERS; b++) {
    if (!wait_buffer(t, b, error))
      return FALSE;
    if (t->buf[b].state == DIRTY && (!submit(t, b, TRUE, error) || !wait_buffer(t, b, error)))
      return FALSE;
  }
  return TRUE;
}

gboolean
stw_tier_iteration_begin(StwTier *t, GError **error)
{
  for (int b = 0; b < N_BUFFERS; b++) {
    Buffer *x = &t->buf[b];
    if (x->state == DIRTY && (!submit(t, b, TRUE, error) || !wait_buffer(t, b, error)))
      return FALSE;
    if (x->state == CLEAN)
      *x = (Buffer){ .mem = x->mem, .chunk = NONE, .state = EMPTY };
    else if (x->state == WRITING)
      x->forget = TRUE;
  }
  t->st.read_bytes = t->st.write_bytes = 0;
  return TRUE;
}

const StwTierStats *
stw_tier_stats(const StwTier *t)
{
  return &t->st;
}

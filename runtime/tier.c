/* tier.c — chunks on the storage tier: staging buffers in host memory in front of one file of
 * chunk regions (tier.h). */
#include "config.h"

#include "tier.h"

#include <string.h>

#define NONE G_MAXUINT32
#define PIECE_BYTES (8u << 20) /* the largest request: a region is read in pieces this big */
#define N_STEP 2   /* the step's buffers: a chunk's whole region */
#define N_BUFFERS 4 /* and then two of parameters alone, for the store's fetches and write-backs */

typedef enum {
  EMPTY,   /* holds no chunk */
  READING, /* its chunk's region on its way in */
  CLEAN,   /* its chunk's state, as the file has it */
  DIRTY,   /* its chunk's newest state: the file's is older */
  WRITING, /* its chunk's state on its way out (not to be changed until it lands) */
  QUEUED,  /* a parameter buffer: its read waits for a write to its chunk to land first */
} BufferState;

typedef struct {
  guint8 *mem;
  guint32 chunk;     /* NONE when EMPTY */
  BufferState state;
  guint pending;     /* requests in flight */
  guint64 used;      /* when it was last handed out: the least recent goes first */
  gboolean forget;   /* WRITING: empty once it lands (an iteration reads every chunk anew) */
  gboolean params;   /* a step's buffer: its parameter part holds them (not after FRESH) */
  gboolean lent;     /* a parameter buffer: lent to the store (stw_tier_params_borrow) */
  gboolean failed;   /* lent: its read failed (reported where it was found) */
  gboolean to_write; /* lent to be copied into: its write already counted */
} Buffer;

struct StwTier {
  StwStorage *io;
  gint file;
  char *path;               /* the file, for messages */
  guint32 n;                /* chunks */
  guint64 *bytes;           /* per chunk: its state's bytes; 0 when it is not here */
  guint64 *pbytes;          /* per chunk: its parameters' bytes, before the state; 0: not here */
  guint64 *offset;          /* per chunk: its region's place in the file */
  guint64 *sum;             /* per chunk: the checksum of its state's last write */
  guint64 *writes;          /* per chunk: writes so far (in the checksum: an older copy fails) */
  guint64 *psum, *pwrites;  /* the same for its parameters */
  gboolean (*ready)(gpointer data, guint32 ch);
  gpointer ready_data;
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

static guint64
region_bytes(guint64 bytes)
{
  return (bytes + STW_STORAGE_ALIGN - 1) / STW_STORAGE_ALIGN * STW_STORAGE_ALIGN;
}

/* Where chunk CH's state begins in its region: after its parameters, if they are here. */
static guint64
state_at(const StwTier *t, guint32 ch)
{
  return region_bytes(t->pbytes[ch]);
}

/* The checksum of chunk CH's state at MEM (the region's start) as its last write left it. */
static guint64
chunk_sum(const StwTier *t, guint32 ch, const guint8 *mem)
{
  return stw_storage_checksum(mem + state_at(t, ch), t->bytes[ch]) ^ ((guint64)ch << 40) ^
         (t->writes[ch] * 0xD6E8FEB86659FD93ull);
}

/* The same for its parameters (at MEM). */
static guint64
param_sum(const StwTier *t, guint32 ch, const guint8 *mem)
{
  return stw_storage_checksum(mem, t->pbytes[ch]) ^ ((guint64)ch << 40) ^
         (t->pwrites[ch] * 0x9FB21C651E98DF25ull) ^ 0x7061726Dull;
}

StwTier *
stw_tier_new(const char *dir, const char *name, guint32 queue_depth, guint32 n_chunks,
             const guint64 *state_bytes, const guint64 *param_bytes, const guint32 *tensors,
             const guint32 *order, guint32 n_order, GError **error)
{
  StwStorage *io = stw_storage_open(dir, queue_depth, error);
  if (io == NULL)
    return NULL;
  StwTier *t = g_new0(StwTier, 1);
  t->io = io;
  t->path = g_build_filename(dir, name, NULL);
  t->n = n_chunks;
  t->bytes = g_memdup2(state_bytes, MAX(n_chunks, 1) * sizeof(guint64));
  t->pbytes = g_new0(guint64, MAX(n_chunks, 1));
  if (param_bytes != NULL)
    memcpy(t->pbytes, param_bytes, n_chunks * sizeof(guint64));
  t->offset = g_new0(guint64, MAX(n_chunks, 1));
  t->sum = g_new0(guint64, MAX(n_chunks, 1));
  t->writes = g_new0(guint64, MAX(n_chunks, 1));
  t->psum = g_new0(guint64, MAX(n_chunks, 1));
  t->pwrites = g_new0(guint64, MAX(n_chunks, 1));
  t->tensors = g_memdup2(tensors, MAX(n_chunks, 1) * sizeof(guint32));
  t->left = g_memdup2(tensors, MAX(n_chunks, 1) * sizeof(guint32));
  t->order = g_memdup2(order, MAX(n_order, 1) * sizeof(guint32));
  t->n_order = n_order;
  t->pos = g_new(guint32, MAX(n_chunks, 1));
  for (guint32 c = 0; c < n_chunks; c++)
    t->pos[c] = NONE;
  for (guint32 i = 0; i < n_order; i++)
    t->pos[order[i]] = i;
  guint64 file = 0, largest = 0, params = 0;
  for (guint32 c = 0; c < n_chunks; c++) {
    guint64 region = state_bytes[c] > 0 ? state_at(t, c) + region_bytes(state_bytes[c]) : 0;
    t->offset[c] = file;
    file += region;
    largest = MAX(largest, region);
    params = MAX(params, region_bytes(t->pbytes[c]));
  }
  for (int b = 0; b < N_BUFFERS; b++) {
    guint64 size = b < N_STEP ? largest : params;
    t->buf[b] = (Buffer){ .chunk = NONE, .state = EMPTY };
    if (size == 0)
      continue; /* no parameters here: no buffers for them */
    t->buf[b].mem = stw_storage_buffer(size);
    if (t->buf[b].mem == NULL) {
      g_set_error(error, STW_STORAGE_ERROR, STW_STORAGE_ERROR_IO,
                  "no host memory for a staging buffer of %" G_GUINT64_FORMAT " bytes", size);
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
    if (t->buf[b].mem != NULL)
      stw_storage_buffer_free(t->buf[b].mem);
  g_free(t->path);
  g_free(t->bytes);
  g_free(t->pbytes);
  g_free(t->offset);
  g_free(t->sum);
  g_free(t->writes);
  g_free(t->psum);
  g_free(t->pwrites);
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

gboolean
stw_tier_holds_params(const StwTier *t, guint32 ch)
{
  return stw_tier_holds(t, ch) && t->pbytes[ch] > 0;
}

guint64
stw_tier_state_offset(const StwTier *t, guint32 ch)
{
  return state_at(t, ch);
}

void
stw_tier_set_ready(StwTier *t, gboolean (*ready)(gpointer data, guint32 ch), gpointer data)
{
  t->ready = ready;
  t->ready_data = data;
}

static gboolean release_queued(StwTier *t, guint32 ch, GError **error);

/* Buffer B's requests all landed: a read checked against what was written. */
static gboolean
landed(StwTier *t, int b, GError **error)
{
  Buffer *x = &t->buf[b];
  if (x->state == WRITING) {
    guint32 ch = x->chunk;
    x->state = x->forget ? EMPTY : CLEAN;
    x->chunk = x->forget ? NONE : x->chunk;
    x->forget = FALSE;
    return release_queued(t, ch, error);
  }
  guint32 ch = x->chunk;
  x->state = CLEAN;
  /* a step's buffer holds the region, the others the parameters alone; parameters never
   * written are zeros */
  gboolean state_ok = b >= N_STEP || chunk_sum(t, ch, x->mem) == t->sum[ch];
  gboolean params_ok = t->pbytes[ch] == 0 || t->pwrites[ch] == 0 ||
                       param_sum(t, ch, x->mem) == t->psum[ch];
  if (state_ok && params_ok) {
    if (t->pbytes[ch] > 0 && t->pwrites[ch] == 0)
      memset(x->mem, 0, t->pbytes[ch]);
    return TRUE;
  }
  x->state = EMPTY;
  x->failed = x->lent;
  x->chunk = x->lent ? ch : NONE; /* a lent buffer keeps its chunk until given back */
  return fail(error, "storage file %s: chunk %u's %s (%" G_GUINT64_FORMAT " bytes at offset %"
              G_GUINT64_FORMAT ") is not what was written to it: the file was altered or the "
              "device corrupted it; the run stops (resume from the last checkpoint: the storage "
              "files are rebuilt from it)", t->path, ch,
              state_ok ? "parameters" : "optimizer state",
              state_ok ? t->pbytes[ch] : t->bytes[ch],
              t->offset[ch] + (state_ok ? 0 : state_at(t, ch)));
}

static gboolean submit(StwTier *t, int b, gboolean write, GError **error);

/* Whether a buffer other than B holds chunk CH on its way out. */
static gboolean
writing(const StwTier *t, int b, guint32 ch)
{
  for (int o = 0; o < N_BUFFERS; o++)
    if (o != b && t->buf[o].chunk == ch && t->buf[o].state == WRITING)
      return TRUE;
  return FALSE;
}

/* A write to chunk CH landed: a parameter read queued behind it is issued, once no other write
 * to the chunk is in flight. */
static gboolean
release_queued(StwTier *t, guint32 ch, GError **error)
{
  for (int o = N_STEP; o < N_BUFFERS; o++)
    if (t->buf[o].state == QUEUED && t->buf[o].chunk == ch && !writing(t, o, ch) &&
        !submit(t, o, FALSE, error))
      return FALSE;
  return TRUE;
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
      g_string_append_printf(which, "%schunk %u's %s (%s)", which->len ? " or " : "", x->chunk,
                             b < N_STEP ? "optimizer state" : "parameters",
                             x->state == READING ? "being read" : "being written");
      *x = (Buffer){ .mem = x->mem, .chunk = x->lent ? x->chunk : NONE, .state = EMPTY,
                     .lent = x->lent, .failed = x->lent };
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

/* Buffer B's chunk read in (or, with WRITE, written out), in pieces: a step's buffer its region
 * (written without the parameters when it does not hold them), the others its parameters. */
static gboolean
submit(StwTier *t, int b, gboolean write, GError **error)
{
  Buffer *x = &t->buf[b];
  guint32 ch = x->chunk;
  /* no request on a chunk's region while another buffer's write to it is in flight: a read would
   * get what is half written, two writes could land in either order (another buffer may still
   * be writing CH, one it was told to forget) */
  for (int o = 0; o < N_BUFFERS; o++)
    if (o != b && t->buf[o].chunk == ch && t->buf[o].state == WRITING && !wait_buffer(t, o, error))
      return FALSE;
  gboolean whole = b < N_STEP, params = (!whole || !write || x->params) && t->pbytes[ch] > 0;
  guint64 from = params ? 0 : state_at(t, ch);
  guint64 to = whole ? state_at(t, ch) + region_bytes(t->bytes[ch]) : region_bytes(t->pbytes[ch]);
  if (write && whole) {
    t->writes[ch]++;
    t->sum[ch] = chunk_sum(t, ch, x->mem);
  }
  if (write && params) {
    t->pwrites[ch]++;
    t->psum[ch] = param_sum(t, ch, x->mem);
  }
  x->state = write ? WRITING : READING;
  x->params |= !write; /* a read brings the region whole */
  for (guint64 at = from; at < to; at += PIECE_BYTES) {
    gsize n = (gsize)MIN(PIECE_BYTES, to - at);
    x->pending++;
    if (!stw_storage_submit(t->io, (guint)t->file, write, x->mem + at, n, t->offset[ch] + at,
                            (guint64)b, error)) {
      x->pending--;
      g_prefix_error(error, whole ? "the optimizer state on the storage tier: "
                                  : "the parameters on the storage tier: ");
      return FALSE;
    }
  }
  /* a parameter buffer's bytes were counted when the store asked for them
   * (stw_tier_params_borrow): in the iteration that asked, however late they go */
  guint64 moved = whole ? t->bytes[ch] + (params ? t->pbytes[ch] : 0) : 0;
  if (write)
    t->st.write_bytes += moved;
  else
    t->st.read_bytes += moved;
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
  for (int b = 0; b < N_STEP; b++)
    if (t->buf[b].chunk == ch && !t->buf[b].forget)
      return b;
  return -1;
}

/* Of buffers FROM .. TO-1 not lent, the one to give another chunk: an empty one, else one whose
 * contents the file has or is getting, else the least recently used; -1 when all are lent. */
static int
best_buffer(const StwTier *t, int from, int to)
{
  static const int rank[] = { [EMPTY] = 0, [CLEAN] = 1, [WRITING] = 2, [READING] = 3,
                              [DIRTY] = 4, [QUEUED] = 5 };
  int best = -1;
  for (int b = from; b < to; b++) {
    const Buffer *x = &t->buf[b];
    if (x->lent)
      continue;
    if (best < 0 || rank[x->state] < rank[t->buf[best].state] ||
        (rank[x->state] == rank[t->buf[best].state] && x->used < t->buf[best].used))
      best = b;
  }
  return best;
}

/* The step's buffer to give another chunk. */
static int
victim(const StwTier *t)
{
  return best_buffer(t, 0, N_STEP);
}

guint8 *
stw_tier_state(StwTier *t, guint32 ch, gboolean modify, gboolean fresh, GError **error)
{
  g_assert(stw_tier_holds(t, ch));
  int b = find(t, ch);
  if (b >= 0 && !fresh && !t->buf[b].params && t->pbytes[ch] > 0) {
    /* a first state without the parameters read in: it goes out, and the region comes in */
    if (!empty_buffer(t, b, error))
      return NULL;
    b = -1;
  }
  if (b < 0) {
    b = victim(t);
    if (!empty_buffer(t, b, error))
      return NULL;
    t->buf[b].chunk = ch;
    if (fresh) {
      memset(t->buf[b].mem + state_at(t, ch), 0, region_bytes(t->bytes[ch]));
      t->buf[b].params = FALSE;
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
  guint32 next = t->order[i + 1];
  if (t->pbytes[next] > 0 && t->ready != NULL && !t->ready(t->ready_data, next))
    return TRUE; /* its parameters are still on their way to the file: read when stepped */
  for (int b = 0; b < N_STEP; b++) {
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
  for (int b = 0; b < N_STEP; b++) {
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
    if (x->lent)
      continue; /* the store's, until it gives it back */
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

/* A parameter buffer not lent (best_buffer's), its write landed; -1 with ERROR when a write
 * failed. */
static int
param_buffer(StwTier *t, GError **error)
{
  int best = best_buffer(t, N_STEP, N_BUFFERS);
  g_assert(best >= 0); /* the store, with both lent, gives one back before it asks again */
  return wait_buffer(t, best, error) ? best : -1;
}

guint8 *
stw_tier_params_borrow(StwTier *t, guint32 ch, gboolean load, GError **error)
{
  g_assert(stw_tier_holds_params(t, ch));
  if (!collect(t, 0, error))
    return NULL;
  /* a step's newer copy of them goes to the file first: the read below waits for it */
  for (int s = 0; load && s < N_STEP; s++) {
    Buffer *y = &t->buf[s];
    if (y->chunk == ch && y->state == DIRTY && y->params && !y->forget &&
        !submit(t, s, TRUE, error))
      return NULL;
  }
  int b = param_buffer(t, error);
  if (b < 0)
    return NULL;
  /* counted now, in the iteration that asks: a read goes now or when a write lands, a buffer
   * lent to copy into is written when the store's copy lands, perhaps in the next */
  if (load)
    t->st.read_bytes += t->pbytes[ch];
  else
    t->st.write_bytes += t->pbytes[ch];
  Buffer *x = &t->buf[b];
  *x = (Buffer){ .mem = x->mem, .chunk = ch, .state = EMPTY, .used = ++t->tick,
                 .to_write = !load };
  if (load && t->pwrites[ch] == 0) {
    memset(x->mem, 0, t->pbytes[ch]); /* never written: zeros */
    x->state = CLEAN;
  } else if (load && writing(t, b, ch)) {
    x->state = QUEUED; /* issued when the write lands: the compute goes on meanwhile */
  } else if (load && !submit(t, b, FALSE, error)) {
    *x = (Buffer){ .mem = x->mem, .chunk = NONE, .state = EMPTY };
    return NULL;
  }
  x->lent = TRUE;
  return x->mem;
}

/* The parameter buffer lent for CH. */
static int
lent_buffer(const StwTier *t, guint32 ch)
{
  for (int o = N_STEP; o < N_BUFFERS; o++)
    if (t->buf[o].lent && t->buf[o].chunk == ch)
      return o;
  g_assert_not_reached();
}

gint
stw_tier_params_loaded(StwTier *t, guint32 ch, gboolean wait, GError **error)
{
  int b = lent_buffer(t, ch);
  Buffer *x = &t->buf[b];
  if (!collect(t, 0, error))
    return -1;
  for (;;) {
    /* queued behind a write that failed, or none left: issued now */
    if (x->state == QUEUED && !writing(t, b, ch) && !submit(t, b, FALSE, error))
      return -1;
    if (x->failed) {
      g_set_error(error, STW_STORAGE_ERROR, STW_STORAGE_ERROR_IO,
                  "storage file %s: chunk %u's parameters could not be read (said where it "
                  "was found)", t->path, ch);
      return -1;
    }
    if (x->state != QUEUED && x->pending == 0)
      return 1;
    if (!wait)
      return 0;
    if (!collect(t, 1, error))
      return -1;
  }
}

gboolean
stw_tier_params_return(StwTier *t, guint32 ch, gboolean write, GError **error)
{
  int b = lent_buffer(t, ch);
  Buffer *x = &t->buf[b];
  x->lent = FALSE;
  x->failed = FALSE;
  if (write && !x->to_write) /* read, changed, written back (a checkpoint's values) */
    t->st.write_bytes += t->pbytes[ch];
  if (!write && x->to_write) /* never written after all */
    t->st.write_bytes -= MIN(t->st.write_bytes, t->pbytes[ch]);
  x->to_write = FALSE;
  if (!write) {
    if (x->pending > 0 && !wait_buffer(t, b, error)) /* a read not waited for lands first */
      return FALSE;
    *x = (Buffer){ .mem = x->mem, .chunk = NONE, .state = EMPTY };
    return TRUE;
  }
  /* a step's copy of the chunk is older now: read or being read, it is forgotten; with newer
   * parameters (a step's), written first, so that this write lands after it */
  for (int s = 0; s < N_STEP; s++) {
    Buffer *y = &t->buf[s];
    if (y->chunk != ch || y->forget || (y->state == DIRTY && !y->params))
      continue;
    if ((y->state == DIRTY && !submit(t, s, TRUE, error)) || !wait_buffer(t, s, error))
      return FALSE;
    *y = (Buffer){ .mem = y->mem, .chunk = NONE, .state = EMPTY };
  }
  return submit(t, b, TRUE, error);
}

/* checkpoint.c — the trainer's checkpoints: one rank's file (a header, the model state, its
 * SHA-256) and, on several ranks, a set committed by its manifest; see trainer.h and
 * docs/runtime.md. */
#include "config.h"

#include <stowage/trainer.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <glib/gstdio.h>

#include <stowage/comm.h>
#include <stowage/files.h>

#include "trainer-internal.h"

#define CKPT_MAGIC "STWCKPT1"
/* a checkpoint of bf16 moments: the header and 8 more bytes (the state dtype, 2: bf16), then the
 * state as fp32 values all the same (bf16 widens to fp32 exactly) */
#define CKPT_MAGIC_BF16 "STWCKPT2"

/* ---- checkpoints ------------------------------------------------------------------------------ */

typedef struct {
  char magic[8];
  guint64 layers, width, heads, context, batch, seed;
  guint64 step, pos, n_tensors, total_floats;
} CkptHeader;

G_STATIC_ASSERT(sizeof(CkptHeader) % sizeof(float) == 0);

/* The bytes before the state in a checkpoint of moments in STATE */
static gsize
header_bytes(StwDtype state)
{
  return sizeof(CkptHeader) + (state == STW_DTYPE_BF16 ? 8 : 0);
}

/* The state dtype a checkpoint's MAGIC says; FALSE when it is no checkpoint's */
static gboolean
magic_state(const char *magic, StwDtype *state)
{
  *state = memcmp(magic, CKPT_MAGIC_BF16, 8) == 0 ? STW_DTYPE_BF16 : STW_DTYPE_FP32;
  return memcmp(magic, CKPT_MAGIC, 8) == 0 || *state == STW_DTYPE_BF16;
}

/* Checkpoints hold at most 2^40 steps: beyond, AdamW's bias corrections are 1 to the last bit
 * and a step counter has no meaning. */
#define CKPT_MAX_STEP (G_GUINT64_CONSTANT(1) << 40)

static guint64
total_floats(const StwTrainer *t)
{
  guint64 total = 0;
  for (guint32 i = 0; i < t->model->tensors->len; i++)
    total += stw_trace_tensor(t->model, i)->numel;
  return total;
}

/* The first tensor of STATE (master weights, then momentum, then variance, TOTAL floats each,
 * tensor by tensor) holding a NaN or an infinity, or -1 with none; *LIST_OUT says which list. */
static gint64
first_non_finite(const StwTrainer *t, const float *state, guint64 total, int *list_out)
{
  for (int l = 0; l < 3; l++) {
    const float *p = state + (gsize)l * total;
    for (guint32 i = 0; i < t->model->tensors->len; i++) {
      guint64 n = stw_trace_tensor(t->model, i)->numel;
      for (guint64 k = 0; k < n; k++) {
        if (!isfinite(p[k])) {
          *list_out = l;
          return i;
        }
      }
      p += n;
    }
  }
  return -1;
}

static const char *const state_names[] = { "master weights", "Adam momentum", "Adam variance" };

#define ckpt_fail(...) \
  (g_set_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_CHECKPOINT, __VA_ARGS__), FALSE)

/* FILE is a checkpoint of one rank where N ranks look for theirs (MINE) */
static gboolean
ckpt_fail_world(GError **error, const char *file, const char *mine)
{
  return ckpt_fail("%s: a checkpoint of one rank, and this run has several (each reads its own, "
                   "%s here): resume on the world size that wrote it", file, mine);
}

/* A rank's own checkpoint file: FILE on one rank, FILE.rank-R-of-N on N (the caller's). */
static char *
rank_file(const StwTrainer *t, const char *file)
{
  if (t->world <= 1)
    return g_strdup(file);
  return g_strdup_printf("%s.rank-%u-of-%u", file, t->rank, t->world);
}

static gboolean save_file(StwTrainer *t, const char *file, guint8 digest[32], GError **error);
static gboolean load_file(StwTrainer *t, const char *file, guint8 digest[32], GError **error);

/* ---- the checkpoint of several ranks: a set, committed by its manifest ------------------------
 *
 * N ranks save one set: each rank's state in FILE.rank-R-of-N.step-S, and FILE, written by rank
 * 0 once every rank's file is whole, the manifest naming the step and each file's SHA-256. The
 * manifest is the commit: until it is replaced the previous set stays whole (its files are
 * removed only after), so that a rank killed at any moment leaves one set to resume; a resume
 * reads the manifest and each rank proves its file is the one the set names (a file of another
 * run at the same step is refused). */

#define SET_MAGIC "stowage-checkpoint-set 1"
#define SET_MAX_BYTES (64 + 96 * (gsize)65536) /* a manifest of 65,536 ranks at the most */

/* Rank R's file of the set FILE of WORLD ranks at STEP (the caller's). */
static char *
set_member(const char *file, guint32 rank, guint32 world, guint64 step)
{
  return g_strdup_printf("%s.rank-%u-of-%u.step-%" G_GUINT64_FORMAT, file, rank, world, step);
}

/* Removes this rank's files of sets of FILE other than KEEP (earlier sets, or a set that did
 * not commit), and its file of the one-file-per-rank form before sets. */
static void
remove_other_members(const StwTrainer *t, const char *file, const char *keep)
{
  g_autofree char *dir = g_path_get_dirname(file), *base = g_path_get_basename(file);
  g_autofree char *prefix = g_strdup_printf("%s.rank-%u-of-%u", base, t->rank, t->world);
  g_autofree char *keep_base = keep != NULL ? g_path_get_basename(keep) : NULL;
  GDir *d = g_dir_open(dir, 0, NULL);
  for (const char *name; d != NULL && (name = g_dir_read_name(d)) != NULL;) {
    gboolean member = strcmp(name, prefix) == 0 ||
                      (g_str_has_prefix(name, prefix) &&
                       g_str_has_prefix(name + strlen(prefix), ".step-"));
    if (member && g_strcmp0(name, keep_base) != 0) {
      g_autofree char *path = g_build_filename(dir, name, NULL);
      g_remove(path);
    }
  }
  if (d != NULL)
    g_dir_close(d);
}

/* Every rank's HEX digest (65 bytes each, "" for a rank that failed), from every rank. */
static gboolean
exchange_digests(StwTrainer *t, const char *mine, char (*all)[65], GError **error)
{
  for (guint32 r = 0; r < t->world; r++) {
    if (r == t->rank)
      g_strlcpy(all[r], mine, 65);
    if (!stw_comm_finish(t->comm, t->comm->broadcast(t->comm, all[r], 65, r),
                         "the checkpoint's files", error))
      return FALSE;
  }
  return TRUE;
}

static void
hex_of(const guint8 digest[32], char out[65])
{
  for (int i = 0; i < 32; i++)
    g_snprintf(out + 2 * i, 3, "%02x", digest[i]);
}

static gboolean
save_set(StwTrainer *t, const char *file, GError **error)
{
  g_autofree char *mine = set_member(file, t->rank, t->world, t->step);
  guint8 digest[32];
  char hex[65] = "";
  GError *local = NULL;
  if (save_file(t, mine, digest, &local))
    hex_of(digest, hex);
  g_autofree char (*all)[65] = g_malloc0((gsize)t->world * 65);
  if (!exchange_digests(t, hex, all, error)) {
    g_clear_error(&local);
    return FALSE;
  }
  for (guint32 r = 0; r < t->world; r++) {
    if (all[r][0] != '\0')
      continue;
    if (local == NULL)
      g_set_error(&local, STW_TRAINER_ERROR, STW_TRAINER_ERROR_CHECKPOINT,
                  "%s: rank %u could not write its file of step %" G_GUINT64_FORMAT, file, r,
                  t->step);
    g_remove(mine);
    g_prefix_error(&local, "the checkpoint set of step %" G_GUINT64_FORMAT " is not saved, and "
                   "the last one is kept: ", t->step);
    g_propagate_error(error, local);
    return FALSE;
  }
  /* every file whole: rank 0 commits the set */
  char committed = 1;
  if (t->rank == 0) {
    GString *m = g_string_new(SET_MAGIC "\n");
    g_string_append_printf(m, "world %u\nstep %" G_GUINT64_FORMAT "\n", t->world, t->step);
    for (guint32 r = 0; r < t->world; r++)
      g_string_append_printf(m, "rank %u %s\n", r, all[r]);
    committed = stw_file_write_atomic(file, m->str, m->len, &local) ? 1 : 0;
    g_string_free(m, TRUE);
  }
  if (!stw_comm_finish(t->comm, t->comm->broadcast(t->comm, &committed, 1, 0),
                       "the checkpoint's manifest", error)) {
    g_clear_error(&local);
    return FALSE;
  }
  if (!committed) {
    g_remove(mine);
    if (local == NULL)
      g_set_error(&local, STW_TRAINER_ERROR, STW_TRAINER_ERROR_CHECKPOINT,
                  "%s: rank 0 could not write the set's manifest", file);
    g_prefix_error(&local, "the checkpoint set of step %" G_GUINT64_FORMAT " is not saved, and "
                   "the last one is kept: ", t->step);
    g_propagate_error(error, local);
    return FALSE;
  }
  remove_other_members(t, file, mine);
  return TRUE;
}

/* FILE as the manifest of a set: its world, step and digests (ALL, world entries, the
 * caller's); FALSE with ERROR when it is not one. */
static gboolean
read_manifest(const char *file, guint32 *world, guint64 *step, char (**all)[65],
              GError **error)
{
  g_autofree char *text = NULL;
  gsize len = 0;
  GError *local = NULL;
  if (!stw_file_read(file, SET_MAX_BYTES, &text, &len, &local)) {
    g_set_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_CHECKPOINT, "%s", local->message);
    g_error_free(local);
    return FALSE;
  }
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  guint n = g_strv_length(lines);
  guint64 w = 0;
  if (n < 4 || strcmp(lines[0], SET_MAGIC) != 0 ||
      sscanf(lines[1], "world %" G_GUINT64_FORMAT, &w) != 1 || w < 2 || w > 65536 ||
      sscanf(lines[2], "step %" G_GUINT64_FORMAT, step) != 1 || *step > CKPT_MAX_STEP ||
      n < 3 + w)
    return ckpt_fail("%s: not the manifest of a stowage checkpoint set (or truncated)", file);
  *world = (guint32)w;
  *all = g_malloc0((gsize)w * 65);
  for (guint32 r = 0; r < w; r++) {
    guint rank = 0;
    char hex[65] = "";
    if (sscanf(lines[3 + r], "rank %u %64s", &rank, hex) != 2 || rank != r ||
        strlen(hex) != 64 || strspn(hex, "0123456789abcdef") != 64) {
      g_clear_pointer(all, g_free);
      return ckpt_fail("%s: line %u: expected \"rank %u\" and a SHA-256: not the manifest of a "
                       "stowage checkpoint set (or edited)", file, 4 + r, r);
    }
    g_strlcpy((*all)[r], hex, 65);
  }
  return TRUE;
}

/* Whether FILE begins as a set's manifest. */
static gboolean
is_manifest(const char *file)
{
  char head[sizeof SET_MAGIC] = "";
  FILE *f = fopen(file, "rb");
  gboolean yes = f != NULL && fread(head, 1, sizeof head - 1, f) == sizeof head - 1 &&
                 strcmp(head, SET_MAGIC) == 0;
  if (f != NULL)
    fclose(f);
  return yes;
}

static gboolean
load_set(StwTrainer *t, const char *file, GError **error)
{
  guint32 world = 0;
  guint64 step = 0;
  g_autofree char (*all)[65] = NULL;
  if (!read_manifest(file, &world, &step, &all, error))
    return FALSE;
  if (world != t->world)
    return ckpt_fail("%s: the checkpoint of %u ranks (%s.rank-R-of-%u.step-%" G_GUINT64_FORMAT
                     "), and this run has %u: resume on the world size that wrote it", file,
                     world, file, world, step, t->world);
  g_autofree char *mine = set_member(file, t->rank, world, step);
  guint8 digest[32];
  char hex[65];
  if (!load_file(t, mine, digest, error))
    return FALSE;
  hex_of(digest, hex);
  if (strcmp(hex, all[t->rank]) != 0 || t->step != step)
    return ckpt_fail("%s: not the file of rank %u that the set %s names (its SHA-256 is %.16s, "
                     "the set's %.16s): a file of another run, or of another set", mine, t->rank,
                     file, hex, all[t->rank]);
  return TRUE;
}

gboolean
stw_trainer_save(StwTrainer *t, const char *file, GError **error)
{
  if (t->world > 1)
    return save_set(t, file, error);
  return save_file(t, file, NULL, error);
}

/* The world size of FILE's per-rank checkpoints (FILE.rank-0-of-N), or 0 when there are none. */
static guint32
ranks_of(const char *file)
{
  g_autofree char *dir = g_path_get_dirname(file), *base = g_path_get_basename(file);
  g_autofree char *prefix = g_strconcat(base, ".rank-0-of-", NULL);
  GDir *d = g_dir_open(dir, 0, NULL);
  guint32 world = 0;
  for (const char *name; d != NULL && (name = g_dir_read_name(d)) != NULL;) {
    if (g_str_has_prefix(name, prefix))
      world = (guint32)g_ascii_strtoull(name + strlen(prefix), NULL, 10);
  }
  if (d != NULL)
    g_dir_close(d);
  return world;
}

gboolean
stw_trainer_load(StwTrainer *t, const char *file, GError **error)
{
  g_autofree char *mine = rank_file(t, file);
  if (is_manifest(file)) { /* a set of several ranks' files */
    if (t->world <= 1) {
      guint32 world = 0;
      guint64 step = 0;
      g_autofree char (*all)[65] = NULL;
      if (!read_manifest(file, &world, &step, &all, error))
        return FALSE;
      return ckpt_fail("%s: the checkpoint of %u ranks, and this run has one: resume on the "
                       "world size that wrote it", file, world);
    }
    if (!load_set(t, file, error))
      return FALSE;
  } else {
    /* one rank's file; or on several, the files of each rank before sets (FILE.rank-R-of-N) */
    if (!g_file_test(mine, G_FILE_TEST_EXISTS)) {
      guint32 other = ranks_of(file);
      if (t->world > 1 && g_file_test(file, G_FILE_TEST_EXISTS))
        return ckpt_fail_world(error, file, mine);
      if (other > 0 && other != t->world)
        return ckpt_fail("%s: the checkpoint of %u ranks (%s.rank-R-of-%u), and this run has "
                         "%u: resume on the world size that wrote it", file, other, file, other,
                         t->world);
    }
    if (!load_file(t, mine, NULL, error))
      return FALSE;
  }
  /* every rank at the same step and position: no mix of checkpoints across steps */
  g_autofree char *at = g_strdup_printf("step %" G_GUINT64_FORMAT " at position %" G_GSIZE_FORMAT,
                                        t->step, t->pos);
  return t->world <= 1 || stw_comm_agree(t->comm, "the checkpoint's step", at, error);
}

/* Writes the checkpoint of this rank's state to FILE, atomically; DIGEST (may be NULL) gets its
 * SHA-256. */
static gboolean
save_file(StwTrainer *t, const char *file, guint8 digest[32], GError **error)
{
  guint32 n = t->model->tensors->len;
  guint64 total = total_floats(t);
  CkptHeader h = { .layers = t->c.layers, .width = t->c.width, .heads = t->c.heads,
                   .context = t->c.context, .batch = t->c.batch, .seed = t->c.seed,
                   .step = t->step, .pos = t->pos, .n_tensors = n, .total_floats = total };
  StwDtype moments = stw_runtime_state_dtype(t->rt);
  memcpy(h.magic, moments == STW_DTYPE_BF16 ? CKPT_MAGIC_BF16 : CKPT_MAGIC, 8);
  gsize head = header_bytes(moments), body = head + 3 * total * sizeof(float);
  g_autofree guint8 *buf = g_malloc0(body + 32);
  memcpy(buf, &h, sizeof h);
  if (moments == STW_DTYPE_BF16)
    buf[sizeof h] = 2; /* the state dtype field, little-endian */
  float *state = (float *)(buf + head), *p = state;
  for (guint32 i = 0; i < n; i++) {
    guint64 k = stw_trace_tensor(t->model, i)->numel;
    if (!stw_runtime_read_state(t->rt, i, p, p + total, p + 2 * total, error)) {
      g_prefix_error(error, "%s: not saved: ", file);
      return FALSE;
    }
    p += k;
  }
  /* a diverged state never replaces a checkpoint */
  int list = 0;
  gint64 bad = first_non_finite(t, state, total, &list);
  if (bad >= 0) {
    g_set_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_DIVERGED,
                "%s: not saved: the %s of %s hold a NaN or an infinity at step %" G_GUINT64_FORMAT
                " (training diverged); the file is left as it was", file, state_names[list],
                stw_trace_tensor(t->model, (guint32)bad)->name, t->step);
    return FALSE;
  }
  GChecksum *sum = g_checksum_new(G_CHECKSUM_SHA256);
  g_checksum_update(sum, buf, body);
  gsize dlen = 32;
  g_checksum_get_digest(sum, buf + body, &dlen);
  g_checksum_free(sum);
  if (digest != NULL)
    memcpy(digest, buf + body, 32);
  return stw_file_write_atomic(file, (const char *)buf, body + 32, error);
}

/* Every field of H against this trainer's model and data, before any is used. */
static gboolean
check_header(const StwTrainer *t, const char *file, const CkptHeader *h, guint64 total,
             GError **error)
{
  if (h->layers != t->c.layers || h->width != t->c.width || h->heads != t->c.heads ||
      h->context != t->c.context || h->batch != t->c.batch ||
      h->n_tensors != t->model->tensors->len || h->total_floats != total)
    return ckpt_fail("%s: a checkpoint of another model (layers %" G_GUINT64_FORMAT ", width %"
                     G_GUINT64_FORMAT ", heads %" G_GUINT64_FORMAT ", context %" G_GUINT64_FORMAT
                     ", batch %" G_GUINT64_FORMAT ")", file, h->layers, h->width, h->heads,
                     h->context, h->batch);
  if (h->step > CKPT_MAX_STEP)
    return ckpt_fail("%s: step %" G_GUINT64_FORMAT " is beyond the %" G_GUINT64_FORMAT " steps a "
                     "checkpoint holds", file, h->step, CKPT_MAX_STEP);
  gsize n = t->c.batch * t->c.context * t->world;
  if (h->pos > t->len || t->len - h->pos < n + 1)
    return ckpt_fail("%s: data position %" G_GUINT64_FORMAT " is past the last batch of the "
                     "training text (%" G_GSIZE_FORMAT " bytes): a checkpoint of training on "
                     "another text", file, h->pos, t->len);
  return TRUE;
}

/* Loads the checkpoint FILE; DIGEST (may be NULL) gets its SHA-256 (checked against its body). */
static gboolean
load_file(StwTrainer *t, const char *file, guint8 digest[32], GError **error)
{
  guint64 total = total_floats(t);
  gsize expect = sizeof(CkptHeader) + 3 * total * sizeof(float) + 32;
  g_autofree char *text = NULL;
  gsize len = 0;
  GError *local = NULL;
  /* a checkpoint of this model has one size (for its state dtype): anything else is refused
   * unread */
  GStatBuf st;
  if (g_stat(file, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= (goffset)(sizeof(CkptHeader) + 32)) {
    CkptHeader h = { 0 };
    FILE *f = fopen(file, "rb");
    StwDtype state = STW_DTYPE_FP32;
    if (f != NULL && fread(&h, sizeof h, 1, f) == 1 && magic_state(h.magic, &state))
      expect = header_bytes(state) + 3 * total * sizeof(float) + 32;
    if (f != NULL)
      fclose(f);
  }
  if (g_stat(file, &st) == 0 && S_ISREG(st.st_mode) && (guint64)st.st_size != expect &&
      st.st_size >= (goffset)(sizeof(CkptHeader) + 32)) {
    CkptHeader h = { 0 };
    FILE *f = fopen(file, "rb");
    StwDtype state;
    gboolean ours = f != NULL && fread(&h, sizeof h, 1, f) == 1 && magic_state(h.magic, &state);
    if (f != NULL)
      fclose(f);
    if (ours && !check_header(t, file, &h, total, error))
      return FALSE;
    return ckpt_fail("%s: %" G_GUINT64_FORMAT " bytes, where a checkpoint of this model has %"
                     G_GSIZE_FORMAT ": truncated, or not a stowage checkpoint", file,
                     (guint64)st.st_size, expect);
  }
  if (!stw_file_read(file, expect, &text, &len, &local)) {
    gboolean limit = g_error_matches(local, STW_FILES_ERROR, STW_FILES_ERROR_LIMIT);
    g_set_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_CHECKPOINT, "%s%s", local->message,
                limit ? " (a checkpoint is a regular file of a fixed size)" : "");
    g_error_free(local);
    return FALSE;
  }
  if (!stw_trainer_load_data(t, file, (const guint8 *)text, len, error))
    return FALSE;
  if (digest != NULL)
    memcpy(digest, text + len - 32, 32);
  return TRUE;
}

StwDtype
stw_trainer_resumed_state(const StwTrainer *t)
{
  return t->resumed_state;
}

gboolean
stw_trainer_load_data(StwTrainer *t, const char *file, const guint8 *buf, gsize len,
                      GError **error)
{
  guint64 total = total_floats(t);
  CkptHeader h;
  StwDtype moments = STW_DTYPE_FP32;
  if (len < sizeof h + 32 || !magic_state((const char *)buf, &moments))
    return ckpt_fail("%s: not a stowage checkpoint (or truncated)", file);
  memcpy(&h, buf, sizeof h);
  gsize head = header_bytes(moments);
  guint8 digest[32];
  gsize dlen = 32;
  GChecksum *sum = g_checksum_new(G_CHECKSUM_SHA256);
  g_checksum_update(sum, buf, len - 32);
  g_checksum_get_digest(sum, digest, &dlen);
  g_checksum_free(sum);
  if (memcmp(digest, buf + len - 32, 32) != 0)
    return ckpt_fail("%s: checksum mismatch: the checkpoint is corrupt", file);
  /* the checksum is no key: every field is checked before it is used */
  if (!check_header(t, file, &h, total, error))
    return FALSE;
  gsize expect = head + 3 * total * sizeof(float) + 32;
  if (len != expect)
    return ckpt_fail("%s: %" G_GSIZE_FORMAT " bytes, where a checkpoint of this model has %"
                     G_GSIZE_FORMAT ": truncated, or not a stowage checkpoint", file, len, expect);
  /* the state as floats: in place when BYTES is aligned for them (a file read whole is) */
  g_autofree float *copy = NULL;
  guint64 field = 2;
  if (moments == STW_DTYPE_BF16)
    memcpy(&field, buf + sizeof h, sizeof field);
  if (field != 2)
    return ckpt_fail("%s: the state dtype field is %" G_GUINT64_FORMAT ", where a checkpoint of "
                     "bf16 moments has 2", file, field);
  const float *state = (const float *)(buf + head);
  if ((guintptr)state % G_ALIGNOF(float) != 0)
    state = copy = g_memdup2(buf + head, 3 * total * sizeof(float));
  int list = 0;
  gint64 bad = first_non_finite(t, state, total, &list);
  if (bad >= 0)
    return ckpt_fail("%s: the %s of %s hold a NaN or an infinity: the checkpoint of a diverged "
                     "run", file, state_names[list],
                     stw_trace_tensor(t->model, (guint32)bad)->name);
  const float *p = state;
  for (guint32 i = 0; i < t->model->tensors->len; i++) {
    if (!stw_runtime_write_state(t->rt, i, p, p + total, p + 2 * total, error)) {
      g_prefix_error(error, "%s: ", file);
      return FALSE;
    }
    p += stw_trace_tensor(t->model, i)->numel;
  }
  t->step = h.step;
  t->pos = h.pos;
  t->resumed_state = moments;
  return TRUE;
}

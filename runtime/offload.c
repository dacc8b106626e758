/* offload.c — the replay of a plan's activation moves; see offload.h. */
#include "config.h"

#include "offload.h"

#include <stowage/runtime.h>

typedef struct {
  StwActivationMove move;
  guint n;                               /* allocations handed over this iteration */
  gpointer *slot[STW_OFFLOAD_MAX_SLOTS]; /* the trainer's pointers to them */
  gsize bytes[STW_OFFLOAD_MAX_SLOTS];
  gpointer host[STW_OFFLOAD_MAX_SLOTS];  /* the host buffers, kept for the run */
  gsize host_bytes[STW_OFFLOAD_MAX_SLOTS];
  StwEvent *event[STW_OFFLOAD_MAX_SLOTS]; /* the copy in flight, out or back */
  gpointer device[STW_OFFLOAD_MAX_SLOTS]; /* device memory the offloader holds (copying out,
                                           * or brought back and not yet given) */
} Offloaded;

struct StwOffloader {
  StwStore *s;
  StwBackend *be;
  GArray *blocks; /* Offloaded, one per move */
};

StwOffloader *
stw_offloader_new(const GArray *moves, StwStore *s, StwBackend *backend)
{
  StwOffloader *o = g_new0(StwOffloader, 1);
  o->s = s;
  o->be = backend;
  o->blocks = g_array_sized_new(FALSE, TRUE, sizeof(Offloaded), moves->len);
  g_array_set_size(o->blocks, moves->len);
  for (guint i = 0; i < moves->len; i++)
    g_array_index(o->blocks, Offloaded, i).move = g_array_index(moves, StwActivationMove, i);
  return o;
}

/* Waits for X's copies in flight (errors aside) and frees the device memory it holds. */
static void
settle(StwOffloader *o, Offloaded *x)
{
  for (guint i = 0; i < STW_OFFLOAD_MAX_SLOTS; i++) {
    if (x->event[i] != NULL) {
      GError *ignored = NULL;
      stw_store_wait_copy(o->s, x->event[i], &ignored);
      g_clear_error(&ignored);
      x->event[i] = NULL;
    }
    if (x->device[i] != NULL)
      stw_store_release(o->s, x->device[i]);
    x->device[i] = NULL;
  }
  x->n = 0;
}

void
stw_offloader_free(StwOffloader *o)
{
  if (o == NULL)
    return;
  for (guint b = 0; b < o->blocks->len; b++) {
    Offloaded *x = &g_array_index(o->blocks, Offloaded, b);
    settle(o, x);
    for (guint i = 0; i < STW_OFFLOAD_MAX_SLOTS; i++)
      if (x->host[i] != NULL)
        o->be->host_free(o->be, x->host[i]);
  }
  g_array_unref(o->blocks);
  g_free(o);
}

static Offloaded *
find(StwOffloader *o, guint32 block)
{
  for (guint b = 0; b < o->blocks->len; b++)
    if (g_array_index(o->blocks, Offloaded, b).move.block == block)
      return &g_array_index(o->blocks, Offloaded, b);
  return NULL;
}

gboolean
stw_offloader_hand(StwOffloader *o, guint32 block, gpointer *const *slots, guint n,
                   GError **error)
{
  Offloaded *x = o != NULL ? find(o, block) : NULL;
  if (x == NULL || x->n > 0 || n > STW_OFFLOAD_MAX_SLOTS) {
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH, "block %u's activations: "
                "%s", block, x == NULL ? "the plan does not offload this block"
                : x->n > 0             ? "handed over twice in one iteration"
                                       : "more allocations than an offloaded block may have");
    return FALSE;
  }
  guint64 sum = 0;
  for (guint i = 0; i < n; i++) {
    x->slot[i] = slots[i];
    x->bytes[i] = stw_store_allocation_bytes(o->s, *slots[i]);
    sum += x->bytes[i];
  }
  if (sum != x->move.bytes) {
    g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH, "block %u keeps %"
                G_GUINT64_FORMAT " bytes of activations for backward, and the plan offloads %"
                G_GUINT64_FORMAT ": it was made for another model or batch", block, sum,
                x->move.bytes);
    return FALSE;
  }
  x->n = n;
  return TRUE;
}

/* Waits for X's copies; FALSE with ERROR when one failed. */
static gboolean
wait_all(StwOffloader *o, Offloaded *x, GError **error)
{
  for (guint i = 0; i < x->n; i++) {
    StwEvent *e = x->event[i];
    x->event[i] = NULL;
    if (e != NULL && !stw_store_wait_copy(o->s, e, error))
      return FALSE;
  }
  return TRUE;
}

/* The block was not handed over by its move's first moment: the trainer does not offload it. */
static gboolean
not_handed(const Offloaded *x, GError **error)
{
  g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_MISMATCH, "block %u's activations "
              "were not handed over by the end of its forward (moment %u), and the plan "
              "offloads them", x->move.block, x->move.out_moment);
  return FALSE;
}

gboolean
stw_offloader_before(StwOffloader *o, guint32 m, GError **error)
{
  for (guint b = 0; b < o->blocks->len; b++) {
    Offloaded *x = &g_array_index(o->blocks, Offloaded, b);
    if (x->move.out_moment == m) {
      if (x->n == 0)
        return not_handed(x, error);
      for (guint i = 0; i < x->n; i++) {
        if (x->host[i] == NULL || x->host_bytes[i] != x->bytes[i]) {
          if (x->host[i] != NULL)
            o->be->host_free(o->be, x->host[i]);
          x->host[i] = o->be->host_alloc(o->be, MAX(x->bytes[i], 1));
          x->host_bytes[i] = x->bytes[i];
          if (x->host[i] == NULL) {
            g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_DEVICE, "block %u's "
                        "activations: no host memory for %" G_GSIZE_FORMAT " bytes: %s",
                        x->move.block, x->bytes[i], o->be->error);
            return FALSE;
          }
        }
        x->device[i] = *x->slot[i];
        *x->slot[i] = NULL; /* the trainer's until it comes back */
        x->event[i] = stw_store_copy_out(o->s, x->device[i], x->host[i]);
      }
    }
    if (x->move.out_done == m && x->n > 0) {
      if (!wait_all(o, x, error))
        return FALSE;
      for (guint i = 0; i < x->n; i++) {
        stw_store_release(o->s, x->device[i]);
        x->device[i] = NULL;
      }
    }
  }
  return TRUE;
}

gboolean
stw_offloader_after(StwOffloader *o, guint32 m, GError **error)
{
  for (guint b = 0; b < o->blocks->len; b++) {
    Offloaded *x = &g_array_index(o->blocks, Offloaded, b);
    if (x->move.in_moment == m && x->n > 0) {
      for (guint i = 0; i < x->n; i++) {
        x->device[i] = stw_store_copy_in(o->s, x->host[i], x->bytes[i], &x->event[i], error);
        if (x->device[i] == NULL)
          return FALSE;
      }
    }
    if (x->move.in_done == m && x->n > 0) {
      if (!wait_all(o, x, error))
        return FALSE;
      for (guint i = 0; i < x->n; i++) {
        *x->slot[i] = x->device[i]; /* the trainer's again */
        x->device[i] = NULL;
      }
      x->n = 0;
    }
  }
  return TRUE;
}

void
stw_offloader_abandon(StwOffloader *o)
{
  for (guint b = 0; o != NULL && b < o->blocks->len; b++)
    settle(o, &g_array_index(o->blocks, Offloaded, b));
}

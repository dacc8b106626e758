/* test-comm.c — the communicators of comm.h, run by tests/test-mpi.sh under mpirun with 2 and 4
 * ranks (and alone: one rank, self). Every rank checks what it received against what the others
 * must have sent (each rank's data is a function of its rank); the ranks then agree on the
 * verdict, and rank 0 prints one line per check. Exit status 0 when every check passed on every
 * rank. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>

#include <stowage/comm.h>

#include "bf16.h"

static StwComm *c;
static int failures;

/* the value rank Q puts at element I of block B */
static float
value(guint32 q, gsize b, gsize i)
{
  return (float)(q + 1) * 1000.0f + (float)b * 10.0f + (float)i * 0.001f;
}

/* All the ranks' verdict on OK, printed by rank 0. */
static void
check(const char *what, gboolean ok)
{
  float bad = ok ? 0.0f : 1.0f;
  GError *error = NULL;
  if (!stw_comm_finish(c, c->all_reduce(c, &bad, 1, STW_DTYPE_FP32), "the verdict", &error))
    g_error("%s", error->message);
  gboolean all = bad == 0.0f;
  if (c->rank == 0)
    printf("%s %s (%u ranks)\n", all ? "ok" : "not ok", what, c->world);
  failures += !all;
}

static void
test_all_gather(void)
{
  gsize n = 1000, bytes = n * sizeof(float);
  g_autofree float *own = g_new(float, n), *others = g_new(float, n * (c->world - 1 + 1));
  for (gsize i = 0; i < n; i++)
    own[i] = value(c->rank, 0, i);
  GError *error = NULL;
  gboolean ok = stw_comm_finish(c, c->all_gather(c, own, others, bytes), "all_gather", &error);
  /* the others' blocks in rank order, this rank left out */
  gsize k = 0;
  for (guint32 q = 0; q < c->world && ok; q++) {
    if (q == c->rank)
      continue;
    for (gsize i = 0; i < n && ok; i++)
      ok = others[k * n + i] == value(q, 0, i);
    k++;
  }
  check("all_gather fills the others' blocks in rank order", ok);
  g_clear_error(&error);
}

static void
test_reduce_scatter(void)
{
  gsize n = 777, bytes = n * sizeof(float), blocks = c->world - 1;
  g_autofree float *own = g_new(float, n), *others = g_new(float, n * (blocks + 1));
  /* rank q's part for rank p: value(q, p, i); its own part is value(q, q, i) */
  for (gsize i = 0; i < n; i++)
    own[i] = value(c->rank, c->rank, i);
  gsize k = 0;
  for (guint32 p = 0; p < c->world; p++) {
    if (p == c->rank)
      continue;
    for (gsize i = 0; i < n; i++)
      others[k * n + i] = value(c->rank, p, i);
    k++;
  }
  GError *error = NULL;
  gboolean ok = stw_comm_finish(c, c->reduce_scatter(c, own, others, bytes, STW_DTYPE_FP32),
                                "reduce_scatter", &error);
  /* the mean over the ranks of their parts for this rank, added in rank order */
  for (gsize i = 0; i < n && ok; i++) {
    float sum = 0;
    for (guint32 q = 0; q < c->world; q++)
      sum = q == 0 ? value(q, c->rank, i) : sum + value(q, c->rank, i);
    ok = own[i] == sum * (1.0f / (float)c->world);
  }
  check("reduce_scatter gives each rank the mean of its parts, in rank order, bitwise", ok);
  g_clear_error(&error);
}

static void
test_all_reduce_broadcast(void)
{
  float v[3] = { (float)c->rank, 1.0f, (float)(c->rank * c->rank) };
  GError *error = NULL;
  gboolean ok = stw_comm_finish(c, c->all_reduce(c, v, 3, STW_DTYPE_FP32), "all_reduce", &error);
  double mean = 0, sq = 0;
  for (guint32 q = 0; q < c->world; q++) {
    mean += q;
    sq += (double)q * q;
  }
  ok = ok && fabs(v[0] - mean / c->world) < 1e-6 && v[1] == 1.0f &&
       fabs(v[2] - sq / c->world) < 1e-5;
  check("all_reduce takes the mean", ok);
  char text[32];
  g_snprintf(text, sizeof text, "from rank %u", c->rank);
  ok = stw_comm_finish(c, c->broadcast(c, text, sizeof text, c->world - 1), "broadcast", &error);
  char want[32];
  g_snprintf(want, sizeof want, "from rank %u", c->world - 1);
  check("broadcast from the last rank", ok && strcmp(text, want) == 0);
  g_clear_error(&error);
}

/* bf16 gradients are averaged as they are: widened, added in rank order, rounded once */
static void
test_all_reduce_bf16(void)
{
  gsize n = 301;
  g_autofree guint16 *v = g_new(guint16, n);
  for (gsize i = 0; i < n; i++)
    v[i] = stw_bf16_from_float(value(c->rank, 1, i));
  GError *error = NULL;
  gboolean ok = stw_comm_finish(c, c->all_reduce(c, v, n, STW_DTYPE_BF16), "all_reduce", &error);
  for (gsize i = 0; i < n && ok; i++) {
    float sum = 0;
    for (guint32 q = 0; q < c->world; q++) {
      float x = stw_bf16_to_float(stw_bf16_from_float(value(q, 1, i)));
      sum = q == 0 ? x : sum + x;
    }
    ok = v[i] == stw_bf16_from_float(sum * (1.0f / (float)c->world));
  }
  check("all_reduce of bf16 rounds the rank-order mean once, bitwise", ok);
  g_clear_error(&error);
}

/* the last rank comes 200 ms late: nobody leaves the barrier before it has come */
static void
test_barrier(void)
{
  if (c->rank == c->world - 1 && c->world > 1)
    g_usleep(200000);
  gint64 t0 = g_get_monotonic_time();
  GError *error = NULL;
  gboolean ok = stw_comm_finish(c, c->barrier(c), "barrier", &error);
  gint64 waited = g_get_monotonic_time() - t0;
  check("a barrier waits for the last rank", ok && (c->world == 1 || c->rank == c->world - 1 ||
                                                    waited >= 150000));
  g_clear_error(&error);
}

static void
test_agree(void)
{
  GError *error = NULL;
  gboolean same = stw_comm_agree(c, "the plan", "digest-1234", &error);
  check("ranks with the same plan agree", same && error == NULL);
  g_clear_error(&error);
  g_autofree char *key = g_strdup_printf("digest-%u", c->rank == c->world - 1 ? 9u : 1u);
  gboolean differ = stw_comm_agree(c, "the plan", key, &error);
  g_autofree char *want = g_strdup_printf("the ranks disagree on the plan: rank %u has another "
                                          "than rank 0", c->world - 1);
  check("a rank with another plan is named", c->world == 1 ? differ
                                             : !differ && error != NULL &&
                                                   strstr(error->message, want) != NULL);
  g_clear_error(&error);
}

/* One rank alone: NCCL starts on a GPU, or says which call failed and why; a build without it
 * says so. (The collectives on GPUs are run on a machine that has them.) */
static void
test_nccl_alone(void)
{
  if (c->world != 1)
    return;
  GError *error = NULL;
  StwComm *g = stw_comm_nccl_new(c, 1000, &error);
  gboolean ok;
#ifdef STW_HAVE_NCCL
  ok = g != NULL ? g->device_memory && g->host == c && strcmp(g->name, "nccl") == 0
                 : g_error_matches(error, STW_COMM_ERROR, STW_COMM_ERROR_FAILED) &&
                     g_str_has_prefix(error->message, "rank 0 of 1: NCCL on GPU 0: cuda");
#else
  ok = g == NULL && g_error_matches(error, STW_COMM_ERROR, STW_COMM_ERROR_UNSUPPORTED) &&
       strstr(error->message, "built without NCCL") != NULL;
#endif
  if (g != NULL)
    g->free(g);
  if (error != NULL && c->rank == 0)
    printf("# %s\n", error->message);
  check("NCCL starts on a GPU, or says why not", ok);
  g_clear_error(&error);
}

int
main(int argc, char **argv)
{
  (void)argc, (void)argv;
  GError *error = NULL;
  c = stw_comm_launched_with_ranks() ? stw_comm_mpi_new(60000, &error) : stw_comm_self_new();
  if (c == NULL) {
    fprintf(stderr, "test-comm: %s\n", error->message);
    return 1;
  }
  test_all_gather();
  test_reduce_scatter();
  test_all_reduce_broadcast();
  test_all_reduce_bf16();
  test_barrier();
  test_agree();
  test_nccl_alone();
  int status = failures > 0;
  c->free(c);
  return status;
}

/* simulate.c — the event model of one steady-state iteration; see simulate.h. */
#include "config.h"

#include <stowage/simulate.h>

#include <math.h>
#include <string.h>

#include <stowage/cost.h>

#include "simulate-demand.h"

#define ITERATIONS 3
#define MEASURED 1 /* the iteration whose figures are reported (0-based) */

typedef struct {
  guint64 t;
  guint64 bytes;
} PendingFree;

typedef struct {
  guint64 start_ns, end_ns;
} Interval;

typedef struct {
  const StwPlan *p;
  const StwTrace *t;
  const StwDemand *d;
  StwSimulation *out;
  gboolean record;            /* in the measured iteration, with detail */
  guint64 base;               /* start of the measured iteration */
  guint64 chunk_mem;          /* allocated chunk bytes, frees not yet applied */
  GArray *pending;            /* PendingFree, sorted by time */
  guint64 nonmodel;           /* activations now */
  guint64 *gpu_ready;         /* per item: its GPU copy is valid from then */
  guint64 *cpu_ready;         /* per item: its CPU copy is valid from then */
  guint64 compute_free, h2d_free, d2h_free, cpu_free, comm_free;
  guint64 thread_free;        /* when the thread that issues the ops is free: after the CPU
                               * Adam of the last optimizer op it stepped */
  guint64 stream_held;        /* with model.collectives "blocking": the end of the last
                               * collective, which the compute stream runs (the next op waits) */
  GArray *copies;             /* Interval: the copies that slow compute (copy_interference),
                               * in issue order */
  guint64 storage_free;       /* the storage tier: its reads and writes share the device, one
                               * request after another */
  int storage_last;           /* the last request's direction: 0 none, 1 read, 2 write */
  guint64 staging_free[2];    /* the two staging buffers of state on storage: free when the
                               * write of the chunk each held last ends, the older first */
  guint64 param_buffer_free[2]; /* the two buffers parameters on storage are copied through
                                 * (the runtime's tier.c, lent by store.c): a fetch's free when
                                 * its copy to the GPU ends, an eviction's when its write does */
  guint32 *adam_steps;        /* per chunk on storage: its tensors' CPU Adam steps an iteration */
  guint32 *adam_left;         /* ... still to come in this one */
  guint64 *state_ready;       /* ... and when its state's read into a staging buffer ends */
  GArray *moves;              /* StwActivationMove: the offloaded blocks' copies */
  GArray *move_events;        /* MoveEvent, by moment */
  guint next_event;           /* the first not yet seen in this iteration */
  guint64 *out_end, *in_end;  /* per move: when its copy out, its copy back completes */
  guint8 *pageable;           /* per item, then per move: its host copy beyond the pinned budget */
  guint64 *grads_out;         /* per op, with the gradients on the host: the bytes copied there
                               * after it (of the tensors whose micro-step it last writes) */
  guint64 *grads_added;       /* ... of them, those added there to an earlier micro-step's */
  gboolean grads_pageable;    /* their host buffers beyond the pinned budget */
  guint64 grads_ready;        /* when the last copied are on the host, and added */
} Sim;

/* What happens to move MOVE at MOMENT. */
typedef enum { MOVE_OUT, MOVE_IN, MOVE_OUT_DONE, MOVE_IN_DONE } MoveWhat;
typedef struct {
  guint32 moment, move, what;
} MoveEvent;

static int
move_event_cmp(gconstpointer a, gconstpointer b)
{
  const MoveEvent *x = a, *y = b;
  if (x->moment != y->moment)
    return x->moment < y->moment ? -1 : 1;
  return x->what < y->what ? -1 : x->what > y->what;
}

/* S's move events, by moment: issues before waits. */
static void
move_events(Sim *s)
{
  s->move_events = g_array_new(FALSE, FALSE, sizeof(MoveEvent));
  for (guint i = 0; i < s->moves->len; i++) {
    const StwActivationMove *mv = &g_array_index(s->moves, StwActivationMove, i);
    MoveEvent e[] = { { mv->out_moment, i, MOVE_OUT }, { mv->in_moment, i, MOVE_IN },
                      { mv->out_done, i, MOVE_OUT_DONE }, { mv->in_done, i, MOVE_IN_DONE } };
    g_array_append_vals(s->move_events, e, G_N_ELEMENTS(e));
  }
  g_array_sort(s->move_events, move_event_cmp);
}

static void
sample(Sim *s, guint64 t)
{
  guint64 total = s->chunk_mem + s->nonmodel;
  if (total > s->out->peak_gpu_bytes && s->record) {
    s->out->peak_gpu_bytes = total;
    s->out->peak_time_ns = t - s->base;
  }
  if (total > stw_budgets_usable(&s->p->budgets) && s->record) {
    guint64 over = total + s->p->budgets.reserved_bytes - s->p->budgets.gpu_bytes;
    if (over > s->out->over_budget_bytes) {
      s->out->over_budget_bytes = over;
      s->out->over_budget_ns = t - s->base;
    }
  }
  if (s->record && s->out->memory != NULL) {
    StwSimSample m = { t - s->base, s->chunk_mem, s->nonmodel };
    g_array_append_val(s->out->memory, m);
  }
}

static int
sample_cmp(gconstpointer a, gconstpointer b)
{
  guint64 x = ((const StwSimSample *)a)->t_ns, y = ((const StwSimSample *)b)->t_ns;
  return x < y ? -1 : x > y;
}

static void
add_free(Sim *s, guint64 t, guint64 bytes)
{
  PendingFree f = { t, bytes };
  guint i = s->pending->len;
  while (i > 0 && g_array_index(s->pending, PendingFree, i - 1).t > t)
    i--;
  g_array_insert_val(s->pending, i, f);
}

/* Applies every free due by T. */
static void
advance(Sim *s, guint64 t)
{
  guint n = 0;
  while (n < s->pending->len && g_array_index(s->pending, PendingFree, n).t <= t) {
    s->chunk_mem -= g_array_index(s->pending, PendingFree, n).bytes;
    n++;
  }
  if (n > 0)
    g_array_remove_range(s->pending, 0, n);
}

/* The earliest time >= T at which EXTRA more bytes fit under LIMIT, waiting for frees. */
static guint64
wait_memory(Sim *s, guint64 t, guint64 extra, guint64 limit)
{
  advance(s, t);
  while (s->chunk_mem + extra > limit && s->pending->len > 0) {
    PendingFree f = g_array_index(s->pending, PendingFree, 0);
    g_array_remove_index(s->pending, 0);
    t = MAX(t, f.t);
    s->chunk_mem -= f.bytes;
  }
  return t;
}

static void
task(Sim *s, StwSimLane lane, guint32 item, guint32 kind, guint64 start, guint64 end,
     guint64 bytes)
{
  if (!s->record)
    return;
  switch (lane) {
  case STW_SIM_H2D:
    s->out->h2d_busy_ns = stw_cost_add(s->out->h2d_busy_ns, end - start);
    s->out->h2d_bytes = stw_cost_add(s->out->h2d_bytes, bytes);
    break;
  case STW_SIM_D2H:
    s->out->d2h_busy_ns = stw_cost_add(s->out->d2h_busy_ns, end - start);
    s->out->d2h_bytes = stw_cost_add(s->out->d2h_bytes, bytes);
    break;
  case STW_SIM_CPU_ADAM:
    s->out->cpu_busy_ns = stw_cost_add(s->out->cpu_busy_ns, end - start);
    if (kind == STW_SIM_GRADIENTS)
      s->out->cpu_add_ns = stw_cost_add(s->out->cpu_add_ns, end - start);
    break;
  case STW_SIM_COMM:
    s->out->comm_busy_ns = stw_cost_add(s->out->comm_busy_ns, end - start);
    s->out->comm_bytes = stw_cost_add(s->out->comm_bytes, bytes);
    break;
  case STW_SIM_STORAGE_READ:
  case STW_SIM_STORAGE_WRITE:
    s->out->storage_busy_ns = stw_cost_add(s->out->storage_busy_ns, end - start);
    if (lane == STW_SIM_STORAGE_READ)
      s->out->storage_read_bytes = stw_cost_add(s->out->storage_read_bytes, bytes);
    else
      s->out->storage_write_bytes = stw_cost_add(s->out->storage_write_bytes, bytes);
    break;
  }
  if (s->out->tasks != NULL) {
    StwSimTask x = { lane, item, kind, start - s->base, end - s->base, bytes };
    g_array_append_val(s->out->tasks, x);
  }
}

/* A copy on the compute's own cores (copy_interference): kept for the ops it overlaps. */
static void
copy_on_cores(Sim *s, guint64 start, guint64 end)
{
  if (s->p->hw.copy_interference > 0 && end > start) {
    Interval c = { start, end };
    g_array_append_val(s->copies, c);
  }
}

/* The time of an op of DUR from START while copies run on the same cores: each nanosecond of
 * copy that overlaps it costs copy_interference more, found by fixed-point iteration (the
 * longer op overlaps more of the copies; at most twice its own time). Copies that ended before
 * START are dropped. */
static guint64
slowed(Sim *s, guint64 start, guint64 dur)
{
  guint n = 0;
  while (n < s->copies->len && g_array_index(s->copies, Interval, n).end_ns <= start)
    n++;
  g_array_remove_range(s->copies, 0, n);
  guint64 d = dur;
  for (int round = 0; round < 4 && s->copies->len > 0; round++) {
    double overlap = 0;
    for (guint i = 0; i < s->copies->len; i++) {
      const Interval *c = &g_array_index(s->copies, Interval, i);
      guint64 a = MAX(c->start_ns, start), b = MIN(c->end_ns, start + d);
      overlap += b > a ? (double)(b - a) : 0;
    }
    guint64 next = dur + MIN(dur, stw_cost_ns(overlap * s->p->hw.copy_interference));
    if (next == d)
      break;
    d = next;
  }
  return d;
}

/* A collective that ends at END: where the trace's loop runs its collectives on the compute
 * stream (model.collectives "blocking"), the next op waits for it. */
static void
collective_done(Sim *s, guint64 end)
{
  if (s->t->model.collectives == STW_COLLECTIVES_BLOCKING)
    s->stream_held = MAX(s->stream_held, end);
}

/* A collective of group G's chunks on the comm lane, from T at the earliest. */
static guint64
collective(Sim *s, guint32 item, StwActionKind kind, guint64 t)
{
  const StwChunking *c = s->p->chunking;
  guint64 chunk = stw_plan_group_chunk_bytes(c, stw_plan_item_group(c, item));
  guint64 start = MAX(t, s->comm_free);
  guint64 end = stw_cost_add(start, stw_collective_ns(&s->p->hw, c->world, c->nodes, chunk));
  s->comm_free = end;
  task(s, STW_SIM_COMM, item, kind, start, end, (guint64)(c->world - 1) * chunk);
  collective_done(s, end);
  return end;
}

static guint64
limit_for(const Sim *s, guint32 k)
{
  return stw_plan_capacity(s->t, &s->p->budgets, k % s->t->ops->len);
}

/* Rank 0's own chunk of the group of gathered ITEM. */
static guint32
own_item(const Sim *s, guint32 item)
{
  return stw_plan_own_item(s->p->chunking, stw_plan_item_group(s->p->chunking, item));
}

/* A read (or WRITE) of BYTES of chunk CH's optimizer state (WHAT: STW_SIM_STORAGE_STATE) or its
 * parameters (STW_SIM_STORAGE_PARAMS) on the storage tier, from T at the earliest; when it
 * ends. */
static guint64
storage_io(Sim *s, guint32 ch, guint32 what, double bytes, gboolean write, guint64 t)
{
  guint64 *free_at = &s->storage_free;
  guint64 start = MAX(t, *free_at);
  /* queued behind a request the other way: the two directions take turns on the device */
  gboolean turn = s->storage_last != 0 && (s->storage_last == 2) != write && t <= *free_at;
  s->storage_last = write ? 2 : 1;
  guint64 ns = stw_storage_ns(&s->p->hw, stw_chunking_ranks_per_node(s->p->chunking),
                              (guint64)bytes, write, turn);
  *free_at = stw_cost_add(start, ns);
  task(s, write ? STW_SIM_STORAGE_WRITE : STW_SIM_STORAGE_READ, ch, what, start, *free_at,
       (guint64)bytes);
  return *free_at;
}

/* Whether ITEM is the param item of a chunk whose parameters are on the storage tier. */
static gboolean
params_stored(const Sim *s, guint32 item)
{
  return item < stw_chunking_count(s->p->chunking) && s->p->optim[item] == STW_OPTIM_STORAGE;
}

/* A buffer for a copy of parameters on storage, asked for at T by the thread that issues the
 * moment's actions: it waits there, the compute behind it, while both are in use (the runtime
 * settles the older copy first). Its index; *T moved on to when it is free. */
static int
param_buffer(Sim *s, guint64 *t)
{
  int b = s->param_buffer_free[0] <= s->param_buffer_free[1] ? 0 : 1;
  *t = MAX(*t, s->param_buffer_free[b]);
  return b;
}

/* Issues the actions of moment M at time T; when the issuing thread is free again (T, or later
 * where it waited for a buffer). */
static guint64
issue(Sim *s, const StwAction *a, guint n_actions, guint *next, guint32 m, guint64 t)
{
  const StwHardware *hw = &s->p->hw;
  guint32 ranks = stw_chunking_ranks_per_node(s->p->chunking);
  for (; *next < n_actions && a[*next].moment == m; (*next)++) {
    guint32 item = a[*next].item;
    guint64 b = s->d->bytes[item];
    switch (a[*next].kind) {
    case STW_ACTION_DROP:
      advance(s, t);
      if (s->gpu_ready[item] > t)
        add_free(s, s->gpu_ready[item], b); /* a reduce-scatter still reads it */
      else
        s->chunk_mem -= b;
      break;
    case STW_ACTION_EVICT: {
      if (params_stored(s, item) && hw->storage_gpudirect) { /* GPU memory straight to storage */
        guint64 end = storage_io(s, item, STW_SIM_STORAGE_PARAMS, (double)b, TRUE,
                                 MAX(t, s->gpu_ready[item]));
        add_free(s, end, b);
        s->cpu_ready[item] = MAX(s->cpu_ready[item], end);
        break;
      }
      int buffer = params_stored(s, item) ? param_buffer(s, &t) : -1;
      guint64 start = MAX(MAX(t, s->d2h_free), s->gpu_ready[item]);
      guint64 end = stw_cost_add(start, stw_transfer_ns(hw, ranks, b, !s->pageable[item]));
      s->d2h_free = end;
      copy_on_cores(s, start, end);
      add_free(s, end, b);
      task(s, STW_SIM_D2H, item, 0, start, end, b);
      if (buffer >= 0) { /* from the staging buffer on to storage */
        end = storage_io(s, item, STW_SIM_STORAGE_PARAMS, (double)b, TRUE, end);
        s->param_buffer_free[buffer] = end;
      }
      s->cpu_ready[item] = MAX(s->cpu_ready[item], end);
      break;
    }
    case STW_ACTION_FETCH: {
      if (params_stored(s, item) && hw->storage_gpudirect) { /* storage straight to the GPU */
        guint64 start = wait_memory(s, MAX(t, s->cpu_ready[item]), b, limit_for(s, m));
        s->chunk_mem += b;
        s->gpu_ready[item] = storage_io(s, item, STW_SIM_STORAGE_PARAMS, (double)b, FALSE, start);
        sample(s, start);
        break;
      }
      int buffer = params_stored(s, item) ? param_buffer(s, &t) : -1;
      guint64 start = MAX(MAX(t, s->h2d_free), s->cpu_ready[item]);
      if (buffer >= 0) { /* read into a staging buffer first */
        guint64 read = storage_io(s, item, STW_SIM_STORAGE_PARAMS, (double)b, FALSE,
                                  MAX(t, s->cpu_ready[item]));
        start = MAX(start, read);
      }
      start = wait_memory(s, start, b, limit_for(s, m));
      s->chunk_mem += b;
      guint64 end = stw_cost_add(start, stw_transfer_ns(hw, ranks, b, !s->pageable[item]));
      s->h2d_free = end;
      copy_on_cores(s, start, end);
      s->gpu_ready[item] = end;
      if (buffer >= 0)
        s->param_buffer_free[buffer] = end;
      task(s, STW_SIM_H2D, item, 0, start, end, b);
      sample(s, start);
      break;
    }
    case STW_ACTION_GATHER: {
      guint32 own = own_item(s, item);
      guint64 start = wait_memory(s, MAX(t, s->gpu_ready[own]), b, limit_for(s, m));
      s->chunk_mem += b;
      sample(s, start);
      s->gpu_ready[item] = collective(s, item, STW_ACTION_GATHER, start);
      break;
    }
    case STW_ACTION_REDUCE_SCATTER: {
      guint32 own = own_item(s, item);
      guint64 end = collective(s, item, STW_ACTION_REDUCE_SCATTER,
                               MAX(t, MAX(s->gpu_ready[own], s->gpu_ready[item])));
      s->gpu_ready[own] = s->gpu_ready[item] = end;
      break;
    }
    default:
      break;
    }
  }
  return t;
}

/* The offloaded blocks' copies at moment M, the compute stream free from NOW: copies out (their
 * block's forward done) and back are queued on the engines beside the chunks'. Returns when op M
 * may start as far as they are concerned: the copies that must be done by then are. */
static guint64
activation_copies(Sim *s, guint32 m, guint64 now)
{
  guint32 ranks = stw_chunking_ranks_per_node(s->p->chunking);
  guint64 ready = now;
  const MoveEvent *ev = (const MoveEvent *)s->move_events->data;
  for (; s->next_event < s->move_events->len && ev[s->next_event].moment == m; s->next_event++) {
    guint i = ev[s->next_event].move;
    const StwActivationMove *mv = &g_array_index(s->moves, StwActivationMove, i);
    guint64 ns = stw_transfer_ns(&s->p->hw, ranks, mv->bytes,
                                 !s->pageable[s->d->n_items + i]),
            start;
    switch ((MoveWhat)ev[s->next_event].what) {
    case MOVE_OUT:
      start = MAX(now, s->d2h_free);
      s->out_end[i] = s->d2h_free = stw_cost_add(start, ns);
      copy_on_cores(s, start, s->out_end[i]);
      task(s, STW_SIM_D2H, mv->block, STW_SIM_ACTIVATIONS, start, s->out_end[i], mv->bytes);
      break;
    case MOVE_IN: /* after its copy out (the host holds it then) */
      start = MAX(MAX(now, s->h2d_free), s->out_end[i]);
      s->in_end[i] = s->h2d_free = stw_cost_add(start, ns);
      copy_on_cores(s, start, s->in_end[i]);
      task(s, STW_SIM_H2D, mv->block, STW_SIM_ACTIVATIONS, start, s->in_end[i], mv->bytes);
      break;
    case MOVE_OUT_DONE:
      ready = MAX(ready, s->out_end[i]);
      break;
    case MOVE_IN_DONE:
      ready = MAX(ready, s->in_end[i]);
      break;
    }
  }
  return ready;
}

/* A traced optimizer op's time on plan P's layout over its time as traced: Adam is bound by
 * the bytes it moves, fewer with bf16 moments (the plan's --optimizer-state) than fp32 (the
 * trace's), or more the other way (the weights where the trace's step found them). */
static double
state_time_scale(const StwPlan *p, const StwTrace *t)
{
  const StwChunking *c = p->chunking;
  return stw_adam_bytes_per_elem(c->dtype, c->state_dtype, c->amsgrad, FALSE) /
         stw_adam_bytes_per_elem(c->dtype, t->model.state_dtype, c->amsgrad, FALSE);
}

/* CPU Adam for the tensors of optimizer op K stepped on the CPU, after their gradients arrive. On
 * a device that computes on the host's cores it runs at the traced op's own rate, and the
 * compute stream waits for it (simulate's loop). */
static void
cpu_adam(Sim *s, const StwOp *op, guint64 t)
{
  const StwChunking *c = s->p->chunking;
  double traced_rate = 0;
  if (s->p->hw.compute_on_host && op->duration_ns > 0) {
    double all = 0;
    for (guint32 i = 0; i < op->n_params; i++)
      all += (double)stw_trace_tensor(s->t, op->params[i])->numel;
    traced_rate = all / ((double)op->duration_ns / 1e9) / state_time_scale(s->p, s->t);
  }
  for (guint32 i = 0; i < op->n_params; i++) {
    const StwTensor *x = stw_trace_tensor(s->t, op->params[i]);
    guint32 ch;
    double numel = (double)stw_chunking_owned_part(c, op->params[i], x->numel, &ch);
    if (ch == G_MAXUINT32 || !stw_optim_on_cpu(s->p->optim[ch]))
      continue;
    guint32 param = stw_plan_item(c, STW_LIST_PARAM, ch);
    guint64 start = MAX(MAX(t, s->cpu_free), s->cpu_ready[param]);
    if (s->grads_out != NULL) /* every gradient on the host, added up */
      start = MAX(start, s->grads_ready);
    if (stw_gradients_cross_at_step(c, ch, s->p->optim[ch], s->t->model.gradients)) {
      /* the framework's gradient copied from the device into the chunk, tensor by tensor */
      guint64 b = (guint64)numel * stw_dtype_bytes(x->dtype);
      guint64 from = MAX(t, s->d2h_free);
      guint64 to = stw_cost_add(from, stw_transfer_ns(&s->p->hw,
                                                      stw_chunking_ranks_per_node(c), b,
                                                      !s->pageable[param]));
      s->d2h_free = to;
      copy_on_cores(s, from, to);
      task(s, STW_SIM_D2H, param, 0, from, to, b);
      start = MAX(start, to);
    }
    gboolean stored = stw_optim_state_stored(s->p->optim[ch]);
    /* a chunk's state on storage comes whole into a staging buffer before its first tensor's
     * step, once the buffer's last chunk is written out (the runtime's tier.c); with its
     * parameters there too, their gradients with it, and the new parameters go back with it */
    double state = 0;
    for (int l = STW_LIST_MASTER; stored && l < STW_N_LISTS; l++)
      state += (double)stw_chunk_bytes(c, ch, (StwChunkList)l);
    if (s->p->optim[ch] == STW_OPTIM_STORAGE)
      state += (double)stw_chunk_bytes(c, ch, STW_LIST_PARAM);
    /* ZeRO-Infinity's optimizer swapper, as DeepSpeed configures it by default (pipeline_read
     * and pipeline_write off), reads a sub-group only after the last one was written */
    gboolean serial = s->p->policy == STW_POLICY_ZERO_INFINITY;
    /* with the parameters, the read brings their gradients: after their write landed */
    guint64 grads = s->p->optim[ch] == STW_OPTIM_STORAGE ? s->cpu_ready[param] : 0;
    if (stored && s->adam_left[ch] == s->adam_steps[ch])
      s->state_ready[ch] = storage_io(s, ch, STW_SIM_STORAGE_STATE, state, FALSE,
                                      MAX(MAX(t, s->staging_free[serial ? 1 : 0]), grads));
    if (stored)
      start = MAX(start, s->state_ready[ch]);
    /* each rank steps its own chunks at its rate, within the host memory the ranks share */
    double rate = traced_rate > 0 ? traced_rate
                                  : stw_cpu_adam_rate(&s->p->hw, c,
                                                      stw_adam_steps_in_copy(
                                                          c, ch, s->p->optim[ch]));
    guint64 end = stw_cost_add(start, stw_cost_ns(numel / rate * 1e9));
    s->cpu_free = end;
    if (stored && --s->adam_left[ch] == 0) { /* and written back behind its last */
      s->adam_left[ch] = s->adam_steps[ch];
      s->staging_free[0] = s->staging_free[1];
      s->staging_free[1] = storage_io(s, ch, STW_SIM_STORAGE_STATE, state, TRUE, end);
      if (s->p->optim[ch] == STW_OPTIM_STORAGE) /* the next fetch reads what it wrote */
        s->cpu_ready[param] = MAX(s->cpu_ready[param], s->staging_free[1]);
    }
    for (int l = 0; l < STW_N_LISTS; l++) {
      guint32 item = stw_plan_item(c, (StwChunkList)l, ch);
      s->cpu_ready[item] = MAX(s->cpu_ready[item], end);
    }
    task(s, STW_SIM_CPU_ADAM, ch, 0, start, end, 0);
  }
}

/* Under model.gradients "host": per op K of T, the bytes of gradients copied to the host after
 * it, those of the tensors whose last write in a micro-step K is (a tied weight's is written by
 * two ops), into OUT[K], and of them those added there to an earlier micro-step's into
 * ADDED[K]. A micro-step ends where a forward op follows a backward one, and at the first
 * optimizer op. */
static void
host_gradient_copies(const StwTrace *t, guint64 *out, guint64 *added)
{
  guint32 n = MAX(t->tensors->len, 1);
  g_autofree guint32 *last = g_new(guint32, n);
  g_autofree guint8 *before = g_new0(guint8, n);
  g_autoptr(GArray) touched = g_array_new(FALSE, FALSE, sizeof(guint32));
  memset(last, 0xff, n * sizeof(guint32));
  StwStage prev = STW_STAGE_FWD;
  for (guint32 k = 0; k <= t->ops->len; k++) {
    const StwOp *op = k < t->ops->len ? stw_trace_op(t, k) : NULL;
    gboolean ends = op == NULL || op->stage == STW_STAGE_OPTIM ||
                    (op->stage == STW_STAGE_FWD && prev == STW_STAGE_BWD);
    for (guint i = 0; ends && i < touched->len; i++) {
      guint32 id = g_array_index(touched, guint32, i);
      guint64 b = stw_tensor_bytes(stw_trace_tensor(t, id));
      out[last[id]] = stw_cost_add(out[last[id]], b);
      if (before[id])
        added[last[id]] = stw_cost_add(added[last[id]], b);
      before[id] = 1;
      last[id] = G_MAXUINT32;
    }
    if (ends)
      g_array_set_size(touched, 0);
    if (op == NULL)
      break;
    for (guint32 i = 0; op->stage == STW_STAGE_BWD && i < op->n_grads; i++) {
      guint32 id = op->grads[i];
      if (stw_trace_tensor(t, id)->frozen)
        continue;
      if (last[id] == G_MAXUINT32)
        g_array_append_val(touched, id);
      last[id] = k;
    }
    prev = op->stage;
  }
}

/* The gradients copied to the host after op K (model.gradients "host"), from the end of its
 * compute, and those of them added there to an earlier micro-step's. As FSDP's CPU offload
 * does (torch's _fsdp_collectives.foreach_reduce): with several ranks they are reduce-scattered
 * first, each rank copying and adding its share; a copy nothing is added to goes without
 * waiting; where the host adds, the thread that issues the ops waits for the copy and adds
 * ("the CPU add kernel depends on the copy result"), and issues nothing more until it is
 * done, as it waits for a copy into pageable memory (beyond the pinned budget). With
 * "host-via-device", as DeepSpeed's ZeRO-Offload does, the host's sum comes back and is added
 * on the device, and the copies hold the compute stream. */
static void
host_gradients(Sim *s, guint32 k)
{
  const StwHardware *hw = &s->p->hw;
  const StwChunking *c = s->p->chunking;
  guint32 ranks = stw_chunking_ranks_per_node(c), world = MAX(c->world, 1);
  guint64 b = s->grads_out[k] / world, added = s->grads_added[k] / world;
  guint64 ready = s->compute_free;
  if (world > 1) {
    guint64 start = MAX(ready, s->comm_free);
    ready = s->comm_free = stw_cost_add(start, stw_collective_ns(hw, world, c->nodes, b));
    task(s, STW_SIM_COMM, k, STW_SIM_GRADIENTS, start, ready, (guint64)(world - 1) * b);
    collective_done(s, ready);
  }
  if (s->t->model.gradients == STW_GRADIENTS_HOST_VIA_DEVICE && added > 0) {
    /* DeepSpeed's (async_accumulate_grad_in_cpu_via_gpu): on the compute stream, the host's
     * sum back, added to the new ones there (3 bytes touched a byte), and out again below */
    guint64 from = MAX(ready, s->h2d_free);
    guint64 to = stw_cost_add(from, stw_transfer_ns(hw, ranks, added, !s->grads_pageable));
    s->h2d_free = to;
    copy_on_cores(s, from, to);
    task(s, STW_SIM_H2D, k, STW_SIM_GRADIENTS, from, to, added);
    ready = stw_cost_add(to, stw_hardware_memory_op_ns(hw, 3.0 * (double)added));
    added = 0; /* nothing for the host to add */
  }
  guint64 from = MAX(ready, s->d2h_free);
  guint64 to = stw_cost_add(from, stw_transfer_ns(hw, ranks, b, !s->grads_pageable));
  s->d2h_free = to;
  copy_on_cores(s, from, to);
  task(s, STW_SIM_D2H, k, STW_SIM_GRADIENTS, from, to, b);
  s->grads_ready = MAX(s->grads_ready, to);
  /* the stream's copies; and a copy into pageable memory, which FSDP makes blocking */
  if (s->t->model.gradients == STW_GRADIENTS_HOST_VIA_DEVICE || s->grads_pageable)
    s->thread_free = MAX(s->thread_free, to);
  if (added == 0)
    return;
  guint64 start = MAX(to, s->cpu_free);
  guint64 end = stw_cost_add(start, stw_host_add_ns(hw, ranks, added));
  s->cpu_free = end;
  task(s, STW_SIM_CPU_ADAM, k, STW_SIM_GRADIENTS, start, end, added);
  s->grads_ready = MAX(s->grads_ready, end);
  s->thread_free = MAX(s->thread_free, end);
}

/* Before optimizer op OP (op K) steps on the GPU, from T: the gradients of the tensors it steps
 * there come back from the host (model.gradients "host"), once all are there. When they are
 * back (T where none is stepped there). */
static guint64
gradients_back(Sim *s, const StwOp *op, guint32 k, guint64 t)
{
  const StwChunking *c = s->p->chunking;
  guint64 b = 0;
  for (guint32 i = 0; i < op->n_params; i++) {
    const StwTensor *x = stw_trace_tensor(s->t, op->params[i]);
    guint32 ch;
    guint64 part = stw_chunking_owned_part(c, op->params[i], x->numel, &ch);
    if (ch != G_MAXUINT32 && !stw_optim_on_cpu(s->p->optim[ch]) && !x->frozen)
      b += part * stw_dtype_bytes(x->dtype);
  }
  if (b == 0)
    return t;
  guint64 from = MAX(MAX(t, s->h2d_free), s->grads_ready);
  guint64 to = stw_cost_add(from, stw_transfer_ns(&s->p->hw,
                                                  stw_chunking_ranks_per_node(c), b,
                                                  !s->grads_pageable));
  s->h2d_free = to;
  copy_on_cores(s, from, to);
  task(s, STW_SIM_H2D, k, STW_SIM_GRADIENTS, from, to, b);
  return to;
}

/* The compute stream's time for OP. An optimizer op runs on the GPU when any chunk it steps
 * there is placed on the GPU, and with several ranks a rank steps only the tensors of the
 * chunks it owns: the traced time scaled by their share of the op's elements. */
static guint64
op_duration(const StwPlan *p, const StwTrace *t, const StwOp *op)
{
  const StwRetiming *rt = &p->retiming;
  if (op->stage != STW_STAGE_OPTIM)
    return rt->scale > 0
               ? stw_cost_add(rt->op_overhead_ns, (guint64)llround((double)op->duration_ns *
                                                                   rt->scale))
               : op->duration_ns;
  const StwChunking *c = p->chunking;
  double all = 0, owned = 0;
  gboolean on_gpu = FALSE;
  for (guint32 i = 0; i < op->n_params; i++) {
    guint64 numel = stw_trace_tensor(t, op->params[i])->numel;
    guint32 ch;
    guint64 part = stw_chunking_owned_part(c, op->params[i], numel, &ch);
    all += (double)numel;
    if (ch != G_MAXUINT32) {
      owned += (double)part;
      on_gpu |= !stw_optim_on_cpu(p->optim[ch]);
    }
  }
  if (!on_gpu)
    return 0;
  double scale = state_time_scale(p, t);
  double traced = (double)op->duration_ns;
  if (rt->scale > 0) { /* re-timed: the op's elements from their bytes at the profile's HBM */
    traced = 0;
    for (guint32 i = 0; i < op->n_params; i++) {
      const StwTensor *x = stw_trace_tensor(t, op->params[i]);
      traced += (double)x->numel * stw_gpu_adam_bytes_per_elem(x->dtype) /
                (p->hw.hbm_bytes_per_s * p->hw.memory_efficiency) * 1e9;
    }
  } else if (owned == all && scale == 1.0) {
    return op->duration_ns;
  }
  return (guint64)(traced * owned / all * scale);
}

/* BYTES more of the host copies into *NEED (and *OVER where they go beyond BUDGET): whether
 * they do. */
static gboolean
pin(guint64 *need, guint64 *over, guint64 bytes, guint64 budget)
{
  gboolean beyond = bytes > 0 && stw_cost_add(*need, bytes) > budget;
  *need = stw_cost_add(*need, bytes);
  if (beyond)
    *over = stw_cost_add(*over, bytes);
  return beyond;
}

/* Which host copies are pinned: every item the schedule fetches or evicts, then every offloaded
 * block's buffer, then the gradients the loop holds on the host (T's model.gradients "host"),
 * in that order, as long as the plan's pinned budget (this rank's share) holds them; the rest
 * PAGEABLE (per item, then per move; NULL: only the sums), and the gradients' *GRADS_PAGEABLE
 * (may be NULL). The bytes the copies touch into *NEED, those beyond the budget into *OVER. */
static void
pinned_copies(const StwPlan *p, const StwDemand *d, const StwTrace *t, const GArray *moves,
              guint8 *pageable, gboolean *grads_pageable, guint64 *need, guint64 *over)
{
  StwGradients gradients = t->model.gradients;
  g_autofree guint8 *copied = g_malloc0(MAX(d->n_items, 1));
  const StwAction *a = (const StwAction *)p->schedule.actions->data;
  for (guint i = 0; i < p->schedule.actions->len; i++)
    if (a[i].kind == STW_ACTION_FETCH || a[i].kind == STW_ACTION_EVICT)
      copied[a[i].item] = 1;
  /* and the chunks the framework's gradients are copied into at the step */
  for (guint32 k = 0; k < stw_chunking_count(p->chunking) && k < d->n_items; k++)
    if (stw_chunking_owned(p->chunking, k) &&
        stw_gradients_cross_at_step(p->chunking, k, p->optim[k], gradients))
      copied[stw_plan_item(p->chunking, STW_LIST_PARAM, k)] = 1;
  guint64 world = MAX(p->chunking->world, 1);
  guint64 budget = p->budgets.pinned_bytes > 0 ? p->budgets.pinned_bytes / world : G_MAXUINT64;
  /* parameters on storage are copied through two staging buffers (none with GPUDirect
   * Storage), pinned first */
  guint32 n = stw_chunking_count(p->chunking);
  guint64 staging = 0;
  for (guint32 k = 0; k < n && k < d->n_items; k++)
    if (p->optim[k] == STW_OPTIM_STORAGE && !p->hw.storage_gpudirect)
      staging = MAX(staging, 2 * d->bytes[k]);
  for (guint32 k = 0; k < n && k < d->n_items; k++) {
    if (p->optim[k] == STW_OPTIM_STORAGE) {
      if (pageable != NULL)
        pageable[k] = staging > budget;
      copied[k] = 0;
    }
  }
  *need = staging;
  *over = staging > budget ? staging : 0;
  for (guint32 k = 0; k < d->n_items + (moves != NULL ? moves->len : 0); k++) {
    guint64 b = k < d->n_items
                    ? (copied[k] ? d->bytes[k] : 0)
                    : g_array_index(moves, StwActivationMove, k - d->n_items).bytes;
    if (b == 0)
      continue;
    gboolean beyond = pin(need, over, b, budget);
    if (pageable != NULL)
      pageable[k] = beyond;
  }
  /* this rank's share of the gradients the loop holds on the host */
  gboolean beyond = pin(need, over, stw_trace_host_gradient_bytes(t) / world, budget);
  if (grads_pageable != NULL)
    *grads_pageable = beyond;
}

guint64
stw_plan_staging_bytes(const StwPlan *p, const StwTrace *t)
{
  g_autoptr(StwDemand) d = stw_demand_of_plan(p, t);
  return stw_demand_staging_bytes(d, p->chunking, p->optim, p->hw.storage_gpudirect);
}

guint64
stw_plan_host_bytes(const StwPlan *p, const StwTrace *t, const StwDemand *d,
                    const GArray *moves, guint64 *storage_out)
{
  /* the ranks' shares of the gradients on the host: one copy of them together; the offloaded
   * activations: each rank its own */
  guint64 activations = 0;
  for (guint32 r = 0; r < MAX(p->chunking->world, 1); r++)
    activations = stw_cost_add(activations, stw_activation_moves_host_peak(moves));
  return stw_cost_add(stw_cost_add(stw_demand_host_bytes(d, p->chunking, p->optim, &p->schedule,
                                                         p->hw.storage_gpudirect, storage_out),
                                   activations),
                      stw_trace_host_gradient_bytes(t));
}

void
stw_plan_pinned(const StwPlan *p, const StwTrace *t, guint64 *need, guint64 *pageable)
{
  g_autoptr(StwDemand) d = stw_demand_of_plan(p, t);
  g_autoptr(GArray) moves = stw_trace_activation_moves(t);
  pinned_copies(p, d, t, moves, NULL, NULL, need, pageable);
}

void
stw_simulate(const StwPlan *p, const StwTrace *recorded, gboolean detail, StwSimulation *out)
{
  g_autoptr(StwTrace) owned = NULL;
  const StwTrace *t = stw_plan_trace(p, recorded, &owned, NULL);
  if (t == NULL) /* (a checked pair always has it) */
    t = recorded;
  g_autoptr(StwDemand) d = stw_demand_of_plan(p, t);
  stw_simulate_demand(p, t, d, detail, out);
}

void
stw_simulate_demand(const StwPlan *p, const StwTrace *t, const StwDemand *d, gboolean detail,
                    StwSimulation *out)
{
  memset(out, 0, sizeof *out);
  if (detail) {
    out->ops = g_array_sized_new(FALSE, TRUE, sizeof(StwSimOp), t->ops->len);
    out->tasks = g_array_new(FALSE, FALSE, sizeof(StwSimTask));
    out->memory = g_array_new(FALSE, FALSE, sizeof(StwSimSample));
  }
  Sim s = { .p = p, .t = t, .d = d, .out = out };
  s.pending = g_array_new(FALSE, FALSE, sizeof(PendingFree));
  s.copies = g_array_new(FALSE, FALSE, sizeof(Interval));
  s.gpu_ready = g_new0(guint64, MAX(d->n_items, 1));
  s.cpu_ready = g_new0(guint64, MAX(d->n_items, 1));
  s.moves = stw_trace_activation_moves(t);
  s.pageable = g_malloc0(MAX(d->n_items + s.moves->len, 1));
  pinned_copies(p, d, t, s.moves, s.pageable, &s.grads_pageable, &out->pinned_bytes,
                &out->pageable_bytes);
  if (stw_gradients_on_host(t->model.gradients)) {
    s.grads_out = g_new0(guint64, t->ops->len);
    s.grads_added = g_new0(guint64, t->ops->len);
    host_gradient_copies(t, s.grads_out, s.grads_added);
  }
  move_events(&s);
  guint32 n_chunks = stw_chunking_count(p->chunking);
  s.adam_steps = g_new0(guint32, MAX(n_chunks, 1));
  s.state_ready = g_new0(guint64, MAX(n_chunks, 1));
  for (guint32 k = 0; k < t->ops->len; k++) {
    const StwOp *op = stw_trace_op(t, k);
    for (guint32 i = 0; op->stage == STW_STAGE_OPTIM && i < op->n_params; i++) {
      guint32 ch = stw_chunking_owned_chunk(p->chunking, op->params[i]);
      if (ch != G_MAXUINT32)
        s.adam_steps[ch] += stw_optim_state_stored(p->optim[ch]);
    }
  }
  s.adam_left = g_memdup2(s.adam_steps, MAX(n_chunks, 1) * sizeof(guint32));
  s.out_end = g_new0(guint64, MAX(s.moves->len, 1));
  s.in_end = g_new0(guint64, MAX(s.moves->len, 1));
  for (guint32 i = 0; i < d->n_items; i++) {
    if (p->schedule.resident[i])
      s.chunk_mem += d->bytes[i];
  }
  out->cpu_bytes = stw_plan_host_bytes(p, t, d, s.moves, NULL);
  const StwAction *a = (const StwAction *)p->schedule.actions->data;
  guint n_actions = p->schedule.actions->len;
  guint32 n = t->ops->len;
  guint64 starts[ITERATIONS] = { 0 };
  for (int it = 0; it < ITERATIONS; it++) {
    guint next = 0;
    s.next_event = 0;
    s.record = it == MEASURED;
    for (guint32 k = 0; k <= n; k++) {
      guint64 now = s.compute_free;
      /* between ops: what the next op starts with */
      s.nonmodel = stw_trace_op(t, k % n)->nonmodel_bytes;
      guint64 issued = issue(&s, a, n_actions, &next, k, now);
      if (k == n) {
        s.compute_free = issued;
        break;
      }
      const StwOp *op = stw_trace_op(t, k);
      guint64 ready = s.moves->len > 0 ? activation_copies(&s, k, issued) : issued;
      for (guint32 i = d->need_start[k]; i < d->need_start[k + 1]; i++)
        ready = MAX(ready, s.gpu_ready[d->need[i]]);
      /* the op's activations need room beside the chunks: wait for pending evictions */
      guint64 budget = stw_budgets_usable(&p->budgets);
      guint64 limit = budget > op->nonmodel_peak_bytes ? budget - op->nonmodel_peak_bytes : 0;
      ready = wait_memory(&s, ready, 0, limit);
      /* the thread that steps on the CPU is the one that issues the ops (stowage's trainer and
       * wrap, and the step() of DeepSpeed, Colossal-AI and PyTorch): nothing after an optimizer
       * op starts before its CPU Adam has finished, the next iteration's forward included */
      ready = MAX(ready, s.thread_free);
      /* collectives on the compute stream (model.collectives "blocking") run before the op */
      ready = MAX(ready, s.stream_held);
      if (k == 0) {
        starts[it] = ready;
        if (s.record)
          s.base = ready;
      }
      guint64 dur = op_duration(p, t, op);
      s.nonmodel = op->nonmodel_peak_bytes;
      if (s.grads_out != NULL && dur > 0 && op->stage == STW_STAGE_OPTIM)
        ready = gradients_back(&s, op, k, ready);
      sample(&s, ready);
      if (op->stage == STW_STAGE_OPTIM) {
        cpu_adam(&s, op, ready);
        if (p->hw.compute_on_host) /* the same cores: the stream waits for them */
          ready = MAX(ready, s.cpu_free);
        s.thread_free = s.cpu_free;
      }
      guint64 own = dur;
      if (p->hw.copy_interference > 0 && dur > 0)
        dur = slowed(&s, ready, dur);
      s.compute_free = stw_cost_add(ready, dur);
      if (s.grads_out != NULL && s.grads_out[k] > 0)
        host_gradients(&s, k);
      if (s.record) {
        out->compute_busy_ns = stw_cost_add(out->compute_busy_ns, dur);
        out->copy_slowdown_ns = stw_cost_add(out->copy_slowdown_ns, dur - own);
        out->compute_stall_ns = stw_cost_add(out->compute_stall_ns, ready - now);
        out->flops += op->flops; /* a valid trace holds at most 2^62 */
        if (out->ops != NULL) {
          StwSimOp so = { ready - s.base, s.compute_free - s.base, ready - now };
          g_array_append_val(out->ops, so);
        }
      }
    }
  }
  out->iteration_ns = starts[MEASURED + 1] - starts[MEASURED];
  /* samples were taken as events were processed, which is not quite time order */
  if (out->memory != NULL)
    g_array_sort(out->memory, sample_cmp);
  g_array_unref(s.pending);
  g_array_unref(s.copies);
  g_free(s.gpu_ready);
  g_free(s.cpu_ready);
  g_free(s.adam_steps);
  g_free(s.adam_left);
  g_free(s.state_ready);
  g_array_unref(s.moves);
  g_array_unref(s.move_events);
  g_free(s.out_end);
  g_free(s.in_end);
  g_free(s.pageable);
  g_free(s.grads_out);
  g_free(s.grads_added);
}

void
stw_simulation_clear(StwSimulation *s)
{
  if (s->ops != NULL)
    g_array_unref(s->ops);
  if (s->tasks != NULL)
    g_array_unref(s->tasks);
  if (s->memory != NULL)
    g_array_unref(s->memory);
  s->ops = s->tasks = s->memory = NULL;
}

/* Whether device ON is a CPU: the runtime's host backend ("host"), PyTorch's CPU ("cpu"). */
static gboolean
measured_on_cpu(const char *on)
{
  return g_ascii_strcasecmp(on, "host") == 0 || g_ascii_strcasecmp(on, "cpu") == 0;
}

const char *
stw_trace_measured_elsewhere(const StwTrace *t, const StwHardware *hw)
{
  const char *on = t->device.name;
  if (on == NULL || on[0] == '\0' || g_ascii_strcasecmp(on, hw->name) == 0)
    return NULL;
  if (hw->compute_on_host) /* a probed host profile: a CPU's traces are its own */
    return measured_on_cpu(on) ? NULL : on;
  if (hw->gpu_model[0] != '\0' && (strstr(on, hw->gpu_model) != NULL ||
                                   strstr(hw->gpu_model, on) != NULL))
    return NULL;
  return on;
}

gboolean
stw_retiming(const StwTrace *t, const StwHardware *hw, StwRetiming *out, StwRetimingBasis *basis,
             char **why_not)
{
  *out = (StwRetiming){ 0 };
  StwRetimingBasis b = { 0 };
  if (basis != NULL)
    *basis = b;
  if (why_not != NULL)
    *why_not = NULL;
  const char *on = stw_trace_measured_elsewhere(t, hw);
  /* a CPU's times on a GPU's profile (another GPU's keep theirs: its kernels' times, which no
   * FLOP count replaces) */
  if (on == NULL || hw->compute_on_host || !measured_on_cpu(on))
    return FALSE;
  StwDtype dtype = stw_trace_compute_dtype(t);
  b.flops_per_s = hw->flops_per_s[dtype] * hw->matmul_efficiency;
  for (guint32 k = 0; k < t->ops->len; k++)
    if (stw_trace_op(t, k)->stage != STW_STAGE_OPTIM)
      b.measured_ns += stw_trace_op(t, k)->duration_ns;
  StwThroughput th; /* over an iteration of a second: its FLOPs */
  gboolean sized = stw_throughput(t, hw, 1, 1000000000, &th);
  b.flops = th.hardware_flops_per_s;
  const StwModelConfig *m = &t->model.config;
  if (sized && t->model.has_config) /* attention's products, forward and backward */
    b.flops += (t->model.checkpointing ? 16.0 : 12.0) * (double)m->layers * (double)m->hidden *
               (double)t->model.seq * th.tokens_per_s;
  char *missing = !sized ? g_strdup("the trace does not say its batch and sequence, which give "
                                     "its FLOPs")
                  : b.flops_per_s <= 0 ? g_strdup_printf("%s has no %s rate", hw->name,
                                                         stw_dtype_name(dtype))
                  : b.measured_ns == 0 ? g_strdup("its forward and backward ops measured no time")
                                       : NULL;
  if (missing != NULL) {
    if (why_not != NULL)
      *why_not = missing;
    else
      g_free(missing);
    return FALSE;
  }
  /* within what a plan file may say (plan.c's reader) */
  out->scale = CLAMP(b.flops / b.flops_per_s * 1e9 / (double)b.measured_ns, 1e-12, 1e12);
  out->op_overhead_ns = MIN(hw->op_overhead_ns, STW_RETIMING_MAX_OVERHEAD_NS);
  if (basis != NULL)
    *basis = b;
  return TRUE;
}

void
stw_op_times_of(const StwTrace *t, const StwHardware *hw, gboolean keep, StwOpTimes *out)
{
  const char *on = stw_trace_measured_elsewhere(t, hw);
  *out = (StwOpTimes){ .measured_on = g_strdup(on) };
  if (on != NULL && !keep)
    stw_retiming(t, hw, &out->retiming, NULL, NULL);
}

void
stw_op_times_clear(StwOpTimes *o)
{
  g_clear_pointer(&o->measured_on, g_free);
}

guint64
stw_process_bytes(const StwTrace *t, const StwHardware *hw, const char **origin)
{
  const char *from;
  guint64 bytes;
  if (t->device.process_bytes != 0 && stw_trace_measured_elsewhere(t, hw) == NULL) {
    from = "measured in the profiled process";
    bytes = t->device.process_bytes;
  } else {
    from = hw->cpu_overhead_bytes != 0 ? "the profile's" : "the default: probe measures it";
    bytes = stw_hardware_host_overhead(hw);
  }
  if (origin != NULL)
    *origin = from;
  return bytes;
}

guint64
stw_gpu_process_bytes(const StwTrace *t, const StwHardware *hw, const char **origin)
{
  /* a figure not below the device's memory is not this device's: the profile's stands */
  gboolean measured = t->device.gpu_process_bytes != 0 &&
                      t->device.gpu_process_bytes < hw->gpu_memory_bytes &&
                      stw_trace_measured_elsewhere(t, hw) == NULL;
  if (origin != NULL)
    *origin = measured ? "measured in the profiled process" : "the profile's gpu.process_bytes";
  return measured ? t->device.gpu_process_bytes : hw->gpu_process_bytes;
}

gboolean
stw_throughput(const StwTrace *t, const StwHardware *hw, guint32 world, guint64 iteration_ns,
               StwThroughput *out)
{
  memset(out, 0, sizeof *out);
  if (t->model.batch == 0 || t->model.seq == 0 || iteration_ns == 0 || t->tensors->len == 0)
    return FALSE;
  double n = 0, frozen = 0;
  for (guint32 i = 0; i < t->tensors->len; i++) {
    const StwTensor *x = stw_trace_tensor(t, i);
    n += (double)x->numel;
    frozen += x->frozen ? (double)x->numel : 0;
  }
  /* a mixture of experts computes with the experts a token reaches: N its active parameters
   * (where the trace knows its model), the frozen ones among them in their share */
  if (t->model.has_config && stw_model_experts(&t->model.config) > 1 && n > 0) {
    double active = n - (double)(stw_model_param_count(&t->model.config) -
                                 stw_model_active_param_count(&t->model.config));
    frozen *= active / n;
    n = active;
  }
  double ranks = MAX(world, 1), seconds = (double)iteration_ns / 1e9;
  double tokens = (double)t->model.batch * (double)t->model.seq * ranks;
  StwDtype dtype = stw_trace_compute_dtype(t);
  out->recompute = t->model.checkpointing;
  out->tokens_per_s = tokens / seconds;
  out->frozen_share = n > 0 ? frozen / n : 0;
  /* a frozen parameter's backward has no weight gradient: 4 a token, not 6 */
  out->model_flops_per_s = (6.0 * n - 2.0 * frozen) * out->tokens_per_s;
  out->hardware_flops_per_s = out->model_flops_per_s + (out->recompute ? 2.0 * n : 0) *
                                                           out->tokens_per_s;
  /* no GPU MFU from times measured on another device (a CPU's) */
  out->peak_flops_per_s = stw_trace_measured_elsewhere(t, hw) == NULL
                              ? hw->flops_per_s[dtype] * ranks : 0;
  out->mfu = out->peak_flops_per_s > 0 ? out->model_flops_per_s / out->peak_flops_per_s : 0;
  return TRUE;
}

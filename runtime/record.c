/* record.c — traces and event streams of the runtime's own run; see record.h. */
#include "config.h"

#include "record.h"

#include <stowage/events.h>

/* Virtual device addresses in the event stream: tensor T at (T + 1) << 32, activations above
 * 1 << 48, each in its own 4 GiB window. */
#define TENSOR_VADDR(t) (((guint64)(t) + 1) << 32)
#define ACT_VADDR_BASE (G_GUINT64_CONSTANT(1) << 48)

struct StwRecorder {
  const StwTrace *model;
  char *device;
  guint64 device_bytes;
  guint32 world;            /* the ranks the traces are for (rank 0's) */
  StwTrace *rec;            /* the iteration being recorded */
  StwTrace *last;           /* the last completed one */
  StwOp *cur_op;            /* the op being recorded, NULL between ops */
  guint64 act_peak;         /* activation bytes at the current op's peak */
  StwEventWriter *events;
  guint64 clock;            /* the events' logical clock */
  guint64 next_act;         /* the next activation's virtual address */
  GHashTable *act_vaddr;    /* activation pointer -> virtual address */
  guint64 op_id;
  guint iterations;         /* begun so far */
  gboolean writing;         /* events of this iteration go into the stream */
};

StwRecorder *
stw_recorder_new(const StwTrace *model, const char *device, guint64 device_bytes,
                 guint64 param_elem_bytes, guint32 world)
{
  StwRecorder *r = g_new0(StwRecorder, 1);
  r->world = MAX(world, 1);
  r->model = model;
  r->device = g_strdup(device);
  r->device_bytes = device_bytes;
  r->events = stw_event_writer_new();
  r->act_vaddr = g_hash_table_new(g_direct_hash, g_direct_equal);
  r->next_act = ACT_VADDR_BASE;
  for (guint32 i = 0; i < model->tensors->len; i++) {
    const StwTensor *x = stw_trace_tensor(model, i);
    stw_event_alloc(r->events, r->clock++, TENSOR_VADDR(i), x->numel * param_elem_bytes);
    GString *names = g_string_new(x->name);
    for (guint k = 0; x->aliases != NULL && k < x->aliases->len; k++)
      g_string_append_printf(names, " %s", (char *)x->aliases->pdata[k]);
    stw_event_tensor(r->events, TENSOR_VADDR(i), x->shape, x->ndim, names->str);
    g_string_free(names, TRUE);
  }
  return r;
}

void
stw_recorder_free(StwRecorder *r)
{
  if (r == NULL)
    return;
  g_free(r->device);
  stw_trace_free(r->rec);
  stw_trace_free(r->last);
  stw_event_writer_free(r->events);
  g_hash_table_unref(r->act_vaddr);
  g_free(r);
}

void
stw_recorder_iteration_begin(StwRecorder *r)
{
  stw_trace_free(r->rec);
  StwTrace *t = stw_trace_new();
  t->source.kind = STW_SOURCE_RUNTIME;
  g_free(t->source.created);
  g_autoptr(GDateTime) now = g_date_time_new_now_utc();
  t->source.created = g_date_time_format(now, "%Y-%m-%dT%H:%M:%SZ");
  g_free(t->model.name);
  t->model = r->model->model;
  t->model.name = g_strdup(r->model->model.name);
  g_free(t->device.name);
  t->device.name = g_strdup(r->device);
  t->device.memory_bytes = r->device_bytes;
  t->device.world_size = r->world;
  for (guint32 i = 0; i < r->model->tensors->len; i++) {
    const StwTensor *x = stw_trace_tensor(r->model, i);
    guint32 id = stw_trace_add_tensor(t, x->name, x->dtype, x->shape, x->ndim);
    g_array_index(t->tensors, StwTensor, id).frozen = x->frozen;
    for (guint k = 0; x->aliases != NULL && k < x->aliases->len; k++)
      g_ptr_array_add(g_array_index(t->tensors, StwTensor, id).aliases,
                      g_strdup(x->aliases->pdata[k]));
  }
  r->rec = t;
  r->writing = r->iterations++ < STW_RECORDED_ITERATIONS;
  if (r->writing)
    stw_event_push(r->events, r->clock++, STW_ITERATION_RANGE);
}

void
stw_recorder_iteration_end(StwRecorder *r, gboolean keep)
{
  if (r->rec == NULL)
    return;
  if (r->writing)
    stw_event_pop(r->events, r->clock++);
  r->writing = FALSE;
  if (!keep) {
    g_clear_pointer(&r->rec, stw_trace_free);
    return;
  }
  stw_trace_free(r->last);
  r->last = g_steal_pointer(&r->rec);
}

void
stw_recorder_op_begin(StwRecorder *r, const char *name, StwStage stage, const guint32 *params,
                      guint32 n_params, const guint32 *grads, guint32 n_grads,
                      guint64 nonmodel_bytes)
{
  r->act_peak = nonmodel_bytes;
  if (r->rec == NULL)
    return;
  r->cur_op = stw_trace_add_op(r->rec, name, stage, params, n_params, grads, n_grads);
  r->cur_op->nonmodel_bytes = nonmodel_bytes;
  /* the same op as events: a range, and one "kernel" touching what it declares */
  if (!r->writing)
    return;
  stw_event_push(r->events, r->clock++, name);
  g_autofree guint64 *args = g_new(guint64, MAX(n_params + n_grads, 1));
  guint n_args = 0;
  for (guint32 i = 0; i < n_params + n_grads; i++) {
    guint64 v = TENSOR_VADDR(i < n_params ? params[i] : grads[i - n_params]);
    gboolean seen = FALSE;
    for (guint k = 0; k < n_args; k++)
      seen |= args[k] == v;
    if (!seen)
      args[n_args++] = v;
  }
  stw_event_launch(r->events, r->clock++, ++r->op_id, args, n_args);
}

void
stw_recorder_op_end(StwRecorder *r, guint64 duration_ns)
{
  if (r->cur_op == NULL)
    return;
  StwOp *op = &g_array_index(r->rec->ops, StwOp, r->rec->ops->len - 1);
  op->duration_ns = duration_ns;
  op->nonmodel_peak_bytes = r->act_peak;
  if (r->writing) {
    stw_event_kernel(r->events, r->op_id, 0, op->duration_ns, op->name);
    stw_event_pop(r->events, r->clock++);
  }
  r->cur_op = NULL;
}

void
stw_recorder_alloc(StwRecorder *r, gconstpointer p, gsize bytes, guint64 live_bytes)
{
  r->act_peak = MAX(r->act_peak, live_bytes);
  if (!r->writing)
    return;
  guint64 v = r->next_act;
  r->next_act += G_GUINT64_CONSTANT(1) << 32;
  g_hash_table_insert(r->act_vaddr, (gpointer)p, GSIZE_TO_POINTER(v));
  stw_event_alloc(r->events, r->clock++, v, MAX(bytes, 1));
}

void
stw_recorder_release(StwRecorder *r, gconstpointer p)
{
  gpointer v;
  if (!g_hash_table_lookup_extended(r->act_vaddr, p, NULL, &v))
    return; /* allocated after the stream's iterations */
  g_hash_table_remove(r->act_vaddr, p);
  stw_event_free(r->events, r->clock++, GPOINTER_TO_SIZE(v));
}

const char *
stw_recorder_events(StwRecorder *r, gsize *len)
{
  return stw_event_writer_text(r->events, len);
}

StwTrace *
stw_recorder_trace(StwRecorder *r)
{
  return r->last;
}

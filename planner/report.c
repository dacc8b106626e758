/* report.c — Chrome traces, simulation JSON and SVG pictures; see report.h. */
#include "config.h"

#include <stowage/report.h>

#include <math.h>
#include <string.h>

#include <stowage/units.h>

#include "json.h"
#include "op-times.h"

/* ---- Chrome trace --------------------------------------------------------------------------- */

enum { PID = 1, TID_COMPUTE = 1, TID_H2D = 2, TID_D2H = 3, TID_CPU = 4, TID_COMM = 5,
       TID_STORAGE_READ = 6, TID_STORAGE_WRITE = 7 };

/* Whether X copies or adds up the framework's gradients held on the host (its item an op). */
static gboolean
is_gradients(const StwSimTask *x)
{
  return x->kind == STW_SIM_GRADIENTS;
}

/* Whether X runs on one of the lanes whose item is a chunk index (CPU Adam, the storage's). */
static gboolean
on_chunk_lane(const StwSimTask *x)
{
  return (x->lane == STW_SIM_CPU_ADAM && !is_gradients(x)) ||
         x->lane == STW_SIM_STORAGE_READ || x->lane == STW_SIM_STORAGE_WRITE;
}

/* "gradients after OP", "gradients for OP" (back for a step on the GPU), "add gradients of
 * OP", "reduce-scatter gradients of OP" for gradients task X of T. */
static char *
gradients_name(const StwTrace *t, const StwSimTask *x)
{
  const char *op = x->item < t->ops->len ? stw_trace_op(t, x->item)->name : "?";
  return g_strdup_printf(x->lane == STW_SIM_D2H    ? "gradients after %s"
                         : x->lane == STW_SIM_H2D  ? "gradients for %s"
                         : x->lane == STW_SIM_COMM ? "reduce-scatter gradients of %s"
                                                   : "add gradients of %s",
                         op);
}

static void
add_event(cJSON *events, const char *name, const char *cat, const char *ph, int tid, double ts,
          double dur)
{
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "name", name);
  cJSON_AddStringToObject(e, "cat", cat);
  cJSON_AddStringToObject(e, "ph", ph);
  cJSON_AddNumberToObject(e, "pid", PID);
  cJSON_AddNumberToObject(e, "tid", tid);
  cJSON_AddNumberToObject(e, "ts", ts);
  if (dur >= 0)
    cJSON_AddNumberToObject(e, "dur", dur);
  cJSON_AddItemToArray(events, e);
}

static void
name_thread(cJSON *events, int tid, const char *name)
{
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "name", "thread_name");
  cJSON_AddStringToObject(e, "ph", "M");
  cJSON_AddNumberToObject(e, "pid", PID);
  cJSON_AddNumberToObject(e, "tid", tid);
  cJSON *args = cJSON_AddObjectToObject(e, "args");
  cJSON_AddStringToObject(args, "name", name);
  cJSON_AddItemToArray(events, e);
}

/* Whether X copies an offloaded block's activations (its item the block). */
static gboolean
is_activations(const StwSimTask *x)
{
  return (x->lane == STW_SIM_H2D || x->lane == STW_SIM_D2H) && x->kind == STW_SIM_ACTIVATIONS;
}

/* "activations NAME" for X's block in T, the decided trace. */
static char *
activations_name(const StwTrace *t, const StwSimTask *x)
{
  return g_strdup_printf("activations %s", x->item < t->blocks->len
                                               ? g_array_index(t->blocks, StwBlock, x->item).name
                                               : "?");
}

/* "fetch", "evict", "adam", "gather" or "reduce_scatter"; "offload", "restore" for a block's
 * activations */
static const char *
lane_category(const StwSimTask *x)
{
  if (is_activations(x))
    return x->lane == STW_SIM_D2H ? "offload" : "restore";
  if (is_gradients(x))
    return x->lane == STW_SIM_D2H    ? "gradients out"
           : x->lane == STW_SIM_H2D  ? "gradients back"
           : x->lane == STW_SIM_COMM ? "gradients reduce-scatter"
                                     : "accumulate";
  switch (x->lane) {
  case STW_SIM_H2D: return "fetch";
  case STW_SIM_D2H: return "evict";
  case STW_SIM_CPU_ADAM: return "adam";
  case STW_SIM_STORAGE_READ:
    return x->kind == STW_SIM_STORAGE_PARAMS ? "params read" : "state read";
  case STW_SIM_STORAGE_WRITE:
    return x->kind == STW_SIM_STORAGE_PARAMS ? "params write" : "state write";
  default: return stw_action_kind_name((StwActionKind)x->kind);
  }
}

char *
stw_report_chrome_trace(const StwPlan *p, const StwTrace *recorded, const StwSimulation *sim)
{
  g_autoptr(StwTrace) owned = NULL; /* the trace the schedule runs over (stw_plan_trace) */
  const StwTrace *t = stw_plan_trace(p, recorded, &owned, NULL);
  if (t == NULL)
    t = recorded;
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "displayTimeUnit", "ms");
  cJSON *events = cJSON_AddArrayToObject(root, "traceEvents");
  name_thread(events, TID_COMPUTE, "compute stream");
  name_thread(events, TID_H2D, "H2D copy engine");
  name_thread(events, TID_D2H, "D2H copy engine");
  name_thread(events, TID_CPU, "CPU Adam");
  if (p->chunking->world > 1)
    name_thread(events, TID_COMM, "collectives (interconnect)");
  if (sim->storage_busy_ns > 0) {
    name_thread(events, TID_STORAGE_READ, "storage reads");
    name_thread(events, TID_STORAGE_WRITE, "storage writes");
  }
  for (guint k = 0; k < sim->ops->len; k++) {
    const StwSimOp *o = &g_array_index(sim->ops, StwSimOp, k);
    const StwOp *op = stw_trace_op(t, k);
    if (o->stall_ns > 0) { /* (a stall carried over from the iteration before begins at 0) */
      guint64 from = o->start_ns > o->stall_ns ? o->start_ns - o->stall_ns : 0;
      add_event(events, "stall", "stall", "X", TID_COMPUTE, from / 1e3,
                (o->start_ns - from) / 1e3);
    }
    add_event(events, op->name, stw_stage_name(op->stage), "X", TID_COMPUTE, o->start_ns / 1e3,
              (o->end_ns - o->start_ns) / 1e3);
  }
  for (guint i = 0; i < sim->tasks->len; i++) {
    const StwSimTask *x = &g_array_index(sim->tasks, StwSimTask, i);
    g_autofree char *name = is_gradients(x) ? gradients_name(t, x)
                            : x->lane == STW_SIM_CPU_ADAM ? g_strdup_printf("adam chunk %u", x->item)
                            : on_chunk_lane(x) && x->kind == STW_SIM_STORAGE_PARAMS
                                ? g_strdup_printf("params of chunk %u", x->item)
                            : on_chunk_lane(x)  ? g_strdup_printf("state of chunk %u", x->item)
                            : is_activations(x) ? activations_name(t, x)
                                                : stw_plan_item_name(p->chunking, x->item);
    static const int tids[] = { TID_H2D, TID_D2H, TID_CPU, TID_COMM, TID_STORAGE_READ,
                                TID_STORAGE_WRITE };
    const char *cat = lane_category(x);
    add_event(events, name, cat, "X", tids[x->lane], x->start_ns / 1e3,
              (x->end_ns - x->start_ns) / 1e3);
  }
  for (guint i = 0; i < sim->memory->len; i++) {
    const StwSimSample *m = &g_array_index(sim->memory, StwSimSample, i);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", "GPU memory (MiB)");
    cJSON_AddStringToObject(e, "ph", "C");
    cJSON_AddNumberToObject(e, "pid", PID);
    cJSON_AddNumberToObject(e, "ts", m->t_ns / 1e3);
    cJSON *args = cJSON_AddObjectToObject(e, "args");
    cJSON_AddNumberToObject(args, "chunks", (double)m->chunk_bytes / STW_MiB);
    cJSON_AddNumberToObject(args, "non-model", (double)m->nonmodel_bytes / STW_MiB);
    cJSON_AddItemToArray(events, e);
  }
  char *text = cJSON_PrintUnformatted(root);
  char *copy = g_strconcat(text, "\n", NULL);
  cJSON_free(text);
  cJSON_Delete(root);
  return copy;
}

/* ---- JSON ------------------------------------------------------------------------------------ */

void
stw_op_times_add_json(cJSON *record, const char *measured_on, const StwRetiming *r)
{
  if (measured_on == NULL)
    return;
  cJSON *ot = cJSON_AddObjectToObject(record, "op_times");
  cJSON_AddStringToObject(ot, "measured_on", measured_on);
  cJSON_AddBoolToObject(ot, "retimed", r->scale > 0);
  if (r->scale > 0) {
    cJSON_AddNumberToObject(ot, "scale", r->scale);
    stw_json_add_u64(ot, "op_overhead_ns", r->op_overhead_ns);
  }
}

char *
stw_report_simulation_json(const StwPlan *p, const StwTrace *recorded, const StwSimulation *sim)
{
  g_autoptr(StwTrace) owned = NULL; /* the trace the schedule runs over (stw_plan_trace) */
  const StwTrace *t = stw_plan_trace(p, recorded, &owned, NULL);
  if (t == NULL)
    t = recorded;
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "hardware", p->hw.name);
  /* the plan's re-timing, as it was made */
  stw_op_times_add_json(root, stw_trace_measured_elsewhere(recorded, &p->hw), &p->retiming);
  cJSON_AddStringToObject(root, "bound_by", stw_bound_names[stw_plan_bound(p, NULL)]);
  stw_json_add_u64(root, "iteration_ns", sim->iteration_ns);
  stw_json_add_u64(root, "compute_busy_ns", sim->compute_busy_ns);
  stw_json_add_u64(root, "compute_stall_ns", sim->compute_stall_ns);
  stw_json_add_u64(root, "copy_slowdown_ns", sim->copy_slowdown_ns);
  stw_json_add_u64(root, "h2d_busy_ns", sim->h2d_busy_ns);
  stw_json_add_u64(root, "d2h_busy_ns", sim->d2h_busy_ns);
  stw_json_add_u64(root, "cpu_busy_ns", sim->cpu_busy_ns);
  if (sim->cpu_add_ns > 0) /* of it, adding the gradients on the host */
    stw_json_add_u64(root, "cpu_add_ns", sim->cpu_add_ns);
  if (sim->storage_busy_ns > 0) {
    stw_json_add_u64(root, "storage_busy_ns", sim->storage_busy_ns);
    stw_json_add_u64(root, "storage_read_bytes", sim->storage_read_bytes);
    stw_json_add_u64(root, "storage_write_bytes", sim->storage_write_bytes);
  }
  stw_json_add_u64(root, "h2d_bytes", sim->h2d_bytes);
  stw_json_add_u64(root, "d2h_bytes", sim->d2h_bytes);
  stw_json_add_u64(root, "world_size", p->chunking->world);
  stw_json_add_u64(root, "comm_busy_ns", sim->comm_busy_ns);
  stw_json_add_u64(root, "comm_bytes", sim->comm_bytes);
  stw_json_add_u64(root, "peak_gpu_bytes", sim->peak_gpu_bytes);
  stw_json_add_u64(root, "peak_time_ns", sim->peak_time_ns);
  stw_json_add_u64(root, "over_budget_bytes", sim->over_budget_bytes);
  stw_json_add_u64(root, "cpu_bytes", sim->cpu_bytes);
  stw_json_add_u64(root, "flops", sim->flops);
  stw_json_add_double(root, "tflops_per_s",
                      sim->iteration_ns ? (double)sim->flops / (double)sim->iteration_ns / 1e3 : 0);
  if (sim->ops != NULL) {
    cJSON *ops = cJSON_AddArrayToObject(root, "ops");
    for (guint k = 0; k < sim->ops->len; k++) {
      const StwSimOp *o = &g_array_index(sim->ops, StwSimOp, k);
      cJSON *e = cJSON_CreateObject();
      cJSON_AddStringToObject(e, "name", stw_trace_op(t, k)->name);
      stw_json_add_u64(e, "start_ns", o->start_ns);
      stw_json_add_u64(e, "end_ns", o->end_ns);
      stw_json_add_u64(e, "stall_ns", o->stall_ns);
      cJSON_AddItemToArray(ops, e);
    }
    cJSON *tasks = cJSON_AddArrayToObject(root, "transfers");
    for (guint i = 0; i < sim->tasks->len; i++) {
      const StwSimTask *x = &g_array_index(sim->tasks, StwSimTask, i);
      cJSON *e = cJSON_CreateObject();
      static const char *const lanes[] = { "h2d", "d2h", "cpu_adam", "comm", "storage_read",
                                           "storage_write" };
      cJSON_AddStringToObject(e, "lane", lanes[x->lane]);
      if (x->lane == STW_SIM_COMM)
        cJSON_AddStringToObject(e, "collective", lane_category(x));
      g_autofree char *name = on_chunk_lane(x) ? g_strdup_printf("chunk %u", x->item)
                              : is_activations(x) ? activations_name(t, x)
                              : is_gradients(x)   ? gradients_name(t, x)
                                                  : stw_plan_item_name(p->chunking, x->item);
      cJSON_AddStringToObject(e, is_activations(x) ? "activations"
                                 : is_gradients(x) ? "gradients"
                                                   : "chunk",
                              name);
      stw_json_add_u64(e, "start_ns", x->start_ns);
      stw_json_add_u64(e, "end_ns", x->end_ns);
      stw_json_add_u64(e, "bytes", x->bytes);
      cJSON_AddItemToArray(tasks, e);
    }
  }
  char *text = stw_json_print_lines(root);
  cJSON_Delete(root);
  return text;
}

/* ---- SVG -------------------------------------------------------------------------------------- */

static const char *const palette[] = { "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                       "#8c564b", "#e377c2", "#7f7f7f" };

static void
svg_text(GString *s, double x, double y, const char *anchor, int size, const char *text)
{
  g_autofree char *esc = g_markup_escape_text(text, -1);
  g_string_append_printf(s, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\">"
                            "%s</text>\n", x, y, anchor, size, esc);
}

/* A tick step of 1, 2 or 5 times a power of ten giving about five ticks over SPAN. */
static double
nice_step(double span)
{
  double raw = span / 5, mag = pow(10, floor(log10(raw)));
  double f = raw / mag;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

typedef struct {
  double x0, y0, w, h;       /* plot area in pixels */
  double xmin, xmax, ymin, ymax;
} Panel;

static double
px(const Panel *p, double x)
{
  return p->x0 + (p->xmax > p->xmin ? (x - p->xmin) / (p->xmax - p->xmin) : 0) * p->w;
}

static double
py(const Panel *p, double y)
{
  return p->y0 + p->h - (p->ymax > p->ymin ? (y - p->ymin) / (p->ymax - p->ymin) : 0) * p->h;
}

static void
axes(GString *s, const Panel *p, const char *xlabel, const char *ylabel)
{
  g_string_append_printf(s, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                            "fill=\"none\" stroke=\"#333\"/>\n", p->x0, p->y0, p->w, p->h);
  double xs = nice_step(p->xmax - p->xmin), ys = nice_step(p->ymax - p->ymin);
  for (double v = ceil(p->xmin / xs) * xs; v <= p->xmax + xs * 1e-9; v += xs) {
    char buf[32];
    g_snprintf(buf, sizeof buf, "%g", v);
    g_string_append_printf(s, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                              "stroke=\"#ddd\"/>\n", px(p, v), p->y0, px(p, v), p->y0 + p->h);
    svg_text(s, px(p, v), p->y0 + p->h + 15, "middle", 11, buf);
  }
  for (double v = ceil(p->ymin / ys) * ys; v <= p->ymax + ys * 1e-9; v += ys) {
    char buf[32];
    g_snprintf(buf, sizeof buf, "%g", v);
    g_string_append_printf(s, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                              "stroke=\"#ddd\"/>\n", p->x0, py(p, v), p->x0 + p->w, py(p, v));
    svg_text(s, p->x0 - 6, py(p, v) + 4, "end", 11, buf);
  }
  svg_text(s, p->x0 + p->w / 2, p->y0 + p->h + 34, "middle", 12, xlabel);
  g_autofree char *esc = g_markup_escape_text(ylabel, -1);
  g_string_append_printf(s, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\" "
                            "transform=\"rotate(-90 %.1f %.1f)\">%s</text>\n", p->x0 - 48,
                         p->y0 + p->h / 2, p->x0 - 48, p->y0 + p->h / 2, esc);
}

static GString *
svg_begin(double w, double h)
{
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www"
                            ".w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f "
                            "%.0f\" font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\""
                            "100%%\" fill=\"white\"/>\n", w, h, w, h);
  return s;
}

char *
stw_report_svg_sweep(const char *title, const GArray *x, const char *x_label,
                     const StwSeries *top, const char *top_label, const StwSeries *bottom,
                     const char *bottom_label, guint n_series)
{
  GString *s = svg_begin(900, 760);
  svg_text(s, 450, 28, "middle", 16, title);
  const StwSeries *sets[2] = { top, bottom };
  const char *labels[2] = { top_label, bottom_label };
  for (int panel = 0; panel < 2; panel++) {
    Panel p = { .x0 = 90, .y0 = 60 + panel * 330, .w = 600, .h = 250 };
    p.xmin = g_array_index(x, double, 0);
    p.xmax = g_array_index(x, double, x->len - 1);
    p.ymin = 0;
    p.ymax = 0;
    for (guint k = 0; k < n_series; k++)
      for (guint i = 0; i < sets[panel][k].y->len; i++) {
        double v = g_array_index(sets[panel][k].y, double, i);
        if (!isnan(v))
          p.ymax = MAX(p.ymax, v);
      }
    p.ymax = p.ymax > 0 ? p.ymax * 1.08 : 1;
    if (p.xmax <= p.xmin)
      p.xmax = p.xmin + 1;
    axes(s, &p, x_label, labels[panel]);
    for (guint k = 0; k < n_series; k++) {
      const char *color = palette[k % G_N_ELEMENTS(palette)];
      GString *path = g_string_new(NULL);
      gboolean pen = FALSE;
      for (guint i = 0; i < x->len; i++) {
        double v = g_array_index(sets[panel][k].y, double, i);
        if (isnan(v)) {
          pen = FALSE;
          continue;
        }
        double X = px(&p, g_array_index(x, double, i)), Y = py(&p, v);
        g_string_append_printf(path, "%s%.1f %.1f ", pen ? "L" : "M", X, Y);
        g_string_append_printf(s, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", X, Y,
                               color);
        pen = TRUE;
      }
      if (path->len > 0)
        g_string_append_printf(s, "<path d=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>\n",
                               path->str, color);
      g_string_free(path, TRUE);
      /* the legend, right of the panels */
      if (panel == 0) {
        double ly = 70 + k * 20;
        g_string_append_printf(s, "<line x1=\"710\" y1=\"%.1f\" x2=\"735\" y2=\"%.1f\" "
                                  "stroke=\"%s\" stroke-width=\"3\"/>\n", ly, ly, color);
        svg_text(s, 742, ly + 4, "start", 12, sets[0][k].name);
      }
    }
  }
  svg_text(s, 710, 70 + n_series * 20 + 10, "start", 10, "missing points: does not fit");
  g_string_append(s, "</svg>\n");
  return g_string_free(s, FALSE);
}

/* The items that ever move, in item order, sampled to at most 160 rows; *N_MOVING counts them
 * all and *STRIDE is the sampling step. */
static GArray *
moving_rows(const StwPlan *plan, const StwSimulation *sim, guint32 *n_moving_out,
            guint32 *stride_out)
{
  guint32 n_items = stw_plan_n_items(plan->chunking);
  GArray *rows = g_array_new(FALSE, FALSE, sizeof(guint32));
  g_autofree guint8 *moves = g_malloc0(MAX(n_items, 1));
  for (guint i = 0; i < sim->tasks->len; i++) {
    const StwSimTask *x = &g_array_index(sim->tasks, StwSimTask, i);
    if (!on_chunk_lane(x) && !is_activations(x) && !is_gradients(x))
      moves[x->item] = 1;
  }
  guint32 n_moving = 0;
  for (guint32 i = 0; i < n_items; i++)
    n_moving += moves[i];
  guint32 stride = MAX(1, (n_moving + 159) / 160);
  for (guint32 i = 0, seen = 0; i < n_items; i++) {
    if (moves[i] && seen++ % stride == 0)
      g_array_append_val(rows, i);
  }
  *n_moving_out = n_moving;
  *stride_out = stride;
  return rows;
}

/* The upper picture: GPU memory over time, non-model and chunks stacked, the stages shaded,
 * the budget drawn. */
static void
memory_panel(GString *s, const StwPlan *plan, const StwTrace *t, const StwSimulation *sim,
             double T)
{
  Panel p = { .x0 = 90, .y0 = 60, .w = 760, .h = 260, .xmin = 0, .xmax = T, .ymin = 0 };
  p.ymax = (double)MAX(plan->budgets.gpu_bytes, sim->peak_gpu_bytes) / STW_GiB * 1.08;
  /* stages shaded */
  static const char *const stage_fill[] = { "#eef5ff", "#fff3e6", "#efffef" };
  for (guint k = 0; k < sim->ops->len;) {
    StwStage st = stw_trace_op(t, k)->stage;
    guint e = k;
    while (e + 1 < sim->ops->len && stw_trace_op(t, e + 1)->stage == st)
      e++;
    double a = g_array_index(sim->ops, StwSimOp, k).start_ns / 1e6;
    double b = g_array_index(sim->ops, StwSimOp, e).end_ns / 1e6;
    g_string_append_printf(s, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                              "fill=\"%s\"/>\n", px(&p, a), p.y0, MAX(px(&p, b) - px(&p, a), 0.5),
                           p.h, stage_fill[st]);
    svg_text(s, (px(&p, a) + px(&p, b)) / 2, p.y0 + 14, "middle", 11, stw_stage_name(st));
    k = e + 1;
  }
  axes(s, &p, "time in the iteration (ms)", "GPU memory (GiB)");
  /* stacked steps: non-model at the bottom, chunks above */
  GString *nm = g_string_new(NULL), *all = g_string_new(NULL);
  double last_x = p.x0;
  for (guint i = 0; i < sim->memory->len; i++) {
    const StwSimSample *m = &g_array_index(sim->memory, StwSimSample, i);
    double X = px(&p, MIN(m->t_ns / 1e6, T));
    double n = (double)m->nonmodel_bytes / STW_GiB, a = n + (double)m->chunk_bytes / STW_GiB;
    g_string_append_printf(nm, "%s%.1f %.1f ", i ? "L" : "M", X, py(&p, n));
    g_string_append_printf(all, "%s%.1f %.1f ", i ? "L" : "M", X, py(&p, a));
    last_x = X;
  }
  if (sim->memory->len > 0) {
    g_string_append_printf(s, "<path d=\"%sL%.1f %.1f L%.1f %.1f Z\" fill=\"#9ecae1\" "
                              "fill-opacity=\"0.6\" stroke=\"#3182bd\"/>\n", all->str, last_x,
                           py(&p, 0), p.x0, py(&p, 0));
    g_string_append_printf(s, "<path d=\"%sL%.1f %.1f L%.1f %.1f Z\" fill=\"#fdae6b\" "
                              "fill-opacity=\"0.8\" stroke=\"#e6550d\"/>\n", nm->str, last_x,
                           py(&p, 0), p.x0, py(&p, 0));
  }
  g_string_free(nm, TRUE);
  g_string_free(all, TRUE);
  double budget = (double)plan->budgets.gpu_bytes / STW_GiB;
  g_string_append_printf(s, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" "
                            "stroke-width=\"2\" stroke-dasharray=\"6 4\"/>\n", p.x0, py(&p, budget),
                         p.x0 + p.w, py(&p, budget));
  svg_text(s, p.x0 + p.w + 4, py(&p, budget) + 4, "start", 11, "budget");
  g_string_append(s, "<rect x=\"870\" y=\"120\" width=\"14\" height=\"10\" fill=\"#9ecae1\"/>\n"
                     "<rect x=\"870\" y=\"140\" width=\"14\" height=\"10\" fill=\"#fdae6b\"/>\n");
  svg_text(s, 888, 129, "start", 11, "chunks");
  svg_text(s, 888, 149, "start", 11, "non-model");

}

/* The lower picture: where each of ROWS (items) is over time, from Q's top. */
static void
chunk_map(GString *s, const StwPlan *plan, const StwSimulation *sim, const GArray *rows,
          const Panel *pq, double row_h, double T)
{
  const Panel q = *pq;
  for (guint r = 0; r < rows->len; r++) {
    guint32 item = g_array_index(rows, guint32, r);
    double y = q.y0 + r * row_h;
    gboolean on_gpu = plan->schedule.resident[item];
    double since = 0;
    for (guint i = 0; i <= sim->tasks->len; i++) {
      const StwSimTask *x = i < sim->tasks->len ? &g_array_index(sim->tasks, StwSimTask, i) : NULL;
      if (x != NULL && (on_chunk_lane(x) || is_activations(x) || is_gradients(x) ||
                        x->item != item))
        continue;
      double a = MIN(x ? x->start_ns / 1e6 : T, T), b = MIN(x ? x->end_ns / 1e6 : T, T);
      g_string_append_printf(s, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                                "fill=\"%s\"/>\n", px(&q, since), y, MAX(px(&q, a) - px(&q, since), 0),
                             row_h - 0.5, on_gpu ? "#31a354" : "#d9d9d9");
      if (x == NULL)
        break;
      g_string_append_printf(s, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                                "fill=\"#fd8d3c\"/>\n", px(&q, a), y, MAX(px(&q, b) - px(&q, a), 0.5),
                             row_h - 0.5);
      /* a gather brings the group; a reduce-scatter leaves it where it is */
      on_gpu = x->lane == STW_SIM_COMM ? on_gpu || x->kind == STW_ACTION_GATHER
                                       : x->lane == STW_SIM_H2D;
      since = b;
    }
  }
}

char *
stw_report_svg_timeline(const StwPlan *plan, const StwTrace *recorded, const StwSimulation *sim)
{
  g_autoptr(StwTrace) owned = NULL; /* the trace the schedule runs over (stw_plan_trace) */
  const StwTrace *t = stw_plan_trace(plan, recorded, &owned, NULL);
  if (t == NULL)
    t = recorded;
  guint32 n_moving = 0, stride = 1;
  g_autoptr(GArray) rows = moving_rows(plan, sim, &n_moving, &stride);
  double row_h = rows->len > 80 ? 3 : 6;
  double map_h = MAX(rows->len * row_h, 20);
  double H = 120 + 260 + 80 + map_h + 60;
  GString *s = svg_begin(1000, H);
  g_autofree char *title = g_strdup_printf("%s on %s: one iteration, %s", plan->trace_file[0]
                                               ? plan->trace_file : t->model.name,
                                           plan->hw.name, "");
  g_autofree char *it = stw_duration_format(sim->iteration_ns);
  g_autofree char *full = g_strconcat(title, it, NULL);
  svg_text(s, 500, 28, "middle", 16, full);
  double T = (double)MAX(sim->iteration_ns, 1) / 1e6; /* ms */
  memory_panel(s, plan, t, sim, T);

  /* where every moving chunk is */
  Panel q = { .x0 = 90, .y0 = 60 + 260 + 80, .w = 760, .h = map_h, .xmin = 0, .xmax = T };
  svg_text(s, 500, q.y0 - 22, "middle", 13, "where each moving chunk is: on the GPU (green), "
                                            "in flight (orange), on the CPU (grey)");
  chunk_map(s, plan, sim, rows, &q, row_h, T);
  g_autofree char *rows_label = g_strdup_printf("%u of %u moving chunks%s", rows->len, n_moving,
                                                stride > 1 ? " (sampled)" : "");
  g_string_append_printf(s, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\" "
                            "transform=\"rotate(-90 %.1f %.1f)\">%s</text>\n", q.x0 - 20,
                         q.y0 + q.h / 2, q.x0 - 20, q.y0 + q.h / 2, rows_label);
  svg_text(s, q.x0 + q.w / 2, q.y0 + q.h + 20, "middle", 12, "time in the iteration (ms)");
  g_string_append(s, "</svg>\n");
  return g_string_free(s, FALSE);
}

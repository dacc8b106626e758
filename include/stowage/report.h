/* report.h — what people and tools look at: Chrome traces, JSON and SVG pictures.
 *
 * The Chrome trace (Trace Event Format) opens in Perfetto and chrome://tracing: one track per
 * stream and engine, transfers named by chunk, counters for GPU memory. The SVG pictures are
 * self-contained files a browser shows: GPU memory over time with the budget and the stages, and
 * where every chunk is over time; and line plots for sweeps.
 */
#ifndef STW_REPORT_H
#define STW_REPORT_H

#include <glib.h>

#include <stowage/simulate.h>

#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_PLANNER
#error "<stowage/report.h> belongs to the planner: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

/* Each returns a new string, the caller's (g_free). */

/* The measured iteration of SIM (run with detail) as a Trace Event Format document. */
char *stw_report_chrome_trace(const StwPlan *p, const StwTrace *t, const StwSimulation *sim);
/* SIM's summary, and with detail every op and transfer, as JSON. */
char *stw_report_simulation_json(const StwPlan *p, const StwTrace *t, const StwSimulation *sim);
/* Two pictures in one SVG: GPU memory over time, and each chunk's place over time. */
char *stw_report_svg_timeline(const StwPlan *p, const StwTrace *t, const StwSimulation *sim);

/* A line plot panel's data: one line per series, x shared. NaN y values leave gaps. */
typedef struct {
  const char *name;
  GArray *y;   /* double, one per x */
} StwSeries;

/* Two panels stacked (TOP and BOTTOM, each with N_SERIES lines over X) with axes, units and a
 * legend. X_LABEL and the Y labels carry the units. */
char *stw_report_svg_sweep(const char *title, const GArray *x, const char *x_label,
                           const StwSeries *top, const char *top_label, const StwSeries *bottom,
                           const char *bottom_label, guint n_series);

STW_END_DECLS

#endif

/* stowage.h — the whole public interface of libstowage, in the order of its layers.
 *
 * Build against the installed library with `pkg-config --cflags --libs stowage`. Every function
 * takes `GError **error` last where it can fail and returns FALSE or NULL then; pointers a
 * function returns are the caller's to free unless its comment says otherwise.
 * docs/architecture.md describes the layers and the path of the data through them.
 */
#ifndef STW_STOWAGE_H
#define STW_STOWAGE_H

/* core: errors, files, sizes, models, traces, event streams, hardware profiles, synthesis */
#include <stowage/errors.h>
#include <stowage/events.h>
#include <stowage/files.h>
#include <stowage/hardware.h>
#include <stowage/model.h>
#include <stowage/summary.h>
#include <stowage/synth.h>
#include <stowage/trace.h>
#include <stowage/units.h>

/* the planner: chunk layouts, plans, the cost model, simulation, check, policies, what-if */
#include <stowage/check.h>
#include <stowage/chunks.h>
#include <stowage/cost.h>
#include <stowage/plan.h>
#include <stowage/planner.h>
#include <stowage/report.h>
#include <stowage/simulate.h>
#include <stowage/whatif.h>
#include <stowage/request.h>

/* the runtime: chunks on a device, moved as a plan says */
#include <stowage/backend.h>
#include <stowage/runtime.h>
#include <stowage/storage.h>
#include <stowage/comm.h>

/* the trainer: a GPT whose model state lives in runtime chunks */
#include <stowage/adam.h>
#include <stowage/compute.h>
#include <stowage/trainer.h>
#include <stowage/probe.h>

/* the profilers: traces from event streams */
#include <stowage/events-build.h>
#include <stowage/import.h>
#include <stowage/bind.h>

#endif

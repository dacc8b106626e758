/* probe.h — measuring this machine into a hardware profile: what `stowage probe` does.
 *
 * memcpy bandwidth by size, CPU Adam elements per second (1, 2, 4... threads and all), the host
 * memory's copy bandwidth; with a device, its copies by size both ways and their latency as the
 * runtime makes them (and on the emulated device, how much compute a copy beside it costs);
 * with ranks, their all-gathers and reduce-scatters by chunk size. What cannot be measured here
 * comes from a base profile. Measurements are timed for at least 0.2 s each: a probe takes some
 * seconds.
 */
#ifndef STW_PROBE_H
#define STW_PROBE_H

#include <glib.h>

#include <stowage/comm.h>
#include <stowage/hardware.h>
#include <stowage/request.h>

#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_TRAIN || STW_BUILDING_LAYER == STW_LAYER_PROFILE
#error "<stowage/probe.h> belongs to the trainer's layer: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

#define STW_PROBE_COPY_SIZES 4
#define STW_PROBE_COLLECTIVE_SIZES 7
#define STW_PROBE_MAX_ADAM 16

typedef enum { STW_PROBE_NO_DEVICE = -1, STW_PROBE_HOST = 0, STW_PROBE_CUDA = 1 } StwProbeDevice;

/* What a probe measures, as a request gives it. */
typedef struct {
  StwHardware base;       /* what is not measured */
  const char *name;       /* the profile's name; NULL: probed-HOST */
  StwProbeDevice device;  /* the device link measured as the profile's */
  gboolean collectives;   /* the ranks' collectives (a communicator of 2 ranks or more) */
} StwProbeOptions;

/* What it measured, and the profile it makes. */
typedef struct {
  guint64 memcpy_sizes[STW_PROBE_COPY_SIZES];
  double memcpy_bytes_per_s[STW_PROBE_COPY_SIZES];
  guint n_adam;
  guint adam_threads[STW_PROBE_MAX_ADAM];
  double adam_elems_per_s[STW_PROBE_MAX_ADAM];
  guint threads;                   /* the host memory's copiers: every processor */
  double host_memory_bytes_per_s;
  StwProbeDevice device;
  guint64 copy_sizes[STW_PROBE_COPY_SIZES];
  double h2d_bytes_per_s[STW_PROBE_COPY_SIZES], d2h_bytes_per_s[STW_PROBE_COPY_SIZES];
  guint64 copy_latency_ns;
  double copy_interference;        /* the emulated device's; 0 on a GPU */
  guint32 world;                   /* the ranks whose collectives were timed; 0: none */
  guint64 collective_sizes[STW_PROBE_COLLECTIVE_SIZES];
  double gather_s[STW_PROBE_COLLECTIVE_SIZES], scatter_s[STW_PROBE_COLLECTIVE_SIZES];
  StwHardware profile;             /* the base with what was measured */
  char *description;               /* the profile's description: what was measured, and how */
} StwProbe;

/* The kind of request `stowage probe` makes: "base", "name", "device" (host or cuda),
 * "collectives". */
extern const StwRequestKind stw_request_probe_kind;

/* R as probe options: the base profile (default STW_HARDWARE_DEFAULT), a name a profile may
 * have, the device. FALSE with ERROR: STW_REQUEST_ERROR_USAGE (a value), the hardware's (the
 * base). */
gboolean stw_request_probe(const StwRequest *r, StwProbeOptions *out, GError **error);

/* Measures by O into OUT (the caller's, cleared with stw_probe_clear). With COMM (may be NULL)
 * and O's collectives, every rank times the collectives first (and must call this); the rest
 * is measured on the rank that calls it after. FALSE with ERROR: STW_REQUEST_ERROR_USAGE
 * (collectives without 2 ranks), STW_RUNTIME_ERROR (no such device), STW_COMM_ERROR (a
 * collective failed). */
gboolean stw_probe_collectives(StwComm *comm, StwProbe *out, GError **error);
gboolean stw_probe_run(const StwProbeOptions *o, StwProbe *out, GError **error);
void stw_probe_clear(StwProbe *p);

/* The record `probe --json` prints: every measurement and the profile made of them. */
char *stw_probe_json(const StwProbe *p);

STW_END_DECLS

#endif

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
#define STW_PROBE_STORAGE_SIZES 5   /* request sizes: 64 KiB to 16 MiB */
#define STW_PROBE_STORAGE_DEPTHS 4  /* queue depths of the 1 MiB reads: 1, 4, 16 and the asked */
#define STW_PROBE_STORAGE_DEPTH 32  /* the default queue depth */

typedef enum { STW_PROBE_NO_DEVICE = -1, STW_PROBE_HOST = 0, STW_PROBE_CUDA = 1 } StwProbeDevice;

/* What a probe measures, as a request gives it. */
typedef struct {
  StwHardware base;       /* what is not measured */
  const char *name;       /* the profile's name; NULL: probed-HOST */
  StwProbeDevice device;  /* the device link measured as the profile's */
  gboolean collectives;   /* the ranks' collectives (a communicator of 2 ranks or more) */
  const char *nvme_dir;   /* a directory on the storage to measure as the profile's (NULL:
                           * none): O_DIRECT reads and writes by size at NVME_DEPTH */
  guint32 nvme_depth;     /* requests in flight (0: STW_PROBE_STORAGE_DEPTH) */
} StwProbeOptions;

/* What it measured, and the profile it makes. */
typedef struct {
  guint64 memcpy_sizes[STW_PROBE_COPY_SIZES];
  double memcpy_bytes_per_s[STW_PROBE_COPY_SIZES];
  guint n_adam;
  guint adam_threads[STW_PROBE_MAX_ADAM];
  double adam_elems_per_s[STW_PROBE_MAX_ADAM];
  guint adam_team;                 /* the threads CPU Adam runs on (OpenMP's team:
                                    * OMP_NUM_THREADS, else every processor; at most every
                                    * processor, which a larger team shares), measured among
                                    * ADAM_THREADS: the profile's rate is theirs */
  double adam_bf16_elems_per_s;    /* with bf16 moments, on ADAM_TEAM threads */
  guint threads;                   /* the host memory's copiers: every processor */
  double host_copy_bytes_per_s;    /* bytes memcpy copies a second on every processor */
  double host_memory_bytes_per_s;  /* bytes read and written a second: the most of copying's
                                    * (twice the bytes copied) and CPU Adam's on every thread */
  StwProbeDevice device;
  guint64 copy_sizes[STW_PROBE_COPY_SIZES];
  double h2d_bytes_per_s[STW_PROBE_COPY_SIZES], d2h_bytes_per_s[STW_PROBE_COPY_SIZES];
  guint64 copy_latency_ns;
  double copy_interference;        /* the emulated device's; 0 on a GPU */
  guint32 world;                   /* the ranks whose collectives were timed; 0: none */
  guint64 collective_sizes[STW_PROBE_COLLECTIVE_SIZES];
  double gather_s[STW_PROBE_COLLECTIVE_SIZES], scatter_s[STW_PROBE_COLLECTIVE_SIZES];
  gboolean storage;                /* a storage directory was measured: */
  char storage_engine[16];         /* "io_uring" or "threads" */
  gboolean storage_direct;         /* O_DIRECT: the page cache bypassed */
  char storage_fallback[512];      /* what the directory did not allow (storage.h) */
  char storage_fs[32];
  guint64 storage_file_bytes;      /* the file the requests ran over */
  guint64 storage_sizes[STW_PROBE_STORAGE_SIZES];
  double storage_read_bytes_per_s[STW_PROBE_STORAGE_SIZES];
  double storage_write_bytes_per_s[STW_PROBE_STORAGE_SIZES];
  guint32 storage_depths[STW_PROBE_STORAGE_DEPTHS];
  double storage_depth_read_bytes_per_s[STW_PROBE_STORAGE_DEPTHS]; /* 1 MiB reads */
  double storage_mixed_bytes_per_s; /* 8 MiB reads and writes taking turns, both directions */
  guint64 storage_latency_ns;      /* a 4 KiB read alone */
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
/* Measures the storage under DIR at DEPTH requests in flight into P and P->profile's storage
 * section (its capacity: the file system's free space); what the directory did not allow is
 * said in the description. FALSE with ERROR (STW_STORAGE_ERROR: the directory, a full disk, a
 * failed request). Part of stw_probe_run where O names a directory. */
gboolean stw_probe_storage(const char *dir, guint32 depth, StwProbe *p, GString *description,
                           GError **error);
void stw_probe_clear(StwProbe *p);
/* The host's CPU as /proc/cpuinfo's TEXT names it, as a profile's cpu.model keeps it: its first
 * "model name" (spaces collapsed, other than printable ASCII as spaces, at most 127 bytes),
 * "2x " before it where two sockets ("physical id") hold such cores; NULL where TEXT names
 * none. The caller frees it. */
char *stw_probe_cpu_model(const char *text);

/* A GPU's memory as measured into profile HW: TOTAL, what CUDA lets a program allocate (0: not
 * measured), becomes gpu.memory_bytes; OUTSIDE, what this process held of it beside its own
 * arena, becomes gpu.process_bytes where above the base's figure (a probe loads no compute
 * library: a training process holds at least as much). Said in DESCRIPTION. */
void stw_probe_device_memory(StwHardware *hw, guint64 total, guint64 outside,
                             GString *description);

/* The record `probe --json` prints: every measurement and the profile made of them. */
char *stw_probe_json(const StwProbe *p);

STW_END_DECLS

#endif

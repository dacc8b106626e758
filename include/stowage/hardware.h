/* hardware.h — hardware profiles: what a GPU, its PCIe link and its host can do.
 *
 * Profiles are data files (format in docs/hardware.md). The ones stowage ships live in hw/ and
 * are compiled into the library as a GResource, so `--hw A100-80GB-PCIe4` works from any
 * directory; any other profile is given as a path to its JSON file.
 */
#ifndef STW_HARDWARE_H
#define STW_HARDWARE_H

#include <glib.h>

#include <stowage/model.h>

#include <stowage/errors.h>
#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_CORE
#error "<stowage/hardware.h> belongs to the core: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

#define STW_HARDWARE_ERROR (stw_hardware_error_quark())
GQuark stw_hardware_error_quark(void);

typedef enum {
  STW_HARDWARE_ERROR_UNKNOWN, /* no shipped profile of that name */
  STW_HARDWARE_ERROR_UNSUPPORTED, /* the profile cannot do what was asked (a dtype, say) */
} StwHardwareError;

#define STW_HARDWARE_MAX_POINTS 16
#define STW_HARDWARE_DEFAULT "A100-80GB-PCIe4"

typedef struct {
  guint64 bytes;        /* transfer size */
  double bytes_per_s;   /* sustained bandwidth at that size, latency excluded */
} StwBandwidthPoint;

typedef struct {
  char name[64];                  /* "A100-80GB-PCIe4" */
  char origin[320];               /* where it came from, for people: "shipped profile", "file
                                   * PATH" (stw_hardware_lookup); empty where it was parsed from
                                   * another record (a plan's). Not saved with it. */
  char gpu_model[128];            /* "NVIDIA A100 80GB PCIe" */
  guint64 gpu_memory_bytes;       /* total device memory */
  guint64 gpu_process_bytes;      /* device memory a training process holds outside its tensors
                                   * (the CUDA context, the libraries' workspaces): no plan may
                                   * use it (stw_budgets_on_device); 0: none, as on the host
                                   * backend's emulated device */
  double hbm_bytes_per_s;         /* peak device memory bandwidth */
  double flops_per_s[STW_N_DTYPES]; /* dense matmul peak per compute dtype; 0 = unsupported */
  double matmul_efficiency;       /* achieved fraction of flops_per_s in large matmuls */
  guint64 matmul_half_time_ns;    /* a matmul that would take this long at that rate reaches
                                   * half of it (small ones fill the GPU poorly); 0: 1.5 us */
  double memory_efficiency;       /* achieved fraction of hbm_bytes_per_s */
  guint64 op_overhead_ns;         /* fixed cost per operator: launches, framework */
  gboolean compute_on_host;       /* the device computes on the host's cores (the host backend's
                                   * emulated device): CPU Adam takes its place in the compute
                                   * stream instead of running beside it */
  double copy_interference;       /* compute_on_host: compute time lost per second of device
                                   * copy (the copy engines run on the same cores as compute);
                                   * 0: none */
  guint32 pcie_generation;
  guint64 pcie_latency_ns;        /* per transfer */
  StwBandwidthPoint pinned[STW_HARDWARE_MAX_POINTS];   /* by size, ascending */
  guint n_pinned;
  StwBandwidthPoint pageable[STW_HARDWARE_MAX_POINTS];
  guint n_pageable;
  char cpu_model[128];            /* the host's CPU the cpu and node figures describe ("2x AMD
                                   * EPYC 7742 64-core"), as /proc/cpuinfo names it where probe
                                   * measured it; empty: the profile does not say */
  double cpu_adam_elems_per_s;    /* CPU Adam, all threads */
  double cpu_adam_bf16_elems_per_s; /* the same with bf16 moments, measured (probe); 0: not
                                     * measured, the fp32 rate scaled by the bytes it moves */
  double cpu_checksum_bytes_per_s; /* the storage tier's checksum (stw_storage_checksum) of
                                    * each region it writes and reads back, on the OpenMP team
                                    * (probe); 0: not measured, not counted */
  guint64 cpu_memory_bytes;       /* host memory typical of such a machine */
  guint64 cpu_overhead_bytes;     /* host memory a training process takes beside the model
                                   * state (CUDA context, framework, allocator slack), per rank;
                                   * 0: STW_HARDWARE_HOST_OVERHEAD_BYTES */
  char interconnect_kind[32];     /* "pcie", "nvlink", "nvswitch", "xgmi" or "mpi" (measured
                                   * by probe); empty when there is none */
  double interconnect_bytes_per_s; /* GPU-to-GPU inside a node, per GPU and direction */
  guint64 interconnect_latency_ns;
  /* optional: a collective step's bandwidth by chunk size, latency excluded (as probe
   * --collectives measures it); where there is none, interconnect_bytes_per_s at every size */
  StwBandwidthPoint interconnect_by_size[STW_HARDWARE_MAX_POINTS];
  guint n_interconnect_by_size;
  /* the node: how many GPUs one holds (0: any number), how many share a PCIe switch and its
   * link to the host (each GPU's PCIe bandwidth divided among those copying at once), and the
   * host memory bandwidth all of them share for copies and CPU Adam, in bytes read and written
   * a second (STREAM's count: a copy of N bytes moves 2 N; 0: not a limit) */
  guint32 node_gpus;
  guint32 gpus_per_pcie_switch;   /* >= 1 */
  double host_memory_bytes_per_s;
  /* a node of two CPU sockets: the GPUs behind one (0: all of the node's), and the rate per GPU
   * and direction of a ring among more of them than one socket holds, which crosses between the
   * sockets (on PCIe, through host memory: NCCL does not copy peer to peer there) */
  guint32 gpus_per_socket;
  double cross_socket_bytes_per_s;
  /* between nodes (empty kind: a single-node machine) */
  char network_kind[32];          /* "infiniband", "roce", "ethernet", "efa" or "mpi" */
  double network_bytes_per_s;     /* per node, per direction: all its NICs together */
  guint64 network_latency_ns;
  /* storage for chunks, the third tier (empty kind: none): NVMe drives behind the host, striped
   * together; their reads and writes by request size, all drives together, at the queue depth
   * the runtime keeps, latency excluded. Staged through pinned host buffers unless gpudirect:
   * staged traffic crosses host memory (host_memory_bytes_per_s) beside the GPU's copies */
  char storage_kind[32];          /* "nvme" */
  guint32 storage_devices;        /* drives, >= 1 */
  guint64 storage_bytes;          /* capacity for chunks, all drives */
  guint32 storage_queue_depth;    /* requests in flight the curves were measured at */
  guint64 storage_latency_ns;     /* per request */
  StwBandwidthPoint storage_read[STW_HARDWARE_MAX_POINTS];
  guint n_storage_read;
  StwBandwidthPoint storage_write[STW_HARDWARE_MAX_POINTS];
  guint n_storage_write;
  gboolean storage_gpudirect;     /* GPUDirect Storage: requests straight to and from GPU
                                   * memory, no host staging */
  double storage_mixed_bytes_per_s; /* reads and writes in flight together, both directions'
                                     * bytes (8 MiB requests, all drives): what a request moves
                                     * at when the one before it went the other way; 0: not
                                     * measured (each at its direction's curve) */
} StwHardware;

/* The request size storage.mixed_bytes_per_s is measured at (probe --nvme) and read against. */
#define STW_STORAGE_MIXED_BYTES (G_GUINT64_CONSTANT(8) << 20)

/* A shipped profile's name (case-insensitive), or a path to a profile file. Errors:
 * STW_HARDWARE_ERROR_UNKNOWN (no such profile: the message lists them), and from a file
 * STW_FILES_ERROR (the file), STW_JSON_ERROR (its text). */
gboolean stw_hardware_lookup(const char *name_or_file, StwHardware *out, GError **error);
gboolean stw_hardware_load(const char *file, StwHardware *out, GError **error);
gboolean stw_hardware_parse(const char *file, const char *text, gsize len, StwHardware *out,
                            GError **error);
/* Writes HW with DESCRIPTION as a profile FILE (atomically), after reading the text back: what
 * is written is what the reader takes. FALSE with ERROR otherwise. */
gboolean stw_hardware_save(const StwHardware *hw, const char *description, const char *file,
                           GError **error);
/* Whether NAME may name a profile: 1 to 63 bytes of UTF-8, no control character. */
gboolean stw_hardware_name_ok(const char *name);
/* Names of the shipped profiles, sorted, never NULL; the caller frees them with g_strfreev. */
char **stw_hardware_names(void);
/* Names of the shipped storage presets (hw/storage: one drive of a kind each), the same way. */
char **stw_hardware_storage_names(void);
/* HW's storage tier replaced by another's, the rest of HW kept: a shipped storage preset's
 * (NAME_OR_FILE a name of stw_hardware_storage_names, case-insensitive) or a file's, a storage
 * preset (format "stowage-storage": name, storage, description and sources) or a hardware
 * profile with a "storage" section. HW's origin says where the storage came from. Errors as
 * stw_hardware_lookup's (STW_HARDWARE_ERROR_UNKNOWN lists the presets). */
gboolean stw_hardware_use_storage(StwHardware *hw, const char *name_or_file, GError **error);

/* The default of cpu_overhead_bytes: 2 GiB per rank, what a PyTorch process with a CUDA
 * context, its libraries and its allocators' slack takes on the host before any model state. */
#define STW_HARDWARE_HOST_OVERHEAD_BYTES (G_GUINT64_CONSTANT(2) << 30)

/* A rank's host memory beside the model state: the profile's cpu_overhead_bytes or the
 * default. */
static inline guint64
stw_hardware_host_overhead(const StwHardware *hw)
{
  return hw->cpu_overhead_bytes ? hw->cpu_overhead_bytes : STW_HARDWARE_HOST_OVERHEAD_BYTES;
}

/* The 16-bit dtype a model computes in on HW unless asked otherwise: bf16, or fp16 on a GPU
 * without bf16 (Volta, Turing). */
static inline StwDtype
stw_hardware_default_dtype(const StwHardware *hw)
{
  return hw->flops_per_s[STW_DTYPE_BF16] > 0 ? STW_DTYPE_BF16 : STW_DTYPE_FP16;
}

/* The default of matmul_half_time_ns: a matmul of 1.5 us at full rate runs at half of it. */
#define STW_HARDWARE_MATMUL_HALF_TIME_NS 1500

/* The time of a matmul (or a flash attention, its GEMMs fused) of FLOPS in DTYPE reading and
 * writing BYTES: its FLOPs at the efficiency its size reaches, e * f / (f + f_half) with f_half
 * what the GPU does in matmul_half_time_ns, or its bytes at the achieved HBM bandwidth, whichever
 * is longer; plus the per-operator overhead. */
guint64 stw_hardware_matmul_ns(const StwHardware *hw, StwDtype dtype, double flops, double bytes);
/* The time of a memory-bound operator (norms, activations, softmax, residuals, Adam) touching
 * BYTES: bytes at the achieved HBM bandwidth, plus the per-operator overhead. */
guint64 stw_hardware_memory_op_ns(const StwHardware *hw, double bytes);

/* The bytes a fused Adam step on the GPU reads and writes for one element of a DTYPE compute
 * copy: the gradient, master weight and both moments read, the three written, and the new
 * compute copy (fp32 state: 2 x dtype + 24). */
static inline double
stw_gpu_adam_bytes_per_elem(StwDtype dtype)
{
  return (double)(2 * stw_dtype_bytes(dtype) + 24);
}

/* Bandwidth for a transfer of BYTES, interpolated (log-size) between the profile's points. */
double stw_hardware_pcie_bandwidth(const StwHardware *hw, guint64 bytes, gboolean pinned);

/* The interconnect's bandwidth for one collective step of BYTES: its curve by size when it has
 * one, else its one figure. */
double stw_hardware_interconnect_bandwidth(const StwHardware *hw, guint64 bytes);
/* The storage's bandwidth for requests of BYTES, reading or (WRITE) writing, all drives
 * together; 0 where the profile has no storage. */
double stw_hardware_storage_bandwidth(const StwHardware *hw, guint64 bytes, gboolean write);
/* HW's storage as DEVICES drives of its kind, requests striped over them: its bandwidth (mixed too) at every
 * size and its capacity scaled by DEVICES over its own count (each drive as fast as the profile's
 * average; what the host's PCIe and memory allow beyond that is not modelled). */
#define STW_HARDWARE_MAX_STORAGE_DEVICES 256u
void stw_hardware_set_storage_devices(StwHardware *hw, guint32 devices);

STW_END_DECLS

#endif

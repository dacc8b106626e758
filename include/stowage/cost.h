/* cost.h — the cost model's transfer times: one place for what a copy and a collective cost.
 *
 * A copy over PCIe costs the profile's latency plus bytes over the bandwidth its curve gives for
 * that size (pinned or pageable host memory), shared with the node's other ranks copying at the
 * same time behind the same PCIe switch, and at most their share of the host's memory
 * bandwidth. A collective among ranks on several nodes is hierarchical: a ring inside each node
 * over the GPU interconnect, then a ring between the nodes over the network, carrying the
 * node's pieces together. CPU Adam's rate is the host's, shared by the node's ranks. The
 * simulator and the planner use these; docs/algorithms.md derives them.
 */
#ifndef STW_COST_H
#define STW_COST_H

#include <glib.h>

#include <stowage/chunks.h>
#include <stowage/hardware.h>

#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_PLANNER
#error "<stowage/cost.h> belongs to the planner: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

/* The simulator's times and the predictions' byte counts saturate at STW_COST_MAX instead of
 * wrapping: a sum of input values never wraps, and a plan whose predictions pass the plan
 * format's 2^53 is refused when it is made (planner.h). */
#define STW_COST_MAX (G_GUINT64_CONSTANT(1) << 62)

/* A + B, at most STW_COST_MAX. */
static inline guint64
stw_cost_add(guint64 a, guint64 b)
{
  return a >= STW_COST_MAX || b >= STW_COST_MAX - a ? STW_COST_MAX : a + b;
}

/* NS (a double: a size over a rate) as whole nanoseconds, from 0 to STW_COST_MAX. */
static inline guint64
stw_cost_ns(double ns)
{
  return !(ns > 0) ? 0 : ns >= (double)STW_COST_MAX ? STW_COST_MAX : (guint64)ns;
}

/* Time of a request of BYTES to the profile's storage (reading, or with WRITE writing) for one of
 * RANKS_PER_NODE ranks in lockstep: at its direction's curve, or with TURN (queued behind a
 * request the other way) that curve slowed as the profile's mixed figure is slower than the
 * curves taking turns (never sped up); the node's drives are shared by its ranks, and staged
 * through host memory (no GPUDirect Storage) the bytes cross it, which the ranks share too, and
 * the runtime's checksum of them costs the profile's cpu.checksum_bytes_per_s; the request's
 * latency included. 0 where the profile has no storage. */
guint64 stw_storage_ns(const StwHardware *hw, guint32 ranks_per_node, guint64 bytes,
                       gboolean write, gboolean turn);

/* Transfer time of BYTES over the profile's PCIe link (pinned or pageable host memory) for one of
 * RANKS_PER_NODE ranks copying in lockstep. */
guint64 stw_transfer_ns(const StwHardware *hw, guint32 ranks_per_node, guint64 bytes,
                        gboolean pinned);

/* A collective (all-gather or reduce-scatter) of chunks of CHUNK_BYTES among WORLD ranks on
 * NODES nodes: (g - 1) steps of the interconnect's latency plus a chunk over its bandwidth (at
 * most node.cross_socket_bytes_per_s where g is more than node.gpus_per_socket), g the
 * ranks of a node, then (nodes - 1) steps of the network's latency plus g chunks over the node's
 * network bandwidth. 0 for one rank; the planner refuses a profile without the links it needs. */
guint64 stw_collective_ns(const StwHardware *hw, guint32 world, guint32 nodes,
                          guint64 chunk_bytes);

/* Bytes an AdamW step moves per element (it is bound by memory bandwidth): the gradient read
 * and the new weight written in the compute copy's DTYPE, the fp32 master weight read and
 * written, each moment (and AMSGrad's largest variance) read and written in STATE: 32 in fp32,
 * 28 with a 16-bit copy. IN_COPY (stw_adam_steps_in_copy): the new weights go into the copy
 * alone, the master only read: 28 in fp32, 20 with bf16 moments. */
double stw_adam_bytes_per_elem(StwDtype dtype, StwDtype state, gboolean amsgrad,
                               gboolean in_copy);

/* The step whose rate a profile's cpu.adam_elems_per_s is (`probe` runs it: fp32 weights,
 * gradients and moments, stw_adam_update) moves 28 bytes an element; its
 * cpu.adam_bf16_elems_per_s, the same with bf16 moments, 20. */
#define STW_ADAM_PROFILE_BYTES 28.0

/* The host's addition of BYTES of gradients into as many held there (each read, the sum
 * written: 3 BYTES touched), by one of RANKS_PER_NODE ranks: at the bytes a second the profile's
 * CPU Adam streams (cpu.adam_elems_per_s of STW_ADAM_PROFILE_BYTES each), within the host's
 * memory bandwidth the node's ranks share. */
guint64 stw_host_add_ns(const StwHardware *hw, guint32 ranks_per_node, guint64 bytes);
#define STW_ADAM_PROFILE_BF16_BYTES 20.0

/* CPU Adam elements per second on chunks of layout C (stepped in their copy: IN_COPY) for one
 * of its ranks: the profile's rate for the step it measured (one rank's, a process on its own
 * threads), with fp32 moments cpu.adam_elems_per_s, with bf16 ones cpu.adam_bf16_elems_per_s
 * where the profile has it (else the fp32 one), scaled by the bytes this layout's step moves
 * against that step's (Adam is bound by memory). A node's ranks step their own chunks at once,
 * each at that rate, and together never faster than the host's memory streams their bytes
 * (node.host_memory_bytes_per_s: bytes read and written a second). */
double stw_cpu_adam_rate(const StwHardware *hw, const StwChunking *c, gboolean in_copy);

STW_END_DECLS

#endif

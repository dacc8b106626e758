/* cost.c — transfer and collective times; see cost.h. */
#include "config.h"

#include <stowage/cost.h>

guint64
stw_transfer_ns(const StwHardware *hw, guint32 ranks_per_node, guint64 bytes, gboolean pinned)
{
  guint32 ranks = MAX(ranks_per_node, 1);
  double bw = stw_hardware_pcie_bandwidth(hw, bytes, pinned);
  /* the ranks behind one switch share its link to the host */
  bw /= MIN(MAX(hw->gpus_per_pcie_switch, 1), ranks);
  /* and all of the node's ranks share the host's memory: a DMA engine's copy reads or writes
   * each byte once there, the emulated device's memcpy both */
  if (hw->host_memory_bytes_per_s > 0)
    bw = MIN(bw, hw->host_memory_bytes_per_s / (hw->compute_on_host ? 2.0 : 1.0) / ranks);
  return stw_cost_add(hw->pcie_latency_ns, stw_cost_ns((double)bytes / bw * 1e9));
}

guint64
stw_host_add_ns(const StwHardware *hw, guint32 ranks_per_node, guint64 bytes)
{
  guint32 ranks = MAX(ranks_per_node, 1);
  double bw = hw->cpu_adam_elems_per_s * STW_ADAM_PROFILE_BYTES;
  if (hw->host_memory_bytes_per_s > 0)
    bw = MIN(bw, hw->host_memory_bytes_per_s / ranks);
  if (!(bw > 0))
    return 0;
  return stw_cost_ns(3.0 * (double)bytes / bw * 1e9);
}

guint64
stw_storage_ns(const StwHardware *hw, guint32 ranks_per_node, guint64 bytes, gboolean write,
               gboolean turn)
{
  guint32 ranks = MAX(ranks_per_node, 1);
  double bw = stw_hardware_storage_bandwidth(hw, bytes, write);
  if (turn && bw > 0 && hw->storage_mixed_bytes_per_s > 0) {
    /* the mixed figure against what the two curves give 8 MiB requests taking turns (half the
     * bytes each way): how much the turns slow the device, applied to this request's curve.
     * Never a speed-up: a disk whose writes land in a cache mixes faster than it reads, and a
     * read behind a write at the mixed figure was predicted faster than a read alone */
    double r = stw_hardware_storage_bandwidth(hw, STW_STORAGE_MIXED_BYTES, FALSE),
           w = stw_hardware_storage_bandwidth(hw, STW_STORAGE_MIXED_BYTES, TRUE);
    if (r > 0 && w > 0)
      bw *= MIN(1.0, hw->storage_mixed_bytes_per_s * (0.5 / r + 0.5 / w));
  }
  bw /= ranks;
  if (!(bw > 0))
    return 0;
  if (!hw->storage_gpudirect && hw->host_memory_bytes_per_s > 0)
    bw = MIN(bw, hw->host_memory_bytes_per_s / ranks);
  double ns = (double)bytes / bw * 1e9;
  /* staged, the runtime sums the region in host memory as it writes it and again once it is
   * read, before the next request: the host's checksum rate where the profile measured it */
  if (!hw->storage_gpudirect && hw->cpu_checksum_bytes_per_s > 0)
    ns += (double)bytes / hw->cpu_checksum_bytes_per_s * 1e9;
  return stw_cost_add(hw->storage_latency_ns, stw_cost_ns(ns));
}

guint64
stw_collective_ns(const StwHardware *hw, guint32 world, guint32 nodes, guint64 chunk_bytes)
{
  nodes = MAX(nodes, 1);
  if (world <= 1)
    return 0;
  guint32 per_node = MAX(world / nodes, 1);
  double ns = 0;
  if (per_node > 1 && hw->interconnect_bytes_per_s > 0) {
    double bw = stw_hardware_interconnect_bandwidth(hw, chunk_bytes);
    /* a ring among more GPUs than one socket holds crosses between the sockets, and every step
     * goes at that crossing's pace */
    if (hw->gpus_per_socket > 0 && per_node > hw->gpus_per_socket)
      bw = MIN(bw, hw->cross_socket_bytes_per_s);
    ns += (per_node - 1) * ((double)hw->interconnect_latency_ns + (double)chunk_bytes / bw * 1e9);
  }
  if (nodes > 1 && hw->network_bytes_per_s > 0)
    ns += (nodes - 1) * ((double)hw->network_latency_ns +
                         (double)per_node * (double)chunk_bytes / hw->network_bytes_per_s * 1e9);
  return stw_cost_ns(ns);
}

double
stw_adam_bytes_per_elem(StwDtype dtype, StwDtype state, gboolean amsgrad, gboolean in_copy)
{
  return 2.0 * (double)stw_dtype_bytes(dtype) + (in_copy ? 4.0 : 8.0) +
         2.0 * (double)stw_dtype_bytes(state) * (amsgrad ? 3 : 2);
}

double
stw_cpu_adam_rate(const StwHardware *hw, const StwChunking *c, gboolean in_copy)
{
  guint32 ranks = MAX(stw_chunking_ranks_per_node(c), 1);
  double bytes = stw_adam_bytes_per_elem(c->dtype, c->state_dtype, c->amsgrad, in_copy);
  double rate;
  if (c->state_dtype == STW_DTYPE_BF16 && hw->cpu_adam_bf16_elems_per_s > 0)
    rate = hw->cpu_adam_bf16_elems_per_s * STW_ADAM_PROFILE_BF16_BYTES / bytes; /* probe's */
  else
    rate = hw->cpu_adam_elems_per_s * STW_ADAM_PROFILE_BYTES / bytes;
  /* each rank steps its own chunks on its own threads while the others step theirs; together
   * never faster than the host's memory streams the bytes they touch */
  if (hw->host_memory_bytes_per_s > 0)
    rate = MIN(rate, hw->host_memory_bytes_per_s / bytes / ranks);
  return rate;
}

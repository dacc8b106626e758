/* cost.c — transfer and collective times; see cost.h. */
#include "config.h"

#include <stowage/cost.h>

guint64
stw_transfer_ns(const StwHardware *hw, guint64 bytes, gboolean pinned)
{
  double bw = stw_hardware_pcie_bandwidth(hw, bytes, pinned);
  return stw_cost_add(hw->pcie_latency_ns, stw_cost_ns((double)bytes / bw * 1e9));
}

guint64
stw_collective_ns(const StwHardware *hw, guint32 world, guint64 chunk_bytes)
{
  if (world <= 1 || hw->interconnect_bytes_per_s <= 0)
    return 0;
  double step = (double)hw->interconnect_latency_ns +
                (double)chunk_bytes / hw->interconnect_bytes_per_s * 1e9;
  return stw_cost_ns((world - 1) * step);
}

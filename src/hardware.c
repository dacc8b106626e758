/* hardware.c — hardware profiles: shipped ones from the GResource, others from files. */
#include "config.h"

#include <stowage/hardware.h>

#include <stowage/files.h>

#include <math.h>
#include <string.h>

#include <gio/gio.h>

#include "hw-resources.h"
#include "json.h"

G_DEFINE_QUARK(stw-hardware-error-quark, stw_hardware_error)

#define RESOURCE_DIR "/org/stowage/hw"
#define STORAGE_DIR RESOURCE_DIR "/storage"

/* A small file: its kind named when another kind is given. */
static const StwJsonLimits hardware_limits = { .format = "stowage-hardware",
                                              .max_values = 1u << 16,
                                          .max_array = 1u << 12 };

static const char *const root_members[] = { "format", "version", "name", "description", "gpu",
                                            "pcie", "cpu", "interconnect", "node", "network",
                                            "storage", "sources", NULL };
static const char *const gpu_members[] = { "model", "memory_bytes", "process_bytes",
                                           "hbm_bytes_per_s", "flops_per_s", "matmul_efficiency",
                                           "matmul_half_time_ns", "memory_efficiency",
                                           "op_overhead_ns", "compute_on_host",
                                           "copy_interference", NULL };
static const char *const pcie_members[] = { "generation", "latency_ns", "pinned", "pageable",
                                            NULL };
static const char *const cpu_members[] = { "model", "adam_elems_per_s", "memory_bytes",
                                           "overhead_bytes", "adam_bf16_elems_per_s",
                                           "checksum_bytes_per_s", NULL };
static const char *const link_members[] = { "kind", "bytes_per_s", "latency_ns", "by_size",
                                            NULL };
static const char *const node_members[] = { "gpus", "gpus_per_pcie_switch",
                                            "host_memory_bytes_per_s", "gpus_per_socket",
                                            "cross_socket_bytes_per_s", NULL };
static const char *const storage_members[] = { "kind", "devices", "capacity_bytes",
                                               "queue_depth", "latency_ns", "read", "write",
                                               "gpudirect", "mixed_bytes_per_s", NULL };
static const char *const storage_kinds[] = { "nvme", NULL };

/* The kinds of link a profile may name: GPU to GPU in a node, node to node. */
static const char *const interconnect_kinds[] = { "pcie", "nvlink", "nvswitch", "xgmi", "mpi",
                                                  NULL };
static const char *const network_kinds[] = { "infiniband", "roce", "ethernet", "efa", "mpi",
                                             NULL };

/* A bandwidth curve: points by size, ascending. */
static gboolean
read_curve(StwJsonReader *r, const cJSON *obj, const char *key, gboolean required,
           StwBandwidthPoint *points, guint *n_out, GError **error)
{
  const cJSON *arr = NULL;
  *n_out = 0;
  if (!stw_json_get_array(r, obj, key, required, STW_HARDWARE_MAX_POINTS, &arr, error))
    return FALSE;
  if (arr == NULL)
    return TRUE;
  gsize saved = stw_json_push_key(r, key);
  guint n = 0;
  for (const cJSON *p = arr->child; p != NULL; p = p->next, n++) {
    gsize s2 = stw_json_push_index(r, n);
    static const char *const point_members[] = { "bytes", "bytes_per_s", NULL };
    if (!stw_json_check_object(r, p, point_members, error) ||
        !stw_json_get_u64(r, p, "bytes", TRUE, 1, STW_JSON_INT_MAX, &points[n].bytes, error) ||
        !stw_json_get_double(r, p, "bytes_per_s", TRUE, 1e6, 1e15, &points[n].bytes_per_s,
                             error))
      return FALSE;
    if (n > 0 && points[n].bytes <= points[n - 1].bytes)
      return stw_json_fail_at(r, "bytes", error, "points must be in ascending order of size");
    stw_json_pop(r, s2);
  }
  if (n == 0)
    return stw_json_fail(r, error, "expected at least one point");
  stw_json_pop(r, saved);
  *n_out = n;
  return TRUE;
}

/* A link (interconnect or network): kind, bandwidth, latency, and where BY_SIZE is given, an
 * optional curve by size. */
static gboolean
read_link(StwJsonReader *r, const cJSON *root, const char *key, const char *const *kinds,
          char *kind, gsize kind_size, double *bytes_per_s, guint64 *latency_ns,
          StwBandwidthPoint *by_size, guint *n_by_size, GError **error)
{
  const cJSON *link = NULL;
  int k = 0;
  if (!stw_json_get_object(r, root, key, FALSE, &link, error))
    return FALSE;
  if (link == NULL)
    return TRUE;
  gsize saved = stw_json_push_key(r, key);
  if (!stw_json_check_object(r, link, link_members, error) ||
      !stw_json_get_enum(r, link, "kind", TRUE, kinds, &k, error) ||
      !stw_json_get_double(r, link, "bytes_per_s", TRUE, 1e6, 1e15, bytes_per_s, error) ||
      !stw_json_get_u64(r, link, "latency_ns", TRUE, 0, 1000000000, latency_ns, error))
    return FALSE;
  if (by_size != NULL) {
    if (!read_curve(r, link, "by_size", FALSE, by_size, n_by_size, error))
      return FALSE;
  } else if (cJSON_GetObjectItemCaseSensitive(link, "by_size") != NULL) {
    return stw_json_fail_at(r, "by_size", error, "only the interconnect has a curve by size");
  }
  g_strlcpy(kind, kinds[k], kind_size);
  stw_json_pop(r, saved);
  return TRUE;
}

/* The node: GPUs (optional: any number), their sharing of PCIe switches, the host memory
 * bandwidth, and the GPUs behind one socket with the rate of a ring crossing between sockets
 * (the two together). */
static gboolean
read_node(StwJsonReader *r, const cJSON *root, StwHardware *hw, GError **error)
{
  const cJSON *node = NULL;
  hw->gpus_per_pcie_switch = 1;
  if (!stw_json_get_object(r, root, "node", FALSE, &node, error))
    return FALSE;
  if (node == NULL)
    return TRUE;
  gsize saved = stw_json_push_key(r, "node");
  guint64 gpus = 0, share = 1, socket = 0;
  if (!stw_json_check_object(r, node, node_members, error) ||
      !stw_json_get_u64(r, node, "gpus", FALSE, 1, 4096, &gpus, error) ||
      !stw_json_get_u64(r, node, "gpus_per_pcie_switch", FALSE, 1, gpus ? gpus : 4096, &share,
                        error) ||
      !stw_json_get_double(r, node, "host_memory_bytes_per_s", FALSE, 1e9, 1e15,
                           &hw->host_memory_bytes_per_s, error) ||
      !stw_json_get_u64(r, node, "gpus_per_socket", FALSE, 1, gpus ? gpus : 4096, &socket,
                        error) ||
      !stw_json_get_double(r, node, "cross_socket_bytes_per_s", FALSE, 1e6, 1e15,
                           &hw->cross_socket_bytes_per_s, error))
    return FALSE;
  if ((socket > 0) != (hw->cross_socket_bytes_per_s > 0))
    return stw_json_fail_at(r, socket > 0 ? "gpus_per_socket" : "cross_socket_bytes_per_s",
                            error, "gpus_per_socket and cross_socket_bytes_per_s go together: "
                            "the GPUs behind one socket, and the rate of a ring beyond them");
  hw->gpus_per_socket = (guint32)socket;
  hw->node_gpus = (guint32)gpus;
  hw->gpus_per_pcie_switch = (guint32)MAX(share, 1);
  stw_json_pop(r, saved);
  return TRUE;
}

/* The storage: its drives, capacity, queue depth, latency and curves both ways. */
static gboolean
read_storage(StwJsonReader *r, const cJSON *root, StwHardware *hw, GError **error)
{
  const cJSON *st = NULL;
  int kind = 0;
  guint64 devices = 1, depth = 0;
  if (!stw_json_get_object(r, root, "storage", FALSE, &st, error))
    return FALSE;
  if (st == NULL)
    return TRUE;
  gsize saved = stw_json_push_key(r, "storage");
  if (!stw_json_check_object(r, st, storage_members, error) ||
      !stw_json_get_enum(r, st, "kind", TRUE, storage_kinds, &kind, error) ||
      !stw_json_get_u64(r, st, "devices", FALSE, 1, STW_HARDWARE_MAX_STORAGE_DEVICES, &devices,
                        error) ||
      !stw_json_get_u64(r, st, "capacity_bytes", TRUE, 1, STW_JSON_INT_MAX, &hw->storage_bytes,
                        error) ||
      !stw_json_get_u64(r, st, "queue_depth", TRUE, 1, 65536, &depth, error) ||
      !stw_json_get_u64(r, st, "latency_ns", TRUE, 0, 1000000000, &hw->storage_latency_ns,
                        error) ||
      !read_curve(r, st, "read", TRUE, hw->storage_read, &hw->n_storage_read, error) ||
      !read_curve(r, st, "write", TRUE, hw->storage_write, &hw->n_storage_write, error) ||
      !stw_json_get_bool(r, st, "gpudirect", FALSE, &hw->storage_gpudirect, error) ||
      !stw_json_get_double(r, st, "mixed_bytes_per_s", FALSE, 1e6, 1e13,
                           &hw->storage_mixed_bytes_per_s, error))
    return FALSE;
  g_strlcpy(hw->storage_kind, storage_kinds[kind], sizeof hw->storage_kind);
  hw->storage_devices = (guint32)devices;
  hw->storage_queue_depth = (guint32)depth;
  stw_json_pop(r, saved);
  return TRUE;
}

gboolean
stw_hardware_read(StwJsonReader *r, const cJSON *root, StwHardware *hw, GError **error)
{
  const char *format = NULL, *name = NULL, *model = NULL, *text = NULL;
  const cJSON *gpu = NULL, *pcie = NULL, *cpu = NULL, *flops = NULL;
  guint64 version = 0, gen = 0;
  memset(hw, 0, sizeof *hw);
  if (!stw_json_check_format(r, root, "stowage-hardware", error) ||
      !stw_json_check_object(r, root, root_members, error) ||
      !stw_json_get_string(r, root, "format", TRUE, 64, &format, error))
    return FALSE;
  if (!stw_json_get_u64(r, root, "version", TRUE, 1, 1, &version, error) ||
      !stw_json_get_string(r, root, "name", TRUE, sizeof hw->name - 1, &name, error) ||
      !stw_json_get_string(r, root, "description", FALSE, 4096, &text, error) ||
      !stw_json_get_string(r, root, "sources", FALSE, 4096, &text, error) ||
      !stw_json_get_object(r, root, "gpu", TRUE, &gpu, error) ||
      !stw_json_get_object(r, root, "pcie", TRUE, &pcie, error) ||
      !stw_json_get_object(r, root, "cpu", TRUE, &cpu, error))
    return FALSE;
  if (!stw_hardware_name_ok(name))
    return stw_json_fail_at(r, "name", error, "expected a name of 1 to %zu bytes without control "
                            "characters", sizeof hw->name - 1);
  g_strlcpy(hw->name, name, sizeof hw->name);

  gsize saved = stw_json_push_key(r, "gpu");
  if (!stw_json_check_object(r, gpu, gpu_members, error) ||
      !stw_json_get_string(r, gpu, "model", TRUE, sizeof hw->gpu_model - 1, &model, error) ||
      !stw_json_get_u64(r, gpu, "memory_bytes", TRUE, 1, STW_JSON_INT_MAX,
                        &hw->gpu_memory_bytes, error) ||
      !stw_json_get_u64(r, gpu, "process_bytes", FALSE, 1, STW_JSON_INT_MAX,
                        &hw->gpu_process_bytes, error) ||
      !stw_json_get_double(r, gpu, "hbm_bytes_per_s", TRUE, 1e9, 1e15, &hw->hbm_bytes_per_s,
                           error) ||
      !stw_json_get_object(r, gpu, "flops_per_s", TRUE, &flops, error) ||
      !stw_json_get_double(r, gpu, "matmul_efficiency", TRUE, 0.01, 1.0,
                           &hw->matmul_efficiency, error) ||
      !stw_json_get_u64(r, gpu, "matmul_half_time_ns", FALSE, 1, 1000000000,
                        &hw->matmul_half_time_ns, error) ||
      !stw_json_get_double(r, gpu, "memory_efficiency", TRUE, 0.01, 1.0,
                           &hw->memory_efficiency, error) ||
      !stw_json_get_u64(r, gpu, "op_overhead_ns", TRUE, 0, 1000000000, &hw->op_overhead_ns,
                        error) ||
      !stw_json_get_bool(r, gpu, "compute_on_host", FALSE, &hw->compute_on_host, error) ||
      !stw_json_get_double(r, gpu, "copy_interference", FALSE, 0, 4, &hw->copy_interference,
                           error))
    return FALSE;
  if (hw->gpu_process_bytes >= hw->gpu_memory_bytes)
    return stw_json_fail_at(r, "process_bytes", error, "expected less than gpu.memory_bytes (%"
                            G_GUINT64_FORMAT "): a process that holds all of its GPU leaves "
                            "nothing to plan", hw->gpu_memory_bytes);
  if (hw->copy_interference > 0 && !hw->compute_on_host)
    return stw_json_fail_at(r, "copy_interference", error,
                            "needs compute_on_host: only copies on the compute's own cores slow "
                            "it");
  g_strlcpy(hw->gpu_model, model, sizeof hw->gpu_model);
  gsize s2 = stw_json_push_key(r, "flops_per_s");
  if (!stw_json_check_object(r, flops, stw_dtype_names, error))
    return FALSE;
  double any = 0;
  for (int d = 0; d < STW_N_DTYPES; d++) {
    if (!stw_json_get_double(r, flops, stw_dtype_names[d], TRUE, 0, 1e18, &hw->flops_per_s[d],
                             error))
      return FALSE;
    any = MAX(any, hw->flops_per_s[d]);
  }
  if (!(any > 0))
    return stw_json_fail(r, error, "no dtype has any compute: a profile needs the FLOP/s of at "
                         "least one of fp32, fp16, bf16");
  stw_json_pop(r, s2);
  stw_json_pop(r, saved);

  saved = stw_json_push_key(r, "pcie");
  if (!stw_json_check_object(r, pcie, pcie_members, error) ||
      !stw_json_get_u64(r, pcie, "generation", TRUE, 1, 7, &gen, error) ||
      !stw_json_get_u64(r, pcie, "latency_ns", TRUE, 0, 1000000000, &hw->pcie_latency_ns,
                        error) ||
      !read_curve(r, pcie, "pinned", TRUE, hw->pinned, &hw->n_pinned, error) ||
      !read_curve(r, pcie, "pageable", TRUE, hw->pageable, &hw->n_pageable, error))
    return FALSE;
  hw->pcie_generation = (guint32)gen;
  stw_json_pop(r, saved);

  saved = stw_json_push_key(r, "cpu");
  const char *cpu_model = NULL;
  if (!stw_json_check_object(r, cpu, cpu_members, error) ||
      !stw_json_get_string(r, cpu, "model", FALSE, sizeof hw->cpu_model - 1, &cpu_model,
                           error) ||
      !stw_json_get_double(r, cpu, "adam_elems_per_s", TRUE, 1e3, 1e15,
                           &hw->cpu_adam_elems_per_s, error) ||
      !stw_json_get_u64(r, cpu, "memory_bytes", TRUE, 1, STW_JSON_INT_MAX,
                        &hw->cpu_memory_bytes, error) ||
      !stw_json_get_u64(r, cpu, "overhead_bytes", FALSE, 1, STW_JSON_INT_MAX,
                        &hw->cpu_overhead_bytes, error) ||
      !stw_json_get_double(r, cpu, "adam_bf16_elems_per_s", FALSE, 1e3, 1e15,
                           &hw->cpu_adam_bf16_elems_per_s, error) ||
      !stw_json_get_double(r, cpu, "checksum_bytes_per_s", FALSE, 1e6, 1e13,
                           &hw->cpu_checksum_bytes_per_s, error))
    return FALSE;
  g_strlcpy(hw->cpu_model, cpu_model != NULL ? cpu_model : "", sizeof hw->cpu_model);
  stw_json_pop(r, saved);

  return read_link(r, root, "interconnect", interconnect_kinds, hw->interconnect_kind,
                   sizeof hw->interconnect_kind, &hw->interconnect_bytes_per_s,
                   &hw->interconnect_latency_ns, hw->interconnect_by_size,
                   &hw->n_interconnect_by_size, error) &&
         read_node(r, root, hw, error) &&
         read_link(r, root, "network", network_kinds, hw->network_kind, sizeof hw->network_kind,
                   &hw->network_bytes_per_s, &hw->network_latency_ns, NULL, NULL, error) &&
         read_storage(r, root, hw, error);
}

static const char *const preset_members[] = { "format", "version", "name", "description",
                                              "storage", "sources", NULL };

/* A storage preset ("stowage-storage": a name and a storage section) or a hardware profile with
 * a storage section, into OUT's name and storage members. */
static gboolean
read_storage_source(StwJsonReader *r, const cJSON *root, gpointer out, GError **error)
{
  StwHardware *hw = out;
  const cJSON *format = cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, "format")
                                             : NULL;
  if (cJSON_IsString(format) && strcmp(format->valuestring, "stowage-hardware") == 0) {
    if (!stw_hardware_read(r, root, hw, error))
      return FALSE;
    if (hw->storage_kind[0] == '\0')
      return stw_json_fail(r, error, "a hardware profile without a \"storage\" section: "
                           "expected one with it, or a storage preset (format "
                           "\"stowage-storage\")");
    return TRUE;
  }
  if (cJSON_IsString(format) && strcmp(format->valuestring, "stowage-storage") != 0)
    return stw_json_fail_at(r, "format", error, "expected \"stowage-storage\" (a storage preset) "
                            "or \"stowage-hardware\" (a profile with a \"storage\" section), "
                            "found \"%.64s\"", format->valuestring);
  const char *name = NULL, *text = NULL;
  const cJSON *st = NULL;
  guint64 version = 0;
  memset(hw, 0, sizeof *hw);
  if (!stw_json_check_format(r, root, "stowage-storage", error) ||
      !stw_json_check_object(r, root, preset_members, error) ||
      !stw_json_get_u64(r, root, "version", TRUE, 1, 1, &version, error) ||
      !stw_json_get_string(r, root, "name", TRUE, sizeof hw->name - 1, &name, error) ||
      !stw_json_get_string(r, root, "description", FALSE, 4096, &text, error) ||
      !stw_json_get_string(r, root, "sources", FALSE, 4096, &text, error) ||
      !stw_json_get_object(r, root, "storage", TRUE, &st, error))
    return FALSE;
  if (!stw_hardware_name_ok(name))
    return stw_json_fail_at(r, "name", error, "expected a name of 1 to %zu bytes without control "
                            "characters", sizeof hw->name - 1);
  g_strlcpy(hw->name, name, sizeof hw->name);
  return read_storage(r, root, hw, error);
}

/* FROM's storage members into TO, the rest of TO as it was. */
static void
copy_storage(StwHardware *to, const StwHardware *from)
{
  memcpy(to->storage_kind, from->storage_kind, sizeof to->storage_kind);
  to->storage_devices = from->storage_devices;
  to->storage_bytes = from->storage_bytes;
  to->storage_queue_depth = from->storage_queue_depth;
  to->storage_latency_ns = from->storage_latency_ns;
  memcpy(to->storage_read, from->storage_read, sizeof to->storage_read);
  to->n_storage_read = from->n_storage_read;
  memcpy(to->storage_write, from->storage_write, sizeof to->storage_write);
  to->n_storage_write = from->n_storage_write;
  to->storage_gpudirect = from->storage_gpudirect;
  to->storage_mixed_bytes_per_s = from->storage_mixed_bytes_per_s;
}

gboolean
stw_hardware_name_ok(const char *name)
{
  if (name == NULL || name[0] == '\0' || strlen(name) >= sizeof((StwHardware *)NULL)->name ||
      !g_utf8_validate(name, -1, NULL))
    return FALSE;
  for (const char *p = name; *p != '\0'; p = g_utf8_next_char(p))
    if (g_unichar_iscntrl(g_utf8_get_char(p)))
      return FALSE;
  return TRUE;
}

static gboolean
read_profile(StwJsonReader *r, const cJSON *root, gpointer out, GError **error)
{
  return stw_hardware_read(r, root, out, error);
}

static cJSON *
curve_to_json(const StwBandwidthPoint *p, guint n)
{
  cJSON *a = cJSON_CreateArray();
  for (guint i = 0; i < n; i++) {
    cJSON *o = cJSON_CreateObject();
    stw_json_add_u64(o, "bytes", p[i].bytes);
    stw_json_add_double(o, "bytes_per_s", p[i].bytes_per_s);
    cJSON_AddItemToArray(a, o);
  }
  return a;
}

cJSON *
stw_hardware_to_json(const StwHardware *hw)
{
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "format", "stowage-hardware");
  stw_json_add_u64(root, "version", 1);
  cJSON_AddStringToObject(root, "name", hw->name);
  cJSON *gpu = cJSON_AddObjectToObject(root, "gpu");
  cJSON_AddStringToObject(gpu, "model", hw->gpu_model);
  stw_json_add_u64(gpu, "memory_bytes", hw->gpu_memory_bytes);
  if (hw->gpu_process_bytes != 0)
    stw_json_add_u64(gpu, "process_bytes", hw->gpu_process_bytes);
  stw_json_add_double(gpu, "hbm_bytes_per_s", hw->hbm_bytes_per_s);
  cJSON *flops = cJSON_AddObjectToObject(gpu, "flops_per_s");
  for (int d = 0; d < STW_N_DTYPES; d++)
    stw_json_add_double(flops, stw_dtype_names[d], hw->flops_per_s[d]);
  stw_json_add_double(gpu, "matmul_efficiency", hw->matmul_efficiency);
  if (hw->matmul_half_time_ns != 0)
    stw_json_add_u64(gpu, "matmul_half_time_ns", hw->matmul_half_time_ns);
  stw_json_add_double(gpu, "memory_efficiency", hw->memory_efficiency);
  stw_json_add_u64(gpu, "op_overhead_ns", hw->op_overhead_ns);
  if (hw->compute_on_host)
    cJSON_AddBoolToObject(gpu, "compute_on_host", TRUE);
  if (hw->copy_interference > 0)
    stw_json_add_double(gpu, "copy_interference", hw->copy_interference);
  cJSON *pcie = cJSON_AddObjectToObject(root, "pcie");
  stw_json_add_u64(pcie, "generation", hw->pcie_generation);
  stw_json_add_u64(pcie, "latency_ns", hw->pcie_latency_ns);
  cJSON_AddItemToObject(pcie, "pinned", curve_to_json(hw->pinned, hw->n_pinned));
  cJSON_AddItemToObject(pcie, "pageable", curve_to_json(hw->pageable, hw->n_pageable));
  cJSON *cpu = cJSON_AddObjectToObject(root, "cpu");
  if (hw->cpu_model[0] != '\0')
    cJSON_AddStringToObject(cpu, "model", hw->cpu_model);
  stw_json_add_double(cpu, "adam_elems_per_s", hw->cpu_adam_elems_per_s);
  stw_json_add_u64(cpu, "memory_bytes", hw->cpu_memory_bytes);
  if (hw->cpu_overhead_bytes != 0)
    stw_json_add_u64(cpu, "overhead_bytes", hw->cpu_overhead_bytes);
  if (hw->cpu_adam_bf16_elems_per_s > 0)
    stw_json_add_double(cpu, "adam_bf16_elems_per_s", hw->cpu_adam_bf16_elems_per_s);
  if (hw->cpu_checksum_bytes_per_s > 0)
    stw_json_add_double(cpu, "checksum_bytes_per_s", hw->cpu_checksum_bytes_per_s);
  if (hw->interconnect_kind[0] != '\0') {
    cJSON *link = cJSON_AddObjectToObject(root, "interconnect");
    cJSON_AddStringToObject(link, "kind", hw->interconnect_kind);
    stw_json_add_double(link, "bytes_per_s", hw->interconnect_bytes_per_s);
    stw_json_add_u64(link, "latency_ns", hw->interconnect_latency_ns);
    if (hw->n_interconnect_by_size > 0)
      cJSON_AddItemToObject(link, "by_size",
                            curve_to_json(hw->interconnect_by_size, hw->n_interconnect_by_size));
  }
  if (hw->node_gpus > 0 || hw->host_memory_bytes_per_s > 0 || hw->gpus_per_socket > 0) {
    cJSON *node = cJSON_AddObjectToObject(root, "node");
    if (hw->node_gpus > 0)
      stw_json_add_u64(node, "gpus", hw->node_gpus);
    stw_json_add_u64(node, "gpus_per_pcie_switch", hw->gpus_per_pcie_switch);
    if (hw->host_memory_bytes_per_s > 0)
      stw_json_add_double(node, "host_memory_bytes_per_s", hw->host_memory_bytes_per_s);
    if (hw->gpus_per_socket > 0) {
      stw_json_add_u64(node, "gpus_per_socket", hw->gpus_per_socket);
      stw_json_add_double(node, "cross_socket_bytes_per_s", hw->cross_socket_bytes_per_s);
    }
  }
  if (hw->network_kind[0] != '\0') {
    cJSON *net = cJSON_AddObjectToObject(root, "network");
    cJSON_AddStringToObject(net, "kind", hw->network_kind);
    stw_json_add_double(net, "bytes_per_s", hw->network_bytes_per_s);
    stw_json_add_u64(net, "latency_ns", hw->network_latency_ns);
  }
  if (hw->storage_kind[0] != '\0') {
    cJSON *st = cJSON_AddObjectToObject(root, "storage");
    cJSON_AddStringToObject(st, "kind", hw->storage_kind);
    stw_json_add_u64(st, "devices", MAX(hw->storage_devices, 1));
    stw_json_add_u64(st, "capacity_bytes", hw->storage_bytes);
    stw_json_add_u64(st, "queue_depth", hw->storage_queue_depth);
    stw_json_add_u64(st, "latency_ns", hw->storage_latency_ns);
    cJSON_AddItemToObject(st, "read", curve_to_json(hw->storage_read, hw->n_storage_read));
    cJSON_AddItemToObject(st, "write", curve_to_json(hw->storage_write, hw->n_storage_write));
    if (hw->storage_gpudirect)
      cJSON_AddBoolToObject(st, "gpudirect", TRUE);
    if (hw->storage_mixed_bytes_per_s > 0)
      stw_json_add_double(st, "mixed_bytes_per_s", hw->storage_mixed_bytes_per_s);
  }
  return root;
}

gboolean
stw_hardware_parse(const char *file, const char *text, gsize len, StwHardware *out,
                   GError **error)
{
  return stw_json_read_text(file, text, len, &hardware_limits, read_profile, out, error);
}

gboolean
stw_hardware_load(const char *file, StwHardware *out, GError **error)
{
  return stw_json_read_file(file, 1u << 20, &hardware_limits, read_profile, out, error);
}

static int
compare_names(gconstpointer a, gconstpointer b)
{
  return g_ascii_strcasecmp(*(char *const *)a, *(char *const *)b);
}

/* The names of the .json files under the resource directory DIR, sorted. */
static char **
resource_names(const char *dir)
{
  char **files = g_resource_enumerate_children(stw_hw_get_resource(), dir,
                                               G_RESOURCE_LOOKUP_FLAGS_NONE, NULL);
  GPtrArray *names = g_ptr_array_new();
  for (char **f = files; f != NULL && *f != NULL; f++) {
    if (g_str_has_suffix(*f, ".json"))
      g_ptr_array_add(names, g_strndup(*f, strlen(*f) - 5));
  }
  g_strfreev(files);
  g_ptr_array_sort(names, compare_names);
  g_ptr_array_add(names, NULL);
  return (char **)g_ptr_array_free(names, FALSE);
}

char **
stw_hardware_names(void)
{
  return resource_names(RESOURCE_DIR);
}

/* The shipped file of DIR among NAMES named NAME (case-insensitive), read by FN into OUT as
 * the shipped KIND it is: TRUE with *FOUND its name, or NULL where none is so named. */
static gboolean
read_shipped(const char *dir, char **names, const char *name, const char *kind,
             StwJsonReadFunc fn, gpointer out, const char **found, GError **error)
{
  *found = NULL;
  for (char **n = names; *n != NULL; n++) {
    if (g_ascii_strcasecmp(*n, name) != 0)
      continue;
    g_autofree char *path = g_strdup_printf("%s/%s.json", dir, *n);
    g_autoptr(GBytes) bytes = g_resource_lookup_data(stw_hw_get_resource(), path,
                                                     G_RESOURCE_LOOKUP_FLAGS_NONE, NULL);
    g_assert(bytes != NULL);
    gsize len;
    const char *text = g_bytes_get_data(bytes, &len);
    g_autofree char *label = g_strdup_printf("(shipped %s %s)", kind, *n);
    if (!stw_json_read_text(label, text, len, &hardware_limits, fn, out, error))
      return FALSE;
    *found = *n;
    return TRUE;
  }
  return TRUE;
}

char **
stw_hardware_storage_names(void)
{
  return resource_names(STORAGE_DIR);
}

gboolean
stw_hardware_use_storage(StwHardware *hw, const char *name_or_file, GError **error)
{
  StwHardware from;
  g_autofree char *origin = NULL;
  gboolean file = FALSE;
  if (g_str_has_suffix(name_or_file, ".json") || strchr(name_or_file, '/') != NULL) {
    if (!stw_json_read_file(name_or_file, 1u << 20, &hardware_limits, read_storage_source, &from,
                            error))
      return FALSE;
    origin = g_strdup_printf("file %s", name_or_file);
    file = TRUE;
  } else {
    g_auto(GStrv) names = stw_hardware_storage_names();
    const char *found = NULL;
    if (!read_shipped(STORAGE_DIR, names, name_or_file, "storage preset", read_storage_source,
                      &from, &found, error))
      return FALSE;
    if (found == NULL) {
      g_autofree char *list = g_strjoinv(", ", names);
      g_set_error(error, STW_HARDWARE_ERROR, STW_HARDWARE_ERROR_UNKNOWN,
                  "unknown storage preset '%s': expected a storage preset or hardware profile "
                  "file (.json) or one of: %s", name_or_file, list);
      return FALSE;
    }
    origin = g_strdup_printf("shipped storage preset %s", found);
  }
  copy_storage(hw, &from);
  gsize len = strlen(hw->origin);
  g_snprintf(hw->origin + len, sizeof hw->origin - len, "%sits storage from the %s%s%s%s",
             len > 0 ? "; " : "", origin, file ? " (" : "", file ? from.name : "",
             file ? ")" : "");
  return TRUE;
}

gboolean
stw_hardware_lookup(const char *name_or_file, StwHardware *out, GError **error)
{
  if (g_str_has_suffix(name_or_file, ".json") || strchr(name_or_file, '/') != NULL) {
    if (!stw_hardware_load(name_or_file, out, error))
      return FALSE;
    g_snprintf(out->origin, sizeof out->origin, "file %s", name_or_file);
    return TRUE;
  }

  g_auto(GStrv) names = stw_hardware_names();
  const char *found = NULL;
  if (!read_shipped(RESOURCE_DIR, names, name_or_file, "profile", read_profile, out, &found,
                    error))
    return FALSE;
  if (found != NULL) {
    g_strlcpy(out->origin, "shipped profile (its sources: docs/hardware.md)", sizeof out->origin);
    return TRUE;
  }
  g_autofree char *list = g_strjoinv(", ", names);
  g_set_error(error, STW_HARDWARE_ERROR, STW_HARDWARE_ERROR_UNKNOWN,
              "unknown hardware profile '%s': expected a profile file (.json) or one of: %s",
              name_or_file, list);
  return FALSE;
}

guint64
stw_hardware_matmul_ns(const StwHardware *hw, StwDtype dtype, double flops, double bytes)
{
  double rate = hw->flops_per_s[dtype] * hw->matmul_efficiency;
  double half_ns = (double)(hw->matmul_half_time_ns ? hw->matmul_half_time_ns
                                                    : STW_HARDWARE_MATMUL_HALF_TIME_NS);
  double f_half = rate * half_ns / 1e9;
  double compute = flops > 0 ? flops / (rate * flops / (flops + f_half)) : 0;
  double memory = bytes / (hw->hbm_bytes_per_s * hw->memory_efficiency);
  return hw->op_overhead_ns + (guint64)llround(fmax(compute, memory) * 1e9);
}

guint64
stw_hardware_memory_op_ns(const StwHardware *hw, double bytes)
{
  return hw->op_overhead_ns +
         (guint64)llround(bytes / (hw->hbm_bytes_per_s * hw->memory_efficiency) * 1e9);
}

/* A curve at BYTES: interpolated in the logarithm of the size, flat beyond its ends. */
static double
curve_at(const StwBandwidthPoint *p, guint n, guint64 bytes)
{
  if (bytes <= p[0].bytes)
    return p[0].bytes_per_s;
  for (guint i = 1; i < n; i++) {
    if (bytes <= p[i].bytes) {
      double f = (log((double)bytes) - log((double)p[i - 1].bytes)) /
                 (log((double)p[i].bytes) - log((double)p[i - 1].bytes));
      return p[i - 1].bytes_per_s + f * (p[i].bytes_per_s - p[i - 1].bytes_per_s);
    }
  }
  return p[n - 1].bytes_per_s;
}

double
stw_hardware_pcie_bandwidth(const StwHardware *hw, guint64 bytes, gboolean pinned)
{
  return pinned ? curve_at(hw->pinned, hw->n_pinned, bytes)
                : curve_at(hw->pageable, hw->n_pageable, bytes);
}

double
stw_hardware_storage_bandwidth(const StwHardware *hw, guint64 bytes, gboolean write)
{
  if (hw->storage_kind[0] == '\0')
    return 0;
  return write ? curve_at(hw->storage_write, hw->n_storage_write, bytes)
               : curve_at(hw->storage_read, hw->n_storage_read, bytes);
}

void
stw_hardware_set_storage_devices(StwHardware *hw, guint32 devices)
{
  double scale = (double)devices / (double)MAX(hw->storage_devices, 1);
  for (guint i = 0; i < hw->n_storage_read; i++)
    hw->storage_read[i].bytes_per_s *= scale;
  for (guint i = 0; i < hw->n_storage_write; i++)
    hw->storage_write[i].bytes_per_s *= scale;
  hw->storage_mixed_bytes_per_s *= scale;
  hw->storage_bytes = (guint64)MIN((double)hw->storage_bytes * scale, (double)STW_JSON_INT_MAX);
  hw->storage_devices = devices;
}

double
stw_hardware_interconnect_bandwidth(const StwHardware *hw, guint64 bytes)
{
  return hw->n_interconnect_by_size > 0
             ? curve_at(hw->interconnect_by_size, hw->n_interconnect_by_size, bytes)
             : hw->interconnect_bytes_per_s;
}

gboolean
stw_hardware_save(const StwHardware *hw, const char *description, const char *file,
                  GError **error)
{
  cJSON *o = stw_hardware_to_json(hw);
  cJSON_AddStringToObject(o, "description", description);
  g_autofree char *text = stw_json_print_lines(o);
  cJSON_Delete(o);
  StwHardware back;
  return stw_hardware_parse(file, text, strlen(text), &back, error) &&
         stw_file_write_atomic(file, text, strlen(text), error);
}

/* test-hardware.c — shipped and user hardware profiles. */
#include "config.h"

#include <glib.h>
#include <glib/gstdio.h>

#include <stowage/hardware.h>
#include <stowage/plan.h>
#include <stowage/probe.h>
#include <stowage/units.h>

#include <string.h>

#include "json.h"
#include "testutil.h"

static void
test_shipped(void)
{
  g_auto(GStrv) names = stw_hardware_names();
  g_assert_cmpuint(g_strv_length(names), ==, 25);
  g_assert_cmpstr(names[0], ==, "A10-24GB-PCIe4");
  g_assert_cmpstr(names[1], ==, "A100-40GB-PCIe4");
  g_assert_cmpstr(names[2], ==, "A100-80GB-PCIe4");
  g_assert_cmpstr(names[22], ==, "TitanRTX-24GB-PCIe3");
  g_assert_cmpstr(names[24], ==, "V100-SXM2-32GB");
  for (char **n = names; *n != NULL; n++) {
    StwHardware hw;
    GError *error = NULL;
    g_assert_true(stw_hardware_lookup(*n, &hw, &error));
    g_assert_no_error(error);
    g_assert_cmpstr(hw.name, ==, *n);
    g_assert_cmpuint(hw.n_pinned, >=, 2);
    g_assert_cmpfloat(hw.flops_per_s[STW_DTYPE_FP16], >, hw.flops_per_s[STW_DTYPE_FP32]);
  }
  StwHardware a100;
  g_assert_true(stw_hardware_lookup("a100-80gb-pcie4", &a100, NULL));
  g_assert_cmpuint(a100.gpu_memory_bytes, ==, 80 * STW_GiB);
  g_assert_cmpfloat(a100.flops_per_s[STW_DTYPE_BF16], ==, 312e12);
  g_assert_cmpuint(a100.pcie_generation, ==, 4);
  StwHardware v100;
  g_assert_true(stw_hardware_lookup("V100-32GB-PCIe3", &v100, NULL));
  g_assert_cmpfloat(v100.flops_per_s[STW_DTYPE_BF16], ==, 0); /* Volta has no bf16 */
  g_assert_cmpuint(v100.node_gpus, ==, 0);                   /* a PCIe card: no node given */
  g_assert_cmpuint(v100.gpus_per_pcie_switch, ==, 1);
  StwHardware titan; /* Turing: fp16 tensor cores at full rate with fp32 accumulation */
  g_assert_true(stw_hardware_lookup("TitanRTX-24GB-PCIe3", &titan, NULL));
  g_assert_cmpfloat(titan.flops_per_s[STW_DTYPE_BF16], ==, 0);
  g_assert_cmpfloat(titan.flops_per_s[STW_DTYPE_FP16], ==, 130.5e12);
  g_assert_cmpuint(titan.gpu_memory_bytes, ==, 24220 * STW_MiB);
  StwHardware t4; /* Turing's cloud card: fp16 with fp32 accumulation, no bf16 */
  g_assert_true(stw_hardware_lookup("T4-16GB-PCIe3", &t4, NULL));
  g_assert_cmpfloat(t4.flops_per_s[STW_DTYPE_BF16], ==, 0);
  g_assert_cmpfloat(t4.flops_per_s[STW_DTYPE_FP16], ==, 65e12);
  g_assert_cmpuint(t4.gpu_memory_bytes, ==, 15360 * STW_MiB);
  g_assert_cmpuint(t4.pcie_generation, ==, 3);
  StwHardware ti; /* the GeForce Turing: half the TITAN's fp16 rate with fp32 accumulation */
  g_assert_true(stw_hardware_lookup("RTX2080Ti-11GB-PCIe3", &ti, NULL));
  g_assert_cmpfloat(ti.flops_per_s[STW_DTYPE_FP16], ==, 53.8e12);
  g_assert_cmpuint(ti.gpu_memory_bytes, ==, 11019 * STW_MiB);
  StwHardware a800; /* an A100 whose NVLink carries 400 GB/s both ways: 160 as NCCL's busbw */
  g_assert_true(stw_hardware_lookup("A800-SXM4-80GB", &a800, NULL));
  g_assert_cmpfloat(a800.flops_per_s[STW_DTYPE_BF16], ==, 312e12);
  g_assert_cmpstr(a800.interconnect_kind, ==, "nvswitch");
  g_assert_cmpfloat(a800.interconnect_bytes_per_s, ==, 160e9);
  StwHardware h800;
  g_assert_true(stw_hardware_lookup("H800-SXM5-80GB", &h800, NULL));
  g_assert_cmpfloat(h800.flops_per_s[STW_DTYPE_BF16], ==, 989e12);
  g_assert_cmpfloat(h800.interconnect_bytes_per_s, ==, 160e9);
  /* the servers: nodes, fabrics, networks */
  StwHardware dgx;
  g_assert_true(stw_hardware_lookup("A100-SXM4-80GB", &dgx, NULL));
  g_assert_cmpuint(dgx.node_gpus, ==, 8);
  g_assert_cmpuint(dgx.gpus_per_pcie_switch, ==, 2);
  g_assert_cmpstr(dgx.interconnect_kind, ==, "nvswitch");
  g_assert_cmpfloat(dgx.interconnect_bytes_per_s, ==, 240e9);
  g_assert_cmpfloat(dgx.host_memory_bytes_per_s, ==, 300e9);
  g_assert_cmpstr(dgx.network_kind, ==, "infiniband");
  g_assert_cmpfloat(dgx.network_bytes_per_s, ==, 200e9);
  StwHardware gh;
  g_assert_true(stw_hardware_lookup("GH200-96GB", &gh, NULL));
  g_assert_cmpfloat(stw_hardware_pcie_bandwidth(&gh, 1u << 28, TRUE), ==, 400e9); /* C2C */
  /* a storage tier: two NVMe drives, their curves both ways; none elsewhere */
  StwHardware ws;
  g_assert_true(stw_hardware_lookup("RTX4090-24GB-PCIe4-2xNVMe", &ws, NULL));
  g_assert_cmpstr(ws.storage_kind, ==, "nvme");
  g_assert_cmpuint(ws.storage_devices, ==, 2);
  g_assert_cmpuint(ws.storage_queue_depth, ==, 32);
  g_assert_cmpfloat(stw_hardware_storage_bandwidth(&ws, 1u << 24, FALSE), ==, 13e9);
  g_assert_cmpfloat(stw_hardware_storage_bandwidth(&ws, 1u << 24, TRUE), ==, 10e9);
  g_assert_cmpfloat(stw_hardware_storage_bandwidth(&a100, 1u << 24, FALSE), ==, 0);
  /* the same drives, four of them (--nvme-devices 4): twice the bandwidth and the capacity */
  StwHardware four = ws;
  stw_hardware_set_storage_devices(&four, 4);
  g_assert_cmpuint(four.storage_devices, ==, 4);
  g_assert_cmpfloat(stw_hardware_storage_bandwidth(&four, 1u << 24, FALSE), ==, 26e9);
  g_assert_cmpfloat(stw_hardware_storage_bandwidth(&four, 1u << 24, TRUE), ==, 20e9);
  g_assert_cmpuint(four.storage_bytes, ==, 2 * ws.storage_bytes);
  /* reads and writes taking turns (probe --nvme measures it): kept, and scaled with the drives */
  g_assert_cmpfloat(ws.storage_mixed_bytes_per_s, ==, 0);
  ws.storage_mixed_bytes_per_s = 5e9;
  StwHardware eight = ws;
  stw_hardware_set_storage_devices(&eight, 8);
  g_assert_cmpfloat(eight.storage_mixed_bytes_per_s, ==, 20e9);
  g_autofree char *text = NULL;
  cJSON *j = stw_hardware_to_json(&ws);
  text = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  StwHardware back;
  GError *error = NULL;
  g_assert_true(stw_hardware_parse("ws.json", text, strlen(text), &back, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(back.n_storage_read, ==, 3);
  g_assert_cmpfloat(back.storage_write[0].bytes_per_s, ==, 3e9);
  g_assert_cmpfloat(back.storage_mixed_bytes_per_s, ==, 5e9);
  /* a storage section that is not one */
  static const struct {
    const char *from, *to, *needle;
  } bad[] = {
    { "\"kind\":\"nvme\"", "\"kind\":\"tape\"", "$.storage.kind: \"tape\" is not one of \"nvme\"" },
    { "\"queue_depth\":32", "\"queue_depth\":0", "$.storage.queue_depth: 0 is out of range" },
    { "\"read\":[", "\"reads\":[", "$.storage: unknown member \"reads\"" },
    { "\"mixed_bytes_per_s\":", "\"mixed_bytes_per_s\":-",
      "$.storage.mixed_bytes_per_s: -5e+09 is out of range" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_assert_nonnull(strstr(text, bad[i].from));
    g_autoptr(GString) b = g_string_new(text);
    g_string_replace(b, bad[i].from, bad[i].to, 1);
    g_assert_false(stw_hardware_parse("ws.json", b->str, b->len, &back, &error));
    stw_assert_error_contains(error, bad[i].needle);
  }
}

/* Storage presets: one drive of a kind each, given to any profile (--storage); a file may be a
 * preset or a profile with a storage section, and anything else is refused by name. */
static void
test_storage_presets(void)
{
  g_auto(GStrv) names = stw_hardware_storage_names();
  g_assert_cmpuint(g_strv_length(names), ==, 3);
  g_assert_cmpstr(names[0], ==, "nvme-gen3");
  g_assert_cmpstr(names[2], ==, "nvme-gen5");
  static const struct {
    const char *name;
    double read, write; /* at 16 MiB */
    guint64 capacity;
  } want[] = { { "nvme-gen3", 3.05e9, 2.39e9, 1000000000000 },
               { "NVMe-Gen4", 6.5e9, 5.0e9, 2000000000000 },
               { "nvme-gen5", 12.8e9, 9.7e9, 2000000000000 } };
  for (gsize i = 0; i < G_N_ELEMENTS(want); i++) {
    StwHardware hw;
    GError *error = NULL;
    g_assert_true(stw_hardware_lookup("A100-80GB-PCIe4", &hw, NULL));
    g_assert_cmpstr(hw.storage_kind, ==, "");
    g_assert_true(stw_hardware_use_storage(&hw, want[i].name, &error));
    g_assert_no_error(error);
    g_assert_cmpstr(hw.name, ==, "A100-80GB-PCIe4"); /* the rest of the profile kept */
    g_assert_cmpuint(hw.gpu_memory_bytes, ==, 80 * STW_GiB);
    g_assert_cmpstr(hw.storage_kind, ==, "nvme");
    g_assert_cmpuint(hw.storage_devices, ==, 1);
    g_assert_cmpuint(hw.storage_bytes, ==, want[i].capacity);
    g_assert_cmpfloat(stw_hardware_storage_bandwidth(&hw, 1u << 24, FALSE), ==, want[i].read);
    g_assert_cmpfloat(stw_hardware_storage_bandwidth(&hw, 1u << 24, TRUE), ==, want[i].write);
    g_assert_nonnull(strstr(hw.origin, "; its storage from the shipped storage preset nvme-gen"));
  }
  /* the 4090 workstation's drives are two of nvme-gen4's */
  StwHardware ws, gen4;
  g_assert_true(stw_hardware_lookup("RTX4090-24GB-PCIe4-2xNVMe", &ws, NULL));
  g_assert_true(stw_hardware_lookup("RTX4090-24GB-PCIe4", &gen4, NULL));
  g_assert_true(stw_hardware_use_storage(&gen4, "nvme-gen4", NULL));
  stw_hardware_set_storage_devices(&gen4, 2);
  g_assert_cmpuint(gen4.storage_bytes, ==, ws.storage_bytes);
  for (guint64 bytes = 1u << 16; bytes <= 1u << 24; bytes <<= 2)
    for (int write = 0; write < 2; write++)
      g_assert_cmpfloat(stw_hardware_storage_bandwidth(&gen4, bytes, write), ==,
                        stw_hardware_storage_bandwidth(&ws, bytes, write));
  /* a profile's file gives its storage; one without, a trace, or no name are refused */
  StwHardware hw;
  GError *error = NULL;
  g_assert_true(stw_hardware_lookup("H100-80GB-PCIe5", &hw, NULL));
  g_autofree char *with = g_test_build_filename(G_TEST_DIST, "..", "hw",
                                                "RTX4090-24GB-PCIe4-2xNVMe.json", NULL);
  g_assert_true(stw_hardware_use_storage(&hw, with, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(hw.storage_devices, ==, 2);
  g_assert_nonnull(strstr(hw.origin, "(RTX4090-24GB-PCIe4-2xNVMe)"));
  g_autofree char *without = stw_test_fixture("hw/my-gpu.json");
  g_assert_false(stw_hardware_use_storage(&hw, without, &error));
  stw_assert_error_contains(error, "$: a hardware profile without a \"storage\" section: "
                                   "expected one with it, or a storage preset");
  g_assert_cmpuint(hw.storage_devices, ==, 2); /* a refusal leaves HW as it was */
  g_autofree char *dir = g_dir_make_tmp("stw-storage-XXXXXX", NULL);
  static const struct {
    const char *text, *needle;
  } bad[] = {
    { "{\"format\":\"stowage-trace\"}", "$.format: expected \"stowage-storage\" (a storage "
      "preset) or \"stowage-hardware\" (a profile with a \"storage\" section), found "
      "\"stowage-trace\"" },
    { "{\"format\":\"stowage-storage\",\"version\":1,\"name\":\"x\"}",
      "$: missing required member \"storage\"" },
    { "{\"format\":\"stowage-storage\",\"version\":1,\"name\":\"x\",\"storage\":{\"kind\":"
      "\"nvme\",\"capacity_bytes\":1,\"queue_depth\":1,\"latency_ns\":0,\"read\":[],"
      "\"write\":[]},\"drives\":2}", "$: unknown member \"drives\"" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autofree char *path = g_build_filename(dir, "s.json", NULL);
    g_assert_true(g_file_set_contents(path, bad[i].text, -1, NULL));
    g_assert_false(stw_hardware_use_storage(&hw, path, &error));
    g_assert_true(g_str_has_prefix(error->message, path));
    stw_assert_error_contains(error, bad[i].needle);
    g_unlink(path);
  }
  g_rmdir(dir);
  g_assert_false(stw_hardware_use_storage(&hw, "tape-lto9", &error));
  g_assert_error(error, STW_HARDWARE_ERROR, STW_HARDWARE_ERROR_UNKNOWN);
  stw_assert_error_contains(error, "unknown storage preset 'tape-lto9': expected a storage "
                                   "preset or hardware profile file (.json) or one of: "
                                   "nvme-gen3, nvme-gen4, nvme-gen5");
}

static void
test_unknown(void)
{
  StwHardware hw;
  GError *error = NULL;
  g_assert_false(stw_hardware_lookup("TPU-v5", &hw, &error));
  g_assert_error(error, STW_HARDWARE_ERROR, STW_HARDWARE_ERROR_UNKNOWN);
  stw_assert_error_contains(error, "unknown hardware profile 'TPU-v5': expected a profile file "
                                   "(.json) or one of: A10-24GB-PCIe4, A100-40GB-PCIe4, "
                                   "A100-80GB-PCIe4, A100-SXM4-40GB");
}

static void
test_files(void)
{
  StwHardware hw;
  GError *error = NULL;
  g_autofree char *good = stw_test_fixture("hw/my-gpu.json");
  g_assert_true(stw_hardware_lookup(good, &hw, &error));
  g_assert_no_error(error);
  g_assert_cmpstr(hw.name, ==, "my-gpu");
  static const struct {
    const char *file;
    const char *needle;
  } bad[] = {
    { "hw/bad-curve-order.json", "$.pcie.pinned[2].bytes: points must be in ascending order" },
    { "hw/bad-missing-gpu.json", "$: missing required member \"gpu\"" },
    { "hw/bad-efficiency.json", "$.gpu.matmul_efficiency: 1.5 is out of range (expected 0.01 to 1)" },
    { "hw/bad-no-compute.json", "$.gpu.flops_per_s: no dtype has any compute: a profile needs the FLOP/s of at least one of fp32, fp16, bf16" },
    { "hw/bad-flops-dtype.json", "$.gpu.flops_per_s: unknown member \"fp64\"" },
    { "hw/bad-empty-name.json", "$.name: expected a name of 1 to 63 bytes without control "
                                "characters" },
    { "hw/bad-link-kind.json", "$.interconnect.kind: \"carrier-pigeon\" is not one of \"pcie\", "
                               "\"nvlink\", \"nvswitch\", \"xgmi\", \"mpi\"" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autofree char *path = stw_test_fixture(bad[i].file);
    g_assert_false(stw_hardware_lookup(path, &hw, &error));
    g_assert_true(g_str_has_prefix(error->message, path));
    stw_assert_error_contains(error, bad[i].needle);
  }
}

/* A node of two sockets: the GPUs behind one and the rate of a ring crossing between them, both
 * or neither, in a node of any number of GPUs or of a given one; written as read. */
static void
test_sockets(void)
{
  StwHardware hw;
  GError *error = NULL;
  g_assert_true(stw_hardware_lookup("A100-80GB-PCIe4", &hw, NULL));
  g_assert_cmpuint(hw.node_gpus, ==, 0); /* any number */
  g_assert_cmpuint(hw.gpus_per_socket, ==, 4);
  g_assert_cmpfloat(hw.cross_socket_bytes_per_s, ==, 12e9);
  g_assert_cmpfloat(hw.host_memory_bytes_per_s, ==, 300e9); /* two EPYC 7543 */
  g_autofree char *dir = g_dir_make_tmp("stw-sockets-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "s.json", NULL);
  g_assert_true(stw_hardware_save(&hw, "two sockets", path, &error));
  g_assert_no_error(error);
  StwHardware back;
  g_assert_true(stw_hardware_load(path, &back, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(back.node_gpus, ==, 0);
  g_assert_cmpuint(back.gpus_per_socket, ==, 4);
  g_assert_cmpfloat(back.cross_socket_bytes_per_s, ==, 12e9);
  g_unlink(path);
  g_rmdir(dir);
  g_autofree char *good = stw_test_fixture("hw/my-gpu.json");
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(good, &text, NULL, NULL));
  static const struct {
    const char *node, *needle; /* NULL: read */
  } cases[] = {
    { "{\"gpus_per_socket\":4,\"cross_socket_bytes_per_s\":12e9}", NULL },
    { "{\"gpus\":8,\"gpus_per_socket\":4,\"cross_socket_bytes_per_s\":12e9}", NULL },
    { "{\"gpus_per_socket\":4}", "$.node.gpus_per_socket: gpus_per_socket and "
      "cross_socket_bytes_per_s go together: the GPUs behind one socket, and the rate of a ring "
      "beyond them" },
    { "{\"cross_socket_bytes_per_s\":12e9}", "$.node.cross_socket_bytes_per_s: gpus_per_socket "
      "and cross_socket_bytes_per_s go together" },
    { "{\"gpus\":2,\"gpus_per_socket\":4,\"cross_socket_bytes_per_s\":12e9}",
      "$.node.gpus_per_socket: 4 is out of range (expected 1 to 2)" },
    { "{\"gpus_per_socket\":4,\"cross_socket_bytes_per_s\":-1}",
      "$.node.cross_socket_bytes_per_s: -1 is out of range" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *with = g_strdup(text);
    char *end = strrchr(with, '}');
    *end = '\0';
    g_autofree char *doc = g_strdup_printf("%s, \"node\": %s}", with, cases[i].node);
    StwHardware h;
    gboolean ok = stw_hardware_parse("s.json", doc, strlen(doc), &h, &error);
    if (cases[i].needle == NULL) {
      g_assert_no_error(error);
      g_assert_true(ok);
      g_assert_cmpuint(h.gpus_per_socket, ==, 4);
      g_assert_cmpfloat(h.cross_socket_bytes_per_s, ==, 12e9);
    } else {
      g_assert_false(ok);
      stw_assert_error_contains(error, cases[i].needle);
    }
  }
}

static void
test_bandwidth_curve(void)
{
  StwHardware hw;
  g_assert_true(stw_hardware_lookup("A100-80GB-PCIe4", &hw, NULL));
  /* at and beyond the points, the points themselves */
  g_assert_cmpfloat(stw_hardware_pcie_bandwidth(&hw, 1, TRUE), ==, hw.pinned[0].bytes_per_s);
  g_assert_cmpfloat(stw_hardware_pcie_bandwidth(&hw, 64 * STW_KiB, TRUE), ==, 10e9);
  g_assert_cmpfloat(stw_hardware_pcie_bandwidth(&hw, STW_GiB, TRUE), ==, 25e9);
  g_assert_cmpfloat(stw_hardware_pcie_bandwidth(&hw, 256 * STW_MiB, FALSE), ==, 12e9);
  /* 256 KiB is halfway between 64 KiB and 1 MiB in log size */
  double mid = stw_hardware_pcie_bandwidth(&hw, 256 * STW_KiB, TRUE);
  g_assert_cmpfloat_with_epsilon(mid, (hw.pinned[0].bytes_per_s + hw.pinned[1].bytes_per_s) / 2,
                                 1.0);
}

/* A measured interconnect carries its bandwidth by chunk size: written, read back, interpolated
 * like PCIe's; the network has no such curve. */
static void
test_interconnect_by_size(void)
{
  StwHardware hw, back;
  g_assert_true(stw_hardware_lookup("A100-SXM4-80GB", &hw, NULL));
  g_assert_cmpfloat(stw_hardware_interconnect_bandwidth(&hw, STW_MiB), ==, 240e9);
  hw.interconnect_by_size[0] = (StwBandwidthPoint){ 64 * STW_KiB, 2e9 };
  hw.interconnect_by_size[1] = (StwBandwidthPoint){ STW_MiB, 4e9 };
  hw.n_interconnect_by_size = 2;
  cJSON *o = stw_hardware_to_json(&hw);
  g_autofree char *text = cJSON_PrintUnformatted(o);
  GError *error = NULL;
  g_assert_true(stw_hardware_parse("m.json", text, strlen(text), &back, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(back.n_interconnect_by_size, ==, 2);
  g_assert_cmpfloat(stw_hardware_interconnect_bandwidth(&back, 1), ==, 2e9);
  g_assert_cmpfloat(stw_hardware_interconnect_bandwidth(&back, STW_GiB), ==, 4e9);
  g_assert_cmpfloat_with_epsilon(stw_hardware_interconnect_bandwidth(&back, 256 * STW_KiB), 3e9,
                                 1.0);
  cJSON *net = cJSON_GetObjectItem(o, "network");
  cJSON_AddItemToObject(net, "by_size", cJSON_Duplicate(cJSON_GetObjectItem(
                                            cJSON_GetObjectItem(o, "interconnect"), "by_size"), 1));
  g_autofree char *bad = cJSON_PrintUnformatted(o);
  g_assert_false(stw_hardware_parse("m.json", bad, strlen(bad), &back, &error));
  stw_assert_error_contains(error, "$.network.by_size: only the interconnect has a curve by size");
  g_clear_error(&error);
  cJSON_Delete(o);
}

/* The emulated device's copy interference: written, read back, and refused where it means
 * nothing (a device with cores of its own) or is out of range. */
static void
test_copy_interference(void)
{
  StwHardware hw, back;
  g_assert_true(stw_hardware_lookup("A100-80GB-PCIe4", &hw, NULL));
  hw.compute_on_host = TRUE;
  hw.copy_interference = 0.5;
  cJSON *o = stw_hardware_to_json(&hw);
  g_autofree char *text = cJSON_PrintUnformatted(o);
  GError *error = NULL;
  g_assert_true(stw_hardware_parse("h.json", text, strlen(text), &back, &error));
  g_assert_no_error(error);
  g_assert_true(back.compute_on_host);
  g_assert_cmpfloat(back.copy_interference, ==, 0.5);
  cJSON *gpu = cJSON_GetObjectItem(o, "gpu");
  cJSON_ReplaceItemInObject(gpu, "copy_interference", cJSON_CreateNumber(4.5));
  g_autofree char *big = cJSON_PrintUnformatted(o);
  g_assert_false(stw_hardware_parse("h.json", big, strlen(big), &back, &error));
  stw_assert_error_contains(error, "h.json: $.gpu.copy_interference: 4.5 is out of range "
                                   "(expected 0 to 4)");
  g_clear_error(&error);
  cJSON_ReplaceItemInObject(gpu, "copy_interference", cJSON_CreateNumber(0.5));
  cJSON_DeleteItemFromObject(gpu, "compute_on_host");
  g_autofree char *alone = cJSON_PrintUnformatted(o);
  g_assert_false(stw_hardware_parse("h.json", alone, strlen(alone), &back, &error));
  stw_assert_error_contains(error, "h.json: $.gpu.copy_interference: needs compute_on_host: "
                                   "only copies on the compute's own cores slow it");
  g_clear_error(&error);
  cJSON_Delete(o);
}

/* The GPU memory a process holds outside its tensors: every shipped GPU profile's 512 MiB, read
 * back as written, refused where it would take the whole GPU; and what it takes of a budget:
 * nothing below the card less it, the rest above, the card the budget's size beyond it. */
static void
test_gpu_process_bytes(void)
{
  StwHardware hw, back;
  g_assert_true(stw_hardware_lookup("RTX4090-24GB-PCIe4", &hw, NULL));
  g_assert_cmpuint(hw.gpu_process_bytes, ==, 536870912);
  cJSON *o = stw_hardware_to_json(&hw);
  g_autofree char *text = cJSON_PrintUnformatted(o);
  GError *error = NULL;
  g_assert_true(stw_hardware_parse("p.json", text, strlen(text), &back, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(back.gpu_process_bytes, ==, 536870912);
  cJSON *gpu = cJSON_GetObjectItem(o, "gpu");
  cJSON_ReplaceItemInObject(gpu, "process_bytes", cJSON_CreateNumber(25757220864.0));
  g_autofree char *all = cJSON_PrintUnformatted(o);
  g_assert_false(stw_hardware_parse("p.json", all, strlen(all), &back, &error));
  stw_assert_error_contains(error, "p.json: $.gpu.process_bytes: expected less than "
                                   "gpu.memory_bytes (25757220864): a process that holds all "
                                   "of its GPU leaves nothing to plan");
  g_clear_error(&error);
  cJSON_Delete(o);

  /* 25,757,220,864 bytes of card, 536,870,912 of them the process's: 25,220,349,952 left */
  StwBudgets b = { .gpu_bytes = G_GUINT64_CONSTANT(23) << 30 };
  g_assert_cmpuint(stw_budgets_process_share(&b, &hw), ==, 0);
  b.gpu_bytes = hw.gpu_memory_bytes;
  g_assert_cmpuint(stw_budgets_process_share(&b, &hw), ==, 536870912);
  b.gpu_bytes = 25500000000;
  b.reserved_bytes = 100000000;
  g_assert_cmpuint(stw_budgets_process_share(&b, &hw), ==, 25500000000 - 25220349952);
  stw_budgets_on_device(&b, &hw);
  g_assert_cmpuint(b.reserved_bytes, ==, 279650048);
  b.reserved_bytes = 300000000; /* a larger reserve stays */
  stw_budgets_on_device(&b, &hw);
  g_assert_cmpuint(b.reserved_bytes, ==, 300000000);
  b.gpu_bytes = G_GUINT64_CONSTANT(100) << 30; /* beyond the device: a card of the budget's size */
  g_assert_cmpuint(stw_budgets_process_share(&b, &hw), ==, 536870912);
  hw.gpu_process_bytes = 0;
  g_assert_cmpuint(stw_budgets_process_share(&b, &hw), ==, 0);
}

/* CPU Adam with bf16 moments and the storage tier's checksum, as probe measures them: written
 * and read back when there, left out (0: not measured) when not, refused out of range. */
static void
test_cpu_measured_rates(void)
{
  static const struct {
    const char *key, *refused;
    gsize field;
    double value;
  } rates[] = {
    { "adam_bf16_elems_per_s", "h.json: $.cpu.adam_bf16_elems_per_s: -1 is out of range",
      G_STRUCT_OFFSET(StwHardware, cpu_adam_bf16_elems_per_s), 2.5e9 },
    { "checksum_bytes_per_s", "h.json: $.cpu.checksum_bytes_per_s: -1 is out of range",
      G_STRUCT_OFFSET(StwHardware, cpu_checksum_bytes_per_s), 32.5e9 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(rates); i++) {
    StwHardware hw, back;
    g_assert_true(stw_hardware_lookup("A100-80GB-PCIe4", &hw, NULL));
    double *rate = G_STRUCT_MEMBER_P(&hw, rates[i].field);
    g_assert_cmpfloat(*rate, ==, 0);
    cJSON *o = stw_hardware_to_json(&hw);
    g_assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "cpu"), rates[i].key));
    cJSON_Delete(o);
    *rate = rates[i].value;
    o = stw_hardware_to_json(&hw);
    g_autofree char *text = cJSON_PrintUnformatted(o);
    GError *error = NULL;
    g_assert_true(stw_hardware_parse("h.json", text, strlen(text), &back, &error));
    g_assert_no_error(error);
    g_assert_cmpfloat(G_STRUCT_MEMBER(double, &back, rates[i].field), ==, rates[i].value);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(o, "cpu"), rates[i].key,
                              cJSON_CreateNumber(-1));
    g_autofree char *bad = cJSON_PrintUnformatted(o);
    g_assert_false(stw_hardware_parse("h.json", bad, strlen(bad), &back, &error));
    stw_assert_error_contains(error, rates[i].refused);
    cJSON_Delete(o);
  }
}

/* Each shipped profile names the host its cpu figures describe and gives its memory's
 * bandwidth; cpu.model is kept through a file, optional, and refused where it is no name. */
static void
test_cpu_model(void)
{
  g_auto(GStrv) names = stw_hardware_names();
  for (char **n = names; *n != NULL; n++) {
    StwHardware hw;
    g_assert_true(stw_hardware_lookup(*n, &hw, NULL));
    g_assert_cmpuint(strlen(hw.cpu_model), >, 0);
    g_assert_cmpfloat(hw.host_memory_bytes_per_s, >=, 50e9);
  }
  StwHardware hw, back;
  g_assert_true(stw_hardware_lookup("A100-SXM4-80GB", &hw, NULL));
  g_assert_cmpstr(hw.cpu_model, ==, "2x AMD EPYC 7742 64-Core (DGX A100)");
  g_assert_true(stw_hardware_lookup("A100-80GB-PCIe4", &hw, NULL));
  g_assert_cmpstr(hw.cpu_model, ==, "2x AMD EPYC 7543 32-Core");
  g_assert_cmpfloat(hw.host_memory_bytes_per_s, ==, 300e9);
  cJSON *o = stw_hardware_to_json(&hw);
  g_assert_cmpstr(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "cpu"), "model")->valuestring, ==,
                  "2x AMD EPYC 7543 32-Core");
  cJSON_DeleteItemFromObject(cJSON_GetObjectItem(o, "cpu"), "model");
  g_autofree char *unnamed = cJSON_PrintUnformatted(o);
  GError *error = NULL;
  g_assert_true(stw_hardware_parse("h.json", unnamed, strlen(unnamed), &back, &error));
  g_assert_no_error(error);
  g_assert_cmpstr(back.cpu_model, ==, "");
  cJSON_AddNumberToObject(cJSON_GetObjectItem(o, "cpu"), "model", 7742);
  g_autofree char *bad = cJSON_PrintUnformatted(o);
  g_assert_false(stw_hardware_parse("h.json", bad, strlen(bad), &back, &error));
  stw_assert_error_contains(error, "h.json: $.cpu.model");
  g_clear_error(&error);
  cJSON_Delete(o);
}

/* probe names the CPU as /proc/cpuinfo does, with its sockets */
static void
test_probe_cpu_model(void)
{
  const char *two = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7742 "
                    "64-Core Processor   \nphysical id\t: 0\n\nprocessor\t: 1\nmodel name\t: AMD "
                    "EPYC 7742 64-Core Processor\nphysical id\t: 1\n";
  g_autofree char *a = stw_probe_cpu_model(two);
  g_assert_cmpstr(a, ==, "2x AMD EPYC 7742 64-Core Processor");
  g_autofree char *b = stw_probe_cpu_model("model name\t: Intel(R)  Xeon(R)\tGold 6248\n");
  g_assert_cmpstr(b, ==, "Intel(R) Xeon(R) Gold 6248");
  g_assert_null(stw_probe_cpu_model("processor\t: 0\nFeatures\t: fp asimd\n")); /* no name */
  g_assert_null(stw_probe_cpu_model(""));
  GString *longer = g_string_new("model name : ");
  for (int i = 0; i < 40; i++)
    g_string_append(longer, "Core ");
  g_autofree char *c = stw_probe_cpu_model(longer->str);
  g_assert_cmpuint(strlen(c), ==, 127);
  g_string_free(longer, TRUE);
}

/* probe --device cuda: the GPU's memory is what CUDA gives a program, and the process's share of
 * it the larger of the base's figure and what the probe held; a figure not below the memory is
 * none; nothing measured, nothing changed. */
static void
test_probe_device_memory(void)
{
  StwHardware hw;
  g_assert_true(stw_hardware_lookup("H100-SXM5-80GB", &hw, NULL));
  g_assert_cmpuint(hw.gpu_process_bytes, ==, 536870912);
  StwHardware before = hw;
  g_autoptr(GString) desc = g_string_new("");
  stw_probe_device_memory(&hw, 0, 0, desc);
  g_assert_true(memcmp(&hw, &before, sizeof hw) == 0);
  g_assert_cmpstr(desc->str, ==, "");
  stw_probe_device_memory(&hw, 85029158912, 522190848, desc); /* below the base's: kept */
  g_assert_cmpuint(hw.gpu_memory_bytes, ==, 85029158912);
  g_assert_cmpuint(hw.gpu_process_bytes, ==, 536870912);
  g_assert_cmpstr(desc->str, ==, "; the GPU's memory as CUDA gives it 79.19 GiB (the base's "
                                 "80.00 GiB), 498.00 MiB of it held by this process outside its "
                                 "arena");
  stw_probe_device_memory(&hw, 85029158912, 627900416, desc); /* above: the probe's */
  g_assert_cmpuint(hw.gpu_process_bytes, ==, 627900416);
  stw_probe_device_memory(&hw, 85029158912, 85029158912, desc); /* the whole card: none */
  g_assert_cmpuint(hw.gpu_process_bytes, ==, 627900416);
  /* a small card under a large card's base figure: the base's figure cannot be this card's */
  StwHardware small = before;
  small.gpu_process_bytes = 900530176;
  stw_probe_device_memory(&small, 805306368, 0, desc);
  g_assert_cmpuint(small.gpu_memory_bytes, ==, 805306368);
  g_assert_cmpuint(small.gpu_process_bytes, ==, 0);
  GError *error = NULL;
  g_autofree char *dir = g_dir_make_tmp("stowage-probe-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "p.json", NULL);
  g_assert_true(stw_hardware_save(&hw, "probed", path, &error));
  StwHardware back;
  g_assert_true(stw_hardware_load(path, &back, &error));
  g_assert_no_error(error);
  g_remove(path);
  g_rmdir(dir);
  g_assert_cmpuint(back.gpu_memory_bytes, ==, 85029158912);
  g_assert_cmpuint(back.gpu_process_bytes, ==, 627900416);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/hardware/shipped", test_shipped);
  g_test_add_func("/hardware/unknown", test_unknown);
  g_test_add_func("/hardware/storage-presets", test_storage_presets);
  g_test_add_func("/hardware/files", test_files);
  g_test_add_func("/hardware/sockets", test_sockets);
  g_test_add_func("/hardware/bandwidth-curve", test_bandwidth_curve);
  g_test_add_func("/hardware/interconnect-by-size", test_interconnect_by_size);
  g_test_add_func("/hardware/copy-interference", test_copy_interference);
  g_test_add_func("/hardware/gpu-process-bytes", test_gpu_process_bytes);
  g_test_add_func("/hardware/cpu-measured-rates", test_cpu_measured_rates);
  g_test_add_func("/hardware/cpu-model", test_cpu_model);
  g_test_add_func("/hardware/probe-cpu-model", test_probe_cpu_model);
  g_test_add_func("/hardware/probe-device-memory", test_probe_device_memory);
  return g_test_run();
}

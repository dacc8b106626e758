/* probe-storage.c — `stowage probe --nvme DIR`: the storage's reads and writes by request size
 * and queue depth, as the runtime would make them (storage.h), into a profile's storage
 * section; see probe.h. */
#include "config.h"

#include <stowage/probe.h>
#include <stowage/storage.h>
#include <stowage/units.h>

#define MIN_SECONDS 1.0                         /* each figure timed for at least this */
#define FILE_MAX (G_GUINT64_CONSTANT(1) << 30)  /* the file the requests run over */
#define FILE_MIN (G_GUINT64_CONSTANT(64) << 20)
#define LARGEST (G_GUINT64_CONSTANT(16) << 20)  /* the largest request */

static const guint64 sizes[STW_PROBE_STORAGE_SIZES] = { 64 << 10, 256 << 10, 1 << 20, 4 << 20,
                                                        16 << 20 };

typedef enum { READS, WRITES, MIXED } Traffic;

/* Bytes per second of requests of SIZE (reads, writes, or with MIXED the two taking turns) at
 * DEPTH in flight over the file's BYTES, sequential and wrapping around, for at least SECONDS
 * (or one pass with ONE_PASS); -1 with ERROR when a request failed. BUF holds DEPTH requests of
 * SIZE (a slot may be reused while an earlier request into it is in flight: its bytes are not
 * looked at). */
static double
measure(StwStorage *s, guint64 bytes, guint64 size, guint32 depth, Traffic traffic, guint8 *buf,
        double seconds, gboolean one_pass, GError **error)
{
  guint64 blocks = bytes / size, next = 0, done = 0, tags[STW_STORAGE_MAX_QUEUE_DEPTH];
  gint64 t0 = g_get_monotonic_time();
  double t = 0;
  for (;;) { /* keep DEPTH in flight until the time or the pass is up, then drain */
    while (stw_storage_in_flight(s) < depth && (one_pass ? next < blocks : t < seconds)) {
      guint slot = (guint)(next % depth);
      gboolean write = traffic == WRITES || (traffic == MIXED && next % 2 == 0);
      if (!stw_storage_submit(s, 0, write, buf + slot * size, size, (next % blocks) * size,
                              next, error))
        return -1;
      next++;
    }
    if (stw_storage_in_flight(s) == 0)
      break;
    gint n = stw_storage_complete(s, 1, tags, G_N_ELEMENTS(tags), error);
    if (n < 0)
      return -1;
    done += (guint64)n;
    t = (double)(g_get_monotonic_time() - t0) / 1e6;
  }
  if (traffic != READS && !stw_storage_flush(s, 0, error)) /* what was written is on the device */
    return -1;
  t = (double)(g_get_monotonic_time() - t0) / 1e6;
  return (double)(done * size) / MAX(t, 1e-9);
}

/* The file's size: a quarter of the free space, at most 1 GiB, in whole largest requests. */
static gboolean
file_bytes(const StwStorageInfo *in, const char *dir, guint64 *out, GError **error)
{
  guint64 b = MIN(in->free_bytes / 4, FILE_MAX) / LARGEST * LARGEST;
  if (b < FILE_MIN) {
    g_autofree char *free_s = stw_size_format(in->free_bytes);
    g_set_error(error, STW_STORAGE_ERROR, STW_STORAGE_ERROR_FULL, "storage directory %s: %s "
                "free, and measuring it takes a file of at least 64 MiB (a quarter of the free "
                "space at most)", dir, free_s);
    return FALSE;
  }
  *out = b;
  return TRUE;
}

/* Seconds each figure is timed for: MIN_SECONDS, or STOWAGE_PROBE_SECONDS (the tests' short
 * probes). */
static double
seconds(void)
{
  const char *env = g_getenv("STOWAGE_PROBE_SECONDS");
  double s = env != NULL ? g_ascii_strtod(env, NULL) : 0;
  return s > 0 && s <= 60 ? s : MIN_SECONDS;
}

gboolean
stw_probe_storage(const char *dir, guint32 depth, StwProbe *p, GString *desc, GError **error)
{
  depth = depth != 0 ? depth : STW_PROBE_STORAGE_DEPTH;
  double t = seconds();
  g_autoptr(StwStorage) s = stw_storage_open(dir, depth, error);
  if (s == NULL)
    return FALSE;
  const StwStorageInfo *in = stw_storage_info(s);
  guint64 bytes;
  if (!file_bytes(in, dir, &bytes, error) ||
      stw_storage_create(s, ".stowage-probe", bytes, error) < 0)
    return FALSE;
  guint8 *buf = stw_storage_buffer(depth * LARGEST);
  if (buf == NULL) {
    g_set_error(error, STW_STORAGE_ERROR, STW_STORAGE_ERROR_IO, "probe: no memory for %u "
                "requests of 16 MiB", depth);
    return FALSE;
  }
  for (guint64 i = 0; i < depth * LARGEST; i++)
    buf[i] = (guint8)(i * 2654435761u >> 13);
  gboolean ok = measure(s, bytes, 4u << 20, depth, WRITES, buf, 0, TRUE, error) >= 0; /* fill */
  for (gsize i = 0; ok && i < G_N_ELEMENTS(sizes); i++) {
    p->storage_sizes[i] = sizes[i];
    double w = measure(s, bytes, sizes[i], depth, WRITES, buf, t, FALSE, error);
    double r = w >= 0 && stw_storage_flush(s, 0, error)
                   ? measure(s, bytes, sizes[i], depth, READS, buf, t, FALSE, error)
                   : -1;
    ok = w > 0 && r > 0;
    p->storage_write_bytes_per_s[i] = w;
    p->storage_read_bytes_per_s[i] = r;
  }
  static const guint32 depths[STW_PROBE_STORAGE_DEPTHS - 1] = { 1, 4, 16 };
  for (gsize i = 0; ok && i < STW_PROBE_STORAGE_DEPTHS; i++) {
    guint32 d = i < G_N_ELEMENTS(depths) ? MIN(depths[i], depth) : depth;
    p->storage_depths[i] = d;
    p->storage_depth_read_bytes_per_s[i] =
        measure(s, bytes, 1u << 20, d, READS, buf, t, FALSE, error);
    ok = p->storage_depth_read_bytes_per_s[i] > 0;
  }
  /* reads and writes taking turns, as a replay's regions and parameters go */
  p->storage_mixed_bytes_per_s = ok ? measure(s, bytes, STW_STORAGE_MIXED_BYTES, depth, MIXED, buf, t, FALSE,
                                              error) : -1;
  ok = ok && p->storage_mixed_bytes_per_s > 0;
  double lat = ok ? measure(s, bytes, 4096, 1, READS, buf, t / 2, FALSE, error) : -1;
  stw_storage_buffer_free(buf);
  if (!ok || lat <= 0)
    return FALSE;
  p->storage = TRUE;
  g_strlcpy(p->storage_engine, in->engine, sizeof p->storage_engine);
  p->storage_direct = in->direct;
  g_strlcpy(p->storage_fallback, in->fallback, sizeof p->storage_fallback);
  g_strlcpy(p->storage_fs, in->fs_type, sizeof p->storage_fs);
  p->storage_file_bytes = bytes;
  p->storage_latency_ns = (guint64)(4096.0 / lat * 1e9);
  StwHardware *hw = &p->profile;
  g_strlcpy(hw->storage_kind, "nvme", sizeof hw->storage_kind);
  hw->storage_devices = 1;
  hw->storage_bytes = in->free_bytes;
  hw->storage_queue_depth = depth;
  hw->storage_latency_ns = p->storage_latency_ns;
  hw->storage_gpudirect = FALSE;
  hw->storage_mixed_bytes_per_s = p->storage_mixed_bytes_per_s;
  for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++) {
    hw->storage_read[i] = (StwBandwidthPoint){ sizes[i], p->storage_read_bytes_per_s[i] };
    hw->storage_write[i] = (StwBandwidthPoint){ sizes[i], p->storage_write_bytes_per_s[i] };
  }
  hw->n_storage_read = hw->n_storage_write = G_N_ELEMENTS(sizes);
  g_autofree char *fb = stw_size_format(bytes);
  g_string_append_printf(desc, "; storage %s (%s, %s, %s), queue depth %u, over a %s file, "
                         "read/write:", dir, in->fs_type, in->engine,
                         in->direct ? "O_DIRECT" : "buffered", depth, fb);
  for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++) {
    g_autofree char *sz = stw_size_format(sizes[i]);
    g_string_append_printf(desc, " %s %.2f/%.2f GB/s;", sz, p->storage_read_bytes_per_s[i] / 1e9,
                           p->storage_write_bytes_per_s[i] / 1e9);
  }
  g_string_append_printf(desc, " mixed 8.00 MiB %.2f GB/s; latency %" G_GUINT64_FORMAT " ns",
                         p->storage_mixed_bytes_per_s / 1e9, p->storage_latency_ns);
  if (in->fallback[0] != '\0')
    g_string_append_printf(desc, " (%s)", in->fallback);
  return TRUE;
}

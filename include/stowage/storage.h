/* storage.h — files on a storage device (the third tier, NVMe): asynchronous reads and writes
 * of whole requests under a directory the user names.
 *
 * Requests run through io_uring (Debian's liburing) where the build has it and the kernel
 * allows it, else (or with STOWAGE_STORAGE_ENGINE=threads) through a pool of threads doing
 * pread/pwrite; files are opened with O_DIRECT
 * where the file system takes it, so that the page cache neither holds nor speeds them. What
 * the directory did not allow is said in the info's fallback, once, for people. Buffers and
 * offsets of O_DIRECT requests are multiples of STW_STORAGE_ALIGN (stw_storage_buffer).
 *
 * Errors: STW_STORAGE_ERROR, the message naming the directory or file, the request (offset,
 * bytes) and the system's reason.
 */
#ifndef STW_STORAGE_H
#define STW_STORAGE_H

#include <glib.h>

#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_RUNTIME
#error "<stowage/storage.h> belongs to the runtime: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

#define STW_STORAGE_ERROR (stw_storage_error_quark())
GQuark stw_storage_error_quark(void);

typedef enum {
  STW_STORAGE_ERROR_DIRECTORY, /* missing, not a directory, or not writable */
  STW_STORAGE_ERROR_FULL,      /* no space left for a file or a write */
  STW_STORAGE_ERROR_IO,        /* a request failed or came back short */
} StwStorageError;

#define STW_STORAGE_ALIGN 4096u          /* O_DIRECT's alignment of buffers, sizes, offsets */
#define STW_STORAGE_MAX_QUEUE_DEPTH 256u
#define STW_STORAGE_MAX_FILES 65536u

typedef struct {
  char engine[16];          /* "io_uring" or "threads" */
  gboolean direct;          /* opened with O_DIRECT: the page cache bypassed */
  char fallback[512];       /* what the directory or kernel did not allow, and what is done
                             * instead; empty when io_uring and O_DIRECT both work */
  char fs_type[32];         /* the file system's kind: "ext4", "xfs", "tmpfs", ... */
  guint32 queue_depth;      /* requests in flight at most */
  guint64 free_bytes;       /* free space on the file system when opened */
} StwStorageInfo;

typedef struct StwStorage StwStorage;

/* The checksum the storage tier keeps of each region it writes and checks when it reads the
 * region back (a file altered between iterations is found): 64 bits over N bytes at DATA, eight
 * lanes of XXH3's accumulation (a core sums about 19 GB/s with AVX-512, 7 on the x86-64
 * baseline); from STW_STORAGE_CHECKSUM_PARALLEL bytes on, split over up to 8 threads of the
 * OpenMP team, bitwise the same sum on any team. */
#define STW_STORAGE_CHECKSUM_PARALLEL ((gsize)1 << 20)
guint64 stw_storage_checksum(const void *data, gsize n);

/* Storage under DIR (which must exist and be a writable directory) with at most QUEUE_DEPTH
 * requests in flight (1 .. STW_STORAGE_MAX_QUEUE_DEPTH). NULL with ERROR naming DIR and why. */
StwStorage *stw_storage_open(const char *dir, guint32 queue_depth, GError **error);
/* Waits for the requests in flight, closes and removes the files it made. */
void stw_storage_close(StwStorage *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(StwStorage, stw_storage_close)
const StwStorageInfo *stw_storage_info(const StwStorage *s);

/* A new file NAME (no '/') of BYTES under the directory, its blocks allocated (fallocate, where
 * the file system has it: a full disk is said now, not at a later write); its index, or -1 with
 * ERROR (FULL: no room, naming the bytes asked for and free). */
gint stw_storage_create(StwStorage *s, const char *name, guint64 bytes, GError **error);

/* Queues a read (WRITE false) or write of BYTES at OFFSET of file FILE into or from BUF, TAG
 * coming back at its completion. With O_DIRECT, BUF, BYTES and OFFSET are multiples of
 * STW_STORAGE_ALIGN. Waits for a completion first when QUEUE_DEPTH requests are in flight (it
 * is kept for stw_storage_complete). FALSE with ERROR when it cannot be queued. */
gboolean stw_storage_submit(StwStorage *s, guint file, gboolean write, gpointer buf, gsize bytes,
                            guint64 offset, guint64 tag, GError **error);
/* Collects completed requests, waiting until at least MIN have completed (0: those done by now;
 * at most the requests in flight): their tags into TAGS (MAX at most), their count returned;
 * -1 with ERROR (IO) at the first that failed or came back short, naming its file, offset,
 * bytes and the reason. */
gint stw_storage_complete(StwStorage *s, guint min, guint64 *tags, guint max, GError **error);
/* Requests queued and not yet collected. */
guint stw_storage_in_flight(const StwStorage *s);
/* Writes file FILE's data to the device (fdatasync) and, where it is not opened with O_DIRECT,
 * drops its pages from the page cache, so that the next read of it goes to the device. FALSE
 * with ERROR (IO) when the device refuses. */
gboolean stw_storage_flush(StwStorage *s, guint file, GError **error);

/* BYTES of memory aligned to STW_STORAGE_ALIGN for requests, zeroed; free with
 * stw_storage_buffer_free. NULL when there is no memory. */
gpointer stw_storage_buffer(gsize bytes);
void stw_storage_buffer_free(gpointer buf);

STW_END_DECLS

#endif

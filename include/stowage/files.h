/* files.h — whole files read and written safely: the one place stowage touches the file system
 * for its formats.
 *
 * Reading refuses what is not a regular file (a FIFO, a device such as /dev/zero) and files
 * above a stated size before reading a byte, so that no reader allocates without bound. Writing
 * is atomic: a temporary in the same directory, fsync, rename; a failure leaves any existing file
 * untouched and no temporary behind. And where stowage's own loadable modules are.
 */
#ifndef STW_FILES_H
#define STW_FILES_H

#include <glib.h>

#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_CORE
#error "<stowage/files.h> belongs to the core: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

#define STW_FILES_ERROR (stw_files_error_quark())
GQuark stw_files_error_quark(void);

typedef enum {
  STW_FILES_ERROR_IO,    /* the file cannot be opened, read or written */
  STW_FILES_ERROR_LIMIT, /* not a regular file, or larger than the limit for its kind */
} StwFilesError;

/* Reads FILE, a regular file of at most MAX_BYTES bytes, into *TEXT_OUT (NUL-terminated, the
 * caller frees it with g_free) and *LEN_OUT. Errors name FILE and say what was expected; every
 * function here fails in STW_FILES_ERROR: IO (cannot open, read or write), LIMIT (not a
 * regular file, or too large). */
gboolean stw_file_read(const char *file, gsize max_bytes, char **text_out, gsize *len_out,
                       GError **error);

/* Writes TEXT to FILE atomically (see above). "-" writes to standard output. */
gboolean stw_file_write_atomic(const char *file, const char *text, gsize len, GError **error);

/* Copies the file SRC to FILE atomically (see above), a block at a time: memory does not grow
 * with SRC's size. Errors name SRC when it cannot be read, FILE when it cannot be written. */
gboolean stw_file_copy_atomic(const char *src, const char *file, GError **error);

/* The path of one of stowage's loadable modules (INSTALLED's file name, e.g.
 * libstowage-cupti.so), for dlopen: $ENV_VAR when it is set and not empty; else the one beside
 * the running libstowage, in its folder's stowage/ (where an install puts it: pkglibdir), or
 * beside a program that links the library statically, in ../lib/stowage/ (an installed tree
 * moved elsewhere; the GPU bundle), when it exists; else BUILT (the build tree's) when it
 * exists; else INSTALLED. The running code's own module comes before a build tree's that may
 * be of another version. Free with g_free. */
char *stw_module_path(const char *env_var, const char *built, const char *installed);

STW_END_DECLS

#endif

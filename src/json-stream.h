/* json-stream.h — large JSON documents read element by element, in bounded memory.
 *
 * The files PyTorch writes (a Kineto trace's "traceEvents", an execution trace's "nodes", a
 * memory timeline's rows) run to gigabytes, while each element is small. The stream reads the
 * file through a fixed buffer (gzip detected by its magic bytes and decompressed on the way),
 * hands each element of the streamed arrays to a callback as its own text, and every other
 * top-level member whole. Memory is the buffer plus the largest element, which is refused above
 * a stated bound; nothing else of the document is kept.
 *
 * Internal to the library: not installed.
 */
#ifndef STW_JSON_STREAM_H
#define STW_JSON_STREAM_H

#include <gio/gio.h>
#include <glib.h>

G_BEGIN_DECLS

/* Called for each element of a streamed array: KEY is the top-level member holding it (NULL
 * when the document is itself an array), INDEX its position, TEXT its JSON (LEN bytes, NUL at
 * TEXT[LEN], valid during the call). Returning FALSE with ERROR set stops the reading. */
typedef gboolean (*StwJsonElementFunc)(const char *key, guint64 index, const char *text, gsize len,
                                       gpointer data, GError **error);

typedef struct {
  const char *const *streamed; /* top-level members whose arrays are streamed (NULL-terminated) */
  gsize max_element;           /* bytes of one element or other member; more is refused */
  StwJsonElementFunc on_element;
  StwJsonElementFunc on_member; /* other top-level members (INDEX 0); may be NULL: skipped */
  gpointer data;
} StwJsonStreamSpec;

/* Reads FILE (a regular file, gzip or plain) by SPEC. Errors (STW_JSON_ERROR_SYNTAX, or
 * STW_FILES_ERROR for the file itself) name the file and where the document broke off. */
gboolean stw_json_stream_read(const char *file, const StwJsonStreamSpec *spec, GError **error);

/* FILE (a regular file) as a stream of its content, decompressed when it is gzip; NULL with
 * ERROR (STW_FILES_ERROR) naming the file. */
GInputStream *stw_json_stream_open(const char *file, GError **error);

/* Whether FILE starts with gzip's magic bytes. */
gboolean stw_json_stream_is_gzip(const char *file);

G_END_DECLS

#endif

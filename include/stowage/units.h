/* units.h — byte sizes and durations, parsed from and printed for people.
 *
 * Sizes: a non-negative decimal number, optionally with a fraction, optionally followed
 * (spaces allowed) by a unit. Binary units are powers of 1024 and carry an "i": KiB, MiB,
 * GiB, TiB, PiB. Decimal units are powers of 1000: kB (or KB), MB, GB, TB, PB. "B" or no
 * unit means bytes. Units are matched without regard to case, so "16gib" is 16 GiB and
 * "16gb" is 16 GB = 16e9 bytes: the "i" alone decides binary vs. decimal. A fraction that
 * does not come to a whole number of bytes is truncated toward zero ("0.3KiB" = 307 B).
 * Bare "K", "M", "G" are rejected because they are ambiguous.
 */
#ifndef STW_UNITS_H
#define STW_UNITS_H

#include <glib.h>

#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_CORE
#error "<stowage/units.h> belongs to the core: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

#define STW_UNITS_ERROR (stw_units_error_quark())
GQuark stw_units_error_quark(void);

typedef enum {
  STW_UNITS_ERROR_SYNTAX,   /* not a number, or an unknown unit */
  STW_UNITS_ERROR_RANGE,    /* negative, or beyond 2^53 bytes (8 PiB, what stowage's files hold) */
} StwUnitsError;

#define STW_KiB ((guint64)1024)
#define STW_MiB (STW_KiB * 1024)
#define STW_GiB (STW_MiB * 1024)
#define STW_TiB (STW_GiB * 1024)

/* Parses TEXT into *BYTES_OUT. Returns FALSE and sets ERROR on bad input (STW_UNITS_ERROR:
 * SYNTAX, RANGE); the message quotes the text and lists the accepted units. */
gboolean stw_size_parse(const char *text, guint64 *bytes_out, GError **error);

/* "512 B", "1.50 KiB", "16.00 GiB": binary units, two decimals. Free with g_free. */
char *stw_size_format(guint64 bytes);

/* "850 ns", "12.3 us", "4.56 ms", "1.234 s". Free with g_free. */
char *stw_duration_format(guint64 ns);

/* Parses "8GiB..80GiB:8GiB" (inclusive, ascending) or "8GiB,16GiB,24GiB" into sizes. At most
 * 1000 points, none zero; an empty, inverted or zero-step range is an error saying so
 * (STW_UNITS_ERROR). *OUT is a new array of guint64, the caller's. */
gboolean stw_size_list_parse(const char *text, GArray **out, GError **error);

/* Adds TERM to *SUM where the total stays at most LIMIT; else FALSE, *SUM left as it was. The
 * one way stowage adds up what it reads (bytes, nanoseconds) from a file it does not trust: no
 * such sum wraps, and the reader names the record that passed the limit. */
static inline gboolean
stw_sum_within(guint64 *sum, guint64 term, guint64 limit)
{
  if (term > limit || *sum > limit - term)
    return FALSE;
  *sum += term;
  return TRUE;
}

/* The units the parser accepts, for usage messages. */
extern const char stw_size_units_help[];

STW_END_DECLS

#endif

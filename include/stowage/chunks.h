/* chunks.h — packing model tensors into chunks.
 *
 * One layout serves the four chunk lists (param, master, momentum, variance): chunk i of every
 * list holds the same tensors at the same element offsets; only the bytes per element differ
 * (stw_chunk_list_elem_bytes). Tensors are packed greedily in order of first use by the trace's
 * ops (tensors no op reads come last, in id order), so that the chunks an op needs are few and
 * neighbouring ops share them. A tensor is never split: it goes whole into the current chunk
 * if it fits, else it opens the next one. A tensor larger than the chunk size is refused, unless
 * oversized tensors are allowed, in which case it gets a chunk of its own, as large as itself.
 * Frozen tensors (trace.h) fill chunks of their own, beside the others in the same order of first
 * use, so that no optimizer state is kept for them.
 */
#ifndef STW_CHUNKS_H
#define STW_CHUNKS_H

#include <glib.h>

#include <stowage/trace.h>

#include <stowage/api.h>

#if STW_BUILDING_LAYER < STW_LAYER_PLANNER
#error "<stowage/chunks.h> belongs to the planner: a layer below it may not include it"
#endif

STW_BEGIN_DECLS

#define STW_CHUNKS_ERROR (stw_chunks_error_quark())
GQuark stw_chunks_error_quark(void);

typedef enum {
  STW_CHUNKS_ERROR_TOO_SMALL, /* a tensor is larger than the chunk size */
  STW_CHUNKS_ERROR_INVALID,   /* a layout that does not place every tensor exactly once */
  STW_CHUNKS_ERROR_TOO_MANY,  /* shards of more chunks than a layout holds */
} StwChunksError;

typedef struct {
  guint32 tensor;   /* trace tensor id */
  guint64 offset;   /* elements from the start of the chunk */
} StwPlacement;

typedef struct {
  guint64 capacity_elems;  /* the chunk size, or a lone oversized tensor's numel */
  guint64 used_elems;      /* sum of its tensors' numel; 0 in a layout read from a plan file,
                            * which does not say (stw_chunking_recount fills it in) */
  guint32 owner;           /* rank owning it: chunk index mod the world size */
  guint32 first;           /* its placements: placements[first .. first + count) */
  guint32 count;
  gboolean frozen;         /* holds frozen tensors only: the param list alone, never dirty; its
                            * master, momentum and variance chunks are empty (0 bytes) */
} StwChunk;

typedef struct {
  guint64 size_elems;      /* the chunk size */
  StwDtype dtype;          /* compute dtype of the param list */
  GArray *chunks;          /* StwChunk */
  GArray *placements;      /* StwPlacement, chunk by chunk */
  guint32 *chunk_of;       /* per tensor id: its chunk */
  guint64 *offset_of;      /* per tensor id: its offset in that chunk, elements */
  guint32 n_tensors;
  guint32 world;           /* data-parallel ranks sharing the layout (1: one GPU) */
  guint32 nodes;           /* the nodes they are spread over, evenly (1: one machine) */
  gboolean amsgrad;        /* the variance list holds two values per element (the
                            * variance, then its largest so far: AMSGrad); the trace's */
  StwDtype state_dtype;    /* the moments' dtype (fp32 or bf16): the trace's, or the planner's
                            * choice (--optimizer-state) */
  gboolean shards;         /* several ranks, each group one chunk of ZeRO-3's or Gemini's split
                            * evenly across them: a tensor may run on from its chunk into the
                            * next ones of its group (stw_chunking_pack_shards), where
                            * PatrickStar's groups are of whole chunks */
} StwChunking;

/* Packs TRACE's tensors into chunks of SIZE_ELEMS elements. With ALLOW_OVERSIZED false, a
 * tensor larger than the chunk size is an error (STW_CHUNKS_ERROR_TOO_SMALL) naming it and the
 * smallest size that fits (NULL returned). The caller frees the layout with stw_chunking_free. */
StwChunking *stw_chunking_pack(const StwTrace *trace, guint64 size_elems,
                               gboolean allow_oversized, GError **error);
/* Packs TRACE's tensors as ZeRO-3 and Gemini share them among WORLD (>1) ranks: into chunks of
 * GROUP_ELEMS elements (a tensor larger than that, with ALLOW_OVERSIZED, one of its own; else
 * an error as stw_chunking_pack's), each split into WORLD equal
 * shards, the layout's chunks, rank r owning shard r (stw_chunking_set_world's owners). A
 * tensor keeps its place in its group and may span shards; rank 0 holds a 1/WORLD slice of every
 * group. The chunk size is a shard's, ceil(GROUP_ELEMS / WORLD). */
StwChunking *stw_chunking_pack_shards(const StwTrace *trace, guint64 group_elems, guint32 world,
                                      gboolean allow_oversized, GError **error);
void stw_chunking_free(StwChunking *c);
/* A copy of C that owns its arrays: the caller frees it with stw_chunking_free. */
StwChunking *stw_chunking_copy(const StwChunking *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(StwChunking, stw_chunking_free)

static inline guint32
stw_chunking_count(const StwChunking *c)
{
  return c->chunks->len;
}
static inline const StwChunk *
stw_chunking_chunk(const StwChunking *c, guint32 i)
{
  return &g_array_index(c->chunks, StwChunk, i);
}

/* Shares the layout among WORLD data-parallel ranks: chunks form groups of WORLD consecutive
 * chunks (the last group padded with empty chunks), and rank r owns chunk r of each group, with
 * its optimizer state and authoritative parameters. Packing gives a world of 1. */
void stw_chunking_set_world(StwChunking *c, guint32 world);

/* On one rank, in a layout with frozen chunks: the last chunk of each kind (trained, frozen)
 * sized to the tensors it holds, where they leave it part empty. A model with a frozen base
 * trains a few adapters (LoRA: a thousandth of the parameters), which would otherwise take a
 * whole chunk in each of four lists, sized for the base's largest tensor. A layout without frozen
 * chunks keeps every chunk the chunk size (PatrickStar's layout). */
void stw_chunking_trim_tails(StwChunking *c);
/* The ranks of one node: world / nodes. */
static inline guint32
stw_chunking_ranks_per_node(const StwChunking *c)
{
  return MAX(c->world / MAX(c->nodes, 1), 1);
}

/* Groups of the layout: none for one rank, else ceil(chunks / world). */
static inline guint32
stw_chunking_groups(const StwChunking *c)
{
  return c->world > 1 ? (stw_chunking_count(c) + c->world - 1) / c->world : 0;
}

/* The chunk size as it was asked for (--chunk-size): a whole chunk's, in a layout of shards the
 * N shards of a group together; else the layout's chunk size. */
static inline guint64
stw_chunking_whole_size(const StwChunking *c)
{
  return c->shards ? c->size_elems * c->world : c->size_elems;
}

/* Whether chunk I is owned by rank 0, the rank a plan describes (every chunk with one rank). */
static inline gboolean
stw_chunking_owned(const StwChunking *c, guint32 i)
{
  return stw_chunking_chunk(c, i)->owner == 0;
}

/* The chunk in which rank 0 holds (and steps) its part of tensor ID, or G_MAXUINT32 where it
 * holds none: the tensor's chunk where rank 0 owns it; in a layout of shards, rank 0's shard of
 * its group where the tensor begins there. */
guint32 stw_chunking_owned_chunk(const StwChunking *c, guint32 id);
/* The elements of tensor ID (of NUMEL) that rank 0 owns, their chunk in *CHUNK
 * (stw_chunking_owned_chunk): all of it, or in a layout of shards its part in rank 0's shard. */
guint64 stw_chunking_owned_part(const StwChunking *c, guint32 id, guint64 numel,
                                guint32 *chunk);

/* Bytes per element of LIST in layout C: stw_chunk_list_elem_bytes's, twice it in the variance
 * list with AMSGrad. */
guint64 stw_chunking_elem_bytes(const StwChunking *c, StwChunkList list);

/* Bytes of chunk I in LIST: none in the optimizer's lists of a frozen chunk. */
guint64 stw_chunk_bytes(const StwChunking *c, guint32 i, StwChunkList list);
/* Bytes of all chunks of LIST, and the part of them no tensor uses. */
guint64 stw_chunking_list_bytes(const StwChunking *c, StwChunkList list);
guint64 stw_chunking_wasted_bytes(const StwChunking *c, StwChunkList list);

/* Checks a layout against TRACE (STW_CHUNKS_ERROR_INVALID): every tensor exactly once, inside
 * its chunk, listed by offset without overlaps,
 * capacities at least the chunk size, a chunk frozen exactly when it holds frozen tensors only,
 * AMSGrad's state exactly when the trace's optimizer keeps it.
 * FILE names the layout's source in messages. */
gboolean stw_chunking_validate(const StwChunking *c, const StwTrace *trace, const char *file,
                               GError **error);

/* Recomputes every chunk's used elements from TRACE (after stw_chunking_validate). */
/* (A chunk's frozen flag is the layout's own, written in plans, and checked against the trace by
 * stw_chunking_validate.) */
void stw_chunking_recount(StwChunking *c, const StwTrace *trace);

STW_END_DECLS

#endif

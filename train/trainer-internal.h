/* trainer-internal.h — the trainer's state, shared by its step (trainer.c) and its checkpoints
 * (checkpoint.c). Internal to the library: not installed.
 *
 * Shapes are in the model's letters: B sequences of T tokens (batch, context), C the width, NH
 * heads, V the vocabulary, L the layers; floats, row-major, last index fastest. */
#ifndef STW_TRAINER_INTERNAL_H
#define STW_TRAINER_INTERNAL_H

#include <glib.h>

#include <stowage/trainer.h>

G_BEGIN_DECLS

/* The forward activations of one block, kept for its backward (or recomputed with
 * checkpointing); the device memory of the runtime's activations. */
typedef struct {
  float *x;                  /* (B, T, C) the block's input, the residual stream */
  float *ln1;                /* (B, T, C) */
  float *ln1_mean, *ln1_rstd; /* (B, T) */
  float *qkv;                /* (B, T, 3*C) */
  float *preatt, *att;       /* (B, NH, T, T) naive attention's scores and weights */
  float *lse;                /* (B, NH, T) flash attention's log-sum-exp, in place of both */
  float *atty;               /* (B, T, C) attention's output, heads concatenated */
  float *res2;               /* (B, T, C) the stream after attention */
  float *ln2;                /* (B, T, C) */
  float *ln2_mean, *ln2_rstd; /* (B, T) */
  float *fch, *fch_gelu;     /* (B, T, 4*C) the MLP's hidden layer before and after GELU */
  float *res3;               /* (B, T, C) the block's output */
} Block;

struct StwTrainer {
  StwTrainerConfig c;
  StwTrace *model;            /* tensors and model section */
  StwModelGraph *graph;
  StwRuntime *rt;
  const guint8 *text;         /* the training text, LEN bytes; POS the next batch's start */
  gsize len, pos;
  StwCompute *cx;             /* where the math runs */
  StwComm *comm;              /* the data-parallel ranks, for host memory; NULL: one */
  guint32 rank, world;
  int *inputs, *targets;      /* (B, T) token ids, on the host */
  int *d_inputs, *d_targets;  /* (B, T) where the compute table reads them */
  gboolean fixed_batch;
  guint64 step;
  StwDtype resumed_state; /* the moments' dtype in the checkpoint last loaded */
  float **grad_sink;
  guint8 *grad_written;       /* (n_tensors) this iteration */
  /* activations */
  Block *blocks;              /* (L) */
  guint8 *choice;             /* (L) StwBlockChoice: what the replayed plan does with each
                               * block's activations; NULL: keeps them all */
  float *lnf;                 /* (B, T, C) the final layer norm's output */
  float *lnf_mean, *lnf_rstd; /* (B, T) */
  float *logits, *probs;      /* (B, T, V) */
  float *losses;              /* (B, T) each token's cross-entropy */
  float *dx;                  /* (B, T, C) gradient of the residual stream flowing back */
  float *dlogits;             /* (B, T, V) */
  float *dlnf;                /* (B, T, C) */
  float *dfch_gelu, *dfch;    /* (B, T, 4*C) */
  float *dln2, *datty;        /* (B, T, C) */
  float *dqkv;                /* (B, T, 3*C) */
  float *dln1;                /* (B, T, C) */
  float loss;                 /* the batch's mean loss */
};

G_END_DECLS

#endif

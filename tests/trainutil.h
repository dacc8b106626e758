/* trainutil.h — what the trainer's and the runtime's tests share: a text to train on, a small
 * configuration, a trainer made or the test fails, and steps taken. */
#ifndef STW_TRAINUTIL_H
#define STW_TRAINUTIL_H

#include <glib.h>

#include <stowage/backend.h>
#include <stowage/trainer.h>

/* A backend's sync that counts its calls (the ops a runtime waited for). */
static guint syncs;

static inline void
count_sync(StwBackend *b)
{
  (void)b;
  syncs++;
}

/* Steps the tests take where the count does not matter beyond a few. */
#define STEPS 4

/* Deterministic text: the project's own words, repeated. */
static inline GString *
text(void)
{
  GString *s = g_string_new(NULL);
  while (s->len < 20000)
    g_string_append(s, "Stowage plans where the model data of a large-model training job lives, "
                       "GPU or CPU, at every operator of an iteration. ");
  return s;
}

static inline void
small_config(StwTrainerConfig *c)
{
  stw_trainer_config_init(c);
  c->layers = 2;
  c->width = 32;
  c->heads = 4;
  c->context = 16;
  c->batch = 2;
}

static inline StwTrainer *
trainer(const StwTrainerConfig *c, const GString *data, const StwRuntimeOptions *ro,
        StwBackend *be)
{
  GError *error = NULL;
  StwTrainer *t = stw_trainer_new(c, (const guint8 *)data->str, data->len, ro, be, &error);
  g_assert_no_error(error);
  return t;
}

static inline void
train(StwTrainer *t, float *losses, guint steps)
{
  for (guint i = 0; i < steps; i++) {
    GError *error = NULL;
    gboolean stepped = stw_trainer_step(t, &losses[i], &error);
    g_assert_no_error(error); /* says why, where it failed */
    g_assert_true(stepped);
  }
}


#endif

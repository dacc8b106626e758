/* hello.c — a program outside the project, built against the installed libstowage with nothing
 * but `pkg-config --cflags --libs stowage` (tests/install/run.sh, from make installcheck). It
 * synthesizes a small model's trace, plans it for a tight budget, checks and simulates the plan
 * through the public interface only, and prints what it found. */
#include <stdio.h>

#include <stowage/stowage.h>

int
main(void)
{
  GError *error = NULL;
  StwModelConfig cfg;
  StwHardware hw;
  if (!stw_zoo_lookup("gpt2", &cfg, &error) ||
      !stw_hardware_lookup(STW_HARDWARE_DEFAULT, &hw, &error)) {
    fprintf(stderr, "hello: %s\n", error->message);
    return 1;
  }
  StwSynthOptions so = { .batch = 2, .seq = 256, .dtype = STW_DTYPE_BF16 };
  g_autoptr(StwTrace) t = stw_synth_trace(&cfg, &so, &hw, &error);
  StwPlannerOptions o;
  stw_planner_options_init(&o, &hw);
  o.budgets.gpu_bytes = 2 * STW_GiB;
  g_autoptr(StwPlan) p = t != NULL ? stw_planner_plan(t, NULL, &o, &error) : NULL;
  StwCheckReport rep;
  if (p == NULL || !stw_plan_check(p, t, "hello-plan", &rep, NULL, &error)) {
    fprintf(stderr, "hello: %s\n", error->message);
    return 1;
  }
  g_autofree char *budget = stw_size_format(o.budgets.gpu_bytes);
  g_autofree char *h2d = stw_size_format(rep.pred.h2d_bytes);
  printf("gpt2: %" G_GUINT64_FORMAT " parameters, %u ops; a plan for %s moves %s H2D per "
         "iteration and is sound\n", stw_model_param_count(&cfg), t->ops->len, budget, h2d);
  return 0;
}

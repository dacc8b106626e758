/* cmd-plan.c — `stowage plan`: a trace and a budget in, a sound plan out. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <stowage/cost.h>
#include <stowage/hardware.h>
#include <stowage/planner.h>
#include <stowage/units.h>

#include "cli.h"

static void
progress(guint done, guint total, gpointer user_data)
{
  (void)user_data;
  if (!isatty(STDERR_FILENO))
    return;
  fprintf(stderr, "\rplanning: chunk size %u of %u", done, total);
  if (done == total)
    fprintf(stderr, "\r%*s\r", 40, "");
  fflush(stderr);
}

/* The four lists: the bytes a parameter costs in each and the parameters each holds (the param
 * list every one, the others the trained ones), and the chunk capacity no tensor uses. */
/* "N of M blocks WHAT (h0 .. h5)" for the BLOCKS of T (guint32, ascending), the first list
 * printed (*FIRST), else ", N WHAT (...)"; nothing when none. Blocks that are not a range are
 * named, the first four. */
static void
print_blocks(const StwTrace *t, const GArray *blocks, const char *what, gboolean *first)
{
  if (blocks->len == 0)
    return;
  const guint32 *b = (const guint32 *)blocks->data;
  gboolean range = b[blocks->len - 1] - b[0] + 1 == blocks->len;
  if (*first)
    printf("%u of %u blocks", blocks->len, t->blocks->len);
  else
    printf(", %u", blocks->len);
  *first = FALSE;
  printf(" %s (%s", what, g_array_index(t->blocks, StwBlock, b[0]).name);
  if (range && blocks->len > 1)
    printf(" .. %s", g_array_index(t->blocks, StwBlock, b[blocks->len - 1]).name);
  for (guint i = 1; !range && i < MIN(blocks->len, 4); i++)
    printf(", %s", g_array_index(t->blocks, StwBlock, b[i]).name);
  printf("%s)", !range && blocks->len > 4 ? ", ..." : "");
}

static void
print_lists(const StwChunking *c, const StwTrace *t)
{
  guint64 all = 0, trained = 0;
  for (guint i = 0; i < t->tensors->len; i++) {
    const StwTensor *x = stw_trace_tensor(t, i);
    all += x->numel;
    trained += x->frozen ? 0 : x->numel;
  }
  g_autofree char *n_all = stw_cli_group_digits(all), *n_trained = stw_cli_group_digits(trained);
  guint64 e = stw_chunking_elem_bytes(c, STW_LIST_PARAM);
  guint64 ms = stw_chunking_elem_bytes(c, STW_LIST_MASTER);
  guint64 mm = stw_chunking_elem_bytes(c, STW_LIST_MOMENTUM);
  guint64 mv = stw_chunking_elem_bytes(c, STW_LIST_VARIANCE); /* 8 with AMSGrad */
  g_autofree char *frozen = trained < all ? g_strdup_printf(", %" G_GUINT64_FORMAT " B a frozen "
                                                            "one", e)
                                          : g_strdup("");
  printf("  lists        param %" G_GUINT64_FORMAT " B x %s; master %" G_GUINT64_FORMAT
         " B, momentum %" G_GUINT64_FORMAT " B, variance %" G_GUINT64_FORMAT " B x %s%s: %"
         G_GUINT64_FORMAT " B a%s parameter%s\n", e, n_all, ms, mm, mv, n_trained,
         trained < all ? " (the trained)" : "", e + ms + mm + mv, trained < all ? " trained" : "",
         frozen);
  g_autofree char *waste = stw_size_format(stw_chunking_wasted_bytes(c, STW_LIST_PARAM));
  guint64 wall = 0;
  for (int l = 0; l < STW_N_LISTS; l++)
    wall += stw_chunking_wasted_bytes(c, (StwChunkList)l);
  g_autofree char *waste_all = stw_size_format(wall);
  printf("  waste        %s in the param list, %s in all four\n", waste, waste_all);
}

/* PLAN made for the trace RECORDED with O, its schedule over T (stw_plan_trace) */
static void
print_plan(const char *file, const StwPlan *p, const StwPlannerOptions *o,
           const StwTrace *recorded, const StwTrace *t)
{
  const StwChunking *c = p->chunking;
  const StwPlanPredictions *q = &p->pred;
  guint32 n = stw_chunking_count(c);
  g_autofree char *size = stw_cli_group_digits(c->size_elems);
  g_autofree char *chunk_bytes = stw_size_format(stw_chunk_bytes(c, 0, STW_LIST_PARAM));
  if (c->shards) { /* a chunk is a group, each rank's shard of it the layout's chunk */
    g_autofree char *whole = stw_cli_group_digits(stw_chunking_whole_size(c));
    printf("%s: policy %s, chunk size %s elements split across %u ranks (%s elements, %s a "
           "rank's shard of the param chunk), %u chunks per list\n", file,
           stw_policy_names[p->policy], whole, c->world, size, chunk_bytes,
           stw_chunking_groups(c));
  } else {
    printf("%s: policy %s, chunk size %s elements (%s per param chunk), %u chunks per list\n",
           file, stw_policy_names[p->policy], size, chunk_bytes, n);
  }
  printf("  hardware     %s: %s\n", p->hw.name,
         p->hw.origin[0] != '\0' ? p->hw.origin : "as the plan records it");
  g_autofree char *host_cpu = stw_cli_host_said(&p->hw);
  printf("  host CPU     %s\n", host_cpu);
  g_autofree char *elsewhere = stw_cli_measured_elsewhere(recorded, &p->hw,
                                                          p->retiming.scale == 0);
  if (elsewhere != NULL)
    printf("  assumes      %s\n", elsewhere);
  g_autofree char *buffers = stw_cli_loop_buffers_said(recorded, c->world);
  if (buffers != NULL)
    printf("  assumes      %s\n", buffers);
  g_autofree char *layout = stw_cli_layout_assumed(o, c->world, &p->policy, 1);
  if (layout != NULL)
    printf("  assumes      %s\n", layout);
  gboolean cpu_adam = FALSE;
  guint in_copies = 0; /* the runtime steps them in their compute copies (cost.h) */
  for (guint32 i = 0; i < n; i++) {
    cpu_adam |= stw_optim_on_cpu(p->optim[i]) && !stw_chunking_chunk(c, i)->frozen;
    in_copies += stw_adam_steps_in_copy(c, i, p->optim[i]);
  }
  if (cpu_adam && c->state_dtype == STW_DTYPE_BF16 && p->hw.cpu_adam_bf16_elems_per_s <= 0)
    printf("  assumes      CPU Adam with bf16 moments as fast as the fewer bytes it moves allow "
           "(the profile's fp32 rate x %.2f: it did not measure it; `stowage probe` does, and "
           "on few cores the step is bound by its arithmetic instead)\n",
           STW_ADAM_PROFILE_BYTES /
               stw_adam_bytes_per_elem(c->dtype, c->state_dtype, c->amsgrad, in_copies > 0));
  guint counts[STW_N_OPTIMS] = { 0 }, frozen = 0;
  for (guint32 i = 0; i < n; i++) {
    if (stw_chunking_chunk(c, i)->frozen)
      frozen++; /* no optimizer state: stepped nowhere */
    else
      counts[p->optim[i]]++;
  }
  g_autofree char *frozen_note = frozen > 0 ? g_strdup_printf("; %u frozen (no optimizer state)",
                                                              frozen)
                                            : g_strdup("");
  guint on_storage = counts[STW_OPTIM_CPU_STORAGE] + counts[STW_OPTIM_STORAGE];
  if (on_storage > 0 && !p->hw.storage_gpudirect && p->hw.cpu_checksum_bytes_per_s <= 0)
    printf("  assumes      the storage tier's checksum of each region it writes and reads back "
           "costs nothing (the profile did not measure it: `stowage probe` does; a server's "
           "OpenMP team sums tens of GB/s, one core of this kind of VM 7-33)\n");
  g_autofree char *params = counts[STW_OPTIM_STORAGE] > 0
                                ? g_strdup_printf(", %u with their parameters too",
                                                  counts[STW_OPTIM_STORAGE])
                                : g_strdup("");
  g_autofree char *stored = on_storage > 0
                               ? g_strdup_printf(" (%u of them with their state on storage%s)",
                                                 on_storage, params)
                               : g_strdup("");
  g_autofree char *copies = in_copies > 0 ? g_strdup_printf(" (%u of them in their fp32 compute "
                                                            "copies: 28 bytes an element, not 32)",
                                                            in_copies)
                                          : g_strdup("");
  guint on_gpu = counts[STW_OPTIM_GPU] + counts[STW_OPTIM_GPU_RESIDENT];
  g_autofree char *assumed = on_gpu > 0 ? stw_cli_optimizer_assumed(t) : NULL;
  g_autofree char *gpu_step = assumed != NULL ? g_strconcat("; ", assumed, NULL) : g_strdup("");
  printf("  optimizer    %u chunks CPU Adam%s%s, %u GPU Adam in margin space, %u GPU Adam with "
         "resident state%s%s\n", counts[STW_OPTIM_CPU] + on_storage, stored, copies,
         counts[STW_OPTIM_GPU], counts[STW_OPTIM_GPU_RESIDENT], frozen_note, gpu_step);
  print_lists(c, t);
  if (p->recompute->len + p->offload->len > 0) {
    gboolean first = TRUE;
    printf("  activations  ");
    print_blocks(t, p->offload, "offloaded to the host", &first);
    print_blocks(t, p->recompute, "recomputed in backward", &first);
    printf(", the others kept\n");
  }
  /* blocks the trace recomputes from an input on the host */
  guint32 on_host = stw_trace_blocks_chosen(t, STW_BLOCK_RECOMPUTE_HOST);
  if (on_host > 0) {
    g_autofree char *moved_peak = stw_size_format(stw_activation_moves_host_peak(p->moves));
    printf("  activations  the inputs of %u of %u blocks in host memory from their forward to "
           "their recomputation, %s at most%s (the trace's checkpoints on the host)\n", on_host,
           t->blocks->len, moved_peak, c->world > 1 ? " a rank" : "");
  }
  g_autofree char *h2d = stw_size_format(q->h2d_bytes);
  g_autofree char *d2h = stw_size_format(q->d2h_bytes);
  g_autofree char *lb = stw_size_format(q->lower_bound_bytes);
  guint64 moved = q->h2d_bytes + q->d2h_bytes;
  g_autofree char *gap = stw_size_format(moved - MIN(moved, q->lower_bound_bytes));
  printf("  moves        %s H2D + %s D2H per iteration; lower bound %s, gap %s\n", h2d, d2h, lb,
         gap);
  g_autofree char *peak = stw_size_format(q->peak_gpu_bytes);
  g_autofree char *budget = stw_size_format(p->budgets.gpu_bytes);
  g_autofree char *cpub = stw_size_format(p->budgets.cpu_bytes);
  g_autofree char *host = stw_cli_host_figure(p, stw_plan_staging_bytes(p, t),
                                              stw_trace_host_gradient_bytes(t));
  printf("  GPU peak     %s of %s (chunks and non-model at op %u %s)\n", peak, budget, q->peak_op,
         stw_trace_op(t, q->peak_op)->name);
  StwPlannerOptions planned; /* the plan's budget and profile, as the planner had them */
  stw_planner_options_init(&planned, &p->hw);
  planned.budgets = p->budgets;
  g_autofree char *process = stw_planner_process_said(t, &planned);
  if (process != NULL)
    printf("  GPU process  %s\n", process);
  printf("  host         %s of %s\n", host, cpub);
  guint64 rank_model = 0, startup = stw_planner_startup_host_bytes(t, o, &rank_model);
  if (startup > 0) { /* the loop builds its whole model on the host before it is chunked */
    g_autofree char *all = stw_size_format(startup);
    g_autofree char *per = stw_size_format(rank_model);
    printf("  start-up     %s of host memory: %s the whole model there%s before it is chunked "
           "(model.init %s: %s a rank, beside its process)\n", all,
           c->world > 1 ? "each rank builds" : "the loop builds",
           t->model.init == STW_INIT_HOST_FP32 ? " in fp32" : "", stw_init_names[t->model.init],
           per);
  }
  if (p->hw.compute_on_host) { /* the emulated device is host memory too */
    guint64 world = MAX(p->chunking->world, 1);
    g_autofree char *r = stw_size_format(stw_plan_rank_rss(p));
    g_autofree char *proc = stw_size_format(q->host_overhead_bytes / world);
    g_autofree char *chunks = stw_size_format(q->cpu_bytes / world);
    const char *origin = NULL;
    stw_process_bytes(t, &p->hw, &origin);
    printf("  RSS          %s a rank on this host backend: its emulated device's peak %s, the "
           "chunks' %s, the process's %s (%s)\n", r, peak, chunks, proc, origin);
  }
  guint64 need = 0, over = 0, world = MAX(c->world, 1);
  stw_plan_pinned(p, t, &need, &over);
  if (need > 0) {
    g_autofree char *nb = stw_size_format(need * world);
    g_autofree char *pin = stw_size_format(p->budgets.pinned_bytes);
    g_autofree char *ob = stw_size_format(over * world);
    if (p->budgets.pinned_bytes == 0)
      printf("  pinned       %s of it the copies touch, pinned (page-locked): the copy times "
             "assume it\n", nb);
    else
      printf("  pinned       %s of it the copies touch, %s pinned (--pinned): %s of it copied at "
             "pageable speed\n", nb, pin, ob);
  }
  if (q->storage_bytes > 0) {
    g_autofree char *sb = stw_size_format(q->storage_bytes);
    g_autofree char *sbud = stw_size_format(p->budgets.storage_bytes);
    g_autofree char *busy = stw_duration_format(q->storage_ns);
    guint32 drives = MAX(p->hw.storage_devices, 1);
    printf("  storage      %s of optimizer state%s of %s on the storage tier (%u drive%s), read "
           "and written each step (storage busy %s)\n", sb,
           counts[STW_OPTIM_STORAGE] > 0 ? " and 16-bit parameters" : "", sbud, drives, drives > 1 ? "s" : "", busy);
  }
  g_autofree char *cost = stw_duration_format(q->cost_ns);
  g_autofree char *comp = stw_duration_format(q->compute_ns);
  g_autofree char *adam = stw_duration_format(q->cpu_adam_ns);
  g_autofree char *stall = stw_duration_format(q->stall_ns);
  g_autofree char *th = stw_duration_format(q->h2d_ns);
  g_autofree char *td = stw_duration_format(q->d2h_ns);
  printf("  iteration    %s simulated: compute %s + stalls %s; H2D busy %s, D2H busy %s, "
         "CPU Adam %s\n", cost, comp, stall, th, td, adam);
  g_autofree char *bound = stw_cli_bound_by(p);
  printf("  bound by     %s\n", bound);
  if (c->world > 1) {
    g_autofree char *recv = stw_size_format(q->comm_bytes);
    g_autofree char *busy = stw_duration_format(q->comm_ns);
    printf("  ranks        %u, sharing the model in %s: %s received per rank and "
           "iteration in collectives, busy %s%s\n", c->world,
           c->shards ? "shards of every chunk" : "chunk groups", recv, busy,
           t->model.collectives == STW_COLLECTIVES_BLOCKING
               ? ", on the compute stream (the trace's collectives blocking)"
               : "");
  }
}

/* The command line as a request (NULL: a usage error, said), the trace and the output. */
static StwRequest *
parse(int argc, char **argv, char **trace, char **output_out)
{
  g_auto(StwCliPlanning) pl = { 0 };
  g_autofree char *margin = NULL;
  g_autofree char *gpu = NULL, *policy = NULL, *chunk = NULL, *fraction = NULL, *bucket = NULL,
                  *stage = NULL, *output = NULL, *objective = NULL;
  gboolean oversized = FALSE;
  GOptionEntry entries[] = {
    { "gpu", 'g', 0, STW_OPTION_TEXT, &gpu, "GPU memory budget (required), e.g. 16GiB",
      "SIZE" },
    STW_CLI_PLANNING_ENTRIES(pl),
    STW_CLI_MEASURED_TIMES_ENTRY(pl),
    { "policy", 'p', 0, STW_OPTION_TEXT, &policy,
      "stowage (default), patrickstar, zero-offload, zero-infinity, gemini-static, lru", "P" },
    { "objective", 0, 0, STW_OPTION_TEXT, &objective,
      "what the stowage policy minimizes: time (default) or bytes moved", "O" },
    { "chunk-size", 0, 0, STW_OPTION_TEXT, &chunk, "chunk size (default: search)", "N" },
    { "oversized", 0, 0, G_OPTION_ARG_NONE, &oversized,
      "let tensors larger than the chunk size have a chunk of their own", NULL },
    { "gemini-fraction", 0, 0, STW_OPTION_TEXT, &fraction,
      "gemini-static: share of chunks kept on the GPU (default: the most that fit)", "F" },
    { "margin", 0, 0, STW_OPTION_TEXT, &margin,
      "patrickstar: share of the margin space (GPU memory its chunks and activations leave) the "
      "optimizer state may take, Gemini's gpu_margin_mem_ratio (default 1; 0: CPU Adam for "
      "all)", "F" },
    { "prefetch-bucket", 0, 0, STW_OPTION_TEXT, &bucket,
      "zero-infinity, zero-offload at --zero-stage 3: elements fetched ahead (default "
      "50000000)", "N" },
    { "zero-stage", 0, 0, STW_OPTION_TEXT, &stage,
      "zero-offload: DeepSpeed's ZeRO stage, 2 (default: every GPU holds the whole 16-bit "
      "model) or 3 (its shard, the others' gathered for each use)", "S" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "plan file to write ('-': stdout)",
      "FILE" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("TRACE - plan chunk placement for a budget");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_option_context_set_description(
      ctx, "Packs the trace's tensors into chunks, schedules every fetch and eviction of one\n"
           "iteration and places each chunk's optimizer step, within the budget. The plan\n"
           "passes 'stowage check' by construction. docs/algorithms.md explains the choices.\n\n"
           "Example: stowage plan traces/gpt2-xl-b8-s1024-v100.json --gpu 24GiB --cpu 240GiB "
           "-o plan.json\n");
  if (!stw_cli_parse(ctx, &argc, &argv, "plan"))
    return NULL;
  if (argc != 2) {
    stw_cli_fail(STW_EXIT_USAGE, "plan: expected one trace file (see --help)");
    return NULL;
  }
  StwRequest *r = stw_request_new(&stw_request_plan_kind);
  stw_cli_request_from_entries(r, entries);
  GError *error = NULL;
  if (!stw_request_require(r, "gpu", &error)) {
    stw_cli_error(error);
    stw_request_free(r);
    return NULL;
  }
  const StwCliFile in[] = { { "the trace", argv[1] } }, out[] = { { "--output", output } };
  if (output == NULL)
    stw_cli_fail(STW_EXIT_USAGE, "plan: --output FILE is required ('-' for stdout)");
  if (output == NULL || !stw_cli_outputs_apart("plan", in, 1, out, 1)) {
    stw_request_free(r);
    return NULL;
  }
  *trace = g_strdup(argv[1]);
  *output_out = g_steal_pointer(&output);
  return r;
}

int
stw_cmd_plan(int argc, char **argv)
{
  g_autofree char *trace_file = NULL, *output = NULL;
  g_autoptr(StwRequest) r = parse(argc, argv, &trace_file, &output);
  if (r == NULL)
    return STW_EXIT_USAGE;
  GError *error = NULL;
  g_autoptr(StwTrace) trace = stw_trace_load(trace_file, &error);
  StwPlannerOptions o;
  if (trace == NULL || !stw_request_plan(r, trace, &o, &error))
    return stw_cli_error(error);
  o.progress = progress;
  g_autofree char *trace_name = stw_cli_trace_name_for_plan(trace_file, output);
  g_autoptr(StwPlan) plan = stw_planner_plan(trace, trace_name, &o, &error);
  if (plan == NULL || !stw_plan_save(plan, trace, output, &error))
    return stw_cli_error(error);
  /* the stowage policy's choice (the baselines keep what their systems keep), where it was asked
   * for: the default says nothing of a trace that decides its blocks itself */
  if (o.policy == STW_POLICY_STOWAGE && o.activations != STW_ACTIVATIONS_KEEP &&
      stw_request_get(r, "activations") != NULL && !stw_planner_decides_blocks(trace))
    g_printerr("stowage: plan: --activations %s: the trace %s, so they are planned as it has "
               "them\n", stw_activations_names[o.activations],
               trace->blocks->len == 0 ? "has no blocks (version 1, or a source that does not "
                                         "record them)"
                                       : "decides its blocks already (checkpointing or several "
                                         "micro-steps)");
  g_autoptr(StwTrace) recomputed = NULL; /* the trace the schedule runs over, for its op names */
  const StwTrace *runs = stw_plan_trace(plan, trace, &recomputed, &error);
  if (runs == NULL)
    return stw_cli_error(error);
  if (strcmp(output, "-") != 0)
    print_plan(output, plan, &o, trace, runs);
  return STW_EXIT_OK;
}

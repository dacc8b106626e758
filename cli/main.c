/* main.c — `stowage COMMAND ...`: dispatch to one file per subcommand. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <stowage/files.h>

#include "cli.h"
#include "config.h"

typedef struct {
  const char *name;
  StwCommandFunc run;
  const char *summary;
} Command;

static const Command commands[] = {
  { "models", stw_cmd_models, "list the model zoo with exact parameter counts" },
  { "hardware", stw_cmd_hardware, "list the shipped hardware profiles" },
  { "synth", stw_cmd_synth, "synthesize the trace of one training iteration of a model" },
  { "inspect", stw_cmd_inspect, "summarize a trace: model data, peak memory, time per stage" },
  { "plan", stw_cmd_plan, "plan chunk placement and movement for a GPU memory budget" },
  { "check", stw_cmd_check, "prove a plan sound for a trace without running it" },
  { "simulate", stw_cmd_simulate, "predict a plan's iteration: time, stalls, engines, memory" },
  { "compare", stw_cmd_compare, "every policy side by side on one trace and budget" },
  { "whatif", stw_cmd_whatif, "sweep GPU budgets (and policies, batch sizes)" },
  { "minmem", stw_cmd_minmem, "the smallest GPU budget within a slowdown of unlimited memory" },
  { "capacity", stw_cmd_capacity, "the largest model of a family that fits the hardware" },
  { "probe", stw_cmd_probe, "measure this machine and write a hardware profile" },
  { "profile", stw_cmd_profile, "the trace of any CUDA program, through CUPTI" },
  { "import", stw_cmd_import, "the trace of a PyTorch profiler trace (Kineto, execution trace)" },
  { "train", stw_cmd_train, "train a GPT with its model state in chunks: profile or replay" },
};

static void
usage(FILE *out)
{
  fprintf(out,
          "Usage: stowage COMMAND [OPTIONS...]\n\n"
          "Plan where the model data of a large-model training job lives, GPU or CPU, at\n"
          "every operator of an iteration.\n\nCommands:\n");
  for (gsize i = 0; i < G_N_ELEMENTS(commands); i++)
    fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(out, "\nRun 'stowage COMMAND --help' for a command's options; 'stowage --build-info'\n"
               "for what this build can do and where its modules are.\n"
               "Example: stowage synth --model gpt2 --batch 8 --seq 1024 -o gpt2.json\n"
               "         stowage inspect gpt2.json\n");
}

/* `stowage --build-info`: what this build can do and where its modules and libraries are, as
 * the running binary finds them (the GPU script's preflight prints it). */
static void
module_line(const char *what, gboolean built_with, const char *env, const char *built,
            const char *installed)
{
  if (!built_with) {
    printf("%-18s no (not in this build)\n", what);
    return;
  }
  g_autofree char *path = stw_module_path(env, built, installed);
  printf("%-18s %s (%s; $%s)\n", what, path,
         g_file_test(path, G_FILE_TEST_EXISTS) ? "found" : "MISSING", env);
}

static void
build_info(void)
{
  printf("%s\n", PACKAGE_STRING);
#ifdef STW_HAVE_CUDA
  printf("%-18s yes (%s)\n", "cuda", STW_CUDA_DIR);
#else
  printf("%-18s no\n", "cuda");
#endif
#ifdef STW_HAVE_BLAS
  printf("%-18s yes\n", "blas");
#else
  printf("%-18s no (portable GEMM)\n", "blas");
#endif
#ifdef STW_HAVE_MPI
  printf("%-18s yes\n", "mpi");
#else
  printf("%-18s no\n", "mpi");
#endif
  gboolean cuda = FALSE, cupti = FALSE, nccl = FALSE;
#ifdef STW_HAVE_CUDA
  cuda = TRUE;
#endif
#ifdef STW_HAVE_CUPTI
  cupti = TRUE;
  printf("%-18s the cupti injection library's ($NVTX_INJECTION64_PATH), handed to the process's "
         "CUPTI\n", "nvtx injection");
#endif
#ifdef STW_HAVE_NCCL
  nccl = TRUE;
#endif
  module_line("cuda compute", cuda, "STOWAGE_COMPUTE_CUDA", STW_COMPUTE_CUDA_BUILT,
              STW_COMPUTE_CUDA_INSTALLED);
  module_line("cupti injection", cupti, "STOWAGE_CUPTI_LIB", STW_CUPTI_BUILT,
              STW_CUPTI_INSTALLED);
  module_line("nccl communicator", nccl, "STOWAGE_COMM_NCCL", STW_COMM_NCCL_BUILT,
              STW_COMM_NCCL_INSTALLED);
}

/* What was printed must have been written: a full disk or a closed pipe under stdout is a
 * failure (exit 1), not a truncated output with exit 0. */
static int
finish(int status)
{
  errno = 0;
  gboolean failed = fflush(stdout) != 0 || ferror(stdout);
  int e = errno;
  if (fclose(stdout) != 0 && !failed) {
    failed = TRUE;
    e = errno;
  }
  if (!failed)
    return status;
  fprintf(stderr, "stowage: cannot write to standard output: %s\n",
          e != 0 ? g_strerror(e) : "write error");
  return status == STW_EXIT_OK ? STW_EXIT_FAILURE : status;
}

int
main(int argc, char **argv)
{
#ifdef __GLIBC__
  /* Blocks of 128 KiB or more are mappings of their own, given back when freed. By default glibc
   * raises this threshold to the largest such block freed (and its heap's trim threshold to
   * twice that), so that after a few MiB of temporaries it serves the next ones from a heap that
   * keeps their pages, and the process held more than the plan counts for it (`train --plan` on
   * the host backend: 0.7% to 5.2% above the plan's RSS; with the threshold fixed, 0.3% to 1.7%,
   * bench/rss.sh), at no cost in the trainer's speed measured. */
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
  if (argc < 2) {
    usage(stderr);
    return STW_EXIT_USAGE;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    usage(stdout);
    return finish(STW_EXIT_OK);
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("%s\n", PACKAGE_STRING);
    return finish(STW_EXIT_OK);
  }
  if (strcmp(argv[1], "--build-info") == 0) {
    build_info();
    return finish(STW_EXIT_OK);
  }
  for (gsize i = 0; i < G_N_ELEMENTS(commands); i++) {
    if (strcmp(argv[1], commands[i].name) == 0)
      return finish(commands[i].run(argc - 1, argv + 1));
  }
  fprintf(stderr, "stowage: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return STW_EXIT_USAGE;
}

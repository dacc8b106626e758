/* modules.c — where stowage's loadable modules are (the CUDA compute table, the CUPTI
 * injection library, the NCCL communicator); see stw_module_path in files.h. */
#include "config.h"

#include <dlfcn.h> /* dladdr: AM_CPPFLAGS defines _GNU_SOURCE */
#include <string.h>

#include <stowage/files.h>

/* The file of the running code that holds this function: libstowage.so, or the program that
 * links the library statically; NULL when the loader does not say. */
static char *
running_object(void)
{
  Dl_info info;
  if (dladdr((void *)stw_module_path, &info) != 0 && info.dli_fname != NULL &&
      strchr(info.dli_fname, '/') != NULL)
    return g_canonicalize_filename(info.dli_fname, NULL);
  return g_file_read_link("/proc/self/exe", NULL); /* the main program, named by no path */
}

char *
stw_module_path(const char *env_var, const char *built, const char *installed)
{
  const char *env = g_getenv(env_var);
  if (env != NULL && env[0] != '\0')
    return g_strdup(env);
  g_autofree char *self = running_object();
  if (self != NULL) {
    g_autofree char *dir = g_path_get_dirname(self);
    g_autofree char *name = g_path_get_basename(installed);
    /* DIR/stowage/NAME beside a lib/libstowage.so; DIR/../lib/stowage/NAME beside a bin/stowage */
    char *beside[] = {g_build_filename(dir, "stowage", name, NULL),
                      g_build_filename(dir, "..", "lib", "stowage", name, NULL)};
    char *found = NULL;
    for (gsize i = 0; i < G_N_ELEMENTS(beside); i++) {
      if (found == NULL && g_file_test(beside[i], G_FILE_TEST_EXISTS))
        found = g_canonicalize_filename(beside[i], NULL);
      g_free(beside[i]);
    }
    if (found != NULL)
      return found;
  }
  if (g_file_test(built, G_FILE_TEST_EXISTS))
    return g_strdup(built);
  return g_strdup(installed);
}

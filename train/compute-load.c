/* compute-load.c — stw_compute_cuda_new: loads the CUDA compute table's module
 * (libstowage-compute-cuda.so, compute-cuda.cu) on first use. */
#include "config.h"

#include <stowage/compute.h>

#include <dlfcn.h>

#include <stowage/files.h>
#include <stowage/trainer.h>

StwCompute *
stw_compute_cuda_new(gboolean mixed, GError **error)
{
#ifndef STW_HAVE_CUDA
  (void)mixed;
  g_set_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_UNSUPPORTED,
              "this stowage was built without CUDA: configure where the CUDA toolkit is");
  return NULL;
#else
  /* $STOWAGE_COMPUTE_CUDA, the build tree's, the one beside the library, the installed one */
  g_autofree char *path = stw_module_path("STOWAGE_COMPUTE_CUDA", STW_COMPUTE_CUDA_BUILT,
                                          STW_COMPUTE_CUDA_INSTALLED);
  void *module = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (module == NULL) {
    g_set_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_DEVICE,
                "cannot load the CUDA compute table %s: %s", path, dlerror());
    return NULL;
  }
  typedef StwCompute *(*Make)(gboolean mixed, GError **error);
  Make make = (Make)dlsym(module, "stw_compute_cuda_module_new");
  if (make == NULL) {
    g_set_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_DEVICE,
                "%s is not stowage's CUDA compute table: %s", path, dlerror());
    dlclose(module);
    return NULL;
  }
  GError *inner = NULL;
  StwCompute *x = make(mixed, &inner);
  if (x == NULL) {
    g_set_error(error, STW_TRAINER_ERROR, STW_TRAINER_ERROR_DEVICE, "%s",
                inner != NULL ? inner->message : "the CUDA compute table failed to start");
    g_clear_error(&inner);
    dlclose(module);
    return NULL;
  }
  return x; /* the module stays loaded: the table's functions live in it */
#endif
}

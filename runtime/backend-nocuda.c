/* backend-nocuda.c — stw_backend_cuda_new where stowage was built without CUDA. */
#include "config.h"

#include <stowage/backend.h>
#include <stowage/runtime.h>

StwBackend *
stw_backend_cuda_new(int device, guint64 arena_bytes, GError **error)
{
  (void)device;
  (void)arena_bytes;
  g_set_error(error, STW_RUNTIME_ERROR, STW_RUNTIME_ERROR_UNSUPPORTED,
              "this stowage was built without CUDA: configure where the CUDA toolkit is");
  return NULL;
}


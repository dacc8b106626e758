/* comm-nompi.c — a build without MPI: one rank only (comm.h). */
#include "config.h"

#include <stowage/comm.h>

StwComm *
stw_comm_mpi_new(guint64 timeout_ms, GError **error)
{
  (void)timeout_ms;
  g_set_error(error, STW_COMM_ERROR, STW_COMM_ERROR_UNSUPPORTED,
              "this stowage was built without MPI: it trains on one rank (install Open MPI, "
              "Debian: libopenmpi-dev openmpi-bin, and build again)");
  return NULL;
}

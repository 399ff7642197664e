// ranks.c: every MPI call of the distributed emulator, and nothing else.
// Part of runtime/; window.c runs the windows across ranks through these
// few collectives (docs/isa.md, "execution model": ranks).  Built with
// -DTSP_EMU_MPI by mpicc into bin/tsp-emu-mpi; without it (the default
// build, which needs no MPI) there is one rank and every call is a no-op,
// so window.c's rank code never runs.
#include "emu_internal.h"

#include <stdlib.h>
#include <string.h>

#ifdef TSP_EMU_MPI
#include <mpi.h>

void ranks_init(int *argc, char ***argv) { MPI_Init(argc, argv); }

void ranks_end(void) { MPI_Finalize(); }

int ranks_me(void) {
  int me;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  return me;
}

int ranks_count(void) {
  int n;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

void ranks_max(int64_t *v, int n) { MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD); }

void ranks_sum(int64_t *v, int n) { MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD); }

void ranks_max_double(double *v, int n) { MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); }

void ranks_allgather(const int64_t *mine, int n, int64_t *all) {
  MPI_Allgather(mine, n, MPI_INT64_T, all, n, MPI_INT64_T, MPI_COMM_WORLD);
}

int64_t ranks_exscan(int64_t v) {
  int64_t below = 0;
  MPI_Exscan(&v, &below, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return ranks_me() == 0 ? 0 : below;
}

// Byte counts travel as int (MPI's); a window's traffic to one rank is far
// below 2 GiB, and a larger one stops the run rather than wrap.
static int count_of(size_t n) {
  if (n > (size_t)INT32_MAX) die("tsp-emu: %zu bytes to exchange in one window, over MPI's 2 GiB", n);
  return (int)n;
}

static int *displacements(const int *counts, int n, size_t *total) {
  int *d = xcalloc((size_t)n + 1, sizeof *d);
  size_t at = 0;
  for (int r = 0; r < n; r++) d[r] = count_of(at), at += (size_t)counts[r];
  *total = at;
  count_of(at);
  return d;
}

uint8_t *ranks_alltoallv(const Buf *out, size_t *inlen) {
  int n = ranks_count();
  int *sc = xcalloc((size_t)n, sizeof *sc), *rc = xcalloc((size_t)n, sizeof *rc);
  Buf all = {0};
  for (int r = 0; r < n; r++) sc[r] = count_of(out[r].len), buf_append(&all, out[r].data, out[r].len);
  MPI_Alltoall(sc, 1, MPI_INT, rc, 1, MPI_INT, MPI_COMM_WORLD);
  size_t stotal, rtotal;
  int *sd = displacements(sc, n, &stotal), *rd = displacements(rc, n, &rtotal);
  uint8_t *in = xmalloc(rtotal + 1);
  MPI_Alltoallv(all.data, sc, sd, MPI_BYTE, in, rc, rd, MPI_BYTE, MPI_COMM_WORLD);
  for (int r = 0; r < n; r++) inlen[r] = (size_t)rc[r];
  buf_free(&all);
  free(sc), free(rc), free(sd), free(rd);
  return in;
}

uint8_t *ranks_gather(const Buf *mine, size_t *inlen) {
  int n = ranks_count(), len = count_of(mine->len);
  int *rc = xcalloc((size_t)n, sizeof *rc);
  MPI_Gather(&len, 1, MPI_INT, rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  size_t total = 0;
  int *rd = displacements(rc, n, &total);
  uint8_t *in = xmalloc(total + 1);
  MPI_Gatherv(mine->data, len, MPI_BYTE, in, rc, rd, MPI_BYTE, 0, MPI_COMM_WORLD);
  for (int r = 0; r < n; r++) inlen[r] = (size_t)rc[r];
  free(rc), free(rd);
  return in;
}

#else  // one rank: nothing to agree on, nothing to exchange

void ranks_init(int *argc, char ***argv) { (void)argc, (void)argv; }
void ranks_end(void) {}
int ranks_me(void) { return 0; }
int ranks_count(void) { return 1; }
void ranks_max(int64_t *v, int n) { (void)v, (void)n; }
void ranks_sum(int64_t *v, int n) { (void)v, (void)n; }
void ranks_max_double(double *v, int n) { (void)v, (void)n; }
void ranks_allgather(const int64_t *mine, int n, int64_t *all) { memcpy(all, mine, (size_t)n * sizeof *all); }
int64_t ranks_exscan(int64_t v) { return (void)v, 0; }

uint8_t *ranks_alltoallv(const Buf *out, size_t *inlen) {
  inlen[0] = out[0].len;
  uint8_t *in = xmalloc(out[0].len + 1);
  if (out[0].len) memcpy(in, out[0].data, out[0].len);
  return in;
}

uint8_t *ranks_gather(const Buf *mine, size_t *inlen) { return ranks_alltoallv(mine, inlen); }

#endif

bool ranks_all(bool ok) {
  int64_t bad = !ok;
  ranks_max(&bad, 1);
  return !bad;
}

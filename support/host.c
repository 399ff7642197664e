// host.c: what this process may use of the machine it runs on.
// Part of support/; tsp-emu sizes its default thread count and its memory
// limit (--threads, --max-memory) from it.  A container is often given less
// than the machine has, by its control group rather than by CPU affinity or
// physical memory: `docker run --cpus 2 --memory 8g` on a 64-core, 256 GB
// host leaves sched_getaffinity at 64 cores and sysconf at 256 GB.  A run
// sized from those would spin 64 threads on two CPUs' worth of time, or be
// killed by the kernel at 8 GB instead of refusing with its estimate.  So
// the machine's figures are lowered by the limits of the process's control
// group and of every group above it:
//
//   cgroup v2: memory.max ("max" or bytes), cpu.max ("max PERIOD" or
//              "QUOTA PERIOD", in microseconds), under ROOT/PATH for the
//              "0::PATH" line of /proc/self/cgroup;
//   cgroup v1: memory.limit_in_bytes under ROOT/memory/PATH, and
//              cpu.cfs_quota_us (-1: none) with cpu.cfs_period_us under
//              ROOT/CONTROLLERS/PATH, for the lines naming those controllers.
//
// A quota of Q microseconds a period of P allows ceil(Q / P) cores.  Files
// that are missing or unreadable are no limit: the machine's figures stand.
#include "support.h"

#include <stdlib.h>
#include <string.h>

// DIR/FILE opened for reading (NULL: missing, unreadable, or a path too long).
static FILE *open_in(const char *dir, const char *file) {
  char path[4200];
  int n = snprintf(path, sizeof path, "%s/%s", dir, file);
  return n > 0 && (size_t)n < sizeof path ? fopen(path, "r") : NULL;
}

// The limit DIR/FILE gives (its first number; "max" or none: no limit),
// lowering *limit.  A v1 limit of "no limit" is a number near 2^63.
static void lower_by_file(const char *dir, const char *file, uint64_t *limit, bool *lowered) {
  FILE *fp = open_in(dir, file);
  if (!fp) return;
  char text[64] = "";
  bool read = fgets(text, sizeof text, fp) != NULL;
  fclose(fp);
  if (!read || text[0] < '0' || text[0] > '9') return;
  uint64_t v = strtoull(text, NULL, 10);
  if (v < (UINT64_C(1) << 62) && v < *limit) *limit = v, *lowered = true;
}

// The cores a cpu.max, or a cfs quota and period, allows (0: no limit).
static int quota_cores(long long quota, long long period) {
  if (quota <= 0 || period <= 0) return 0;
  long long cores = quota / period + (quota % period != 0);  // ceil, without overflowing near LLONG_MAX
  return (int)MIN(cores, (long long)1 << 20);
}

static int cores_of_v2(const char *dir) {
  FILE *fp = open_in(dir, "cpu.max");
  if (!fp) return 0;
  long long quota = 0, period = 0;
  int got = fscanf(fp, "%lld %lld", &quota, &period);  // "max 100000" reads nothing
  fclose(fp);
  return got == 2 ? quota_cores(quota, period) : 0;
}

static long long number_in(const char *dir, const char *file) {
  FILE *fp = open_in(dir, file);
  if (!fp) return 0;
  long long v = 0;
  if (fscanf(fp, "%lld", &v) != 1) v = 0;
  fclose(fp);
  return v;
}

static int cores_of_v1(const char *dir) {
  return quota_cores(number_in(dir, "cpu.cfs_quota_us"), number_in(dir, "cpu.cfs_period_us"));
}

// Lowers h's memory and cores (those asked for) by the group at BASE +
// PATH and every group above it, up to BASE itself.
static void lower_by_groups(const char *base, const char *cgpath, bool v2, HostLimits *h, bool want_mem,
                            bool want_cores) {
  char dir[4096];
  int n = snprintf(dir, sizeof dir, "%s%s", base, cgpath);
  if (n < 0 || (size_t)n >= sizeof dir) return;
  size_t floor = strlen(base);
  for (;;) {
    size_t len = strlen(dir);
    while (len > floor && dir[len - 1] == '/') dir[--len] = '\0';
    if (want_mem) lower_by_file(dir, v2 ? "memory.max" : "memory.limit_in_bytes", &h->memory, &h->memory_by_cgroup);
    if (want_cores) {
      int c = v2 ? cores_of_v2(dir) : cores_of_v1(dir);
      if (c > 0 && c < h->cores) h->cores = c, h->cores_by_cgroup = true;
    }
    char *slash = strrchr(dir, '/');
    if (len <= floor || !slash || (size_t)(slash - dir) < floor) break;
    *slash = '\0';
  }
}

static bool lists_controller(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && !memcmp(p, name, n)) return true;
    if (!end) break;
    p = end + 1;
  }
  return false;
}

HostLimits host_limits_at(const char *proc_self_cgroup, const char *cgroup_root, uint64_t machine_memory,
                          int machine_cores) {
  FILE *fp = fopen(proc_self_cgroup, "r");
  if (!fp) return (HostLimits){.memory = machine_memory, .cores = machine_cores};
  // Lowered from the machine's figures, or from no limit where they are unknown.
  HostLimits h = {.memory = machine_memory ? machine_memory : UINT64_MAX,
                  .cores = machine_cores > 0 ? machine_cores : INT32_MAX};
  char line[4096];
  while (fgets(line, sizeof line, fp)) {
    line[strcspn(line, "\n")] = '\0';
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2 || c2[1] != '/') continue;
    *c1 = *c2 = '\0';
    const char *controllers = c1 + 1, *path = c2 + 1;
    if (!strcmp(line, "0") && !*controllers) {  // v2
      lower_by_groups(cgroup_root, path, true, &h, true, true);
      continue;
    }
    bool memory = lists_controller(controllers, "memory"), cpu = lists_controller(controllers, "cpu");
    char base[1024];
    int n = snprintf(base, sizeof base, "%s/%s", cgroup_root, controllers);
    if ((!memory && !cpu) || n < 0 || (size_t)n >= sizeof base) continue;
    lower_by_groups(base, path, false, &h, memory, cpu);
  }
  fclose(fp);
  if (!h.memory_by_cgroup) h.memory = machine_memory;
  if (!h.cores_by_cgroup) h.cores = machine_cores;
  return h;
}

HostLimits host_limits(uint64_t machine_memory, int machine_cores) {
  return host_limits_at("/proc/self/cgroup", "/sys/fs/cgroup", machine_memory, machine_cores);
}

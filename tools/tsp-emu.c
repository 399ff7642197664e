// tsp-emu.c: the reference emulator's driver.  Loads an output directory
// (runtime/loader.c), seeds the model's inputs (runtime/model.c), runs it
// (runtime/emu.c), checks its outputs against the reference evaluation of
// the model (runtime/reference.c) and reports.
//
//   tsp-emu DIR [--seed S] [--data-seed N] [--jitter on|off] [--drift-ppm P] [--start-skew C]
//               [--trace FILE] [--report FILE] [--input NAME[#B][@DEV]=F.npy] [--dump NAME[#B][@DEV|@all]=F.npy]
//               [--ber RATE] [--inject sbe|mbe:A-B@C] [--fail-link A-B@C] [--fail-device N@C] [--replay N]
//               [--threads N]
//
// With faults (runtime/fault.c), a run the hardware flags (a detected link
// error, a cable or device that died) is replayed from the start, up to
// --replay times (seed 002 s4.5's software replay); the last run is the
// one reported.
//
// Exit status: 0 when the (last) run is clean, 2 when it found violations,
// 1 when the input is unusable (missing, corrupt, or not for this topology).
//
// Built with -DTSP_EMU_MPI (bin/tsp-emu-mpi, started by mpirun), the run
// is split across the ranks (runtime/ranks.c, window.c); rank 0 prints and
// writes the report, the same bytes as one process; the others print
// nothing.
#define _DEFAULT_SOURCE  // lstat, sigaction
#include "../runtime/emu.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { EXIT_VIOLATIONS = 2, MAX_TENSOR_ARGS = 64 };

typedef struct Args {
  const char *dir, *report;
  const char *inputs[MAX_TENSOR_ARGS], *dumps[MAX_TENSOR_ARGS];
  int ninputs, ndumps;
  bool drift_given;
  bool quiet;  // --quiet: no progress line
  EmuOptions opt;
  double ber;                        // --ber
  FaultSpec faults[FAULT_MAX_SPECS];  // --inject, --fail-link, --fail-device
  int nfaults;
  int replays;                       // --replay
  int64_t max_memory_mib;            // --max-memory (0: EMU_DEFAULT_MEMORY_PERCENT of what the process may use)
  Reference **batch_ref;             // with several batches: each one's reference (opt.batch_ref)
  int nbatches;
} Args;

static void usage(FILE *out) {
  fprintf(out,
          "usage: tsp-emu DIR [options]\n"
          "\n"
          "  --seed S             seeds jitter, drift and start skew (default 1)\n"
          "  --data-seed N        seeds the model's inputs and params (default 1)\n"
          "  --jitter on|off      off: every vector takes its link's max latency (default off)\n"
          "  --drift-ppm P        clocks off by up to +-P ppm (default: the topology's drift_ppm,\n"
          "                       a bound or each device's exact value)\n"
          "  --start-skew C       devices start up to C cycles apart (default 0)\n"
          "  --trace FILE         Chrome trace JSON (Perfetto opens it)\n"
          "  --trace-max-vectors N  link arrows in the trace (default %d)\n"
          "  --report FILE        YAML report\n"
          "  --input NAME=F.npy   give a tensor its values before the run: an input or param\n"
          "                       of the model (every copy, and the reference), or without a\n"
          "                       model a tensor named in the manifest (every home; a shard\n"
          "                       its box of the whole tensor)\n"
          "  --input NAME@DEV=F.npy  the same for device DEV's copy alone (of an @ each tensor)\n"
          "  --dump NAME=F.npy    write a tensor named in the manifest after the run (its\n"
          "                       first whole home, or its shards assembled; NAME@DEV=F.npy:\n"
          "                       its home on device DEV; NAME@all=F.npy: every home, device\n"
          "                       N's into F.devNNNN.npy)\n"
          "  NAME#B               with several batches (the manifest's batches:), batch B's\n"
          "                       tensor (NAME#B@DEV=F.npy: its home on DEV); NAME alone is\n"
          "                       batch 0's (a param is every batch's)\n"
          "  --max-cycles N       a run longer than N cycles is a hang (default 2^40)\n"
          "  --max-listed N       violations listed (all are counted; default %d)\n"
          "  --max-memory MIB     refuse a run whose memory estimate is over MIB mebibytes\n"
          "                       (default %d%% of the memory this process may use: the\n"
          "                       machine's, or its control group's limit when lower)\n"
          "  --threads N          run the devices on N threads, in windows of the smallest link\n"
          "                       latency (default: the cores this process may use, by CPU\n"
          "                       affinity and its control group's CPU quota, 1 under\n"
          "                       64-cycle links); the report and trace are the same for any N\n"
          "  --bursts on|off      on: a stream runs its elements several in one event where\n"
          "                       nothing else on its device can tell (default on); off: one\n"
          "                       event an element. The report and trace are the same either way\n"
          "\n"
          "faults (docs/isa.md, Faults; CYCLE is a global cycle):\n"
          "  --ber RATE           flip each bit on every link with probability RATE (0 to 1):\n"
          "                       FEC corrects 1 bad bit a vector, detects 2 or more\n"
          "  --inject sbe:A-B@CYCLE  one corrected error (one bit) in the first vector leaving\n"
          "                       device A for B on their cable at or after CYCLE\n"
          "  --inject mbe:A-B@CYCLE  the same with %d bits: a detected error, transient\n"
          "  --fail-link A-B@CYCLE   the cable between A and B dies at CYCLE: what would\n"
          "                       arrive from then on is lost\n"
          "  --fail-device N@CYCLE   device N dies at CYCLE: it stops, its cables die\n"
          "  --replay N           replay a run the hardware flags up to N times (default %d)\n"
          "\n"
          "  --quiet              no progress line (shown on a terminal after 2 s)\n"
          "exit status: 0 clean, 2 violations, 1 unusable input\n",
          IR_TRACE_DEFAULT_MAX_ARROWS, EMU_DEFAULT_MAX_LISTED, EMU_DEFAULT_MEMORY_PERCENT, FAULT_MBE_BITS, FAULT_DEFAULT_REPLAYS);
}

static bool number(const char *opt, const char *arg, int64_t lo, int64_t hi, int64_t *out) {
  if (str_to_i64(arg, out) && *out >= lo && *out <= hi) return true;
  fprintf(stderr, "tsp-emu: error: %s needs an integer from %lld to %lld, got '%s'\n", opt,
          (long long)lo, (long long)hi, arg);
  return false;
}

static bool on_off(const char *opt, const char *arg, bool *out) {
  if (strcmp(arg, "on") && strcmp(arg, "off")) {
    fprintf(stderr, "tsp-emu: error: %s takes on or off, not '%s'\n", opt, arg);
    return false;
  }
  *out = !strcmp(arg, "on");
  return true;
}

enum { O_SEED = 256, O_DATA_SEED, O_JITTER, O_DRIFT, O_SKEW, O_TRACE, O_TRACE_MAX, O_REPORT, O_INPUT, O_DUMP, O_MAX_CYCLES, O_MAX_LISTED, O_MAX_MEMORY,
       O_THREADS, O_BURSTS, O_BER, O_INJECT, O_FAIL_LINK, O_FAIL_DEVICE, O_REPLAY, O_QUIET, O_VERSION, O_HELP };

// --inject, --fail-link, --fail-device: the syntax here, the devices and
// cables once the topology is loaded (fault_new).
static bool fault_option(FaultKind kind, const char *arg, Args *a) {
  char err[256];
  if (a->nfaults == FAULT_MAX_SPECS) {
    fprintf(stderr, "tsp-emu: error: at most %d --inject, --fail-link and --fail-device options\n", FAULT_MAX_SPECS);
    return false;
  }
  if (fault_parse(kind, arg, &a->faults[a->nfaults], err, sizeof err)) return a->nfaults++, true;
  fprintf(stderr, "tsp-emu: error: %s\n", err);
  return false;
}

static bool parse_option(int ch, const char *arg, Args *a) {
  int64_t v;
  double ppm;
  bool on;
  switch (ch) {
  case O_SEED:
    if (!number("--seed", arg, 0, INT64_MAX, &v)) return false;
    a->opt.seed = (uint64_t)v;
    return true;
  case O_DATA_SEED:
    if (!number("--data-seed", arg, 0, INT64_MAX, &v)) return false;
    a->opt.data_seed = (uint64_t)v;
    return true;
  case O_JITTER: return on_off("--jitter", arg, &a->opt.jitter);
  case O_BURSTS:
    if (!on_off("--bursts", arg, &on)) return false;
    a->opt.no_bursts = !on;
    return true;
  case O_DRIFT:
    if (!str_to_double(arg, &ppm) || ppm < 0 || ppm > 1e5) {
      fprintf(stderr, "tsp-emu: error: --drift-ppm needs a number from 0 to 100000, got '%s'\n", arg);
      return false;
    }
    a->opt.drift_ppm = ppm;
    a->drift_given = true;
    return true;
  case O_SKEW: return number("--start-skew", arg, 0, (int64_t)1 << 32, &a->opt.start_skew);
  case O_TRACE: a->opt.trace_path = arg; return true;
  case O_TRACE_MAX: return number("--trace-max-vectors", arg, 0, INT64_MAX, &a->opt.trace_max_vectors);
  case O_REPORT: a->report = arg; return true;
  case O_MAX_CYCLES: return number("--max-cycles", arg, 1, (int64_t)1 << 42, &a->opt.max_cycles);
  case O_MAX_LISTED:
    if (!number("--max-listed", arg, 0, 1000000, &v)) return false;
    a->opt.max_listed = (int)v;
    return true;
  case O_MAX_MEMORY: return number("--max-memory", arg, 1, (int64_t)1 << 40, &a->max_memory_mib);
  case O_THREADS:
    if (!number("--threads", arg, 1, EMU_MAX_THREADS, &v)) return false;
    a->opt.threads = (int)v;
    return true;
  case O_BER:
    if (!str_to_double(arg, &a->ber) || !(a->ber >= 0 && a->ber <= 1)) {
      fprintf(stderr, "tsp-emu: error: --ber needs a rate from 0 to 1, got '%s'\n", arg);
      return false;
    }
    return true;
  case O_INJECT: return fault_option(FAULT_INJECT_SBE, arg, a);
  case O_FAIL_LINK: return fault_option(FAULT_FAIL_LINK, arg, a);
  case O_FAIL_DEVICE: return fault_option(FAULT_FAIL_DEVICE, arg, a);
  case O_QUIET: a->quiet = true; return true;
  case O_REPLAY:
    if (!number("--replay", arg, 0, FAULT_MAX_REPLAYS, &v)) return false;
    a->replays = (int)v;
    return true;
  case O_INPUT:
  case O_DUMP: {
    int *n = ch == O_INPUT ? &a->ninputs : &a->ndumps;
    const char *opt = ch == O_INPUT ? "--input" : "--dump", *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1]) {
      fprintf(stderr, "tsp-emu: error: %s takes NAME[#BATCH][@DEVICE%s]=FILE.npy, not '%s'\n", opt,
              ch == O_INPUT ? "" : "|@all", arg);
      return false;
    }
    if (*n == MAX_TENSOR_ARGS) {
      fprintf(stderr, "tsp-emu: error: %s is given more than %d times (MAX_TENSOR_ARGS)\n", opt, MAX_TENSOR_ARGS);
      return false;
    }
    (ch == O_INPUT ? a->inputs : a->dumps)[(*n)++] = arg;
    return true;
  }
  }
  return false;
}

static bool parse_args(int argc, char **argv, Args *a) {
  static const struct option longopts[] = {
      {"seed", required_argument, 0, O_SEED},         {"data-seed", required_argument, 0, O_DATA_SEED},
      {"jitter", required_argument, 0, O_JITTER},
      {"drift-ppm", required_argument, 0, O_DRIFT},   {"start-skew", required_argument, 0, O_SKEW},
      {"trace", required_argument, 0, O_TRACE},       {"trace-max-vectors", required_argument, 0, O_TRACE_MAX},
      {"report", required_argument, 0, O_REPORT},     {"input", required_argument, 0, O_INPUT},
      {"dump", required_argument, 0, O_DUMP},         {"max-cycles", required_argument, 0, O_MAX_CYCLES},
      {"max-listed", required_argument, 0, O_MAX_LISTED}, {"max-memory", required_argument, 0, O_MAX_MEMORY},
      {"threads", required_argument, 0, O_THREADS},   {"bursts", required_argument, 0, O_BURSTS},   {"ber", required_argument, 0, O_BER},
      {"inject", required_argument, 0, O_INJECT},     {"fail-link", required_argument, 0, O_FAIL_LINK},
      {"fail-device", required_argument, 0, O_FAIL_DEVICE}, {"replay", required_argument, 0, O_REPLAY},
      {"quiet", no_argument, 0, O_QUIET},             {"version", no_argument, 0, O_VERSION},
      {"help", no_argument, 0, O_HELP},               {0, 0, 0, 0}};
  a->opt = (EmuOptions){.seed = 1, .data_seed = 1, .max_cycles = EMU_DEFAULT_MAX_CYCLES, .max_listed = EMU_DEFAULT_MAX_LISTED,
                        .trace_max_vectors = IR_TRACE_DEFAULT_MAX_ARROWS};
  a->replays = FAULT_DEFAULT_REPLAYS;
  opterr = 0;
  for (int ch; (ch = getopt_long(argc, argv, ":h", longopts, NULL)) != -1;) {
    if (ch == O_VERSION) printf("tsp-emu %s\n", TSPC_VERSION), exit(0);
    if (ch == O_HELP || ch == 'h') usage(stdout), exit(0);
    if (ch == ':') {
      fprintf(stderr, "tsp-emu: error: option '%s' needs a value\n", argv[optind - 1]);
      return false;
    }
    if (ch == '?') {
      char why[512];
      fprintf(stderr, "tsp-emu: error: %s\n", cli_bad_option(argv[optind - 1], optopt, longopts, why, sizeof why));
      return false;
    }
    if (!parse_option(ch, optarg, a)) return false;
  }
  if (optind != argc - 1) {
    fprintf(stderr, "tsp-emu: error: give one output directory (try --help)\n");
    return false;
  }
  a->dir = argv[optind];
  return true;
}

// ---- --input and --dump ------------------------------------------------------------------

// --dump NAME@all=F.npy: every copy, device NNNN's into F.devNNNN.npy.
#define DUMP_EVERY_COPY "@all="

// NAME[#BATCH][@DEV]=FILE split: the name (not NUL-terminated), the batch
// (0: none given), the device (-1: none given) and the file.
typedef struct TensorArg {
  const char *name;
  size_t len;
  int batch;
  int device;
  const char *path;
  const TensorHome *home;  // --dump NAME@all: the one home meant (NULL: by name, batch and device)
} TensorArg;

// The number between `from` and `to` (a batch or a device), from 0 to
// INT32_MAX; false when there is none.
static bool arg_number(const char *from, const char *to, int64_t *v) {
  char buf[32];
  if (to - from > 31) return false;
  snprintf(buf, sizeof buf, "%.*s", (int)(to - from), from);
  return str_to_i64(buf, v) && *v >= 0 && *v <= INT32_MAX;
}

// Splits an --input or --dump argument; false after saying why (a batch or
// device that is no number, or not one of the manifest's batches or the
// topology's devices).
static bool split_arg(const char *opt, const char *arg, const Program *p, TensorArg *ta) {
  const char *eq = strchr(arg, '='), *at = memchr(arg, '@', (size_t)(eq - arg));
  const char *hash = memchr(arg, '#', (size_t)((at ? at : eq) - arg));
  *ta = (TensorArg){.name = arg, .len = (size_t)((hash ? hash : at ? at : eq) - arg), .device = -1, .path = eq + 1};
  int64_t batch = 0, dev = -1;
  if ((hash && !arg_number(hash + 1, at ? at : eq, &batch)) || (at && !arg_number(at + 1, eq, &dev))) {
    fprintf(stderr, "tsp-emu: error: %s takes NAME[#BATCH][@DEVICE%s]=FILE.npy, not '%s'\n", opt,
            strcmp(opt, "--dump") ? "" : "|@all", arg);
    return false;
  }
  if (batch >= p->batches) {
    fprintf(stderr, "tsp-emu: error: batch %lld does not exist (the manifest has %d batch%s)\n", (long long)batch,
            p->batches, p->batches == 1 ? "" : "es");
    return false;
  }
  if (dev >= p->ndevices) {
    fprintf(stderr, "tsp-emu: error: device %lld does not exist (the topology has %d)\n", (long long)dev, p->ndevices);
    return false;
  }
  ta->batch = (int)batch, ta->device = (int)dev;
  return true;
}

static bool name_is(const char *s, const TensorArg *ta) { return strlen(s) == ta->len && !strncmp(s, ta->name, ta->len); }

// Why the manifest has no home named by ta (with `on_device`, none on
// ta->device): none of that name at all, none in its batch, none there.
static void no_home(const Program *p, const TensorArg *ta, bool on_device) {
  bool named = false, in_batch = false;
  for (int i = 0; i < p->tensors.len; i++)
    if (name_is(p->tensors.data[i].name, ta)) named = true, in_batch |= p->tensors.data[i].batch == ta->batch;
  if (!named)
    fprintf(stderr, "tsp-emu: error: the manifest names no tensor '%.*s'\n", (int)ta->len, ta->name);
  else if (!in_batch)
    fprintf(stderr, "tsp-emu: error: tensor '%.*s' has no home in batch %d\n", (int)ta->len, ta->name, ta->batch);
  else if (on_device && p->batches > 1)
    fprintf(stderr, "tsp-emu: error: tensor '%.*s' has no copy on device %d in batch %d\n", (int)ta->len, ta->name,
            ta->device, ta->batch);
  else
    fprintf(stderr, "tsp-emu: error: tensor '%.*s' has no copy on device %d\n", (int)ta->len, ta->name, ta->device);
}

// Whether home th is one ta names (its name and batch; its device, if given).
static bool names_home(const TensorArg *ta, const TensorHome *th) {
  return name_is(th->name, ta) && th->batch == ta->batch && (ta->device < 0 || th->device == ta->device);
}

// The manifest's home of the named tensor in its batch: on ta->device when
// given, else the first listed; NULL after saying why, also when the
// device holds several shards of it (a block-cyclic cholesky's rows):
// NAME@DEV must name one home.
static const TensorHome *find_home(const Program *p, const TensorArg *ta) {
  if (ta->home) return ta->home;
  const TensorHome *found = NULL;
  int n = 0;
  for (int i = 0; i < p->tensors.len; i++)
    if (names_home(ta, &p->tensors.data[i]) && !n++) found = &p->tensors.data[i];
  if (n == 1 || (found && ta->device < 0)) return found;
  if (!found) {
    no_home(p, ta, ta->device >= 0);
    return NULL;
  }
  fprintf(stderr, "tsp-emu: error: device %d holds %d shards of tensor '%.*s': NAME@DEV names one home; give NAME "
          "alone for the whole tensor, or NAME@all for every home in its own file\n", ta->device, n, (int)ta->len,
          ta->name);
  return NULL;
}

// A tensor of the manifest as --input and --dump see it, in one batch:
// with DEV, its home there (`own`: the file holds that home's elements, its
// own shape); else every home of the name in the batch, and the whole
// tensor they make: the model's tensor, or without a model a whole copy's
// shape, or the smallest box from 0 that holds every shard.
typedef struct Named {
  const TensorHome **homes;  // malloc'd, in manifest order
  int n;
  bool own;
  DType dtype;
  Shape shape;
} Named;

// Every home named by ta (in its batch) into nt->homes; false after saying
// there is none.
static bool collect_homes(const Program *p, const TensorArg *ta, Named *nt) {
  nt->homes = xmalloc(((size_t)p->tensors.len + 1) * sizeof *nt->homes);
  nt->n = 0;
  for (int i = 0; i < p->tensors.len; i++)
    if (names_home(ta, &p->tensors.data[i])) nt->homes[nt->n++] = &p->tensors.data[i];
  if (nt->n) return true;
  no_home(p, ta, false);
  free(nt->homes);
  return false;
}

// Without a model: the whole tensor that homes nt->homes make, the box
// from 0 to the furthest end of any of them; false after saying why when
// they differ in dtype or rank, or a whole copy is not that box.
static bool span_homes(Named *nt) {
  const TensorHome *first = nt->homes[0];
  nt->dtype = first->dtype;
  nt->shape = (Shape){.rank = first->shape.rank};
  for (int i = 0; i < nt->n; i++) {
    const TensorHome *th = nt->homes[i];
    if (th->dtype != first->dtype || th->shape.rank != first->shape.rank) {
      fprintf(stderr, "tsp-emu: error: the manifest's homes of tensor '%s' differ in dtype or rank\n", th->name);
      return false;
    }
    for (int d = 0; d < th->shape.rank; d++)
      nt->shape.dim[d] = MAX(nt->shape.dim[d], (th->is_shard ? th->start[d] : 0) + th->shape.dim[d]);
  }
  for (int i = 0; i < nt->n; i++) {
    const TensorHome *th = nt->homes[i];
    if (th->is_shard || ir_shape_equal(&th->shape, &nt->shape)) continue;
    char copy[IR_TYPE_STR_MAX], span[IR_TYPE_STR_MAX];
    ir_format_type(copy, sizeof copy, th->dtype, &th->shape);
    ir_format_index(span, sizeof span, nt->shape.dim, nt->shape.rank);
    fprintf(stderr, "tsp-emu: error: the manifest's homes of tensor '%s' do not make one tensor: a whole copy is %s, but "
            "the homes span %s\n", th->name, copy, span);
    return false;
  }
  return true;
}

// The model's input or param named by ta; NULL after saying there is none.
static const Tensor *model_input(const Graph *g, const TensorArg *ta) {
  for (int i = 0; i < g->tensors.len; i++)
    if (name_is(g->tensors.data[i]->name, ta) && !g->tensors.data[i]->def) return g->tensors.data[i];
  fprintf(stderr, "tsp-emu: error: the model has no input or param '%.*s'\n", (int)ta->len, ta->name);
  return NULL;
}

// A model's param is shared by every batch: NAME#B names it with B 0 only.
// False after saying so.
static bool batch_fits(const EmuInput *in, const TensorArg *ta) {
  const Tensor *t = NULL;
  for (int i = 0; in->graph && i < in->graph->tensors.len && !t; i++)
    if (name_is(in->graph->tensors.data[i]->name, ta)) t = in->graph->tensors.data[i];
  if (!t || t->kind != TENSOR_PARAM || !ta->batch) return true;
  fprintf(stderr, "tsp-emu: error: tensor '%s' is a param, shared by every batch: it takes no batch\n", t->name);
  return false;
}

// The tensor NAME[#BATCH][@DEV] names (Named); false after saying why.
static bool named_tensor(const EmuInput *in, const TensorArg *ta, Named *nt) {
  const Program *p = in->prog;
  *nt = (Named){0};
  if (!batch_fits(in, ta)) return false;
  if (ta->device >= 0) {
    const TensorHome *th = find_home(p, ta);
    if (!th) return false;
    nt->homes = xmalloc(sizeof *nt->homes);
    nt->homes[0] = th, nt->n = 1, nt->own = true, nt->dtype = th->dtype, nt->shape = th->shape;
    return true;
  }
  if (!collect_homes(p, ta, nt)) return false;
  if (!in->graph) {
    if (span_homes(nt)) return true;
    free(nt->homes);
    return false;
  }
  const Tensor *t = in->home_tensor[nt->homes[0] - p->tensors.data];  // the loader checked every home against it
  nt->dtype = t->dtype, nt->shape = t->shape;
  return true;
}

// The home --dump reads as it is: the one on the device given, else the
// first whole home; NULL when the shards must be assembled.
static const TensorHome *single_home(const Named *nt) {
  for (int i = 0; i < nt->n; i++)
    if (nt->own || !nt->homes[i]->is_shard) return nt->homes[i];
  return NULL;
}

static const char *npy_descr(DType dt) {
  switch (dt) {
  case DT_F32: case DT_BF16: return "<f4";  // NumPy has no bf16: it travels as f32
  case DT_F16: return "<f2";
  case DT_I32: return "<i4";
  case DT_I8: return "|i1";
  default: return "?";
  }
}

// Reads F.npy for a tensor of dtype dt and shape sh: its elements as dt
// stores them (bf16 rounded from <f4), malloc'd; NULL after saying why.
static uint8_t *read_values(const char *path, const char *name, DType dt, const Shape *sh) {
  NpyArray npy;
  char err[256];
  if (!npy_read(path, &npy, err, sizeof err)) {
    fprintf(stderr, "tsp-emu: error: %s\n", err);
    return NULL;
  }
  if (strcmp(npy.descr, npy_descr(dt)) || !ir_shape_equal(&npy.shape, sh)) {
    char held[128], needed[128], type[128];
    ir_format_type(type, sizeof type, dt, sh);
    npy_format_shape(held, sizeof held, &npy.shape);
    npy_format_shape(needed, sizeof needed, sh);
    fprintf(stderr, "tsp-emu: error: %s holds %s %s; tensor '%s' is %s, which needs %s %s\n", path, npy.descr, held,
            name, type, npy_descr(dt), needed);
    npy_free(&npy);
    return NULL;
  }
  uint8_t *raw = npy.data;
  if (dt == DT_BF16) {
    int64_t n = ir_shape_elems(sh);
    raw = xmalloc((size_t)n * 2);
    for (int64_t i = 0; i < n; i++) num_set(DT_BF16, raw, (int)i, ((const float *)npy.data)[i]);
    npy_free(&npy);
  }
  return raw;
}

// --input without a model: the values go into every home of that name,
// each shard its box (or into the one on the device given, its own
// elements), through its layout.
static bool load_input(Emu *e, const EmuInput *in, const char *arg) {
  TensorArg ta;
  Named nt;
  if (!split_arg("--input", arg, in->prog, &ta) || !named_tensor(in, &ta, &nt)) return false;
  uint8_t *raw = read_values(ta.path, nt.homes[0]->name, nt.dtype, &nt.shape);
  char err[256];
  bool ok = raw != NULL;
  if (ok && nt.own)
    ok = emu_write_home(e, nt.homes[0], raw, err, sizeof err);
  else if (ok)
    ok = emu_write_whole(e, nt.homes, nt.n, &nt.shape, raw, err, sizeof err);
  if (raw && !ok) fprintf(stderr, "tsp-emu: error: %s\n", err);
  free(raw);
  free(nt.homes);
  return ok;
}

// Whether the model (or, where the partitioner places t, the manifest, in
// `batch`) puts a copy of t on `device`.
static bool has_copy(const EmuInput *in, const Tensor *t, int batch, int device) {
  const Placement *p = &t->place;
  if (p->kind == PLACE_DEVICE) return p->index == device;
  if (p->kind == PLACE_EACH) {
    for (int i = 0; i < p->nexcept; i++)
      if (p->except[i] == device) return false;
    return true;
  }
  for (int i = 0; i < in->prog->tensors.len; i++)
    if (in->home_tensor[i] == t && in->prog->tensors.data[i].device == device &&
        in->prog->tensors.data[i].batch == batch)
      return true;
  return false;
}

// --input with a model: an input or param takes these values in the
// reference of its batch (ta->batch; a param: every batch's, batch 0's),
// and so on every device holding it (emu_seed_model); with @DEV, an @ each
// tensor's copy on DEV alone.
static bool give_input(Reference *r, const EmuInput *in, const TensorArg *ta) {
  const Tensor *t = model_input(in->graph, ta);
  if (!t || !batch_fits(in, ta)) return false;
  if (ta->device >= 0 && !has_copy(in, t, ta->batch, ta->device)) {
    no_home(in->prog, ta, true);
    return false;
  }
  uint8_t *raw = read_values(ta->path, t->name, t->dtype, &t->shape);
  if (raw && ta->device >= 0 && t->place.kind == PLACE_EACH)
    ref_set_input_on(r, t, ta->device, raw);
  else if (raw)
    ref_set_input(r, t, raw);  // one copy: that copy is the tensor
  free(raw);
  return raw != NULL;
}

// The elements --dump writes for nt, malloc'd: its first whole home's (or
// the one on the device given) read through its layout, else the whole
// tensor assembled from its shards; NULL with the reason in err (shards
// that leave an element uncovered are refused).
static uint8_t *read_named(Emu *e, const Named *nt, char *err, size_t errlen) {
  const TensorHome *single = single_home(nt);
  if (!single) return emu_read_whole(e, nt->homes, nt->n, &nt->shape, err, errlen);
  uint8_t *raw = xmalloc((size_t)ir_shape_elems(&nt->shape) * (size_t)ir_dtype_bytes[nt->dtype]);
  if (emu_read_home(e, single, raw, err, errlen)) return raw;
  free(raw);
  return NULL;
}

// ---- outputs: all or nothing -----------------------------------------------------------

// The files this run created (they did not exist before it): removed again
// when an output fails, or when a signal ends the run (SIGINT, SIGTERM,
// SIGHUP, SIGABRT, SIGXFSZ), so that a failed run leaves none of its
// outputs behind, not even the half of one.  A file that existed before (the user's, overwritten) is
// never removed, nor anything but a regular file: a report sent to
// /dev/null stays a device.  The list is made for its most entries before
// the run (created_reserve), so the signal handler never reads it while it
// grows.
static struct {
  char **paths;
  volatile sig_atomic_t n;
  int cap;
} created;

static void created_reserve(int cap) {
  created.paths = xcalloc((size_t)MAX(cap, 1), sizeof *created.paths);
  created.cap = cap;
  created.n = 0;
}

// Called before the file at path is created: records it when it does not
// exist yet (and is this run's, then).
static void creating(const char *path) {
  struct stat st;
  if (!path || lstat(path, &st) == 0 || created.n == created.cap) return;
  created.paths[created.n] = xstrdup(path);
  created.n = created.n + 1;
}

// Removes the created files (only calls a signal handler may make).
static void remove_created(void) {
  for (int i = 0; i < created.n; i++) {
    struct stat st;
    if (lstat(created.paths[i], &st) == 0 && S_ISREG(st.st_mode)) unlink(created.paths[i]);
  }
}

static void created_free(void) {
  for (int i = 0; i < created.n; i++) free(created.paths[i]);
  free(created.paths);
  created.paths = NULL;
  created.n = created.cap = 0;
}

// A signal that ends the run: what it created goes, then the signal's own
// end (support/outdir.c, cleanup_signals_watch).
static void on_fatal_signal(int sig) {
  remove_created();
  signal(sig, SIG_DFL);
  raise(sig);
}

// --dump: the tensor ta names (Named), read after the run into a .npy of
// its shape.
static bool dump_tensor(Emu *e, const EmuInput *in, const TensorArg *ta) {
  TensorArg copy = *ta;
  Named nt;
  if (!named_tensor(in, &copy, &nt)) return false;
  char err[256];
  uint8_t *raw = read_named(e, &nt, err, sizeof err);
  bool ok = raw != NULL;
  int64_t n = ok ? ir_shape_elems(&nt.shape) : 0;  // covered: no more elements than its homes hold
  if (ok) creating(ta->path);
  if (ok && nt.dtype == DT_BF16) {
    float *f = xmalloc((size_t)n * sizeof *f);
    for (int64_t i = 0; i < n; i++) f[i] = (float)num_get(DT_BF16, raw, (int)i);
    ok = npy_write(ta->path, "<f4", &nt.shape, f, err, sizeof err);
    free(f);
  } else if (ok) {
    ok = npy_write(ta->path, npy_descr(nt.dtype), &nt.shape, raw, err, sizeof err);
  }
  if (!ok) fprintf(stderr, "tsp-emu: error: %s\n", err);
  free(raw);
  free(nt.homes);
  return ok;
}

// F.npy -> F.devNNNN.npy (F -> F.devNNNN without the .npy): where
// --dump NAME@all=F.npy writes device NNNN's copy; a device's further
// shards (k >= 1) to F.devNNNN.K.npy (malloc'd).
static char *copy_path(const char *path, int device, int k) {
  size_t n = strlen(path), stem = n >= 4 && !strcmp(path + n - 4, ".npy") ? n - 4 : n;
  Buf b = {0};
  buf_printf(&b, "%.*s.dev%04d", (int)stem, path, device);
  if (k) buf_printf(&b, ".%d", k);
  buf_printf(&b, "%s", path + stem);
  return b.data;
}

// How many of homes[0 .. i) are on homes[i]'s device.
static int homes_before_on_device(const TensorHome **homes, int i) {
  int k = 0;
  for (int j = 0; j < i; j++) k += homes[j]->device == homes[i]->device;
  return k;
}

// Whether --dump arg is NAME[#B]@all=F.npy; if so, NAME[#B]=F.npy (the
// argument without "@all") into plain.
static bool every_copy_arg(const char *arg, Buf *plain) {
  const char *eq = strchr(arg, '='), *all = strstr(arg, DUMP_EVERY_COPY);
  if (!all || all > eq) return false;
  buf_printf(plain, "%.*s%s", (int)(all - arg), arg, all + strlen(DUMP_EVERY_COPY) - 1);
  return true;
}

// --dump NAME[#B]@all=F.npy (plain: without "@all"): every home of the
// tensor in its batch, each into its own file (copy_path), in manifest
// order.
static bool dump_every_copy(Emu *e, const EmuInput *in, const char *plain) {
  TensorArg ta;
  Named nt = {0};
  bool found = split_arg("--dump", plain, in->prog, &ta) && collect_homes(in->prog, &ta, &nt), ok = found;
  for (int i = 0; ok && i < nt.n; i++) {
    TensorArg one = ta;
    one.device = nt.homes[i]->device;
    one.home = nt.homes[i];
    char *path = copy_path(ta.path, one.device, homes_before_on_device(nt.homes, i));
    one.path = path;
    ok = dump_tensor(e, in, &one);
    free(path);
  }
  if (found) free(nt.homes);  // collect_homes frees them when it finds none
  return ok;
}

static bool write_dump(Emu *e, const EmuInput *in, const char *arg) {
  Buf plain = {0};
  TensorArg ta;
  bool ok = every_copy_arg(arg, &plain) ? dump_every_copy(e, in, plain.data)
                                        : split_arg("--dump", arg, in->prog, &ta) && dump_tensor(e, in, &ta);
  buf_free(&plain);
  return ok;
}

// The directory part of path ("." when it has none), malloc'd.
static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  char *dir = xstrdup(slash ? path : ".");
  if (slash) dir[slash == path ? 1 : slash - path] = '\0';
  return dir;
}

// Whether a file can be written at path: an existing file (not a
// directory) that takes writes (/dev/stdout), or a new one in a directory
// that takes new files; false after saying why.
static bool writable(const char *opt, const char *path) {
  char *dir = dir_of(path);
  struct stat st;
  bool ok, exists = stat(path, &st) == 0;
  int err;
  if (exists && S_ISDIR(st.st_mode))
    ok = false, err = EISDIR;
  else
    ok = access(exists ? path : dir, exists ? W_OK : W_OK | X_OK) == 0, err = errno;
  if (!ok) fprintf(stderr, "tsp-emu: error: %s cannot write '%s': %s\n", opt, path, strerror(err));
  free(dir);
  return ok;
}

// Whether the file at path is the file `name` of the run's directory (the
// same file however reached: another spelling, a symbolic or hard link).
static bool same_file(const struct stat *st, const char *dir, const char *name) {
  char *p = xmalloc(strlen(dir) + strlen(name) + 2);
  sprintf(p, "%s/%s", dir, name);
  struct stat other;
  bool same = stat(p, &other) == 0 && other.st_dev == st->st_dev && other.st_ino == st->st_ino;
  free(p);
  return same;
}

// Whether output `path` of option opt leaves the run's own files alone: it
// must not be the manifest, topology, model or a binary of the directory
// the run reads (the directory would no longer load).  False after saying
// so.
static bool spares_run_files(const char *opt, const char *path, const EmuInput *in) {
  struct stat st;
  if (!path || stat(path, &st) != 0) return true;  // a new file is none of them
  bool same = same_file(&st, in->dir, "manifest.yaml") || same_file(&st, in->dir, "topology.yaml") ||
              (in->model && same_file(&st, in->dir, in->model));
  for (int i = 0; i < in->topo->ndevices && !same; i++) same = same_file(&st, in->dir, in->binaries[i]);
  if (same)
    fprintf(stderr, "tsp-emu: error: %s would overwrite '%s', a file of %s, the directory it runs\n", opt, path,
            in->dir);
  return !same;
}

// No output (--report, --trace, a --dump) overwrites a file the run reads.
static bool outputs_spare_run(const Args *args, const EmuInput *in) {
  bool ok = spares_run_files("--report", args->report, in) && spares_run_files("--trace", args->opt.trace_path, in);
  for (int i = 0; i < args->ndumps && ok; i++) ok = spares_run_files("--dump", strchr(args->dumps[i], '=') + 1, in);
  return ok;
}

// Whether --dump arg names a tensor the manifest holds (every copy with
// @all) and a file it can write, checked before the run so that neither
// a typo nor a bad path costs a run; false after saying why.  *files: how
// many it writes.
static bool dump_ready(const EmuInput *in, const char *arg, int *files) {
  Buf plain = {0};
  bool every = every_copy_arg(arg, &plain);
  TensorArg ta;
  Named nt = {0};
  bool ok = split_arg("--dump", every ? plain.data : arg, in->prog, &ta) &&
            (every ? collect_homes(in->prog, &ta, &nt) : named_tensor(in, &ta, &nt));
  *files = every ? nt.n : 1;
  if (ok) free(nt.homes);
  ok = ok && writable("--dump", ta.path);
  buf_free(&plain);
  return ok;
}

// The --report file, opened before the run so that a path that cannot be
// written costs no run; NULL after saying why.
static FILE *open_report(const char *path) {
  FILE *fp = fopen(path, "w");
  if (!fp) fprintf(stderr, "tsp-emu: error: cannot write the report '%s': %s\n", path, strerror(errno));
  return fp;
}

static bool write_report(FILE *fp, const char *path, const EmuResult *r, const EmuOptions *opt, int ndevices) {
  emu_write_report(r, opt, ndevices, fp);
  emu_write_data_report(r, fp);
  bool ok = !ferror(fp);
  int e = errno;
  if (fclose(fp) != 0 && ok) ok = false, e = errno;
  if (!ok) fprintf(stderr, "tsp-emu: error: cannot write the report '%s': %s\n", path, strerror(e));
  return ok;
}

// The model's references: none, batch 0's alone, or one per batch.
static void free_references(Args *args) {
  for (int b = 1; args->batch_ref && b < args->nbatches; b++) ref_free(args->batch_ref[b]);
  free(args->batch_ref);
  ref_free(args->opt.ref);
  args->opt.ref = NULL, args->opt.batch_ref = args->batch_ref = NULL;
}

// Gives each --input of batch 0 (pass 0: params and batch 0's inputs) or of
// a later batch (pass 1) to its batch's reference; false after saying why.
static bool give_inputs(const EmuInput *in, Args *args, int pass) {
  for (int i = 0; i < args->ninputs; i++) {
    TensorArg ta;
    if (!split_arg("--input", args->inputs[i], in->prog, &ta)) return false;
    if ((ta.batch > 0) != pass) continue;
    if (!give_input(ta.batch ? args->batch_ref[ta.batch] : args->opt.ref, in, &ta)) return false;
  }
  return true;
}

// The model's reference (NULL without a model), and with several batches
// one per batch (ref_new_batch, made once batch 0's has its given values),
// their inputs as --input gives them; false after reporting a bad --input.
static bool make_reference(const EmuInput *in, Args *args) {
  args->opt.ref = NULL, args->opt.batch_ref = NULL;
  if (!in->graph) return true;
  args->opt.ref = ref_new(in->graph, in->topo, args->opt.data_seed);
  char err[512];
  bool ok = model_inputs_homed(in, args->opt.ref, err, sizeof err);
  if (!ok) fprintf(stderr, "%s/manifest.yaml: error: %s\n", in->dir, err);
  ok = ok && give_inputs(in, args, 0);
  if (ok && in->prog->batches > 1) {
    args->nbatches = in->prog->batches;
    args->batch_ref = xcalloc((size_t)args->nbatches, sizeof *args->batch_ref);
    args->batch_ref[0] = args->opt.ref;
    for (int b = 1; b < args->nbatches; b++) args->batch_ref[b] = ref_new_batch(args->opt.ref, b);
    args->opt.batch_ref = args->batch_ref;
    ok = give_inputs(in, args, 1);
  }
  if (!ok) free_references(args);
  return ok;
}

// One run from the start: a fresh emulator, the inputs in, the run.  NULL
// after saying why when the emulator cannot start or an --input is bad.
static Emu *run_once(Arena *a, Args *args, EmuInput *in, EmuResult *r) {
  char err[256];
  Emu *e = emu_new(a, in, &args->opt, err, sizeof err);
  if (!e) {
    fprintf(stderr, "tsp-emu: error: %s\n", err);
    return NULL;
  }
  bool ok = true;
  if (args->opt.ref)
    emu_seed_model(e);
  else
    for (int i = 0; i < args->ninputs && ok; i++) ok = load_input(e, in, args->inputs[i]);
  if (!ok) {
    emu_free(e);
    return NULL;
  }
  emu_run(e, r);
  return e;
}

// The run and its outputs; a failure removes what it created.
static int run_and_write(Arena *a, Args *args, EmuInput *in) {
  FILE *report = NULL;
  creating(args->report);
  bool opened = !args->report || (report = open_report(args->report));  // (rank 0's alone)
  if (!ranks_all(opened)) {
    if (report) fclose(report);
    remove_created();
    return 1;
  }
  creating(args->opt.trace_path);
  const Faults *faults = args->opt.faults;
  EmuResult r;
  Emu *e = run_once(a, args, in, &r);
  while (e && faults && fault_run_faulted(faults) && fault_may_replay(faults)) {
    emu_free(e);
    e = run_once(a, args, in, &r);
  }
  progress_done(args->opt.progress);  // before any line of the results
  if (!e) {  // the run never happened
    if (report) fclose(report);
    remove_created();
    return 1;
  }
  bool ok = true;
  for (int i = 0; i < args->ndumps && ok; i++) ok = write_dump(e, in, args->dumps[i]);
  if (report && ok) ok = write_report(report, args->report, &r, &args->opt, in->topo->ndevices);
  else if (report) fclose(report);
  if (!emu_close_trace(e) && ok) {
    fprintf(stderr, "tsp-emu: error: cannot write the trace '%s': %s\n", args->opt.trace_path,
            errno ? strerror(errno) : "an I/O error");
    ok = false;
  }
  if (!ok) remove_created();  // none of this run's outputs stays
  uint64_t crossed, drawn;
  emu_trace_arrows(e, &crossed, &drawn);
  if (ok && drawn < crossed && args->opt.trace_max_vectors > 0)  // a cut the user did not ask for by name
    fprintf(stderr, "tsp-emu: note: the trace draws the first %llu of the %llu vectors that crossed a link as arrows "
                    "(--trace-max-vectors; 0: none)\n", (unsigned long long)drawn, (unsigned long long)crossed);
  emu_free(e);
  if (!ok) return 1;
  r.model_checked = in->graph != NULL;
  emu_print_summary(&r, &args->opt, in->topo->ndevices, stdout);
  return r.nviolations ? EXIT_VIOLATIONS : 0;
}

// Runs a loaded directory: its inputs in, the run (replayed from the start
// while the hardware flags a fault and --replay allows: seed 002 s4.5),
// --dump and --report out for the last run.
static int run_loaded(Arena *a, Args *args, EmuInput *in) {
  int outputs = 2;  // the report and the trace, then each dump's files
  for (int i = 0, files; i < args->ndumps; i++) {
    if (!dump_ready(in, args->dumps[i], &files)) return 1;
    outputs += files;
  }
  created_reserve(outputs);
  cleanup_signals_watch(on_fatal_signal);
  int status = run_and_write(a, args, in);
  cleanup_signals_restore();
  created_free();
  return status;
}

static uint64_t mib_up(uint64_t bytes) { return (bytes + (1u << 20) - 1) >> 20; }

// The run's memory estimate (runtime/memory.c) against --max-memory, or
// without it EMU_DEFAULT_MEMORY_PERCENT of the memory the process may use (the
// machine's, or less when its control group says so); false after
// saying what the run needs.
static bool memory_fits(const EmuInput *in, const Args *a) {
  Reference *one[1] = {a->opt.ref};
  Reference *const *refs = a->batch_ref ? a->batch_ref : one;
  HostLimits host = host_limits(emu_machine_memory(), 0);
  uint64_t limit = a->max_memory_mib ? (uint64_t)a->max_memory_mib << 20 : host.memory / 100 * EMU_DEFAULT_MEMORY_PERCENT;
  if (limit == 0 && !a->max_memory_mib && !host.memory_by_cgroup) return true;  // 0: unknown
  EmuMemory m = emu_memory_estimate(in, refs, a->batch_ref ? a->nbatches : a->opt.ref != NULL, limit);
  if (m.total <= limit) return true;
  char whose[96];
  if (a->max_memory_mib)
    snprintf(whose, sizeof whose, "--max-memory");
  else if (host.memory_by_cgroup)
    snprintf(whose, sizeof whose, "%d%% of the memory this process's control group may use", EMU_DEFAULT_MEMORY_PERCENT);
  else
    snprintf(whose, sizeof whose, "%d%% of this machine's memory", EMU_DEFAULT_MEMORY_PERCENT);
  char reference[64] = "";
  if (m.reference_bytes)
    snprintf(reference, sizeof reference, "%llu MiB for the reference's arrays, ",
             (unsigned long long)mib_up(m.reference_bytes));
  char buffers[64] = "";
  if (m.buffer_bytes)
    snprintf(buffers, sizeof buffers, "%llu MiB for the units' buffers, ", (unsigned long long)mib_up(m.buffer_bytes));
  // The parts in whole MiB, rounded up, and "besides" what makes them add
  // up to the total (each rounded up alone, they came to a MiB more).
  uint64_t parts = mib_up(m.sram_bytes) + mib_up(m.buffer_bytes) + mib_up(m.reference_bytes);
  uint64_t besides = mib_up(m.total) > parts ? mib_up(m.total) - parts : 0;
  char where[64] = "", ranks[128] = "";
  if (m.nranks > 1) snprintf(where, sizeof where, " on MPI rank %d of %d, the largest", m.rank, m.nranks);
  if (m.ranks_to_fit && m.ranks_to_fit != m.nranks)
    snprintf(ranks, sizeof ranks, ", or run it on %d MPI ranks (mpirun -np %d tsp-emu-mpi), each under the limit",
             m.ranks_to_fit, m.ranks_to_fit);
  fprintf(stderr,
          "tsp-emu: error: this run needs an estimated %llu MiB%s (%llu MiB for the %llu SRAM pages the program can "
          "write on %d device%s, %s%s%llu MiB besides), over the %llu MiB limit (%s); raise it with --max-memory "
          "MIB%s\n",
          (unsigned long long)mib_up(m.total), where, (unsigned long long)mib_up(m.sram_bytes),
          (unsigned long long)m.sram_pages, m.devices, m.devices == 1 ? "" : "s", buffers, reference,
          (unsigned long long)besides, (unsigned long long)(limit >> 20), whose, ranks);
  return false;
}

// The faults the options ask for, checked against the topology (NULL: none
// asked for); false after saying why.
static bool make_faults(const EmuInput *in, Args *args) {
  args->opt.faults = NULL;
  if (args->ber == 0 && args->nfaults == 0) return true;
  char err[256];
  args->opt.faults = fault_new(in->topo, args->ber, args->faults, args->nfaults, args->replays, args->opt.seed, err, sizeof err);
  if (!args->opt.faults) fprintf(stderr, "tsp-emu: error: %s\n", err);
  return args->opt.faults != NULL;
}

// Across ranks, what needs every device in one process is refused: the
// trace, --dump, faults, --threads, and a Cholesky output's factor check.
static bool ranks_allow(const Args *a) {
  const char *what = a->opt.trace_path ? "--trace" : a->ndumps ? "--dump" : a->ber > 0 || a->nfaults ? "a fault option"
                     : a->opt.threads ? "--threads" : NULL;
  if (ranks_count() == 1 || !what) return true;
  fprintf(stderr, "tsp-emu: error: %s is not supported across %d MPI ranks; run tsp-emu (or mpirun -np 1)\n", what,
          ranks_count());
  return false;
}

static bool ranks_allow_graph(const EmuInput *in) {
  for (int i = 0; ranks_count() > 1 && in->graph && i < in->graph->outputs.len; i++) {
    const Tensor *t = in->graph->outputs.data[i];
    if (t->def && t->def->kind == OP_CHOLESKY) {
      fprintf(stderr, "tsp-emu: error: output '%s' is a Cholesky factor, checked across devices: not supported across "
                      "%d MPI ranks; run tsp-emu\n", t->name, ranks_count());
      return false;
    }
  }
  return true;
}

static int run(Arena *a, Args *args) {
  Diag d;
  diag_init(&d, stderr);
  Progress progress;
  progress_init(&progress, stderr, "tsp-emu", args->quiet);
  d.progress = args->opt.progress = &progress;
  EmuInput in;
  if (!emu_load_dir(a, &d, "tsp-emu", args->dir, &in) || !ranks_allow_graph(&in) || !outputs_spare_run(args, &in))
    return 1;
  if (!args->drift_given) {  // the topology's: a bound, or each device's exact drift
    args->opt.drift_ppm = in.topo->drift_ppm;
    args->opt.device_drift_ppm = in.topo->device_drift_ppm;
  }
  if (!make_faults(&in, args)) return 1;
  if (!make_reference(&in, args)) {
    fault_free(args->opt.faults);
    return 1;
  }
  if (!memory_fits(&in, args)) {
    free_references(args);
    fault_free(args->opt.faults);
    return 1;
  }
  int status = run_loaded(a, args, &in);
  free_references(args);
  fault_free(args->opt.faults);
  return status;
}

// Ranks other than 0 print nothing: rank 0 says it all (every rank finds
// a bad input alike) and writes the report.
static void quiet_rank(void) {
  if (ranks_me() == 0) return;
  if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) die("tsp-emu: cannot silence rank %d", ranks_me());
}

int main(int argc, char **argv) {
  num_blas_prefer_cpu_kernels(argv);
  ranks_init(&argc, &argv);
  quiet_rank();
  Args args = {0};
  int status = 1;
  if (parse_args(argc, argv, &args) && ranks_allow(&args)) {
    if (ranks_me() != 0) args.report = NULL;
    Arena a = {0};
    status = run(&a, &args);
    arena_free(&a);
  }
  ranks_end();
  return status;
}

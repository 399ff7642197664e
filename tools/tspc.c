// tspc.c: the compiler driver.  Reads the command line, loads the topology,
// runs the pass pipeline (passes/pipeline.c) over the model, and writes the
// output directory atomically (support/outdir.c).
//
//   tspc MODEL.tg -t TOPOLOGY.yaml [-o OUT/] [-g] [--dump-after=PASS|all] [--stats] [--emit=asm,dot,trace,links]
//   tspc -t TOPOLOGY.yaml --describe [--ports]
//
// Exit status: 0 on success, 1 on any error (the diagnostics say which).
#include "../backend/backend.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

// The sanitizer build verifies the IR after every pass whether asked or not.
#ifndef TSPC_VERIFY_BY_DEFAULT
#define TSPC_VERIFY_BY_DEFAULT 0
#endif

typedef struct Options {
  const char *model;
  const char *topology;
  const char *out;
  const char *dump_after;
  const char *stop_after;  // --stop-after: run the pipeline up to this pass, write nothing
  double drift_ppm;        // --drift-ppm (< 0: not given)
  int64_t launch_window;   // --launch-window (< 0: not given)
  bool emit_asm;           // --emit=asm
  bool emit_dot;           // --emit=dot
  bool debug;              // -g: a debug section in every binary
  bool emit_trace;         // --emit=trace
  bool emit_links;         // --emit=links
  int64_t trace_max_vectors;  // --trace-max-vectors: flow arrows in trace.json
  bool trace_max_given;       // --trace-max-vectors was given
  AlgoKind algo;    // --algo: forced on every collective
  RouteMode route;  // --route
  bool partition_none;  // --partition=none
  int batches;          // --batches (0: not given, one inference)
  bool quiet;           // --quiet: no progress line
  int tree_chunks;  // --tree-chunks (0: chosen by the compiler)
  bool algo_given;
  bool describe, ports, stats, verify_each;
  int max_errors;
} Options;

static void usage(FILE *out) {
  fprintf(out,
          "usage: tspc MODEL.tg -t TOPOLOGY.yaml [-o OUT] [options]\n"
          "       tspc -t TOPOLOGY.yaml --describe [--ports]\n"
          "\n"
          "  -t, --topology FILE    the system to compile for (docs/topology.md)\n"
          "  -o, --output DIR       write the device binaries and manifest.yaml to DIR\n"
          "      --emit=asm         also write each device's assembly (devNNNN.tsa) to DIR\n"
          "      --emit=dot         also write each collective's rings or trees (coll-NAME.dot) to DIR\n"
          "      --emit=trace       also write the schedule as a Chrome/Perfetto trace (trace.json) to DIR\n"
          "      --emit=links       also write every link direction's load (links.yaml, links.svg) to DIR\n"
          "                         (a comma-separated list: --emit=asm,dot,trace,links)\n"
          "      --trace-max-vectors=N  link arrows in trace.json, one a vector (default %d; 0: none)\n"
          "  -g, --debug            give every binary a debug section: each instruction's schedule\n"
          "                         cycle, the op or transfer it serves and its .tg line (tsp-objdump -S)\n"
          "      --describe         print the topology's devices, links and diameter as YAML\n"
          "      --ports            with --describe: every device's numbered ports\n"
          "      --algo=NAME        lower every collective by NAME, whatever the model says\n"
          "      --route=MODE       auto (default: spread under load where that beats all-minimal,\n"
          "                         schedule by schedule), minimal or nonminimal paths\n"
          "      --partition=MODE   auto (default: split matmuls and cut pipeline stages where the\n"
          "                         estimate says so), or none (unplaced tensors with their consumers)\n"
          "      --batches=N        run N inferences in flight (params shared), for a pipeline's\n"
          "                         throughput; --stats prints latency and throughput (default 1)\n"
          "      --tree-chunks=N    cut each tree's share into N chunks (tree algorithms; default:\n"
          "                         the compiler's cycle counts choose)\n"
          "      --drift-ppm=P      plan for clocks off by up to P ppm (default: the topology's\n"
          "                         drift_ppm, at least %g)\n"
          "      --launch-window=C  cycles the alignment waits for every device to start (default %d)\n"
          "      --dump-after=PASS  print the IR after PASS (or 'all') on stderr\n"
          "      --stop-after=PASS  run the passes up to PASS only, and write nothing\n"
          "      --max-errors=N     stop reporting after N errors (default %d; 0: no limit)\n"
          "      --stats            print compile figures on stderr, and each collective's\n"
          "                         cycles against its lower bounds (docs/collectives.md)\n"
          "      --verify-each      check the IR's invariants after every pass\n"
          "      --quiet            no progress line (shown on a terminal after 2 s)\n"
          "      --version, --help\n"
          "\n"
          "passes:\n",
          IR_TRACE_DEFAULT_MAX_ARROWS, SYNC_DEFAULT_DRIFT_PPM, SYNC_DEFAULT_LAUNCH_WINDOW, DIAG_DEFAULT_MAX_ERRORS);
  for (int i = 0; i < pass_count; i++)
    fprintf(out, "  %-8s %s\n", pass_pipeline[i].name, pass_pipeline[i].summary);
}

enum {
  OPT_DESCRIBE = 256, OPT_ALGO, OPT_ROUTE, OPT_PARTITION, OPT_BATCHES, OPT_QUIET, OPT_TREE_CHUNKS, OPT_PORTS, OPT_DUMP_AFTER, OPT_STOP_AFTER, OPT_MAX_ERRORS, OPT_STATS,
  OPT_VERIFY, OPT_EMIT, OPT_TRACE_MAX, OPT_DRIFT, OPT_LAUNCH, OPT_VERSION, OPT_HELP
};

// The longest launch window --launch-window takes (cycles): a named limit,
// about a second at 900 MHz.
#define TSPC_MAX_LAUNCH_WINDOW 1000000000

// "auto, ring, biring, ...": every name --algo takes.
static const char *algo_list(void) {
  static char list[256];
  size_t n = 0;
  for (int i = 0; i < ALGO_COUNT && n < sizeof list; i++)
    n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", ir_algo_names[i]);
  return list;
}

static bool parse_route_mode(const char *name, RouteMode *out) {
  for (int i = 0; i < ROUTE_MODE_COUNT; i++)
    if (!strcmp(name, route_mode_names[i])) {
      *out = (RouteMode)i;
      return true;
    }
  return false;
}

// --emit=LIST: a comma-separated list of asm, dot, trace and links; false
// (with a message) on anything else.
static bool parse_emit(const char *list, Options *o, Diag *d) {
  const struct {
    const char *name;
    bool *flag;
  } outputs[] = {{"asm", &o->emit_asm}, {"dot", &o->emit_dot}, {"trace", &o->emit_trace}, {"links", &o->emit_links}};
  const char *p = list;
  for (;;) {
    size_t len = strcspn(p, ",");
    size_t i = 0;
    while (i < ARRAY_LEN(outputs) && !(strlen(outputs[i].name) == len && !strncmp(p, outputs[i].name, len))) i++;
    if (i == ARRAY_LEN(outputs)) {
      diag_tool_error(d, "tspc", "unknown output '%.*s' for --emit (known: asm, dot, trace, links)", (int)len, p);
      return false;
    }
    *outputs[i].flag = true;
    if (!p[len]) return true;
    p += len + 1;
  }
}

// An integer option's value from lo to hi (hi INT64_MAX: no upper bound),
// or false after saying what it needs: "--X needs a count from 1 to 8".
static bool read_count(Diag *d, const char *option, const char *noun, const char *arg, int64_t lo, int64_t hi,
                       int64_t *out) {
  if (str_to_i64(arg, out) && *out >= lo && *out <= hi) return true;
  if (hi == INT64_MAX)
    diag_tool_error(d, "tspc", "%s needs a %s from %lld on, got '%s'", option, noun, (long long)lo, arg);
  else
    diag_tool_error(d, "tspc", "%s needs a %s from %lld to %lld, got '%s'", option, noun, (long long)lo,
                    (long long)hi, arg);
  return false;
}

// Parses argv into o; false (with a message) on a usage error.
static bool parse_options(int argc, char **argv, Options *o, Diag *d) {
  static const struct option longopts[] = {
      {"topology", required_argument, 0, 't'},    {"output", required_argument, 0, 'o'},
      {"describe", no_argument, 0, OPT_DESCRIBE}, {"ports", no_argument, 0, OPT_PORTS},
      {"dump-after", required_argument, 0, OPT_DUMP_AFTER},
      {"stop-after", required_argument, 0, OPT_STOP_AFTER},
      {"emit", required_argument, 0, OPT_EMIT},   {"debug", no_argument, 0, 'g'},
      {"trace-max-vectors", required_argument, 0, OPT_TRACE_MAX},
      {"drift-ppm", required_argument, 0, OPT_DRIFT},
      {"launch-window", required_argument, 0, OPT_LAUNCH},
      {"algo", required_argument, 0, OPT_ALGO},
      {"route", required_argument, 0, OPT_ROUTE},
      {"partition", required_argument, 0, OPT_PARTITION},
      {"batches", required_argument, 0, OPT_BATCHES},
      {"quiet", no_argument, 0, OPT_QUIET},
      {"tree-chunks", required_argument, 0, OPT_TREE_CHUNKS},
      {"max-errors", required_argument, 0, OPT_MAX_ERRORS},
      {"stats", no_argument, 0, OPT_STATS},       {"version", no_argument, 0, OPT_VERSION},
      {"verify-each", no_argument, 0, OPT_VERIFY},
      {"help", no_argument, 0, OPT_HELP},         {0, 0, 0, 0}};
  *o = (Options){.max_errors = DIAG_DEFAULT_MAX_ERRORS, .drift_ppm = -1, .launch_window = -1,
                 .trace_max_vectors = IR_TRACE_DEFAULT_MAX_ARROWS};
  double ppm;
  opterr = 0;
  int ch;
  int64_t n;
  while ((ch = getopt_long(argc, argv, ":t:o:gh", longopts, NULL)) != -1) {
    switch (ch) {
    case 't': o->topology = optarg; break;
    case 'g': o->debug = true; break;
    case 'o': o->out = optarg; break;
    case OPT_DESCRIBE: o->describe = true; break;
    case OPT_PORTS: o->ports = true; break;
    case OPT_STATS: o->stats = true; break;
    case OPT_VERIFY: o->verify_each = true; break;
    case OPT_DUMP_AFTER:
      if (strcmp(optarg, "all") && !pass_lookup(optarg)) {
        diag_tool_error(d, "tspc", "unknown pass '%s' for --dump-after (try --help)", optarg);
        return false;
      }
      o->dump_after = optarg;
      break;
    case OPT_STOP_AFTER:
      if (!pass_lookup(optarg)) {
        diag_tool_error(d, "tspc", "unknown pass '%s' for --stop-after (try --help)", optarg);
        return false;
      }
      o->stop_after = optarg;
      break;
    case OPT_EMIT:
      if (!parse_emit(optarg, o, d)) return false;
      break;
    case OPT_TRACE_MAX:
      if (!read_count(d, "--trace-max-vectors", "count", optarg, 0, INT64_MAX, &n)) return false;
      o->trace_max_vectors = n;
      o->trace_max_given = true;
      break;
    case OPT_DRIFT:
      if (!str_to_double(optarg, &ppm) || !(ppm >= 0 && ppm <= FE_MAX_DRIFT_PPM)) {
        diag_tool_error(d, "tspc", "--drift-ppm needs a number from 0 to %g, got '%s'", (double)FE_MAX_DRIFT_PPM,
                        optarg);
        return false;
      }
      o->drift_ppm = ppm;
      break;
    case OPT_LAUNCH:
      if (!read_count(d, "--launch-window", "cycle count", optarg, 0, TSPC_MAX_LAUNCH_WINDOW, &n)) return false;
      o->launch_window = n;
      break;
    case OPT_ALGO:
      if (!ir_algo_lookup(optarg, &o->algo)) {
        diag_tool_error(d, "tspc", "unknown algorithm '%s' for --algo (known: %s)", optarg, algo_list());
        return false;
      }
      o->algo_given = true;
      break;
    case OPT_ROUTE:
      if (!parse_route_mode(optarg, &o->route)) {
        diag_tool_error(d, "tspc", "unknown routing '%s' for --route (known: auto, minimal, nonminimal)", optarg);
        return false;
      }
      break;
    case OPT_QUIET: o->quiet = true; break;
    case OPT_BATCHES:
      if (!read_count(d, "--batches", "count", optarg, 1, PASS_MAX_BATCHES, &n)) return false;
      o->batches = (int)n;
      break;
    case OPT_PARTITION:
      if (strcmp(optarg, "auto") && strcmp(optarg, "none")) {
        diag_tool_error(d, "tspc", "unknown partitioning '%s' for --partition (known: auto, none)", optarg);
        return false;
      }
      o->partition_none = !strcmp(optarg, "none");
      break;
    case OPT_TREE_CHUNKS:
      if (!read_count(d, "--tree-chunks", "count", optarg, 1, TREE_MAX_CHUNKS, &n)) return false;
      o->tree_chunks = (int)n;
      break;
    case OPT_MAX_ERRORS:
      if (!read_count(d, "--max-errors", "count", optarg, 0, 1000000, &n)) return false;
      o->max_errors = (int)n;
      break;
    case OPT_VERSION: printf("tspc %s\n", TSPC_VERSION); exit(0);
    case 'h':
    case OPT_HELP: usage(stdout); exit(0);
    case ':': diag_tool_error(d, "tspc", "option '%s' needs a value", argv[optind - 1]); return false;
    default: {
      char why[512];
      diag_tool_error(d, "tspc", "%s", cli_bad_option(argv[optind - 1], optopt, longopts, why, sizeof why));
      return false;
    }
    }
  }
  if (optind < argc) o->model = argv[optind++];
  if (optind < argc) {
    diag_tool_error(d, "tspc", "more than one model given ('%s' and '%s')", o->model, argv[optind]);
    return false;
  }
  if (!o->topology) {
    diag_tool_error(d, "tspc", "no topology: give one with -t FILE.yaml");
    return false;
  }
  if (!o->describe && !o->model) {
    diag_tool_error(d, "tspc", "no model: give a .tg file, or --describe the topology");
    return false;
  }
  if ((o->emit_asm || o->emit_dot || o->emit_trace || o->emit_links) && !o->out) {
    diag_tool_error(d, "tspc", "--emit=%s writes beside the binaries: give -o DIR",
                    o->emit_asm ? "asm" : o->emit_dot ? "dot" : o->emit_trace ? "trace" : "links");
    return false;
  }
  if (o->stop_after && o->out) {
    diag_tool_error(d, "tspc", "--stop-after writes nothing: drop -o");
    return false;
  }
  if (o->stop_after && o->dump_after && strcmp(o->dump_after, "all") &&
      pass_lookup(o->dump_after) > pass_lookup(o->stop_after)) {
    diag_tool_error(d, "tspc", "--dump-after=%s comes after --stop-after=%s: that pass would not run", o->dump_after,
                    o->stop_after);
    return false;
  }
  if (o->trace_max_given && !o->emit_trace) {
    diag_tool_error(d, "tspc", "--trace-max-vectors only applies to --emit=trace");
    return false;
  }
  if (o->ports && !o->describe) {
    diag_tool_error(d, "tspc", "--ports only applies to --describe");
    return false;
  }
  if (o->describe && (o->model || o->out || o->dump_after || o->stats)) {
    diag_tool_error(d, "tspc", "--describe reads only the topology: drop the model, -o, "
                               "--dump-after and --stats");
    return false;
  }
  return true;
}

static bool write_outputs(Compilation *c, const Options *o) {
  TraceCounts counts = {0};
  ManifestInfo m = {.tool = "tspc", .source = c->src, .topo = c->topo, .graph = c->graph,
                    .program = c->program, .dag = c->dag, .sync = &c->sync, .algos = c->algos,
                    .emit_asm = o->emit_asm, .emit_dot = o->emit_dot, .emit_trace = o->emit_trace,
                    .emit_links = o->emit_links, .trace_max_arrows = (uint64_t)o->trace_max_vectors,
                    .trace_counts = &counts, .debug = o->debug};
  if (!be_write_outdir(&m, o->out, &c->diag)) return false;
  if (counts.arrows_drawn < counts.arrows && o->trace_max_vectors > 0)  // a cut the user did not ask for by name
    fprintf(stderr, "tspc: note: trace.json draws the first %llu of the %llu vectors that cross a link as arrows "
                    "(--trace-max-vectors; 0: none)\n", (unsigned long long)counts.arrows_drawn,
            (unsigned long long)counts.arrows);
  return true;
}

// One line a collective: its cycles against its lower bounds (report.c).
static void print_collectives(const Compilation *c) {
  CollectiveReport *reports = xmalloc(sizeof(CollectiveReport) * ((size_t)c->graph->ops.len + 1));
  int n = be_collective_reports(c->topo, c->dag, &c->sync, c->algos, reports);
  for (int i = 0; i < n; i++) be_print_collective_report(&reports[i], stderr);
  free(reports);
}

// With --batches: when each inference's last node finishes (schedule
// cycles), the first one's latency, the steady-state interval between
// inferences and the throughput it gives at the clock.
static void print_batches(const Compilation *c) {
  int n = c->batches;
  int64_t *finish = xcalloc((size_t)n, sizeof(int64_t));
  for (int i = 0; i < c->dag->nodes.len; i++) {
    const DagNode *d = c->dag->nodes.data[i];
    if (d->op) finish[d->op->result->batch] = MAX(finish[d->op->result->batch], d->finish);
  }
  fprintf(stderr, "batches: %d\nbatch_finish_cycles: [", n);
  for (int b = 0; b < n; b++) fprintf(stderr, "%s%lld", b ? ", " : "", (long long)finish[b]);
  double interval = (double)(finish[n - 1] - finish[0]) / (n - 1), mhz = c->topo->clock_mhz;
  fprintf(stderr, "]\nlatency_cycles: %lld\nlatency_us: %.1f\n", (long long)finish[0], (double)finish[0] / mhz);
  fprintf(stderr, "interval_cycles: %.0f\nthroughput_per_s: %.1f\n", interval, interval > 0 ? mhz * 1e6 / interval : 0);
  bool all = c->batch_runs;
  for (int d = 0; all && d < c->topo->ndevices; d++) all = c->runs_on[d];
  fprintf(stderr, "batch_order: %s\n", all              ? "runs"
                                     : c->batch_runs    ? "runs, one inference at a time where the partition's SRAM estimate says"
                                     : c->runs_given_up ? "one inference at a time (by runs, code generation found no room)"
                                                        : "one inference at a time (the partition's SRAM estimate)");
  free(finish);
}

// The model's result a cholesky op (whole, or a piece of one) computes.
static const Tensor *cholesky_of(const Op *op) { return op->chol.role == CHOL_WHOLE ? op->result : op->chol.of; }

// One line a cholesky: its cycles (the first start of its pieces' nodes
// to the last finish), the devices they ran on and the TFLOPs achieved at
// the clock, counting p^3 / 3 operations for order p (seed 002 s5.5).
static void print_cholesky(const Compilation *c) {
  bool *on = xcalloc((size_t)c->topo->ndevices, sizeof(bool));
  for (int i = 0; i < c->graph->ops.len; i++) {
    const Op *op = c->graph->ops.data[i];
    bool first = op->chol.role == CHOL_WHOLE || (op->chol.role == CHOL_INIT && op->chol.index == 0);
    if (op->kind != OP_CHOLESKY || !first) continue;  // one line a factor: its whole op, or its first block's init
    int64_t start = INT64_MAX, finish = 0;
    int devices = 0;
    memset(on, 0, sizeof(bool) * (size_t)c->topo->ndevices);
    for (int k = 0; k < c->dag->nodes.len; k++) {
      const DagNode *d = c->dag->nodes.data[k];
      if (!d->op || d->op->kind != OP_CHOLESKY || cholesky_of(d->op) != cholesky_of(op)) continue;
      start = MIN(start, d->start), finish = MAX(finish, d->finish);
      if (d->kind != NODE_COMPUTE) continue;
      devices += !on[d->device], on[d->device] = true;
    }
    // An `@ each` factor is one copy a device, each its own p^3/3.
    bool each = op->result->place.kind == PLACE_EACH;
    double p = (double)op->chol.order, us = (double)(finish - start + 1) / c->topo->clock_mhz;
    fprintf(stderr, "cholesky.%s: order %.0f %s on %d device%s%s, %lld cycles, %.1f us, %.3f TFLOPs (p^3/3 operations%s)\n",
            cholesky_of(op)->name, p, ir_dtype_names[op->result->dtype], devices, devices == 1 ? "" : "s",
            each ? " (a factor each)" : "", (long long)(finish - start + 1), us,
            p * p * p / 3 * (each ? devices : 1) / us / 1e6, each ? " a factor" : "");
  }
  free(on);
}

static void print_stats(const Compilation *c) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  fprintf(stderr, "*** Statistics ***\n");
  fprintf(stderr, "devices: %d\nlinks: %d\n", c->topo->ndevices, c->topo->links.len);
  if (c->graph) fprintf(stderr, "tensors: %d\nops: %d\n", c->graph->tensors.len, c->graph->ops.len);
  if (c->dag) fprintf(stderr, "dag_nodes: %d\n", c->dag->nodes.len);
  if (c->dag && c->dag->scheduled) fprintf(stderr, "makespan_cycles: %lld\n", (long long)c->dag->makespan);
  if (c->dag && c->dag->scheduled) fprintf(stderr, "schedule_route_tries: %lld\n", (long long)c->dag->tries);
  if (c->program) fprintf(stderr, "predicted_cycles: %lld\n", (long long)c->program->predicted_cycles);
  if (c->dag && c->dag->scheduled && c->batches > 1) print_batches(c);
  if (c->dag && c->dag->scheduled) print_cholesky(c);
  for (int i = 0; i < pass_count; i++)
    fprintf(stderr, "time.%s: %.6f s\n", pass_pipeline[i].name, c->pass_seconds[i]);
  fprintf(stderr, "ir_bytes: %zu\npeak_rss_kib: %ld\n", c->arena.used, ru.ru_maxrss);
  if (c->dag && c->dag->scheduled && c->dag->programs)
    fprintf(stderr, "compute_programs: %lld (%lld stamped)\n", (long long)c->dag->programs, (long long)c->dag->stamped);
  if (c->choice_log) fputs(c->choice_log, stderr);
  if (c->dag && c->dag->scheduled) print_collectives(c);
  if (c->program) be_print_unit_report(c->topo, c->program, stderr);
}

static int compile(Compilation *c, const Options *o) {
  const char *err;
  c->src = src_read(&c->arena, o->model, &err);
  if (!c->src) {
    diag_tool_error(&c->diag, "tspc", "cannot read model '%s': %s", o->model, err);
    return 1;
  }
  if (o->out && !outdir_check(o->out, &c->diag, "tspc")) return 1;  // before any work
  bool ok = pass_run_pipeline(c, o->dump_after, o->stop_after);
  progress_done(c->progress);
  if (!ok) return 1;
  if (o->out && !write_outputs(c, o)) return 1;
  if (o->stats) print_stats(c);
  if (!o->out && !o->stop_after && !o->dump_after && !o->stats)  // a compile that shows and writes nothing: say so
    fprintf(stderr, "tspc: note: compiled for %d devices (predicted %lld cycles) and wrote nothing: give -o DIR to write the binaries\n",
            c->topo->ndevices, (long long)c->program->predicted_cycles);
  return 0;
}

int main(int argc, char **argv) {
  Compilation c = {0};
  diag_init(&c.diag, stderr);
  Options o;
  if (!parse_options(argc, argv, &o, &c.diag)) return 1;
  c.diag.max_errors = o.max_errors;
  c.verify_each = o.verify_each || TSPC_VERIFY_BY_DEFAULT;
  c.algo_forced = o.algo_given;
  c.forced_algo = o.algo;
  c.route_mode = o.route;
  c.partition_none = o.partition_none;
  c.batches = o.batches;
  c.annotate = o.emit_asm || o.emit_trace || o.debug || (o.dump_after && (!strcmp(o.dump_after, "codegen") || !strcmp(o.dump_after, "all")));
  c.tree_chunks = o.tree_chunks;
  c.drift_ppm = o.drift_ppm;
  c.launch_window = o.launch_window;
  int status = 1;
  Progress progress;
  progress_init(&progress, stderr, "tspc", o.quiet);
  c.progress = c.diag.progress = &progress;
  c.topo = fe_load_topology(&c.arena, &c.diag, "tspc", o.topology);
  if (c.topo && o.describe) {
    ir_topo_describe(c.topo, stdout, o.ports);
    status = fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
    if (status) diag_tool_error(&c.diag, "tspc", "cannot write the description: %s", strerror(errno));
  } else if (c.topo) {
    fe_warn_dropped_roles(&c.diag, c.topo);
    status = compile(&c, &o);
  }
  progress_done(&progress);
  arena_free(&c.arena);
  return status;
}

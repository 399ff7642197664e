// pipeline.c: the pass table and the loop that runs it.  Part of passes/;
// the driver (tools/tspc.c) calls pass_run_pipeline once per compilation.
#include "passes.h"

#include <string.h>
#include <time.h>

// ---- parse: .tg text -> Ast (frontend/parse.c) ----
static bool run_parse(Compilation *c) {
  c->ast = fe_parse(&c->arena, &c->diag, c->src);
  return c->ast != NULL;
}
static void dump_parse(const Compilation *c, FILE *out) { fe_ast_dump(c->ast, out); }

// ---- check: Ast -> Graph (frontend/check.c) ----
static bool run_check(Compilation *c) {
  c->graph = fe_check(&c->arena, &c->diag, c->ast, c->topo);
  return c->graph != NULL;
}
static void dump_check(const Compilation *c, FILE *out) { ir_graph_dump(c->graph, out); }


// ---- batch: N inferences in flight (passes/batch.c) ----
static void dump_batch(const Compilation *c, FILE *out) { ir_graph_dump(c->graph, out); }

// ---- dag: graph -> DAG of nodes (passes/dag.c) ----
static void dump_dag(const Compilation *c, FILE *out) { ir_dag_dump(c->dag, out); }

const Pass pass_pipeline[] = {
    {"parse", "read the .tg source into an AST", run_parse, dump_parse},
    {"check", "resolve names, unroll repeat, check shapes and placements", run_check, dump_check},
    {"partition", "place unplaced tensors: split big matmuls, cut pipeline stages, check SRAM", pass_partition,
     partition_dump},
    {"batch", "copy every input, value and output once per inference in flight (--batches)", pass_batch,
     dump_batch},
    {"dag", "build compute, transfer and collective nodes with their dependencies", pass_dag, dump_dag},
    {"sync", "plan receive slack and resyncs for the clocks' drift and the links' jitter", pass_sync, sync_dump},
    {"choose", "give each algo=auto collective the algorithm that runs it fastest (alone, then jointly)",
     pass_choose, choose_dump},
    {"lower", "replace each collective by the transfers of its algorithm", pass_lower, dump_dag},
    {"route", "choose the paths of every transfer's vectors", pass_route, dump_dag},
    {"schedule", "give every node and route its cycles, no link or unit used twice at once", pass_schedule,
     dump_dag},
    {"codegen", "write every unit's instruction stream, with the preamble and the resyncs", pass_codegen,
     codegen_dump},
};
const int pass_count = (int)ARRAY_LEN(pass_pipeline);
_Static_assert(ARRAY_LEN(pass_pipeline) <= PASS_MAX, "raise PASS_MAX");

const Pass *pass_lookup(const char *name) {
  for (int i = 0; i < pass_count; i++)
    if (!strcmp(pass_pipeline[i].name, name)) return &pass_pipeline[i];
  return NULL;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// The IR a pass leaves must satisfy the verifier; if not, the pass has a
// bug, reported as an internal error naming it.
static void verify_after(const Compilation *c, const Pass *p) {
  char err[256];
  if (c->graph && !ir_graph_verify(c->graph, c->topo->ndevices, err, sizeof err))
    die("the IR after pass '%s' is broken: %s", p->name, err);
  if (c->dag && !ir_dag_verify(c->dag, c->topo, err, sizeof err))
    die("the DAG after pass '%s' is broken: %s", p->name, err);
  if (c->program && !ir_program_verify(c->program, err, sizeof err))
    die("the program after pass '%s' is broken: %s", p->name, err);
}

static bool run_passes(Compilation *c, const char *dump_after, const char *stop_after, int first) {
  for (int i = first; i < pass_count; i++) {
    const Pass *p = &pass_pipeline[i];
    if (c->progress) progress_update(c->progress, p->name, (double)i / pass_count);
    double start = now_seconds();
    bool ok = p->run(c);
    c->pass_seconds[i] += now_seconds() - start;
    if (!ok) return false;
    if (c->verify_each) verify_after(c, p);
    if (dump_after && (!strcmp(dump_after, "all") || !strcmp(dump_after, p->name))) {
      if (c->progress) progress_done(c->progress);
      fprintf(stderr, "*** IR Dump After %s ***\n", p->name);
      p->dump(c, stderr);
    }
    if (stop_after && !strcmp(stop_after, p->name)) break;
  }
  return true;
}

// With several inferences in flight, the devices work on them by runs when
// the partitioner's estimate says the SRAM holds that (dag.c); when code
// generation finds it does not after all, the model is compiled again from
// the DAG on with each device computing one inference at a time, which is
// what the estimate plans for (its --stats say so: batch_order).
bool pass_run_pipeline(Compilation *c, const char *dump_after, const char *stop_after) {
  c->keep_trials = !dump_after && !stop_after;
  bool ok = run_passes(c, dump_after, stop_after, 0);
  if (!ok && c->runs_no_room) {
    c->batch_runs = c->runs_no_room = false;
    c->runs_given_up = true;
    c->trial_dag = NULL;
    if (dump_after)
      fprintf(stderr, "*** Again from dag: by runs, code generation found no room; one inference at a time ***\n");
    ok = run_passes(c, dump_after, stop_after, (int)(pass_lookup("dag") - pass_pipeline));
  }
  lower_trees_forget(c);
  ring_cycles_forget(c);
  schedule_forget_tables(c);
  return ok;
}

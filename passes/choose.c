// choose.c: algo=auto, the choice of each collective's algorithm.  Part of
// passes/, after sync and before lower; it fills c->algos, which lower
// then follows.
//
// A collective's cost under an algorithm is the makespan of that
// collective alone (no other node), lowered, routed minimally and
// scheduled: an exact schedule, not an estimate, but of a DAG a fraction of
// the model's size, with the cheap routing (--route=auto's load-aware
// spreading is not tried here).  Costs are cached by what they depend on (kind,
// reduction, dtype, bytes, group, in place or staged), so a model
// repeating one collective (a layer's allreduce in every layer) pays for
// each algorithm once.  Candidates are tried under branch and bound: a
// schedule is abandoned as soon as its makespan passes the best so far, so
// a candidate that cannot win costs only the part of its schedule that
// shows it; they go in the order of their chain bounds (lower_chain_bound,
// none first), and one whose bound is above the best is not tried.  A lone
// applicable algorithm is not tried at all.
//
// Collectives that share the network are then chosen jointly: when the
// model holds more than one collective left to auto, or anything besides
// it, the whole model is scheduled with each collective's own winner and
// with every single algorithm that applies to all of them (again under
// branch and bound), and the fastest assignment is kept.  These trials
// are the compile's (routed and scheduled as compiled, tree algorithms at
// the chunk counts they would be given), so the model auto compiles is
// never slower than one with a single algorithm forced; the winner's is
// kept for lower, route and schedule.  A model that is one collective
// alone is checked the same way, its winner as compiled against every
// other algorithm, when its schedule is small enough for that to be cheap
// (CHOOSE_ALONE_RECHECK_TRIES; above it a lone collective may still
// compile slower than under a forced algorithm that spreads better:
// docs/passes.md).  Ties keep the
// earlier option: the per-collective winners, then registry order; within
// one collective a tie goes to the candidate whose transfers cross fewer
// links (the same cycles with less of the network).  --stats prints what
// was tried, what it cost and what won.
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#define ABANDONED SCHEDULE_ABANDONED  // a trial's makespan passed the bound

// One cached isolated cost.
typedef struct Cost {
  const Op *like;    // a collective with this signature
  int ngroup;
  const int *group;
  bool in_place;
  int64_t bytes;
  AlgoKind algo;
  int divisor;       // the tree engine's chunk divisor it was tried with (1: the formula's count)
  bool as_compiled;  // routed and scheduled as the compile will, not minimally
  int64_t cycles;    // -1: refused, ABANDONED: passed `bound`
  int64_t bound;     // the bound it was tried under (-1: none)
  int64_t link_vectors;  // vectors x hops of its transfers, the tie-break
  bool cached;       // (as returned) found in the cache, not scheduled again
} Cost;

typedef struct Chooser {
  Compilation *c;
  Cost *cache;       // malloc'd, not in the arena: best_alone may roll the arena back past its growth
  int ncache, cache_cap;
  FILE *log;         // what was tried, for --stats
} Chooser;

static void cache_put(Chooser *ch, Cost k) {
  if (ch->ncache == ch->cache_cap) {
    ch->cache_cap = ch->cache_cap ? 2 * ch->cache_cap : 16;
    ch->cache = xrealloc(ch->cache, sizeof *ch->cache * (size_t)ch->cache_cap);
  }
  ch->cache[ch->ncache++] = k;
}

// The tree engine's chunk divisors the search tries (chunk_round, one_count,
// whole_at_every_divisor).
static const int divisors[] = TREE_CHUNK_DIVISORS;

static RouteMode trial_route(const Compilation *c) { return c->route_mode == ROUTE_AUTO ? ROUTE_MINIMAL : c->route_mode; }

// Vectors times hops over every transfer of a routed DAG.
static int64_t link_vectors(const Dag *d) {
  int64_t sum = 0;
  for (int i = 0; i < d->nodes.len; i++) {
    const DagNode *n = d->nodes.data[i];
    if (n->kind == NODE_TRANSFER)
      for (int r = 0; r < n->nroutes; r++) sum += n->routes[r].count * n->routes[r].path.nhops;
  }
  return sum;
}

// How a trial routes and schedules its DAG.
typedef enum TrialMode {
  TRIAL_MINIMAL,       // routed and scheduled minimally: the costs the candidates are ranked by
  TRIAL_FINAL_ROUTES,  // routed as the compile routes, scheduled minimally: the same makespan (the
                       //   minimal routes are the same), for a trial that may be the compile's own
  TRIAL_AS_COMPILED,   // routed and scheduled as the compile will
} TrialMode;

// Whether a trial's DAG, scheduled minimally, is what the compile's route
// and schedule passes would make of it: under --route=minimal; or when
// every transfer fills gaps (such a transfer is routed minimally under any
// mode, and with nothing to spread the load-aware schedule is the minimal
// one); or, under --route=auto, when it was routed as the compile routes
// and no transfer may spread (schedule_may_spread: the compile's schedule
// is then the minimal one).
static bool kept_as_final(const Compilation *c, const Dag *d, TrialMode how) {
  if (c->route_mode == ROUTE_MINIMAL) return true;
  if (c->route_mode != ROUTE_AUTO) return false;
  if (how == TRIAL_FINAL_ROUTES && !schedule_may_spread(d)) return true;
  for (int i = 0; i < d->nodes.len; i++)
    if (d->nodes.data[i]->kind != NODE_TRANSFER || !d->nodes.data[i]->fill_gaps) return false;
  return true;
}

// The makespan of `old` lowered with c->algos, routed and scheduled as
// `how` says, -1 when a pass refuses it, or ABANDONED past bound (>= 0).
// Everything the trial builds is released and its diagnostics are
// discarded.  keep (optional): a trial that is what lower, route and
// schedule would make (as compiled: always; else kept_as_final) is kept in
// *keep instead (its memory stays in the arena), scheduled.  tries
// (optional): the route placements its schedule tried (Dag.tries).
static int64_t trial(Compilation *c, const Dag *old, int64_t bound, int64_t *vectors, TrialMode how, Dag **keep,
                     int64_t *tries) {
  ArenaMark mark = arena_mark(&c->arena);
  Dag *dag, *model = c->dag;
  int64_t makespan = -1;
  if (lower_dag(c, old, &dag)) {
    c->dag = dag;
    RouteMode mode = c->route_mode;
    if (how == TRIAL_MINIMAL) c->route_mode = trial_route(c);  // the router then looks for no spread (beyond a tree edge's cables)
    c->route_until_spread = how == TRIAL_FINAL_ROUTES;
    bool routed = pass_route(c);
    c->route_mode = mode, c->route_until_spread = false;
    if (routed && how == TRIAL_AS_COMPILED) makespan = schedule_as_compiled(c, bound);
    else if (routed) makespan = schedule_makespan(c, trial_route(c), bound);
    if (vectors && makespan >= 0) *vectors = link_vectors(dag);
    if (tries && routed) *tries = dag->tries;
    if (keep && makespan >= 0 && (how == TRIAL_AS_COMPILED || kept_as_final(c, dag, how))) {
      dag->makespan = makespan, dag->scheduled = true, *keep = dag;
      c->dag = model;
      return makespan;
    }
  }
  c->dag = model;
  arena_release(&c->arena, mark);
  return makespan;
}

static int divisor_of(const Compilation *c, const Op *op) { return MAX(1, c->tree_chunk_divisor[op->id]); }

static bool same_signature(const Cost *k, const DagNode *n, bool in_place, int64_t bytes, AlgoKind algo,
                           int divisor, bool as_compiled) {
  const Op *a = k->like, *b = n->op;
  return k->algo == algo && k->divisor == divisor && k->as_compiled == as_compiled && a->kind == b->kind && a->reduce == b->reduce && a->result->dtype == b->result->dtype &&
         k->bytes == bytes && k->in_place == in_place && k->ngroup == n->ngroup &&
         !memcmp(k->group, n->group, sizeof(int) * (size_t)n->ngroup);
}

// Collective n alone under algo, tried as `how` says, from the cache when
// it was tried there under a bound no tighter than this one (a
// TRIAL_FINAL_ROUTES trial costs what a TRIAL_MINIMAL one does).
static Cost isolated(Chooser *ch, const DagNode *n, AlgoKind algo, int64_t bound, TrialMode how, Dag **keep) {
  Compilation *c = ch->c;
  bool as_compiled = how == TRIAL_AS_COMPILED;
  bool in_place = lower_in_place(c->graph, n->op);
  int64_t bytes = layout_bytes(c, n->op->args[0]) + layout_bytes(c, n->op->result);
  for (int i = 0; i < ch->ncache; i++) {
    Cost *k = &ch->cache[i];
    if (!same_signature(k, n, in_place, bytes, algo, divisor_of(c, n->op), as_compiled)) continue;
    bool final = k->cycles != ABANDONED || (bound >= 0 && bound <= k->bound);  // it passes this bound too
    if (!final) continue;
    Cost hit = *k;
    hit.cached = true;
    return hit;
  }
  DagNode *alone = ARENA_NEW(&c->arena, DagNode);
  *alone = *n;
  alone->id = 0;
  alone->ndeps = 0;
  Dag mini = {.graph = c->dag->graph};
  VEC_PUSH(&c->arena, &mini.nodes, alone);
  AlgoKind before = c->algos[n->op->id];
  c->algos[n->op->id] = algo;
  Cost k = {.like = n->op, .ngroup = n->ngroup, .group = n->group, .in_place = in_place, .bytes = bytes,
            .algo = algo, .divisor = divisor_of(c, n->op), .as_compiled = as_compiled, .bound = bound};
  k.cycles = trial(c, &mini, bound, &k.link_vectors, how, keep, NULL);
  c->algos[n->op->id] = before;
  cache_put(ch, k);
  return k;
}

static void log_cost(FILE *log, AlgoKind algo, int64_t cycles, int64_t bound) {
  if (cycles >= 0) fprintf(log, " %s %lld", ir_algo_names[algo], (long long)cycles);
  else if (cycles == ABANDONED) fprintf(log, " %s >%lld", ir_algo_names[algo], (long long)bound);
  else fprintf(log, " %s refused", ir_algo_names[algo]);
}

static bool tried_count(const int *counts, size_t i) {
  for (size_t j = 0; j < i; j++)
    if (counts[j] == counts[i]) return true;
  return false;
}

// Whether every one of TREE_CHUNK_DIVISORS gives collective n under tree
// algorithm algo the same chunk count (counts[i]: divisor i's): a small
// share is one chunk whatever the divisor, and a search would schedule it
// once for nothing (--algo=multitree on 1,440 TSPs at 1 MiB: 14.7 s of a
// 32 s compile).
static bool one_count(Compilation *c, const DagNode *n, AlgoKind algo, int *counts) {
  int op = n->op->id;
  bool same = true;
  for (size_t i = 0; i < ARRAY_LEN(divisors); i++) {
    c->tree_chunk_divisor[op] = divisors[i];
    counts[i] = lower_tree_chunks(c, n, algo);
    same &= counts[i] == counts[0];
  }
  return same;
}

// The chunk search's first round (seed 003 s VIII-C): collective n alone
// under tree algorithm algo, routed minimally, at the formula's chunk count
// (algo_tree.c) divided by each of TREE_CHUNK_DIVISORS, each under `bound`
// and the best so far (a divisor that gives a count already tried is
// skipped).  Returns the fastest's cost and *divisor (the first's when
// none finishes; c->tree_chunk_divisor is left 0).  log: each divisor's
// figure (NULL: none).  keep (NULL: none): when every divisor gives one
// count, its one trial is routed as the compile routes (the count is then
// the compile's whatever the divisor: tree_divisor), and kept in *keep
// when it is the compile's own (kept_as_final).
static Cost chunk_round(Chooser *ch, const DagNode *n, AlgoKind algo, int64_t bound, FILE *log, int *divisor,
                        Dag **keep) {
  Compilation *c = ch->c;
  int op = n->op->id, counts[ARRAY_LEN(divisors)];
  Cost best = {0};
  *divisor = 1;
  bool one = one_count(c, n, algo, counts);
  for (size_t i = 0; i < ARRAY_LEN(divisors); i++) {
    c->tree_chunk_divisor[op] = divisors[i];
    if (tried_count(counts, i)) {  // the count an earlier divisor gave: the same schedule
      if (log) fprintf(log, " %d: the same %d chunks", divisors[i], counts[i]);
      continue;
    }
    // Under branch and bound: it finishes within bound.
    Cost k = one && keep ? isolated(ch, n, algo, bound, TRIAL_FINAL_ROUTES, keep)
                         : isolated(ch, n, algo, bound, TRIAL_MINIMAL, NULL);
    if (log && k.cycles >= 0) fprintf(log, " %d: %lld", divisors[i], (long long)k.cycles);
    else if (log) fprintf(log, " %d: %s", divisors[i], k.cycles == ABANDONED ? ">best" : "refused");
    if (i == 0 || (k.cycles >= 0 && (best.cycles < 0 || k.cycles < best.cycles))) best = k, *divisor = divisors[i];
    if (k.cycles >= 0) bound = k.cycles;
  }
  c->tree_chunk_divisor[op] = 0;
  return best;
}

// Collective n alone under algo, minimally routed, under `bound`.  A tree
// algorithm is costed at its fastest chunk count (chunk_round, unless
// --tree-chunks gives the count), as --algo=NAME chooses it
// (choose_tree_chunks): costed at the formula's count alone, multitree
// lost to biring on ring8 at 1 MiB (75,009 against 74,486 cycles) though
// with a quarter of it, which --algo=multitree takes, it runs 70,255.
// *divisor: the divisor of the cost returned.
static Cost candidate_cost(Chooser *ch, const DagNode *n, AlgoKind algo, int64_t bound, Dag **keep, int *divisor) {
  *divisor = 1;
  if (ch->c->tree_chunks || !lower_uses_tree_chunks(algo)) return isolated(ch, n, algo, bound, TRIAL_MINIMAL, keep);
  return chunk_round(ch, n, algo, bound, NULL, divisor, keep);
}

// A candidate of best_alone: its chain bound (lower_chain_bound) and its
// place in registry order (lower_applicable lists them so), which breaks
// ties, so the choice does not depend on the order tried (better_than).
typedef struct Candidate {
  AlgoKind algo;
  int64_t bound;
  int rank;
} Candidate;

// Candidates are tried by their chain bounds, then registry order, so
// those with none or a small one go first and set the bound the others
// are abandoned at (a ring of 1,440 devices, tried first, scheduled 1.5 M
// cycles where a tree takes 88 K).
static int by_bound(const void *a, const void *b) {
  const Candidate *x = a, *y = b;
  if (x->bound != y->bound) return x->bound < y->bound ? -1 : 1;
  return x->rank - y->rank;
}

// Whether (cycles, vectors, rank) beats the best so far: fewer cycles,
// then fewer vector-hops, then earlier in registry order.
static bool better_than(int64_t cycles, int64_t vectors, int rank, int64_t best_cycles, int64_t best_vectors,
                        int best_rank) {
  if (best_cycles < 0 || cycles != best_cycles) return best_cycles < 0 || cycles < best_cycles;
  return vectors != best_vectors ? vectors < best_vectors : rank < best_rank;
}

// The applicable algorithm that runs collective n fastest alone (ALGO_AUTO
// when none applies: lower then says why), and *cycles its makespan alone
// (-1 when none was tried).  A candidate whose chain bound is above the
// best so far is not tried.
static AlgoKind best_alone(Chooser *ch, const DagNode *n, int64_t *cycles) {
  AlgoKind cand[ALGO_COUNT];
  Candidate order[ALGO_COUNT];
  int best_rank = 0;
  int k = lower_applicable(ch->c, n, cand);
  AlgoKind best = ALGO_AUTO;
  int64_t best_cycles = -1, best_vectors = 0, tied_vectors = -1;  // tied: the fewest vector-hops of a loser as fast
  bool cached = k > 0;
  *cycles = -1;
  fprintf(ch->log, "choose %s (line %d): alone,", n->op->result->name, n->op->loc.line);
  if (k == 1) {  // nothing to compare: no trial (the final compile schedules it anyway)
    fprintf(ch->log, " %s -> %s, the only algorithm that applies (not tried)\n", ir_algo_names[cand[0]],
            ir_algo_names[cand[0]]);
    return cand[0];
  }
  for (int i = 0; i < k; i++) order[i] = (Candidate){cand[i], lower_chain_bound(ch->c, n, cand[i]), i};
  qsort(order, (size_t)k, sizeof *order, by_bound);
  // When the model is this collective alone, a trial that would be the
  // compile's own (kept_as_final) is kept, and lower takes the winner's:
  // the first candidate's, and a tree algorithm's whose chunk count is the
  // same whatever the divisor (chunk_round; otherwise its count is chosen
  // after, and its trial is not the compile's).  A kept trial that loses
  // to one not kept is released (the arena rolled back to before it: what
  // came after is the later candidates' released trials); one that loses
  // to another kept stays in the arena unused.
  bool alone = ch->c->keep_trials && ch->c->dag->nodes.len == 1;
  Dag *kept = NULL;  // the best's trial, when kept
  ArenaMark kept_from = {0};  // the arena before the candidate whose trial is kept
  for (int i = 0; i < k; i++) {
    const Candidate *cd = &order[i];
    if (best_cycles >= 0 && cd->bound > best_cycles) {
      fprintf(ch->log, " %s >=%lld (its chain bound: not tried)", ir_algo_names[cd->algo], (long long)cd->bound);
      continue;
    }
    int divisor;
    Dag *mine = NULL;
    ArenaMark from = arena_mark(&ch->c->arena);
    bool may_keep = alone && (lower_uses_tree_chunks(cd->algo) ? !ch->c->tree_chunks : i == 0);
    Cost cost = candidate_cost(ch, n, cd->algo, best_cycles, may_keep ? &mine : NULL, &divisor);
    cached &= cost.cached;
    log_cost(ch->log, cd->algo, cost.cycles, best_cycles);
    if (cost.cycles >= 0 && divisor > 1) fprintf(ch->log, " (chunks /%d)", divisor);
    if (cost.cycles < 0) continue;
    bool tie = cost.cycles == best_cycles;
    int64_t loser = cost.link_vectors;  // the vector-hops of whichever of the two loses
    if (better_than(cost.cycles, cost.link_vectors, cd->rank, best_cycles, best_vectors, best_rank)) {
      loser = best_vectors;
      if (!tie) tied_vectors = -1;
      best = cd->algo, best_rank = cd->rank, best_cycles = cost.cycles, best_vectors = cost.link_vectors;
      if (kept && !mine) arena_release(&ch->c->arena, kept_from);
      if (mine) kept_from = from;
      kept = mine;
    }
    if (tie) tied_vectors = tied_vectors < 0 ? loser : MIN(tied_vectors, loser);
  }
  if (kept) ch->c->trial_dag = kept;
  *cycles = best_cycles;
  if (best == ALGO_AUTO) fprintf(ch->log, " -> none applies");
  else if (tied_vectors == best_vectors)
    fprintf(ch->log, " -> %s, fewest cycles (a tie in cycles and vector-hops: the first in registry order)",
            ir_algo_names[best]);
  else if (tied_vectors >= 0)
    fprintf(ch->log, " -> %s, fewest cycles and of those the fewest vector-hops (%lld against %lld)",
            ir_algo_names[best], (long long)best_vectors, (long long)tied_vectors);
  else fprintf(ch->log, " -> %s, fewest cycles", ir_algo_names[best]);
  fprintf(ch->log, "%s%s\n", cached ? " (cached: a collective like it was costed before)" : "",
          ch->c->trial_dag ? " (its trial is the compile's: lower, route and schedule keep it)" : "");
  return best;
}

// A tree algorithm's chunk count (seed 003 s VIII-C): the formula's
// (algo_tree.c) divided by each of TREE_CHUNK_DIVISORS, collective n alone
// routed minimally under branch and bound; when another count than the
// formula's is fastest, both are tried again routed and scheduled as the
// compile will, and the faster kept (under --route=auto a count that wins
// minimally routed can lose once the load-aware router spreads: dbtree on
// rack72 at 64 MiB, a half of the formula's count).  The formula's on a
// tie.  A divisor that gives a count already tried is skipped.  Returns
// the divisor, which is what --algo=algo gives n (1 when algo has no
// chunks or --tree-chunks gives the count).  log: what was tried (NULL:
// nothing said).  keep (NULL: none): when the model is this collective
// alone, each count's trial as compiled is the compile's own (the same
// lowering, routing and schedule), so the winner's is kept in *keep and
// lower, route and schedule do not make it again (dbtree on rack72 at
// 64 MiB, where the formula's count wins: 1.2 s -> 0.7 s).
static int tree_divisor(Chooser *ch, const DagNode *n, AlgoKind algo, FILE *log, Dag **keep) {
  Compilation *c = ch->c;
  int op = n->op->id, pick, before = c->tree_chunk_divisor[op], counts[ARRAY_LEN(divisors)];
  if (c->tree_chunks || !lower_uses_tree_chunks(algo)) return 1;
  AlgoKind was = c->algos[op];
  c->algos[op] = algo;
  if (one_count(c, n, algo, counts)) {  // nothing to choose: no trial
    if (log)
      fprintf(log, "choose %s (line %d): %s's chunks, %d whatever the divisor: not tried -> 1\n", n->op->result->name,
              n->op->loc.line, ir_algo_names[algo], counts[0]);
    c->algos[op] = was;
    c->tree_chunk_divisor[op] = before;
    return 1;
  }
  if (log)
    fprintf(log, "choose %s (line %d): %s's chunks, the formula's count divided by", n->op->result->name,
            n->op->loc.line, ir_algo_names[algo]);
  chunk_round(ch, n, algo, -1, log, &pick, NULL);
  Dag *kept = NULL, *kept_formula = NULL;
  if (pick != 1 && c->route_mode == ROUTE_AUTO) {
    c->tree_chunk_divisor[op] = 1;
    Cost formula = isolated(ch, n, algo, -1, TRIAL_AS_COMPILED, keep ? &kept_formula : NULL);
    c->tree_chunk_divisor[op] = pick;
    Cost other = isolated(ch, n, algo, formula.cycles, TRIAL_AS_COMPILED, keep ? &kept : NULL);
    if (log) {
      fprintf(log, "; as compiled 1: %lld %d: ", (long long)formula.cycles, pick);
      if (other.cycles >= 0) fprintf(log, "%lld", (long long)other.cycles);
      else fprintf(log, "%s", other.cycles == ABANDONED ? ">best" : "refused");
    }
    if (formula.cycles >= 0 && (other.cycles < 0 || other.cycles >= formula.cycles)) pick = 1, kept = kept_formula;
  }
  if (keep) *keep = kept;
  if (log) fprintf(log, " -> %d%s\n", pick, kept ? " (its trial is the compile's: lower, route and schedule keep it)" : "");
  c->algos[op] = was;
  c->tree_chunk_divisor[op] = before;
  return pick;
}

// Whether the whole model must be tried: more than one collective to
// choose, or other nodes sharing the network with it.
static bool shares_the_network(const Dag *d, int nauto) { return nauto > 1 || d->nodes.len > nauto; }

// Sets the auto collectives colls[0..n) to `as` (or, when as is NULL, to
// `one` each).
static void assign(Compilation *c, const DagNode *const *colls, int n, const AlgoKind *as, AlgoKind one) {
  for (int i = 0; i < n; i++) c->algos[colls[i]->op->id] = as ? as[i] : one;
}

// The whole model's makespan with that assignment, as the compile would
// make it (the tree algorithms' chunk counts what each collective's
// algorithm gives it alone, as choose_tree_chunks will; routed and
// scheduled as compiled: --route=auto spreads where a minimal trial would
// not, and a torus with two cables between neighbours showed auto 83 %
// slower than a forced algorithm when the trials were minimal); ABANDONED
// past bound.  keep (optional): the trial, kept (as in `trial`).
static int64_t whole(Chooser *ch, const DagNode *const *colls, int n, const AlgoKind *as, AlgoKind one,
                     int64_t bound, Dag **keep, int64_t *tries) {
  Compilation *c = ch->c;
  assign(c, colls, n, as, one);
  for (int i = 0; i < n; i++) {
    int op = colls[i]->op->id;
    c->tree_chunk_divisor[op] = tree_divisor(ch, colls[i], c->algos[op], NULL, NULL);
  }
  return trial(c, c->dag, bound, NULL, TRIAL_AS_COMPILED, keep, tries);
}

static bool applies_to_all(Compilation *c, const DagNode *const *colls, int n, AlgoKind algo) {
  AlgoKind cand[ALGO_COUNT];
  for (int i = 0; i < n; i++) {
    int k = lower_applicable(c, colls[i], cand);
    bool found = false;
    for (int j = 0; j < k; j++) found |= cand[j] == algo;
    if (!found) return false;
  }
  return true;
}

// Joint choice: the per-collective winners against every single algorithm
// for all of them, on the whole model.
// Whether every collective getting `algo` is an assignment other than the
// own winners.
static bool is_alternative(Compilation *c, const DagNode *const *colls, const AlgoKind *winners, int n,
                           AlgoKind algo) {
  bool same = true;  // the own winners already are this assignment
  for (int i = 0; i < n; i++) same &= winners[i] == algo;
  return !same && applies_to_all(c, colls, n, algo);
}

// Whether any single algorithm is an alternative to `winners` for colls.
static bool has_alternative(Compilation *c, const DagNode *const *colls, const AlgoKind *winners, int n) {
  for (int a = 1; a < ALGO_COUNT; a++)
    if (is_alternative(c, colls, winners, n, (AlgoKind)a)) return true;
  return false;
}

// The largest chain bound (lower_chain_bound) of algo over colls: no
// schedule of the model with algo for all of them is shorter.
static int64_t chain_bound_of_all(Compilation *c, const DagNode *const *colls, int n, AlgoKind algo) {
  int64_t most = 0;
  for (int i = 0; i < n; i++) most = MAX(most, lower_chain_bound(c, colls[i], algo));
  return most;
}

#define UNDECIDED (-3)  // whole_at_every_divisor: the chunk search must decide

// Tree algorithm algo given to the one auto collective coll, scheduled
// whole as compiled under `best` without its chunk search (tree_divisor),
// which schedules the collective alone several times, minimally and as
// compiled, unbounded (examples/train.tg on rack72: dbtree's and ctree's
// searches were half the compile, for two alternatives that lose).  The
// search picks one of TREE_CHUNK_DIVISORS, so the model is scheduled at
// each (a divisor giving a count already tried is skipped): when every
// trial passes best, so would the search's pick's, and the result is
// ABANDONED; when all divisors give one count, its trial is whole()'s own,
// and its result (its DAG in *keep if kept) is returned; otherwise, when a
// trial ties, wins or is refused, UNDECIDED, and whole() decides as before.
// The choice is the same either way.  These trials schedule the whole
// model, so they are cheaper than the search only where the collective is
// most of it (CHOOSE_SKIP_SEARCH_SHARE_PERCENT, checked by the caller).
static int64_t whole_at_every_divisor(Chooser *ch, const DagNode *coll, AlgoKind algo, int64_t best, Dag **keep) {
  Compilation *c = ch->c;
  int op = coll->op->id, before = c->tree_chunk_divisor[op], counts[ARRAY_LEN(divisors)];
  AlgoKind was = c->algos[op];
  c->algos[op] = algo;
  bool one = one_count(c, coll, algo, counts);
  int64_t result = ABANDONED;
  for (size_t i = 0; i < ARRAY_LEN(divisors) && result == ABANDONED; i++) {
    if (tried_count(counts, i)) continue;
    c->tree_chunk_divisor[op] = divisors[i];
    int64_t m = trial(c, c->dag, best, NULL, TRIAL_AS_COMPILED, one ? keep : NULL, NULL);
    if (m != ABANDONED) result = one ? m : UNDECIDED;
  }
  c->algos[op] = was;
  c->tree_chunk_divisor[op] = before;
  return result;
}

// Every single algorithm that is an alternative to `winners` for colls,
// scheduled whole as compiled under branch and bound from *best, in
// registry order (a tie keeps what came first); one that beats *best takes
// it, *pick and, when keep, *kept (its trial).  One whose chain bound is
// not below *best cannot beat it and is not tried.  alone: the one
// collective's makespan alone under its own winner (-1: several, or not
// known), for CHOOSE_SKIP_SEARCH_SHARE_PERCENT.
static void try_alternatives(Chooser *ch, const DagNode *const *colls, const AlgoKind *winners, int n, bool keep,
                             int64_t alone, int64_t *best, AlgoKind *pick, Dag **kept) {
  for (int a = 1; a < ALGO_COUNT && *best >= 0; a++) {
    if (!is_alternative(ch->c, colls, winners, n, (AlgoKind)a)) continue;
    int64_t lb = chain_bound_of_all(ch->c, colls, n, (AlgoKind)a);
    if (lb >= *best) {
      fprintf(ch->log, " %s >=%lld (its chain bound: not tried)", ir_algo_names[a], (long long)lb);
      continue;
    }
    bool skim = n == 1 && alone >= 0 && alone >= *best / 100 * CHOOSE_SKIP_SEARCH_SHARE_PERCENT;  // no overflow
    Dag *won = NULL;
    int64_t m = UNDECIDED;
    if (skim && lower_uses_tree_chunks((AlgoKind)a) && !ch->c->tree_chunks)
      m = whole_at_every_divisor(ch, colls[0], (AlgoKind)a, *best, keep ? &won : NULL);
    if (m == UNDECIDED) m = whole(ch, colls, n, NULL, (AlgoKind)a, *best, keep ? &won : NULL, NULL);
    log_cost(ch->log, (AlgoKind)a, m, *best);
    if (m >= 0 && m < *best) *best = m, *pick = (AlgoKind)a, *kept = won;
  }
}

static void choose_jointly(Chooser *ch, const DagNode *const *colls, const AlgoKind *winners, int n, int64_t alone) {
  Compilation *c = ch->c;
  if (!has_alternative(c, colls, winners, n)) {  // nothing to compare the own winners with
    fprintf(ch->log, "choose jointly (%d collectives): own winners, no other assignment applies to all\n", n);
    return;
  }
  // Each trial is scheduled as compiled, so the winner's is the compile's
  // own: it is kept, and lower, route and schedule do not make it again.
  bool keeping = c->keep_trials && !c->trial_dag;
  Dag *kept = NULL;
  int64_t best = whole(ch, colls, n, winners, ALGO_AUTO, -1, keeping ? &kept : NULL, NULL);
  fprintf(ch->log, "choose jointly (%d collectives): own winners %lld", n, (long long)best);
  AlgoKind pick = ALGO_AUTO;  // ALGO_AUTO: the own winners
  try_alternatives(ch, colls, winners, n, keeping, n == 1 ? alone : -1, &best, &pick, &kept);
  fprintf(ch->log, " -> %s%s\n", pick == ALGO_AUTO ? "own winners" : ir_algo_names[pick],
          kept ? " (its trial is the compile's: lower, route and schedule keep it)" : "");
  assign(c, colls, n, pick == ALGO_AUTO ? winners : NULL, pick);
  if (kept) c->trial_dag = kept;
}

// The winner's trial as compiled, for recheck_alone: the one best_alone
// kept when there is one, else a tree algorithm's from its chunk search
// (kept when the count search compared counts as compiled), else a whole
// trial; its makespan, and its schedule's route tries in *tries.  *kept:
// the trial when it is the compile's own (NULL: none kept).
static int64_t winner_as_compiled(Chooser *ch, const DagNode *coll, AlgoKind winner, Dag **kept, int64_t *tries) {
  Compilation *c = ch->c;
  *kept = c->trial_dag;
  if (!*kept && c->keep_trials && lower_uses_tree_chunks(winner) && !c->tree_chunks)
    tree_divisor(ch, coll, winner, NULL, kept);  // searched for its kept trial; assign() picks the divisor
  if (*kept) {
    *tries = (*kept)->tries;
    return (*kept)->makespan;
  }
  return whole(ch, &coll, 1, &winner, ALGO_AUTO, -1, c->keep_trials ? kept : NULL, tries);
}

// A model that is one collective and nothing else: best_alone ranked the
// algorithms on minimal trials, and --route=auto's load-aware schedule can
// reorder them (a 6-device group on mesh3x3: ring 34,355 cycles as
// compiled, dbtree 27,786).  So the winner is tried against every other
// algorithm as compiled, each under branch and bound, as a joint choice of
// one collective would, when that is cheap: when the winner's own schedule
// tried at most CHOOSE_ALONE_RECHECK_TRIES routes.  A larger one is
// compiled as ranked, and --stats says so.
static void recheck_alone(Chooser *ch, const DagNode *coll, AlgoKind winner) {
  Compilation *c = ch->c;
  if (!has_alternative(c, &coll, &winner, 1)) return;
  Dag *kept;
  int64_t tries = 0, best = winner_as_compiled(ch, coll, winner, &kept, &tries);
  fprintf(ch->log, "choose %s (line %d): as compiled, %s %lld", coll->op->result->name, coll->op->loc.line,
          ir_algo_names[winner], (long long)best);
  AlgoKind pick = winner;
  if (tries > CHOOSE_ALONE_RECHECK_TRIES) {
    fprintf(ch->log, ": its schedule tried %lld routes, more than CHOOSE_ALONE_RECHECK_TRIES (%d), so the others are "
            "not tried as compiled", (long long)tries, CHOOSE_ALONE_RECHECK_TRIES);
  } else {
    try_alternatives(ch, &coll, &winner, 1, c->keep_trials, best, &best, &pick, &kept);  // the model is the collective
  }
  fprintf(ch->log, " -> %s%s\n", ir_algo_names[pick], kept ? " (its trial is the compile's: lower, route and schedule keep it)" : "");
  c->algos[coll->op->id] = pick;
  c->trial_dag = kept;
}

static void choose_tree_chunks(Chooser *ch, const DagNode *n) {
  Compilation *c = ch->c;
  AlgoKind algo = c->algos[n->op->id];
  if (c->tree_chunks || !lower_uses_tree_chunks(algo)) return;
  bool alone = c->keep_trials && c->dag->nodes.len == 1 && !c->trial_dag;
  Dag *kept = NULL;
  c->tree_chunk_divisor[n->op->id] = tree_divisor(ch, n, algo, ch->log, alone ? &kept : NULL);
  if (kept) c->trial_dag = kept;
}

bool pass_choose(Compilation *c) {
  int nops = c->graph->ops.len;
  c->algos = ARENA_ARRAY(&c->arena, AlgoKind, nops + 1);
  c->tree_chunk_divisor = ARENA_ARRAY(&c->arena, int, nops + 1);
  for (int i = 0; i < nops; i++) c->algos[i] = c->algo_forced ? c->forced_algo : c->graph->ops.data[i]->algo;
  const Dag *d = c->dag;
  const DagNode **colls = xmalloc(sizeof *colls * ((size_t)d->nodes.len + 1));  // the auto collectives
  AlgoKind *winners = xmalloc(sizeof *winners * ((size_t)d->nodes.len + 1));
  int n = 0;
  for (int i = 0; i < d->nodes.len; i++) {
    const DagNode *node = d->nodes.data[i];
    if (node->kind == NODE_COLLECTIVE && c->algos[node->op->id] == ALGO_AUTO) colls[n++] = node;
  }
  Chooser ch = {.c = c};
  char *text = NULL;
  size_t textlen = 0;
  ch.log = open_memstream(&text, &textlen);
  if (!ch.log) die("out of memory");
  Diag saved = c->diag;
  FILE *quiet = fopen("/dev/null", "w");
  if (quiet) diag_init(&c->diag, quiet);  // trials' diagnostics are not the user's
  bool all = true;
  int64_t alone = -1;  // the last collective's makespan alone (one is all choose_jointly reads)
  for (int i = 0; i < n; i++) {
    winners[i] = best_alone(&ch, colls[i], &alone);
    all &= winners[i] != ALGO_AUTO;
  }
  assign(c, colls, n, winners, ALGO_AUTO);
  if (all && n && shares_the_network(d, n)) choose_jointly(&ch, colls, winners, n, alone);
  else if (all && n == 1) recheck_alone(&ch, colls[0], winners[0]);
  for (int i = 0; i < d->nodes.len; i++)
    if (d->nodes.data[i]->kind == NODE_COLLECTIVE) choose_tree_chunks(&ch, d->nodes.data[i]);
  c->diag = saved;
  if (quiet) fclose(quiet);
  fclose(ch.log);
  free(ch.cache);
  c->choice_log = arena_strdup(&c->arena, text);
  arena_drop_spares(&c->arena);  // the trials are over: what they left is not held on
  free(text);
  free(colls);
  free(winners);
  return true;
}

void choose_dump(const Compilation *c, FILE *out) {
  if (c->choice_log) fputs(c->choice_log, out);
}

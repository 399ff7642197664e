// test_frontend.c: unit tests of the .tg front end: the parser's AST, the
// checker's graph (every op's shape rule, placements, keyword defaults,
// repeat unrolling with loop-carried names) and error counting.
#include "harness.h"

static const char *const TOPO16 = "topology: mesh\ndims: [4, 4]\n";

typedef struct Compiled {
  Arena arena;
  Captured cap;
  Topology *topo;
  Ast *ast;
  Graph *graph;
} Compiled;

static void compile_text(Compiled *c, const char *tg) {
  memset(c, 0, sizeof *c);
  capture_begin(&c->cap);
  c->topo = topo_ok(&c->arena, TOPO16);
  SrcFile *src = src_from_string(&c->arena, "m.tg", tg);
  c->ast = fe_parse(&c->arena, &c->cap.diag, src);
  if (c->ast) c->graph = fe_check(&c->arena, &c->cap.diag, c->ast, c->topo);
}

static void compiled_free(Compiled *c) {
  capture_end(&c->cap);
  arena_free(&c->arena);
}

static Graph *graph_ok(Compiled *c, const char *tg) {
  compile_text(c, tg);
  if (!c->graph) fail_msg("rejected:\n%s", captured_text(&c->cap));
  return c->graph;
}

static Tensor *tensor(Graph *g, const char *name) {
  for (int i = 0; i < g->tensors.len; i++)
    if (!strcmp(g->tensors.data[i]->name, name)) return g->tensors.data[i];
  fail_msg("no tensor %s", name);
  return NULL;
}

static void assert_type(const Tensor *t, const char *want) {
  char got[128];
  ir_format_type(got, sizeof got, t->dtype, &t->shape);
  assert_string_equal(got, want);
}

static void assert_place(const Tensor *t, const char *want) {
  Arena a = {0};
  assert_string_equal(ir_place_str(&a, &t->place), want);
  arena_free(&a);
}

static void parser_builds_the_statement_list(void **state) {
  (void)state;
  Compiled c;
  compile_text(&c, "graph g {\n"
                   "  input x : bf16[2, 3] @ each except device(4), device(1);\n"
                   "  y = softmax(x, axis=-1);\n"
                   "  repeat 2 { param w : bf16[3]; }\n"
                   "  output y;\n"
                   "}\n");
  assert_non_null(c.ast);
  assert_string_equal(c.ast->name, "g");
  AstStmt *s = c.ast->body;
  assert_int_equal(s->kind, STMT_INPUT);
  assert_string_equal(s->type.dtype, "bf16");
  assert_int_equal(s->type.dims->value, 2);
  assert_int_equal(s->type.dims->next->value, 3);
  assert_int_equal(s->place.kind, PLACE_EACH);
  assert_int_equal(s->place.except->device, 4);
  assert_int_equal(s->name_loc.line, 2);
  assert_int_equal(s->name_loc.col, 9);
  s = s->next;
  assert_int_equal(s->kind, STMT_ASSIGN);
  assert_string_equal(s->op, "softmax");
  assert_null(s->args->key);
  assert_string_equal(s->args->next->key, "axis");
  assert_int_equal(s->args->next->num, -1);
  s = s->next;
  assert_int_equal(s->kind, STMT_REPEAT);
  assert_int_equal(s->count, 2);
  assert_int_equal(s->body->kind, STMT_PARAM);
  assert_int_equal(s->next->kind, STMT_OUTPUT);
  // The sorted except list, after check.
  assert_place(tensor(c.graph, "x"), "each except device(1), device(4)");
  assert_int_equal(tensor(c.graph, "y")->def->axis, 1);
  compiled_free(&c);
}

static void every_op_gets_its_result_shape(void **state) {
  (void)state;
  Compiled c;
  Graph *g = graph_ok(&c, "graph g {\n"
                          "  input a : f16[4, 8, 16] @ device(2);\n"
                          "  param w : f16[16, 32] @ device(2);\n"
                          "  param b : f16[32] @ device(2);\n"
                          "  param gm : f16[32] @ device(2);\n"
                          "  m = matmul(a, w);\n"
                          "  mb = add(m, b);\n"
                          "  r = relu(mb);\n"
                          "  e = gelu(r);\n"
                          "  s = softmax(e);\n"
                          "  n = layernorm(s, gm, b);\n"
                          "  t = transpose(n);\n"
                          "  moved = copy(t) @ device(7);\n"
                          "  output moved;\n"
                          "}\n");
  assert_type(tensor(g, "m"), "f16[4, 8, 32]");
  assert_type(tensor(g, "mb"), "f16[4, 8, 32]");
  assert_type(tensor(g, "n"), "f16[4, 8, 32]");
  assert_type(tensor(g, "t"), "f16[4, 32, 8]");
  assert_place(tensor(g, "t"), "device(2)");
  assert_place(tensor(g, "moved"), "device(7)");
  assert_int_equal(g->ops.len, 8);
  assert_int_equal(tensor(g, "s")->def->axis, 2);
  assert_true(tensor(g, "moved")->is_output);
  assert_int_equal(g->outputs.len, 1);
  compiled_free(&c);
}

// The group of a collective is the operand's devices: 16 minus 4 excluded.
static void collectives_scale_by_their_group(void **state) {
  (void)state;
  Compiled c;
  Graph *g = graph_ok(&c, "graph g {\n"
                          "  input x : i32[24, 5] @ each except device(0), device(5), device(10), device(15);\n"
                          "  s = allreduce(x, op=max, algo=ring);\n"
                          "  rs = reduce_scatter(x);\n"
                          "  ag = all_gather(x);\n"
                          "  output s;\n"
                          "}\n");
  Tensor *s = tensor(g, "s");
  assert_type(s, "i32[24, 5]");
  assert_int_equal(s->def->reduce, REDUCE_MAX);
  assert_int_equal(s->def->algo, ALGO_RING);
  assert_place(s, "each except device(0), device(5), device(10), device(15)");
  assert_type(tensor(g, "rs"), "i32[2, 5]");
  assert_int_equal(tensor(g, "rs")->def->reduce, REDUCE_SUM);
  assert_int_equal(tensor(g, "rs")->def->algo, ALGO_AUTO);
  assert_type(tensor(g, "ag"), "i32[288, 5]");
  compiled_free(&c);
}

// Names assigned before a repeat are carried; the rest are per iteration.
static void repeat_unrolls_with_carried_names(void **state) {
  (void)state;
  Compiled c;
  Graph *g = graph_ok(&c, "graph g {\n"
                          "  input x : f32[2, 4];\n"
                          "  repeat 3 {\n"
                          "    param w : f32[4, 4];\n"
                          "    h = matmul(x, w);\n"
                          "    repeat 2 { h = relu(h); }\n"
                          "    x = add(h, x);\n"
                          "  }\n"
                          "  output x;\n"
                          "}\n");
  // x + 3 x (w, h, 2 relu, add)
  assert_int_equal(g->tensors.len, 1 + 3 * 5);
  assert_non_null(tensor(g, "w.2"));
  assert_non_null(tensor(g, "h.1.0"));
  Tensor *x2 = tensor(g, "x.2");
  assert_true(x2->is_output);
  assert_ptr_equal(g->outputs.data[0], x2);
  // Iteration 1's matmul reads iteration 0's x; the inner relus chain.
  assert_ptr_equal(tensor(g, "h.1")->def->args[0], tensor(g, "x.0"));
  assert_ptr_equal(tensor(g, "h.1.1")->def->args[0], tensor(g, "h.1.0"));
  assert_ptr_equal(tensor(g, "x.1")->def->args[0], tensor(g, "h.1.1"));
  assert_place(x2, "auto");
  compiled_free(&c);
}

static void placements_follow_operands(void **state) {
  (void)state;
  Compiled c;
  Graph *g = graph_ok(&c, "graph g {\n"
                          "  input a : f16[8] @ stage(3);\n"
                          "  input b : f16[8];\n"
                          "  c1 = relu(a);\n"
                          "  c2 = add(a, b);\n"
                          "  c3 = add(b, b) @ device(1);\n"
                          "  output c1 @ stage(3);\n"
                          "}\n");
  assert_place(tensor(g, "c1"), "stage(3)");
  assert_place(tensor(g, "c2"), "stage(3)");  // b (auto) follows a
  assert_place(tensor(g, "c3"), "device(1)");
  compiled_free(&c);
}

static void errors_are_counted_and_do_not_cascade(void **state) {
  (void)state;
  Compiled c;
  compile_text(&c, "graph g {\n"
                   "  input x : f16[8, 8];\n"
                   "  a = relu(nope);\n"
                   "  b = relu(a);\n"
                   "  c = add(x, a);\n"
                   "  d = matmul(x, x, x);\n"
                   "  output b;\n"
                   "}\n");
  assert_null(c.graph);
  assert_int_equal(c.cap.diag.nerrors, 2);
  const char *text = captured_text(&c.cap);
  assert_non_null(strstr(text, "m.tg:3:12: error: undefined tensor 'nope'\n"));
  assert_non_null(strstr(text, "m.tg:6:7: error: matmul expects 2 operands, got 3\n"));
  compiled_free(&c);
}

static void syntax_errors_recover_at_the_next_statement(void **state) {
  (void)state;
  Compiled c;
  compile_text(&c, "graph g {\n"
                   "  input x : f16[8] @ each;\n"
                   "  y = relu(x) @;\n"
                   "  z = relu(x) ) ;\n"
                   "  output z;\n"
                   "}\n");
  assert_null(c.ast);
  assert_int_equal(c.cap.diag.nerrors, 2);
  assert_non_null(strstr(captured_text(&c.cap),
                         "m.tg:3:16: error: unexpected ';', expected each, device or stage\n"));
  assert_non_null(strstr(captured_text(&c.cap), "m.tg:4:15: error: unexpected ')', expected ';' or '@'\n"));
  compiled_free(&c);
}

static void dtype_and_op_tables_agree(void **state) {
  (void)state;
  DType dt;
  OpKind op;
  assert_true(ir_dtype_lookup("bf16", &dt));
  assert_int_equal(ir_dtype_bytes[dt], 2);
  assert_true(ir_dtype_lookup("i8", &dt));
  assert_int_equal(ir_dtype_bytes[dt], 1);
  assert_false(ir_dtype_lookup("f64", &dt));
  assert_true(ir_op_lookup("layernorm", &op));
  assert_int_equal(ir_op_info[op].arity, ARITY(1) | ARITY(3));
  AlgoKind algo;
  assert_true(ir_algo_lookup("tto", &algo));
  assert_int_equal(algo, ALGO_TTO);
  assert_false(ir_algo_lookup("bogus", &algo));
  assert_false(ir_op_lookup("conv", &op));
}

// The verifier accepts what check builds and names the first broken
// invariant of a graph a buggy pass could leave.
static void verifier_catches_broken_graphs(void **state) {
  (void)state;
  Compiled c;
  Graph *g = graph_ok(&c, "graph g {\n"
                          "  input x : f32[8] @ device(1);\n"
                          "  y = relu(x);\n"
                          "  z = relu(y);\n"
                          "  output z;\n"
                          "}\n");
  char err[256];
  assert_true(ir_graph_verify(g, 16, err, sizeof err));
  tensor(g, "z")->name = "y";  // a duplicate name
  assert_false(ir_graph_verify(g, 16, err, sizeof err));
  assert_string_equal(err, "two tensors are named y");
  tensor(g, "y")->name = "z";
  Tensor *y = g->tensors.data[1], *z = g->tensors.data[2];
  g->tensors.data[1] = z, g->tensors.data[2] = y;  // z before the y it reads
  z->id = 1, y->id = 2;
  assert_false(ir_graph_verify(g, 16, err, sizeof err));
  assert_string_equal(err, "op 1 (relu) uses operand 0 before it is defined");
  g->tensors.data[1] = y, g->tensors.data[2] = z;
  y->id = 1, z->id = 2;
  assert_true(ir_graph_verify(g, 16, err, sizeof err));
  assert_false(ir_graph_verify(g, 1, err, sizeof err));  // device(1) on a 1-device system
  assert_string_equal(err, "tensor x is placed on 1, outside 1 devices");
  compiled_free(&c);
}

// The ops from mul on: result types, and the keywords filed in the Op.
static void new_ops_get_their_result_shape(void **state) {
  (void)state;
  Compiled c;
  Graph *g = graph_ok(&c, "graph g {\n"
                          "  input x : f32[2, 3, 4] @ device(1);\n"
                          "  param v : f32[4] @ device(1);\n"
                          "  m = mul(x, v);\n"
                          "  d = div(x, x);\n"
                          "  e = rsqrt(m);\n"
                          "  rs = reduce_sum(x, axis=1);\n"
                          "  rv = reduce_max(v);\n"
                          "  y = reshape(x, shape=[6, 4]);\n"
                          "  sl = slice(x, axis=-3, start=1, end=2);\n"
                          "  cc = concat(x, x, x, axis=1);\n"
                          "  output cc;\n"
                          "}\n");
  assert_type(tensor(g, "m"), "f32[2, 3, 4]");
  assert_type(tensor(g, "d"), "f32[2, 3, 4]");
  assert_type(tensor(g, "e"), "f32[2, 3, 4]");
  assert_type(tensor(g, "rs"), "f32[2, 4]");
  assert_int_equal(tensor(g, "rs")->def->axis, 1);
  assert_type(tensor(g, "rv"), "f32[1]");
  Op *reshape = tensor(g, "y")->def;
  assert_type(tensor(g, "y"), "f32[6, 4]");
  assert_int_equal(reshape->shape.rank, 2);
  assert_int_equal(reshape->shape.dim[0], 6);
  Op *slice = tensor(g, "sl")->def;
  assert_type(tensor(g, "sl"), "f32[1, 3, 4]");
  assert_int_equal(slice->axis, 0);
  assert_int_equal(slice->start, 1);
  assert_int_equal(slice->end, 2);
  assert_type(tensor(g, "cc"), "f32[2, 9, 4]");
  assert_int_equal(tensor(g, "cc")->def->nargs, 3);
  assert_place(tensor(g, "cc"), "device(1)");
  char err[256];
  assert_true(ir_graph_verify(g, 16, err, sizeof err));
  compiled_free(&c);
}

// A list value keeps its integers and their places, and the whole list's span.
static void parser_reads_list_values(void **state) {
  (void)state;
  Compiled c;
  compile_text(&c, "graph g {\n"
                   "  input x : f16[4, 6];\n"
                   "  y = reshape(x, shape=[2, -3, 4]);\n"
                   "  z = reshape(x, shape=[]);\n"
                   "}\n");
  assert_non_null(c.ast);
  const AstArg *shape = c.ast->body->next->args->next;
  assert_int_equal(shape->kind, ARG_LIST);
  assert_string_equal(shape->key, "shape");
  assert_int_equal(shape->loc.col, 24);
  assert_int_equal(shape->loc.len, 10);  // "[2, -3, 4]"
  assert_int_equal(shape->items->value, 2);
  assert_int_equal(shape->items->next->value, -3);
  assert_int_equal(shape->items->next->loc.col, 28);
  assert_int_equal(shape->items->next->loc.len, 2);
  assert_int_equal(shape->items->next->next->value, 4);
  assert_null(shape->items->next->next->next);
  const AstArg *empty = c.ast->body->next->next->args->next;
  assert_int_equal(empty->kind, ARG_LIST);
  assert_null(empty->items);
  assert_null(c.graph);  // -3 and [] are the checker's to reject
  assert_int_equal(c.cap.diag.nerrors, 2);
  compiled_free(&c);
}

// The verifier names a broken invariant of each new op: a pass that left a
// slice past its dimension, a reshape that loses elements, concat parts that
// disagree, or a result whose type its operands do not make.
static void verifier_checks_the_new_ops(void **state) {
  (void)state;
  Compiled c;
  Graph *g = graph_ok(&c, "graph g {\n"
                          "  input x : f16[4, 6] @ device(0);\n"
                          "  s = slice(x, start=1, end=3);\n"
                          "  y = reshape(x, shape=[24]);\n"
                          "  j = concat(x, x, axis=0);\n"
                          "  r = reduce_sum(x);\n"
                          "  output s;\n"
                          "}\n");
  char err[256];
  assert_true(ir_graph_verify(g, 16, err, sizeof err));
  Op *slice = tensor(g, "s")->def;
  slice->end = 7;
  assert_false(ir_graph_verify(g, 16, err, sizeof err));
  assert_string_equal(err, "op 0 (slice) keeps [1, 7) of a dimension of 6");
  slice->end = 3;
  Op *reshape = tensor(g, "y")->def;
  reshape->shape.dim[0] = 25;
  assert_false(ir_graph_verify(g, 16, err, sizeof err));
  assert_string_equal(err, "op 1 (reshape) does not keep the 24 elements of its operand");
  reshape->shape.dim[0] = 24;
  Tensor *x = tensor(g, "x");
  Op *concat = tensor(g, "j")->def;
  concat->args[1] = tensor(g, "s");  // f16[4, 2] after f16[4, 6], along axis 0
  assert_false(ir_graph_verify(g, 16, err, sizeof err));
  assert_string_equal(err, "op 2 (concat): operand 1 differs from operand 0 outside axis 0");
  concat->args[1] = x;
  tensor(g, "r")->shape.dim[0] = 6;
  assert_false(ir_graph_verify(g, 16, err, sizeof err));
  assert_string_equal(err, "op 3 (reduce_sum): its operands make f16[4], its result is f16[6]");
  tensor(g, "r")->shape.dim[0] = 4;
  tensor(g, "r")->dtype = DT_F32;
  assert_false(ir_graph_verify(g, 16, err, sizeof err));
  assert_string_equal(err, "op 3 (reduce_sum): operand 0 is f16, its result f32");
  tensor(g, "r")->dtype = DT_F16;
  assert_true(ir_graph_verify(g, 16, err, sizeof err));
  compiled_free(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(parser_builds_the_statement_list),
      cmocka_unit_test(every_op_gets_its_result_shape),
      cmocka_unit_test(collectives_scale_by_their_group),
      cmocka_unit_test(repeat_unrolls_with_carried_names),
      cmocka_unit_test(placements_follow_operands),
      cmocka_unit_test(errors_are_counted_and_do_not_cascade),
      cmocka_unit_test(syntax_errors_recover_at_the_next_statement),
      cmocka_unit_test(dtype_and_op_tables_agree),
      cmocka_unit_test(verifier_catches_broken_graphs),
      cmocka_unit_test(new_ops_get_their_result_shape),
      cmocka_unit_test(parser_reads_list_values),
      cmocka_unit_test(verifier_checks_the_new_ops),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

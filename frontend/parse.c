// parse.c: runs the scanner (lexer.l) and parser (parser.y) over a .tg file
// and prints the resulting AST back as source (--dump-after=parse).  Part of
// the frontend.
#include "frontend.h"

#include "parser.tab.h"
#include "lexer.yy.h"

SrcLoc fe_loc(const ParseCtx *c, int first_line, int first_col, int last_line, int last_col) {
  int len = last_line == first_line ? last_col - first_col : 1;
  return (SrcLoc){c->src, first_line, first_col, MAX(len, 1)};
}

Ast *fe_parse(Arena *a, Diag *d, const SrcFile *src) {
  if (src->len > FE_MAX_SOURCE_BYTES) {
    diag_tool_error(d, "tspc", "'%s' is %zu bytes; the largest model read is %d", src->path,
                    src->len, FE_MAX_SOURCE_BYTES);
    return NULL;
  }
  ParseCtx ctx = {.arena = a, .diag = d, .src = src, .line = 1, .col = 1};
  yyscan_t scanner;
  if (tglex_init_extra(&ctx, &scanner)) die("cannot initialise the scanner");
  YY_BUFFER_STATE buf = tg_scan_bytes(src->text, (int)src->len, scanner);
  int errors = d->nerrors;
  tgparse(scanner, &ctx);
  tg_delete_buffer(buf, scanner);
  tglex_destroy(scanner);
  return d->nerrors == errors ? ctx.ast : NULL;
}

// ---- the dump: the AST printed back as .tg source ---------------------------

static void dump_place(const AstPlace *p, FILE *out) {
  switch (p->kind) {
  case PLACE_AUTO: return;
  case PLACE_DEVICE: fprintf(out, " @ device(%lld)", (long long)p->index); return;
  case PLACE_STAGE: fprintf(out, " @ stage(%lld)", (long long)p->index); return;
  case PLACE_EACH:
    fprintf(out, " @ each");
    for (const AstExcept *e = p->except; e; e = e->next)
      fprintf(out, "%sdevice(%lld)", e == p->except ? " except " : ", ", (long long)e->device);
    return;
  }
}

static void dump_type(const AstType *t, FILE *out) {
  fprintf(out, "%s[", t->dtype);
  for (const AstDim *d = t->dims; d; d = d->next)
    fprintf(out, "%s%lld", d == t->dims ? "" : ", ", (long long)d->value);
  fprintf(out, "]");
}

// A keyword's list value as written: "[4, 256]".
static void dump_list(const AstDim *items, FILE *out) {
  fprintf(out, "[");
  for (const AstDim *d = items; d; d = d->next)
    fprintf(out, "%s%lld", d == items ? "" : ", ", (long long)d->value);
  fprintf(out, "]");
}

static void dump_args(const AstArg *args, FILE *out) {
  for (const AstArg *a = args; a; a = a->next) {
    if (a != args) fprintf(out, ", ");
    if (a->key) fprintf(out, "%s=", a->key);
    if (a->kind == ARG_INT)
      fprintf(out, "%lld", (long long)a->num);
    else if (a->kind == ARG_LIST)
      dump_list(a->items, out);
    else
      fprintf(out, "%s", a->name);
  }
}

static void dump_stmts(const AstStmt *s, int depth, FILE *out) {
  for (; s; s = s->next) {
    fprintf(out, "%*s", 2 * depth, "");
    switch (s->kind) {
    case STMT_INPUT:
    case STMT_PARAM:
      fprintf(out, "%s %s : ", s->kind == STMT_INPUT ? "input" : "param", s->name);
      dump_type(&s->type, out);
      break;
    case STMT_OUTPUT: fprintf(out, "output %s", s->name); break;
    case STMT_ASSIGN:
      fprintf(out, "%s = %s(", s->name, s->op);
      dump_args(s->args, out);
      fprintf(out, ")");
      break;
    case STMT_REPEAT:
      fprintf(out, "repeat %lld {\n", (long long)s->count);
      dump_stmts(s->body, depth + 1, out);
      fprintf(out, "%*s}\n", 2 * depth, "");
      continue;
    }
    dump_place(&s->place, out);
    fprintf(out, ";\n");
  }
}

void fe_ast_dump(const Ast *ast, FILE *out) {
  fprintf(out, "graph %s {\n", ast->name);
  dump_stmts(ast->body, 1, out);
  fprintf(out, "}\n");
}

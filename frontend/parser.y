/* parser.y: the .tg grammar.  Part of the frontend: tokens -> Ast.
 *
 * A pure (reentrant) parser with locations.  Syntax errors name what was
 * found and what could come instead; `error ';'` recovers at the next
 * statement so one run reports several.  The AST lives in the arena, so no
 * %destructor is needed on error paths.  docs/dsl.md has the grammar in EBNF.
 */
%define api.pure full
%define api.prefix {tg}
%define parse.error custom
%define parse.lac full
%locations
%expect 0
%parse-param {void *scanner} {ParseCtx *ctx}
%lex-param {void *scanner}

%code requires {
#include "frontend.h"
}

%code top {
#include <string.h>
}

%code provides {
/* flex's bison-bridge spells the types YYSTYPE and YYLTYPE. */
#define YYSTYPE TGSTYPE
#define YYLTYPE TGLTYPE
int tglex(TGSTYPE *yylval, TGLTYPE *yylloc, void *scanner);
}

%code {
static SrcLoc L(ParseCtx *c, TGLTYPE l) {
  return fe_loc(c, l.first_line, l.first_column, l.last_line, l.last_column);
}

static void tgerror(TGLTYPE *loc, void *scanner, ParseCtx *ctx, const char *msg) {
  (void)scanner;
  if (!strcmp(msg, "memory exhausted")) /* bison's stack: YYMAXDEPTH */
    msg = "the program is nested too deeply";
  diag_error(ctx->diag, L(ctx, *loc), "%s", msg);
}

static AstStmt *new_stmt(ParseCtx *c, AstStmtKind kind, TGLTYPE loc) {
  AstStmt *s = ARENA_NEW(c->arena, AstStmt);
  s->kind = kind;
  s->loc = L(c, loc);
  return s;
}

static AstArg *new_arg(ParseCtx *c, const char *key, TGLTYPE key_loc, AstArgKind kind, TGLTYPE loc) {
  AstArg *a = ARENA_NEW(c->arena, AstArg);
  a->key = key;
  a->key_loc = L(c, key_loc);
  a->kind = kind;
  a->loc = L(c, loc);
  return a;
}
}

%union {
  int64_t num;
  const char *str;
  AstStmt *stmt;
  struct { AstStmt *head, *tail; } stmts;
  AstArg *arg;
  struct { AstArg *head, *tail; } args;
  AstDim *dim;
  struct { AstDim *head, *tail; } dims;
  AstType type;
  AstPlace place;
  struct { AstExcept *head, *tail; } devs;
}

%token GRAPH "graph" INPUT "input" PARAM "param" OUTPUT "output" REPEAT "repeat"
%token EACH "each" EXCEPT "except" DEVICE "device" STAGE "stage"
%token <str> IDENT "identifier"
%token <num> INT "integer"

%type <stmt> stmt
%type <stmts> stmts block
%type <arg> arg
%type <args> args args_opt
%type <dims> dims list items
%type <dim> item
%type <type> type
%type <place> place placement
%type <devs> devices

%%

/* file = "graph" IDENT "{" stmt* "}" */
file:
  GRAPH IDENT '{' block '}' {
    ctx->ast = ARENA_NEW(ctx->arena, Ast);
    ctx->ast->name = $2;
    ctx->ast->loc = L(ctx, @2);
    ctx->ast->src = ctx->src;
    ctx->ast->body = $4.head;
  }
;

/* A block's statements.  An error in its last statement (one with no ';'
 * before the '}') recovers at the '}' so the block still closes. */
block:
  stmts
| stmts error { $$ = $1; }
;

stmts:
  %empty        { $$.head = $$.tail = NULL; }
| stmts stmt    {
    $$ = $1;
    if ($2) {
      if ($$.tail) $$.tail->next = $2; else $$.head = $2;
      $$.tail = $2;
    }
  }
;

/* stmt = "input" IDENT ":" type place ";" | "param" IDENT ":" type place ";"
 *      | "output" IDENT place ";"        | IDENT "=" IDENT "(" args ")" place ";"
 *      | "repeat" INT "{" stmt* "}" */
stmt:
  INPUT IDENT ':' type place ';' {
    $$ = new_stmt(ctx, STMT_INPUT, @$);
    $$->name = $2; $$->name_loc = L(ctx, @2); $$->type = $4; $$->place = $5;
  }
| PARAM IDENT ':' type place ';' {
    $$ = new_stmt(ctx, STMT_PARAM, @$);
    $$->name = $2; $$->name_loc = L(ctx, @2); $$->type = $4; $$->place = $5;
  }
| OUTPUT IDENT place ';' {
    $$ = new_stmt(ctx, STMT_OUTPUT, @$);
    $$->name = $2; $$->name_loc = L(ctx, @2); $$->place = $3;
  }
| IDENT '=' IDENT '(' args_opt ')' place ';' {
    $$ = new_stmt(ctx, STMT_ASSIGN, @$);
    $$->name = $1; $$->name_loc = L(ctx, @1);
    $$->op = $3; $$->op_loc = L(ctx, @3);
    $$->args = $5.head; $$->place = $7;
  }
| REPEAT INT '{' block '}' {
    $$ = new_stmt(ctx, STMT_REPEAT, @$);
    $$->count = $2; $$->count_loc = L(ctx, @2); $$->body = $4.head;
  }
| error ';' { $$ = NULL; yyerrok; }
;

/* type = IDENT "[" INT ("," INT)* "]" */
type:
  IDENT '[' dims ']' { $$.dtype = $1; $$.dtype_loc = L(ctx, @1); $$.dims = $3.head; }
;

dims:
  INT {
    $$.head = $$.tail = ARENA_NEW(ctx->arena, AstDim);
    $$.head->value = $1; $$.head->loc = L(ctx, @1);
  }
| dims ',' INT {
    AstDim *d = ARENA_NEW(ctx->arena, AstDim);
    d->value = $3; d->loc = L(ctx, @3);
    $$ = $1; $$.tail->next = d; $$.tail = d;
  }
;

/* place = ("@" placement)? */
place:
  %empty          { $$ = (AstPlace){.given = false, .kind = PLACE_AUTO}; }
| '@' placement   { $$ = $2; $$.loc = L(ctx, @2); }
;

/* placement = "each" ("except" devices)? | "device" "(" INT ")" | "stage" "(" INT ")" */
placement:
  EACH                      { $$ = (AstPlace){.given = true, .kind = PLACE_EACH}; }
| EACH EXCEPT devices       { $$ = (AstPlace){.given = true, .kind = PLACE_EACH, .except = $3.head}; }
| DEVICE '(' INT ')'        { $$ = (AstPlace){.given = true, .kind = PLACE_DEVICE, .index = $3, .index_loc = L(ctx, @3)}; }
| STAGE '(' INT ')'         { $$ = (AstPlace){.given = true, .kind = PLACE_STAGE, .index = $3, .index_loc = L(ctx, @3)}; }
;

/* devices = "device" "(" INT ")" ("," "device" "(" INT ")")* */
devices:
  DEVICE '(' INT ')' {
    $$.head = $$.tail = ARENA_NEW(ctx->arena, AstExcept);
    $$.head->device = $3; $$.head->loc = L(ctx, @3);
  }
| devices ',' DEVICE '(' INT ')' {
    AstExcept *e = ARENA_NEW(ctx->arena, AstExcept);
    e->device = $5; e->loc = L(ctx, @5);
    $$ = $1; $$.tail->next = e; $$.tail = e;
  }
;

args_opt:
  %empty  { $$.head = $$.tail = NULL; }
| args
;

args:
  arg           { $$.head = $$.tail = $1; }
| args ',' arg  { $$ = $1; $$.tail->next = $3; $$.tail = $3; }
;

/* arg = IDENT | IDENT "=" (IDENT | "-"? INT | list) */
arg:
  IDENT                 { $$ = new_arg(ctx, NULL, @1, ARG_TENSOR, @1); $$->name = $1; }
| IDENT '=' IDENT       { $$ = new_arg(ctx, $1, @1, ARG_IDENT, @3); $$->name = $3; }
| IDENT '=' INT         { $$ = new_arg(ctx, $1, @1, ARG_INT, @3); $$->num = $3; }
| IDENT '=' '-' INT     {
    TGLTYPE span = @3;
    span.last_line = @4.last_line; span.last_column = @4.last_column;
    $$ = new_arg(ctx, $1, @1, ARG_INT, span); $$->num = -$4;
  }
| IDENT '=' list        { $$ = new_arg(ctx, $1, @1, ARG_LIST, @3); $$->items = $3.head; }
;

/* list = "[" [ item { "," item } ] "]"   (an empty list is the checker's to reject) */
list:
  '[' ']'               { $$.head = $$.tail = NULL; }
| '[' items ']'         { $$ = $2; }
;

items:
  item                  { $$.head = $$.tail = $1; }
| items ',' item        { $$ = $1; $$.tail->next = $3; $$.tail = $3; }
;

/* item = "-"? INT   (a negative one parses, so the checker can name it) */
item:
  INT                   { $$ = ARENA_NEW(ctx->arena, AstDim); $$->value = $1; $$->loc = L(ctx, @1); }
| '-' INT               {
    $$ = ARENA_NEW(ctx->arena, AstDim); $$->value = -$2;
    TGLTYPE span = @1;
    span.last_line = @2.last_line; span.last_column = @2.last_column;
    $$->loc = L(ctx, span);
  }
;

%%

/* Prints a token's name as a reader knows it: 'identifier', ';', 'end of file'. */
static void append_symbol(Buf *b, yysymbol_kind_t sym) {
  const char *name = yysymbol_name(sym);
  if (name[0] == '"') buf_printf(b, "%.*s", (int)strlen(name) - 2, name + 1);
  else buf_printf(b, "%s", name);
}

/* "unexpected identifier 'wx', expected ';' or '@'" */
static int yyreport_syntax_error(const yypcontext_t *pctx, void *scanner, ParseCtx *ctx) {
  (void)scanner;
  enum { MAX_EXPECTED = 6 };
  yysymbol_kind_t expected[MAX_EXPECTED];
  int n = yypcontext_expected_tokens(pctx, expected, MAX_EXPECTED);
  yysymbol_kind_t got = yypcontext_token(pctx);
  SrcLoc loc = L(ctx, *yypcontext_location(pctx));
  if (got == YYSYMBOL_YYEOF && ctx->unterminated) return 0;  /* already reported */
  /* A statement whose ';' is missing: point at the end of its last token,
   * not at the next line's first. */
  for (int i = 0; i < n; i++)
    if (!strcmp(yysymbol_name(expected[i]), "';'") && ctx->prev_line < loc.line && ctx->prev_line > 0) {
      diag_error(ctx->diag, (SrcLoc){ctx->src, ctx->prev_line, ctx->prev_end, 1},
                 "expected ';' at the end of the statement");
      return 0;
    }
  Buf b = {0};
  buf_printf(&b, "unexpected ");
  append_symbol(&b, got);
  if (got == YYSYMBOL_IDENT || got == YYSYMBOL_INT) {
    int len;
    const char *line = src_line(ctx->src, loc.line, &len);
    int shown = MAX(0, MIN(loc.len, len - (loc.col - 1)));
    buf_printf(&b, " '%.*s'", shown, line + MIN(loc.col - 1, len));
  }
  for (int i = 0; i < n; i++) {
    buf_printf(&b, i == 0 ? ", expected " : i == n - 1 ? " or " : ", ");
    append_symbol(&b, expected[i]);
  }
  diag_error(ctx->diag, loc, "%s", b.data);
  buf_free(&b);
  return 0;
}

// frontend.h: what tspc reads, and how.
//
//   lexer.l + parser.y  .tg text -> Ast (statements, still with repeat blocks)
//   parse.c             runs them, and prints the Ast back (the parse dump)
//   check.c             Ast -> Graph IR: names resolved, repeats unrolled,
//                       shapes, dtypes and placements checked
//   topology.c          topology .yaml (libyaml document API) -> Topology IR
//   asm.c               tsp-as assembly (.tsa) -> Program (device programs)
//
// Every error names FILE:LINE:COL and quotes the line (support/diag.c).  The
// AST is allocated in the compilation's arena and never freed piecemeal.
#ifndef TSPC_FRONTEND_H
#define TSPC_FRONTEND_H

#include "../ir/ir.h"

// ===== AST ==================================================================

typedef struct AstDim {
  int64_t value;
  SrcLoc loc;
  struct AstDim *next;
} AstDim;

typedef struct AstType {
  const char *dtype;  // unresolved spelling: check.c looks it up
  SrcLoc dtype_loc;
  AstDim *dims;
} AstType;

typedef struct AstExcept {
  int64_t device;
  SrcLoc loc;
  struct AstExcept *next;
} AstExcept;

typedef struct AstPlace {
  bool given;          // an `@ ...` annotation was written
  PlaceKind kind;
  int64_t index;       // device(N), stage(N)
  AstExcept *except;   // each except device(A), device(B)
  SrcLoc loc;          // of the whole annotation, for errors
  SrcLoc index_loc;
} AstPlace;

typedef enum { ARG_TENSOR, ARG_IDENT, ARG_INT, ARG_LIST } AstArgKind;

// One argument of an op call: `x` (a tensor), or `key=value` where the value
// is a name, an integer, or a list of integers (`shape=[4, 256]`).
typedef struct AstArg {
  const char *key;     // NULL for a positional operand
  SrcLoc key_loc;
  AstArgKind kind;     // positional operands are ARG_TENSOR
  const char *name;    // ARG_TENSOR, ARG_IDENT
  int64_t num;         // ARG_INT
  AstDim *items;       // ARG_LIST: its integers in order, each with its place; NULL for []
  SrcLoc loc;          // of the value (a list: from '[' to ']')
  struct AstArg *next;
} AstArg;

typedef enum { STMT_INPUT, STMT_PARAM, STMT_OUTPUT, STMT_ASSIGN, STMT_REPEAT } AstStmtKind;

typedef struct AstStmt {
  AstStmtKind kind;
  SrcLoc loc;
  const char *name;       // declared, assigned or output tensor
  SrcLoc name_loc;
  AstType type;           // INPUT, PARAM
  const char *op;         // ASSIGN
  SrcLoc op_loc;
  AstArg *args;           // ASSIGN
  AstPlace place;
  int64_t count;          // REPEAT
  SrcLoc count_loc;
  struct AstStmt *body;   // REPEAT
  struct AstStmt *next;
} AstStmt;

typedef struct Ast {
  const char *name;
  SrcLoc loc;
  const SrcFile *src;
  AstStmt *body;
} Ast;

// ===== parse.c (lexer.l, parser.y) =========================================

// The parser's shared state, reachable from the scanner's extra pointer.
typedef struct ParseCtx {
  Arena *arena;
  Diag *diag;
  const SrcFile *src;
  Ast *ast;           // the result; NULL until `graph NAME { ... }` reduces
  int line, col;      // the scanner's position: where the next token starts
  SrcLoc comment;     // where an open /* comment began
  bool unterminated;  // an unterminated comment was reported (no EOF cascade)
  int prev_line, prev_end;  // where the token before the lookahead ends
  int last_line, last_end;  // where the lookahead token ends
} ParseCtx;

// A span of source between two bison locations, as a SrcLoc.
SrcLoc fe_loc(const ParseCtx *c, int first_line, int first_col, int last_line, int last_col);

// The largest .tg file read (the scanner counts in int).
#define FE_MAX_SOURCE_BYTES (1 << 30)

// Parses a whole .tg file.  Returns NULL after reporting errors.
Ast *fe_parse(Arena *a, Diag *d, const SrcFile *src);
// Prints the AST back as .tg source (the --dump-after=parse view).
void fe_ast_dump(const Ast *ast, FILE *out);

// ===== check.c ==============================================================

// The largest repeat count (a named, documented limit: unrolling is real).
#define FE_MAX_REPEAT 100000

// Resolves and checks the AST against the topology's device count; returns
// the graph, or NULL after reporting every error found.
Graph *fe_check(Arena *a, Diag *d, const Ast *ast, const Topology *topo);

// ===== asm.c ================================================================

// The most inferences in flight one program may run (tsp-as's .batches and
// a home's `batch B`, the manifest's `batches:`, which tsp-emu reads): each
// batch has its own home of every input, value and output, and the emulator
// its own reference values of them (docs/isa.md section 5).
#define FE_MAX_BATCHES 4096

// Reads tsp-as assembly for the devices of topo; NULL after reporting errors.
Program *fe_assemble(Arena *a, Diag *d, const SrcFile *src, const Topology *topo);

// ===== topology.c ===========================================================

// The deepest nesting of YAML collections accepted (the schema needs 4).
#define FE_MAX_YAML_DEPTH 64

// Loads and wires a topology file; NULL after reporting errors (a file that
// cannot be read is reported in the name of `tool`).
// The largest clock error a topology (or tspc --drift-ppm) may give, in
// parts per million (10 %).
#define FE_MAX_DRIFT_PPM 1e5

Topology *fe_load_topology(Arena *a, Diag *d, const char *tool, const char *path);
// The same from text in memory (tests, fuzzing).
Topology *fe_load_topology_text(Arena *a, Diag *d, const char *path, const char *text);
// Warns, at its entry in failed_nodes or failed_devices, of every failed
// unit no spare stands in for: the model runs on the smaller system
// (tspc says so when it compiles; --describe shows the roles instead).
// Past FE_MAX_DROPPED_WARNINGS of them, one more warning counts the rest.
#define FE_MAX_DROPPED_WARNINGS 16
void fe_warn_dropped_roles(Diag *d, const Topology *t);
// Whether a loaded YAML document (libyaml's yaml_document_t) holds a scalar
// with a NUL byte (a "\0" escape), which C strings would cut silently;
// if so, reports it at that scalar and returns true.  For every YAML the
// tools read (topology, manifest).
struct yaml_document_s;
bool fe_yaml_refuse_nul(Diag *d, const SrcFile *src, struct yaml_document_s *doc);
// Whether some mapping of the document gives a key twice (YAML leaves
// which one counts to the reader; a hand edit appended below an entry
// would be read or ignored by chance); if so, reports the second, with a
// note at the first, and returns true.  For the manifest (the topology
// loader says it per mapping, among its other key checks).
bool fe_yaml_refuse_duplicate_keys(Diag *d, const SrcFile *src, struct yaml_document_s *doc);
// Whether the text's flow collections ([ and {) nest at most
// FE_MAX_YAML_DEPTH deep, checked before libyaml parses it (its tokenizer
// takes time quadratic in the nesting); if not, reports where.
bool fe_yaml_flow_depth_ok(Diag *d, const SrcFile *src);
// Reports why libyaml's parser p failed on src: at the byte it stopped on
// (a reader error, such as a control character, at its offset), and where
// the construct it was reading began when that is elsewhere.
struct yaml_parser_s;
void fe_yaml_report_error(Diag *d, const struct yaml_parser_s *p, const SrcFile *src);
// After the first YAML document of src was read through p: whether
// nothing but the stream's end follows; if a second document does, reports
// it (as "a WHAT holds one YAML document") or why it does not parse.
bool fe_yaml_no_second_document(Diag *d, struct yaml_parser_s *p, const SrcFile *src, const char *what);

#endif

/* elab.h - the elaborator: name resolution, type and shape checking, and
 * lowering to the Graph IR, in one pass.
 *
 * tdsl has no runtime control flow: `if` and `for` are decided at compile
 * time, functions and sub-models are inlined, model parameters are
 * compile-time values.  So checking a program and lowering it are the same
 * walk: the elaborator evaluates everything that is known at compile time
 * (ints, floats, bools, sizes, models, functions) and emits an IR node for
 * every tensor operation, with its dtype and symbolic shape checked as it
 * goes.  See docs/architecture.md for why.
 */
#ifndef TD_ELAB_H
#define TD_ELAB_H

#include "lang/ast.h"
#include "lang/ir.h"

typedef struct td_program td_program;

/* A program: the files it loaded (main file and imports), diagnostics, and
 * the search path for `import`. */
td_program *td_program_new(td_arena *a, td_diags *d);
/* Directories searched by `import name` (name.td), in order. */
void td_program_add_search_dir(td_program *p, const char *dir);
/* Loads and parses a file and, transitively, its imports.  Returns 0, or -1
 * with errors in the diagnostics. */
int td_program_load_file(td_program *p, const char *path);
/* Same, from text in memory (path is used for messages). */
int td_program_load_text(td_program *p, const char *path, const char *text);

/* The entry points of the main file, in file order (docs/language.md,
 * "Entry points"): "main" (fn main()), and "fn" and "Model.method" for the
 * functions marked `export`; in a file without `export`, every method whose
 * parameters all have tensor types of a model whose parameters have
 * defaults, and every such top-level function that no other function or
 * model of the file uses (a helper, checked through its callers). */
int td_program_entries(td_program *p, const char ***names);

/* Why `entry` ("fn", "Model.method") names a function of the main file that
 * is not an entry point: the message (arena), *help how to make it one,
 * *where the function; NULL when it is an entry point or no such function
 * exists (then *where has file -1). */
const char *td_program_not_entry(td_program *p, const char *entry, const char **help, td_span *where);

/* Elaborates one entry point into a graph; NULL with errors in the
 * diagnostics when the program is wrong. */
td_graph *td_program_lower(td_program *p, const char *entry);

/* Writes the main file's syntax tree (--dump=ast). */
void td_program_dump_ast(td_program *p, FILE *out);

/* Seed for rand/randn without seed= (the run's --seed). */
void td_program_set_seed(td_program *p, uint64_t seed);
/* The sources and diagnostics the program was loaded with. */
const td_diags *td_program_diags(const td_program *p);

/* Caps the size of one graph (default 1,000,000 nodes); past it, lowering
 * stops with an error.  Fuzzing uses a small cap to stay fast. */
void td_program_set_node_limit(td_program *p, int n);

/* Elaborates every entry point (what `tdsl check` does); returns the number
 * of errors. */
int td_program_check(td_program *p);

/* ---- a model's parameters from the command line (lang/model_args.c) ----
 * Each entry point's model is made with the given parameters it declares
 * (keyword arguments, checked against its annotations).  A name given twice
 * takes the last value.  0, or -1 when memory runs out. */
int td_program_add_model_arg(td_program *p, const char *name, const char *value);
/* An --entry spec: "Model.method", or "Model(NAME=VALUE, ...).method",
 * whose values are added as above; *entry receives "Model.method".  0, or
 * -1 with why filled. */
int td_program_entry_spec(td_program *p, const char *spec, const char **entry, char *why, size_t why_n);
/* Reports every given name that no model of the main file declares (with
 * "did you mean"); the number of errors. */
int td_program_check_model_args(td_program *p);

/* ---- load("x.npy") and save("y.npy", t) (lang/builtins_io.c) ----
 * load() reads the header of a .npy file while the program is elaborated
 * and becomes an INPUT node of the graph with the file's dtype and shape,
 * beyond the entry's arguments; whoever runs the graph reads its data
 * (td_host_read).  save() records a node whose value is written to a .npy
 * file after the graph has run (td_host_write).  Only a caller that does
 * both allows them (td_program_allow_files): `tdsl run`, `tdsl check` and
 * the REPL; elsewhere (tdsl build, train, explain) they are errors at their
 * call. */
typedef struct td_host_file {
  int node;                  /* the INPUT node (load) or the value (save) */
  const char *path;
  td_span span;              /* the call */
} td_host_file;
void td_program_allow_files(td_program *p, int allow);
/* The load()s and save()s of the graph last elaborated, in program order. */
int td_program_loads(const td_program *p, const td_host_file **out);
int td_program_saves(const td_program *p, const td_host_file **out);
/* Reads the data of load f, whose INPUT node is n (the file must still
 * have n's dtype and shape).  NULL with err filled. */
td_tensor *td_host_read(const td_host_file *f, const td_node *n, td_err *err);
/* Writes save f's value t to its file (a temporary file renamed).  0 or -1. */
int td_host_write(const td_host_file *f, const td_tensor *t, td_err *err);
/* The arguments of g (an entry as elaborated): the indices k of
 * g->inputs[k] that are not load()s, into pos[] (room for g->n_inputs);
 * their count. */
int td_program_arg_inputs(const td_program *p, const td_graph *g, int *pos);

#endif

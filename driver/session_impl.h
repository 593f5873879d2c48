/* session_impl.h - what the session's files share (driver/session*.c).
 *
 * session.c is the core: the session's state, one input from attach to
 * commit or rollback, parsing, eval and load.  session_show.c makes the
 * text of values (what an expression shows, :type); session_explain.c the
 * commands that only look (:ir, :explain, :time); session_complete.c tab
 * completion.  Internal names carry the tds_ prefix.
 */
#ifndef TD_SESSION_IMPL_H
#define TD_SESSION_IMPL_H

#include "driver/session.h"
#include "lang/elab_impl.h"
#include "runtime/strbuf.h"

/* A materialised tensor that session values refer to. */
typedef struct slot {
  td_tensor *t;       /* owned reference; NULL once nothing refers to it */
  const char *name;   /* name of the leaf it becomes (session arena) */
  td_span span;       /* where its value was computed */
  int is_param;       /* a model parameter: re-attached as a PARAM leaf */
  td_attr attr;       /* PARAM: its initialiser, kept for listings */
} slot;

struct td_session {
  td_arena *arena;    /* sources, syntax trees, compile-time values */
  td_diags diags;
  td_program *prog;
  td_session_opts o;
  slot *slots;
  int n_slots, cap_slots;
  char **loaded;      /* files given to td_session_load, for reload */
  int n_loaded, cap_loaded;
  td_drive_opts drive;            /* how inputs run (driver/driver.h) */
  td_session_runner run;          /* NULL: the driver, with `drive` */
  void *run_ud;
};

typedef struct journal_entry {
  td_value *at;
  td_value old;
} journal_entry;

/* The state of one input, from attach to commit or rollback. */
typedef struct lowering {
  td_arena *arena;          /* the graphs of this input */
  td_graph *g;              /* the graph as elaborated */
  int n_attach;             /* nodes 0 .. n_attach-1 are attached slots */
  int *attach;              /* [n_attach]: the slot of each */
  int *slot_node;           /* [n_slots]: node of a slot in g, or -1 */
  journal_entry *jr;
  int n_jr, cap_jr;
  el_binding *saved_b;      /* the scope's bindings before the input */
  int saved_n, saved_cap;
  int saved_mods;           /* modules loaded before the input */
  td_value *shown;          /* values of the expression statements */
  int n_shown, cap_shown;
  int before;               /* error count when the input started */
  int begun;                /* the scope was saved: rollback restores it */
  int oom;
  /* made by finish_graph */
  int n;                    /* g->n_nodes */
  unsigned char *need;      /* [n]: a value to materialise or show */
  int *out_of;              /* [n]: output index in run, or -1 */
  int *remap;               /* [n]: id in run, or -1 (pruned) */
  int *new_slot;            /* [n]: slot made at commit, or -1 */
  td_graph *run;            /* pruned graph with outputs */
  int *orig;                /* [run->n_nodes]: id in g */
  /* made by run_once */
  td_tensor **params;       /* [run->n_params] */
  unsigned char *own;       /* [run->n_params]: params[k] made here */
  td_tensor **outs;         /* [run->n_outputs] */
} lowering;

/* A span that names no source (messages without a location). */
td_span tds_no_span(void);
/* Reports that memory ran out (td_diags_oom). */
void tds_oom(td_session *s);
/* The session's scope: the globals of its main module. */
el_scope *tds_top_scope(td_session *s);

/* Parses and elaborates text into *L (which the caller ends with
 * tds_end_input, after tds_rollback unless it committed); 0 when it is
 * correct. */
int tds_lower_text(td_session *s, lowering *L, const char *text, int first_line);
/* Makes L->run, the pruned and verified graph: with bind, its outputs are
 * every value to materialise; with show_leaves, leaves that are shown are
 * outputs too (listings).  0, or -1 with a diagnostic. */
int tds_finish_graph(td_session *s, lowering *L, int bind, int show_leaves);
/* L->run's parameters: the attached slots', and fresh ones from their
 * recipes.  0, or -1 with err filled. */
int tds_make_params(td_session *s, lowering *L, td_err *err);
/* Runs L->run once (quiet: print() output is dropped), through prep when
 * it is not NULL (the graph prepared for the session's backend), else
 * through the session's runner or the driver.  0, or -1 with a
 * diagnostic. */
int tds_run_once(td_session *s, lowering *L, int quiet, td_prepared *prep);
/* Undoes everything the input bound (nothing when it never began). */
void tds_rollback(td_session *s, lowering *L);
/* Frees the input's state. */
void tds_end_input(lowering *L);
/* The tensor of node x of L->g after the run (NULL when there is none). */
td_tensor *tds_node_tensor(td_session *s, lowering *L, int x);
/* The last shown value of an input, or NULL with a diagnostic naming what. */
const td_value *tds_last_value(td_session *s, lowering *L, const char *what);

/* session_show.c: the texts of the values the input shows (NULL when
 * memory runs out), freed with tds_free_texts; the :type answer of v. */
char **tds_value_texts(td_session *s, lowering *L);
void tds_free_texts(char **t, int n);
void tds_type_answer(td_session *s, lowering *L, const td_value *v, td_strbuf *b);

#endif

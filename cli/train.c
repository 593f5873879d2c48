/* train.c - `tdsl train FILE.td`: the host loop of training.
 *
 * A training model has a `step(x, y) -> f32[]` method that returns the
 * batch's mean loss and updates its parameters (and optimizer state) in
 * place when the call ends, and optionally `evaluate(x, y) -> (f32[], i64[])`
 * returning the mean loss and the number of correct predictions.  Both are
 * ordinary graphs: each is prepared once (td_prepare) and run per batch
 * (td_prepared_run) with the same parameter tensors every call, one table
 * of them by state_dict name, which evaluate's parameters are bound from.
 * The data are IDX or .npy files (runtime/idx.h); the shuffle, the rows of
 * a batch, the classes a graph reveals and checkpoints are driver/train.h's.
 * docs/training.md, "tdsl train", is the user's description.
 *
 * Exit codes as every command's: 0 done, 1 the program, the data or a run
 * is wrong (a NaN loss included), 2 a bad command line; and 130 after
 * Ctrl-C, which stops after the running step and writes the checkpoint.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/explain_cmd.h"
#include "cli/search.h"
#include "cli/train.h"
#include "driver/driver.h"
#include "driver/train.h"
#include "lang/elab.h"
#include "runtime/idx.h"
#include "runtime/io.h"
#include "runtime/mem.h"

#define DATASETS_DIR "/usr/share/datasets" /* Debian's dataset-* packages; $TDSL_DATASETS overrides */

typedef struct train_opts {
  const char *file, *model, *step, *eval;
  const char *train[2], *test[2]; /* images, labels */
  const char *log, *plot, *checkpoint, *resume, *save_weights;
  int64_t epochs, batch, limit, every, max_steps;
  uint64_t seed;
  int seed_set, batch_set, eager, check_numerics, eval_set;
} train_opts;

static void usage(FILE *f) {
  fputs("usage: tdsl train FILE.td [--model M] [--step NAME] [--eval NAME]\n"
        "                  (--train IMAGES,LABELS [--test IMAGES,LABELS] | --dataset fashion-mnist)\n"
        "                  [--epochs E] [--batch B] [--seed S] [--limit N] [--eager [--check-numerics]]\n"
        "                  [--threads T] [--log FILE.csv] [--plot FILE.png]\n"
        "                  [--checkpoint FILE.safetensors [--checkpoint-every K]] [--resume FILE]\n"
        "                  [--max-steps N] [--save-weights FILE.safetensors]\n"
        "\n"
        "Trains model M of FILE: each batch runs M.step(x, y), which returns the batch's mean loss\n"
        "(f32[]) and updates the parameters in place; after each epoch with --test, M.evaluate(x, y)\n"
        "returning (mean loss f32[], correct predictions i64[]) runs over the test set.\n"
        "\n"
        "--model M            the model (default: the one model of FILE with a `step` method)\n"
        "--step NAME          the step method (default step); --eval NAME the evaluation (default\n"
        "                     evaluate, skipped when the model has none)\n"
        "--train IMAGES,LABELS  the training data: IDX files (gzip-compressed or not) or .npy\n"
        "--test IMAGES,LABELS   the test data, evaluated after every epoch\n"
        "--dataset fashion-mnist  both, from Debian's dataset-fashion-mnist (" DATASETS_DIR "/fashion-mnist)\n"
        "--epochs E           passes over the training data (default 1)\n"
        "--batch B            examples per step (default 64; the last batch of an epoch may be smaller)\n"
        "--seed S             the shuffle's seed and the parameters' initialisation seed (default 0)\n"
        "--limit N            use only the first N training examples\n"
        "--eager              run op by op in the interpreter (default: compiled for the CPU);\n"
        "                     --check-numerics then stops at the first op that makes NaN or Inf\n"
        "--threads T          threads of the compiled code (TDSL_NUM_THREADS)\n"
        "--log FILE.csv       one row per step: epoch,step,examples_seen,train_loss,test_loss,\n"
        "                     test_accuracy,seconds (train_loss: the epoch's running mean; the test\n"
        "                     columns on the last row of each epoch)\n"
        "--plot FILE.png      the loss and accuracy curves, drawn by gnuplot when it is installed\n"
        "--checkpoint FILE    all parameters and optimizer state with the position in training,\n"
        "                     written atomically after every epoch and every K steps (--checkpoint-every)\n"
        "--resume FILE        continue from a checkpoint at the very next batch, in the same order\n"
        "--max-steps N        stop after step N (counted over all epochs, resumed runs included),\n"
        "                     writing the checkpoint; --resume continues from there (so does Ctrl-C:\n"
        "                     the running step finishes, the checkpoint is written, exit status 130)\n"
        "--save-weights FILE  the final parameters (safetensors)\n"
        "\n"
        "Images become the dtype of step's x with their raw values (u8: 0 to 255 as f32; normalising\n"
        "is the model's job; an i64 x takes integer ids as they are); labels become the step's\n"
        "integer dtype, one per example ([N]) or of the shape of step's y ([N, T] for y: i64[B, T]).\n"
        "An example of shape [a, b] is flattened when the step wants [B, a*b].  See docs/training.md.\n", f);
}

static int bad(const char *fmt, const char *arg) {
  fprintf(stderr, "tdsl: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(run 'tdsl train --help' for usage)\n");
  return 2;
}

static int parse_count(const char *opt, const char *val, int64_t min, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(val, &end, 10);
  if (!*val || *end || errno || v < min) {
    fprintf(stderr, "tdsl: %s needs an integer of at least %lld, got '%s'\n(run 'tdsl train --help' for usage)\n",
            opt, (long long)min, val);
    return 2;
  }
  *out = v;
  return 0;
}

/* "A,B" into pair[0], pair[1], split at the first comma, which becomes
 * the first string's end: val is an argument of argv (writable, and alive
 * until exit), so nothing is allocated. */
static int parse_pair(const char *opt, char *val, const char **pair) {
  char *c = strchr(val, ',');
  if (!c || c == val || !c[1])
    return bad("%s needs IMAGES,LABELS (two files separated by a comma)", opt);
  *c = 0;
  pair[0] = val;
  pair[1] = c + 1;
  return 0;
}

/* --dataset NAME: Debian's files, which must be there. */
static int dataset(const char *name, train_opts *o) {
  static char paths[4][512];
  static const char *const files[4] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                                       "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
  if (strcmp(name, "fashion-mnist"))
    return bad("--dataset knows only fashion-mnist, got '%s'", name);
  const char *dir = getenv("TDSL_DATASETS");
  for (int i = 0; i < 4; i++) {
    snprintf(paths[i], sizeof paths[i], "%s/fashion-mnist/%s", dir && *dir ? dir : DATASETS_DIR, files[i]);
    if (access(paths[i], R_OK)) {
      fprintf(stderr, "tdsl: error: --dataset fashion-mnist: %s: %s\nhelp: install the data set with "
              "`apt-get install dataset-fashion-mnist`\n", paths[i], strerror(errno));
      return 1;
    }
  }
  o->train[0] = paths[0], o->train[1] = paths[1], o->test[0] = paths[2], o->test[1] = paths[3];
  return 0;
}

static int parse(int argc, char **argv, train_opts *o) {
  memset(o, 0, sizeof *o);
  o->epochs = 1;
  o->batch = 64;
  o->step = "step";
  o->eval = "evaluate";
  const char *ds = NULL;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int rc = 0;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return -1;
    }
    if (!strcmp(a, "--eager")) { o->eager = 1; continue; }
    if (!strcmp(a, "--check-numerics")) { o->check_numerics = 1; continue; }
    if (a[0] == '-' && a[1] == '-') {
      static const char *const with_value[] = {"--model", "--step", "--eval", "--train", "--test", "--dataset",
                                               "--epochs", "--batch", "--seed", "--limit", "--threads", "--log",
                                               "--plot", "--checkpoint", "--checkpoint-every", "--resume",
                                               "--save-weights", "--max-steps"};
      int known = 0;
      for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++) known |= !strcmp(a, with_value[k]);
      if (!known) return bad("train: unknown option '%s'", a);
      if (!v) return bad("%s needs a value", a);
      i++;
      int64_t n;
      if (!strcmp(a, "--model")) o->model = v;
      else if (!strcmp(a, "--step")) o->step = v;
      else if (!strcmp(a, "--eval")) o->eval = v, o->eval_set = 1;
      else if (!strcmp(a, "--train")) rc = parse_pair(a, argv[i], o->train);
      else if (!strcmp(a, "--test")) rc = parse_pair(a, argv[i], o->test);
      else if (!strcmp(a, "--dataset")) ds = v;
      else if (!strcmp(a, "--epochs")) rc = parse_count(a, v, 1, &o->epochs);
      else if (!strcmp(a, "--batch")) rc = parse_count(a, v, 1, &o->batch), o->batch_set = 1;
      else if (!strcmp(a, "--limit")) rc = parse_count(a, v, 1, &o->limit);
      else if (!strcmp(a, "--checkpoint-every")) rc = parse_count(a, v, 1, &o->every);
      else if (!strcmp(a, "--max-steps")) rc = parse_count(a, v, 1, &o->max_steps);
      else if (!strcmp(a, "--seed")) {
        rc = parse_count(a, v, 0, &n);
        o->seed = (uint64_t)n;
        o->seed_set = 1;
      } else if (!strcmp(a, "--threads")) {
        if (!(rc = parse_count(a, v, 1, &n))) setenv("TDSL_NUM_THREADS", v, 1); /* before the pool starts */
      }
      else if (!strcmp(a, "--log")) o->log = v;
      else if (!strcmp(a, "--plot")) o->plot = v;
      else if (!strcmp(a, "--checkpoint")) o->checkpoint = v;
      else if (!strcmp(a, "--resume")) o->resume = v;
      else o->save_weights = v;
      if (rc) return rc;
    } else if (o->file) {
      return bad("train: only one file can be given, found another: '%s'", a);
    } else {
      o->file = a;
    }
  }
  if (!o->file) return bad("%s", "train needs a .td file");
  if (o->check_numerics && !o->eager) return bad("%s", "--check-numerics needs --eager (it runs op by op)");
  if (o->every && !o->checkpoint) return bad("%s", "--checkpoint-every needs --checkpoint FILE");
  if (ds && (o->train[0] || o->test[0])) return bad("%s", "--dataset gives the data: leave out --train and --test");
  if (ds) return dataset(ds, o);
  if (!o->train[0]) return bad("%s", "train needs --train IMAGES,LABELS or --dataset fashion-mnist");
  return 0;
}

/* ---- the model --------------------------------------------------------- */

typedef struct trainer {
  train_opts *o;
  td_diags *d;
  td_program *prog;
  td_graph *step, *eval;
  char step_name[256], eval_name[256];
  td_tensor **params;     /* one per PARAM of step (g->params order) */
  td_tensor **eparams;    /* evaluate's, the same tensors bound by name */
  td_prepared *pstep, *peval;
  td_tensor *x, *y, *tx, *ty; /* training and test data */
  int64_t n, n_test, classes;
  char hash[17];
  /* the position: the next batch is batch `pos_step` of epoch `pos_epoch` (0-based) */
  int64_t pos_epoch, pos_step, global, seen, epoch_seen;
  double loss_sum, seconds_before;
  FILE *csv;
  double *curve;          /* per step: global step, train loss; per epoch: test loss, accuracy (for --plot) */
  int64_t n_curve, cap_curve;
} trainer;

static void add_dir(void *ud, const char *dir) { td_program_add_search_dir(ud, dir); }

/* The model: --model, or the one model of the main file with a `step`. */
static int choose_model(trainer *t) {
  const char **names;
  int n = td_program_entries(t->prog, &names), found = 0;
  char first[256] = "", others[1024] = "";
  for (int i = 0; i < n; i++) {
    const char *dot = strrchr(names[i], '.');
    if (!dot || strcmp(dot + 1, t->o->step)) continue;
    if (t->o->model && ((size_t)(dot - names[i]) != strlen(t->o->model) ||
                        strncmp(names[i], t->o->model, (size_t)(dot - names[i]))))
      continue;
    if (!found++) snprintf(first, sizeof first, "%.*s", (int)(dot - names[i]), names[i]);
    size_t l = strlen(others);
    snprintf(others + l, sizeof others - l, "%s%.*s", l ? ", " : "", (int)(dot - names[i]), names[i]);
  }
  if (!found && t->o->model) {
    fprintf(stderr, "tdsl: error: %s has no model %s with a method `%s` (an entry point %s.%s)\n", t->o->file,
            t->o->model, t->o->step, t->o->model, t->o->step);
    return -1;
  }
  if (!found) {
    fprintf(stderr, "tdsl: error: %s has no model with a method `%s`\nhelp: a training model has "
            "`fn %s(x: f32[B, ...], y: i64[B]) -> f32[]` returning the batch's loss (docs/training.md); "
            "in a file that marks its entry points with `export`, write `export fn %s`\n",
            t->o->file, t->o->step, t->o->step, t->o->step);
    return -1;
  }
  if (found > 1) {
    fprintf(stderr, "tdsl: error: %s has %d models with a method `%s` (%s)\nhelp: choose one with --model\n",
            t->o->file, found, t->o->step, others);
    return -1;
  }
  snprintf(t->step_name, sizeof t->step_name, "%s.%s", first, t->o->step);
  snprintf(t->eval_name, sizeof t->eval_name, "%s.%s", first, t->o->eval);
  int has_eval = 0;
  for (int i = 0; i < n; i++) has_eval |= !strcmp(names[i], t->eval_name);
  if (!has_eval && t->o->eval_set) {
    fprintf(stderr, "tdsl: error: %s: model %s has no method `%s` (--eval)\n", t->o->file, first, t->o->eval);
    return -1;
  }
  if (!has_eval) t->eval_name[0] = 0;
  return 0;
}

static const char *type_of(const td_graph *g, const td_node *n, char *buf, size_t cap) {
  return td_type_str(g, n->dtype, n->rank, n->shape, buf, cap);
}

/* step(x: f32[B, ...], y: int[B]) -> f32[]; evaluate(...) -> (f32[], int[]). */
static int check_signature(const td_graph *g, int is_eval) {
  char a[256], b[256];
  if (g->n_inputs != 2) {
    fprintf(stderr, "tdsl: error: %s takes %d argument%s; a training %s takes two, the images and the labels: "
            "(x: f32[B, ...], y: i64[B])\n", g->name, g->n_inputs, g->n_inputs == 1 ? "" : "s",
            is_eval ? "evaluation" : "step");
    return -1;
  }
  const td_node *x = &g->nodes[g->inputs[0]], *y = &g->nodes[g->inputs[1]];
  if (x->rank < 1 || x->shape[0] >= 0 || y->rank < 1 || y->shape[0] != x->shape[0]) {
    fprintf(stderr, "tdsl: error: %s(%s: %s, %s: %s): the arguments must share a symbolic batch size as "
            "their first dimension, e.g. (x: f32[B, 28, 28], y: i64[B])\n", g->name, x->name, type_of(g, x, a, sizeof a),
            y->name, type_of(g, y, b, sizeof b));
    return -1;
  }
  if (y->dtype != TD_I32 && y->dtype != TD_I64) {
    fprintf(stderr, "tdsl: error: %s's labels %s: %s must be integers (i64[B, ...] or i32[B, ...])\n", g->name, y->name,
            type_of(g, y, b, sizeof b));
    return -1;
  }
  if (x->dtype == TD_BOOL) {
    fprintf(stderr, "tdsl: error: %s's images %s: %s cannot be bool\n", g->name, x->name, type_of(g, x, a, sizeof a));
    return -1;
  }
  int n_out = is_eval ? 2 : 1, ok = g->n_outputs == n_out;
  for (int i = 0; ok && i < n_out; i++) {
    const td_node *r = &g->nodes[g->outputs[i]];
    ok = r->rank == 0 && (i == 0 ? td_dtype_is_float(r->dtype) : !td_dtype_is_float(r->dtype) && r->dtype != TD_BOOL);
  }
  if (!ok) {
    fprintf(stderr, "tdsl: error: %s must return %s\n", g->name,
            is_eval ? "(f32[], i64[]): the batch's mean loss and its number of correct predictions"
                    : "f32[]: the batch's mean loss");
    return -1;
  }
  return 0;
}

static int lower(trainer *t) {
  t->step = td_program_lower(t->prog, t->step_name);
  if (t->step && t->eval_name[0]) t->eval = td_program_lower(t->prog, t->eval_name);
  if (!t->step || (t->eval_name[0] && !t->eval) || t->d->n_errors) {
    td_diag_render(t->d, stderr, isatty(2) && !getenv("NO_COLOR"));
    return -1;
  }
  td_diag_render(t->d, stderr, isatty(2) && !getenv("NO_COLOR")); /* warnings */
  if (check_signature(t->step, 0) || (t->eval && check_signature(t->eval, 1))) return -1;
  t->classes = td_train_classes(t->step, t->step->inputs[1]);
  int64_t c = t->eval ? td_train_classes(t->eval, t->eval->inputs[1]) : -1;
  if (c >= 0 && (t->classes < 0 || c < t->classes)) t->classes = c;
  td_train_params_hash(t->step, t->hash);
  return 0;
}

/* ---- the data ---------------------------------------------------------- */

static const char *shape_of(const td_tensor *d, char *buf, size_t cap) {
  return td_shape_str(d->dtype, d->rank, d->shape, buf, cap);
}

/* Makes the images in *data (read as x's dtype) fit argument x of g: the
 * same dims, or flattened when x wants [B, a*b] of [N, a, b]. */
static int fit_images(const char *file, td_tensor *data, const td_graph *g) {
  const td_node *x = &g->nodes[g->inputs[0]];
  char a[256], b[256];
  int64_t per = data->shape[0] ? data->numel / data->shape[0] : 0, want = 1;
  int literal = 1;
  for (int k = 1; k < x->rank; k++) {
    literal &= x->shape[k] >= 0;
    if (x->shape[k] >= 0) want *= x->shape[k];
  }
  if (data->rank == x->rank) {
    for (int k = 1; k < x->rank; k++)
      if (x->shape[k] >= 0 && x->shape[k] != data->shape[k]) {
        fprintf(stderr, "tdsl: error: %s: the images are %s, but %s's argument %s is %s: dimension %d is %lld, "
                "expected %lld\n", file, shape_of(data, a, sizeof a), g->name, x->name, type_of(g, x, b, sizeof b),
                k, (long long)data->shape[k], (long long)x->shape[k]);
        return -1;
      }
    return 0;
  }
  if (literal && want == per && data->rank >= 1) { /* [N, a, b] as [N, a*b] (C order: the same bytes) */
    int64_t n = data->shape[0];
    data->rank = x->rank;
    data->shape[0] = n;
    for (int k = 1; k < x->rank; k++) data->shape[k] = x->shape[k];
    return 0;
  }
  fprintf(stderr, "tdsl: error: %s: the images are %s, but %s's argument %s is %s: an example holds %lld "
          "elements, the argument's %s%lld\n", file, shape_of(data, a, sizeof a), g->name, x->name,
          type_of(g, x, b, sizeof b), (long long)per, literal ? "" : "(of rank the data lacks) ", (long long)want);
  return -1;
}

/* Checks that the labels in *lab fit argument y of g: y's rank, its literal
 * dimensions, and the images' size where y shares a symbolic one with x
 * (y: i64[B, T] with x: i64[B, T]). */
static int fit_labels(const char *const *files, const td_tensor *img, const td_tensor *lab, const td_graph *g) {
  const td_node *x = &g->nodes[g->inputs[0]], *y = &g->nodes[g->inputs[1]];
  char a[256], b[256];
  td_shape_str(y->dtype, lab->rank, lab->shape, a, sizeof a); /* read as f64, said as y's dtype */
  if (lab->rank != y->rank) {
    fprintf(stderr, "tdsl: error: %s: the labels are %s, but %s's argument %s is %s: rank %d, expected %d\n", files[1],
            a, g->name, y->name, type_of(g, y, b, sizeof b), lab->rank, y->rank);
    return -1;
  }
  for (int k = 1; k < y->rank; k++) {
    int64_t want = y->shape[k];
    const char *from = "";
    for (int j = 1; want < 0 && j < x->rank && j < img->rank; j++)
      if (x->shape[j] == y->shape[k]) {
        want = img->shape[j];
        from = files[0];
      }
    if (want >= 0 && lab->shape[k] != want) {
      fprintf(stderr, "tdsl: error: %s: the labels are %s, but %s's argument %s is %s: dimension %d is %lld, "
              "expected %lld%s%s\n", files[1], a, g->name, y->name,
              type_of(g, y, b, sizeof b), k, (long long)lab->shape[k], (long long)want, *from ? " as in " : "", from);
      return -1;
    }
  }
  return 0;
}

/* Reads images and labels for graph g: the same count, labels integers in
 * [0, classes) when the number of classes is known. */
static int load_pair(trainer *t, const char *const *files, const td_graph *g, td_tensor **img, td_tensor **lab,
                     int64_t limit) {
  const td_node *x = &g->nodes[g->inputs[0]], *y = &g->nodes[g->inputs[1]];
  td_err err;
  td_tensor *l64 = NULL;
  char a[256];
  if (td_data_read(files[0], x->dtype, img, &err) || td_data_read(files[1], TD_F64, &l64, &err)) {
    fprintf(stderr, "tdsl: error: %s\n", err.msg);
    return -1;
  }
  if ((*img)->rank < 1 || (*img)->shape[0] < 1) {
    fprintf(stderr, "tdsl: error: %s: the images are %s: no examples\n", files[0], shape_of(*img, a, sizeof a));
    goto fail;
  }
  if (l64->rank < 1 || l64->shape[0] != (*img)->shape[0]) {
    fprintf(stderr, "tdsl: error: %s holds %lld images but %s holds %lld labels (%s): they must be as many\n",
            files[0], (long long)(*img)->shape[0], files[1], l64->rank < 1 ? 0ll : (long long)l64->shape[0],
            shape_of(l64, a, sizeof a));
    goto fail;
  }
  if (fit_images(files[0], *img, g) || fit_labels(files, *img, l64, g)) goto fail;
  if (limit && limit < (*img)->shape[0]) { /* the first `limit` examples: shrink the views */
    (*img)->numel = (*img)->numel / (*img)->shape[0] * limit;
    (*img)->shape[0] = limit;
    l64->numel = l64->numel / l64->shape[0] * limit;
    l64->shape[0] = limit;
  }
  for (int64_t i = 0; i < l64->numel; i++) {
    double v = ((double *)l64->data)[i];
    double top = y->dtype == TD_I32 ? 2147483647.0 : 9.2e18;
    if (v != floor(v) || v < 0 || (t->classes >= 0 && v >= (double)t->classes) || v > top) {
      char at[64] = ""; /* labels [N, ...]: the example of flat index i */
      int64_t per = l64->numel / l64->shape[0];
      if (l64->rank > 1) snprintf(at, sizeof at, " (of example %lld)", (long long)(i / per));
      if (v != floor(v))
        fprintf(stderr, "tdsl: error: %s: label %lld%s is %g: labels must be integers\n", files[1], (long long)i, at,
                v);
      else if (t->classes >= 0)
        fprintf(stderr, "tdsl: error: %s: label %lld%s is %.0f, outside [0, %lld): %s has %lld classes\n", files[1],
                (long long)i, at, v, (long long)t->classes, g->name, (long long)t->classes);
      else
        fprintf(stderr, "tdsl: error: %s: label %lld%s is %.0f: labels are class numbers from 0\n", files[1],
                (long long)i, at, v);
      goto fail;
    }
  }
  *lab = td_tensor_new(y->dtype, l64->rank, l64->shape, &err);
  if (!*lab) {
    fprintf(stderr, "tdsl: error: %s: %s\n", files[1], err.msg);
    goto fail;
  }
  for (int64_t i = 0; i < l64->numel; i++) td_tensor_set(*lab, i, ((double *)l64->data)[i]);
  td_tensor_release(l64);
  return 0;
fail:
  td_tensor_release(l64);
  td_tensor_release(*img);
  *img = NULL;
  return -1;
}

/* ---- parameters, checkpoints ------------------------------------------- */

static const char *meta_or(const td_st_file *f, const char *key) {
  const char *v = td_safetensors_meta(f, key);
  return v ? v : "";
}

static int meta_int(const td_st_file *f, const char *key, int64_t *out) {
  const char *v = td_safetensors_meta(f, key);
  char *end;
  if (!v || !*v) return -1;
  errno = 0;
  long long n = strtoll(v, &end, 10);
  if (*end || errno || n < 0) return -1;
  *out = n;
  return 0;
}

/* --resume: the checkpoint's parameters into w, its position into t. */
static int open_resume(trainer *t, td_tensor_map *w) {
  const char *path = t->o->resume;
  td_st_file f;
  td_err err;
  int64_t seed, batch, n;
  if (td_safetensors_open(path, &f, &err)) {
    fprintf(stderr, "tdsl: error: --resume: %s\n", err.msg);
    return -1;
  }
  int rc = -1;
  const char *hash = meta_or(&f, "params_hash");
  if (strcmp(meta_or(&f, "format"), TD_TRAIN_FORMAT)) {
    fprintf(stderr, "tdsl: error: --resume: %s is not a checkpoint of tdsl train (its metadata has no "
            "\"format\": \"" TD_TRAIN_FORMAT "\"); to start from weights alone, train afresh\n", path);
  } else if (strcmp(hash, t->hash)) {
    fprintf(stderr, "tdsl: error: --resume: %s is a checkpoint of another model: it was written by %s, whose "
            "parameters (fingerprint %s) differ from %s's (fingerprint %s)\n", path, meta_or(&f, "entry"), hash,
            t->step->name, t->hash);
    if (td_check_weights(t->step, path, f.items, f.n, &err)) fprintf(stderr, "%s\n", err.msg);
  } else if (meta_int(&f, "epoch", &t->pos_epoch) || meta_int(&f, "step", &t->pos_step) ||
             meta_int(&f, "global_step", &t->global) || meta_int(&f, "seed", &seed) ||
             meta_int(&f, "batch", &batch) || meta_int(&f, "examples", &n) ||
             meta_int(&f, "examples_seen", &t->seen) || meta_int(&f, "epoch_seen", &t->epoch_seen)) {
    fprintf(stderr, "tdsl: error: --resume: %s: its metadata lacks the position in training (epoch, step, "
            "global_step, seed, batch, examples)\n", path);
  } else if (t->o->seed_set && (uint64_t)seed != t->o->seed) {
    fprintf(stderr, "tdsl: error: --resume: %s was trained with --seed %lld, not %llu: the shuffle would differ\n",
            path, (long long)seed, (unsigned long long)t->o->seed);
  } else if (t->o->batch_set && batch != t->o->batch) {
    fprintf(stderr, "tdsl: error: --resume: %s was trained with --batch %lld, not %lld: the batches would differ\n",
            path, (long long)batch, (long long)t->o->batch);
  } else if (n != t->n) {
    fprintf(stderr, "tdsl: error: --resume: %s was trained on %lld examples, this run has %lld (--train, "
            "--limit)\n", path, (long long)n, (long long)t->n);
  } else if (td_check_weights(t->step, path, f.items, f.n, &err) || td_safetensors_load_all(&f, w, &err)) {
    fprintf(stderr, "tdsl: error: %s\n", err.msg);
  } else {
    t->o->seed = (uint64_t)seed;
    t->o->batch = batch;
    t->loss_sum = strtod(meta_or(&f, "loss_sum"), NULL);
    t->seconds_before = strtod(meta_or(&f, "seconds"), NULL);
    rc = 0;
  }
  td_safetensors_close(&f);
  return rc;
}

/* A --checkpoint that exists must be one of this model: never overwrite
 * another model's. */
static int check_overwrite(trainer *t) {
  td_st_file f;
  td_err err;
  if (!t->o->checkpoint || access(t->o->checkpoint, F_OK)) return 0;
  if (td_safetensors_open(t->o->checkpoint, &f, &err)) return 0; /* not a checkpoint: replaced */
  int other = !strcmp(meta_or(&f, "format"), TD_TRAIN_FORMAT) && strcmp(meta_or(&f, "params_hash"), t->hash);
  if (other)
    fprintf(stderr, "tdsl: error: --checkpoint %s holds a checkpoint of another model (%s, fingerprint %s; "
            "%s's is %s): it is left as it is\nhelp: choose another --checkpoint file, or remove that one\n",
            t->o->checkpoint, meta_or(&f, "entry"), meta_or(&f, "params_hash"), t->step->name, t->hash);
  td_safetensors_close(&f);
  return other ? -1 : 0;
}

static int make_params(trainer *t) {
  td_tensor_map w;
  td_err err;
  td_tensor_map_init(&w);
  int rc = -1;
  t->params = td_calloc((size_t)t->step->n_params + 1, sizeof *t->params);
  t->eparams = t->eval ? td_calloc((size_t)t->eval->n_params + 1, sizeof *t->eparams) : NULL;
  if (!t->params || (t->eval && !t->eparams)) {
    fprintf(stderr, "tdsl: error: out of memory\n");
    goto done;
  }
  if (t->o->resume && open_resume(t, &w)) goto done;
  if (check_overwrite(t)) goto done;
  if (td_make_params(t->step, t->o->resume ? &w : NULL, t->o->seed, t->params, &err)) {
    fprintf(stderr, "tdsl: error: %s\n", err.msg);
    goto done;
  }
  /* the table by name: a name reached twice in step is one tensor */
  for (int i = 0; i < t->step->n_params; i++)
    for (int j = 0; j < i; j++)
      if (!strcmp(t->step->nodes[t->step->params[i]].name, t->step->nodes[t->step->params[j]].name)) {
        td_tensor_release(t->params[i]);
        t->params[i] = td_tensor_retain(t->params[j]);
        break;
      }
  for (int i = 0; t->eval && i < t->eval->n_params; i++) {
    const td_node *e = &t->eval->nodes[t->eval->params[i]];
    for (int j = 0; j < t->step->n_params && !t->eparams[i]; j++) {
      const td_node *s = &t->step->nodes[t->step->params[j]];
      if (strcmp(e->name, s->name)) continue;
      if (e->dtype != s->dtype || e->rank != s->rank || memcmp(e->shape, s->shape, sizeof e->shape)) {
        char a[256], b[256];
        fprintf(stderr, "tdsl: error: parameter '%s' is %s in %s but %s in %s\n", e->name,
                type_of(t->eval, e, a, sizeof a), t->eval->name, type_of(t->step, s, b, sizeof b), t->step->name);
        goto done;
      }
      t->eparams[i] = td_tensor_retain(t->params[j]);
    }
    if (!t->eparams[i]) {
      fprintf(stderr, "tdsl: error: %s uses parameter '%s', which %s does not: evaluate's parameters must be "
              "step's\n", t->eval->name, e->name, t->step->name);
      goto done;
    }
  }
  rc = 0;
done:
  td_tensor_map_free(&w);
  return rc;
}

/* Writes the checkpoint at the current position. */
static int save_checkpoint(trainer *t, double seconds) {
  char v[9][48];
  snprintf(v[0], sizeof v[0], "%lld", (long long)t->pos_epoch);
  snprintf(v[1], sizeof v[1], "%lld", (long long)t->pos_step);
  snprintf(v[2], sizeof v[2], "%lld", (long long)t->global);
  snprintf(v[3], sizeof v[3], "%llu", (unsigned long long)t->o->seed);
  snprintf(v[4], sizeof v[4], "%lld", (long long)t->o->batch);
  snprintf(v[5], sizeof v[5], "%lld", (long long)t->n);
  snprintf(v[6], sizeof v[6], "%.17g", t->loss_sum);
  snprintf(v[7], sizeof v[7], "%.3f", seconds);
  snprintf(v[8], sizeof v[8], "%lld", (long long)t->seen);
  char es[48];
  snprintf(es, sizeof es, "%lld", (long long)t->epoch_seen);
  const char *kv[] = {"format", TD_TRAIN_FORMAT, "entry", t->step->name, "params_hash", t->hash,
                      "epoch", v[0], "step", v[1], "global_step", v[2], "seed", v[3], "batch", v[4],
                      "examples", v[5], "loss_sum", v[6], "seconds", v[7], "examples_seen", v[8],
                      "epoch_seen", es};
  td_err err;
  if (td_train_save(t->o->checkpoint, t->step, t->params, kv, (int)(sizeof kv / sizeof *kv / 2), &err)) {
    fprintf(stderr, "tdsl: error: --checkpoint: %s\n", err.msg);
    return -1;
  }
  return 0;
}

/* ---- running ----------------------------------------------------------- */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void on_print(void *ud, const char *text) {
  (void)ud;
  fputs(text, stdout);
  fflush(stdout);
}

/* Runs graph g (prepared p) on rows[0..b) of images/labels; the outputs in *outs. */
static int run_batch(trainer *t, td_prepared *p, const td_graph *g, td_tensor *const *params, const td_tensor *img,
                     const td_tensor *lab, const int64_t *rows, int64_t b, uint64_t call, td_tensor ***outs) {
  td_err err;
  td_span sp = {-1, 0, 0, 0, 0};
  td_tensor *in[2] = {td_train_rows(img, rows, b, &err), NULL};
  if (in[0]) in[1] = td_train_rows(lab, rows, b, &err);
  int rc = -1;
  if (!in[1]) {
    fprintf(stderr, "tdsl: error: %s\n", err.msg);
  } else {
    td_run_opts io;
    memset(&io, 0, sizeof io);
    io.on_print = on_print;
    io.print_threshold = 1000;
    io.diags = t->d;
    io.check_numerics = t->o->check_numerics;
    io.call_index = call;
    rc = td_prepared_run(p, in, params, &io, outs, &err, &sp);
    if (rc) {
      const td_source *s = td_diags_source(t->d, sp.file);
      fflush(stdout);
      if (s) fprintf(stderr, "%s:%d:%d: error: %s\n", s->path, sp.line, sp.col, err.msg);
      else fprintf(stderr, "tdsl: error: %s (in %s)\n", err.msg, g->name);
    }
  }
  td_tensor_release(in[0]);
  td_tensor_release(in[1]);
  return rc;
}

static void free_outs(const td_graph *g, td_tensor **outs) {
  for (int i = 0; outs && i < g->n_outputs; i++) td_tensor_release(outs[i]);
  td_free(outs);
}

/* evaluate over the test set: mean loss and accuracy. */
static int evaluate(trainer *t, double *loss, double *acc) {
  int64_t b = t->o->batch, *rows = td_malloc((size_t)b * sizeof *rows);
  double sum = 0, correct = 0;
  if (!rows) {
    fprintf(stderr, "tdsl: error: out of memory\n");
    return -1;
  }
  for (int64_t s = 0; s < t->n_test; s += b) {
    int64_t k = t->n_test - s < b ? t->n_test - s : b;
    td_tensor **outs = NULL;
    for (int64_t i = 0; i < k; i++) rows[i] = s + i;
    if (run_batch(t, t->peval, t->eval, t->eparams, t->tx, t->ty, rows, k, 0, &outs)) {
      td_free(rows);
      return -1;
    }
    sum += td_tensor_get(outs[0], 0) * (double)k;
    correct += td_tensor_get(outs[1], 0);
    free_outs(t->eval, outs);
  }
  td_free(rows);
  *loss = sum / (double)t->n_test;
  /* per label: an example with labels [T] counts T predictions */
  *acc = correct / ((double)t->n_test * (double)(t->ty->numel / t->ty->shape[0]));
  return 0;
}

static void curve_add(trainer *t, double a, double b, double c, double d) {
  if (t->n_curve == t->cap_curve) {
    int64_t cap = t->cap_curve ? 2 * t->cap_curve : 256;
    double *nc = td_realloc(t->curve, (size_t)cap * 4 * sizeof *nc);
    if (!nc) return; /* the plot loses points, training goes on */
    t->curve = nc;
    t->cap_curve = cap;
  }
  double *r = t->curve + 4 * t->n_curve++;
  r[0] = a, r[1] = b, r[2] = c, r[3] = d;
}

/* The progress of epoch e at batch s of steps: one updating line on a
 * terminal, plain lines at every tenth of the epoch otherwise. */
static void progress(trainer *t, int64_t s, int64_t steps, double rate, double loss, int force) {
  static double last;
  static int64_t last_tenth = -1;
  int tty = isatty(2);
  double tnow = now();
  if (tty) {
    if (!force && tnow - last < 0.1) return;
    last = tnow;
    char bar[31];
    int fill = (int)(30 * s / steps);
    for (int i = 0; i < 30; i++) bar[i] = i < fill ? '=' : i == fill ? '>' : ' ';
    bar[30] = 0;
    long eta = rate > 0 ? (long)((double)(steps - s) / rate + 0.5) : 0;
    fprintf(stderr, "\repoch %lld/%lld [%s] %lld/%lld  %.1f steps/s  loss %.4f  ETA %ld:%02ld\033[K",
            (long long)t->pos_epoch + 1, (long long)t->o->epochs, bar, (long long)s, (long long)steps, rate, loss,
            eta / 60, eta % 60);
    if (s == steps) fputc('\n', stderr);
    return;
  }
  int64_t tenth = 10 * s / steps;
  if (tenth == last_tenth && s != steps) return;
  if (s == steps) last_tenth = -1;
  else last_tenth = tenth;
  if (tenth == 0 && s != steps) return;
  fprintf(stderr, "epoch %lld/%lld: %lld/%lld steps, loss %.4f, %.1f steps/s\n", (long long)t->pos_epoch + 1,
          (long long)t->o->epochs, (long long)s, (long long)steps, loss, rate);
}

static void csv_row(trainer *t, double seconds, const double *test) {
  if (!t->csv) return;
  fprintf(t->csv, "%lld,%lld,%lld,%.6f,", (long long)t->pos_epoch + 1, (long long)t->global, (long long)t->seen,
          t->loss_sum / (double)t->epoch_seen);
  if (test) fprintf(t->csv, "%.6f,%.6f,", test[0], test[1]);
  else fputs(",,", t->csv);
  fprintf(t->csv, "%.3f\n", seconds);
  fflush(t->csv);
}

static int open_log(trainer *t) {
  struct stat st;
  int append = t->o->resume && !stat(t->o->log, &st) && st.st_size > 0;
  t->csv = fopen(t->o->log, append ? "a" : "w");
  if (!t->csv) {
    fprintf(stderr, "tdsl: error: --log: %s: cannot write: %s\n", t->o->log, strerror(errno));
    return -1;
  }
  if (!append) fputs("epoch,step,examples_seen,train_loss,test_loss,test_accuracy,seconds\n", t->csv);
  return 0;
}

/* Ctrl-C: the step that runs finishes, the checkpoint is written, and
 * the command exits with 130; a second Ctrl-C ends it at once. */
static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
  signal(SIGINT, SIG_DFL);
}

/* The whole loop, from the current position; 0, 130 after Ctrl-C, or -1
 * after the message. */
static int train_loop(trainer *t) {
  int64_t n = t->n, b = t->o->batch, steps = (n + b - 1) / b;
  int64_t *perm = td_malloc((size_t)n * sizeof *perm);
  double start = now();
  int rc = -1;
  if (!perm) {
    fprintf(stderr, "tdsl: error: out of memory\n");
    return -1;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  if (t->pos_step >= steps) t->pos_epoch++, t->pos_step = 0;
  if (t->o->max_steps && t->global >= t->o->max_steps) {
    fprintf(stderr, "tdsl: notice: --max-steps %lld: step %lld is done already; nothing to train\n",
            (long long)t->o->max_steps, (long long)t->global);
    t->pos_epoch = t->o->epochs;
  }
  for (; t->pos_epoch < t->o->epochs; t->pos_epoch++, t->pos_step = 0) {
    double ep_start = now();
    int64_t first = t->pos_step;
    if (first == 0) t->loss_sum = 0, t->epoch_seen = 0;
    td_train_shuffle(t->o->seed, (uint64_t)t->pos_epoch, n, perm);
    while (t->pos_step < steps) {
      int64_t s = t->pos_step, k = n - s * b < b ? n - s * b : b;
      td_tensor **outs = NULL;
      if (run_batch(t, t->pstep, t->step, t->params, t->x, t->y, perm + s * b, k, (uint64_t)t->global, &outs))
        goto done;
      double loss = td_tensor_get(outs[0], 0);
      free_outs(t->step, outs);
      if (!isfinite(loss)) {
        if (isatty(2)) fputc('\n', stderr);
        fprintf(stderr, "tdsl: error: train: the loss is %s at epoch %lld step %lld (global step %lld)%s\n"
                "help: rerun with --eager --check-numerics to stop at the op that first makes NaN or Inf and "
                "name its line (or `tdsl run --check-numerics` on the step's entry)\n",
                isnan(loss) ? "NaN" : "inf", (long long)t->pos_epoch + 1, (long long)s + 1, (long long)t->global + 1,
                t->o->checkpoint ? "; the last checkpoint is left as it was" : "");
        goto done;
      }
      t->loss_sum += loss * (double)k;
      t->epoch_seen += k;
      t->seen += k;
      t->global++;
      t->pos_step++;
      double el = now() - ep_start;
      progress(t, t->pos_step, steps, el > 0 ? (double)(t->pos_step - first) / el : 0, t->loss_sum / (double)t->epoch_seen,
               t->pos_step == steps);
      curve_add(t, (double)t->global, t->loss_sum / (double)t->epoch_seen, NAN, NAN);
      double test[2];
      int have_test = 0;
      if (t->pos_step == steps && t->eval && t->tx) {
        if (evaluate(t, &test[0], &test[1])) goto done;
        have_test = 1;
        curve_add(t, (double)t->global, NAN, test[0], test[1]);
      }
      csv_row(t, t->seconds_before + now() - start, have_test ? test : NULL);
      if (t->pos_step == steps) {
        fflush(stderr);
        if (have_test)
          printf("epoch %lld: train loss %.4f, test loss %.4f, test accuracy %.2f%%\n", (long long)t->pos_epoch + 1,
                 t->loss_sum / (double)t->epoch_seen, test[0], 100 * test[1]);
        else
          printf("epoch %lld: train loss %.4f\n", (long long)t->pos_epoch + 1, t->loss_sum / (double)t->epoch_seen);
        fflush(stdout);
      }
      int stop = (t->o->max_steps && t->global >= t->o->max_steps) || interrupted;
      if (t->o->checkpoint && (t->pos_step == steps || stop || (t->o->every && t->global % t->o->every == 0))) {
        int64_t e = t->pos_epoch, ps = t->pos_step;
        if (ps == steps) t->pos_epoch++, t->pos_step = 0; /* the position of the next batch */
        int bad_write = save_checkpoint(t, t->seconds_before + now() - start);
        t->pos_epoch = e, t->pos_step = ps;
        if (bad_write) goto done;
      }
      if (stop && interrupted) {
        if (isatty(2)) fputc('\n', stderr);
        fprintf(stderr, "tdsl: interrupted after step %lld%s%s%s\n", (long long)t->global,
                t->o->checkpoint ? "; resume with --resume " : "", t->o->checkpoint ? t->o->checkpoint : "",
                t->o->checkpoint ? "" : " (no --checkpoint: nothing was saved)");
        rc = 130;
        goto done;
      }
      if (stop) goto stopped;
    }
  }
stopped:
  rc = 0;
done:
  td_free(perm);
  return rc;
}

/* --plot: gnuplot draws the curves; without gnuplot, a notice. */
static void plot(trainer *t) {
  const char *pathv = getenv("PATH");
  int found = 0;
  char exe[1024];
  for (const char *p = pathv ? pathv : "/usr/bin:/bin"; *p && !found;) {
    size_t n = strcspn(p, ":");
    snprintf(exe, sizeof exe, "%.*s/gnuplot", (int)n, p);
    found = access(exe, X_OK) == 0;
    p += n + (p[n] == ':');
  }
  if (!found) {
    fprintf(stderr, "tdsl: notice: --plot needs gnuplot, which is not installed (apt-get install gnuplot-nox); "
            "no plot was written\n");
    return;
  }
  char data[] = "/tmp/tdsl-plot.XXXXXX";
  int fd = mkstemp(data);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) {
    fprintf(stderr, "tdsl: warning: --plot: cannot write a temporary file: %s\n", strerror(errno));
    return;
  }
  for (int64_t i = 0; i < t->n_curve; i++) {
    const double *r = t->curve + 4 * i;
    fprintf(f, "%g %g %g %g\n", r[0], r[1], r[2], r[3]);
  }
  fclose(f);
  FILE *g = popen("gnuplot", "w");
  if (g) {
    fprintf(g, "set terminal pngcairo size 1000,500\nset output '%s'\nset multiplot layout 1,2\n"
            "set datafile missing 'nan'\nset xlabel 'step'\nset title 'loss'\n"
            "plot '%s' using 1:2 with lines title 'train (epoch mean)', '' using 1:3 with linespoints title 'test'\n"
            "set title 'test accuracy'\nplot '%s' using 1:4 with linespoints title 'accuracy'\nunset multiplot\n",
            t->o->plot, data, data);
    if (pclose(g)) fprintf(stderr, "tdsl: warning: --plot: gnuplot failed; %s may be missing\n", t->o->plot);
  }
  unlink(data);
}

static int prepare(trainer *t) {
  td_drive_opts d = td_cli_drive_opts(t->o->eager ? TD_BACKEND_EAGER : TD_BACKEND_CPU, 0, t->d);
  td_err err;
  t->pstep = td_prepare(t->step, &d, &err);
  if (t->pstep && t->eval && t->tx) t->peval = td_prepare(t->eval, &d, &err);
  if (!t->pstep || (t->eval && t->tx && !t->peval)) {
    fprintf(stderr, "tdsl: error: %s\n", err.msg);
    return -1;
  }
  return 0;
}

static int save_weights(trainer *t) {
  td_err err;
  if (td_train_save(t->o->save_weights, t->step, t->params, NULL, 0, &err)) {
    fprintf(stderr, "tdsl: error: --save-weights: %s\n", err.msg);
    return -1;
  }
  return 0;
}

int td_cli_train(int argc, char **argv) {
  train_opts o;
  int rc = parse(argc, argv, &o);
  if (rc) return rc < 0 ? 0 : rc;
  td_arena *arena = td_arena_new();
  td_diags d;
  trainer t;
  memset(&t, 0, sizeof t);
  t.o = &o;
  t.d = &d;
  rc = 1;
  if (!arena) {
    fprintf(stderr, "tdsl: error: out of memory\n");
    return 1;
  }
  td_diags_init(&d, arena);
  t.prog = td_program_new(arena, &d);
  if (!t.prog) {
    fprintf(stderr, "tdsl: error: out of memory\n");
    goto out;
  }
  td_program_set_seed(t.prog, o.seed);
  cli_search_dirs(add_dir, t.prog);
  if (td_program_load_file(t.prog, o.file)) {
    td_diag_render(&d, stderr, isatty(2) && !getenv("NO_COLOR"));
    goto out;
  }
  if (choose_model(&t) || lower(&t)) goto out;
  if (load_pair(&t, o.train, t.step, &t.x, &t.y, o.limit)) goto out;
  t.n = t.x->shape[0];
  if (o.test[0] && !t.eval)
    fprintf(stderr, "tdsl: warning: --test is ignored: %s has no method `%s`\n", o.file, o.eval);
  if (o.test[0] && t.eval) {
    if (load_pair(&t, o.test, t.eval, &t.tx, &t.ty, 0)) goto out;
    t.n_test = t.tx->shape[0];
  }
  if (make_params(&t)) goto out;
  if (t.pos_epoch >= o.epochs) {
    fprintf(stderr, "tdsl: error: --resume: %s is at epoch %lld already; --epochs %lld trains nothing more\n",
            o.resume, (long long)t.pos_epoch, (long long)o.epochs);
    goto out;
  }
  if (prepare(&t) || (o.log && open_log(&t))) goto out;
  if ((rc = train_loop(&t)) != 0) {
    rc = rc == 130 ? 130 : 1;
    goto out;
  }
  rc = 1;
  if (o.save_weights && save_weights(&t)) goto out;
  if (o.plot) plot(&t);
  rc = 0;
out:
  if (t.csv && fclose(t.csv) && !rc) {
    fprintf(stderr, "tdsl: error: --log: %s: %s\n", o.log, strerror(errno));
    rc = 1;
  }
  td_prepared_free(t.pstep);
  td_prepared_free(t.peval);
  for (int i = 0; t.params && i < t.step->n_params; i++) td_tensor_release(t.params[i]);
  for (int i = 0; t.eparams && i < t.eval->n_params; i++) td_tensor_release(t.eparams[i]);
  td_free(t.params);
  td_free(t.eparams);
  td_tensor_release(t.x);
  td_tensor_release(t.y);
  td_tensor_release(t.tx);
  td_tensor_release(t.ty);
  td_free(t.curve);
  td_arena_free(arena);
  return rc;
}

/* test_train.c - `tdsl train` end to end, on tiny data sets written here.
 *
 * The data: 64 examples of 2x2 u8 images and their labels (2 classes),
 * as IDX files built byte by byte (the images gzip-compressed with zlib),
 * so the loop, the CSV log, checkpoints, resuming, and every refusal
 * (a wrong shape, labels outside the classes, another model's
 * checkpoint, a NaN loss) are checked through the built binary, as a
 * user runs it.  The kill -9 test SIGKILLs a run that writes a checkpoint
 * after every step, at several moments, and loads what it left.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <pty.h>
#include <zlib.h>

#include "runtime/io.h"

#include "scratch_dir.h"
#include "tdsl_child.h"

static void setup(void) { make_dir("tdsl_train"); }
static void teardown(void) { remove_dir(); }

TestSuite(train, .init = setup, .fini = teardown, .timeout = 120);

typedef tdsl_result result;

static pid_t spawn(const char *const *args) {
  const char *argv[42] = {"train"};
  int n = 1;
  while (*args && n < 41) argv[n++] = *args++;
  argv[n] = NULL;
  return tdsl_start(argv);
}

/* Runs `tdsl train` with args (NULL-terminated). */
static result train(const char *const *args) { return tdsl_finish(spawn(args)); }

static void drop(result *r) { tdsl_result_free(r); }

/* An IDX file of u8 elements: 00 00 08 rank, dims, data (gzip when gz). */
static void idx_u8(const char *name, int rank, const uint32_t *dims, const unsigned char *data, size_t n, int gz) {
  unsigned char h[4 + 4 * 8] = {0, 0, 8, (unsigned char)rank};
  for (int i = 0; i < rank; i++)
    for (int k = 0; k < 4; k++) h[4 + 4 * i + k] = (unsigned char)(dims[i] >> (24 - 8 * k));
  size_t hn = 4 + 4 * (size_t)rank;
  if (gz) {
    gzFile f = gzopen(path(name), "wb");
    cr_assert_not_null(f);
    cr_assert_eq(gzwrite(f, h, (unsigned)hn), (int)hn);
    cr_assert_eq(gzwrite(f, data, (unsigned)n), (int)n);
    cr_assert_eq(gzclose(f), Z_OK);
  } else {
    FILE *f = fopen(path(name), "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(h, 1, hn, f), hn);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    fclose(f);
  }
}

/* n examples of side x side images; the label is 1 when the first pixel
 * is the brighter half (learnable), or `bad_label` at example 5 when >= 0. */
static void data(const char *img, const char *lab, int n, int side, int bad_label) {
  unsigned char px[64 * 9], l[64];
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < side * side; k++) px[i * side * side + k] = (unsigned char)((i * 37 + k * 101) % 256);
    l[i] = px[i * side * side] >= 128;
  }
  if (bad_label >= 0) l[5] = (unsigned char)bad_label;
  uint32_t di[3] = {(uint32_t)n, (uint32_t)side, (uint32_t)side}, dl[1] = {(uint32_t)n};
  idx_u8(img, 3, di, px, (size_t)(n * side * side), 1);
  idx_u8(lab, 1, dl, l, (size_t)n, 0);
}

/* "IMG,LAB" of two scratch files, for --train and --test (a static buffer). */
static const char *pair(const char *img, const char *lab) {
  static char buf[1200];
  snprintf(buf, sizeof buf, "%s,%s", path(img), path(lab));
  return buf;
}

/* A model of `out` classes trained by SGD with momentum (so the
 * checkpoint holds optimizer state); `extra` is added to the loss; with
 * flat, x is f32[B, 4] instead of f32[B, 2, 2]. */
static void model_as(const char *name, int out, const char *extra, int flat) {
  char text[2048];
  snprintf(text, sizeof text,
           "import nn\n"
           "import optim\n"
           "model T {\n"
           "  fc = nn.Linear(4, %d)\n"
           "  opt = optim.SGD(fc, lr = 0.5, momentum = 0.9)\n"
           "  fn logits(x: f32[B, %s]) -> f32[B, %d] { fc(reshape(x, [B, 4]) / 255.0) }\n"
           "  fn loss(x, y) { nn.cross_entropy(logits(x), y)%s }\n"
           "  fn step(x: f32[B, %s], y: i64[B]) -> f32[] {\n"
           "    let (l, g) = value_and_grad(loss, wrt = fc)(x, y)\n"
           "    opt.step(g)\n"
           "    l\n"
           "  }\n"
           "  fn evaluate(x: f32[B, %s], y: i64[B]) -> (f32[], i64[]) {\n"
           "    let l = logits(x)\n"
           "    (nn.cross_entropy(l, y), sum(i64(argmax(l, axis = -1) == y)))\n"
           "  }\n"
           "}\n", out, flat ? "4" : "2, 2", out, extra, flat ? "4" : "2, 2", flat ? "4" : "2, 2");
  write_text(name, text);
}

static void model(const char *name, int out, const char *extra) { model_as(name, out, extra, 0); }

/* The CSV's data rows, one string per row (at most 64), and their count. */
static int csv_rows(const char *name, char rows[][160]) {
  FILE *f = fopen(path(name), "r");
  cr_assert_not_null(f, "no %s", name);
  char line[150];
  int n = -1;
  while (fgets(line, sizeof line, f)) {
    if (n < 0) cr_expect_str_eq(line, "epoch,step,examples_seen,train_loss,test_loss,test_accuracy,seconds\n");
    else if (n < 64) snprintf(rows[n], 160, "%s", line);
    n++;
  }
  fclose(f);
  return n;
}

/* The whole file name, malloc'd, and its size in *n. */
static unsigned char *read_bytes(const char *name, long *n) {
  FILE *f = fopen(path(name), "rb");
  cr_assert_not_null(f, "no %s", name);
  fseek(f, 0, SEEK_END);
  *n = ftell(f);
  rewind(f);
  unsigned char *b = malloc((size_t)*n + 1);
  cr_assert_eq(fread(b, 1, (size_t)*n, f), (size_t)*n);
  fclose(f);
  return b;
}

/* Whether file name holds exactly b[0..n). */
static int same_bytes(const char *name, const unsigned char *b, long n) {
  long m;
  unsigned char *c = read_bytes(name, &m);
  int same = m == n && !memcmp(b, c, (size_t)n);
  free(c);
  return same;
}

/* Row r without its last column (the seconds). */
static const char *no_time(const char *row, char *buf) {
  snprintf(buf, 160, "%s", row);
  char *c = strrchr(buf, ',');
  if (c) *c = 0;
  return buf;
}

Test(train, the_loop_logs_every_step_evaluates_and_checkpoints) {
  model("m.td", 2, "");
  data("img.gz", "lab.idx", 64, 2, -1);
  const char *tr = pair("img.gz", "lab.idx");
  /* 64 examples in batches of 10: six full steps and one of 4 */
  result r = train((const char *[]){path("m.td"), "--train", tr, "--test", tr, "--epochs", "2", "--batch", "10",
                                    "--log", path("log.csv"), "--checkpoint", path("ck.safetensors"), "--eager", NULL});
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  cr_expect(strstr(r.out, "epoch 1: train loss ") && strstr(r.out, "epoch 2: train loss "), "%s", r.out);
  cr_expect(strstr(r.out, "test accuracy ") && strstr(r.out, "%\n"), "%s", r.out);
  char rows[64][160];
  int n = csv_rows("log.csv", rows);
  cr_expect_eq(n, 14, "2 epochs of 7 steps: %d rows", n);
  cr_expect(!strncmp(rows[0], "1,1,10,", 7), "%s", rows[0]);
  cr_expect(!strncmp(rows[6], "1,7,64,", 7), "the partial batch: %s", rows[6]);
  cr_expect(!strncmp(rows[13], "2,14,128,", 9), "%s", rows[13]);
  cr_expect(strstr(rows[0], ",,,") != NULL, "no test columns mid-epoch: %s", rows[0]);
  cr_expect(strstr(rows[6], ",,") == NULL, "test columns at the epoch's end: %s", rows[6]);
  double l1, l2;
  cr_assert_eq(sscanf(rows[6], "%*d,%*d,%*d,%lf", &l1), 1);
  cr_assert_eq(sscanf(rows[13], "%*d,%*d,%*d,%lf", &l2), 1);
  cr_expect_lt(l2, l1, "the parameters are updated in place: the loss goes down (%g, then %g)", l1, l2);
  td_st_file f;
  td_err err;
  cr_assert_eq(td_safetensors_open(path("ck.safetensors"), &f, &err), 0, "%s", err.msg);
  cr_expect_str_eq(td_safetensors_meta(&f, "format"), "tdsl-train-1");
  cr_expect_str_eq(td_safetensors_meta(&f, "entry"), "T.step");
  cr_expect_str_eq(td_safetensors_meta(&f, "epoch"), "2");
  cr_expect_str_eq(td_safetensors_meta(&f, "step"), "0");
  cr_expect_str_eq(td_safetensors_meta(&f, "global_step"), "14");
  cr_expect_str_eq(td_safetensors_meta(&f, "seed"), "0");
  cr_expect_eq(strlen(td_safetensors_meta(&f, "params_hash")), 16);
  cr_expect_eq(f.n, 5, "fc.weight, fc.bias, their momentum buffers and the step count: %d tensors", f.n);
  td_safetensors_close(&f);
  drop(&r);

  /* flattening [N, 2, 2] for f32[B, 4] gives the same losses */
  model_as("flat.td", 2, "", 1);
  r = train((const char *[]){path("flat.td"), "--train", tr, "--epochs", "2", "--batch", "10", "--log",
                             path("flat.csv"), "--eager", NULL});
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  char fr[64][160], a[160], b[160];
  cr_assert_eq(csv_rows("flat.csv", fr), 14);
  for (int i = 0; i < 14; i++) {
    /* the same losses (no --test here, so the test columns stay empty) */
    char *c = strrchr(no_time(rows[i], a), ',');
    *c = 0, c = strrchr(a, ','), *c = 0;
    no_time(fr[i], b);
    c = strrchr(b, ','), *c = 0, c = strrchr(b, ','), *c = 0;
    cr_expect_str_eq(a, b, "row %d", i);
  }
  drop(&r);
}

/* Runs 3 epochs straight, then the same stopped and resumed at `stop`
 * (global steps), and compares the rows. */
static void resume_gives_the_same_losses(const char *extra, int stop) {
  model("m.td", 2, extra);
  data("img.gz", "lab.idx", 64, 2, -1);
  char st[16];
  const char *tr = pair("img.gz", "lab.idx");
  snprintf(st, sizeof st, "%d", stop);
  result r = train((const char *[]){path("m.td"), "--train", tr, "--epochs", "3", "--batch", "8", "--seed", "5",
                                    "--log", path("all.csv"), "--save-weights", path("all.safetensors"), NULL});
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  drop(&r);
  r = train((const char *[]){path("m.td"), "--train", tr, "--epochs", "3", "--batch", "8", "--seed", "5",
                             "--log", path("part.csv"), "--checkpoint", path("ck.safetensors"), "--max-steps", st,
                             NULL});
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  drop(&r);
  r = train((const char *[]){path("m.td"), "--train", tr, "--epochs", "3", "--log", path("part.csv"), "--resume",
                             path("ck.safetensors"), "--save-weights", path("part.safetensors"), NULL});
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  drop(&r);
  char all[64][160], part[64][160], a[160], b[160];
  int n = csv_rows("all.csv", all), m = csv_rows("part.csv", part);
  cr_assert_eq(n, 24, "3 epochs of 8 steps");
  cr_assert_eq(m, 24, "the stopped run's rows and the resumed run's rows, in one file");
  for (int i = 0; i < 24; i++) cr_expect_str_eq(no_time(all[i], a), no_time(part[i], b), "row %d", i);
  td_tensor_map wa, wb;
  td_err err;
  td_tensor_map_init(&wa);
  td_tensor_map_init(&wb);
  cr_assert_eq(td_safetensors_read(path("all.safetensors"), &wa, &err), 0, "%s", err.msg);
  cr_assert_eq(td_safetensors_read(path("part.safetensors"), &wb, &err), 0, "%s", err.msg);
  cr_assert_eq(wa.n, wb.n);
  for (int i = 0; i < wa.n; i++) {
    td_tensor *x = wa.items[i].tensor, *y = td_tensor_map_get(&wb, wa.items[i].name);
    cr_assert_not_null(y, "%s", wa.items[i].name);
    cr_expect_eq(memcmp(x->data, y->data, (size_t)x->numel * td_dtype_size(x->dtype)), 0,
                 "%s differs after resuming", wa.items[i].name);
  }
  td_tensor_map_free(&wa);
  td_tensor_map_free(&wb);
}

Test(train, resuming_mid_epoch_continues_at_the_next_batch_in_the_same_order) {
  resume_gives_the_same_losses("", 11); /* in epoch 2, batch 4 */
}

Test(train, resuming_at_an_epoch_boundary_gives_the_same_losses) {
  resume_gives_the_same_losses("", 8);
}

/* Trains model file `first` for an epoch into ck.safetensors, then runs
 * `second` resuming from it (with --checkpoint ck.safetensors and the
 * extra args): it must exit 1, say each of want[] (NULL-terminated) on
 * stderr and leave the checkpoint as it was, byte for byte. */
static void refused_keeping_the_checkpoint(const char *first, const char *second, const char *extra,
                                           const char *const *want) {
  data("img.gz", "lab.idx", 64, 2, -1);
  const char *tr = pair("img.gz", "lab.idx");
  result r = train((const char *[]){path(first), "--train", tr, "--checkpoint", path("ck.safetensors"), NULL});
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  drop(&r);
  long n0;
  unsigned char *before = read_bytes("ck.safetensors", &n0);
  r = train((const char *[]){path(second), "--train", tr, "--resume", path("ck.safetensors"), "--checkpoint",
                             path("ck.safetensors"), extra ? extra : NULL, extra ? "3" : NULL, NULL});
  cr_expect_eq(r.status, 1, "%s", r.err);
  for (; *want; want++) cr_expect(strstr(r.err, *want) != NULL, "expected '%s' in: %s", *want, r.err);
  cr_expect(same_bytes("ck.safetensors", before, n0), "the checkpoint was overwritten");
  drop(&r);
  if (!extra) { /* and without --resume: another model's checkpoint is not replaced */
    r = train((const char *[]){path(second), "--train", tr, "--checkpoint", path("ck.safetensors"), NULL});
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "holds a checkpoint of another model") != NULL, "%s", r.err);
    cr_expect(same_bytes("ck.safetensors", before, n0), "another model's checkpoint was overwritten");
    drop(&r);
  }
  free(before);
}

Test(train, a_nan_loss_stops_at_once_and_leaves_the_checkpoint) {
  model("m.td", 2, "");
  /* the same parameters; its loss is NaN (the sqrt of a negative number) */
  model("nan.td", 2, " + sqrt(-1.0 - min(x))");
  refused_keeping_the_checkpoint("m.td", "nan.td", "--epochs",
                                 (const char *[]){"train: the loss is NaN at epoch 2 step 1 ", "--check-numerics",
                                                  NULL});
}

Test(train, wrong_data_is_refused_before_training_naming_the_file) {
  model("m.td", 2, "");
  const char *tr;
  /* 3x3 images for f32[B, 2, 2] */
  data("img3.gz", "lab3.idx", 16, 3, -1);
  tr = pair("img3.gz", "lab3.idx");
  result r = train((const char *[]){path("m.td"), "--train", tr, "--log", path("no.csv"), NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, path("img3.gz")) && strstr(r.err, "[16, 3, 3]") && strstr(r.err, "f32[B, 2, 2]"),
            "the file and both shapes: %s", r.err);
  cr_expect_eq(access(path("no.csv"), F_OK), -1, "a log was started");
  drop(&r);
  /* a label 7 of two classes (the step's one_hot shows C = 2) */
  data("img.gz", "bad.idx", 16, 2, 7);
  tr = pair("img.gz", "bad.idx");
  r = train((const char *[]){path("m.td"), "--train", tr, NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "label 5 is 7, outside [0, 2)") != NULL, "%s", r.err);
  drop(&r);
  /* 16 images, 12 labels */
  data("img.gz", "lab.idx", 16, 2, -1);
  data("x.gz", "lab12.idx", 12, 2, -1);
  tr = pair("img.gz", "lab12.idx");
  r = train((const char *[]){path("m.td"), "--train", tr, NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "holds 16 images but") && strstr(r.err, "holds 12 labels"), "%s", r.err);
  drop(&r);
  /* a truncated file */
  data("cut.idx", "lab.idx", 16, 2, -1);
  cr_assert_eq(truncate(path("lab.idx"), 15), 0);
  tr = pair("img.gz", "lab.idx");
  r = train((const char *[]){path("m.td"), "--train", tr, NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, path("lab.idx")) && strstr(r.err, "truncated"), "%s", r.err);
  drop(&r);
}

Test(train, another_models_checkpoint_is_refused_and_left_alone) {
  model("m.td", 2, "");
  model("three.td", 3, "");
  refused_keeping_the_checkpoint("three.td", "m.td", NULL,
                                 (const char *[]){"is a checkpoint of another model", "fc.weight", NULL});
}

Test(train, kill_9_during_checkpoints_leaves_a_loadable_checkpoint) {
  model("m.td", 2, "");
  data("img.gz", "lab.idx", 64, 2, -1);
  const char *tr = pair("img.gz", "lab.idx");
  for (int round = 0; round < 4; round++) {
    pid_t pid = spawn((const char *[]){path("m.td"), "--train", tr, "--epochs", "100000", "--batch", "1",
                                       "--checkpoint", path("ck.safetensors"), "--checkpoint-every", "1", "--eager",
                                       NULL});
    /* wait for the first checkpoint, then kill at a moment that varies by round */
    for (int i = 0; i < 2000 && access(path("ck.safetensors"), F_OK); i++) usleep(5000);
    usleep((useconds_t)(3000 + 7919 * round));
    kill(pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "the run ended before it was killed");
    td_tensor_map m;
    td_err err;
    td_tensor_map_init(&m);
    cr_expect_eq(td_safetensors_read(path("ck.safetensors"), &m, &err), 0, "round %d: %s", round, err.msg);
    cr_expect_eq(m.n, 5);
    td_tensor_map_free(&m);
    td_st_file f;
    cr_assert_eq(td_safetensors_open(path("ck.safetensors"), &f, &err), 0, "%s", err.msg);
    cr_expect_str_eq(td_safetensors_meta(&f, "format"), "tdsl-train-1");
    td_safetensors_close(&f);
  }
  /* and it resumes */
  result r = train((const char *[]){path("m.td"), "--train", tr, "--epochs", "100001", "--resume",
                                    path("ck.safetensors"), "--max-steps", "1", NULL});
  cr_expect_eq(r.status, 0, "%s", r.err);
  drop(&r);
}

Test(train, ctrl_c_finishes_the_step_writes_the_checkpoint_and_exits_130) {
  model("m.td", 2, "");
  data("img.gz", "lab.idx", 64, 2, -1);
  const char *tr = pair("img.gz", "lab.idx");
  pid_t pid = spawn((const char *[]){path("m.td"), "--train", tr, "--epochs", "100000", "--batch", "1",
                                     "--checkpoint", path("ck.safetensors"), "--checkpoint-every", "50", NULL});
  for (int i = 0; i < 2000 && access(path("ck.safetensors"), F_OK); i++) usleep(5000);
  kill(pid, SIGINT);
  int st;
  waitpid(pid, &st, 0);
  cr_assert(WIFEXITED(st), "killed by signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  cr_expect_eq(WEXITSTATUS(st), 130);
  char *err = read_text(path("stderr.txt"));
  long long step = -1;
  const char *m = strstr(err, "tdsl: interrupted after step ");
  cr_assert_not_null(m, "%s", err);
  sscanf(m, "tdsl: interrupted after step %lld", &step);
  cr_expect(strstr(err, "resume with --resume ") != NULL, "%s", err);
  free(err);
  td_st_file f;
  td_err e;
  cr_assert_eq(td_safetensors_open(path("ck.safetensors"), &f, &e), 0, "%s", e.msg);
  char want[32];
  snprintf(want, sizeof want, "%lld", step);
  cr_expect_str_eq(td_safetensors_meta(&f, "global_step"), want, "the checkpoint is the last step's");
  td_safetensors_close(&f);
}

Test(train, plot_uses_gnuplot_or_says_it_is_missing) {
  model("m.td", 2, "");
  data("img.gz", "lab.idx", 64, 2, -1);
  const char *tr = pair("img.gz", "lab.idx");
  /* no gnuplot on PATH: a notice, and training succeeds (eager: libgccjit
   * would need the assembler from PATH) */
  char *old = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
  setenv("PATH", path("nobin"), 1);
  result r = train((const char *[]){path("m.td"), "--train", tr, "--test", tr, "--plot", path("p.png"), "--eager",
                                    NULL});
  cr_expect_eq(r.status, 0, "%s", r.err);
  cr_expect(strstr(r.err, "--plot needs gnuplot, which is not installed") != NULL, "%s", r.err);
  drop(&r);
  /* a stand-in gnuplot that keeps its script: the png and the data are named */
  cr_assert_eq(mkdir(path("bin"), 0755), 0);
  char script[1200];
  snprintf(script, sizeof script, "#!/bin/sh\ncat > '%s'\n", path("script.gp"));
  write_text("bin/gnuplot", script);
  cr_assert_eq(chmod(path("bin/gnuplot"), 0755), 0);
  char both[1400];
  snprintf(both, sizeof both, "%s:%s", path("bin"), old);
  setenv("PATH", both, 1);
  r = train((const char *[]){path("m.td"), "--train", tr, "--test", tr, "--epochs", "2", "--plot", path("p.png"), NULL});
  setenv("PATH", old, 1);
  free(old);
  cr_expect_eq(r.status, 0, "%s", r.err);
  char *gp = read_text(path("script.gp"));
  cr_expect(strstr(gp, path("p.png")) && strstr(gp, "plot '") && strstr(gp, "test accuracy"), "%s", gp);
  free(gp);
  drop(&r);
}

Test(train, a_terminal_gets_one_updating_progress_line) {
  model("m.td", 2, "");
  data("img.gz", "lab.idx", 64, 2, -1);
  const char *tr = pair("img.gz", "lab.idx");
  int master;
  pid_t pid = forkpty(&master, NULL, NULL, NULL);
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    /* stdout and stderr on the terminal, as a user's */
    setenv("NO_COLOR", "1", 1);
    setenv("TDSL_PATH", TDSL_SRCDIR "/stdlib", 1);
    execl(TDSL_BUILDDIR "/tdsl", "tdsl", "train", path("m.td"), "--train", tr, "--batch", "4", "--epochs", "2",
          "--eager", (char *)NULL);
    _exit(127);
  }
  static char out[1 << 16];
  size_t n = 0;
  ssize_t k;
  while (n < sizeof out - 1 && (k = read(master, out + n, sizeof out - 1 - n)) > 0) n += (size_t)k;
  out[n] = 0;
  int st;
  waitpid(pid, &st, 0);
  close(master);
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", out);
  cr_expect(strstr(out, "\repoch 1/2 [") != NULL, "no updating line: %s", out);
  cr_expect(strstr(out, "] 16/16  ") && strstr(out, " steps/s  loss ") && strstr(out, "  ETA 0:0"), "%s", out);
  cr_expect(strstr(out, "epoch 2: train loss ") != NULL, "%s", out);
  cr_expect(strstr(out, "epoch 1/2: ") == NULL, "plain progress lines on a terminal: %s", out);
}

Test(train, usage_errors_and_the_missing_data_set) {
  model("m.td", 2, "");
  result r = train((const char *[]){path("m.td"), NULL});
  cr_expect_eq(r.status, 2);
  cr_expect(strstr(r.err, "--dataset fashion-mnist") != NULL, "%s", r.err);
  drop(&r);
  r = train((const char *[]){path("m.td"), "--batch", "0", "--train", "a,b", NULL});
  cr_expect_eq(r.status, 2);
  drop(&r);
  r = train((const char *[]){"--help", NULL});
  cr_expect_eq(r.status, 0);
  cr_expect(strstr(r.out, "--checkpoint-every") && strstr(r.out, "--resume"), "%s", r.out);
  drop(&r);
  setenv("TDSL_DATASETS", path("nowhere"), 1);
  r = train((const char *[]){path("m.td"), "--dataset", "fashion-mnist", NULL});
  unsetenv("TDSL_DATASETS");
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "apt-get install dataset-fashion-mnist") != NULL, "%s", r.err);
  drop(&r);
  /* two models with a step: --model chooses */
  write_text("two.td", "import nn\nmodel A {\n  fc = nn.Linear(4, 2)\n"
             "  fn step(x: f32[B, 4], y: i64[B]) -> f32[] { nn.cross_entropy(fc(x), y) }\n}\n"
             "model C {\n  fc = nn.Linear(4, 2)\n"
             "  fn step(x: f32[B, 4], y: i64[B]) -> f32[] { nn.cross_entropy(fc(x), y) }\n}\n");
  data("img.gz", "lab.idx", 8, 2, -1);
  const char *tr = pair("img.gz", "lab.idx");
  r = train((const char *[]){path("two.td"), "--train", tr, NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "2 models with a method `step` (A, C)") && strstr(r.err, "--model"), "%s", r.err);
  drop(&r);
  r = train((const char *[]){path("two.td"), "--train", tr, "--model", "C", NULL});
  cr_expect_eq(r.status, 0, "%s", r.err);
  drop(&r);
}

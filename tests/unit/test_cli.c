/* test_cli.c - the `tdsl` command end to end: entry points on .npy files,
 * safetensors weights, outputs, and every kind of bad input.
 *
 * Each test writes a small program and its input files into a fresh
 * temporary directory (inputs are written with the runtime's own writers,
 * whose byte format test_io.c checks against hand-built files), runs the
 * built binary as a subprocess, and checks the exit status, the messages
 * and the output files.  Expected numbers are computed by hand here.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/io.h"

#include "scratch_dir.h"
#include "tdsl_child.h"

static void setup(void) { make_dir("tdsl_cli"); }
static void teardown(void) { remove_dir(); }

TestSuite(cli, .init = setup, .fini = teardown, .timeout = 60);


typedef tdsl_result result;

/* Runs tdsl with argv (NULL-terminated, without argv[0]). */
static result tdsl(const char *const *args) { return tdsl_finish(tdsl_start(args)); }

static void drop(result *r) { tdsl_result_free(r); }

static void write_npy(const char *name, td_dtype dt, int rank, const int64_t *shape, const double *vals) {
  td_err err;
  td_tensor *t = td_tensor_new(dt, rank, shape, &err);
  cr_assert_not_null(t, "%s", err.msg);
  for (int64_t i = 0; i < t->numel; i++) td_tensor_set(t, i, vals[i]);
  cr_assert_eq(td_npy_write(path(name), t, &err), 0, "%s", err.msg);
  td_tensor_release(t);
}

static const char *MODEL =
    "import nn\n"
    "model M {\n"
    "  fc = nn.Linear(3, 2)\n"
    "  fn forward(x: f32[N, 3]) -> f32[N, 2] {\n"
    "    relu(fc(x))\n"
    "  }\n"
    "}\n";

/* fc.weight = [[1, 2, 3], [-1, 0, 2]], fc.bias = [0.5, -1] (optionally
 * broken: a missing bias, an extra tensor, a wrong shape). */
static void write_weights(const char *name, int broken) {
  td_err err;
  td_tensor_map m;
  td_tensor_map_init(&m);
  int64_t ws[2] = {2, 3}, wbad[2] = {3, 2}, bs[1] = {2};
  td_tensor *w = td_tensor_new(TD_F32, 2, broken ? wbad : ws, &err), *b = td_tensor_new(TD_F32, 1, bs, &err);
  float wv[6] = {1, 2, 3, -1, 0, 2}, bv[2] = {0.5f, -1};
  memcpy(w->data, wv, sizeof wv);
  memcpy(b->data, bv, sizeof bv);
  td_tensor_map_put(&m, "fc.weight", w, &err);
  if (broken) td_tensor_map_put(&m, "fc.extra", b, &err);
  else td_tensor_map_put(&m, "fc.bias", b, &err);
  cr_assert_eq(td_safetensors_write(path(name), &m, &err), 0, "%s", err.msg);
  td_tensor_release(w);
  td_tensor_release(b);
  td_tensor_map_free(&m);
}

Test(cli, entry_point_with_weights_writes_the_output) {
  write_text("m.td", MODEL);
  write_weights("w.safetensors", 0);
  int64_t xs[2] = {2, 3};
  double xv[6] = {1, 1, 1, 2, 0, -1};
  write_npy("x.npy", TD_F32, 2, xs, xv);
  result r = tdsl((const char *[]){"run", path("m.td"), "--entry", "M.forward", "--in", "x=" , NULL});
  drop(&r); /* "x=" alone is a usage error; checked below */
  char in[600];
  snprintf(in, sizeof in, "x=%s", path("x.npy"));
  r = tdsl((const char *[]){"run", path("m.td"), "--entry", "M.forward", "--in", in, "--weights",
                            path("w.safetensors"), "--out", path("y.npy"), NULL});
  cr_assert_eq(r.status, 0, "stderr: %s", r.err);
  td_tensor *y;
  td_err err;
  cr_assert_eq(td_npy_read(path("y.npy"), &y, &err), 0, "%s", err.msg);
  /* relu(x @ W.T + b): row 0 = relu([6.5, 0]), row 1 = relu([-0.5, -5]) */
  cr_assert_eq(y->rank, 2);
  cr_expect_eq(y->shape[0], 2);
  cr_expect_eq(y->shape[1], 2);
  float want[4] = {6.5f, 0, 0, 0};
  for (int i = 0; i < 4; i++) cr_expect_float_eq(((float *)y->data)[i], want[i], 1e-6, "element %d", i);
  td_tensor_release(y);
  drop(&r);
}

Test(cli, one_program_serves_every_batch_size) {
  write_text("m.td", MODEL);
  write_weights("w.safetensors", 0);
  for (int n = 1; n <= 5; n += 2) {
    int64_t xs[2] = {n, 3};
    double xv[15];
    for (int i = 0; i < 3 * n; i++) xv[i] = 1;
    write_npy("x.npy", TD_F32, 2, xs, xv);
    char in[600];
    snprintf(in, sizeof in, "x=%s", path("x.npy"));
    result r = tdsl((const char *[]){"run", path("m.td"), "--entry", "M.forward", "--in", in, "--weights",
                                     path("w.safetensors"), "--out", path("y.npy"), NULL});
    cr_assert_eq(r.status, 0, "N=%d: %s", n, r.err);
    td_tensor *y;
    td_err err;
    cr_assert_eq(td_npy_read(path("y.npy"), &y, &err), 0);
    cr_expect_eq(y->shape[0], n);
    /* each row: relu([1+2+3+0.5, -1+0+2-1]) = [6.5, 0] */
    for (int i = 0; i < n; i++) cr_expect_float_eq(((float *)y->data)[2 * i], 6.5f, 1e-6);
    td_tensor_release(y);
    drop(&r);
  }
}

Test(cli, weights_errors_list_every_problem) {
  write_text("m.td", MODEL);
  write_weights("w.safetensors", 1);
  int64_t xs[2] = {1, 3};
  double xv[3] = {1, 2, 3};
  write_npy("x.npy", TD_F32, 2, xs, xv);
  char in[600];
  snprintf(in, sizeof in, "x=%s", path("x.npy"));
  result r = tdsl((const char *[]){"run", path("m.td"), "--entry", "M.forward", "--in", in, "--weights",
                                   path("w.safetensors"), "--out", path("y.npy"), NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "fc.bias") != NULL, "missing tensor not named: %s", r.err);
  cr_expect(strstr(r.err, "fc.extra") != NULL, "extra tensor not named: %s", r.err);
  cr_expect(strstr(r.err, "fc.weight") != NULL, "wrong shape not named: %s", r.err);
  cr_expect_eq(access(path("y.npy"), F_OK), -1, "an output was written despite the error");
  drop(&r);
}

Test(cli, truncated_and_wrong_shaped_inputs_are_rejected_at_entry) {
  write_text("m.td", MODEL);
  int64_t xs[2] = {2, 4};
  double xv[8] = {0};
  write_npy("x.npy", TD_F32, 2, xs, xv);
  char in[600];
  snprintf(in, sizeof in, "x=%s", path("x.npy"));
  result r = tdsl((const char *[]){"run", path("m.td"), "--entry", "M.forward", "--in", in, NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "'x'") != NULL && strstr(r.err, "f32[N, 3]") != NULL && strstr(r.err, "f32[2, 4]") != NULL,
            "shape mismatch message should name the argument and both types: %s", r.err);
  drop(&r);

  /* i64 data for an f32 argument */
  int64_t s3[2] = {1, 3};
  double v3[3] = {1, 2, 3};
  write_npy("xi.npy", TD_I64, 2, s3, v3);
  snprintf(in, sizeof in, "x=%s", path("xi.npy"));
  r = tdsl((const char *[]){"run", path("m.td"), "--entry", "M.forward", "--in", in, NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "i64") != NULL, "dtype mismatch should name the dtype: %s", r.err);
  drop(&r);

  /* truncate a valid file */
  write_npy("t.npy", TD_F32, 2, s3, v3);
  cr_assert_eq(truncate(path("t.npy"), 130), 0);
  snprintf(in, sizeof in, "x=%s", path("t.npy"));
  r = tdsl((const char *[]){"run", path("m.td"), "--entry", "M.forward", "--in", in, "--out", path("y.npy"), NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "truncated") != NULL, "%s", r.err);
  cr_expect_eq(access(path("y.npy"), F_OK), -1);
  drop(&r);

  /* a file that is not .npy at all */
  write_text("bad.npy", "hello");
  snprintf(in, sizeof in, "x=%s", path("bad.npy"));
  r = tdsl((const char *[]){"run", path("m.td"), "--entry", "M.forward", "--in", in, NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "bad.npy") != NULL, "the message should name the file: %s", r.err);
  drop(&r);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs `tdsl run m.td --entry M.forward ARGS... --out y.npy` expecting
 * exit status 1 with `want` in stderr, in well under a second (the files
 * are gigabytes: reading them takes seconds), and no output.  No tensor of
 * more than 1 MiB may be allocated (TDSL_MAX_TENSOR_BYTES), so a reader
 * that allocates before checking fails with another message. */
static void refused_fast(const char *want, const char *const *args) {
  const char *argv[16] = {"run", path("m.td"), "--entry", "M.forward", "--out", path("y.npy")};
  int n = 6;
  while (*args && n < 15) argv[n++] = *args++;
  argv[n] = NULL;
  setenv("TDSL_MAX_TENSOR_BYTES", "1048576", 1);
  double t0 = now_s();
  result r = tdsl(argv);
  double dt = now_s() - t0;
  unsetenv("TDSL_MAX_TENSOR_BYTES");
  cr_expect_eq(r.status, 1, "%s", r.err);
  cr_expect(strstr(r.err, want) != NULL, "expected \"%s\" in: %s", want, r.err);
  cr_expect_lt(dt, 1.0, "took %.2f s: the data was read before the header was checked (%s)", dt, want);
  cr_expect_eq(access(path("y.npy"), F_OK), -1);
  drop(&r);
}

/* A 2 GiB input of the wrong rank, dtype or shape, and a weights file with
 * an extra 2 GiB tensor, are refused from their headers alone, with the
 * messages small files get (sparse files: no disk is used). */
Test(cli, wrong_big_files_are_refused_from_their_headers) {
  write_text("m.td", MODEL);
  char x[600], big[600];
  snprintf(x, sizeof x, "x=%s", path("x.npy"));
  snprintf(big, sizeof big, "x=%s", path("big.npy"));
  sparse_npy("big.npy", "<f4", "(536870912,)", 2147483648ull);
  refused_fast("argument 'x': expected f32[N, 3], got f32[536870912]: rank is 1, expected 2",
               (const char *[]){"--in", big, NULL});
  refused_fast("argument 'x': expected f32[N, 3], got f32[536870912]: rank is 1, expected 2",
               (const char *[]){"--in", big, "--compiled", NULL});
  sparse_npy("big.npy", "<i8", "(89478485, 3)", 2147483640ull);
  refused_fast("argument 'x': expected f32[N, 3], got i64[89478485, 3]: dtype is i64, expected f32",
               (const char *[]){"--in", big, NULL});
  sparse_npy("big.npy", "<f4", "(178956970, 4)", 2863311520ull);
  refused_fast("argument 'x': expected f32[N, 3], got f32[178956970, 4]: dimension 1 is 4, expected 3",
               (const char *[]){"--in", big, NULL});
  /* fc.weight f32[2, 3] and fc.bias f32[2] as the model wants, then 2 GiB more */
  const char *json = "{\"fc.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
                     "\"fc.bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[24,32]},"
                     "\"big\":{\"dtype\":\"F32\",\"shape\":[536870912],\"data_offsets\":[32,2147483680]}}";
  float wb[8] = {1, 2, 3, -1, 0, 2, 0.5f, -1};
  sparse_safetensors("w.safetensors", json, wb, sizeof wb, 2147483680ull);
  int64_t xs[2] = {1, 3};
  double xv[3] = {1, 2, 3};
  write_npy("x.npy", TD_F32, 2, xs, xv);
  char want[700];
  snprintf(want, sizeof want, "%s does not fit M.forward:\nunexpected weight 'big': the model has no parameter "
           "of that name\n", path("w.safetensors"));
  refused_fast(want, (const char *[]){"--in", x, "--weights", path("w.safetensors"), NULL});
  refused_fast(want, (const char *[]){"--in", x, "--weights", path("w.safetensors"), "--compiled", NULL});
  /* a big valid input with weights that do not fit: neither is read */
  sparse_npy("big.npy", "<f4", "(178956970, 3)", 2147483640ull);
  refused_fast(want, (const char *[]){"--in", big, "--weights", path("w.safetensors"), NULL});
}

Test(cli, missing_and_unknown_arguments) {
  write_text("m.td", MODEL);
  result r = tdsl((const char *[]){"run", path("m.td"), "--entry", "M.forward", NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "--in x=") != NULL, "should say how to pass x: %s", r.err);
  drop(&r);
  r = tdsl((const char *[]){"run", path("m.td"), "--entry", "M.backward", NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "M.forward") != NULL, "should list the entry points: %s", r.err);
  drop(&r);
  r = tdsl((const char *[]){"run", path("m.td"), NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "main") != NULL, "%s", r.err);
  drop(&r);
  r = tdsl((const char *[]){"run", path("m.td"), "--bogus", NULL});
  cr_expect_eq(r.status, 2);
  drop(&r);
  r = tdsl((const char *[]){"frobnicate", NULL});
  cr_expect_eq(r.status, 2);
  drop(&r);
  r = tdsl((const char *[]){"run", path("nonexistent.td"), NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "nonexistent.td") != NULL, "%s", r.err);
  drop(&r);
}

Test(cli, output_count_must_match) {
  write_text("p.td", "fn f(x: f32[N]) -> (f32[N], f32[]) { (x * 2, sum(x)) }\n");
  int64_t s[1] = {3};
  double v[3] = {1, 2, 3};
  write_npy("x.npy", TD_F32, 1, s, v);
  char in[600];
  snprintf(in, sizeof in, "x=%s", path("x.npy"));
  result r = tdsl((const char *[]){"run", path("p.td"), "--entry", "f", "--in", in, "--out", path("a.npy"), NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "2 values") != NULL, "%s", r.err);
  cr_expect_eq(access(path("a.npy"), F_OK), -1);
  drop(&r);
  r = tdsl((const char *[]){"run", path("p.td"), "--entry", "f", "--in", in, "--out", path("a.npy"), "--out",
                            path("b.npy"), NULL});
  cr_assert_eq(r.status, 0, "%s", r.err);
  td_tensor *a, *b;
  td_err err;
  cr_assert_eq(td_npy_read(path("a.npy"), &a, &err), 0);
  cr_assert_eq(td_npy_read(path("b.npy"), &b, &err), 0);
  cr_expect_float_eq(((float *)a->data)[2], 6.0f, 1e-6);
  cr_expect_eq(b->rank, 0);
  cr_expect_float_eq(((float *)b->data)[0], 6.0f, 1e-6);
  td_tensor_release(a);
  td_tensor_release(b);
  drop(&r);
}

Test(cli, check_numerics_names_the_line) {
  write_text("n.td", "fn main() {\n  let x = arange(4) - 2.0\n  let y = log(x)\n  print(y)\n}\n");
  result r = tdsl((const char *[]){"run", path("n.td"), "--check-numerics", NULL});
  cr_expect_eq(r.status, 1);
  char want[600];
  snprintf(want, sizeof want, "%s:3:", path("n.td"));
  cr_expect(strstr(r.err, want) != NULL, "should point at line 3 (log): %s", r.err);
  cr_expect(strstr(r.err, "NaN") != NULL || strstr(r.err, "nan") != NULL, "%s", r.err);
  cr_expect(strstr(r.out, "nan") == NULL, "nothing after the failing op runs: %s", r.out);
  drop(&r);
  /* without the flag the NaNs are printed */
  r = tdsl((const char *[]){"run", path("n.td"), NULL});
  cr_expect_eq(r.status, 0, "%s", r.err);
  cr_expect(strstr(r.out, "nan") != NULL, "%s", r.out);
  drop(&r);
}

Test(cli, trace_reports_every_op_with_location) {
  write_text("t.td", "fn main() {\n  let x = ones([2, 3])\n  print(sum(x * 2))\n}\n");
  result r = tdsl((const char *[]){"run", path("t.td"), "--trace", NULL});
  cr_assert_eq(r.status, 0, "%s", r.err);
  char want[600];
  snprintf(want, sizeof want, "%s:3:", path("t.td"));
  cr_expect(strstr(r.err, want) != NULL, "trace lines name their source: %s", r.err);
  cr_expect(strstr(r.err, "mul") != NULL && strstr(r.err, "sum") != NULL, "%s", r.err);
  cr_expect(strstr(r.err, "f32[2, 3]") != NULL, "%s", r.err);
  cr_expect(strstr(r.out, "12") != NULL, "sum(ones*2) over 6 elements is 12: %s", r.out);
  drop(&r);
}

Test(cli, check_reports_errors_with_location_and_exit_status) {
  write_text("e.td", "fn f(x: f32[N, 3]) -> f32[N, 3] {\n  relus(x)\n}\n");
  result r = tdsl((const char *[]){"check", path("e.td"), NULL});
  cr_expect_eq(r.status, 1);
  char want[600];
  snprintf(want, sizeof want, "%s:2:3: error: unknown name 'relus'", path("e.td"));
  cr_expect(strstr(r.err, want) != NULL, "%s", r.err);
  cr_expect(strstr(r.err, "did you mean 'relu'?") != NULL, "%s", r.err);
  drop(&r);
  write_text("ok.td", "fn f(x: f32[N, 3]) -> f32[N, 3] {\n  relu(x)\n}\n");
  r = tdsl((const char *[]){"check", path("ok.td"), NULL});
  cr_expect_eq(r.status, 0, "%s", r.err);
  cr_expect_str_eq(r.err, "");
  drop(&r);
}

/* Every method is checked, however many a model has (the list of entry
 * points once stopped at 64 per model, so later methods went unchecked). */
Test(cli, check_sees_every_method_of_a_big_model) {
  char src[16384];
  size_t w = (size_t)snprintf(src, sizeof src, "model M {\n");
  for (int i = 0; i < 79; i++)
    w += (size_t)snprintf(src + w, sizeof src - w, "  fn m%d(x: f32[N]) -> f32[N] { x + %d }\n", i, i);
  w += (size_t)snprintf(src + w, sizeof src - w, "  fn last(x: f32[N]) -> f32[N] { relus(x) }\n}\n");
  write_text("big.td", src);
  result r = tdsl((const char *[]){"check", path("big.td"), NULL});
  cr_expect_eq(r.status, 1, "%s", r.err);
  char want[600];
  snprintf(want, sizeof want, "%s:81:", path("big.td"));
  cr_expect(strstr(r.err, want) != NULL && strstr(r.err, "unknown name 'relus'") != NULL, "%s", r.err);
  drop(&r);
}

Test(cli, saved_weights_load_back_and_give_the_same_result) {
  write_text("m.td", MODEL);
  int64_t xs[2] = {2, 3};
  double xv[6] = {0.5, -1, 2, 1, 1, 1};
  write_npy("x.npy", TD_F32, 2, xs, xv);
  char in[600];
  snprintf(in, sizeof in, "x=%s", path("x.npy"));
  /* initialised from seed 3, saved, then loaded explicitly */
  result r = tdsl((const char *[]){"run", path("m.td"), "--entry", "M.forward", "--in", in, "--seed", "3",
                                   "--save-weights", path("w.safetensors"), "--out", path("a.npy"), NULL});
  cr_assert_eq(r.status, 0, "%s", r.err);
  drop(&r);
  td_tensor_map m;
  td_tensor_map_init(&m);
  td_err err;
  cr_assert_eq(td_safetensors_read(path("w.safetensors"), &m, &err), 0, "%s", err.msg);
  cr_expect_eq(m.n, 2);
  td_tensor *w = td_tensor_map_get(&m, "fc.weight");
  cr_assert_not_null(w);
  cr_expect(w->rank == 2 && w->shape[0] == 2 && w->shape[1] == 3);
  td_tensor_map_free(&m);
  r = tdsl((const char *[]){"run", path("m.td"), "--entry", "M.forward", "--in", in, "--weights",
                            path("w.safetensors"), "--out", path("b.npy"), NULL});
  cr_assert_eq(r.status, 0, "%s", r.err);
  drop(&r);
  td_tensor *a, *b;
  cr_assert_eq(td_npy_read(path("a.npy"), &a, &err), 0);
  cr_assert_eq(td_npy_read(path("b.npy"), &b, &err), 0);
  cr_expect_eq(memcmp(a->data, b->data, 4 * sizeof(float)), 0, "same weights must give bit-identical results");
  td_tensor_release(a);
  td_tensor_release(b);
}

/* Number of entries in a directory (-1 when it does not exist). */
static int count_entries(const char *p) {
  char cmd[700];
  snprintf(cmd, sizeof cmd, "ls -A '%s' 2>/dev/null | wc -l", p);
  FILE *f = popen(cmd, "r");
  int n = -1;
  if (f) {
    if (fscanf(f, "%d", &n) != 1) n = -1;
    pclose(f);
  }
  return access(p, F_OK) ? -1 : n;
}

Test(cli, compiled_runs_use_the_cache_unless_told_not_to) {
  write_text("c.td", "fn main() {\n  print(sum(arange(10) * 2))\n}\n");
  setenv("TDSL_CACHE_DIR", path("cache"), 1);
  result r = tdsl((const char *[]){"run", "--compiled", "--no-cache", path("c.td"), NULL});
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_expect_str_eq(r.out, "90\n"); /* 2 * (0 + 1 + ... + 9) */
  cr_expect_leq(count_entries(path("cache")), 0, "--no-cache must not write the cache");
  drop(&r);
  r = tdsl((const char *[]){"run", "--compiled", path("c.td"), NULL});
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_expect_str_eq(r.out, "90\n");
  cr_expect_gt(count_entries(path("cache")), 0, "a compiled run fills the cache");
  drop(&r);
  /* truncate and corrupt every cached object: they must be rebuilt, never loaded */
  char cmd[800];
  snprintf(cmd, sizeof cmd, "for f in '%s'/*.so; do head -c 200 \"$f\" > \"$f.x\" && mv \"$f.x\" \"$f\"; done",
           path("cache"));
  cr_assert_eq(system(cmd), 0);
  r = tdsl((const char *[]){"run", "--compiled", path("c.td"), NULL});
  cr_assert_eq(r.status, 0, "a corrupt cache entry must not break the run: %s", r.err);
  cr_expect_str_eq(r.out, "90\n");
  drop(&r);
  snprintf(cmd, sizeof cmd, "for f in '%s'/*.so; do test $(stat -c %%s \"$f\") -gt 200 || exit 1; done", path("cache"));
  cr_expect_eq(system(cmd), 0, "the corrupt entries were compiled again");
  /* same size, code overwritten: only the checksum can tell */
  snprintf(cmd, sizeof cmd, "for f in '%s'/*.so; do s=$(stat -c %%s \"$f\"); "
           "dd if=/dev/zero of=\"$f\" bs=1 seek=$((s / 3)) count=$((s / 3)) conv=notrunc 2>/dev/null; done",
           path("cache"));
  cr_assert_eq(system(cmd), 0);
  snprintf(cmd, sizeof cmd, "cat '%s'/*.so | md5sum > '%s'", path("cache"), path("corrupt.md5"));
  cr_assert_eq(system(cmd), 0);
  r = tdsl((const char *[]){"run", "--compiled", path("c.td"), NULL});
  cr_assert_eq(r.status, 0, "a corrupt cache entry must not be loaded: %s", r.err);
  cr_expect_str_eq(r.out, "90\n");
  drop(&r);
  snprintf(cmd, sizeof cmd, "cat '%s'/*.so | md5sum | cmp -s - '%s'", path("cache"), path("corrupt.md5"));
  cr_expect_neq(system(cmd), 0, "the corrupt object was loaded instead of being compiled again");
  unsetenv("TDSL_CACHE_DIR");
}

/* TDSL_DEBUG=time: one line per phase on stderr, in order, with the
 * kernels and how many are distinct; nothing on stdout, and no line
 * without it.  Three identical layers: 3 kernels, 1 distinct. */
Test(cli, debug_time_reports_every_phase) {
  write_text("t.td", "import nn\nmodel S { l = [nn.Linear(8, 8) for i in 0..3]\n"
                     "  fn forward(x: f32[N, 8]) -> f32[N, 8] { relu(l[2](relu(l[1](relu(l[0](x)))))) } }\n"
                     "fn main() { print(sum(S()(ones([4, 8])))) }\n");
  double v[32];
  for (int i = 0; i < 32; i++) v[i] = i * 0.1;
  write_npy("x.npy", TD_F32, 2, (int64_t[]){4, 8}, v);
  setenv("TDSL_CACHE_DIR", path("cache"), 1);
  setenv("TDSL_DEBUG", "time", 1);
  char xin[700], td[700];
  snprintf(xin, sizeof xin, "x=%s", path("x.npy"));
  snprintf(td, sizeof td, "%s", path("t.td"));
  const char *const args[] = {"run", "--compiled", td, "--entry", "S.forward", "--in", xin, NULL};
  result r = tdsl(args);
  cr_assert_eq(r.status, 0, "%s", r.err);
  const char *want[] = {"tdsl: time: front end (parse, elaborate) ", "tdsl: time: lowering to the graph ",
                        "tdsl: time: passes ", "tdsl: time: fusion and planning ", "tdsl: time: code generation ",
                        "tdsl: time: libgccjit compile, into the cache, and load "};
  const char *at = r.err;
  for (int i = 0; i < 6; i++) {
    const char *f = strstr(at, want[i]);
    cr_expect_not_null(f, "no '%s' after the earlier phases in:\n%s", want[i], r.err);
    if (f) at = f;
  }
  cr_expect(strstr(r.err, " ms (3 kernels, 1 distinct)") != NULL, "%s", r.err);
  cr_expect(strstr(r.out, "tdsl: time") == NULL);
  drop(&r);
  r = tdsl(args);   /* warm */
  cr_expect(strstr(r.err, "tdsl: time: compile cache hit ") != NULL, "%s", r.err);
  cr_expect(strstr(r.err, "libgccjit") == NULL, "%s", r.err);
  drop(&r);
  unsetenv("TDSL_DEBUG");
  r = tdsl(args);
  cr_expect(strstr(r.err, "tdsl: time") == NULL, "%s", r.err);
  drop(&r);
  unsetenv("TDSL_CACHE_DIR");
}

/* ---- the compile cache's size limit (TDSL_CACHE_MAX_MB) ----
 *
 * An entry is H.so, H.c and H.sum (H: 16 hex digits).  These tests find the
 * entries by listing the directory, set their times explicitly, and work
 * out which entries must survive from the files' sizes and those times. */

#define MAX_STEMS 32

/* The CPU entries in a cache directory: the stems H of its H.so files. */
static int list_stems(const char *d, char stems[][17]) {
  DIR *dp = opendir(d);
  int n = 0;
  if (!dp) return 0;
  struct dirent *de;
  while ((de = readdir(dp)) && n < MAX_STEMS) {
    size_t l = strlen(de->d_name);
    if (l == 19 && !strcmp(de->d_name + 16, ".so") && strspn(de->d_name, "0123456789abcdef") == 16) {
      memcpy(stems[n], de->d_name, 16);
      stems[n++][16] = 0;
    }
  }
  closedir(dp);
  return n;
}

static int count_stems(const char *d) {
  char stems[MAX_STEMS][17];
  return list_stems(d, stems);
}

static int has_stem(const char *d, const char *stem) {
  char stems[MAX_STEMS][17];
  int n = list_stems(d, stems);
  for (int i = 0; i < n; i++)
    if (!strcmp(stems[i], stem)) return 1;
  return 0;
}

/* Runs `tdsl run --compiled` on a program printing sum(arange(10) * k)
 * (= 45 k), checks the output, and returns the stem of the cache entry it
 * used (the one whose .so is newest after the run) into stem. */
static void run_k(int k, char *stem) {
  char name[32], src[128], want[32];
  snprintf(name, sizeof name, "k%d.td", k);
  snprintf(src, sizeof src, "fn main() {\n  print(sum(arange(10) * %d))\n}\n", k);
  write_text(name, src);
  result r = tdsl((const char *[]){"run", "--compiled", path(name), NULL});
  cr_assert_eq(r.status, 0, "k=%d: %s", k, r.err);
  snprintf(want, sizeof want, "%d\n", 45 * k);
  cr_assert_str_eq(r.out, want, "k=%d", k);
  drop(&r);
  if (!stem) return;
  char stems[MAX_STEMS][17];
  int n = list_stems(path("cache"), stems), best = -1;
  struct timespec bt = {0, 0};
  for (int i = 0; i < n; i++) {
    char so[64];
    struct stat st;
    snprintf(so, sizeof so, "cache/%.16s.so", stems[i]);
    if (stat(path(so), &st)) continue;
    if (best < 0 || st.st_mtim.tv_sec > bt.tv_sec || (st.st_mtim.tv_sec == bt.tv_sec && st.st_mtim.tv_nsec > bt.tv_nsec))
      best = i, bt = st.st_mtim;
  }
  cr_assert_geq(best, 0, "k=%d: no entry in the cache", k);
  strcpy(stem, stems[best]);
}

static const char *const entry_ext[] = {".so", ".key", ".sum"};

/* Sets the access and modification times of every file of an entry. */
static void set_entry_time(const char *stem, time_t t) {
  for (int i = 0; i < 3; i++) {
    char f[64];
    snprintf(f, sizeof f, "cache/%s%s", stem, entry_ext[i]);
    struct timespec ts[2] = {{t, 0}, {t, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, path(f), ts, 0), 0, "%s", f);
  }
}

static long long file_size(const char *p) {
  struct stat st;
  return stat(p, &st) ? -1 : (long long)st.st_size;
}

static long long entry_size(const char *stem) {
  long long n = 0;
  for (int i = 0; i < 3; i++) {
    char f[64];
    snprintf(f, sizeof f, "cache/%s%s", stem, entry_ext[i]);
    long long s = file_size(path(f));
    cr_assert_geq(s, 0, "%s is missing", f);
    n += s;
  }
  return n;
}

/* Writes a file of n bytes (in the scratch directory) with mtime t. */
static void make_file(const char *name, long long n, time_t t) {
  FILE *f = fopen(path(name), "wb");
  cr_assert_not_null(f, "%s", name);
  for (long long i = 0; i < n; i++) fputc('x', f);
  fclose(f);
  struct timespec ts[2] = {{t, 0}, {t, 0}};
  cr_assert_eq(utimensat(AT_FDCWD, path(name), ts, 0), 0);
}

/* TDSL_CACHE_MAX_MB for a limit of exactly `bytes` (a multiple of 2^-20
 * MiB prints exactly with 20 decimals). */
static void set_limit_bytes(long long bytes) {
  char v[64];
  snprintf(v, sizeof v, "%.20f", (double)bytes / 1048576.0);
  setenv("TDSL_CACHE_MAX_MB", v, 1);
}

static void cache_env(void) {
  setenv("TDSL_CACHE_DIR", path("cache"), 1);
  unsetenv("TDSL_CACHE");
  unsetenv("TDSL_CACHE_MAX_MB");
}

static void cache_env_done(void) {
  unsetenv("TDSL_CACHE_DIR");
  unsetenv("TDSL_CACHE_MAX_MB");
}

/* Entries A, B, C written in that order (times: 3, 2 and 1 hours ago) and a
 * CUDA module 4 hours old; then A is used again (a hit), and D is compiled
 * under a limit that has room for about 3.5 entries.  Least recently used
 * first means the cubin goes, then B, and then the cache fits: A (used
 * last) and C (newer than B) stay, and so does D (just written). */
Test(cli, cache_evicts_least_recently_used_entries_first) {
  cache_env();
  char a[17], b[17], c[17], d[17];
  run_k(2, a);
  run_k(3, b);
  run_k(4, c);
  cr_assert(strcmp(a, b) && strcmp(b, c) && strcmp(a, c), "distinct programs must have distinct entries");
  cr_assert_eq(count_stems(path("cache")), 3, "the default limit keeps all");
  time_t now = time(NULL);
  set_entry_time(a, now - 3 * 3600);
  set_entry_time(b, now - 2 * 3600);
  set_entry_time(c, now - 1 * 3600);
  make_file("cache/cuda-00000000000000c0.cubin", 4000, now - 4 * 3600);

  run_k(2, NULL);   /* a hit on A: marks it used now */
  char so_a[64];
  snprintf(so_a, sizeof so_a, "cache/%s.so", a);
  struct stat st;
  cr_assert_eq(stat(path(so_a), &st), 0);
  cr_expect_geq(st.st_mtime, now, "a hit must mark the entry as used");
  cr_assert_eq(count_stems(path("cache")), 3, "a hit writes nothing");

  long long sa = entry_size(a), sb = entry_size(b), sc = entry_size(c), cub = 4000;
  long long limit = sa + sc + (sa + sb + sc) / 2;
  set_limit_bytes(limit);
  run_k(5, d);
  cr_assert(strcmp(d, a) && strcmp(d, b) && strcmp(d, c));
  long long sd = entry_size(d);

  /* the rule, applied here to the sizes: remove the oldest entries until
   * the total fits (never D) */
  long long total = cub + sa + sb + sc + sd;
  int want_cub = 1, want_b = 1, want_c = 1, want_a = 1;
  if (total > limit) want_cub = 0, total -= cub;
  if (total > limit) want_b = 0, total -= sb;
  if (total > limit) want_c = 0, total -= sc;
  if (total > limit) want_a = 0, total -= sa;
  cr_expect(!want_cub && !want_b && want_c && want_a,
            "the entries are too unequal for this test (sizes %lld %lld %lld %lld)", sa, sb, sc, sd);

  cr_expect_eq(file_size(path("cache/cuda-00000000000000c0.cubin")) >= 0, want_cub,
               "CUDA modules count and go by the same rule");
  cr_expect_eq(has_stem(path("cache"), b), want_b, "B (least recently used) must go first");
  cr_expect_eq(has_stem(path("cache"), c), want_c, "C must stay: the cache fits without removing it");
  cr_expect_eq(has_stem(path("cache"), a), want_a, "A was used after B and C were written: it must stay");
  cr_expect(has_stem(path("cache"), d), "the entry just written must stay");
  /* no half entries: every file of a removed entry is gone */
  char f[64];
  for (int i = 0; i < 3; i++) {
    snprintf(f, sizeof f, "cache/%s%s", b, entry_ext[i]);
    cr_expect_eq(file_size(path(f)), -1, "%s was left behind", f);
  }
  long long left = (want_a ? sa : 0) + (want_c ? sc : 0) + sd;
  cr_expect_leq(left, limit);
  /* and B, compiled again, is an ordinary miss that works */
  run_k(3, NULL);
  cache_env_done();
}

/* A limit smaller than one entry (and 0) keeps the entry just written,
 * and nothing else; every run still works. */
Test(cli, cache_smaller_than_one_entry_keeps_just_the_newest) {
  cache_env();
  char stems[MAX_STEMS][17], e[17], f[17];
  setenv("TDSL_CACHE_MAX_MB", "0.001", 1);   /* 1048 bytes: less than any shared object */
  run_k(6, e);
  cr_expect_eq(list_stems(path("cache"), stems), 1);
  run_k(7, f);
  cr_expect_eq(list_stems(path("cache"), stems), 1, "only the newest entry stays");
  cr_expect(has_stem(path("cache"), f) && !has_stem(path("cache"), e));
  cr_expect_gt(entry_size(f), 1048, "the entry kept is larger than the limit");
  setenv("TDSL_CACHE_MAX_MB", "0", 1);
  run_k(6, e);      /* evicted above: compiled again */
  cr_expect_eq(list_stems(path("cache"), stems), 1);
  cr_expect(has_stem(path("cache"), e) && !has_stem(path("cache"), f));
  cr_expect_eq(count_entries(path("cache")), 3, "one entry: its .so, .c and .sum");
  run_k(6, NULL);   /* a hit under limit 0 removes nothing */
  cr_expect(has_stem(path("cache"), e));
  cache_env_done();
}

/* Only the cache's own names are counted or removed: other files, names
 * that merely look similar, subdirectories and a writer's fresh temporary
 * file stay; a temporary file more than a day old is removed. */
Test(cli, cache_eviction_leaves_other_files_alone) {
  cache_env();
  cr_assert_eq(mkdir(path("cache"), 0755), 0);
  cr_assert_eq(mkdir(path("cache/sub"), 0755), 0);
  time_t old = time(NULL) - 30 * 24 * 3600, fresh = time(NULL) - 60;
  static const char *const others[] = {
      "cache/notes.txt", "cache/0123456789abcdef.so.bak", "cache/0123456789ABCDEF.so", "cache/0123456789abcde.so",
      "cache/cuda-0123456789abcdef.ptx", "cache/sub/0123456789abcdef.so", "cache/0123456789abcdef.so.x.tmp"};
  int n_others = (int)(sizeof others / sizeof *others);
  make_file("cache/notes.txt", 3 << 20, old);   /* 3 MiB, not counted: larger than the limit below */
  for (int i = 1; i < n_others; i++) make_file(others[i], 100, old);
  make_file("cache/fedcba9876543210.so.12345.tmp.so", 100, fresh);   /* a writer in progress */
  make_file("cache/fedcba9876543210.c.12346.tmp", 100, old);         /* a crashed writer's leftover */
  make_file("cache/cuda-fedcba9876543210.cubin.12347.tmp", 100, old);
  /* an old entry of the cache (its files need not be valid to be counted) */
  make_file("cache/00000000000000aa.so", 100, old);
  make_file("cache/00000000000000aa.c", 100, old);
  make_file("cache/00000000000000aa.sum", 17, old);

  setenv("TDSL_CACHE_MAX_MB", "1", 1);
  char k8[17], k9[17];
  run_k(8, k8);
  cr_expect(has_stem(path("cache"), "00000000000000aa"), "other files must not count towards the limit");
  for (int i = 0; i < n_others; i++) cr_expect_geq(file_size(path(others[i])), 0, "%s was removed", others[i]);
  cr_expect_geq(file_size(path("cache/fedcba9876543210.so.12345.tmp.so")), 0, "a fresh temporary file must stay");
  cr_expect_eq(file_size(path("cache/fedcba9876543210.c.12346.tmp")), -1, "a stale temporary file is removed");
  cr_expect_eq(file_size(path("cache/cuda-fedcba9876543210.cubin.12347.tmp")), -1, "a stale temporary file is removed");

  setenv("TDSL_CACHE_MAX_MB", "0", 1);
  run_k(9, k9);
  cr_expect(has_stem(path("cache"), k9));
  cr_expect(!has_stem(path("cache"), k8) && !has_stem(path("cache"), "00000000000000aa"));
  cr_expect_eq(file_size(path("cache/00000000000000aa.c")), -1, "an entry goes whole");
  cr_expect_eq(file_size(path("cache/00000000000000aa.sum")), -1, "an entry goes whole");
  cr_expect_eq(file_size(path("cache/notes.txt")), 3 << 20);
  for (int i = 1; i < n_others; i++) cr_expect_eq(file_size(path(others[i])), 100, "%s was touched", others[i]);
  cr_expect_geq(file_size(path("cache/fedcba9876543210.so.12345.tmp.so")), 0, "a fresh temporary file must stay");
  cache_env_done();
}

/* A value that is not a plain non-negative number of MiB is ignored: the
 * default (1024 MiB) applies, so these few entries all stay; "0", a valid
 * value, then evicts all but the newest. */
Test(cli, bad_cache_limits_fall_back_to_the_default) {
  cache_env();
  static const char *const bad[] = {"abc", "-1", "2G", "1e3", " 1", "nan", "1.2.3", "."};
  int nb = (int)(sizeof bad / sizeof *bad);
  char stems[MAX_STEMS][17];
  run_k(9, NULL);   /* unset: the default */
  for (int i = 0; i < nb; i++) {
    setenv("TDSL_CACHE_MAX_MB", bad[i], 1);
    run_k(10 + i, NULL);
    cr_expect_eq(list_stems(path("cache"), stems), i + 2, "TDSL_CACHE_MAX_MB=\"%s\" must be ignored", bad[i]);
  }
  setenv("TDSL_CACHE_MAX_MB", "", 1);
  run_k(30, NULL);
  cr_expect_eq(list_stems(path("cache"), stems), nb + 2, "an empty TDSL_CACHE_MAX_MB means the default");
  setenv("TDSL_CACHE_MAX_MB", "0", 1);
  char last[17];
  run_k(31, last);
  cr_expect_eq(list_stems(path("cache"), stems), 1);
  cr_expect(has_stem(path("cache"), last));
  cache_env_done();
}

/* The generated loops are vectorised: the cached object of a pointwise
 * kernel uses the widest vector registers the CPU has (zmm with AVX-512,
 * ymm with AVX2), not scalar code. */
Test(cli, compiled_pointwise_loops_are_vectorised) {
  unsetenv("TDSL_DEBUG");   /* checked accesses (TDSL_DEBUG=bounds) are not vectorised */
  if (system("command -v objdump >/dev/null 2>&1") != 0) {
    cr_skip_test("objdump (binutils) is not installed, so the generated code cannot be inspected");
  }
  int avx512 = system("grep -q avx512f /proc/cpuinfo") == 0, avx2 = system("grep -q avx2 /proc/cpuinfo") == 0;
  write_text("v.td", "fn f(x: f32[N]) -> f32[N] {\n  x * 2.0 + 1.0\n}\n");
  int64_t s[1] = {1000};
  double v[1000];
  for (int i = 0; i < 1000; i++) v[i] = i;
  write_npy("x.npy", TD_F32, 1, s, v);
  char in[600];
  snprintf(in, sizeof in, "x=%s", path("x.npy"));
  setenv("TDSL_CACHE_DIR", path("vcache"), 1);
  result r = tdsl((const char *[]){"run", "--compiled", path("v.td"), "--entry", "f", "--in", in, "--out",
                                   path("y.npy"), NULL});
  unsetenv("TDSL_CACHE_DIR");
  cr_assert_eq(r.status, 0, "%s", r.err);
  drop(&r);
  td_tensor *y;
  td_err err;
  cr_assert_eq(td_npy_read(path("y.npy"), &y, &err), 0);
  cr_expect_float_eq(((float *)y->data)[999], 1999.0f, 1e-6);
  td_tensor_release(y);
  const char *reg = avx512 ? "zmm" : avx2 ? "ymm" : "xmm";
  char cmd[800];
  snprintf(cmd, sizeof cmd, "objdump -d '%s'/*.so | grep -q '%%%s'", path("vcache"), reg);
  cr_expect_eq(system(cmd), 0, "no %s instruction in the generated code", reg);
}

/* `tdsl explain --device cuda`: the whole CPU report (exactly what plain
 * `tdsl explain` prints), then one CUDA section per entry point from the
 * same plans, in the report's order; --json keeps only the report;
 * --device takes only cpu or cuda. */
Test(cli, explain_on_cuda_adds_the_launches_after_the_report) {
  write_text("m.td", "import nn\n"
                     "model M {\n"
                     "  fc = nn.Linear(3, 2)\n"
                     "  fn forward(x: f32[N, 3]) -> f32[N, 2] { relu(fc(x)) }\n"
                     "}\n"
                     "fn g(x: f32[N]) -> f32[N] { exp(x) * 2.0 }\n");
  result cpu = tdsl((const char *[]){"explain", path("m.td"), NULL});
  cr_assert_eq(cpu.status, 0, "%s", cpu.err);
  result dev_cpu = tdsl((const char *[]){"explain", path("m.td"), "--device", "cpu", NULL});
  cr_expect_str_eq(dev_cpu.out, cpu.out);
  result cu = tdsl((const char *[]){"explain", path("m.td"), "--device", "cuda", NULL});
  cr_assert_eq(cu.status, 0, "%s", cu.err);
  cr_expect_str_eq(cu.err, "");
  size_t n = strlen(cpu.out);
  cr_assert(!strncmp(cu.out, cpu.out, n), "the report comes first, unchanged:\n%s", cu.out);
  const char *m = strstr(cu.out + n, "\nCUDA: M.forward ("), *g = strstr(cu.out + n, "\nCUDA: g (");
  cr_expect(m && g && m < g, "one section per entry, in order:\n%s", cu.out + n);
  cr_expect(strstr(cu.out + n, " pointwise grid-stride over N elements"), "%s", cu.out + n);
  result js = tdsl((const char *[]){"explain", path("m.td"), "--json", NULL});
  result cujs = tdsl((const char *[]){"explain", path("m.td"), "--json", "--device", "cuda", NULL});
  cr_expect_eq(cujs.status, 0);
  cr_expect_str_eq(cujs.out, js.out);
  result bad = tdsl((const char *[]){"explain", path("m.td"), "--device", "gpu", NULL});
  cr_expect_eq(bad.status, 2);
  cr_expect_str_eq(bad.err, "tdsl: --device needs cpu or cuda, got 'gpu'\n(run 'tdsl --help' for usage)\n");
  cr_expect_str_eq(bad.out, "");
  drop(&cpu);
  drop(&dev_cpu);
  drop(&cu);
  drop(&js);
  drop(&cujs);
  drop(&bad);
}

/* ---- weights options: --weights-prefix, --weights-strict, --weights-convert ---- */

/* Adds a tensor to m: f32/f64 from vals, f16/bf16 from raw bits. */
static void put(td_tensor_map *m, const char *name, td_dtype dt, int rank, const int64_t *shape,
                const double *vals, const uint16_t *bits) {
  td_err err;
  td_tensor *t = td_tensor_new(dt, rank, shape, &err);
  cr_assert_not_null(t, "%s", err.msg);
  for (int64_t i = 0; i < t->numel; i++) {
    if (bits) ((uint16_t *)t->data)[i] = bits[i];
    else td_tensor_set(t, i, vals[i]);
  }
  cr_assert_eq(td_tensor_map_put(m, name, t, &err), 0, "%s", err.msg);
  td_tensor_release(t);
}

static void write_map(const char *name, td_tensor_map *m) {
  td_err err;
  cr_assert_eq(td_safetensors_write(path(name), m, &err), 0, "%s", err.msg);
  td_tensor_map_free(m);
}

static const int64_t W_SHAPE[2] = {2, 3}, B_SHAPE[1] = {2};
static const double W_VALS[6] = {1, 2, 3, -1, 0, 2}, B_VALS[2] = {0.5, -1};

/* Runs MODEL's M.forward on x = [[1, 1, 1], [2, 0, -1]] with extra
 * arguments (NULL-terminated), saving the weights it ran with to
 * used.safetensors and its output to y.npy. */
static result run_with(const char *const *extra) {
  write_text("m.td", MODEL);
  int64_t xs[2] = {2, 3};
  double xv[6] = {1, 1, 1, 2, 0, -1};
  write_npy("x.npy", TD_F32, 2, xs, xv);
  static char in[600];
  snprintf(in, sizeof in, "x=%s", path("x.npy"));
  const char *args[32] = {"run", path("m.td"), "--entry", "M.forward", "--in", in, "--out", path("y.npy"),
                          "--save-weights", path("used.safetensors")};
  int n = 10;
  for (int i = 0; extra[i] && n < 31; i++) args[n++] = extra[i];
  args[n] = NULL;
  unlink(path("y.npy"));
  unlink(path("used.safetensors"));
  return tdsl(args);
}

/* The weights a run used (saved by run_with), as float64 values. */
static void used_weight(const char *name, double *out, int n) {
  td_tensor_map m;
  td_tensor_map_init(&m);
  td_err err;
  cr_assert_eq(td_safetensors_read(path("used.safetensors"), &m, &err), 0, "%s", err.msg);
  td_tensor *t = td_tensor_map_get(&m, name);
  cr_assert_not_null(t, "no %s saved", name);
  cr_assert_eq(t->dtype, TD_F32);
  cr_assert_eq(t->numel, n);
  for (int i = 0; i < n; i++) out[i] = ((float *)t->data)[i];
  td_tensor_map_free(&m);
}

Test(cli, weights_prefix_reads_a_checkpoints_names) {
  td_tensor_map m;
  td_tensor_map_init(&m);
  put(&m, "model.fc.weight", TD_F32, 2, W_SHAPE, W_VALS, NULL);
  put(&m, "model.fc.bias", TD_F32, 1, B_SHAPE, B_VALS, NULL);
  write_map("w.safetensors", &m);
  char w[600];
  snprintf(w, sizeof w, "%s", path("w.safetensors"));
  result r = run_with((const char *[]){"--weights", w, NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "missing weight 'fc.weight'"), "%s", r.err);
  cr_expect(strstr(r.err, "help: the file has 'model.fc.") && strstr(r.err, "--weights-prefix model.="),
            "no prefix suggested: %s", r.err);
  drop(&r);
  r = run_with((const char *[]){"--weights", w, "--weights-prefix", "model.=", NULL});
  cr_assert_eq(r.status, 0, "%s", r.err);
  drop(&r);
  double got[6];
  used_weight("fc.weight", got, 6);
  for (int i = 0; i < 6; i++) cr_expect_eq(got[i], W_VALS[i], "fc.weight[%d]", i);
  used_weight("fc.bias", got, 2);
  cr_expect(got[0] == 0.5 && got[1] == -1);
  /* a prefix that adds: names without "fc." read as "fc." + name */
  td_tensor_map_init(&m);
  put(&m, "weight", TD_F32, 2, W_SHAPE, W_VALS, NULL);
  put(&m, "bias", TD_F32, 1, B_SHAPE, B_VALS, NULL);
  write_map("w.safetensors", &m);
  r = run_with((const char *[]){"--weights", w, "--weights-prefix", "=fc.", NULL});
  cr_expect_eq(r.status, 0, "%s", r.err);
  drop(&r);
  r = run_with((const char *[]){"--weights", w, "--weights-prefix", "fc", NULL});
  cr_expect_eq(r.status, 2);
  cr_expect(strstr(r.err, "--weights-prefix needs FROM=TO"), "%s", r.err);
  drop(&r);
  r = run_with((const char *[]){"--weights-prefix", "a.=", NULL});
  cr_expect_eq(r.status, 2);
  cr_expect(strstr(r.err, "go with --weights FILE"), "%s", r.err);
  drop(&r);
}

Test(cli, weights_not_strict_loads_what_matches_and_says_what_it_did_not) {
  /* what nn.Linear's bias is at seed 0 with no weights */
  result r = run_with((const char *[]){NULL});
  cr_assert_eq(r.status, 0, "%s", r.err);
  drop(&r);
  double init_bias[2];
  used_weight("fc.bias", init_bias, 2);
  td_tensor_map m;
  td_tensor_map_init(&m);
  put(&m, "fc.weight", TD_F32, 2, W_SHAPE, W_VALS, NULL);
  put(&m, "head.weight", TD_F32, 1, B_SHAPE, B_VALS, NULL);
  write_map("w.safetensors", &m);
  char w[600];
  snprintf(w, sizeof w, "%s", path("w.safetensors"));
  r = run_with((const char *[]){"--weights", w, NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "missing weight 'fc.bias'") && strstr(r.err, "unexpected weight 'head.weight'"), "%s", r.err);
  cr_expect_eq(access(path("y.npy"), F_OK), -1);
  drop(&r);
  r = run_with((const char *[]){"--weights", w, "--weights-strict=false", NULL});
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_expect(strstr(r.err, "loaded 1 of 2 parameters; ignored 1 weight the model lacks: 'head.weight'; "
                          "1 parameter missing from the file kept its initial value: 'fc.bias'"), "%s", r.err);
  drop(&r);
  double got[6];
  used_weight("fc.weight", got, 6);
  for (int i = 0; i < 6; i++) cr_expect_eq(got[i], W_VALS[i], "fc.weight[%d]", i);
  used_weight("fc.bias", got, 2);
  cr_expect(got[0] == init_bias[0] && got[1] == init_bias[1], "the missing bias did not keep its initial value");
  /* a shape that differs is still an error */
  td_tensor_map_init(&m);
  int64_t wrong[2] = {3, 2};
  put(&m, "fc.weight", TD_F32, 2, wrong, W_VALS, NULL);
  write_map("w.safetensors", &m);
  r = run_with((const char *[]){"--weights", w, "--weights-strict=false", NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "weight 'fc.weight' is f32[3, 2], expected f32[2, 3]"), "%s", r.err);
  drop(&r);
  r = run_with((const char *[]){"--weights", w, "--weights-strict=maybe", NULL});
  cr_expect_eq(r.status, 2);
  drop(&r);
}

Test(cli, weights_convert_rounds_f64_to_nearest_even_and_widens_halves) {
  /* f64 values halfway between two f32s round to the even one:
   * 1 + 2^-24 -> 1, 1 + 3 * 2^-24 -> 1 + 2^-22; 1 + 2^-24 + 2^-40 is
   * above the half -> 1 + 2^-23; -(1 + 2^-24) -> -1; 2^-150 (half the
   * smallest f32 denormal) -> 0 and 3 * 2^-150 -> 2^-148 (2 * denormal). */
  double e = 0x1p-24;
  double wv[6] = {1 + e, 1 + 3 * e, 1 + e + 0x1p-40, -(1 + e), 0x1p-150, 3 * 0x1p-150};
  double want_w[6] = {1, 1 + 0x1p-22, 1 + 0x1p-23, -1, 0, 0x1p-148};
  /* f16 0x3C01 = 1 + 2^-10, 0xC000 = -2; bf16 used below: 0x3F81 = 1 + 2^-7 */
  uint16_t bb[2] = {0x3C01, 0xC000};
  td_tensor_map m;
  td_tensor_map_init(&m);
  put(&m, "fc.weight", TD_F64, 2, W_SHAPE, wv, NULL);
  put(&m, "fc.bias", TD_F16, 1, B_SHAPE, NULL, bb);
  write_map("w.safetensors", &m);
  char w[600];
  snprintf(w, sizeof w, "%s", path("w.safetensors"));
  result r = run_with((const char *[]){"--weights", w, NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "weight 'fc.weight' has dtype f64, expected f32") && strstr(r.err, "help: --weights-convert"),
            "%s", r.err);
  drop(&r);
  r = run_with((const char *[]){"--weights", w, "--weights-convert", NULL});
  cr_assert_eq(r.status, 0, "%s", r.err);
  drop(&r);
  double got[6];
  used_weight("fc.weight", got, 6);
  for (int i = 0; i < 6; i++) cr_expect_eq(got[i], want_w[i], "fc.weight[%d]: %a, want %a", i, got[i], want_w[i]);
  used_weight("fc.bias", got, 2);
  cr_expect(got[0] == 1 + 0x1p-10 && got[1] == -2, "f16 bias: %a %a", got[0], got[1]);
  uint16_t bf[2] = {0x3F81, 0xBF80};   /* 1 + 2^-7, -1 */
  td_tensor_map_init(&m);
  put(&m, "fc.weight", TD_F32, 2, W_SHAPE, W_VALS, NULL);
  put(&m, "fc.bias", TD_BF16, 1, B_SHAPE, NULL, bf);
  write_map("w.safetensors", &m);
  r = run_with((const char *[]){"--weights", w, "--weights-convert", NULL});
  cr_assert_eq(r.status, 0, "%s", r.err);
  drop(&r);
  used_weight("fc.bias", got, 2);
  cr_expect(got[0] == 1 + 0x1p-7 && got[1] == -1, "bf16 bias: %a %a", got[0], got[1]);
  /* the output: relu(x @ W.T + b) with W = W_VALS, b = [1 + 2^-7, -1]:
   * row 0 = relu([6 + 1 + 2^-7, 1 - 1]), row 1 = relu([2 - 3 + 1 + 2^-7, -2 - 2 - 1]) */
  td_tensor *y;
  td_err err;
  cr_assert_eq(td_npy_read(path("y.npy"), &y, &err), 0, "%s", err.msg);
  float want_y[4] = {7 + 0x1p-7f, 0, 0x1p-7f, 0};
  for (int i = 0; i < 4; i++) cr_expect_eq(((float *)y->data)[i], want_y[i], "y[%d]", i);
  td_tensor_release(y);
}

Test(cli, weights_near_miss_names_get_a_did_you_mean) {
  td_tensor_map m;
  td_tensor_map_init(&m);
  put(&m, "fc.weigth", TD_F32, 2, W_SHAPE, W_VALS, NULL);
  put(&m, "fc.bias", TD_F32, 1, B_SHAPE, B_VALS, NULL);
  write_map("w.safetensors", &m);
  char w[600];
  snprintf(w, sizeof w, "%s", path("w.safetensors"));
  result r = run_with((const char *[]){"--weights", w, NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "help: did you mean 'fc.weigth' for the parameter 'fc.weight'?"), "%s", r.err);
  drop(&r);
  /* nothing near: no suggestion */
  td_tensor_map_init(&m);
  put(&m, "encoder.layers.0.attn", TD_F32, 2, W_SHAPE, W_VALS, NULL);
  put(&m, "fc.bias", TD_F32, 1, B_SHAPE, B_VALS, NULL);
  write_map("w.safetensors", &m);
  r = run_with((const char *[]){"--weights", w, NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(!strstr(r.err, "did you mean"), "%s", r.err);
  drop(&r);
}

/* ---- load() and save() in tdsl run ---- */

Test(cli, load_and_save_in_main_eager_and_compiled) {
  int64_t s[2] = {2, 2};
  double v[4] = {1, -2, 0.25, 4};
  write_npy("a.npy", TD_F32, 2, s, v);
  char prog[2048];
  snprintf(prog, sizeof prog,
           "fn main() {\n"
           "  let a = load(\"%s\")\n"
           "  save(\"%s\", a @ a)\n"
           "  save(\"%s\", sum(a) > 3)\n"
           "}\n", path("a.npy"), path("b.npy"), path("c.npy"));
  write_text("p.td", prog);
  for (int compiled = 0; compiled < 2; compiled++) {
    unlink(path("b.npy"));
    unlink(path("c.npy"));
    result r = tdsl((const char *[]){"run", path("p.td"), compiled ? "--compiled" : NULL, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_str_empty(r.out);
    drop(&r);
    td_tensor *b, *c;
    td_err err;
    cr_assert_eq(td_npy_read(path("b.npy"), &b, &err), 0, "%s", err.msg);
    cr_assert_eq(td_npy_read(path("c.npy"), &c, &err), 0, "%s", err.msg);
    /* [[1, -2], [0.25, 4]] squared: [[1 - 0.5, -2 - 8], [0.25 + 1, -0.5 + 16]] */
    float want[4] = {0.5f, -10, 1.25f, 15.5f};
    cr_assert_eq(b->dtype, TD_F32);
    for (int i = 0; i < 4; i++) cr_expect_eq(((float *)b->data)[i], want[i], "b[%d]", i);
    cr_expect(c->dtype == TD_BOOL && c->rank == 0 && ((unsigned char *)c->data)[0] == 1);   /* 3.25 > 3 */
    td_tensor_release(b);
    td_tensor_release(c);
  }
  /* the file changed type between checking and running cannot happen in
   * one run; a missing directory is an error at save's line, and no
   * temporary file is left behind */
  snprintf(prog, sizeof prog, "fn main() {\n  save(\"%s\", ones([2]))\n}\n", path("no/dir/b.npy"));
  write_text("q.td", prog);
  result r = tdsl((const char *[]){"run", path("q.td"), NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "q.td:2:3: error: ") && strstr(r.err, "no/dir/b.npy"), "%s", r.err);
  drop(&r);
  /* built artifacts refuse it at the call */
  write_text("e.td", "fn f(x: f32[2]) { x + load(\"a.npy\") }\n");
  r = tdsl((const char *[]){"build", path("e.td"), "-o", path("out"), NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "e.td:1:23: error: load() reads a file, which only `tdsl run`"), "%s", r.err);
  drop(&r);
}

/* ---- model parameters from the command line: --param, --entry 'Net(T=5).f' ---- */

static const char *PMODEL =
    "model Net(T: int = 8, scale: float = 1.0) {\n"
    "  param w: f32[T] = ones()\n"
    "  fn forward(x: f32[N, T]) { x * w * scale }\n"
    "}\n"
    "model Other(K: int = 2) {\n"
    "  fn forward(x: f32[K]) { x + 1 }\n"
    "}\n";

/* Runs Net.forward (spec) on x = [[1, 2, 3]] with extra arguments; the
 * output's three values into y (when it ran). */
static result run_net(const char *spec, const char *const *extra, float *y) {
  write_text("pm.td", PMODEL);
  int64_t xs[2] = {1, 3};
  double xv[3] = {1, 2, 3};
  write_npy("x.npy", TD_F32, 2, xs, xv);
  static char in[600];
  snprintf(in, sizeof in, "x=%s", path("x.npy"));
  const char *args[24] = {"run", path("pm.td"), "--entry", spec, "--in", in, "--out", path("y.npy")};
  int n = 8;
  for (int i = 0; extra[i] && n < 23; i++) args[n++] = extra[i];
  args[n] = NULL;
  unlink(path("y.npy"));
  result r = tdsl(args);
  td_tensor *t;
  td_err err;
  if (r.status == 0 && td_npy_read(path("y.npy"), &t, &err) == 0) {
    cr_assert_eq(t->numel, 3);
    memcpy(y, t->data, 3 * sizeof *y);
    td_tensor_release(t);
  }
  return r;
}

Test(cli, model_parameters_from_the_command_line) {
  float y[3] = {0};
  /* the default T = 8 does not fit x */
  result r = run_net("Net.forward", (const char *[]){NULL}, y);
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "expected f32[N, 8]"), "%s", r.err);
  drop(&r);
  r = run_net("Net.forward", (const char *[]){"--param", "T=3", "--param", "scale=2.5", NULL}, y);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_expect(y[0] == 2.5f && y[1] == 5 && y[2] == 7.5f, "%g %g %g", y[0], y[1], y[2]);   /* x * 1 * 2.5 */
  drop(&r);
  r = run_net("Net(T=3, scale=-1).forward", (const char *[]){NULL}, y);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_expect(y[0] == -1 && y[1] == -2 && y[2] == -3, "%g %g %g", y[0], y[1], y[2]);
  drop(&r);
  /* the last value of a name counts; the entry's spec is read after --param */
  r = run_net("Net(scale=0.5).forward", (const char *[]){"--param", "T=4", "--param", "T=3", NULL}, y);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_expect(y[0] == 0.5f && y[2] == 1.5f, "%g %g %g", y[0], y[1], y[2]);
  drop(&r);
  r = run_net("Net.forward", (const char *[]){"--param", "t=3", NULL}, y);
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "--param t: no model of ") && strstr(r.err, "help: did you mean 'T'?"), "%s", r.err);
  drop(&r);
  r = run_net("Net.forward", (const char *[]){"--param", "sacle=3", NULL}, y);
  cr_expect(strstr(r.err, "help: did you mean 'scale'?"), "%s", r.err);
  drop(&r);
  r = run_net("Net.forward", (const char *[]){"--param", "depth=3", NULL}, y);
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "help: the models' parameters: Net(T), Net(scale), Other(K)"), "%s", r.err);
  drop(&r);
  r = run_net("Net.forward", (const char *[]){"--param", "T=three", NULL}, y);
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "argument 'T' of 'Net' should be int, found a string"), "%s", r.err);
  drop(&r);
  r = run_net("Net(T=3.forward", (const char *[]){NULL}, y);
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "write Model(NAME=VALUE, ...).method"), "%s", r.err);
  drop(&r);
  r = run_net("Net.forward", (const char *[]){"--param", "=3", NULL}, y);
  cr_expect_eq(r.status, 2);
  drop(&r);
  /* main makes its models itself: --param without --entry is refused, not ignored */
  write_text("main.td", "fn main() { print(1) }\n");
  r = tdsl((const char *[]){"run", path("main.td"), "--param", "T=3", NULL});
  cr_expect_eq(r.status, 2);
  cr_expect(strstr(r.err, "fn main makes its models itself"), "%s", r.err);
  drop(&r);
  /* check and explain take them too */
  r = tdsl((const char *[]){"check", path("pm.td"), "--param", "T=x", NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "should be int"), "%s", r.err);
  drop(&r);
  r = tdsl((const char *[]){"explain", path("pm.td"), "--entry", "Net(T=4).forward", NULL});
  cr_expect_eq(r.status, 0, "%s", r.err);
  cr_expect(strstr(r.out, "over [N, 4]"), "%s", r.out);
  drop(&r);
  r = tdsl((const char *[]){"explain", path("pm.td"), "--param", "K=9", NULL});
  cr_expect_eq(r.status, 0, "%s", r.err);
  cr_expect(strstr(r.out, "over [9]"), "%s", r.out);
  drop(&r);
}

Test(cli, build_entry_builds_only_those_entry_points) {
  write_text("pm.td", PMODEL);
  result r = tdsl((const char *[]){"build", path("pm.td"), "-o", path("b1"), "--entry", "Net.forward", "--param",
                                   "T=3", NULL});
  cr_assert_eq(r.status, 0, "%s", r.err);
  drop(&r);
  char *h = read_text(path("b1/pm.h"));
  cr_assert_not_null(h);
  cr_expect(strstr(h, "Net.forward(x: f32[N, 3])"), "%s", h);
  cr_expect(!strstr(h, "Other"), "an entry not asked for was built:\n%s", h);
  free(h);
  /* the executable links the artifact runtime, which a sanitizer build
   * instruments: there only the library and header are built (said) */
#if defined(__SANITIZE_ADDRESS__)
  const int exe = 0;
  fprintf(stderr, "cli::build_entry_builds_only_those_entry_points: --exe not tried: the artifact runtime is built "
                  "with sanitizers\n");
#else
  const int exe = 1;
#endif
  r = tdsl((const char *[]){"build", path("pm.td"), "-o", path("b2"), "--entry", "Other(K=5).forward",
                            exe ? "--exe" : NULL, NULL});
  cr_assert_eq(r.status, 0, "%s", r.err);
  drop(&r);
  h = read_text(path("b2/pm.h"));
  cr_assert_not_null(h);
  cr_expect(strstr(h, "Other.forward(x: f32[5])") && !strstr(h, "Net."), "%s", h);
  free(h);
  if (exe) cr_expect_eq(access(path("b2/pm"), X_OK), 0, "--exe wrote no executable");
  r = tdsl((const char *[]){"build", path("pm.td"), "-o", path("b3"), "--entry", "Net.fwd", NULL});
  cr_expect_eq(r.status, 1);
  cr_expect(strstr(r.err, "--entry Net.fwd: ") && strstr(r.err, "(its entry points: Net.forward, Other.forward)"),
            "%s", r.err);
  cr_expect_eq(access(path("b3/pm.so"), F_OK), -1);
  drop(&r);
}

/* Entry points (docs/language.md, "Entry points"), in a file without
 * `export`: a top-level function with a typed signature that another
 * function uses is a helper, checked only through its callers (heads() makes
 * sense only with its caller's sizes: alone, D / H is not a whole size);
 * an error inside one says which entry point was being checked; and
 * --entry on it says how to make it an entry point. */
static const char *HELPERS =
    "fn heads(x: f32[B, D], h: f32[H]) -> f32[B, H, D / H] { reshape(x, [B, H, D / H]) }\n"
    "fn widen(x: f32[N, 4]) -> f32[N, 4] { x @ ones([3, 4]) }\n"
    "model M(d: int = 4) {\n"
    "  fn forward(x: f32[B, d]) -> f32[B, 2, 2] { heads(x, zeros([2])) }\n"
    "  fn bad(x: f32[N, 4]) { widen(x) }\n"
    "}\n"
    "fn lone(x: f32[N]) -> f32[N] { x * 3 }\n"
    "fn shadows(lone: f32[N]) -> f32[N] { lone + 1 }   # its own lone, not a use\n";

static int count(const char *s, const char *what) {
  int n = 0;
  for (const char *p = strstr(s, what); p; p = strstr(p + 1, what)) n++;
  return n;
}

Test(cli, typed_helpers_are_checked_through_their_callers) {
  write_text("h.td", HELPERS);
  result r = tdsl((const char *[]){"check", path("h.td"), NULL});
  cr_expect_eq(r.status, 1, "%s", r.err);
  char want[600];
  snprintf(want, sizeof want, "%s:2:39: error: matmul of f32[N, 4] and f32[3, 4]", path("h.td"));
  cr_expect(strstr(r.err, want), "%s", r.err);
  /* the one error, found through M.bad (not a second time with widen as an entry point) */
  cr_expect_eq(count(r.err, "error:"), 1, "%s", r.err);
  snprintf(want, sizeof want, "%s:5:3: note: while checking entry point 'M.bad'", path("h.td"));
  cr_expect(strstr(r.err, want), "%s", r.err);
  cr_expect(!strstr(r.err, "D / H"), "heads() was checked on its own:\n%s", r.err);
  drop(&r);

  /* M.forward runs heads() with its own sizes: x = 0..7 as [2, 4] -> [2, 2, 2], the same values */
  int64_t xs[2] = {2, 4};
  double xv[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  write_npy("x.npy", TD_F32, 2, xs, xv);
  char in[600];
  snprintf(in, sizeof in, "x=%s", path("x.npy"));
  r = tdsl((const char *[]){"run", path("h.td"), "--entry", "M.forward", "--in", in, "--out", path("y.npy"), NULL});
  cr_assert_eq(r.status, 0, "%s", r.err);
  drop(&r);
  td_tensor *y;
  td_err err;
  cr_assert_eq(td_npy_read(path("y.npy"), &y, &err), 0, "%s", err.msg);
  cr_assert_eq(y->rank, 3);
  cr_expect(y->shape[0] == 2 && y->shape[1] == 2 && y->shape[2] == 2);
  for (int i = 0; i < 8; i++) cr_expect_float_eq(((float *)y->data)[i], (float)i, 0, "element %d", i);
  td_tensor_release(y);

  /* --entry on a helper: why it is not one, and how to make it one */
  static const char *const cmds[] = {"run", "explain", "build"};
  char file[600], out[600];
  snprintf(file, sizeof file, "%s", path("h.td"));
  snprintf(out, sizeof out, "%s", path("hb"));
  for (int c = 0; c < 3; c++) {
    r = c < 2 ? tdsl((const char *[]){cmds[c], file, "--entry", "heads", NULL})
              : tdsl((const char *[]){cmds[c], file, "-o", out, "--entry", "heads", NULL});
    cr_expect_eq(r.status, 1, "%s: %s", cmds[c], r.err);
    cr_expect(strstr(r.err, "'heads' is not an entry point: it is a helper, used by 'M.forward' at line 4"),
              "%s: %s", cmds[c], r.err);
    cr_expect(strstr(r.err, "mark it an entry point: export fn heads(...)") &&
                  strstr(r.err, "so mark these as well: M.forward, M.bad, lone, shadows"),
              "%s: %s", cmds[c], r.err);
    drop(&r);
  }
  cr_expect_eq(access(path("hb/h.so"), F_OK), -1);
  /* a parameter named like a function hides it: lone stays an entry point, 3 * [1, 2, 3] */
  int64_t vs[1] = {3};
  double vv[3] = {1, 2, 3};
  write_npy("v.npy", TD_F32, 1, vs, vv);
  snprintf(in, sizeof in, "x=%s", path("v.npy"));
  r = tdsl((const char *[]){"run", file, "--entry", "lone", "--in", in, NULL});
  cr_expect_eq(r.status, 0, "%s", r.err);
  cr_expect(strstr(r.out, "[3.0000, 6.0000, 9.0000]"), "%s", r.out);
  drop(&r);
}

/* A file that marks functions `export` has exactly those (and fn main()) as
 * entry points: unmarked functions are helpers, checked only where used,
 * whatever their signature. */
static const char *EXPORTED =
    "fn helper(x: f32[N, 4], w: f32[4, M]) -> f32[N, M] { x @ w }\n"
    "fn lonely(x: f32[N, 3]) -> f32[N, 3] { relus(x) }\n"
    "model Net {\n"
    "  param w: f32[4, 2] = ones()\n"
    "  export fn forward(x: f32[N, 4]) -> f32[N, 2] { helper(x, w) }\n"
    "  fn other(x: f32[N, 4]) -> f32[N, 4] { relus(x) }\n"
    "}\n"
    "export fn twice(x: f32[N]) -> f32[N] { x * 2 }\n";

Test(cli, export_marks_the_entry_points) {
  write_text("e.td", EXPORTED);
  result r = tdsl((const char *[]){"check", path("e.td"), NULL});
  cr_expect_eq(r.status, 0, "%s", r.err);
  cr_expect_str_eq(r.err, "");
  drop(&r);
  int64_t xs[2] = {1, 4};
  double xv[4] = {1, 2, 3, 4};
  write_npy("x.npy", TD_F32, 2, xs, xv);
  char in[600];
  snprintf(in, sizeof in, "x=%s", path("x.npy"));
  r = tdsl((const char *[]){"run", path("e.td"), "--entry", "Net.forward", "--in", in, NULL});
  cr_expect_eq(r.status, 0, "%s", r.err);
  cr_expect(strstr(r.out, "[[10.0000, 10.0000]]"), "%s", r.out);   /* 1 + 2 + 3 + 4 */
  drop(&r);
  r = tdsl((const char *[]){"build", path("e.td"), "-o", path("eb"), NULL});
  cr_assert_eq(r.status, 0, "%s", r.err);
  drop(&r);
  char *h = read_text(path("eb/e.h"));
  cr_assert_not_null(h);
  cr_expect(strstr(h, "Net.forward(x: f32[N, 4])") && strstr(h, "twice(x: f32[N])"), "%s", h);
  cr_expect(!strstr(h, "e_helper") && !strstr(h, "e_lonely") && !strstr(h, "e_other"), "%s", h);
  free(h);
  const char *names[] = {"Net.other", "lonely", "helper"};
  for (int i = 0; i < 3; i++) {
    r = tdsl((const char *[]){"run", path("e.td"), "--entry", names[i], "--in", in, NULL});
    cr_expect_eq(r.status, 1, "%s", r.err);
    char want[200];
    snprintf(want, sizeof want, "'%s' is not an entry point: it is not marked `export`", names[i]);
    cr_expect(strstr(r.err, want), "%s", r.err);
    snprintf(want, sizeof want, "export fn %s(...)", strchr(names[i], '.') ? strchr(names[i], '.') + 1 : names[i]);
    cr_expect(strstr(r.err, want), "%s", r.err);
    drop(&r);
  }
}

/* explain --png (docs/compiler.md, "tdsl explain"): without Graphviz's dot
 * a clear error naming the package; with a dot that fails half way, no
 * PNG (the one there before is kept) and no temporary file left. */
static const char *SLICES =
    "fn f(x: f32[100]) -> f32[4] {\n"
    "  let acc = x[0:4]\n"
    "  for i in 1..25 { acc = acc + x[4 * i:4 * i + 4] }\n"
    "  acc\n"
    "}\n";

/* Whether the scratch directory holds a file whose name starts with prefix. */
static int has_file(const char *prefix) {
  DIR *d = opendir(path("."));
  int found = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    found |= !strncmp(e->d_name, prefix, strlen(prefix));
  if (d) closedir(d);
  return found;
}

Test(cli, explain_png_without_dot_or_with_a_failing_one_leaves_no_file) {
  write_text("g.td", SLICES);
  char file[600], png[600];
  snprintf(file, sizeof file, "%s", path("g.td"));
  snprintf(png, sizeof png, "%s", path("g.png"));
  setenv("TDSL_DOT", path("no-such-dot"), 1);
  result r = tdsl((const char *[]){"explain", file, "--png", png, NULL});
  cr_expect_eq(r.status, 1, "%s", r.err);
  cr_expect(strstr(r.err, "--png needs Graphviz's `dot` program, which is not installed") &&
                strstr(r.err, "apt-get install graphviz"),
            "%s", r.err);
  cr_expect_str_eq(r.out, "");
  drop(&r);
  cr_expect(!has_file("g.png"), "a file was left");
  /* a dot that writes part of a PNG, then fails */
  write_text("fakedot", "#!/bin/sh\ncat > /dev/null\nprintf '\\211PNG partial'\nexit 3\n");
  cr_assert_eq(chmod(path("fakedot"), 0755), 0);
  setenv("TDSL_DOT", path("fakedot"), 1);
  write_text("g.png", "OLD");
  r = tdsl((const char *[]){"explain", file, "--png", png, NULL});
  cr_expect_eq(r.status, 1, "%s", r.err);
  cr_expect(strstr(r.err, "failed (exit status 3); ") && strstr(r.err, "g.png was not written"), "%s", r.err);
  drop(&r);
  char *old = read_text(png);
  cr_expect_str_eq(old, "OLD");
  free(old);
  cr_expect(!has_file("g.png.tmp"), "a temporary file was left");
  unsetenv("TDSL_DOT");
  r = tdsl((const char *[]){"explain", file, "--png", png, "--json", NULL});
  cr_expect_eq(r.status, 2, "%s", r.err);
  drop(&r);
  r = tdsl((const char *[]){"explain", file, "--dot=boxes", NULL});
  cr_expect_eq(r.status, 2, "%s", r.err);
  cr_expect(strstr(r.err, "--dot= takes kernels or ops"), "%s", r.err);
  drop(&r);
}

/* With Graphviz installed (scripts/install-deps installs it): a PNG of the
 * kernel graph, and of the op graph with --dot. */
Test(cli, explain_png_renders_the_kernel_graph_with_dot) {
  const char *pv = getenv("PATH");
  int found = 0;
  char exe[1024];
  for (const char *q = pv ? pv : "/usr/bin:/bin"; *q && !found;) {
    size_t n = strcspn(q, ":");
    snprintf(exe, sizeof exe, "%.*s/dot", (int)n, q);
    found = access(exe, X_OK) == 0;
    q += n + (q[n] == ':');
  }
  if (!found) cr_skip_test("Graphviz's dot is not installed (apt-get install graphviz)");
  write_text("g.td", SLICES);
  char file[600], png[600];
  snprintf(file, sizeof file, "%s", path("g.td"));
  for (int ops = 0; ops < 2; ops++) {
    snprintf(png, sizeof png, "%s", path(ops ? "ops.png" : "kernels.png"));
    result r = ops ? tdsl((const char *[]){"explain", file, "--dot", "--png", png, NULL})
                   : tdsl((const char *[]){"explain", file, "--png", png, NULL});
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect_str_eq(r.out, "");
    drop(&r);
    FILE *f = fopen(png, "rb");
    cr_assert_not_null(f, "no %s", png);
    unsigned char head[8] = {0};
    size_t n = fread(head, 1, 8, f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    cr_expect(n == 8 && !memcmp(head, "\x89PNG\r\n\x1a\n", 8), "%s is not a PNG", png);
    cr_expect_gt(size, 1000);
  }
  cr_expect(!has_file("kernels.png.tmp") && !has_file("ops.png.tmp"), "a temporary file was left");
}

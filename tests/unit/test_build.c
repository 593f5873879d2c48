/* test_build.c - `tdsl build`: artifacts with a C API, end to end.
 *
 * Each test builds a model into a fresh temporary directory with the built
 * tdsl, compiles a C program against the generated header with the system
 * cc (examples/embed/main.c, or a small program written here), runs it,
 * and compares what the artifact computes with the eager interpreter
 * (`tdsl run --entry ... --out`, an independent implementation), read back
 * with the runtime's .npy reader.  Also: --exe with .npy files and --bench,
 * the ABI check, bad arguments, that the artifact needs nothing but
 * libc, libm and pthreads (DT_NEEDED read with readelf), and
 * tests/tsan/cpu_stress.c (the CPU paths on four threads, against eager).
 *
 * Skipped under sanitizer builds: the artifact runtime is then built with
 * the sanitizers and cannot be loaded into an uninstrumented program.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/io.h"

#include "build_test.h"
#include "scratch_dir.h"

static void setup(void) { make_dir("tdsl_build"); }
static void teardown(void) { remove_dir(); }

TestSuite(build, .init = setup, .fini = teardown, .timeout = 120);

static char *read_text(const char *p) { return read_all(p, NULL); }

static void skip_if_sanitized(void) {
  if (SANITIZED) cr_skip_test("the artifact runtime is built with sanitizers");
}

/* x[i] = sin(0.37 i + phase) as an .npy of [n, cols]. */
static void write_xp(const char *name, int64_t n, int64_t cols, double phase) {
  int64_t shape[2] = {n, cols};
  td_err err;
  td_tensor *t = td_tensor_new(TD_F32, 2, shape, &err);
  cr_assert_not_null(t);
  for (int64_t i = 0; i < n * cols; i++) ((float *)t->data)[i] = (float)sin(0.37 * (double)i + phase);
  cr_assert_eq(td_npy_write(path(name), t, &err), 0, "%s", err.msg);
  td_tensor_release(t);
}

/* The embed example's input: row-major x[i] = sin(0.37 i + N). */
static void write_x(const char *name, int64_t n, int64_t cols) { write_xp(name, n, cols, (double)n); }

static td_tensor *read_npy(const char *name) {
  td_tensor *t = NULL;
  td_err err;
  cr_assert_eq(td_npy_read(path(name), &t, &err), 0, "%s", err.msg);
  return t;
}

static void expect_close(double got, double want, double tol, const char *what) {
  cr_expect(fabs(got - want) <= tol * (1 + fabs(want)), "%s: got %.9g, eager %.9g", what, got, want);
}

/* Builds FILE (relative to the source tree) into dir. */
static void build(const char *file, const char *extra) {
  cr_assert_eq(sh("'%s' build '%s/%s' -o '%s' %s", TDSL_BIN, TDSL_SRCDIR, file, dir, extra), 0, "tdsl build %s", file);
}

/* Runs examples/embed/main.c against model `name` and checks every batch
 * against eager `tdsl run` of entry on the same input (and weights). */
static void check_embed(const char *file, const char *name, const char *entry, int in, int out, const char *weights,
                        const char *seed) {
  build(file, "");
  cr_assert_eq(sh("cc -I'%s' -DTD_MODEL=%s '-DTD_HEADER=\"%s.h\"' -DTD_IN=%d -DTD_OUT=%d '%s/examples/embed/main.c' "
                  "'%s/%s.so' -Wl,-rpath,'%s' -lm -o '%s'",
                  dir, name, name, in, out, TDSL_SRCDIR, dir, name, dir, path("embed")),
               0);
  cr_assert_eq(sh("'%s' %s > '%s'", path("embed"), weights ? path(weights) : "", path("embed.txt")), 0);
  char *text = read_text(path("embed.txt")), *at = text;
  static const int64_t batches[] = {1, 3, 8};
  for (int b = 0; b < 3; b++) {
    int64_t n = batches[b];
    write_x("x.npy", n, in);
    cr_assert_eq(sh("'%s' run '%s/%s' --entry %s --in x='%s' --out '%s' %s %s%s", TDSL_BIN, TDSL_SRCDIR, file, entry,
                    path("x.npy"), path("ref.npy"), seed, weights ? "--weights " : "", weights ? path(weights) : ""),
                 0);
    td_tensor *ref = read_npy("ref.npy");
    cr_assert_eq(ref->shape[0], n);
    char head[32];
    snprintf(head, sizeof head, "N=%lld\n", (long long)n);
    at = strstr(at, head);
    cr_assert_not_null(at, "no %s in the output", head);
    at += strlen(head);
    for (int64_t i = 0; i < n * out; i++) {
      char *end;
      double v = strtod(at, &end);
      cr_assert(end != at, "output ends early");
      at = end;
      expect_close(v, ((float *)ref->data)[i], 1e-5, "embed");
    }
    td_tensor_release(ref);
  }
  free(text);
}

Test(build, embed_simple_matches_eager) {
  skip_if_sanitized();
  check_embed("examples/seed/simple.td", "simple", "Simple.forward", 4, 2, NULL, "");
}

Test(build, embed_mlp_matches_eager) {
  skip_if_sanitized();
  check_embed("examples/mlp.td", "mlp", "MLP.forward", 784, 10, NULL, "");
}

Test(build, load_weights_matches_eager) {
  skip_if_sanitized();
  write_x("x.npy", 2, 4);
  cr_assert_eq(sh("'%s' run '%s/examples/seed/simple.td' --entry Simple.forward --in x='%s' --seed 7 --save-weights '%s' > /dev/null",
                  TDSL_BIN, TDSL_SRCDIR, path("x.npy"), path("w.safetensors")),
               0);
  check_embed("examples/seed/simple.td", "simple", "Simple.forward", 4, 2, "w.safetensors", "");
}

/* The weights of --seed 7 differ from the artifact's own (seed 0): the
 * embed program without weights must not match eager --seed 7. */
Test(build, seed_changes_parameters) {
  skip_if_sanitized();
  build("examples/seed/simple.td", "--seed 7");
  write_x("x.npy", 3, 4);
  cr_assert_eq(access(path("simple"), F_OK), -1, "no executable without --exe");
  build("examples/seed/simple.td", "--seed 7 --exe");
  cr_assert_eq(sh("'%s' --in x='%s' --out '%s'", path("simple"), path("x.npy"), path("y.npy")), 0);
  cr_assert_eq(sh("'%s' run '%s/examples/seed/simple.td' --entry Simple.forward --seed 7 --in x='%s' --out '%s'",
                  TDSL_BIN, TDSL_SRCDIR, path("x.npy"), path("ref.npy")),
               0);
  td_tensor *y = read_npy("y.npy"), *ref = read_npy("ref.npy");
  for (int i = 0; i < 6; i++) expect_close(((float *)y->data)[i], ((float *)ref->data)[i], 1e-6, "seed 7");
  td_tensor_release(y);
  td_tensor_release(ref);
}

Test(build, exe_reads_and_writes_npy) {
  skip_if_sanitized();
  build("examples/seed/good_where.td", "--exe");
  write_x("x.npy", 4, 16);
  cr_assert_eq(sh("'%s' --in x='%s' --out '%s'", path("good_where"), path("x.npy"), path("y.npy")), 0);
  cr_assert_eq(sh("'%s' run '%s/examples/seed/good_where.td' --entry GoodWhere.forward --in x='%s' --out '%s'",
                  TDSL_BIN, TDSL_SRCDIR, path("x.npy"), path("ref.npy")),
               0);
  td_tensor *y = read_npy("y.npy"), *ref = read_npy("ref.npy");
  cr_assert_eq(y->rank, 2);
  cr_assert_eq(y->shape[0], 4);
  cr_assert_eq(y->shape[1], 16);
  for (int i = 0; i < 64; i++) expect_close(((float *)y->data)[i], ((float *)ref->data)[i], 1e-5, "good_where");
  td_tensor_release(y);
  td_tensor_release(ref);
}

Test(build, exe_entry_with_two_outputs) {
  skip_if_sanitized();
  build("examples/mlp.td", "--exe");
  write_x("x.npy", 5, 784);
  cr_assert_eq(sh("'%s' --entry MLP.predict --in x='%s' --out '%s' --out '%s'", path("mlp"), path("x.npy"), path("p.npy"),
                  path("c.npy")),
               0);
  cr_assert_eq(sh("'%s' run '%s/examples/mlp.td' --entry MLP.predict --in x='%s' --out '%s' --out '%s'", TDSL_BIN,
                  TDSL_SRCDIR, path("x.npy"), path("rp.npy"), path("rc.npy")),
               0);
  td_tensor *p = read_npy("p.npy"), *rp = read_npy("rp.npy"), *c = read_npy("c.npy"), *rc = read_npy("rc.npy");
  cr_assert_eq(c->dtype, TD_I64);
  for (int i = 0; i < 50; i++) expect_close(((float *)p->data)[i], ((float *)rp->data)[i], 1e-5, "probabilities");
  for (int i = 0; i < 5; i++) cr_expect_eq(((int64_t *)c->data)[i], ((int64_t *)rc->data)[i]);
  td_tensor_release(p);
  td_tensor_release(rp);
  td_tensor_release(c);
  td_tensor_release(rc);
  /* a wrong input shape and a missing input are refused */
  write_x("bad.npy", 5, 10);
  cr_expect_eq(sh("'%s' --in x='%s' > /dev/null 2>&1", path("mlp"), path("bad.npy")), 1);
  cr_expect_eq(sh("'%s' > /dev/null 2>&1", path("mlp")), 1);
}

/* An entry of 70 inputs and 70 outputs: the executable and `tdsl run` take
 * as many --in and --out as it has (both once stopped at 64, the
 * executable saying "bad --in or --out", and its run arrays were 64 long).
 * Output i is 2 * x_i + i with x_i filled with i + 0.5, so 3i + 1. */
Test(build, exe_and_run_take_any_number_of_inputs_and_outputs) {
  skip_if_sanitized();
  enum { K = 70 };
  char *src = calloc(1, 16 * 1024), *cmd = calloc(1, 64 * 1024);
  cr_assert(src && cmd);
  size_t w = (size_t)snprintf(src, 16 * 1024, "fn many(");
  for (int i = 0; i < K; i++) w += (size_t)snprintf(src + w, 16 * 1024 - w, "%sx%d: f32[N]", i ? ", " : "", i);
  w += (size_t)snprintf(src + w, 16 * 1024 - w, ") {\n  (");
  for (int i = 0; i < K; i++) w += (size_t)snprintf(src + w, 16 * 1024 - w, "%s2.0 * x%d + %d.0", i ? ", " : "", i, i);
  snprintf(src + w, 16 * 1024 - w, ")\n}\n");
  write_file(path("many.td"), src);
  cr_assert_eq(sh("'%s' build '%s' -o '%s' --exe", TDSL_BIN, path("many.td"), dir), 0);
  for (int i = 0; i < K; i++) {
    int64_t shape[1] = {3};
    td_err err;
    td_tensor *t = td_tensor_new(TD_F32, 1, shape, &err);
    cr_assert_not_null(t);
    for (int j = 0; j < 3; j++) ((float *)t->data)[j] = (float)i + 0.5f;
    char name[32];
    snprintf(name, sizeof name, "x%d.npy", i);
    cr_assert_eq(td_npy_write(path(name), t, &err), 0, "%s", err.msg);
    td_tensor_release(t);
  }
  for (int mode = 0; mode < 2; mode++) {   /* the executable, then tdsl run */
    size_t c = mode ? (size_t)snprintf(cmd, 64 * 1024, "'%s' run '%s' --entry many", TDSL_BIN, path("many.td"))
                    : (size_t)snprintf(cmd, 64 * 1024, "'%s'", path("many"));
    for (int i = 0; i < K; i++) {
      char in[32], out[32];
      snprintf(in, sizeof in, "x%d.npy", i);
      c += (size_t)snprintf(cmd + c, 64 * 1024 - c, " --in x%d='%s'", i, path(in));
      snprintf(out, sizeof out, "y%d_%d.npy", mode, i);
      c += (size_t)snprintf(cmd + c, 64 * 1024 - c, " --out '%s'", path(out));
    }
    cr_assert_eq(sh("%s", cmd), 0, "%s", mode ? "tdsl run" : "the executable");
    for (int i = 0; i < K; i++) {
      char out[32];
      snprintf(out, sizeof out, "y%d_%d.npy", mode, i);
      td_tensor *y = read_npy(out);
      cr_assert_eq(y->shape[0], 3);
      for (int j = 0; j < 3; j++) cr_expect_eq(((float *)y->data)[j], (float)(3 * i + 1), "%s[%d]", out, j);
      td_tensor_release(y);
    }
  }
  free(src);
  free(cmd);
}

Test(build, exe_bench_prints_latency) {
  skip_if_sanitized();
  build("examples/seed/simple.td", "--exe");
  write_x("x.npy", 1, 4);
  cr_assert_eq(sh("'%s' --in x='%s' --bench 1000 > '%s'", path("simple"), path("x.npy"), path("bench.txt")), 0);
  char *text = read_text(path("bench.txt"));
  const char *at = strstr(text, "median ");
  cr_assert_not_null(at, "%s", text);
  cr_expect_gt(atol(at + 7), 0);
  free(text);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs the shell command cmd (its stderr to err.txt) with no tensor of
 * more than 1 MiB allowed, expecting exit status 1, in well under a second
 * (files of gigabytes must be refused from their headers, before their
 * data is read or allocated); returns stderr (free it). */
static char *refused(const char *cmd) {
  setenv("TDSL_MAX_TENSOR_BYTES", "1048576", 1);
  double t0 = now_s();
  int st = sh("%s 2> '%s'", cmd, path("err.txt"));
  double dt = now_s() - t0;
  unsetenv("TDSL_MAX_TENSOR_BYTES");
  char *err = read_text(path("err.txt"));
  cr_expect_eq(st, 1, "%s: exit status %d: %s", cmd, st, err);
  cr_expect_lt(dt, 1.0, "%s took %.2f s: %s", cmd, dt, err);
  return err;
}

/* `--exe` and PREFIX_load_weights say what `tdsl run` says: the same
 * argument message, every weights problem, the same --in messages; and
 * they check files from their headers (2 GiB sparse files). */
Test(build, exe_and_load_weights_messages_match_tdsl_run) {
  skip_if_sanitized();
  build("examples/seed/simple.td", "--exe");
  const char *src = TDSL_SRCDIR "/examples/seed/simple.td";
  char run[1024], exe[1024], exe_name[1024], want[2048];
  snprintf(run, sizeof run, "'%s' run '%s' --entry Simple.forward", TDSL_BIN, src);
  snprintf(exe, sizeof exe, "'%s'", path("simple"));
  snprintf(exe_name, sizeof exe_name, "%s", path("simple"));
  const char *progs[2] = {run, exe}, *names[2] = {"tdsl", exe_name};
  /* the wrong shape, then a 2 GiB input of the wrong shape */
  write_x("x5.npy", 2, 5);
  sparse_npy("big.npy", "<f4", "(107374182, 5)", 2147483640ull);
  static const char *in_cases[][2] = {
      {"x5.npy", "argument 'x': expected f32[N, 4], got f32[2, 5]: dimension 1 is 5, expected 4\n"},
      {"big.npy", "argument 'x': expected f32[N, 4], got f32[107374182, 5]: dimension 1 is 5, expected 4\n"},
  };
  for (int c = 0; c < 2; c++)
    for (int p = 0; p < 2; p++) {
      char cmd[2048];
      snprintf(cmd, sizeof cmd, "%s --in x='%s'", progs[p], path(in_cases[c][0]));
      char *err = refused(cmd);
      snprintf(want, sizeof want, "%s: error: %s", names[p], in_cases[c][1]);
      cr_expect_str_eq(err, want);
      free(err);
    }
  /* every problem of a weights file: a wrong shape, a missing and an extra
   * tensor; then an extra 2 GiB tensor */
  write_x("x.npy", 1, 4);
  const char *bad = "{\"fc.extra\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[32,40]},"
                    "\"fc.weight\":{\"dtype\":\"F32\",\"shape\":[4,2],\"data_offsets\":[0,32]}}";
  const char *big = "{\"fc.bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                    "\"fc.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],\"data_offsets\":[8,40]},"
                    "\"big\":{\"dtype\":\"F32\",\"shape\":[536870912],\"data_offsets\":[40,2147483688]}}";
  float zeros[10] = {0};
  sparse_safetensors("bad.safetensors", bad, zeros, 40, 40);
  sparse_safetensors("big.safetensors", big, zeros, 40, 2147483688ull);
  static const char *w_cases[][2] = {
      {"bad.safetensors", "weight 'fc.weight' is f32[4, 2], expected f32[2, 4]\n"
                          "missing weight 'fc.bias' (f32[2])\n"
                          "unexpected weight 'fc.extra': the model has no parameter of that name\n"},
      {"big.safetensors", "unexpected weight 'big': the model has no parameter of that name\n"},
  };
  for (int c = 0; c < 2; c++)
    for (int p = 0; p < 2; p++) {
      char cmd[2048];
      snprintf(cmd, sizeof cmd, "%s --in x='%s' --weights '%s'", progs[p], path("x.npy"), path(w_cases[c][0]));
      char *err = refused(cmd);
      snprintf(want, sizeof want, "%s: error: %s does not fit Simple.forward:\n%s", names[p], path(w_cases[c][0]),
               w_cases[c][1]);
      cr_expect_str_eq(err, want);
      free(err);
    }
  /* --in names that are no argument, and a missing input */
  for (int p = 0; p < 2; p++) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s --in y='%s'", progs[p], path("x.npy"));
    char *err = refused(cmd);
    snprintf(want, sizeof want, "%s: error: Simple.forward has no argument named 'y' (arguments: x)\n"
             "%s: error: missing input for argument 'x' of Simple.forward\nhelp: pass it with --in x=FILE.npy\n",
             names[p], names[p]);
    cr_expect_str_eq(err, want);
    free(err);
  }
  /* the C API: the message, from the header alone */
  write_file(path("load.c"), "#include <stdio.h>\n#include \"simple.h\"\n"
             "int main(int argc, char **argv) {\n"
             "  simple_model *m = simple_create();\n"
             "  char err[1024];\n"
             "  if (!m || argc < 2 || simple_load_weights(m, argv[1], err, sizeof err) == 0) return 2;\n"
             "  fprintf(stderr, \"%s\\n\", err);\n"
             "  int same = !strcmp(err, simple_error(m));\n"
             "  simple_free(m);\n"
             "  return same ? 1 : 3;\n}\n");
  cr_assert_eq(sh("cc -include string.h -I'%s' '%s' '%s/simple.so' -Wl,-rpath,'%s' -o '%s'", dir, path("load.c"), dir,
                  dir, path("load")),
               0);
  for (int c = 0; c < 2; c++) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' '%s'", path("load"), path(w_cases[c][0]));
    char *err = refused(cmd);
    snprintf(want, sizeof want, "%s does not fit Simple.forward:\n%s", path(w_cases[c][0]), w_cases[c][1]);
    cr_expect_str_eq(err, want);
    free(err);
  }
}

/* A program of its own: the ABI check, the version, a bad size. */
Test(build, abi_mismatch_and_bad_arguments) {
  skip_if_sanitized();
  build("examples/seed/simple.td", "");
  FILE *f = fopen(path("abi.c"), "w");
  cr_assert_not_null(f);
  fputs("#include <stdio.h>\n#include <string.h>\n#include \"simple.h\"\n"
        "int main(void) {\n"
        "  if (simple_abi_version() != SIMPLE_TDSL_ABI) return 10;\n"
        "  if (simple_create_abi(SIMPLE_TDSL_ABI + 1, SIMPLE_TDSL_SIG)) return 11;\n"
        "  if (!strstr(simple_error(NULL), \"ABI version\")) return 18;\n"
        "  if (simple_create_abi(SIMPLE_TDSL_ABI, SIMPLE_TDSL_SIG ^ 1)) return 19;\n"
        "  if (!strstr(simple_error(NULL), \"another model\")) return 20;\n"
        "  char e0[128] = \"\";\n"
        "  if (simple_load_weights(NULL, \"w.safetensors\", e0, sizeof e0) != -1 ||\n"
        "      strcmp(e0, \"no model (create returned NULL)\")) return 21;\n"
        "  simple_model *m = simple_create();\n"
        "  if (!m) return 12;\n"
        "  if (simple_load_weights(m, NULL, e0, sizeof e0) != -1 || strcmp(e0, \"no weights file (path is NULL)\") ||\n"
        "      strcmp(simple_error(m), e0)) return 22;\n"
        "  float x[4] = {1, 2, 3, 4}, y[2];\n"
        "  if (simple_forward(m, -1, x, y) != 1) return 13;\n"
        "  if (!simple_error(m)[0]) return 14;\n"
        "  if (simple_forward(m, 1, NULL, y) == 0) return 15;\n"
        "  if (simple_forward(m, 0, x, y) != 0) return 16;\n"
        "  char err[128];\n"
        "  if (simple_load_weights(m, \"/nonexistent.safetensors\", err, sizeof err) == 0 || !err[0]) return 17;\n"
        "  simple_free(m);\n"
        "  return 0;\n}\n",
        f);
  fclose(f);
  cr_assert_eq(sh("cc -I'%s' '%s' '%s/simple.so' -Wl,-rpath,'%s' -o '%s'", dir, path("abi.c"), dir, dir, path("abi")), 0);
  cr_expect_eq(sh("'%s'", path("abi")), 0);
}

/* A matmul weight is packed once and the packed copy kept across calls:
 * load_weights must make it stale.  The model is called with its own
 * weights (seed 0), then again after loading other weights (seed 7): each
 * result must match eager with those weights. */
Test(build, load_weights_after_calls_repacks) {
  skip_if_sanitized();
  write_x("x.npy", 3, 16);
  const char *f = "examples/seed/good_dynamic.td";
  cr_assert_eq(sh("'%s' run '%s/%s' --entry GoodDynamic.forward --in x='%s' --out '%s'", TDSL_BIN, TDSL_SRCDIR, f,
                  path("x.npy"), path("ref0.npy")),
               0);
  cr_assert_eq(sh("'%s' run '%s/%s' --entry GoodDynamic.forward --in x='%s' --seed 7 --out '%s' --save-weights '%s'",
                  TDSL_BIN, TDSL_SRCDIR, f, path("x.npy"), path("ref7.npy"), path("w.safetensors")),
               0);
  build(f, "");
  FILE *c = fopen(path("twice.c"), "w");
  cr_assert_not_null(c);
  fputs("#include <math.h>\n#include <stdio.h>\n#include \"good_dynamic.h\"\n"
        "int main(int argc, char **argv) {\n"
        "  good_dynamic_model *m = good_dynamic_create();\n"
        "  float x[48], y[48];\n"
        "  char err[256];\n"
        "  if (!m || argc < 2) return 10;\n"
        "  for (int i = 0; i < 48; i++) x[i] = (float)sin(0.37 * i + 3);\n"
        "  for (int pass = 0; pass < 2; pass++) {\n"
        "    if (pass && good_dynamic_load_weights(m, argv[1], err, sizeof err)) return 11;\n"
        "    if (good_dynamic_forward(m, 3, x, y)) return 12;\n"
        "    for (int i = 0; i < 48; i++) printf(\"%.9g\\n\", y[i]);\n"
        "  }\n"
        "  good_dynamic_free(m);\n"
        "  return 0;\n}\n",
        c);
  fclose(c);
  cr_assert_eq(sh("cc -I'%s' '%s' '%s/good_dynamic.so' -Wl,-rpath,'%s' -lm -o '%s'", dir, path("twice.c"), dir, dir,
                  path("twice")),
               0);
  cr_assert_eq(sh("'%s' '%s' > '%s'", path("twice"), path("w.safetensors"), path("twice.txt")), 0);
  char *text = read_text(path("twice.txt")), *at = text;
  td_tensor *ref[2] = {read_npy("ref0.npy"), read_npy("ref7.npy")};
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < 48; i++) {
      char *end;
      double v = strtod(at, &end);
      cr_assert(end != at, "output ends early");
      at = end;
      expect_close(v, ((float *)ref[pass]->data)[i], 1e-5, pass ? "after load_weights" : "own weights");
    }
  td_tensor_release(ref[0]);
  td_tensor_release(ref[1]);
  free(text);
}

/* Repeated calls take the runtime's fast path (same sizes and weights:
 * only the argument pointers are rebound).  It must follow new input
 * data and new output buffers, leave it for a size change and come back,
 * refuse a NULL argument like the full path, and notice load_weights.
 * Every result is compared with eager tdsl run on the same data. */
Test(build, repeated_calls_follow_their_arguments) {
  skip_if_sanitized();
  const char *f = "examples/seed/good_dynamic.td";
  struct { const char *x, *ref; int n; double phase; const char *seed; } run[4] = {
      {"xa.npy", "ra.npy", 3, 1.0, "0"}, {"xb.npy", "rb.npy", 3, 2.0, "0"},
      {"xc.npy", "rc.npy", 5, 3.0, "0"}, {"xb.npy", "rb7.npy", 3, 2.0, "7"}};
  for (int r = 0; r < 4; r++) {
    write_xp(run[r].x, run[r].n, 16, run[r].phase);
    cr_assert_eq(sh("'%s' run '%s/%s' --entry GoodDynamic.forward --in x='%s' --seed %s --out '%s'%s%s", TDSL_BIN,
                    TDSL_SRCDIR, f, path(run[r].x), run[r].seed, path(run[r].ref), r == 3 ? " --save-weights " : "",
                    r == 3 ? path("w7.safetensors") : ""),
                 0);
  }
  build(f, "");
  FILE *c = fopen(path("calls.c"), "w");
  cr_assert_not_null(c);
  fputs("#include <math.h>\n#include <stdio.h>\n#include \"good_dynamic.h\"\n"
        "static float x[3][80], y[2][80];\n"
        "static int call(good_dynamic_model *m, int n, int xi, int yi) {\n"
        "  if (good_dynamic_forward(m, n, x[xi], y[yi])) return 1;\n"
        "  for (int i = 0; i < n * 16; i++) printf(\"%.9g\\n\", y[yi][i]);\n"
        "  return 0;\n}\n"
        "int main(int argc, char **argv) {\n"
        "  char err[256];\n"
        "  good_dynamic_model *m = good_dynamic_create();\n"
        "  if (!m || argc < 2) return 10;\n"
        "  for (int k = 0; k < 3; k++)\n"
        "    for (int i = 0; i < 80; i++) x[k][i] = (float)sin(0.37 * i + k + 1);\n"
        "  if (call(m, 3, 0, 0) || call(m, 3, 1, 1) || call(m, 3, 0, 1)) return 11;\n"
        "  if (good_dynamic_forward(m, 3, NULL, y[0]) == 0) return 12;\n"
        "  if (call(m, 5, 2, 0) || call(m, 3, 1, 0)) return 13;\n"
        "  if (good_dynamic_load_weights(m, argv[1], err, sizeof err) || call(m, 3, 1, 1)) return 14;\n"
        "  good_dynamic_free(m);\n"
        "  return 0;\n}\n",
        c);
  fclose(c);
  cr_assert_eq(sh("cc -I'%s' '%s' '%s/good_dynamic.so' -Wl,-rpath,'%s' -lm -o '%s'", dir, path("calls.c"), dir, dir,
                  path("calls")),
               0);
  cr_assert_eq(sh("'%s' '%s' > '%s'", path("calls"), path("w7.safetensors"), path("calls.txt")), 0);
  /* the calls in order: xa, xb, xa (into the other buffer), xc (N = 5), xb, xb with seed-7 weights */
  const char *want[6] = {"ra.npy", "rb.npy", "ra.npy", "rc.npy", "rb.npy", "rb7.npy"};
  char *text = read_text(path("calls.txt")), *at = text;
  for (int k = 0; k < 6; k++) {
    td_tensor *ref = read_npy(want[k]);
    for (int64_t i = 0; i < ref->numel; i++) {
      char *end;
      double v = strtod(at, &end);
      cr_assert(end != at, "output ends early (call %d)", k);
      at = end;
      expect_close(v, ((float *)ref->data)[i], 1e-5, want[k]);
    }
    td_tensor_release(ref);
  }
  free(text);
}

/* Issue 12's program: its byte counts are terms of five and six symbols,
 * which the descriptor's polynomials must carry whole (TDA_MONO_MAX); the
 * executable's result must be eager's, at two sets of sizes. */
Test(build, sizes_with_many_symbols_in_a_term) {
  skip_if_sanitized();
  FILE *f = fopen(path("five.td"), "w");
  cr_assert_not_null(f);
  fputs("fn f(x: f32[A, B, C, D, E], w: f32[E, F]) -> f32[A, B, C, D, F] {\n"
        "  let y = exp(x) * 2.0\n"
        "  tanh(y @ w) + sum(y, axis = 4, keepdims = true)\n"
        "}\n", f);
  fclose(f);
  cr_assert_eq(sh("'%s' build '%s' -o '%s' --exe", TDSL_BIN, path("five.td"), dir), 0);
  static const int64_t sizes[2][6] = {{2, 3, 2, 3, 4, 5}, {1, 2, 3, 1, 5, 2}};
  for (int r = 0; r < 2; r++) {
    const int64_t *v = sizes[r];
    int64_t xs[5] = {v[0], v[1], v[2], v[3], v[4]}, ws[2] = {v[4], v[5]};
    td_err err;
    td_tensor *x = td_tensor_new(TD_F32, 5, xs, &err), *w = td_tensor_new(TD_F32, 2, ws, &err);
    cr_assert(x && w);
    for (int64_t i = 0; i < x->numel; i++) ((float *)x->data)[i] = (float)(0.5 * sin(0.37 * (double)i + r));
    for (int64_t i = 0; i < w->numel; i++) ((float *)w->data)[i] = (float)(0.3 * cos(0.21 * (double)i));
    cr_assert_eq(td_npy_write(path("x5.npy"), x, &err), 0, "%s", err.msg);
    cr_assert_eq(td_npy_write(path("w5.npy"), w, &err), 0, "%s", err.msg);
    cr_assert_eq(sh("'%s' --in x='%s' --in w='%s' --out '%s'", path("five"), path("x5.npy"), path("w5.npy"),
                    path("y5.npy")), 0);
    cr_assert_eq(sh("'%s' run '%s' --entry f --in x='%s' --in w='%s' --out '%s'", TDSL_BIN, path("five.td"),
                    path("x5.npy"), path("w5.npy"), path("r5.npy")), 0);
    td_tensor *y = read_npy("y5.npy"), *ref = read_npy("r5.npy");
    cr_assert_eq(y->numel, v[0] * v[1] * v[2] * v[3] * v[5]);
    cr_assert_eq(ref->numel, y->numel);
    for (int64_t i = 0; i < y->numel; i++) expect_close(((float *)y->data)[i], ((float *)ref->data)[i], 1e-5, "five");
    td_tensor_release(x);
    td_tensor_release(w);
    td_tensor_release(y);
    td_tensor_release(ref);
  }
}

/* The generated entry functions' fast path (calls with the sizes of the
 * previous one): each call draws new random numbers, the same ones as a
 * model whose calls alternate sizes (so every call takes the full path),
 * the first equal to `tdsl run`; an input no kernel reads is fine; an
 * index out of range on a fast call is still reported, and the next call
 * recovers. */
Test(build, fast_calls_draw_numbers_and_check_indices) {
  skip_if_sanitized();
  FILE *t = fopen(path("t.td"), "w");
  cr_assert_not_null(t);
  fputs("fn noisy(x: f32[N, 1]) -> f32[4] {\n  rand([4], seed = 3)\n}\n\n"
        "fn pick(t: f32[5], idx: i32[M]) -> f32[M] {\n  take(t, idx, axis = 0)\n}\n",
        t);
  fclose(t);
  write_xp("x.npy", 1, 1, 0.5);
  cr_assert_eq(sh("'%s' run '%s' --entry noisy --in x='%s' --out '%s'", TDSL_BIN, path("t.td"), path("x.npy"),
                  path("r.npy")),
               0);
  cr_assert_eq(sh("'%s' build '%s' -o '%s'", TDSL_BIN, path("t.td"), dir), 0);
  FILE *c = fopen(path("fast.c"), "w");
  cr_assert_not_null(c);
  fputs("#include <stdio.h>\n#include <string.h>\n#include \"t.h\"\n"
        "int main(void) {\n"
        "  t_model *a = t_create(), *b = t_create();\n"
        "  float x[2] = {1, 2}, ya[4][4], yb[4][4], t5[5] = {10, 11, 12, 13, 14}, out[2];\n"
        "  int32_t idx[2] = {1, 4}, bad[2] = {1, 5};\n"
        "  if (!a || !b) return 10;\n"
        "  for (int k = 0; k < 4; k++)\n"
        "    if (t_noisy(a, 1, x, ya[k]) || t_noisy(b, 1 + (k & 1), x, yb[k])) return 11;\n"
        "  if (memcmp(ya, yb, sizeof ya)) return 12;\n"
        "  for (int k = 1; k < 4; k++)\n"
        "    if (!memcmp(ya[k], ya[k - 1], sizeof ya[k])) return 13;\n"
        "  for (int i = 0; i < 4; i++) printf(\"%.9g\\n\", ya[0][i]);\n"
        "  for (int k = 0; k < 2; k++)\n"
        "    if (t_pick(a, 2, t5, idx, out) || out[0] != 11 || out[1] != 14) return 14;\n"
        "  if (t_pick(a, 2, t5, bad, out) != 2 || !strstr(t_error(a), \"out of range\")) return 15;\n"
        "  if (t_pick(a, 2, t5, idx, out) || out[1] != 14) return 16;\n"
        "  t_free(a);\n  t_free(b);\n  return 0;\n}\n",
        c);
  fclose(c);
  cr_assert_eq(sh("cc -I'%s' '%s' '%s/t.so' -Wl,-rpath,'%s' -o '%s'", dir, path("fast.c"), dir, dir, path("fast")), 0);
  cr_assert_eq(sh("'%s' > '%s'", path("fast"), path("fast.txt")), 0);
  td_tensor *ref = read_npy("r.npy");
  char *text = read_text(path("fast.txt")), *at = text;
  for (int i = 0; i < 4; i++) {
    char *end;
    double v = strtod(at, &end);
    cr_assert(end != at, "output ends early");
    at = end;
    cr_expect_eq((float)v, ((float *)ref->data)[i], "the first call's number %d: %.9g, tdsl run %.9g", i, v,
                 ((float *)ref->data)[i]);
  }
  free(text);
  td_tensor_release(ref);
}

/* DT_NEEDED of the library and the executable: libc, libm, pthreads only. */
Test(build, artifact_needs_only_libc) {
  skip_if_sanitized();
  build("examples/mlp.td", "--exe");
  const char *files[2] = {path("mlp.so"), path("mlp")};
  for (int i = 0; i < 2; i++) {
    char cmd[1024], line[512];
    snprintf(cmd, sizeof cmd, "readelf -d '%s'", files[i]);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    int needed = 0;
    while (fgets(line, sizeof line, p)) {
      const char *lib = strstr(line, "Shared library: [");
      if (!lib) continue;
      lib += 17;
      needed++;
      int ok = !strncmp(lib, "libc.so", 7) || !strncmp(lib, "libm.so", 7) || !strncmp(lib, "libpthread.so", 13) ||
               !strncmp(lib, "ld-linux", 8);
      cr_expect(ok, "%s needs %s", files[i], lib);
    }
    cr_expect_eq(pclose(p), 0, "readelf failed");
    cr_expect_gt(needed, 0);
  }
}

Test(build, bad_command_lines) {
  cr_expect_eq(sh("'%s' build > /dev/null 2>&1", TDSL_BIN), 2);
  cr_expect_eq(sh("'%s' build '%s/examples/seed/simple.td' > /dev/null 2>&1", TDSL_BIN, TDSL_SRCDIR), 2);
  cr_expect_eq(sh("'%s' build '%s/examples/seed/bad_if.td' -o '%s' > /dev/null 2>&1", TDSL_BIN, TDSL_SRCDIR, dir), 1);
}

/* Tokens (i * mul) % 100 as an i64 .npy of [rows, cols]. */
static void write_tokens(const char *name, int64_t rows, int64_t cols, int mul) {
  int64_t shape[2] = {rows, cols};
  td_err err;
  td_tensor *tok = td_tensor_new(TD_I64, 2, shape, &err);
  cr_assert_not_null(tok);
  for (int64_t i = 0; i < rows * cols; i++) ((int64_t *)tok->data)[i] = (i * mul) % 100;
  cr_assert_eq(td_npy_write(path(name), tok, &err), 0);
  td_tensor_release(tok);
}

/* Two symbolic sizes and an i64 input: TinyLM.forward(tokens: i64[B, T]). */
Test(build, exe_transformer_tokens) {
  skip_if_sanitized();
  build("examples/transformer.td", "--exe");
  write_tokens("tok.npy", 2, 7, 13);
  cr_assert_eq(sh("'%s' --entry TinyLM.forward --in tokens='%s' --out '%s'", path("transformer"), path("tok.npy"),
                  path("y.npy")),
               0);
  cr_assert_eq(sh("'%s' run '%s/examples/transformer.td' --entry TinyLM.forward --in tokens='%s' --out '%s'", TDSL_BIN,
                  TDSL_SRCDIR, path("tok.npy"), path("ref.npy")),
               0);
  td_tensor *y = read_npy("y.npy"), *ref = read_npy("ref.npy");
  cr_assert_eq(y->rank, 3);
  cr_assert_eq(y->shape[0] * y->shape[1] * y->shape[2], ref->shape[0] * ref->shape[1] * ref->shape[2]);
  for (int64_t i = 0; i < y->shape[0] * y->shape[1] * y->shape[2]; i++)
    expect_close(((float *)y->data)[i], ((float *)ref->data)[i], 1e-5, "TinyLM");
  td_tensor_release(y);
  td_tensor_release(ref);
}

/* print() inside an entry point: the same text as eager mode, after the
 * call; set_print redirects it.  Also outputs that are an input, a
 * parameter, or the same value twice. */
Test(build, prints_and_odd_outputs) {
  skip_if_sanitized();
  write_file(path("id.td"), id_td);
  cr_assert_eq(sh("'%s' build '%s' -o '%s' --exe", TDSL_BIN, path("id.td"), dir), 0);
  write_x("x.npy", 2, 3);
  cr_assert_eq(sh("'%s' --in x='%s' > '%s'", path("id"), path("x.npy"), path("a.txt")), 0);
  cr_assert_eq(sh("'%s' run '%s' --entry Id.forward --in x='%s' > '%s'", TDSL_BIN, path("id.td"), path("x.npy"),
                  path("r.txt")),
               0);
  char *a = read_text(path("a.txt")), *r = read_text(path("r.txt"));
  cr_expect_str_eq(a, r);
  cr_expect_not_null(strstr(a, "y is [["));
  free(a);
  free(r);
  write_file(path("pr.c"), "#include <string.h>\n#include \"id.h\"\n"
        "static int lines;\n"
        "static void count(void *ud, const char *text) { (void)ud; lines += strstr(text, \"y is\") != 0; }\n"
        "int main(void) {\n"
        "  id_model *m = id_create();\n"
        "  float x[6] = {1, 2, 3, 4, 5, 6}, o0[6], o1[6], o2[3], o3[6];\n"
        "  id_set_print(m, count, 0);\n"
        "  if (id_forward(m, 2, x, o0, o1, o2, o3) || lines != 1) return 10;\n"
        "  id_set_print(m, 0, 0);\n"
        "  if (id_forward(m, 2, x, o0, o1, o2, o3) || lines != 1) return 11;\n"
        "  for (int i = 0; i < 6; i++) if (o0[i] != x[i] || o1[i] != 2 * x[i] || o3[i] != 2 * x[i]) return 12;\n"
        "  for (int i = 0; i < 3; i++) if (o2[i] != 1) return 13;\n"
        "  id_free(m);\n  return 0;\n}\n");
  cr_assert_eq(sh("cc -I'%s' '%s' '%s/id.so' -Wl,-rpath,'%s' -o '%s'", dir, path("pr.c"), dir, dir, path("pr")), 0);
  cr_expect_eq(sh("'%s'", path("pr")), 0);
}

/* Every output is written under a temporary name and renamed at the end:
 * a build that fails (here: linking against a runtime library that is no
 * archive, and an executable name taken by a directory) leaves no new
 * file behind, and the files of an earlier build are untouched. */
Test(build, failed_build_leaves_no_files) {
  char out[600];
  snprintf(out, sizeof out, "%s", path("out"));
  cr_assert_eq(sh("'%s' build '%s/examples/seed/simple.td' -o '%s' 2>/dev/null", TDSL_BIN, TDSL_SRCDIR, out), 0);
  size_t n_so, n_h;
  char *so = read_all(path("out/simple.so"), &n_so), *h = read_all(path("out/simple.h"), &n_h);
  FILE *f = fopen(path("bad.a"), "w");
  cr_assert_not_null(f);
  fputs("not an archive\n", f);
  fclose(f);
  cr_assert_eq(sh("TDSL_RT_LIB='%s' '%s' build '%s/examples/seed/simple.td' -o '%s' --exe 2>'%s'", path("bad.a"),
                  TDSL_BIN, TDSL_SRCDIR, out, path("err.txt")),
               1);
  char *err = read_text(path("err.txt"));
  cr_expect(strstr(err, "cannot link"), "%s", err);
  free(err);
  size_t n_so2, n_h2;
  char *so2 = read_all(path("out/simple.so"), &n_so2), *h2 = read_all(path("out/simple.h"), &n_h2);
  cr_expect(n_so2 == n_so && !memcmp(so, so2, n_so), "the earlier simple.so was changed");
  cr_expect(n_h2 == n_h && !memcmp(h, h2, n_h), "the earlier simple.h was changed");
  cr_expect_eq(sh("test \"$(ls -A '%s' | tr '\\n' ' ')\" = 'simple.h simple.so '", out), 0, "files left in %s", out);
  free(so);
  free(h);
  free(so2);
  free(h2);
  /* the executable's name is a directory: the library and header that
   * were written are taken back */
  cr_assert_eq(sh("mkdir -p '%s/simple'", path("out2")), 0);
  cr_assert_eq(sh("'%s' build '%s/examples/seed/simple.td' -o '%s' --exe 2>'%s'", TDSL_BIN, TDSL_SRCDIR,
                  path("out2"), path("err.txt")),
               1);
  err = read_text(path("err.txt"));
  cr_expect(strstr(err, "simple"), "%s", err);
  free(err);
  cr_expect_eq(sh("test \"$(ls -A '%s')\" = simple", path("out2")), 0, "files left in %s", path("out2"));
}

/* ---- the run-time size checks, the same in every mode ---- */

/* Entries whose sizes go wrong at some N (lang/checks.c): eager mode has
 * always refused them; compiled code and artifacts ran them, reading out
 * of bounds or returning -inf (issue 12, items 2 to 5). */
static const char checks_td[] =
    "fn last(x: f32[N, 8]) -> f32[] { let v = sum(x, axis = 1); v[-1] }\n"
    "fn head(w: f32[4], y: f32[N]) -> f32[N] { w[0:N] + y }\n"
    "fn mid(x: f32[N]) -> f32[N - 2] { exp(x[1:N - 1]) * 2 }\n"
    "fn top(x: f32[N, 3]) -> f32[3] { max(x, axis = 0) }\n"
    "fn amin(x: f32[N, 3]) -> i64[3] { argmin(x, axis = 0) }\n"
    "fn lse(x: f32[N, 3]) -> f32[3] { logsumexp(x, axis = 0) }\n"
    "fn row(x: f32[N, 8]) -> f32[8] { x[0] * 2 }\n";

static void write_zeros(const char *name, int rank, const int64_t *shape) {
  td_err err;
  td_tensor *t = td_tensor_zeros(TD_F32, rank, shape, &err);
  cr_assert_not_null(t, "%s", err.msg);
  cr_assert_eq(td_npy_write(path(name), t, &err), 0, "%s", err.msg);
  td_tensor_release(t);
}

/* Runs `cmd` (stderr to err.txt): it must exit 1 with want and where in
 * its message. */
static void expect_refusal(const char *mode, const char *cmd, const char *want, const char *where) {
  int rc = sh("%s 2>'%s' >/dev/null", cmd, path("err.txt"));
  char *err = read_text(path("err.txt"));
  cr_expect_eq(rc, 1, "%s: exit %d, stderr: %s", mode, rc, err);
  cr_expect(strstr(err, want) && strstr(err, where), "%s: wanted '%s' at %s, got: %s", mode, want, where, err);
  free(err);
}

Test(build, size_checks_fail_alike_eager_compiled_and_built) {
  write_file(path("checks.td"), checks_td);
  write_zeros("x08.npy", 2, (int64_t[]){0, 8});
  write_zeros("x03.npy", 2, (int64_t[]){0, 3});
  write_zeros("w4.npy", 1, (int64_t[]){4});
  write_zeros("y6.npy", 1, (int64_t[]){6});
  write_zeros("z1.npy", 1, (int64_t[]){1});
  static const struct { const char *entry, *in, *want, *where; } cases[] = {
      {"last", "x=x08.npy", "slice out of range: axis 0 of size 0, start -1, step 1, 1 elements", "checks.td:1:60"},
      {"head", "w=w4.npy y=y6.npy", "slice out of range: axis 0 of size 4, start 0, step 1, 6 elements",
       "checks.td:2:43"},
      {"mid", "x=z1.npy", "size N - 2 of axis 0 evaluates to -1", "checks.td:3:39"},
      {"top", "x=x03.npy", "op 'max' over an empty axis has no value", "checks.td:4:34"},
      {"amin", "x=x03.npy", "op 'argmin' over an empty axis has no value", "checks.td:5:35"},
      {"lse", "x=x03.npy", "op 'max' over an empty axis has no value", "checks.td:6:34"},
      {"row", "x=x08.npy", "slice out of range: axis 0 of size 0, start 0, step 1, 1 elements", "checks.td:7:34"},
  };
  int built = !SANITIZED && sh("'%s' build '%s' -o '%s' --exe", TDSL_BIN, path("checks.td"), path("out")) == 0;
  cr_expect(built || SANITIZED, "tdsl build failed");
  if (SANITIZED) fprintf(stderr, "test_build: the built artifact is not run: the artifact runtime is built with sanitizers\n");
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char in[256] = "", cmd[2048];
    char *ins = strdup(cases[i].in);
    for (char *tok = strtok(ins, " "); tok; tok = strtok(NULL, " ")) {
      char *eq = strchr(tok, '=');
      snprintf(in + strlen(in), sizeof in - strlen(in), " --in %.*s='%s'", (int)(eq - tok), tok, path(eq + 1));
    }
    free(ins);
    const char *modes[] = {"", "--compiled --no-cache"};
    for (int m = 0; m < 2; m++) {
      snprintf(cmd, sizeof cmd, "cd '%s' && '%s' run %s checks.td --entry %s%s", dir, TDSL_BIN, modes[m],
               cases[i].entry, in);
      expect_refusal(m ? "compiled" : "eager", cmd, cases[i].want, cases[i].where);
    }
    if (!built) continue;
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' --entry %s%s", dir, path("out/checks"), cases[i].entry, in);
    expect_refusal("artifact", cmd, cases[i].want, cases[i].where);
  }
}

/* A declared size that wraps int64 (65536^4 + 4 wraps to 4) is refused,
 * not matched against a 4-element input (issue 13). */
Test(build, sizes_that_overflow_are_refused_in_every_mode) {
  write_file(path("ovf.td"), "fn f(x: f32[N], y: f32[N * N * N * N + 4]) -> f32[4] { y[0:4] * 2 }\n");
  write_zeros("x.npy", 1, (int64_t[]){65536});
  write_zeros("y.npy", 1, (int64_t[]){4});
  char cmd[2048];
  const char *modes[] = {"", "--compiled --no-cache"};
  for (int m = 0; m < 2; m++) {
    snprintf(cmd, sizeof cmd, "'%s' run %s '%s' --entry f --in x='%s' --in y='%s'", TDSL_BIN, modes[m], path("ovf.td"),
             path("x.npy"), path("y.npy"));
    expect_refusal(m ? "compiled" : "eager", cmd, "does not fit in 64 bits", "argument 'y'");
  }
  if (SANITIZED) {
    fprintf(stderr, "test_build: the built artifact is not run: the artifact runtime is built with sanitizers\n");
    return;
  }
  cr_assert_eq(sh("'%s' build '%s' -o '%s' --exe", TDSL_BIN, path("ovf.td"), path("out")), 0);
  snprintf(cmd, sizeof cmd, "'%s' --in x='%s' --in y='%s'", path("out/ovf"), path("x.npy"), path("y.npy"));
  expect_refusal("artifact", cmd, "does not fit in 64 bits", "argument 'y'");
}

/* Another model's library under the same name (same prefix, same ABI):
 * a program built against one header gets NULL from create and the reason,
 * never a call that reads its arguments as the other model's (it crashed). */
Test(build, another_models_library_is_refused_by_create) {
  skip_if_sanitized();
  cr_assert_eq(sh("mkdir -p '%s/a' '%s/b'", dir, dir), 0);
  write_file(path("a/m.td"), "fn f(x: f32[N, 4]) -> f32[N, 4] { x * 2 }\n");
  write_file(path("b/m.td"), "fn f(x: f32[N, 64]) -> f32[N, 64] { x * 3 }\n");
  cr_assert_eq(sh("'%s' build '%s' -o '%s'", TDSL_BIN, path("a/m.td"), path("a")), 0);
  cr_assert_eq(sh("'%s' build '%s' -o '%s'", TDSL_BIN, path("b/m.td"), path("b")), 0);
  write_file(path("use.c"), "#include <stdio.h>\n#include \"m.h\"\n"
                            "int main(void) {\n"
                            "  m_model *m = m_create();\n"
                            "  if (!m) { printf(\"refused: %s\\n\", m_error(NULL)); return 3; }\n"
                            "  float x[4] = {1, 2, 3, 4}, y[4];\n"
                            "  int rc = m_f(m, 1, x, y);\n"
                            "  m_free(m);\n"
                            "  return rc || y[3] != 8;\n}\n");
  cr_assert_eq(sh("cc -I'%s/a' '%s' '%s/a/m.so' -Wl,-rpath,'%s/a' -o '%s'", dir, path("use.c"), dir, dir, path("use")),
               0);
  cr_expect_eq(sh("'%s' >/dev/null", path("use")), 0, "the program and its own library");
  cr_assert_eq(sh("cp '%s/b/m.so' '%s/a/m.so'", dir, dir), 0);
  cr_expect_eq(sh("'%s' >'%s'", path("use"), path("out.txt")), 3);
  char *out = read_text(path("out.txt"));
  cr_expect(strstr(out, "refused: this library holds another model"), "%s", out);
  free(out);
}

/* An entry of four outputs with a gather: its fast path, always_inline into
 * the C API wrapper, grew past GCC's inlining limit and tdsl build failed
 * ("inlining failed in call to always_inline"); found by tests/difftest. */
Test(build, entries_of_several_outputs_and_a_gather_build) {
  skip_if_sanitized();
  write_file(path("o4.td"), "fn o4(a: f32[N], b: f32[N], c: f32[N], x: f32[5], i: i64[N]) -> "
                            "(f32[N], f32[N], f32[N], f32[N]) { (a + 1, b * 2, c - 3, take(x, i)) }\n");
  cr_assert_eq(sh("'%s' build '%s' -o '%s' --exe 2>'%s'", TDSL_BIN, path("o4.td"), path("out"), path("err.txt")), 0,
               "%s", read_text(path("err.txt")));
  write_zeros("a.npy", 1, (int64_t[]){3});
  write_zeros("x.npy", 1, (int64_t[]){5});
  int64_t three = 3;
  td_err err;
  td_tensor *i = td_tensor_zeros(TD_I64, 1, &three, &err);
  ((int64_t *)i->data)[2] = 4;
  cr_assert_eq(td_npy_write(path("i.npy"), i, &err), 0);
  td_tensor_release(i);
  cr_assert_eq(sh("cd '%s' && out/o4 --in a=a.npy --in b=a.npy --in c=a.npy --in x=x.npy --in i=i.npy "
                  "--out y0.npy --out y1.npy --out y2.npy --out y3.npy", dir),
               0);
  td_tensor *y0 = read_npy("y0.npy"), *y2 = read_npy("y2.npy");
  cr_expect_eq(((float *)y0->data)[0], 1.0f, "y0 %s %g", td_dtype_name(y0->dtype), (double)((float *)y0->data)[0]);
  cr_expect_eq(((float *)y2->data)[1], -3.0f);
  td_tensor_release(y0);
  td_tensor_release(y2);
}

/* Two models of one file whose parameters have the same names (each its
 * own l0): the artifact keeps them apart, and names them after their
 * model.  They once shared one buffer, so B.forward read A's 2x3 weight
 * as its own 5x3 one, past its end. */
Test(build, two_models_with_the_same_parameter_names) {
  skip_if_sanitized();
  FILE *f = fopen(path("two.td"), "w");
  cr_assert_not_null(f);
  fputs("import nn\n"
        "model A {\n  l0 = nn.Linear(3, 2, true)\n  fn forward(x: f32[N, 3]) { l0(x) }\n}\n"
        "model B {\n  l0 = nn.Linear(3, 5, false)\n  fn forward(x: f32[N, 3]) { tanh(l0(x)) }\n}\n",
        f);
  fclose(f);
  cr_assert_eq(sh("'%s' build '%s' -o '%s' --exe --name two", TDSL_BIN, path("two.td"), dir), 0);
  write_x("x.npy", 4, 3);
  static const char *entries[] = {"A.forward", "B.forward"};
  for (int e = 0; e < 2; e++) {
    cr_assert_eq(sh("'%s' --entry %s --in x='%s' --out '%s'", path("two"), entries[e], path("x.npy"), path("a.npy")), 0);
    cr_assert_eq(sh("'%s' run '%s' --entry %s --in x='%s' --out '%s'", TDSL_BIN, path("two.td"), entries[e],
                    path("x.npy"), path("r.npy")),
                 0);
    td_tensor *a = read_npy("a.npy"), *r = read_npy("r.npy");
    cr_assert_eq(a->numel, r->numel);
    for (int64_t i = 0; i < a->numel; i++)
      expect_close(((float *)a->data)[i], ((float *)r->data)[i], 1e-5, entries[e]);
    td_tensor_release(a);
    td_tensor_release(r);
  }
  cr_expect_eq(sh("grep -q 'A.l0.weight' '%s/two.so' && grep -q 'B.l0.weight' '%s/two.so'", dir, dir), 0,
               "the parameters are named after their models");
}

/* The CPU paths on four threads at once: the program tests/tsan/cpu_stress.c
 * (which .ci/run runs under ThreadSanitizer), built here without
 * sanitizers against libtdsl.a and an artifact of tests/tsan/cpu_stress.td,
 * three iterations.  Each thread loads the program, runs every entry
 * eagerly, compiles it (the compile cache shared by the threads, which
 * race to store and to hit the same entries, and in memory) and runs it
 * at several sizes, and calls its own model of the artifact (load_weights,
 * free and create again); every output and print must equal eager's, and
 * some compilation must be a cache hit. */
Test(build, cpu_paths_on_four_threads) {
  skip_if_sanitized();
  build("tests/tsan/cpu_stress.td", "--name cstress");
  build_stress("cpu_stress", dir, "cstress", path("stress"), path("cc.err"));
  int rc = sh("'%s' 3 '%s' >'%s' 2>&1", path("stress"), path("work"), path("stress.txt"));
  char *out = read_text(path("stress.txt"));
  cr_expect_eq(rc, 0, "%s", out);
  cr_expect(strstr(out, "cpu_stress: 4 threads x 3 iterations: 60 compilations ("), "%s", out);
  cr_expect(strstr(out, " artifact calls: ok in "), "%s", out);
  cr_log_info("%s", out);
  free(out);
}

/* ---- where the initial parameters come from (create, or --embed-weights) ---- */

/* Are two files the same bytes? */
static int same_file(const char *a, const char *b) { return sh("cmp -s '%s' '%s'", a, b) == 0; }

static long file_size(const char *p) {
  struct stat st;
  return stat(p, &st) ? -1 : (long)st.st_size;
}

/* Builds FILE twice with --seed 5 --exe (into dir/lazy without, dir/emb
 * with --embed-weights) and runs ENTRY of each on input IN=in_npy: the
 * outputs are the same bits as each other's and as the lazy artifact's
 * with the weights `tdsl run --seed 5 --save-weights` wrote, and match
 * `tdsl run --entry` (its kernels are the interpreter's: close). */
static void check_lazy_and_embedded(const char *file, const char *prefix, const char *entry, const char *in) {
  char src[1100];
  if (file[0] == '/') snprintf(src, sizeof src, "%s", file);
  else snprintf(src, sizeof src, "%s/%s", TDSL_SRCDIR, file);
  char lazy[1100], emb[1100];
  snprintf(lazy, sizeof lazy, "%s/lazy", dir);
  snprintf(emb, sizeof emb, "%s/emb", dir);
  cr_assert_eq(sh("'%s' build '%s' -o '%s' --seed 5 --exe", TDSL_BIN, src, lazy), 0);
  cr_assert_eq(sh("'%s' build '%s' -o '%s' --seed 5 --exe --embed-weights", TDSL_BIN, src, emb), 0);
  cr_assert_eq(sh("'%s' run '%s' --entry %s --in %s='%s' --seed 5 --out '%s' --save-weights '%s'", TDSL_BIN, src, entry, in, path("in.npy"), path("ref.npy"), path("w.safetensors")),
               0);
  const char *how[3] = {"", "--weights", "--embedded"};
  for (int k = 0; k < 3; k++) {
    cr_assert_eq(sh("'%s/%s' --entry %s --in %s='%s' --out '%s' %s%s", k == 2 ? emb : lazy, prefix, entry, in,
                    path("in.npy"), path(k == 0 ? "y0.npy" : k == 1 ? "y1.npy" : "y2.npy"), k == 1 ? "--weights " : "",
                    k == 1 ? path("w.safetensors") : ""),
                 0, "%s %s", file, how[k]);
  }
  cr_expect(same_file(path("y0.npy"), path("y1.npy")), "%s: the parameters create made are not tdsl run's", file);
  cr_expect(same_file(path("y0.npy"), path("y2.npy")), "%s: the embedded parameters are not create's", file);
  td_tensor *y = read_npy("y0.npy"), *ref = read_npy("ref.npy");
  cr_assert_eq(y->numel, ref->numel);
  for (int64_t i = 0; i < y->numel; i++) expect_close(((float *)y->data)[i], ((float *)ref->data)[i], 1e-5, file);
  td_tensor_release(y);
  td_tensor_release(ref);
}

/* Linear's uniform weights (and a seed that is not the default). */
Test(build, created_parameters_are_tdsl_runs_and_the_embedded_ones) {
  skip_if_sanitized();
  write_x("in.npy", 3, 4);
  check_lazy_and_embedded("examples/seed/simple.td", "simple", "Simple.forward", "x");
}

/* Embedding's normal weights, LayerNorm's ones and zeros, two blocks'
 * parameters of one name in different paths. */
Test(build, created_transformer_parameters_are_tdsl_runs) {
  skip_if_sanitized();
  write_file(path("lm.td"), "import nn\n"
                            "model LM(vocab: int = 100, d: int = 32) {\n"
                            "  emb = nn.Embedding(vocab, d)\n"
                            "  blocks = [nn.TransformerBlock(d, 4, 64) for i in 0..2]\n"
                            "  ln = nn.LayerNorm(d)\n"
                            "  head = nn.Linear(d, vocab, false)\n"
                            "  fn forward(tokens: i64[B, T]) -> f32[B, T, vocab] {\n"
                            "    let h = emb(tokens)\n"
                            "    for i in 0..2 { h = blocks[i](h) }\n"
                            "    head(ln(h))\n"
                            "  }\n"
                            "}\n");
  write_tokens("in.npy", 2, 5, 17);
  check_lazy_and_embedded(path("lm.td"), "lm", "LM.forward", "tokens");
}

/* The 784-512-512-10 MLP (2.7 MB of weights): without them the library is
 * small; with --embed-weights it holds them and computes the same. */
Test(build, mlp_library_without_weights_is_small) {
  skip_if_sanitized();
  write_x("in.npy", 2, 784);
  check_lazy_and_embedded("examples/mlp.td", "mlp", "MLP.forward", "x");
  char p[1200];
  snprintf(p, sizeof p, "%s/lazy/mlp.so", dir);
  long lazy = file_size(p);
  snprintf(p, sizeof p, "%s/emb/mlp.so", dir);
  long emb = file_size(p);
  cr_expect(lazy > 0 && lazy < 2 * 1024 * 1024, "mlp.so without weights is %ld bytes", lazy);
  cr_expect(emb > lazy + 2660000, "mlp.so with --embed-weights is %ld bytes, without %ld", emb, lazy);
  /* the blob's staging files are not published */
  cr_expect_eq(sh("ls -A '%s/emb' | grep -q data", dir), 1, "the data blob's files were left in DIR");
}

Test(build, embed_weights_option_errors) {
  cr_expect_eq(sh("'%s' build '%s/examples/seed/simple.td' -o '%s' --embed-weights=yes 2> '%s'", TDSL_BIN,
                  TDSL_SRCDIR, dir, path("err.txt")),
               2);
  char *err = read_text(path("err.txt"));
  cr_expect(strstr(err, "--embed-weights takes no value, got '--embed-weights=yes'") != NULL, "%s", err);
  cr_expect(strstr(err, "usage: tdsl build") != NULL, "%s", err);
  free(err);
  cr_expect_eq(access(path("simple.so"), F_OK), -1, "a refused command line wrote a library");
}

/* test_half.c - the f16 and bf16 dtypes: conversions, I/O, eager and
 * compiled casts.
 *
 * The reference for every conversion is written here independently of
 * runtime/half.h: a half value is decoded from its fields with ldexp, and
 * a real number is rounded by scaling it to the half type's quantum at its
 * magnitude and rounding that in float64 to the nearest integer, ties to
 * even (exact: the scalings are powers of two).  Checked:
 *   - every f16 and every bf16 bit pattern widens to its exact value and
 *     rounds back to itself (NaN stays NaN);
 *   - f32 -> half on a sweep over all f32 bit patterns plus every midpoint
 *     between neighbouring half values and its f32 neighbours (the ties),
 *     subnormals, overflow and NaN; f64 -> half (one rounding, not two);
 *   - known bit patterns (numpy.float16(...).view('u2') for f16);
 *   - the interpreter's and the compiled code's CAST kernels on the same
 *     inputs against the same reference, and the compiled f32 <-> f16/bf16
 *     loops are vectorised (objdump finds the CPU's widest registers);
 *   - .npy '<f2' bytes and round trip, a bf16 .npy being an error with a
 *     hint, and safetensors F16/BF16 bytes and round trip.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/compiled.h"
#include "compiler/passes.h"
#include "lang/elab.h"
#include "runtime/half.h"
#include "interp/interp.h"
#include "runtime/io.h"
#include "runtime/mem.h"

#ifndef TDSL_SRCDIR
#define TDSL_SRCDIR "."
#endif
#ifndef TDSL_BUILDDIR
#define TDSL_BUILDDIR "."
#endif

/* ---- the reference ---- */

static double ref_f16_value(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

static double ref_bf16_value(uint16_t h) {
  int e = (h >> 7) & 255, m = h & 127;
  double v = e == 0 ? ldexp(m, -133) : e == 255 ? (m ? NAN : INFINITY) : ldexp(128 + m, e - 134);
  return (h & 0x8000) ? -v : v;
}

/* x rounded to a binary format with `bits` significant bits, smallest
 * normal 2^emin and overflow threshold 2^emax (values rounding to 2^emax
 * or beyond are infinite); ties to even. */
static double ref_round(double x, int bits, int emin, int emax) {
  if (isnan(x) || isinf(x)) return x;
  double a = fabs(x);
  int e;
  frexp(a, &e); /* a in [2^(e-1), 2^e) */
  double q = a < ldexp(1, emin) ? ldexp(1, emin - bits + 1) : ldexp(1, e - bits);
  double n = a / q, fl = floor(n), r = n - fl;
  if (r > 0.5 || (r == 0.5 && fmod(fl, 2.0) == 1.0)) fl += 1.0;
  double v = fl * q;
  if (v >= ldexp(1, emax)) v = INFINITY;
  return copysign(v, x);
}

static double ref_to_f16(double x) { return ref_round(x, 11, -14, 16); }
static double ref_to_bf16(double x) { return ref_round(x, 8, -126, 128); }

/* Same value (NaN matches NaN; zeros must agree in sign). */
static int same(double a, double b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  return a == b && signbit(a) == signbit(b);
}

static float f32_of(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* The f32 test inputs: a sweep over all bit patterns, every midpoint of
 * neighbouring finite f16 and bf16 values with its two f32 neighbours, and
 * special values.  Returns a malloc'd array; *n its length. */
static float *f32_inputs(int64_t *n) {
  int64_t cap = 70000 + 6 * 65536 + 16, k = 0;
  float *v = malloc((size_t)cap * sizeof *v);
  cr_assert_not_null(v);
  for (uint64_t u = 0; u < 0x100000000ull; u += 65521) v[k++] = f32_of((uint32_t)u);
  for (uint32_t h = 0; h < 0x7c00; h++) { /* positive finite f16 and the next value */
    double mid = (ref_f16_value((uint16_t)h) + ref_f16_value((uint16_t)(h + 1))) / 2;
    float m = (float)mid; /* exact: 12 significant bits */
    v[k++] = m;
    v[k++] = nextafterf(m, 0.0f);
    v[k++] = -nextafterf(m, INFINITY);
  }
  for (uint32_t h = 0; h < 0x7f80; h++) {
    double mid = (ref_bf16_value((uint16_t)h) + ref_bf16_value((uint16_t)(h + 1))) / 2;
    float m = (float)mid;
    v[k++] = -m;
    v[k++] = nextafterf(m, 0.0f);
    v[k++] = nextafterf(m, INFINITY);
  }
  static const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 65504.0f, 65519.0f,
                                  65520.0f, 3.4028235e38f, 1.4e-45f, 5.9604645e-08f, 0.1f};
  for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) v[k++] = special[i];
  cr_assert_leq(k, cap);
  *n = k;
  return v;
}

/* ---- conversions ---- */

Test(half, every_f16_widens_exactly_and_rounds_back) {
  for (uint32_t h = 0; h < 65536; h++) {
    float f = td_f16_to_f32((uint16_t)h);
    double want = ref_f16_value((uint16_t)h);
    cr_assert(same(f, want), "f16 0x%04x: %.9g, want %.9g", h, f, want);
    uint16_t back = td_f32_to_f16(f);
    if (isnan(want)) cr_assert(isnan(ref_f16_value(back)), "NaN 0x%04x came back as 0x%04x", h, back);
    else cr_assert_eq(back, h, "f16 0x%04x came back as 0x%04x", h, back);
  }
}

Test(half, every_bf16_widens_exactly_and_rounds_back) {
  for (uint32_t h = 0; h < 65536; h++) {
    float f = td_bf16_to_f32((uint16_t)h);
    double want = ref_bf16_value((uint16_t)h);
    cr_assert(same(f, want), "bf16 0x%04x: %.9g, want %.9g", h, f, want);
    uint16_t back = td_f32_to_bf16(f);
    if (isnan(want)) cr_assert(isnan(ref_bf16_value(back)), "NaN 0x%04x came back as 0x%04x", h, back);
    else cr_assert_eq(back, h, "bf16 0x%04x came back as 0x%04x", h, back);
  }
}

Test(half, f32_rounds_to_nearest_even) {
  int64_t n;
  float *v = f32_inputs(&n);
  for (int64_t i = 0; i < n; i++) {
    double x = v[i];
    double h = ref_f16_value(td_f32_to_f16(v[i])), b = ref_bf16_value(td_f32_to_bf16(v[i]));
    cr_assert(same(h, ref_to_f16(x)), "f16(%a) = %a, want %a", x, h, ref_to_f16(x));
    cr_assert(same(b, ref_to_bf16(x)), "bf16(%a) = %a, want %a", x, b, ref_to_bf16(x));
  }
  free(v);
}

Test(half, f64_rounds_once) {
  /* just above / below a tie in f64: rounding through f32 first would
   * land on the tie and go to even, the wrong way */
  for (uint32_t h = 0x0400; h < 0x7bff; h += 7) {
    double mid = (ref_f16_value((uint16_t)h) + ref_f16_value((uint16_t)(h + 1))) / 2;
    for (int s = -1; s <= 1; s++) {
      double x = mid + s * ldexp(mid, -40);
      cr_assert(same(ref_f16_value(td_f64_to_f16(x)), ref_to_f16(x)), "f16(%a)", x);
    }
  }
  for (uint32_t h = 0x0080; h < 0x7f7f; h += 13) {
    double mid = (ref_bf16_value((uint16_t)h) + ref_bf16_value((uint16_t)(h + 1))) / 2;
    for (int s = -1; s <= 1; s++) {
      double x = -(mid + s * ldexp(mid, -40));
      cr_assert(same(ref_bf16_value(td_f64_to_bf16(x)), ref_to_bf16(x)), "bf16(%a)", x);
    }
  }
  cr_assert_eq(td_f64_to_bf16(1.0 + 0x1p-8 + 0x1p-30), 0x3f81);
  cr_assert_eq(td_f64_to_f16(1.0 + 0x1p-11 + 0x1p-40), 0x3c01);
  cr_assert_eq(td_f64_to_f16(1e300), 0x7c00);
  cr_assert_eq(td_f64_to_bf16(-1e300), 0xff80);
  cr_assert_eq(td_f64_to_f16(1e-300), 0x0000);
  cr_assert(isnan(ref_bf16_value(td_f64_to_bf16(NAN))));
}

Test(half, known_bit_patterns) {
  /* numpy: np.array([1, -2.5, 0.1, 65504, inf, -0.0, 2**-24, 1/3], '<f2').view('u2') */
  static const double xs[] = {1.0, -2.5, 0.1, 65504.0, INFINITY, -0.0, 0x1p-24, 1.0 / 3};
  static const uint16_t f16[] = {15360, 49408, 11878, 31743, 31744, 32768, 1, 13653};
  for (int i = 0; i < 8; i++) cr_expect_eq(td_f32_to_f16((float)xs[i]), f16[i], "f16(%g)", xs[i]);
  cr_expect_eq(td_f32_to_f16(65519.0f), 0x7bff);
  cr_expect_eq(td_f32_to_f16(65520.0f), 0x7c00);  /* rounds up to 2^16: inf */
  cr_expect_eq(td_f32_to_f16(0x1p-25f), 0x0000);   /* tie: to even (0) */
  cr_expect_eq(td_f32_to_f16(0x3p-25f), 0x0002);   /* tie: to even (2) */
  cr_expect_eq(td_f32_to_f16(-NAN) & 0x7fff, 0x7e00);
  /* bf16: the top 16 bits of the f32, rounded */
  cr_expect_eq(td_f32_to_bf16(1.0f), 0x3f80);
  cr_expect_eq(td_f32_to_bf16(-2.5f), 0xc020);
  cr_expect_eq(td_f32_to_bf16(0.1f), 0x3dcd);         /* 0x3dcccccd: above the tie */
  cr_expect_eq(td_f32_to_bf16(f32_of(0x3f808000)), 0x3f80); /* tie, to even */
  cr_expect_eq(td_f32_to_bf16(f32_of(0x3f818000)), 0x3f82); /* tie, to even */
  cr_expect_eq(td_f32_to_bf16(f32_of(0x7f7f8000)), 0x7f80); /* tie at the top: inf */
  cr_expect_eq(td_f32_to_bf16(f32_of(0x7f7f7fff)), 0x7f7f);
  cr_expect_eq(td_f32_to_bf16(f32_of(0x00008000)), 0x0000); /* subnormal tie */
  cr_expect_eq(td_f32_to_bf16(f32_of(0x7f800001)), 0x7fc0); /* signalling NaN: quiet */
  cr_expect_eq(td_f32_to_bf16(f32_of(0xffffffff)), 0xffff); /* NaN payload kept, quiet */
  cr_expect_eq(td_f32_to_bf16(-INFINITY), 0xff80);
}

/* ---- eager and compiled CAST kernels ---- */

typedef struct prog {
  td_arena *a;
  td_diags d;
  td_program *p;
} prog;

static const char cast_src[] =
    "fn to_f16(x: f32[N]) { f16(x) }\n"
    "fn to_bf16(x: f32[N]) { bf16(x) }\n"
    "fn d_to_f16(x: f64[N]) { f16(x) }\n"
    "fn d_to_bf16(x: f64[N]) { bf16(x) }\n"
    "fn from_f16(h: f16[N]) { f32(h) }\n"
    "fn from_bf16(h: bf16[N]) { f64(h) }\n"
    "fn i_to_bf16(x: i64[N]) { bf16(x) }\n"
    "fn f16_to_bf16(h: f16[N]) { bf16(h) }\n"
    "fn rt_bf16(x: f32[N]) { f32(bf16(x)) }\n"
    "fn rt_f16_bf16(h: f16[N]) { f32(bf16(h)) }\n";

/* Runs entry `fn` of cast_src on one input, eagerly (compiled = 0) or
 * compiled; returns the output. */
static td_tensor *run_cast(const char *fn, td_tensor *in, int compiled) {
  prog P;
  P.a = td_arena_new();
  td_diags_init(&P.d, P.a);
  P.p = td_program_new(P.a, &P.d);
  cr_assert_eq(td_program_load_text(P.p, "casts.td", cast_src), 0);
  td_graph *g = td_program_lower(P.p, fn);
  cr_assert_not_null(g, "%s", fn);
  td_err e;
  td_tensor **out = NULL;
  if (!compiled) {
    cr_assert_eq(td_interp_run(g, &in, NULL, NULL, &out, &e, NULL), 0, "%s: %s", fn, e.msg);
  } else {
    td_graph *o;
    cr_assert_eq(td_optimize(g, NULL, &o, NULL, &e), 0, "%s: %s", fn, e.msg);
    for (int i = 0; i < o->n_nodes; i++) /* the legalize pass left no half arithmetic */
      cr_assert(!td_dtype_is_half(o->nodes[i].dtype) || o->nodes[i].op == TD_IR_CAST ||
                o->nodes[i].op == TD_IR_INPUT, "%s: node %d", fn, i);
    td_plan *plan = td_plan_build(o, &e);
    cr_assert_not_null(plan, "%s: %s", fn, e.msg);
    td_compiled *c = td_compile(plan, NULL, &e);
    cr_assert_not_null(c, "%s: %s", fn, e.msg);
    cr_assert_eq(td_compiled_run(c, &in, NULL, 0, &out, &e, NULL), 0, "%s: %s", fn, e.msg);
    td_compiled_free(c);
  }
  td_tensor *r = out[0];
  td_free(out);
  td_arena_free(P.a);
  return r;
}

static td_tensor *vec(td_dtype dt, int64_t n) {
  td_err e;
  td_tensor *t = td_tensor_new(dt, 1, &n, &e);
  cr_assert_not_null(t, "%s", e.msg);
  return t;
}

static void check_casts(int compiled) {
  const char *how = compiled ? "compiled" : "eager";
  int64_t n;
  float *v = f32_inputs(&n);
  td_tensor *x = vec(TD_F32, n), *d = vec(TD_F64, n);
  memcpy(x->data, v, (size_t)n * sizeof *v);
  for (int64_t i = 0; i < n; i++) /* f64 inputs between f32 values */
    ((double *)d->data)[i] = (double)v[i] * (1.0 + 0x1p-35);
  td_tensor *h = run_cast("to_f16", x, compiled), *b = run_cast("to_bf16", x, compiled);
  td_tensor *dh = run_cast("d_to_f16", d, compiled), *db = run_cast("d_to_bf16", d, compiled);
  cr_assert_eq(h->dtype, TD_F16);
  cr_assert_eq(b->dtype, TD_BF16);
  for (int64_t i = 0; i < n; i++) {
    double xi = v[i], di = ((double *)d->data)[i];
    double gh = ref_f16_value(((uint16_t *)h->data)[i]), gb = ref_bf16_value(((uint16_t *)b->data)[i]);
    cr_assert(same(gh, ref_to_f16(xi)), "%s f16(%a) = %a", how, xi, gh);
    cr_assert(same(gb, ref_to_bf16(xi)), "%s bf16(%a) = %a", how, xi, gb);
    gh = ref_f16_value(((uint16_t *)dh->data)[i]);
    gb = ref_bf16_value(((uint16_t *)db->data)[i]);
    cr_assert(same(gh, ref_to_f16(di)), "%s f16(f64 %a) = %a", how, di, gh);
    cr_assert(same(gb, ref_to_bf16(di)), "%s bf16(f64 %a) = %a", how, di, gb);
  }
  td_tensor *all16 = vec(TD_F16, 65536), *allb = vec(TD_BF16, 65536);
  for (int64_t i = 0; i < 65536; i++) ((uint16_t *)all16->data)[i] = ((uint16_t *)allb->data)[i] = (uint16_t)i;
  td_tensor *w = run_cast("from_f16", all16, compiled), *wb = run_cast("from_bf16", allb, compiled);
  td_tensor *hb = run_cast("f16_to_bf16", all16, compiled);
  for (int64_t i = 0; i < 65536; i++) {
    cr_assert(same(((float *)w->data)[i], ref_f16_value((uint16_t)i)), "%s f32(f16 0x%04llx)", how, (long long)i);
    cr_assert(same(((double *)wb->data)[i], ref_bf16_value((uint16_t)i)), "%s f64(bf16 0x%04llx)", how, (long long)i);
    cr_assert(same(ref_bf16_value(((uint16_t *)hb->data)[i]), ref_to_bf16(ref_f16_value((uint16_t)i))),
              "%s bf16(f16 0x%04llx)", how, (long long)i);
  }
  td_tensor *ints = vec(TD_I64, 4);
  int64_t iv[4] = {257, 259, -16777217, INT64_MAX};
  memcpy(ints->data, iv, sizeof iv);
  td_tensor *ib = run_cast("i_to_bf16", ints, compiled);
  for (int k = 0; k < 4; k++)
    cr_assert(same(ref_bf16_value(((uint16_t *)ib->data)[k]), ref_to_bf16((double)iv[k])), "%s bf16(%lld)", how,
              (long long)iv[k]);
  td_tensor *all[] = {x, d, h, b, dh, db, all16, allb, w, wb, hb, ints, ib};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) td_tensor_release(all[k]);
  free(v);
}

Test(half, eager_casts_match_the_reference, .timeout = 120) { check_casts(0); }
Test(half, compiled_casts_match_the_reference, .timeout = 300) { check_casts(1); }

/* The legalize pass drops a round trip through a half type only where it
 * is exact. */
static int count_half_casts(const char *src, const char *fn) {
  prog P;
  P.a = td_arena_new();
  td_diags_init(&P.d, P.a);
  P.p = td_program_new(P.a, &P.d);
  cr_assert_eq(td_program_load_text(P.p, "l.td", src), 0);
  td_graph *g = td_program_lower(P.p, fn), *o;
  cr_assert_not_null(g);
  td_err e;
  cr_assert_eq(td_optimize(g, NULL, &o, NULL, &e), 0, "%s", e.msg);
  int n = 0;
  for (int i = 0; i < o->n_nodes; i++) {
    const td_node *nd = &o->nodes[i];
    cr_assert(!td_dtype_is_half(nd->dtype) || nd->op == TD_IR_CAST || nd->op == TD_IR_INPUT, "node %d", i);
    n += nd->op == TD_IR_CAST && td_dtype_is_half(nd->dtype);
  }
  td_arena_free(P.a);
  return n;
}

Test(half, legalize_folds_only_exact_round_trips) {
  /* f32 -> bf16 -> f32 loses bits: the rounding stays */
  cr_assert_eq(count_half_casts("fn f(x: f32[N]) { f32(bf16(x)) }\n", "f"), 1);
  /* movement of bf16 values, then matmul: the moved values are widened
   * bf16 values, so the bf16 rounding between them is dropped; only the
   * result's rounding remains */
  cr_assert_eq(count_half_casts("fn g(b: bf16[N, 4]) { transpose(b) @ b }\n", "g"), 1);
  cr_assert_eq(count_half_casts("fn h(b: bf16[N, 4]) { bf16(f32(b)) * 2.0 }\n", "h"), 1);
  /* arithmetic between two ops rounds: (b * 2) rounded, then + 1 rounded */
  cr_assert_eq(count_half_casts("fn k(b: bf16[N]) { b * 3.0 + 1.0 }\n", "k"), 2);
}

/* The compiled conversion loops between f32 and f16/bf16 use the widest
 * vector registers the CPU has (they are integer code and selects only). */
Test(half, compiled_conversions_are_vectorised, .timeout = 120) {
  unsetenv("TDSL_DEBUG");   /* checked accesses (TDSL_DEBUG=bounds) are not vectorised */
  if (system("command -v objdump >/dev/null 2>&1") != 0)
    cr_skip_test("objdump (binutils) is not installed, so the generated code cannot be inspected");
  int avx512 = system("grep -q avx512f /proc/cpuinfo") == 0, avx2 = system("grep -q avx2 /proc/cpuinfo") == 0;
  const char *reg = avx512 ? "zmm" : avx2 ? "ymm" : "xmm";
  char dir[] = "/tmp/tdsl_halfvec_XXXXXX", cmd[1536];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(cmd, sizeof cmd, "%s/casts.td", dir);
  FILE *f = fopen(cmd, "w");
  cr_assert_not_null(f);
  fputs(cast_src, f);
  fclose(f);
  td_err e;
  td_tensor *x = vec(TD_F32, 1000), *h = vec(TD_F16, 1000);
  for (int i = 0; i < 1000; i++) {
    td_tensor_set(x, i, i * 0.37 - 100);
    td_tensor_set(h, i, i * 0.37 - 100);
  }
  snprintf(cmd, sizeof cmd, "%s/x.npy", dir);
  cr_assert_eq(td_npy_write(cmd, x, &e), 0, "%s", e.msg);
  snprintf(cmd, sizeof cmd, "%s/h.npy", dir);
  cr_assert_eq(td_npy_write(cmd, h, &e), 0, "%s", e.msg);
  static const char *const entries[] = {"to_f16", "rt_bf16", "from_f16", "rt_f16_bf16"};
  for (int i = 0; i < 4; i++) {
    /* a fresh cache directory per entry: its object holds just that kernel */
    snprintf(cmd, sizeof cmd,
             "cd %s && rm -rf c && TDSL_CACHE_DIR=%s/c %s/tdsl run casts.td --compiled --entry %s "
             "--in %s --out o.npy",
             dir, dir, TDSL_BUILDDIR, entries[i], i < 2 ? "x=x.npy" : "h=h.npy");
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    snprintf(cmd, sizeof cmd, "objdump -d %s/c/*.so | grep -q '%%%s'", dir, reg);
    cr_expect_eq(system(cmd), 0, "%s: no %s instruction in the generated code", entries[i], reg);
  }
  td_tensor_release(x);
  td_tensor_release(h);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  cr_assert_eq(system(cmd), 0);
}

/* ---- files ---- */

static char tmpdir[64];

static const char *tmp(const char *name) {
  static char buf[4][128];
  static int k;
  k = (k + 1) % 4;
  if (!tmpdir[0]) {
    strcpy(tmpdir, "/tmp/tdsl_half_XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
  }
  snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
  return buf[k];
}

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s", path);
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc(*n + 1);
  cr_assert_eq(fread(b, 1, *n, f), *n);
  fclose(f);
  return b;
}

static void cleanup(void) {
  static const char *files[] = {"a.npy", "b.npy", "h.safetensors"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) unlink(tmp(files[i]));
  rmdir(tmpdir);
}

static const double sample[] = {1.0, -2.5, 0.1, 65504.0}; /* 0.1 rounds differently in each */

Test(half_io, npy_f16_bytes_and_round_trip, .fini = cleanup) {
  td_err e;
  td_tensor *t = vec(TD_F16, 4), *back = NULL;
  for (int i = 0; i < 4; i++) td_tensor_set(t, i, sample[i]);
  cr_assert_eq(td_npy_write(tmp("a.npy"), t, &e), 0, "%s", e.msg);
  /* np.save of np.array([1, -2.5, 0.1, 65504], '<f2'): the header, then
   * 3c00 c100 2e66 7bff little-endian */
  static const char hdr[] = "\x93NUMPY\x01\x00\x76\x00{'descr': '<f2', 'fortran_order': False, 'shape': (4,), }";
  static const unsigned char data[] = {0x00, 0x3c, 0x00, 0xc1, 0x66, 0x2e, 0xff, 0x7b};
  size_t n;
  unsigned char *got = slurp(tmp("a.npy"), &n);
  cr_assert_eq(n, 128 + 8);
  cr_assert_eq(memcmp(got, hdr, sizeof hdr - 1), 0);
  cr_assert_eq(got[127], '\n');
  cr_assert_eq(memcmp(got + 128, data, 8), 0);
  free(got);
  cr_assert_eq(td_npy_read(tmp("a.npy"), &back, &e), 0, "%s", e.msg);
  cr_assert_eq(back->dtype, TD_F16);
  cr_assert_eq(memcmp(back->data, t->data, 8), 0);
  cr_assert_eq(td_tensor_get(back, 2), 0.0999755859375); /* f16(0.1), by hand: 1638 / 2^14 */
  td_tensor_release(back);
  td_tensor_release(t);
}

Test(half_io, npy_bf16_is_an_error_with_a_hint, .fini = cleanup) {
  td_err e;
  td_tensor *t = vec(TD_BF16, 4);
  for (int i = 0; i < 4; i++) td_tensor_set(t, i, sample[i]);
  cr_assert_eq(td_npy_write(tmp("b.npy"), t, &e), -1);
  cr_assert(strstr(e.msg, "bf16"), "%s", e.msg);
  cr_assert(strstr(e.msg, "safetensors") && strstr(e.msg, "f32(x)"), "%s", e.msg);
  cr_assert_eq(access(tmp("b.npy"), F_OK), -1, "no file written");
  td_tensor_release(t);
}

Test(half_io, safetensors_f16_bf16_bytes_and_round_trip, .fini = cleanup) {
  td_err e;
  td_tensor_map m, back;
  td_tensor_map_init(&m);
  td_tensor_map_init(&back);
  td_tensor *h = vec(TD_F16, 4), *b = vec(TD_BF16, 4);
  for (int i = 0; i < 4; i++) {
    td_tensor_set(h, i, sample[i]);
    td_tensor_set(b, i, sample[i]);
  }
  cr_assert_eq(td_tensor_map_put(&m, "w.h", h, &e), 0);
  cr_assert_eq(td_tensor_map_put(&m, "w.b", b, &e), 0);
  cr_assert_eq(td_safetensors_write(tmp("h.safetensors"), &m, &e), 0, "%s", e.msg);
  size_t n;
  unsigned char *got = slurp(tmp("h.safetensors"), &n);
  static const char json[] =
      "{\"w.b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,8]},"
      "\"w.h\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[8,16]}}";
  uint64_t hl = 0;
  for (int i = 0; i < 8; i++) hl |= (uint64_t)got[i] << (8 * i);
  cr_assert_geq(hl, sizeof json - 1);
  cr_assert_eq(memcmp(got + 8, json, sizeof json - 1), 0, "%.*s", (int)hl, got + 8);
  /* bf16 by hand: 1 = 3f80, -2.5 = c020, 0.1 (3dcccccd) = 3dcd, 65504 (477fe000) = 4780;
   * f16 as numpy: 3c00 c100 2e66 7bff; all little-endian */
  static const unsigned char data[] = {0x80, 0x3f, 0x20, 0xc0, 0xcd, 0x3d, 0x80, 0x47,
                                       0x00, 0x3c, 0x00, 0xc1, 0x66, 0x2e, 0xff, 0x7b};
  cr_assert_eq(n, 8 + hl + 16);
  cr_assert_eq(memcmp(got + 8 + hl, data, 16), 0);
  free(got);
  cr_assert_eq(td_safetensors_read(tmp("h.safetensors"), &back, &e), 0, "%s", e.msg);
  td_tensor *bh = td_tensor_map_get(&back, "w.h"), *bb = td_tensor_map_get(&back, "w.b");
  cr_assert(bh && bb);
  cr_assert_eq(bh->dtype, TD_F16);
  cr_assert_eq(bb->dtype, TD_BF16);
  cr_assert_eq(memcmp(bh->data, h->data, 8), 0);
  cr_assert_eq(memcmp(bb->data, b->data, 8), 0);
  cr_assert_eq(td_tensor_get(bb, 2), 0.10009765625); /* 0x3dcd: 205/2^11 */
  td_tensor_map_free(&m);
  td_tensor_map_free(&back);
  td_tensor_release(h);
  td_tensor_release(b);
}

Test(half_io, printing_shows_the_rounded_values) {
  td_tensor *b = vec(TD_BF16, 3), *h = vec(TD_F16, 3);
  static const double xs[] = {0.1, 1.0 / 3, 257.0};
  for (int i = 0; i < 3; i++) {
    td_tensor_set(b, i, xs[i]);
    td_tensor_set(h, i, xs[i]);
  }
  char *sb = td_tensor_format(b, 1000), *sh = td_tensor_format(h, 1000);
  /* bf16: 0.10009765625, 0.333984375, 256; f16: 0.0999755859375, 0.333251953125, 257 */
  cr_expect_str_eq(sb, "[1.0010e-01, 3.3398e-01, 2.5600e+02]");
  cr_expect_str_eq(sh, "[9.9976e-02, 3.3325e-01, 2.5700e+02]");
  td_free(sb);
  td_free(sh);
  td_tensor_release(b);
  td_tensor_release(h);
}

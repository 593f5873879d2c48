/* conv.c - the interpreter's convolution (CONV; lang/ir.h's td_conv_attr
 * has the semantics, lang/conv.c the contract).
 *
 * Direct, by output rows: every convolution is seen as one with three
 * spatial axes (missing ones of size 1).  For each output plane (n, o),
 * each input channel of its group and each kernel element, the valid
 * output rows are known from two small tables (the input row each
 * (output row, kernel row) pair reads, or none), and the innermost axis
 * is one AXPY over a range of output columns computed once per kernel
 * column: out[ow] += w * x[ow * stride + kw * dil - pad], contiguous and
 * vectorised for stride 1, with no bounds test inside.  An input dilated
 * along the innermost axis (ldil > 1: the transposed convolutions of
 * gradients) takes a table of input columns instead.  The output plane
 * stays in cache across the whole kernel sweep for the image sizes of
 * the models this is meant to debug (a 56x56 f32 plane is 12 KiB).
 * Large convolutions split their output planes over the thread pool.
 */
#include "interp/kernels.h"

#include <string.h>

#include "runtime/mem.h"
#include "runtime/pool.h"

/* From this many multiply-adds a convolution runs its output planes on the
 * thread pool (TDSL_NUM_THREADS), as interp/matmul.c does its products;
 * each plane is one task, computed as alone, so the bits do not depend on
 * the thread count. */
#define CONV_PAR_WORK (1 << 21)

TDK_VECTORIZE

typedef struct cgeom {
  int64_t N, C, O, Cg, Og;
  int64_t in[3], k[3], out[3];
  int64_t s[3], d[3], ld[3], p[3];
} cgeom;

/* The input index output index o and kernel index k read along axis a,
 * or -1 (padding, or between the elements of a dilated input). */
static int64_t src_index(const cgeom *G, int a, int64_t o, int64_t k) {
  int64_t q = o * G->s[a] + k * G->d[a] - G->p[a];
  if (q < 0 || q % G->ld[a]) return -1;
  q /= G->ld[a];
  return q < G->in[a] ? q : -1;
}

/* tab[o * k + kk] = src_index(a, o, kk). */
static void fill_table(const cgeom *G, int a, int64_t *tab) {
  for (int64_t o = 0; o < G->out[a]; o++)
    for (int64_t kk = 0; kk < G->k[a]; kk++) tab[o * G->k[a] + kk] = src_index(G, a, o, kk);
}

/* [lo, hi): the output columns whose input column for kernel column kk is
 * inside the input (no input dilation along the axis). */
static void col_range(const cgeom *G, int64_t kk, int64_t *lo, int64_t *hi) {
  int64_t off = kk * G->d[2] - G->p[2], s = G->s[2];
  /* ow * s + off >= 0  and  ow * s + off <= in - 1 */
  int64_t l = off >= 0 ? 0 : (-off + s - 1) / s;
  int64_t top = G->in[2] - 1 - off;
  int64_t h = top < 0 ? 0 : top / s + 1;
  *lo = l;
  *hi = h < G->out[2] ? h : G->out[2];
  if (*hi < *lo) *hi = *lo;
}

/* One call: the geometry, the tensors' data and the tables. */
typedef struct cjob {
  const cgeom *G;
  const void *x, *w;
  void *y;
  const int64_t *td, *th, *tw, *rlo, *rhi;
} cjob;

/* Output plane `plane_id` (= n * O + o) of the job, for its dtype. */
#define DEFINE_CONV(T, SUF)                                                                          \
  static void conv_##SUF(void *ctx, int64_t plane_id, int tid) {                                     \
    (void)tid;                                                                                       \
    const cjob *J = ctx;                                                                             \
    const cgeom *G = J->G;                                                                           \
    const T *x = J->x, *w = J->w;                                                                    \
    const int64_t *td = J->td, *th = J->th, *tw = J->tw, *rlo = J->rlo, *rhi = J->rhi;               \
    int64_t ID = G->in[0], IH = G->in[1], IW = G->in[2];                                             \
    int64_t KD = G->k[0], KH = G->k[1], KW = G->k[2];                                                \
    int64_t OD = G->out[0], OH = G->out[1], OW = G->out[2];                                          \
    int64_t plane = OD * OH * OW, iplane = ID * IH * IW, kvol = KD * KH * KW;                        \
    int64_t s = G->s[2], dw = G->d[2], pw = G->p[2];                                                 \
    int64_t n = plane_id / G->O, o = plane_id % G->O;                                                \
      {                                                                                              \
        T *yp = (T *)J->y + plane_id * plane;                                                        \
        memset(yp, 0, (size_t)plane * sizeof(T));                                                   \
        int64_t grp = o / G->Og;                                                                     \
        for (int64_t cl = 0; cl < G->Cg; cl++) {                                                     \
          const T *xp = x + (n * G->C + grp * G->Cg + cl) * iplane;                                  \
          const T *wk = w + (o * G->Cg + cl) * kvol;                                                 \
          for (int64_t kd = 0; kd < KD; kd++)                                                        \
            for (int64_t kh = 0; kh < KH; kh++)                                                      \
              for (int64_t od = 0; od < OD; od++) {                                                  \
                int64_t id = td[od * KD + kd];                                                       \
                if (id < 0) continue;                                                                \
                for (int64_t oh = 0; oh < OH; oh++) {                                                \
                  int64_t ih = th[oh * KH + kh];                                                     \
                  if (ih < 0) continue;                                                              \
                  const T *xr = xp + (id * IH + ih) * IW;                                            \
                  T *yr = yp + (od * OH + oh) * OW;                                                  \
                  const T *wr = wk + (kd * KH + kh) * KW;                                            \
                  for (int64_t kw = 0; kw < KW; kw++) {                                              \
                    T wv = wr[kw];                                                                   \
                    if (tw) {                                                                        \
                      const int64_t *tc = tw + kw * OW;                                              \
                      for (int64_t ow = 0; ow < OW; ow++)                                            \
                        if (tc[ow] >= 0) yr[ow] += wv * xr[tc[ow]];                                  \
                    } else {                                                                         \
                      int64_t off = kw * dw - pw;                                                    \
                      if (s == 1)                                                                    \
                        for (int64_t ow = rlo[kw]; ow < rhi[kw]; ow++) yr[ow] += wv * xr[ow + off];  \
                      else                                                                           \
                        for (int64_t ow = rlo[kw]; ow < rhi[kw]; ow++) yr[ow] += wv * xr[ow * s + off]; \
                    }                                                                                \
                  }                                                                                  \
                }                                                                                    \
              }                                                                                      \
        }                                                                                            \
      }                                                                                              \
  }
DEFINE_CONV(float, f32)
DEFINE_CONV(double, f64)

/* The geometry of the node's tensors, as three spatial axes. */
static int geometry(const td_conv_attr *a, const td_tensor *x, const td_tensor *w, const td_tensor *y, cgeom *G,
                    td_err *err) {
  int S = a->spatial;
  if (S < 1 || S > 3 || x->rank != S + 2 || w->rank != S + 2 || y->rank != S + 2 || a->groups < 1)
    return td_err_set(err, "conv: bad ranks or attributes");
  G->N = x->shape[0];
  G->C = x->shape[1];
  G->O = w->shape[0];
  G->Cg = w->shape[1];
  if (y->shape[0] != G->N || y->shape[1] != G->O || G->C != G->Cg * a->groups || G->O % a->groups)
    return td_err_set(err, "conv: the shapes of the input, weight and output do not agree");
  G->Og = G->O / a->groups;
  for (int i = 0; i < 3; i++) {
    int j = i - (3 - S);   /* the node's spatial axis, or < 0 for a size-1 one */
    G->in[i] = j < 0 ? 1 : x->shape[2 + j];
    G->k[i] = j < 0 ? 1 : w->shape[2 + j];
    G->out[i] = j < 0 ? 1 : y->shape[2 + j];
    G->s[i] = j < 0 ? 1 : a->stride[j];
    G->d[i] = j < 0 ? 1 : a->dil[j];
    G->ld[i] = j < 0 ? 1 : a->ldil[j];
    G->p[i] = j < 0 ? 0 : a->pad[j];
    if (G->s[i] < 1 || G->d[i] < 1 || G->ld[i] < 1) return td_err_set(err, "conv: bad attributes");
  }
  return 0;
}

int tdk_conv(const td_conv_attr *a, const td_tensor *x, const td_tensor *w, td_tensor *y, td_err *err) {
  cgeom G;
  if (geometry(a, x, w, y, &G, err)) return -1;
  if (x->dtype != y->dtype || w->dtype != y->dtype || (y->dtype != TD_F32 && y->dtype != TD_F64))
    return td_err_set(err, "conv: computes on f32 or f64, found %s", td_dtype_name(y->dtype));
  if (y->numel == 0) return 0;
  int cols = G.ld[2] != 1;
  size_t n_tab = (size_t)(G.out[0] * G.k[0] + G.out[1] * G.k[1] + (cols ? G.out[2] * G.k[2] : 0) + 2 * G.k[2]);
  int64_t *tab = td_malloc(n_tab * sizeof *tab);
  if (!tab) return td_err_set(err, "out of memory");
  int64_t *td = tab, *th = td + G.out[0] * G.k[0], *rlo = th + G.out[1] * G.k[1], *rhi = rlo + G.k[2];
  int64_t *tw = cols ? rhi + G.k[2] : NULL;
  fill_table(&G, 0, td);
  fill_table(&G, 1, th);
  if (tw)   /* column-major by kernel column: tw[kw * OW + ow] */
    for (int64_t kk = 0; kk < G.k[2]; kk++)
      for (int64_t o = 0; o < G.out[2]; o++) tw[kk * G.out[2] + o] = src_index(&G, 2, o, kk);
  else
    for (int64_t kk = 0; kk < G.k[2]; kk++) col_range(&G, kk, &rlo[kk], &rhi[kk]);
  cjob J = {&G, x->data, w->data, y->data, td, th, tw, rlo, rhi};
  td_task_fn fn = y->dtype == TD_F32 ? conv_f32 : conv_f64;
  int64_t planes = G.N * G.O;
  /* multiply-adds, as the matmul kernel counts them before it uses the pool */
  double work = (double)planes * (double)(G.out[0] * G.out[1] * G.out[2]) * (double)G.Cg *
                (double)(G.k[0] * G.k[1] * G.k[2]);
  if (work >= CONV_PAR_WORK && planes > 1) td_pool_run(fn, &J, planes);
  else
    for (int64_t i = 0; i < planes; i++) fn(&J, i, 0);
  td_free(tab);
  return 0;
}

/* matmul_kernel.h - one blocked, packed GEMM, included once per type and ISA.
 *
 * matmul.c includes this file for f32 and f64, each three times (generic,
 * AVX2+FMA, AVX-512), after defining:
 *   GEMM_T    the element type (float or double)
 *   GEMM_SFX  name suffix of the generated functions
 *   GEMM_MR   rows of the register block
 *   GEMM_NR   columns of the register block (a multiple of GEMM_VL)
 *   GEMM_VL   elements per vector register
 * and, around the include, `#pragma GCC target(...)` for the ISA.
 *
 * Structure (Goto/BLIS): for each NC-wide column block of B and KC-deep
 * slice of K, B is packed into NR-wide panels (k-major, zero padded); for
 * each MC-tall block of A, A is packed into MR-tall panels (k-major); then
 * the micro-kernel computes an MR x NR block of C += Ap * Bp with the
 * accumulators in vector registers (GCC vector extensions; the loops over
 * the block are fully unrolled so the accumulators stay in registers).
 * C must hold the running sum (the caller zeroes it first).
 */

#define GEMM_CAT2_(a, b) a##b
#define GEMM_CAT_(a, b) GEMM_CAT2_(a, b)
#define GEMM_NAME_(n) GEMM_CAT_(n, GEMM_SFX)
#define GEMM_V_ GEMM_NAME_(gemm_vf_)
#define GEMM_VU_ GEMM_NAME_(gemm_vfu_)
#define GEMM_NV_ (GEMM_NR / GEMM_VL)

typedef GEMM_T GEMM_V_ __attribute__((vector_size(GEMM_VL * sizeof(GEMM_T))));
typedef GEMM_T GEMM_VU_
    __attribute__((vector_size(GEMM_VL * sizeof(GEMM_T)), aligned(sizeof(GEMM_T))));

/* C[mr x nr] (row stride ldc) += Ap (kc x MR) * Bp (kc x NR). */
static void GEMM_NAME_(gemm_ukernel_)(int64_t kc, const GEMM_T *restrict ap,
                                      const GEMM_T *restrict bp, GEMM_T *restrict c,
                                      int64_t ldc, int64_t mr, int64_t nr) {
  GEMM_V_ acc[GEMM_MR][GEMM_NV_];
#pragma GCC unroll 16
  for (int i = 0; i < GEMM_MR; i++)
#pragma GCC unroll 8
    for (int v = 0; v < GEMM_NV_; v++) acc[i][v] = (GEMM_V_){0};
  for (int64_t k = 0; k < kc; k++) {
    GEMM_V_ b[GEMM_NV_];
#pragma GCC unroll 8
    for (int v = 0; v < GEMM_NV_; v++) b[v] = *(const GEMM_V_ *)(bp + v * GEMM_VL);
#pragma GCC unroll 16
    for (int i = 0; i < GEMM_MR; i++) {
      GEMM_T a = ap[i];
#pragma GCC unroll 8
      for (int v = 0; v < GEMM_NV_; v++) acc[i][v] += a * b[v];
    }
    ap += GEMM_MR;
    bp += GEMM_NR;
  }
  if (mr == GEMM_MR && nr == GEMM_NR) {
#pragma GCC unroll 16
    for (int i = 0; i < GEMM_MR; i++)
#pragma GCC unroll 8
      for (int v = 0; v < GEMM_NV_; v++) *(GEMM_VU_ *)(c + i * ldc + v * GEMM_VL) += acc[i][v];
  } else {
    GEMM_T tmp[GEMM_MR][GEMM_NR];
    memcpy(tmp, acc, sizeof tmp);
    for (int64_t i = 0; i < mr; i++)
      for (int64_t j = 0; j < nr; j++) c[i * ldc + j] += tmp[i][j];
  }
}

/* Packs B[0:kc, 0:nc] (row stride ldb) into NR-wide k-major panels. */
static void GEMM_NAME_(gemm_pack_b_)(int64_t kc, int64_t nc, const GEMM_T *b, int64_t ldb,
                                     GEMM_T *restrict dst) {
  for (int64_t jr = 0; jr < nc; jr += GEMM_NR, dst += kc * GEMM_NR) {
    int64_t nr = nc - jr < GEMM_NR ? nc - jr : GEMM_NR;
    for (int64_t k = 0; k < kc; k++) {
      const GEMM_T *src = b + k * ldb + jr;
      GEMM_T *d = dst + k * GEMM_NR;
      int64_t j = 0;
      for (; j < nr; j++) d[j] = src[j];
      for (; j < GEMM_NR; j++) d[j] = 0;
    }
  }
}

/* Packs A[0:mc, 0:kc] (row stride lda) into MR-tall k-major panels. */
static void GEMM_NAME_(gemm_pack_a_)(int64_t mc, int64_t kc, const GEMM_T *a, int64_t lda,
                                     GEMM_T *restrict dst) {
  for (int64_t ir = 0; ir < mc; ir += GEMM_MR, dst += kc * GEMM_MR) {
    int64_t mr = mc - ir < GEMM_MR ? mc - ir : GEMM_MR;
    for (int64_t i = 0; i < GEMM_MR; i++) {
      const GEMM_T *src = a + (ir + i) * lda;
      if (i < mr) {
        for (int64_t k = 0; k < kc; k++) dst[k * GEMM_MR + i] = src[k];
      } else {
        for (int64_t k = 0; k < kc; k++) dst[k * GEMM_MR + i] = 0;
      }
    }
  }
}

/* C[M x N] += A[M x K] * B[K x N]; abuf/bbuf: 64-byte aligned workspaces of
 * elements sized by matmul.c. */
static void GEMM_NAME_(gemm_)(int64_t m, int64_t n, int64_t k, const GEMM_T *a, int64_t lda,
                              const GEMM_T *b, int64_t ldb, GEMM_T *c, int64_t ldc,
                              GEMM_T *abuf, GEMM_T *bbuf) {
  for (int64_t jc = 0; jc < n; jc += GEMM_NC) {
    int64_t nc = n - jc < GEMM_NC ? n - jc : GEMM_NC;
    for (int64_t pc = 0; pc < k; pc += GEMM_KC) {
      int64_t kc = k - pc < GEMM_KC ? k - pc : GEMM_KC;
      GEMM_NAME_(gemm_pack_b_)(kc, nc, b + pc * ldb + jc, ldb, bbuf);
      for (int64_t ic = 0; ic < m; ic += GEMM_MC) {
        int64_t mc = m - ic < GEMM_MC ? m - ic : GEMM_MC;
        GEMM_NAME_(gemm_pack_a_)(mc, kc, a + ic * lda + pc, lda, abuf);
        for (int64_t jr = 0; jr < nc; jr += GEMM_NR) {
          int64_t nr = nc - jr < GEMM_NR ? nc - jr : GEMM_NR;
          for (int64_t ir = 0; ir < mc; ir += GEMM_MR) {
            int64_t mr = mc - ir < GEMM_MR ? mc - ir : GEMM_MR;
            GEMM_NAME_(gemm_ukernel_)(kc, abuf + ir * kc, bbuf + jr * kc,
                                      c + (ic + ir) * ldc + jc + jr, ldc, mr, nr);
          }
        }
      }
    }
  }
}

#undef GEMM_CAT2_
#undef GEMM_CAT_
#undef GEMM_NAME_
#undef GEMM_V_
#undef GEMM_VU_
#undef GEMM_NV_

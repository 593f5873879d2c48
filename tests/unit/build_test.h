/* build_test.h - helpers of the `tdsl build` tests (test_build.c for CPU
 * artifacts, test_gpu_build.c for CUDA artifacts): where the source tree
 * and the tdsl binary are, whether this is a sanitizer build (an
 * instrumented artifact runtime cannot be loaded into an uninstrumented
 * program), running shell commands, reading a file whole, building a
 * stress program of tests/tsan/ against an artifact.
 */
#ifndef TD_BUILD_TEST_H
#define TD_BUILD_TEST_H

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#ifndef TDSL_SRCDIR
#define TDSL_SRCDIR "."
#endif
#ifndef TDSL_BIN
#define TDSL_BIN "tdsl"
#endif

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

/* Runs a shell command; returns its exit status (-1: it did not exit). */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...) {
  char cmd[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* The whole file (NUL-terminated, malloc'd); its length in *n when n. */
static char *read_all(const char *p, size_t *n) {
  FILE *f = fopen(p, "rb");
  cr_assert_not_null(f, "cannot open %s", p);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)len + 1);
  cr_assert_not_null(s);
  cr_assert_eq(fread(s, 1, (size_t)len, f), (size_t)len);
  s[len] = 0;
  fclose(f);
  if (n) *n = (size_t)len;
  return s;
}

/* Writes text to the file p. */
static void write_file(const char *p, const char *text) {
  FILE *f = fopen(p, "w");
  cr_assert_not_null(f, "cannot write %s", p);
  fputs(text, f);
  fclose(f);
}

#ifdef TD_GCCJIT_LIBS
/* Builds the stress program tests/tsan/SRC.c without sanitizers, against
 * libtdsl.a and the artifact art_dir/PREFIX.so (its header PREFIX.h),
 * into out; the compiler's messages go to the file err, shown when it
 * fails. */
static void build_stress(const char *src, const char *art_dir, const char *prefix, const char *out, const char *err) {
  const char *S = TDSL_SRCDIR, *B = TDSL_BUILDDIR;
  cr_assert_eq(sh("cc -std=c11 -D_GNU_SOURCE -O1 -I'%s' -I'%s' -DTDSL_SRCDIR='\"%s\"' '-DTD_ARTIFACT=\"%s.h\"' "
                  "-I'%s' '%s/tests/tsan/%s.c' '%s/%s.so' -Wl,-rpath,'%s' '%s/libtdsl.a' %s -ldl -lm -lpthread "
                  "-o '%s' 2>'%s'",
                  B, S, S, prefix, art_dir, S, src, art_dir, prefix, art_dir, B, TD_GCCJIT_LIBS, out, err),
               0, "%s", read_all(err, NULL));
}
#endif

/* A model whose entry prints and returns an input, a computed value, a
 * parameter and the same value twice. */
static const char id_td[] =
    "model Id {\n  w = ones([3])\n"
    "  fn forward(x: f32[N, 3]) -> (f32[N, 3], f32[N, 3], f32[3], f32[N, 3]) {\n"
    "    let y = x * 2\n    print(\"y is\", y, \"and w\", w)\n    (x, y, w, y)\n  }\n}\n";

#endif

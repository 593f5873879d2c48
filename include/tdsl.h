/* tdsl.h - the public C API for embedding the tdsl front end.
 *
 * This header is installed; everything else in the source tree is
 * internal.  It exposes what a tool or an editor integration needs today:
 * checking a program and listing its entry points, with diagnostics
 * rendered exactly as `tdsl check` prints them.  The API of compiled
 * artifacts (one function per entry point) is declared in the header that
 * `tdsl build` writes next to each artifact.
 *
 * Threads: every call has its own state, so these functions may be called
 * from several threads at once (docs/architecture.md, "Threads").
 */
#ifndef TDSL_H
#define TDSL_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TDSL_API __attribute__((visibility("default")))
#else
#define TDSL_API
#endif

#define TDSL_VERSION_STRING "0.1.0"
#define TDSL_ABI_VERSION 1

/* The library's version ("0.1.0"). */
TDSL_API const char *tdsl_version(void);

/* Type- and shape-checks every entry point of the .td file at `path`
 * (imports are searched next to it, then in each directory of the
 * colon-separated `search_path`, which may be NULL).  Returns the number of
 * errors (0 = the program is valid), or -1 when memory ran out.  When
 * `report` is not NULL it receives a malloc'd string with the rendered
 * diagnostics (possibly empty), which the caller frees. */
TDSL_API int tdsl_check_file(const char *path, const char *search_path, char **report);

/* Lists the entry points of a valid program as one malloc'd string, names
 * separated by '\n' ("main\nSimple.forward\n"), or NULL on error (with the
 * diagnostics in *report as above). */
TDSL_API char *tdsl_entries(const char *path, const char *search_path, char **report);

#ifdef __cplusplus
}
#endif
#endif

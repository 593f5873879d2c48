/* search.h - where the tdsl commands look for imported modules. */
#ifndef TD_CLI_SEARCH_H
#define TD_CLI_SEARCH_H

/* Calls add(ud, dir) for each import directory after the importing file's
 * own: every entry of $TDSL_PATH (colon-separated), then the installed
 * stdlib, then the source tree's stdlib (for an uninstalled build). */
void cli_search_dirs(void (*add)(void *ud, const char *dir), void *ud);

#endif

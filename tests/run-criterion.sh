#!/bin/sh
# run-criterion.sh - log compiler for the Criterion test binaries.
#
# Automake's TAP driver runs `run-criterion.sh TEST`.  Criterion writes its
# TAP stream (one line per test, parsed by the driver) to stdout, and its
# usual report, ending in "Synthesis: Tested: N | Passing: ...", to stderr,
# which the driver copies into TEST.log.  A test that runs longer than
# TDSL_TEST_TIMEOUT seconds (default 600) counts as a crash.
test=$1
shift
exec "$test" --tap=/dev/stdout --timeout "${TDSL_TEST_TIMEOUT:-600}" "$@"

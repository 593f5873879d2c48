#!/bin/sh
# run-criterion.sh - log compiler for the Criterion test binaries.
#
# Automake's TAP driver runs `run-criterion.sh TEST`.  Criterion writes its
# TAP stream (one line per test, parsed by the driver) to stdout, and its
# usual report, ending in "Synthesis: Tested: N | Passing: ...", to stderr,
# which the driver copies into TEST.log.  A test that runs longer than
# TDSL_TEST_TIMEOUT seconds (default 600) counts as a crash; Criterion's
# --timeout overrides a test's own .timeout, so the NVRTC and emulation
# tests, which compile every program of examples/ and tests/lang/ for CUDA
# (each a few minutes, more under the sanitizers), get three times that.
test=$1
shift
limit=${TDSL_TEST_TIMEOUT:-600}
case $test in
  *test_gpu_nvrtc) limit=$((limit * 3)) ;;
esac
exec "$test" --tap=/dev/stdout --timeout "$limit" "$@"

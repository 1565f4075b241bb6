#!/usr/bin/env bash
# Runs one libFuzzer target for the fuzz_<target> ctests and keeps what it prints short enough to
# survive a truncated CI log: libFuzzer's thousands of NEW/REDUCE progress lines go to a log file,
# and only the rest (start-up, the error report, the final stats) is printed. When the run fails,
# the inputs it wrote to the artifact folder are printed too, base64-encoded when small, so that a
# failure seen only in CI can be replayed (`base64 -d > x; <target>_fuzz x`) and kept under
# tests/fuzz/regressions/<target>/.
#   tests/fuzz/run_fuzzer.sh FUZZER LOG ARTIFACT_PREFIX [libFuzzer arguments...]
set -uo pipefail
fuzzer="$1"
log="$2"
prefix="$3"
shift 3

stamp="$(mktemp)"
trap 'rm -f "$stamp"' EXIT
"$fuzzer" -artifact_prefix="$prefix" "$@" >"$log" 2>&1
rc=$?

# Progress lines start with "#<runs>" and function discoveries with a tab and NEW_FUNC.
grep -v -E '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse|RELOAD)|^[[:space:]]+NEW_FUNC|# Uses: ' "$log"
if ((rc != 0)); then
  echo "run_fuzzer: $(basename "$fuzzer") exited with $rc; its whole output is in $log"
  for artifact in "$prefix"*; do
    [[ -f "$artifact" && "$artifact" -nt "$stamp" ]] || continue
    size=$(stat -c %s "$artifact")
    echo "run_fuzzer: input $artifact ($size bytes)"
    if ((size <= 16384)); then
      echo "--- base64 ---"
      base64 -w 100 "$artifact"
      echo "--- end ---"
    fi
  done
fi
exit "$rc"

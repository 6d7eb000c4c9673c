# Sourced by the build and test scripts: `stage NAME COMMAND...` runs COMMAND and, when
# IB_STAGE_FILE is set (.ci/run sets it), appends "NAME<TAB>seconds<TAB>exit status" to that file,
# so that CI can print where its time went (scripts/ci-summary.py). Returns COMMAND's status.
stage() {
  local name="$1"
  shift
  local t0 t1 rc=0
  t0=$(date +%s.%N)
  "$@" || rc=$?
  t1=$(date +%s.%N)
  if [ -n "${IB_STAGE_FILE:-}" ]; then
    awk -v n="$name" -v a="$t0" -v b="$t1" -v rc="$rc" \
      'BEGIN { printf "%s\t%.1f\t%d\n", n, b - a, rc }' >>"$IB_STAGE_FILE"
  fi
  return "$rc"
}

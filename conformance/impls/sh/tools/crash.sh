#!/bin/sh
# tools/crash.sh INTERPOSER.so [SCENARIO...] - crash fsjob-sh at every
# mutating filesystem call and check what recovery leaves.
#
# A development aid: INTERPOSER.so is conformance/crash/interpose.c (branch
# `crash`) compiled with `cc -shared -fPIC -o interpose.so interpose.c -ldl`.
# For each scenario it counts the calls of one run, then for every k reruns
# it on a fresh queue, killed instead of performing call k, runs `consume`
# (or `recover` then `consume`) without the interposer, and checks:
#   I1  every job directory in jobs/ has a valid spec
#   I3  every published job ends with exactly one receipt
#   I2  max_attempts 1: the command ran at most once
#   and no command of the scenario is left running.
# Scenarios: produce consume cancel retry (default: all).

LC_ALL=C
export LC_ALL
SO=$1
shift
[ -f "$SO" ] || { echo "usage: $0 INTERPOSER.so [SCENARIO...]" >&2; exit 2; }
case $SO in /*) ;; *) SO=$(pwd -P)/$SO ;; esac
HERE=$(cd -P -- "$(dirname -- "$0")/.." && pwd -P) || exit 1
FSJOB=$HERE/fsjob-sh
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fsjob-sh-crash.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
[ $# -gt 0 ] || set -- produce consume cancel retry
FAIL=0

# under K ROOT CMD...: run CMD in its own process group under the interposer,
# interrupted at call K (0: count only). Prints the number of counted calls.
under() {
  _k=$1 _root=$2
  shift 2
  head -c 16 /dev/zero > "$WORK/counter"
  : > "$WORK/log"
  FSJOB_CRASH_ROOT=$_root FSJOB_CRASH_COUNTER=$WORK/counter FSJOB_CRASH_LOG=$WORK/log \
    FSJOB_CRASH_KILL_AT=$_k SO=$SO \
    timeout 0 sh -c 'FSJOB_CRASH_PGID=$PPID LD_PRELOAD=$SO; export FSJOB_CRASH_PGID LD_PRELOAD; exec "$@"' sh "$@" \
    > "$WORK/out" 2> "$WORK/err" < /dev/null
  _calls=0
  while IFS= read -r _l; do _calls=$((_calls + 1)); done < "$WORK/log"
  echo "$_calls"
}

# prepare SCENARIO QUEUE: the state before the run under test.
prepare() {
  rm -rf "$2" "$WORK/runs"
  : > "$WORK/runs"
  "$FSJOB" init "$2" || exit 1
  printf '{"argv":["sh","-c","echo run >> %s; echo out; echo err >&2"],"cwd":"/tmp"}\n' "$WORK/runs" > "$WORK/req.json"
  printf '{"argv":["sh","-c","echo run >> %s; exit 3"],"cwd":"/tmp","max_attempts":2}\n' "$WORK/runs" > "$WORK/retry.json"
  case $1 in
    produce) ;;
    consume|cancel) JOB=$("$FSJOB" produce "$2" "$WORK/req.json") ;;
    retry) JOB=$("$FSJOB" produce "$2" "$WORK/retry.json") ;;
  esac
}

# run SCENARIO QUEUE K
run() {
  case $1 in
    produce) under "$3" "$2" "$FSJOB" produce "$2" "$WORK/req.json" ;;
    consume|retry) under "$3" "$2" "$FSJOB" consume "$2" ;;
    cancel) under "$3" "$2" "$FSJOB" cancel "$2" "$JOB" ;;
  esac
}

# verify SCENARIO QUEUE K: recover, then check the invariants.
verify() {
  _q=$2 _vk=$3
  "$FSJOB" recover "$_q" 2> "$WORK/recover.err" || { echo "  k=$_vk: recover failed"; return 1; }
  "$FSJOB" consume "$_q" 2> "$WORK/consume.err" || { echo "  k=$_vk: consume failed"; return 1; }
  _bad=0
  for _d in "$_q"/jobs/*; do
    [ -d "$_d" ] || continue
    _id=${_d##*/}
    "$FSJOB" _check-record spec "$_d/spec.json" "jobs/$_id/spec.json" > /dev/null || { echo "  k=$_vk: I1 $_id has no valid spec"; _bad=1; }
    set -- "$_d"/receipt*
    [ $# = 1 ] && [ -f "$_d/receipt.json" ] || { echo "  k=$_vk: I3 $_id has no single receipt"; _bad=1; }
  done
  _runs=0
  while IFS= read -r _l; do _runs=$((_runs + 1)); done < "$WORK/runs"
  case $SCEN in
    consume|produce|cancel) [ "$_runs" -le 1 ] || { echo "  k=$_vk: I2 ran $_runs times"; _bad=1; } ;;
    retry) [ "$_runs" -le 2 ] || { echo "  k=$_vk: I2 ran $_runs times with max_attempts 2"; _bad=1; } ;;
  esac
  # READY-3: an entry whose job was never published stays until it is an
  # hour old; any other entry left over is an error.
  for _e in "$_q"/ready/*; do
    [ -e "$_e" ] || continue
    _id=${_e##*/}
    _id=${_id#????-}
    [ -d "$_q/jobs/$_id" ] || continue
    echo "  k=$_vk: ready entry left: ${_e##*/}"
    _bad=1
  done
  return $_bad
}

for SCEN do
  Q=$WORK/q
  prepare "$SCEN" "$Q"
  N=$(run "$SCEN" "$Q" 0)
  printf '%s: %s counted calls\n' "$SCEN" "$N"
  k=1
  while [ "$k" -le "$N" ]; do
    prepare "$SCEN" "$Q"
    run "$SCEN" "$Q" "$k" > /dev/null
    if ! verify "$SCEN" "$Q" "$k"; then
      FAIL=$((FAIL + 1))
      sed -n "${k}p" "$WORK/log" | cut -c1-200
    fi
    k=$((k + 1))
  done
done
echo "$FAIL failures"
[ "$FAIL" = 0 ]

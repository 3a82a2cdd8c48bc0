#!/bin/sh
# selftest.sh - end-to-end checks of fsjob-sh on temporary queues.
#
# Prints one line per check ("ok - ..." or "not ok - ...") and exits non-zero
# if any check failed. POSIX sh and coreutils only, like fsjob-sh itself.
# Runs in well under two minutes.

LC_ALL=C
export LC_ALL
umask 077

HERE=$(cd -P -- "$(dirname -- "$0")" && pwd -P) || exit 1
FSJOB=$HERE/fsjob-sh
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fsjob-sh-selftest.XXXXXX") || exit 1
FAILED=0
CHECKS=0
START=$(date +%s)

cleanup() {
  # Stop anything a failed check left behind, by the pids we recorded.
  for _f in "$WORK"/*.pid; do
    [ -f "$_f" ] || continue
    IFS= read -r _p < "$_f" || continue
    case $_p in ''|*[!0-9]*) continue ;; esac
    kill -s KILL "$_p" 2>/dev/null
  done
  rm -rf -- "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

check() { # NAME, then a command whose status decides
  _name=$1
  shift
  CHECKS=$((CHECKS + 1))
  if "$@"; then
    printf 'ok - %s\n' "$_name"
  else
    printf 'not ok - %s\n' "$_name"
    FAILED=$((FAILED + 1))
  fi
}

# has FILE TEXT: FILE exists and contains TEXT.
has() {
  [ -f "$1" ] || return 1
  _c=$(cat -- "$1") || return 1
  case $_c in *"$2"*) return 0 ;; esac
  return 1
}

# request NAME JSON: write a request file (compact form, one line).
request() {
  printf '%s\n' "$2" > "$WORK/$1.json"
}

# produce QUEUE NAME: enqueue request NAME; prints the id.
produce() {
  "$FSJOB" produce "$1" "$WORK/$2.json"
}

# receipt QUEUE ID: the path of the job's receipt.
receipt() {
  printf '%s\n' "$1/jobs/$2/receipt.json"
}

# outcome QUEUE ID OUTCOME EXIT_CODE
outcome() {
  has "$1/jobs/$2/receipt.json" "\"outcome\":\"$3\",\"exit_code\":$4,"
}

# count_receipts QUEUE ID: exactly one receipt.json, and no other receipt name.
one_receipt() {
  [ -f "$1/jobs/$2/receipt.json" ] || return 1
  set -- "$1/jobs/$2"/receipt*
  [ $# = 1 ]
}

# gone PID: the process has exited (it may linger as a zombie whose parent
# never reaps it).
gone() {
  [ -e "/proc/$1/stat" ] || return 0
  IFS= read -r _l < "/proc/$1/stat" 2>/dev/null || return 0
  _r=${_l##*) }
  case $_r in Z*|X*) return 0 ;; esac
  return 1
}

# wait_file PATH SECONDS: wait until PATH exists.
wait_file() {
  _i=0
  while [ ! -s "$1" ]; do
    _i=$((_i + 1))
    [ "$_i" -le $(($2 * 10)) ] || return 1
    sleep 0.1
  done
}

new_queue() {
  "$FSJOB" init "$WORK/$1" || { echo "not ok - init $1"; exit 1; }
  printf '%s\n' "$WORK/$1"
}

# plant_job QUEUE SPEC_TEXT_WITHOUT_ID_PLACEHOLDER: publish a job whose spec
# is written by hand (to test what a consumer does with a bad spec).
plant_job() {
  _ns=$(date +%s%N)
  _id=$_ns-00000000deadbeef
  mkdir -m 700 "$1/tmp/$_id"
  printf '%s\n' "$2" | while IFS= read -r _line; do
    printf '%s\n' "${_line%%@ID@*}$_id${_line#*@ID@}"
  done > "$1/tmp/$_id/spec.json"
  : > "$1/ready/1000-$_id"
  mv -T "$1/tmp/$_id" "$1/jobs/$_id"
  printf '%s\n' "$_id"
}

# --- 1. outcomes and exit codes --------------------------------------------------
Q=$(new_queue outcomes)
request ok '{"argv":["sh","-c","echo hello; echo oops >&2"],"cwd":"/tmp"}'
request fail '{"argv":["sh","-c","exit 3"],"cwd":"/tmp"}'
request slow '{"argv":["sleep","30"],"cwd":"/tmp","timeout_ms":1000,"kill_grace_ms":500}'
request later '{"argv":["true"],"cwd":"/tmp"}'
OK=$(produce "$Q" ok)
FAIL=$(produce "$Q" fail)
SLOW=$(produce "$Q" slow)
LATER=$(produce "$Q" later)
BAD=$(plant_job "$Q" '{"fsjob":"1.0","type":"spec","id":"@ID@","argv":["true"],"bogus":1}')
V2=$(plant_job "$Q" '{"fsjob":"2.0","type":"spec","id":"@ID@"}')
"$FSJOB" cancel "$Q" "$LATER"
check "cancel of a queued job finishes it at once (CANCEL-2): cancelled, 130" outcome "$Q" "$LATER" cancelled 130
"$FSJOB" consume "$Q"
check "consume exits 0 when the queue is drained" [ $? = 0 ]
check "exit 0: succeeded, 0" outcome "$Q" "$OK" succeeded 0
check "exit 0: stdout kept and described" has "$(receipt "$Q" "$OK")" '"stdout":{"gen":1,"bytes_total":6,"bytes_kept":6,"truncated":false,'
check "exit 0: stdout.1 holds the bytes" has "$Q/jobs/$OK/stdout.1" hello
check "exit 3: failed, 3" outcome "$Q" "$FAIL" failed 3
check "timeout: timed_out, 124, SIGTERM" has "$(receipt "$Q" "$SLOW")" '"outcome":"timed_out","exit_code":124,"reason":null,"message":"timed out after 1000 ms","attempts":1,"status":{"exit":null,"signal":"SIGTERM"}'
check "invalid spec: rejected, 126, invalid_spec" has "$(receipt "$Q" "$BAD")" '"outcome":"rejected","exit_code":126,"reason":"invalid_spec"'
check "major version 2: rejected, unsupported_version" has "$(receipt "$Q" "$V2")" '"outcome":"rejected","exit_code":126,"reason":"unsupported_version"'
check "no ready entry is left" [ -z "$(ls "$Q/ready")" ]

# --- 2. priority, then FIFO ----------------------------------------------------------
Q=$(new_queue order)
for _j in a:0 b:0 c:5 d:-3 e:5 f:0; do
  request "o${_j%%:*}" "{\"argv\":[\"sh\",\"-c\",\"echo ${_j%%:*} >> $WORK/order.log\"],\"cwd\":\"/tmp\",\"priority\":${_j#*:}}"
  produce "$Q" "o${_j%%:*}" > /dev/null
done
"$FSJOB" consume "$Q"
check "priority order, FIFO within a priority (LAYOUT-7, CLAIM-1)" [ "$(tr '\n' ' ' < "$WORK/order.log")" = "c e a b f d " ]

# --- 3. a lane: two consumers, jobs never overlap ---------------------------------------
Q=$(new_queue lane)
for _n in 1 2 3; do
  request "l$_n" "{\"argv\":[\"sh\",\"-c\",\"echo start >> $WORK/lane.log; sleep 0.4; echo end >> $WORK/lane.log\"],\"cwd\":\"/tmp\",\"lane\":\"L\"}"
  produce "$Q" "l$_n" > /dev/null
done
"$FSJOB" consume "$Q" &
_c1=$!
"$FSJOB" consume "$Q" &
_c2=$!
wait "$_c1" "$_c2"
# Whatever consumer ran a job, one lane never has two running at once.
check "a lane runs one job at a time across consumers (LANE-1)" [ "$(tr '\n' ' ' < "$WORK/lane.log")" = "start end start end start end " ]
_n=0
for _d in "$Q"/jobs/*; do [ -f "$_d/receipt.json" ] && _n=$((_n + 1)); done
check "every lane job finished" [ "$_n" = 3 ]

# --- 4. dedupe -------------------------------------------------------------------------
Q=$(new_queue dedupe)
request dd '{"argv":["true"],"cwd":"/tmp","dedupe":"nightly"}'
produce "$Q" dd > /dev/null
check "first job with a dedupe key is accepted" [ $? = 0 ]
produce "$Q" dd > /dev/null 2>&1
check "a second job with a held key is refused with exit 3 (DEDUPE-1)" [ $? = 3 ]
"$FSJOB" consume "$Q"
produce "$Q" dd > /dev/null
check "the key is free again once its job finished" [ $? = 0 ]

# --- 5. retries ----------------------------------------------------------------------
Q=$(new_queue retry)
request retry "{\"argv\":[\"sh\",\"-c\",\"n=\$(cat $WORK/count 2>/dev/null || echo 0); n=\$((n+1)); echo \$n > $WORK/count; [ \$n -ge 3 ]\"],\"cwd\":\"/tmp\",\"max_attempts\":3,\"retry_delay_ms\":300}"
R=$(produce "$Q" retry)
"$FSJOB" consume "$Q"
check "fails twice, then succeeds on attempt 3 (RETRY-1..3)" has "$(receipt "$Q" "$R")" '"gen":3,"outcome":"succeeded","exit_code":0,"reason":null,"message":null,"attempts":3,'
check "each failed attempt has a counted end record with a retry time" has "$Q/jobs/$R/end.2.json" '"reason":"failed","counted":true,'
check "the command ran exactly three times" [ "$(cat "$WORK/count")" = 3 ]

# --- 6. output bound -----------------------------------------------------------------------
Q=$(new_queue output)
request big '{"argv":["head","-c","5242880","/dev/zero"],"cwd":"/tmp","max_output_bytes":1000}'
B=$(produce "$Q" big)
"$FSJOB" consume "$Q"
check "5 MB of output with max_output_bytes 1000: 1000 bytes kept" [ "$(wc -c < "$Q/jobs/$B/stdout.1")" = 1000 ]
check "...and the receipt counts every byte, truncated (EXEC-1, RCPT-5)" has "$(receipt "$Q" "$B")" '"stdout":{"gen":1,"bytes_total":5242880,"bytes_kept":1000,"truncated":true,'

# --- 7. environment ------------------------------------------------------------------------
Q=$(new_queue env)
request env '{"argv":["env"],"cwd":"/tmp","env":{"GREETING":"hi there"}}'
E=$(produce "$Q" env)
FSJOB_SELFTEST_SECRET=leak "$FSJOB" consume "$Q"
check "the consumer's environment does not reach the command (EXEC-6)" eval '! has "$Q/jobs/$E/stdout.1" FSJOB_SELFTEST_SECRET'
check "the spec's env and FSJOB_JOB_ID do" eval 'has "$Q/jobs/$E/stdout.1" "GREETING=hi there" && has "$Q/jobs/$E/stdout.1" "FSJOB_JOB_ID=$E"'

# --- 8. kill -9 of the consumer mid-job ------------------------------------------------------
# (a) the guardian stops the command (WORKER-2); (b) without a guardian the
# next consumer stops it (RECOV-1). Either way: exactly one receipt, lost.
for _v in guardian recovery; do
  Q=$(new_queue "kill-$_v")
  request "k$_v" "{\"argv\":[\"sh\",\"-c\",\"echo \$\$ > $WORK/cmd-$_v.pid; exec sleep 60\"],\"cwd\":\"/tmp\"}"
  K=$(produce "$Q" "k$_v")
  if [ "$_v" = guardian ]; then
    "$FSJOB" consume "$Q" &
  else
    FSJOB_SH_NO_GUARDIAN=1 "$FSJOB" consume "$Q" &
  fi
  _cp=$!
  echo "$_cp" > "$WORK/consumer-$_v.pid"
  wait_file "$WORK/cmd-$_v.pid" 10
  IFS= read -r _pid < "$WORK/cmd-$_v.pid"
  kill -s KILL "$_cp"
  wait "$_cp" 2>/dev/null
  if [ "$_v" = guardian ]; then
    _i=0
    while ! gone "$_pid" && [ "$_i" -lt 100 ]; do sleep 0.1; _i=$((_i + 1)); done
    check "kill -9 of the consumer: the guardian stops its command within 10 s (WORKER-2)" gone "$_pid"
  else
    check "kill -9 of the consumer without a guardian: the command still runs" eval '! gone "$_pid"'
  fi
  "$FSJOB" consume "$Q"
  check "...the next consume leaves the command stopped ($_v)" gone "$_pid"
  check "...and exactly one receipt: lost, owner_lost ($_v)" eval 'one_receipt "$Q" "$K" && has "$(receipt "$Q" "$K")" "\"gen\":2,\"outcome\":\"lost\",\"exit_code\":125,\"reason\":\"owner_lost\""'
done

# --- 9. recover -----------------------------------------------------------------------------
Q=$(new_queue recover)
request rec '{"argv":["true"],"cwd":"/tmp"}'
R=$(produce "$Q" rec)
rm -f "$Q/ready/"*
"$FSJOB" recover "$Q"
check "recover rebuilds a lost ready entry (READY-4)" [ -e "$Q/ready/1000-$R" ]

# --- 10. hostile and unusual input ------------------------------------------------------------
Q=$(new_queue hostile)
request late '{"argv":["true"],"cwd":"/tmp","queue_deadline_ms":1}'
request inside "{\"argv\":[\"true\"],\"cwd\":\"$Q/jobs\"}"
request plain '{"argv":["true"],"cwd":"/tmp"}'
LATE=$(produce "$Q" late)
INSIDE=$(produce "$Q" inside)
LINKED=$(produce "$Q" plain)
FIFO=$(produce "$Q" plain)
mv "$Q/jobs/$LINKED/spec.json" "$WORK/spec-elsewhere.json"
ln -s "$WORK/spec-elsewhere.json" "$Q/jobs/$LINKED/spec.json"
mkfifo "$Q/jobs/$FIFO/claim.1.json"
printf '%s\n' '{"argv" : ["true"], "cwd" : "/tmp", "timeout_ms" : 60000}' > "$WORK/pretty.json"
PRETTY=$("$FSJOB" produce "$Q" "$WORK/pretty.json")
check "a pretty-printed request is accepted (REQ-1)" [ -n "$PRETTY" ]
printf '%s\n' '{"argv" : ["true"], "cwd" : "/tmp", "timeout_ms" : 6e4}' > "$WORK/exponent.json"
check "an integer member written 6e4 is refused (REQ-2)" eval '! "$FSJOB" produce "$Q" "$WORK/exponent.json" 2>/dev/null' 
sleep 0.1
"$FSJOB" consume "$Q" &
_cp=$!
_i=0
while kill -s 0 "$_cp" 2>/dev/null && [ "$_i" -lt 200 ]; do sleep 0.1; _i=$((_i + 1)); done
check "a FIFO where a record belongs never makes the consumer hang (SEC-3)" eval '! kill -s 0 "$_cp" 2>/dev/null'
kill -s KILL "$_cp" 2>/dev/null
check "...and that job is left alone: its owner cannot be judged" [ ! -e "$Q/jobs/$FIFO/receipt.json" ]
check "a deadline passed before the start: expired, 124" outcome "$Q" "$LATE" expired 124
check "a working directory inside the queue: rejected, cwd_unusable (EXEC-5)" has "$(receipt "$Q" "$INSIDE")" '"outcome":"rejected","exit_code":126,"reason":"cwd_unusable"'
check "a symlinked spec is not followed: rejected, invalid_spec (SEC-2)" has "$(receipt "$Q" "$LINKED")" '"outcome":"rejected","exit_code":126,"reason":"invalid_spec"'
check "the pretty-printed request ran, with its timeout as written" eval 'outcome "$Q" "$PRETTY" succeeded 0 && has "$Q/jobs/$PRETTY/spec.json" "\"timeout_ms\":60000,"'

# --- 11. every record written is valid for the reference validator --------------------------------
ROOT=$(cd -P -- "$HERE/../../.." && pwd -P)
if command -v node > /dev/null 2>&1 && [ -f "$ROOT/bin/fsjob.js" ] && [ -d "$ROOT/node_modules" ]; then
  # Every record file, except the bad specs planted above (their jobs end in
  # deadbeef) and the FIFO.
  set --
  for _f in "$WORK"/*/fsjob.json "$WORK"/*/jobs/*/*.json "$WORK"/*/dedupe/*/*.json "$WORK"/*/lanes/*/*.json; do
    case $_f in */jobs/*-00000000deadbeef/spec.json) continue ;; esac
    [ -f "$_f" ] && [ ! -L "$_f" ] && set -- "$@" "$_f"
  done
  node "$ROOT/bin/fsjob.js" validate "$@" > "$WORK/validate.out" 2>&1
  _rc=$?
  check "all $# records written are valid for fsjob validate (REC-1..REC-7)" [ "$_rc" = 0 ]
  [ "$_rc" = 0 ] || grep -v ': OK ' "$WORK/validate.out" >&2
else
  printf 'ok - fsjob validate not available # SKIP\n'
fi

END=$(date +%s)
printf '# %d checks, %d failed, %d s\n' "$CHECKS" "$FAILED" $((END - START))
[ "$FAILED" = 0 ]

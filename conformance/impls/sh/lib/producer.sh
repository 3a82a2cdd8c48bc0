# producer.sh - creating a queue (spec/producer.md) and enqueueing (spec/producer.md).

REQUEST_MAX=100663296

# cmd_init ROOT (INIT-1, INIT-2): idempotent.
cmd_init() {
  if [ ! -e "$1" ] && [ ! -L "$1" ]; then
    mkdir -p -m 700 -- "$1" || { log "$1: cannot create the queue root"; return 1; }
  fi
  if [ -L "$1" ] || [ ! -d "$1" ]; then
    log "$1: not a directory, or a symlink (SEC-1)"
    return 1
  fi
  Q=$(cd -P -- "$1" && pwd -P) || return 1
  Q_UID=$(id -u)
  fs_stat "$Q" || return 1
  fs_trusted || { log "$Q: $FS_WHY (SEC-1)"; return 1; }
  for _in_d in tmp jobs ready dedupe lanes workers; do
    fs_mkdir "$Q/$_in_d" || { log "$Q/$_in_d: $FS_WHY"; return 1; }
  done
  if [ -e "$Q/fsjob.json" ] || [ -L "$Q/fsjob.json" ]; then
    rec_read "$Q/fsjob.json" queue && return 0
    log "$Q/fsjob.json: $REC_ERR (INIT-2)"
    return 1
  fi
  # FS-2: only before a queue is created (an existing one may be read-only).
  fs_probe "$Q/tmp" || { log "$PUB_WHY"; return 1; }
  rand_hex16 || return 1
  now_ms
  pub_link "$Q" fsjob.json "{$F10,\"type\":\"queue\",\"queue_id\":\"$RAND\",\"created_ms\":$NOW_MS}"
  case $? in
    0) return 0 ;;
    1) rec_read "$Q/fsjob.json" queue && return 0
       log "$Q/fsjob.json: $REC_ERR (INIT-2)"
       return 1 ;;
    *) log "$PUB_WHY"; return 1 ;;
  esac
}

# --- the request (REQ-1, schemas/request.schema.json) ---------------------------
#
# A request is read twice at most: first as compact form (what the
# conformance runner writes, MANIFEST-2), whose strings and payload are copied
# byte for byte into the spec because compact form is already canonical; if
# that fails, as any RFC 8259 text (JW_LENIENT), whose strings are rewritten
# in compact form (JW_CANON) and whose payload is re-serialized (JW_ECHO).
# Outside the payload every number must be an integer written as a record's
# are (REQ-2): 1.0, 6e5 and -0 are refused in both readings.

_rq_bad() {
  [ -n "$RQ_ERR" ] || RQ_ERR="$1"
  return 0
}

# j_integral NUMBER: JI = NUMBER (any JSON number) as a canonical integer, if
# its value is one that fits 17 digits; fails otherwise.
j_integral() {
  _ji=$1 _jneg=
  case $_ji in -*) _jneg=- _ji=${_ji#-} ;; esac
  _jip=${_ji%%[.eE]*}
  _jr=${_ji#"$_jip"}
  _jfp=
  case $_jr in
    .*) _jfp=${_jr#.}; _jfp=${_jfp%%[eE]*}; _jr=${_jr#."$_jfp"} ;;
  esac
  _jex=0
  case $_jr in
    [eE]*)
      _jex=${_jr#?}
      _jes=
      case $_jex in +*) _jex=${_jex#+} ;; -*) _jes=- _jex=${_jex#-} ;; esac
      case $_jex in ''|*[!0-9]*) return 1 ;; esac
      while :; do case $_jex in 0?*) _jex=${_jex#0} ;; *) break ;; esac; done
      [ ${#_jex} -le 6 ] || return 1
      _jex=$_jes$_jex ;;
    '') ;;
    *) return 1 ;;
  esac
  case $_jip$_jfp in ''|*[!0-9]*) return 1 ;; esac
  _jd=$_jip$_jfp
  while :; do case $_jd in 0?*) _jd=${_jd#0} ;; *) break ;; esac; done
  if [ "$_jd" = 0 ]; then JI=0; return 0; fi
  _jsh=$((_jex - ${#_jfp}))
  while [ "$_jsh" -lt 0 ]; do
    case $_jd in *0) _jd=${_jd%0} ;; *) return 1 ;; esac
    _jsh=$((_jsh + 1))
  done
  [ $((${#_jd} + _jsh)) -le 17 ] || return 1
  while [ "$_jsh" -gt 0 ]; do _jd=${_jd}0; _jsh=$((_jsh - 1)); done
  JI=$_jneg$_jd
}

_rq_int() { # KIND VALUE MIN MAX: sets _rq_n
  if [ "$1" = n ] && j_integral "$2" && j_int "$JI" "$3" "$4"; then
    _rq_n=$JI
    return 0
  fi
  _rq_bad "$_rq_name: an integer from $3 to $4 is required"
  return 1
}

# The walker callback: validate each member and keep what the spec needs, in
# compact form.
_rq_cb() {
  case $2 in
    1) ;;
    2) _rq_d2 "$@"; return 0 ;;
    3)
      case $3 in argv|env) _rr_bytes_member "$1" "$JW_K3" "$5" ;; esac
      _rq_d3 "$@"
      return 0 ;;
    *) return 0 ;;
  esac
  case $1 in
    E)
      case $3 in payload) RQ_PAYLOAD_AT=$5 ;; esac
      return 0 ;;
    O|A)
      case $3 in
        argv) [ "$5" -ge 1 ] && [ "$5" -le 4096 ] || _rq_bad "argv: 1 to 4096 arguments" ;;
        env) [ "$5" -le 256 ] || _rq_bad "env: at most 256 variables" ;;
        labels) [ "$5" -le 64 ] || _rq_bad "labels: at most 64 labels" ;;
        after) [ "$5" -ge 1 ] && [ "$5" -le 256 ] || _rq_bad "after: 1 to 256 dependencies (AFTER-1)" ;;
      esac
      return 0 ;;
  esac
  RQ_N=$((RQ_N + 1))
  RQ_SEEN="$RQ_SEEN$3|"
  _rq_name=$3
  case $3 in
    fsjob)
      if [ "$1" = s ]; then RQ_FSJOB=$5; else RQ_FSJOB='(not a string)'; fi ;;
    argv) [ "$1" = a ] || _rq_bad "argv must be an array of strings"; RQ_ARGV= ; RQ_HAS_ARGV=1 ;;
    handler)
      _rr_scalar "$1" "$5" handler || _rq_bad "handler must match ^[a-z0-9][a-z0-9._-]{0,63}\$"
      RQ_HANDLER=$5 ;;
    payload) ;;
    cwd)
      _rr_scalar "$1" "$5" cwd || _rq_bad "cwd must be an absolute path of at most 4096 bytes without NUL"
      RQ_CWD="\"$JW_CANON\"" ;;
    env) [ "$1" = o ] || _rq_bad "env must be an object"; RQ_ENV= ;;
    stdin_text)
      [ "$1" = s ] && [ ${#5} -le "$STDIN_MAX" ] || _rq_bad "stdin_text must be a string of at most $STDIN_MAX bytes"
      RQ_STDIN_TEXT=$JW_CANON RQ_STDIN=text ;;
    stdin_base64)
      [ "$1" = s ] || _rq_bad "stdin_base64 must be a string"
      RQ_STDIN_B64=$5 RQ_STDIN=base64 ;;
    timeout_ms) _rq_int "$1" "$5" 1 604800000 && RQ_TIMEOUT=$_rq_n ;;
    kill_grace_ms) _rq_int "$1" "$5" 0 300000 && RQ_GRACE=$_rq_n ;;
    queue_deadline_ms)
      if [ "$1" = z ]; then RQ_DEADLINE=null; else _rq_int "$1" "$5" 1 2592000000 && RQ_DEADLINE=$_rq_n; fi ;;
    max_attempts) _rq_int "$1" "$5" 1 100 && RQ_ATTEMPTS=$_rq_n ;;
    retry_delay_ms) _rq_int "$1" "$5" 0 86400000 && RQ_RETRY=$_rq_n ;;
    priority) _rq_int "$1" "$5" -1000 1000 && RQ_PRIORITY=$_rq_n ;;
    max_output_bytes) _rq_int "$1" "$5" 0 "$OUTPUT_MAX" && RQ_MAXOUT=$_rq_n ;;
    output_keep)
      _rr_scalar "$1" "$5" 'enum:head tail head_tail' || _rq_bad "output_keep must be head, tail or head_tail"
      RQ_KEEP=$5 ;;
    not_before_ms)
      if [ "$1" = z ]; then RQ_NOTBEFORE=null; else _rq_int "$1" "$5" 0 "$INSTANT_MAX" && RQ_NOTBEFORE=$_rq_n; fi ;;
    lane|dedupe)
      if [ "$1" = z ]; then
        eval "RQ_$3=null RQ_${3}_key="
      elif _rr_scalar "$1" "$5" key; then
        eval "RQ_$3=\"\\\"\$JW_CANON\\\"\" RQ_${3}_key=\$5"
      else
        _rq_bad "$3 must be null or a key of 1 to 256 bytes without control characters"
      fi ;;
    preemptible)
      case $1 in t) RQ_PREEMPT=true ;; f) RQ_PREEMPT=false ;; *) _rq_bad "preemptible must be a boolean" ;; esac ;;
    labels) [ "$1" = o ] || _rq_bad "labels must be an object"; RQ_LABELS= ;;
    after) [ "$1" = a ] || _rq_bad "after must be an array of {job_id, when}"; RQ_AFTERC=0 ;;
    hold)
      case $1 in t) RQ_HOLD=true ;; f) RQ_HOLD=false ;; *) _rq_bad "hold must be a boolean" ;; esac ;;
    lane_slots) _rq_int "$1" "$5" 1 64 && RQ_SLOTS=$_rq_n ;;
    x-*) ;;
    *) RQ_UNKNOWN="$RQ_UNKNOWN '$3'" ;;
  esac
  return 0
}

_rq_d2() {
  case $3 in
    argv)
      case $1 in
        A|E) return 0 ;;
        o) unset _rr_b64; _rr_bbad=; return 0 ;;
        O)
          # SPEC-3: an argument whose bytes are not UTF-8, copied in its one form.
          if [ "$4" = 0 ]; then _rq_bmax=4096; else _rq_bmax=131072; fi
          _rq_bytes "$_rq_bmax" "argv[$4]" || return 0
          if [ "$4" = 0 ]; then RQ_ARGV="{\"base64\":\"$_rr_b64\"}"; else RQ_ARGV="$RQ_ARGV,{\"base64\":\"$_rr_b64\"}"; fi
          return 0 ;;
      esac
      if [ "$1" != s ]; then _rq_bad "argv must be an array of strings and base64 forms"; return 0; fi
      [ "$JW_NUL" = 0 ] || _rq_bad "argv: NUL is not allowed"
      if [ "$4" = 0 ]; then
        [ ${#5} -ge 1 ] && [ ${#5} -le 4096 ] || _rq_bad "argv[0] must be 1 to 4096 bytes"
      else
        [ ${#5} -le 131072 ] || _rq_bad "argv: an argument over 131072 bytes"
      fi
      if [ "$4" = 0 ]; then RQ_ARGV="\"$JW_CANON\""; else RQ_ARGV="$RQ_ARGV,\"$JW_CANON\""; fi ;;
    env)
      case $1 in
        A|E) return 0 ;;
        o) unset _rr_b64; _rr_bbad=; return 0 ;;
      esac
      if [ "$1" != s ] && [ "$1" != O ]; then _rq_bad "env values must be strings or base64 forms"; return 0; fi
      case $4 in
        FSJOB_*) _rq_bad "env: names must not start with FSJOB_" ;;
        [A-Za-z_]*) ;;
        *) _rq_bad "env: invalid name" ;;
      esac
      case $4 in *[!A-Za-z0-9_]*) _rq_bad "env: invalid name" ;; esac
      [ ${#4} -le 128 ] || _rq_bad "env: name too long"
      if [ "$1" = O ]; then
        _rq_bytes 32768 "env $4" || return 0
        RQ_ENV="$RQ_ENV${RQ_ENV:+,}\"$4\":{\"base64\":\"$_rr_b64\"}"
        return 0
      fi
      [ "$JW_NUL" = 0 ] || _rq_bad "env: NUL is not allowed"
      [ ${#5} -le 32768 ] || _rq_bad "env: a value over 32768 bytes"
      RQ_ENV="$RQ_ENV${RQ_ENV:+,}\"$4\":\"$JW_CANON\"" ;;
    labels)
      case $1 in O|A|E) return 0 ;; esac
      [ "$1" = s ] && [ ${#5} -le 256 ] || _rq_bad "labels: values are strings of at most 256 bytes"
      case $4 in [a-z0-9]*) ;; *) _rq_bad "labels: invalid name" ;; esac
      case $4 in *[!a-z0-9._/-]*) _rq_bad "labels: invalid name" ;; esac
      [ ${#4} -le 64 ] || _rq_bad "labels: name too long"
      RQ_LABELS="$RQ_LABELS${RQ_LABELS:+,}\"$4\":\"$JW_CANON\"" ;;
    after)
      # AFTER-1: a dependency object; its members come at depth 3.
      case $1 in
        o) _rq_dep_job= _rq_dep_when=succeeded ;;
        O)
          [ -n "$_rq_dep_job" ] || _rq_bad "after: a dependency without job_id"
          eval "RQ_AFTER_JOB_$RQ_AFTERC=\$_rq_dep_job RQ_AFTER_WHEN_$RQ_AFTERC=\$_rq_dep_when"
          RQ_AFTERC=$((RQ_AFTERC + 1)) ;;
        *) _rq_bad "after: each dependency is an object {job_id, when}" ;;
      esac ;;
  esac
  return 0
}

_rq_d3() {
  [ "$3" = after ] || return 0
  case $1 in O|A|E) return 0 ;; esac
  case $JW_K3 in
    job_id) [ "$1" = s ] && is_job_id "$5" || _rq_bad "after: job_id must be a job id"; _rq_dep_job=$5 ;;
    when) _rr_scalar "$1" "$5" 'enum:finished succeeded' || _rq_bad "after: when must be finished or succeeded"; _rq_dep_when=$5 ;;
    x-*) ;;
    *) RQ_UNKNOWN="$RQ_UNKNOWN 'after.$JW_K3'" ;;
  esac
  return 0
}

# _rq_bytes MAX WHAT: the {"base64": ...} element just closed is the one form
# SPEC-3 allows (a producer copies the bytes exactly, never as text).
_rq_bytes() {
  if [ -n "$_rr_bbad" ]; then _rq_bad "$2: $_rr_bbad (SPEC-3)"; return 1; fi
  if [ -z "${_rr_b64+set}" ]; then _rq_bad "$2: an object without base64 (SPEC-3)"; return 1; fi
  bytes_form "$_rr_b64" "$1" || { _rq_bad "$2: base64 form: $BF_ERR (SPEC-3)"; return 1; }
}

_rq_reset() {
  RQ_ERR= RQ_SEEN='|' RQ_HAS_ARGV=0 RQ_ARGV= RQ_HANDLER= RQ_PAYLOAD_AT= RQ_PAYLOAD=
  RQ_CWD= RQ_ENV= RQ_STDIN=none RQ_STDIN_TEXT= RQ_STDIN_B64=
  RQ_TIMEOUT=3600000 RQ_GRACE=5000 RQ_DEADLINE=null RQ_ATTEMPTS=1 RQ_RETRY=0
  RQ_PRIORITY=0 RQ_lane=null RQ_lane_key= RQ_dedupe=null RQ_dedupe_key=
  RQ_PREEMPT=false RQ_MAXOUT=1048576 RQ_LABELS= RQ_N=0 RQ_FSJOB= RQ_UNKNOWN=
  RQ_KEEP=head RQ_NOTBEFORE=null RQ_AFTERC=0 RQ_HOLD=false RQ_SLOTS=1
}

# request_read FILE: validate a request file and fill every default (ENQ-1,
# SPEC-2). RQ_* hold the result (RQ_LENIENT=1 when it was not in compact
# form); RQ_ERR says what is wrong.
request_read() {
  _rq_reset
  RQ_LENIENT=0
  if [ ! -f "$1" ]; then RQ_ERR="$1: not a regular file"; return 1; fi
  _rq_size=$(stat -L -c %s -- "$1") || { RQ_ERR="$1: cannot stat"; return 1; }
  [ "$_rq_size" -gt 0 ] || { RQ_ERR="$1: empty (REQ-1)"; return 1; }
  [ "$_rq_size" -le "$REQUEST_MAX" ] || { RQ_ERR="$1: larger than $REQUEST_MAX bytes (REQ-1)"; return 1; }
  RQ_TEXT=
  _rq_rc=1
  if [ "$_rq_size" -le 65536 ]; then
    IFS= read -r RQ_TEXT < "$1"
    _rq_rc=$?
  fi
  if [ "$_rq_rc" != 0 ] || [ $((${#RQ_TEXT} + 1)) != "$_rq_size" ]; then
    # Not one line with its line feed: read it all (several lines, no final
    # line feed, or large).
    RQ_TEXT=$(cat -- "$1"; printf x) || { RQ_ERR="$1: cannot read"; return 1; }
    RQ_TEXT=${RQ_TEXT%x}
    [ ${#RQ_TEXT} = "$_rq_size" ] || { RQ_ERR="$1: NUL bytes (REQ-1)"; return 1; }
  fi
  JW_INTONLY=1 JW_LENIENT= JW_ECHO_K1=
  if ! jw_walk "$RQ_TEXT" _rq_cb; then
    # Not compact: read it as RFC 8259 JSON.
    _rq_reset
    RQ_LENIENT=1
    # REQ-2: whitespace is allowed, but integers are written as in records.
    JW_INTONLY=1 JW_LENIENT=1 JW_ECHO_K1=payload
    if ! jw_walk "$RQ_TEXT" _rq_cb; then
      JW_LENIENT= JW_ECHO_K1=
      RQ_ERR="$1: not one JSON object: ${RQ_ERR:-$JW_ERR} (REQ-1)"
      return 1
    fi
    RQ_PAYLOAD=$JW_ECHO
  fi
  JW_INTONLY= JW_LENIENT= JW_ECHO_K1=
  case $RQ_SEEN in
    *'|fsjob|'*)
      case $RQ_FSJOB in
        1.0|1.1|1.2) _rq_minor=0 ;;
        1.[1-9]|1.[1-9][0-9]|1.[1-9][0-9][0-9]|1.[1-9][0-9][0-9][0-9]|1.[1-9][0-9][0-9][0-9][0-9]|1.[1-9][0-9][0-9][0-9][0-9][0-9])
          _rq_minor=1 ;;
        *) RQ_ERR="$1: unsupported version '$RQ_FSJOB' (VER-1)"; return 1 ;;
      esac ;;
    *) _rq_minor=0 ;;
  esac
  if [ -n "$RQ_UNKNOWN" ] && [ "$_rq_minor" = 0 ]; then
    RQ_ERR="$1: members a request does not have:$RQ_UNKNOWN (VER-2)"
    return 1
  fi
  [ -z "$RQ_ERR" ] || { RQ_ERR="$1: $RQ_ERR"; return 1; }
  [ "$RQ_N" -le 64 ] || { RQ_ERR="$1: more than 64 members"; return 1; }
  case $RQ_SEEN in
    *'|argv|'*)
      case $RQ_SEEN in *'|handler|'*|*'|payload|'*) RQ_ERR="$1: argv excludes handler and payload (SPEC-1)"; return 1 ;; esac ;;
    *'|handler|'*)
      case $RQ_SEEN in *'|payload|'*) ;; *) RQ_PAYLOAD_AT= RQ_PAYLOAD= ;; esac ;;
    *) RQ_ERR="$1: the request needs argv or handler (SPEC-1)"; return 1 ;;
  esac
  case $RQ_SEEN in
    *'|stdin_text|'*)
      case $RQ_SEEN in *'|stdin_base64|'*) RQ_ERR="$1: stdin_text and stdin_base64 exclude each other (REQ-1)"; return 1 ;; esac ;;
  esac
  # LANE-5, PREEMPT-2: lane_slots only with a lane, and 1 for a preemptible job.
  case $RQ_SEEN in
    *'|lane_slots|'*)
      [ "$RQ_lane" != null ] || { RQ_ERR="$1: lane_slots needs a lane (LANE-5)"; return 1; }
      if [ "$RQ_PREEMPT" = true ] && [ "$RQ_SLOTS" != 1 ]; then RQ_ERR="$1: a preemptible job has lane_slots 1 (PREEMPT-2)"; return 1; fi ;;
  esac
  if [ "$RQ_STDIN" = base64 ]; then
    case $RQ_STDIN_B64 in
      *[!A-Za-z0-9+/=]*) RQ_ERR="$1: stdin_base64 is not padded base64 (REQ-1)"; return 1 ;;
    esac
    _rq_pad=${RQ_STDIN_B64%%=*}
    case ${RQ_STDIN_B64#"$_rq_pad"} in
      ''|=|==) ;;
      *) RQ_ERR="$1: stdin_base64 is not padded base64 (REQ-1)"; return 1 ;;
    esac
    [ $((${#RQ_STDIN_B64} % 4)) = 0 ] || { RQ_ERR="$1: stdin_base64 is not padded base64 (REQ-1)"; return 1; }
    _rq_bytes=$((${#RQ_STDIN_B64} / 4 * 3 - (${#RQ_STDIN_B64} - ${#_rq_pad})))
    [ "$_rq_bytes" -le "$STDIN_MAX" ] || { RQ_ERR="$1: stdin over $STDIN_MAX bytes (REQ-1)"; return 1; }
  fi
  if [ -z "$RQ_CWD" ]; then
    _rq_pwd=$(pwd -P) || { RQ_ERR="cannot determine the working directory"; return 1; }
    jstr "$_rq_pwd"
    RQ_CWD=$JS
  fi
  return 0
}

# _pr_stage_cleanup: undo a failed enqueue (ENQ-6).
_pr_stage_cleanup() {
  [ -n "$_pr_stage" ] && rm -rf -- "$_pr_stage"
  [ -n "$_pr_ready" ] && rm_entry "$_pr_ready"
  _pr_stage= _pr_ready=
}

# cmd_produce ROOT REQUEST: enqueue (ENQ-1..ENQ-6); prints the id. As the
# reference's (src/cli/exit.ts): an invalid request exits 2, a dependency
# that does not exist 4.
cmd_produce() {
  _pr_stage= _pr_ready=
  queue_open "$1" || return 1
  if ! request_read "$2"; then
    log "invalid request: $RQ_ERR"
    return 2
  fi
  # AFTER-2: each dependency exists (GATE-4) and is named once; GATE-1: gated
  # unless it is not held and every dependency is satisfied now.
  _pr_gated=$RQ_HOLD _pr_after= _pr_i=0 _pr_seen=
  while [ "$_pr_i" -lt "$RQ_AFTERC" ]; do
    eval "_pr_dep=\$RQ_AFTER_JOB_$_pr_i _pr_when=\$RQ_AFTER_WHEN_$_pr_i"
    case "$_pr_seen " in
      *" $_pr_dep "*) log "invalid request: after names job $_pr_dep twice (AFTER-2)"; return 2 ;;
    esac
    _pr_seen="$_pr_seen $_pr_dep"
    job_place "$_pr_dep"
    if [ "$PLACE" = missing ]; then
      log "invalid request: after names job $_pr_dep, which does not exist in $Q (AFTER-2)"
      return 4
    fi
    dep_state "$_pr_dep" "$_pr_when"
    [ "$DEP" = satisfied ] || _pr_gated=true
    _pr_after="$_pr_after${_pr_after:+,}{\"job_id\":\"$_pr_dep\",\"when\":\"$_pr_when\"}"
    _pr_i=$((_pr_i + 1))
  done
  _pr_seen=
  id_init || { log "cannot determine this process's identity"; return 1; }
  # LAYOUT-4: 19 digits of nanoseconds and 16 random hex digits.
  _pr_ns=$(date +%s%N) || return 1
  while [ ${#_pr_ns} -lt 19 ]; do _pr_ns=0$_pr_ns; done
  rand_hex16 || { log "cannot read /dev/urandom"; return 1; }
  _pr_id=$_pr_ns-$RAND
  is_job_id "$_pr_id" || { log "cannot form a job id from the clock"; return 1; }
  _pr_created=${_pr_ns%??????}
  # DELAY-1: a delayed start at most DELAY_MAX (365 days) after created_ms.
  if [ "$RQ_NOTBEFORE" != null ] && [ "$RQ_NOTBEFORE" -gt $((_pr_created + 31536000000)) ]; then
    log "invalid request: not_before_ms lies more than DELAY_MAX (31536000000 ms) after the job's creation (DELAY-1)"
    return 2
  fi
  if [ "$RQ_NOTBEFORE" != null ] && [ "$RQ_DEADLINE" != null ] && [ "$RQ_NOTBEFORE" -ge $((_pr_created + RQ_DEADLINE)) ]; then
    log "invalid request: not_before_ms is not before the queue deadline; the job would expire before it may start (DELAY-1)"
    return 2
  fi
  _pr_stage=$Q/tmp/$_pr_id
  mkdir -m 700 -- "$_pr_stage" || { _pr_stage=; log "cannot create $Q/tmp/$_pr_id"; return 1; }
  # ENQ step 3: stdin.
  _pr_stdin=null
  if [ "$RQ_STDIN" != none ]; then
    set -C
    if [ "$RQ_STDIN" = text ]; then
      jw_decode_out "$RQ_STDIN_TEXT" 2>/dev/null > "$_pr_stage/stdin"
    else
      printf '%s' "$RQ_STDIN_B64" | base64 -d 2>/dev/null > "$_pr_stage/stdin"
    fi
    _pr_rc=$?
    set +C
    if [ "$_pr_rc" != 0 ] || ! fs_stat "$_pr_stage/stdin"; then
      log "cannot write the stdin file"
      _pr_stage_cleanup
      return 1
    fi
    if [ "$FS_SIZE" -gt "$STDIN_MAX" ]; then
      log "invalid request: stdin over $STDIN_MAX bytes"
      _pr_stage_cleanup
      return 2
    fi
    sha256_of "$_pr_stage/stdin" || { _pr_stage_cleanup; return 1; }
    _pr_stdin="{\"bytes\":$FS_SIZE,\"sha256\":\"$SHA\"}"
  fi
  # ENQ step 4: the spec record.
  if [ "$RQ_HAS_ARGV" = 1 ]; then
    _pr_cmd="\"argv\":[$RQ_ARGV]"
  else
    _pr_cmd="\"handler\":\"$RQ_HANDLER\",\"payload\":"
  fi
  # SPEC-2: the members added after 1.0 only when they say something.
  _pr_new=
  if [ "$RQ_KEEP" != head ]; then _pr_new="$_pr_new,\"output_keep\":\"$RQ_KEEP\""; fi
  if [ "$RQ_NOTBEFORE" != null ]; then _pr_new="$_pr_new,\"not_before_ms\":$RQ_NOTBEFORE"; fi
  if [ "$RQ_SLOTS" != 1 ]; then _pr_new="$_pr_new,\"lane_slots\":$RQ_SLOTS"; fi
  if [ -n "$_pr_after" ]; then _pr_new="$_pr_new,\"after\":[$_pr_after]"; fi
  if [ "$RQ_HOLD" = true ]; then _pr_new="$_pr_new,\"hold\":true"; fi
  _pr_head="{$F10,\"type\":\"spec\",\"id\":\"$_pr_id\",\"created_ms\":$_pr_created,$_pr_cmd"
  _pr_tail=",\"cwd\":$RQ_CWD,\"env\":{$RQ_ENV},\"stdin\":$_pr_stdin,\"timeout_ms\":$RQ_TIMEOUT,\"kill_grace_ms\":$RQ_GRACE,\"queue_deadline_ms\":$RQ_DEADLINE,\"max_attempts\":$RQ_ATTEMPTS,\"retry_delay_ms\":$RQ_RETRY,\"priority\":$RQ_PRIORITY,\"lane\":$RQ_lane,\"dedupe\":$RQ_dedupe,\"preemptible\":$RQ_PREEMPT,\"max_output_bytes\":$RQ_MAXOUT$_pr_new,\"labels\":{$RQ_LABELS},\"producer\":$ID_JSON}"
  set -C
  if [ "$RQ_HAS_ARGV" = 1 ]; then
    printf '%s%s\n' "$_pr_head" "$_pr_tail" 2>/dev/null > "$_pr_stage/spec.json"
  else
    # The payload is copied byte for byte from the request: compact form
    # makes that the canonical encoding.
    {
      printf '%s' "$_pr_head"
      if [ "$RQ_LENIENT" = 1 ] && [ -n "$RQ_PAYLOAD" ]; then
        printf '%s' "$RQ_PAYLOAD"
      elif [ "$RQ_LENIENT" = 0 ] && [ -n "$RQ_PAYLOAD_AT" ]; then
        tail -c +$((${RQ_PAYLOAD_AT% *} + 1)) -- "$2" | head -c "${RQ_PAYLOAD_AT#* }"
      else
        printf 'null'
      fi
      printf '%s\n' "$_pr_tail"
    } 2>/dev/null > "$_pr_stage/spec.json"
  fi
  _pr_rc=$?
  set +C
  if [ "$_pr_rc" != 0 ] || ! fs_stat "$_pr_stage/spec.json"; then
    log "cannot write the spec record"
    _pr_stage_cleanup
    return 1
  fi
  if [ "$FS_SIZE" -gt "$RECORD_MAX" ]; then
    log "invalid request: the spec record would be over $RECORD_MAX bytes (REC-2)"
    _pr_stage_cleanup
    return 2
  fi
  if [ -e "$_pr_stage/stdin" ]; then
    sync -- "$_pr_stage/stdin" "$_pr_stage/spec.json" "$_pr_stage" || { _pr_stage_cleanup; return 1; }
  else
    sync -- "$_pr_stage/spec.json" "$_pr_stage" || { _pr_stage_cleanup; return 1; }
  fi
  # ENQ step 5: the dedupe hold.
  _pr_hold_mono=
  if [ "$RQ_dedupe" != null ]; then
    hold_open dedupe "$RQ_dedupe_key" || { _pr_stage_cleanup; return 1; }
    mono_ms
    _pr_hold_mono=$MONO_MS
    hold_take "$_pr_id" null
    case $? in
      0) ;;
      3)
        log "refused: dedupe key held by job $HOLD_JOB (DEDUPE-1)"
        _pr_stage_cleanup
        return 3 ;;
      *) _pr_stage_cleanup; return 1 ;;
    esac
  fi
  # ENQ-2: the ready entry, before the job is published.
  ready_prefix "$RQ_PRIORITY"
  _pr_ready=$Q/ready/$P-$_pr_id
  if ! create_excl "$_pr_ready"; then
    _pr_ready=
    log "cannot create the ready entry"
    _pr_stage_cleanup
    return 1
  fi
  # ENQ-3: publish; GATE-1: a gated job at jobs/<id>.gated, neither name taken.
  _pr_name=$_pr_id
  [ "$_pr_gated" = true ] && _pr_name=$_pr_id.gated
  if [ -e "$Q/jobs/$_pr_id" ] || [ -L "$Q/jobs/$_pr_id" ] || [ -e "$Q/jobs/$_pr_name" ] || [ -L "$Q/jobs/$_pr_name" ]; then
    log "job id collision: $_pr_id"
    _pr_stage_cleanup
    return 1
  fi
  # DEDUPE-5, the last step before the rename: at DEDUPE_STAGE_MAX the hold
  # no longer counts for others.
  if [ -n "$_pr_hold_mono" ] && mono_ms && [ $((MONO_MS - _pr_hold_mono)) -ge "$DEDUPE_STAGE_MAX" ]; then
    log "not published within DEDUPE_STAGE_MAX of taking the dedupe key; refused (DEDUPE-5)"
    _pr_stage_cleanup
    return 1
  fi
  if ! mv -T -- "$_pr_stage" "$Q/jobs/$_pr_name" 2>/dev/null; then
    log "cannot publish $Q/jobs/$_pr_name"
    _pr_stage_cleanup
    return 1
  fi
  _pr_stage=
  # ENQ-4: durable before reporting.
  sync -- "$Q/jobs" || { log "cannot fsync $Q/jobs"; return 1; }
  printf '%s\n' "$_pr_id"
  return 0
}

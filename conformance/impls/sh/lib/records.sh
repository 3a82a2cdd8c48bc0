# records.sh - read (REC-4) and write (REC-1, spec/records.md) fsjob records.
#
# rec_read PATH TYPE [JOB_ID [GEN [EXTRA]]] checks, in the order of REC-4:
# the file (regular, not a symlink, trusted owner and mode, within
# RECORD_MAX), compact form (REC-1), the version (VER-1), the type (REC-3),
# the schema (REC-5, unknown members judged by VER-2 and VER-3) and the
# members the file name fixes (REC-7): JOB_ID and GEN when given, and EXTRA:
# for a cancel record the force its name implies (true|false), for a hold
# "KIND HASH" (its directories), for a worker record its <w>.
#
# On success the members are in R_<name> variables (R_<name>_<member> for
# identities and the other small objects; R_argc, R_argv_<i>, R_envc,
# R_envk_<i>, R_envv_<i> for a spec). On failure REC_ERR says why (with the
# clause) and REC_REASON is invalid_spec or unsupported_version (the reasons
# a consumer rejects a spec with, CLAIM-6.1).
#
# The schemas (schemas/*.schema.json) are written out below as a table of
# member types, checked while the walker reports each value.

INSTANT_MAX=9007199254740991
PID_MAX=4194304

# _rr_ftype TYPE NAME: _rr_t = the schema type of member NAME of a TYPE
# record; fails for a member the schema does not define.
_rr_ftype() {
  case $2 in
    fsjob) _rr_t=ver; return 0 ;;
    type) _rr_t=str; return 0 ;;
  esac
  case $1.$2 in
    queue.queue_id|worker.worker_id) _rr_t=hex16 ;;
    queue.created_ms|spec.created_ms|hold.created_ms|release.released_ms) _rr_t=inst ;;
    spec.id|*.job_id) _rr_t=jobid ;;
    spec.argv) _rr_t=argv ;;
    spec.handler) _rr_t=handler ;;
    spec.payload) _rr_t=any ;;
    receipt.result) _rr_t=result ;;
    spec.cwd) _rr_t=cwd ;;
    spec.env) _rr_t=env ;;
    spec.stdin) _rr_t=stdin ;;
    spec.timeout_ms) _rr_t=int:1:604800000 ;;
    spec.kill_grace_ms) _rr_t=int:0:300000 ;;
    spec.queue_deadline_ms) _rr_t=nint:1:2592000000 ;;
    spec.max_attempts|exec.attempt) _rr_t=int:1:100 ;;
    spec.retry_delay_ms) _rr_t=int:0:86400000 ;;
    spec.priority) _rr_t=int:-1000:1000 ;;
    spec.lane|spec.dedupe) _rr_t=nkey ;;
    spec.preemptible|spec.hold|end.counted|cancel.force) _rr_t=bool ;;
    spec.lane_slots) _rr_t=int:1:64 ;;
    spec.after) _rr_t=after ;;
    hold.slot) _rr_t=int:2:64 ;;
    spec.max_output_bytes) _rr_t=int:0:$OUTPUT_MAX ;;
    spec.output_keep) _rr_t='enum:head tail head_tail' ;;
    spec.not_before_ms) _rr_t=ninst ;;
    spec.labels) _rr_t=labels ;;
    spec.producer|claim.owner|cancel.by|receipt.by|hold.owner|worker.owner|pause.by|release.by) _rr_t=ident ;;
    claim.gen|exec.gen|state.gen|end.gen|receipt.gen) _rr_t=gen ;;
    hold.gen) _rr_t=ngen ;;
    claim.worker_id) _rr_t=nhex16 ;;
    claim.claimed_ms|exec.recorded_ms|state.heartbeat_ms|end.retry_at_ms|end.ended_ms) _rr_t=inst ;;
    cancel.requested_ms|receipt.finished_ms|worker.started_ms|worker.heartbeat_ms|pause.paused_ms) _rr_t=inst ;;
    claim.lease_ms|worker.lease_ms) _rr_t=int:3000:3600000 ;;
    exec.group) _rr_t=group ;;
    state.phase) _rr_t='enum:claimed starting running stopping finishing' ;;
    state.attempt) _rr_t=nint:1:100 ;;
    state.stdout_bytes|state.stderr_bytes) _rr_t=inst ;;
    state.progress|cancel.reason|receipt.message|pause.reason) _rr_t=ntext ;;
    end.reason) _rr_t='enum:failed timed_out lane_busy preempted shutdown released' ;;
    end.status|receipt.status) _rr_t=status ;;
    receipt.outcome) _rr_t='enum:succeeded failed timed_out expired cancelled force_stopped lost rejected' ;;
    receipt.exit_code) _rr_t=int:0:255 ;;
    receipt.reason) _rr_t='nenum:invalid_spec unsupported_version not_allowed cwd_unusable stdin_unusable owner_lost shutdown claim_limit no_handler' ;;
    receipt.attempts) _rr_t=int:0:100 ;;
    receipt.started_ms) _rr_t=ninst ;;
    receipt.stdout|receipt.stderr) _rr_t=output ;;
    hold.kind) _rr_t='enum:dedupe lane' ;;
    hold.key) _rr_t=key ;;
    worker.concurrency) _rr_t=int:1:1024 ;;
    worker.mode) _rr_t='enum:serving draining stopping' ;;
    worker.jobs) _rr_t=jobs ;;
    worker.handlers) _rr_t=handlers ;;
    *) return 1 ;;
  esac
  return 0
}

# _rr_required TYPE: _rr_req = the members a TYPE record must have.
_rr_required() {
  case $1 in
    queue) _rr_req='queue_id created_ms' ;;
    spec) _rr_req='id created_ms cwd env stdin timeout_ms kill_grace_ms queue_deadline_ms max_attempts retry_delay_ms priority lane dedupe preemptible max_output_bytes labels producer' ;;
    claim) _rr_req='job_id gen owner worker_id claimed_ms lease_ms' ;;
    exec) _rr_req='job_id gen attempt group recorded_ms' ;;
    state) _rr_req='job_id gen phase heartbeat_ms attempt stdout_bytes stderr_bytes progress' ;;
    end) _rr_req='job_id gen reason counted retry_at_ms status ended_ms' ;;
    cancel) _rr_req='job_id force requested_ms by reason' ;;
    receipt) _rr_req='job_id gen outcome exit_code reason message attempts status started_ms finished_ms stdout stderr result by' ;;
    hold) _rr_req='kind key job_id gen owner created_ms' ;;
    worker) _rr_req='worker_id owner started_ms heartbeat_ms lease_ms concurrency mode jobs handlers' ;;
    pause) _rr_req='paused_ms by reason' ;;
    release) _rr_req='job_id released_ms by' ;;
    *) _rr_req= ;;
  esac
}

# _rr_sub_type OBJECT-TYPE MEMBER: _rr_st = the type of a member of one of
# the small objects the schemas define (common.schema.json).
_rr_sub_type() {
  case $1.$2 in
    ident.host) _rr_st=host ;;
    ident.boot_id|ident.pid_ns|ident.start|group.start|group.boot_id|group.pid_ns) _rr_st=proc ;;
    ident.pid|group.pgid) _rr_st=int:1:$PID_MAX ;;
    ident.uid) _rr_st=int:0:4294967294 ;;
    status.exit) _rr_st=nint:0:255 ;;
    status.signal) _rr_st=sig ;;
    output.gen|jobs.gen) _rr_st=gen ;;
    output.bytes_total) _rr_st=ninst ;;
    output.bytes_kept) _rr_st=int:0:$OUTPUT_MAX ;;
    output.truncated) _rr_st=bool ;;
    output.sha256|stdin.sha256) _rr_st=sha ;;
    stdin.bytes) _rr_st=int:0:$STDIN_MAX ;;
    jobs.job_id|dep.job_id) _rr_st=jobid ;;
    dep.when) _rr_st='enum:finished succeeded' ;;
    *) return 1 ;;
  esac
}

_rr_sub_required() {
  case $1 in
    ident) _rr_sreq='host boot_id pid_ns pid start uid' ;;
    group) _rr_sreq='pgid start boot_id pid_ns' ;;
    status) _rr_sreq='exit signal' ;;
    output) _rr_sreq='gen bytes_total bytes_kept truncated sha256' ;;
    stdin) _rr_sreq='bytes sha256' ;;
    jobs) _rr_sreq='job_id gen' ;;
    dep) _rr_sreq='job_id when' ;;
  esac
}

_rr_bad() {
  [ -n "$_rr_err" ] || _rr_err="$_rr_k1: $1"
  return 0
}

# _rr_noctl TEXT: no control character (U+0000..U+001F, U+007F).
_rr_noctl() {
  [ "$JW_CTL" = 0 ] || return 1
  case $1 in *"$J_DEL"*) return 1 ;; esac
  return 0
}

# _rr_scalar KIND VALUE TYPE: check one value against a schema type; sets
# _rr_v to what is stored (the empty string for null).
_rr_scalar() {
  _rr_v=$2
  case $3 in
    n*) [ "$1" = z ] && case $3 in nint:*|ninst|ngen|nhex16|nenum:*|ntext|nkey) _rr_v=; return 0 ;; esac ;;
  esac
  case $3 in
    sig)
      [ "$1" = z ] && { _rr_v=; return 0; }
      [ "$1" = s ] && [ ${#2} -le 16 ] || return 1
      case $2 in SIG?*) ;; *) return 1 ;; esac
      case ${2#SIG} in *[!A-Z0-9+]*) return 1 ;; esac ;;
    ver|str) [ "$1" = s ] ;;
    inst|ninst) [ "$1" = n ] && j_int "$2" 0 "$INSTANT_MAX" ;;
    int:*|nint:*)
      _rr_r=${3#*:}
      [ "$1" = n ] && j_int "$2" "${_rr_r%%:*}" "${_rr_r#*:}" ;;
    bool)
      case $1 in t) _rr_v=true ;; f) _rr_v=false ;; *) return 1 ;; esac ;;
    jobid) [ "$1" = s ] && is_job_id "$2" ;;
    gen|ngen) [ "$1" = n ] && is_gen "$2" ;;
    hex16|nhex16) [ "$1" = s ] && is_hex 16 "$2" ;;
    sha) [ "$1" = s ] && is_hex 64 "$2" ;;
    enum:*|nenum:*)
      [ "$1" = s ] || return 1
      case " ${3#*:} " in *" $2 "*) return 0 ;; esac
      return 1 ;;
    ntext) [ "$1" = s ] && [ ${#2} -le 1024 ] ;;
    key|nkey) [ "$1" = s ] && [ ${#2} -ge 1 ] && [ ${#2} -le 256 ] && _rr_noctl "$2" ;;
    host) [ "$1" = s ] && [ ${#2} -ge 1 ] && [ ${#2} -le 255 ] && _rr_noctl "$2" ;;
    proc) [ "$1" = s ] && [ ${#2} -ge 1 ] && [ ${#2} -le 128 ] && _rr_noctl "$2" ;;
    cwd)
      [ "$1" = s ] && [ "$JW_NUL" = 0 ] && [ ${#2} -le 4096 ] || return 1
      case $2 in /*) return 0 ;; esac
      return 1 ;;
    handler)
      [ "$1" = s ] && [ ${#2} -le 64 ] || return 1
      case $2 in [a-z0-9]*) ;; *) return 1 ;; esac
      case $2 in *[!a-z0-9._-]*) return 1 ;; esac ;;
    *) return 1 ;;
  esac
}

# bytes_form B64 MAX: the base64 form of SPEC-3 ({"base64": B64} for an
# argument or an environment value whose bytes are not UTF-8): canonical
# padded base64 of at most MAX bytes that hold no NUL and are not valid
# UTF-8. Sets BF_V to the bytes; BF_ERR says why not.
bytes_form() {
  BF_V= BF_ERR=
  case $1 in ''|*[!A-Za-z0-9+/=]*) BF_ERR="not padded base64"; return 1 ;; esac
  [ $((${#1} % 4)) = 0 ] || { BF_ERR="not padded base64"; return 1; }
  BF_V=$(printf '%s' "$1" | base64 -d 2>/dev/null; echo .)
  BF_V=${BF_V%.}
  # Encoding the bytes again gives the same text only for canonical base64
  # of bytes without NUL (the shell drops NUL bytes).
  [ "$(printf '%s' "$BF_V" | base64 -w 0)" = "$1" ] || { BF_ERR="not canonical padded base64 of bytes without NUL"; return 1; }
  [ ${#BF_V} -le "$2" ] || { BF_ERR="over $2 bytes"; return 1; }
  if j_utf8_ok "$BF_V"; then BF_ERR="valid UTF-8, which a record holds as a string"; return 1; fi
  return 0
}

# _rr_bytes_member KIND NAME VALUE: a member of a {"base64": ...} element.
_rr_bytes_member() {
  case $2 in
    base64) if [ "$1" = s ]; then _rr_b64=$3; else _rr_bbad="base64 must be a string"; fi ;;
    *) _rr_bbad="the base64 form has the one member base64" ;;
  esac
}

# _rr_bytes_end MAX: the {"base64": ...} element closed: its bytes in BF_V.
_rr_bytes_end() {
  if [ -n "$_rr_bbad" ]; then _rr_bad "$_rr_bbad (SPEC-3)"; return 1; fi
  if [ -z "${_rr_b64+set}" ]; then _rr_bad "an object without base64 (SPEC-3)"; return 1; fi
  bytes_form "$_rr_b64" "$1" || { _rr_bad "base64 form: $BF_ERR (SPEC-3)"; return 1; }
}

# _rr_sub KIND K VALUE: a member K of the small object being read (_rr_so is
# its type, _rr_sp the prefix its values are stored under).
_rr_sub() {
  case $1 in
    E) return 0 ;;
    O|A) return 0 ;;
  esac
  _rr_sn=$((_rr_sn + 1))
  if ! _rr_sub_type "$_rr_so" "$2"; then
    case $2 in
      x-*) ;;
      *) _rr_unknown="$_rr_unknown $_rr_k1.$2" ;;
    esac
    return 0
  fi
  case $1 in o|a) _rr_bad "$2 has the wrong type"; return 0 ;; esac
  _rr_sseen="$_rr_sseen$2|"
  if _rr_scalar "$1" "$3" "$_rr_st"; then
    eval "${_rr_sp}_$2=\$_rr_v"
  else
    _rr_bad "invalid $2"
  fi
}

# _rr_sub_end: the small object closed: required members, size, rules.
_rr_sub_end() {
  _rr_sub_required "$_rr_so"
  for _rr_m in $_rr_sreq; do
    case $_rr_sseen in *"|$_rr_m|"*) ;; *) _rr_bad "missing $_rr_m" ;; esac
  done
  [ "$_rr_sn" -le 32 ] || _rr_bad "more than 32 members"
  if [ "$_rr_so" = status ]; then
    eval "_rr_x=\${${_rr_sp}_exit} _rr_y=\${${_rr_sp}_signal}"
    if [ -n "$_rr_x" ] && [ -n "$_rr_y" ]; then _rr_bad "both exit and signal"; fi
    if [ -z "$_rr_x" ] && [ -z "$_rr_y" ]; then _rr_bad "neither exit nor signal"; fi
  fi
}

# The walker callback.
_rr_cb() {
  case $2 in
    1) _rr_top "$@" ;;
    2) _rr_d2 "$@" ;;
    3) _rr_d3 "$@" ;;
  esac
  return 0
}

_rr_top() {
  _rr_k1=$3
  case $1 in
    E)
      [ "$_rr_t1" = result ] && [ "${5#* }" -gt 262144 ] && _rr_bad "more than 262144 bytes"
      return 0 ;;
    O|A) _rr_end "$1" "$5"; return 0 ;;
  esac
  _rr_n1=$((_rr_n1 + 1))
  if ! _rr_ftype "$_rr_type" "$3"; then
    case $3 in
      x-*) ;;
      *) _rr_unknown="$_rr_unknown $3" ;;
    esac
    _rr_t1=skip
    return 0
  fi
  _rr_seen="$_rr_seen$3|"
  _rr_t1=$_rr_t
  case $_rr_t in
    ident|group|status|output|stdin)
      if [ "$1" = z ] && [ "$_rr_t" != ident ]; then
        eval "R_$3="
        _rr_t1=skip
        return 0
      fi
      [ "$1" = o ] || { _rr_bad "must be an object"; _rr_t1=skip; return 0; }
      eval "R_$3=object"
      _rr_so=$_rr_t _rr_sp=R_$3 _rr_sseen='|' _rr_sn=0
      return 0 ;;
    argv|jobs|handlers|after)
      [ "$1" = a ] || { _rr_bad "must be an array"; _rr_t1=skip; return 0; }
      case $_rr_t in
        after) R_afterc=0 ;;
        *) R_argc=0 _rr_handlers='|' ;;
      esac
      return 0 ;;
    env|labels)
      [ "$1" = o ] || { _rr_bad "must be an object"; _rr_t1=skip; return 0; }
      [ "$_rr_t" = env ] && R_envc=0
      return 0 ;;
    any|result) return 0 ;;
  esac
  case $1 in o|a) _rr_bad "has the wrong type"; _rr_t1=skip; return 0 ;; esac
  if _rr_scalar "$1" "$5" "$_rr_t"; then
    eval "R_$3=\$_rr_v"
  else
    _rr_bad "invalid value"
  fi
}

_rr_d2() {
  case $_rr_t1 in
    ident|group|status|output|stdin) _rr_sub "$1" "$4" "$5" ;;
    argv)
      case $1 in
        A|E) return 0 ;;
        o) unset _rr_b64; _rr_bbad=; return 0 ;;
        O)
          # SPEC-3: an argument whose bytes are not UTF-8.
          if [ "$4" = 0 ]; then _rr_bmax=4096; else _rr_bmax=131072; fi
          _rr_bytes_end "$_rr_bmax" || return 0
          eval "R_argv_$4=\$BF_V"
          R_argc=$(($4 + 1))
          return 0 ;;
      esac
      [ "$1" = s ] || { _rr_bad "arguments must be strings or the base64 form"; return 0; }
      [ "$JW_NUL" = 0 ] || _rr_bad "NUL in an argument"
      if [ "$4" = 0 ]; then
        [ ${#5} -ge 1 ] && [ ${#5} -le 4096 ] || _rr_bad "argv[0] must be 1 to 4096 bytes"
      else
        [ ${#5} -le 131072 ] || _rr_bad "an argument over 131072 bytes"
      fi
      eval "R_argv_$4=\$5"
      R_argc=$(($4 + 1)) ;;
    env)
      case $1 in
        A|E) return 0 ;;
        o) unset _rr_b64; _rr_bbad=; return 0 ;;
      esac
      [ "$1" = s ] || [ "$1" = O ] || { _rr_bad "values must be strings or the base64 form"; return 0; }
      case $4 in
        FSJOB_*) _rr_bad "names must not start with FSJOB_" ;;
        [A-Za-z_]*) ;;
        *) _rr_bad "invalid variable name" ;;
      esac
      case $4 in *[!A-Za-z0-9_]*) _rr_bad "invalid variable name" ;; esac
      [ ${#4} -le 128 ] || _rr_bad "variable name too long"
      if [ "$1" = O ]; then
        # SPEC-3: a value whose bytes are not UTF-8.
        _rr_bytes_end 32768 || return 0
        eval "R_envk_$R_envc=\$4 R_envv_$R_envc=\$BF_V"
        R_envc=$((R_envc + 1))
        return 0
      fi
      [ "$JW_NUL" = 0 ] || _rr_bad "NUL in a value"
      [ ${#5} -le 32768 ] || _rr_bad "a value over 32768 bytes"
      eval "R_envk_$R_envc=\$4 R_envv_$R_envc=\$5"
      R_envc=$((R_envc + 1)) ;;
    labels)
      case $1 in O|A|E) return 0 ;; esac
      [ "$1" = s ] && [ ${#5} -le 256 ] || _rr_bad "label values are strings of at most 256 bytes"
      case $4 in [a-z0-9]*) ;; *) _rr_bad "invalid label name" ;; esac
      case $4 in *[!a-z0-9._/-]*) _rr_bad "invalid label name" ;; esac
      [ ${#4} -le 64 ] || _rr_bad "label name too long" ;;
    jobs)
      case $1 in
        o) _rr_so=jobs _rr_sp=_rr_job _rr_sseen='|' _rr_sn=0 ;;
        O) _rr_sub_end ;;
        *) _rr_bad "jobs are objects" ;;
      esac ;;
    after)
      # AFTER-1: each dependency {job_id, when}, kept as R_after_job_<i>, R_after_when_<i>.
      case $1 in
        o) _rr_so=dep _rr_sp=_rr_dep _rr_sseen='|' _rr_sn=0 _rr_dep_job_id= _rr_dep_when= ;;
        O)
          _rr_sub_end
          eval "R_after_job_$R_afterc=\$_rr_dep_job_id R_after_when_$R_afterc=\$_rr_dep_when"
          R_afterc=$((R_afterc + 1)) ;;
        *) _rr_bad "dependencies are objects" ;;
      esac ;;
    handlers)
      case $1 in A|O|E) return 0 ;; esac
      _rr_scalar "$1" "$5" handler || { _rr_bad "invalid handler name"; return 0; }
      case $_rr_handlers in *"|$5|"*) _rr_bad "handler $5 listed twice" ;; esac
      _rr_handlers="$_rr_handlers$5|" ;;
  esac
}

_rr_d3() {
  case $_rr_t1 in
    jobs|after) _rr_sub "$1" "$JW_K3" "$5" ;;
    argv|env) _rr_bytes_member "$1" "$JW_K3" "$5" ;;
  esac
  return 0
}

# _rr_end O|A COUNT: a record member that is an object or array closed.
_rr_end() {
  case $_rr_t1 in
    ident|group|status|output|stdin) _rr_sub_end ;;
    argv) [ "$2" -ge 1 ] && [ "$2" -le 4096 ] || _rr_bad "1 to 4096 arguments" ;;
    env) [ "$2" -le 256 ] || _rr_bad "at most 256 variables" ;;
    labels) [ "$2" -le 64 ] || _rr_bad "at most 64 labels" ;;
    jobs) [ "$2" -le 1024 ] || _rr_bad "at most 1024 jobs" ;;
    after) [ "$2" -ge 1 ] && [ "$2" -le 256 ] || _rr_bad "1 to 256 dependencies (AFTER-1)" ;;
    handlers) [ "$2" -le 256 ] || _rr_bad "at most 256 handlers" ;;
  esac
  [ "$_rr_t1" = result ] || _rr_t1=skip
}

# _rr_version: VER-1 on R_fsjob; sets _rr_minor.
_rr_version() {
  case $R_fsjob in
    1.0) _rr_minor=0; return 0 ;;
    1.1) _rr_minor=1; return 0 ;;
    1.2) _rr_minor=2; return 0 ;;
    1.[1-9]|1.[1-9][0-9]|1.[1-9][0-9][0-9]|1.[1-9][0-9][0-9][0-9]|1.[1-9][0-9][0-9][0-9][0-9]|1.[1-9][0-9][0-9][0-9][0-9][0-9])
      _rr_minor=${R_fsjob#1.}; return 0 ;;
  esac
  return 1
}

rec_read() { # PATH TYPE [JOB_ID [GEN [EXTRA]]]
  REC_ERR= REC_REASON=invalid_spec
  if ! fs_read_line "$1" "$RECORD_MAX"; then
    REC_ERR=$FS_WHY
    return 1
  fi
  _rr_type=$2 _rr_seen='|' _rr_unknown= _rr_err= _rr_t1=skip _rr_k1= _rr_n1=0
  # The optional spec members (SPEC-2): absent means head, null, none, false and 1.
  [ "$2" = spec ] && S_ID= R_output_keep= R_not_before_ms= R_afterc=0 R_hold= R_lane_slots=
  [ "$2" = hold ] && R_slot=
  R_fsjob= R_type= R_fsjob_ok=0
  JW_INTONLY=1
  if ! jw_walk "$FS_LINE" _rr_cb; then
    JW_INTONLY=
    REC_ERR="not a record in compact form: $JW_ERR (REC-1)"
    return 1
  fi
  JW_INTONLY=
  case $_rr_seen in
    *'|fsjob|'*) ;;
    *) R_fsjob= ;;
  esac
  if ! _rr_version; then
    REC_ERR="unsupported version '$R_fsjob' (VER-1)"
    REC_REASON=unsupported_version
    return 1
  fi
  if [ "$R_type" != "$2" ]; then
    REC_ERR="type '$R_type' stored as a $2 record (REC-3)"
    return 1
  fi
  # The pause record is new in 1.1 (spec/records.md): its schema refuses "fsjob": "1.0".
  if [ "$2" = pause ] && [ "$_rr_minor" -lt 1 ]; then
    REC_ERR="a pause record says fsjob 1.0, but the pause record is new in 1.1 (REC-5)"
    return 1
  fi
  # The release record and the members 1.2 adds are refused in records of 1.1 and 1.0 (VER-6).
  if [ "$_rr_minor" -lt 2 ]; then
    case $2.$_rr_seen in
      release.*) REC_ERR="a release record says fsjob $R_fsjob, but the release record is new in 1.2 (REC-5)"; return 1 ;;
      spec.*'|after|'*|spec.*'|hold|'*|spec.*'|lane_slots|'*|hold.*'|slot|'*)
        REC_ERR="a $R_fsjob record with a member 1.2 adds (after, hold, lane_slots, slot) (VER-6)"; return 1 ;;
    esac
  fi
  # VER-2: minors this reader knows (1.0, 1.1, 1.2) are closed to unknown members.
  if [ -n "$_rr_unknown" ] && [ "$_rr_minor" -le 2 ]; then
    REC_ERR="members the schema does not define:$_rr_unknown (VER-2)"
    return 1
  fi
  if [ -n "$_rr_err" ]; then
    REC_ERR="$_rr_err (REC-5)"
    return 1
  fi
  if [ "$_rr_n1" -gt 64 ]; then
    REC_ERR="more than 64 members (REC-5)"
    return 1
  fi
  _rr_required "$2"
  for _rr_m in $_rr_req; do
    case $_rr_seen in
      *"|$_rr_m|"*) ;;
      *) REC_ERR="missing member $_rr_m (REC-5)"; return 1 ;;
    esac
  done
  _rr_rules "$2" || { REC_ERR="$REC_ERR (REC-5)"; return 1; }
  # REC-7: what the file name fixes.
  if [ -n "${3:-}" ]; then
    case $2 in
      spec) [ "$R_id" = "$3" ] || { REC_ERR="id $R_id does not match the job directory (REC-7)"; return 1; } ;;
      claim|exec|state|end|cancel|receipt|release)
        [ "$R_job_id" = "$3" ] || { REC_ERR="job_id $R_job_id does not match the job directory (REC-7)"; return 1; } ;;
    esac
  fi
  if [ -n "${4:-}" ] && [ "$R_gen" != "$4" ]; then
    REC_ERR="gen $R_gen does not match the file name (REC-7)"
    return 1
  fi
  if [ -n "${5:-}" ]; then
    case $2 in
      cancel) [ "$R_force" = "$5" ] || { REC_ERR="force $R_force does not match the file name (REC-7)"; return 1; } ;;
      worker) [ "$R_worker_id" = "$5" ] || { REC_ERR="worker_id does not match the file name (REC-7)"; return 1; } ;;
      hold)
        [ "$R_kind" = "${5%% *}" ] || { REC_ERR="a $R_kind hold under ${5%% *} (REC-7)"; return 1; }
        # LANE-6: slot k above 1 is under the SHA-256 of the key, a line feed and k.
        if [ -n "$R_slot" ]; then sha256_str "$R_key$J_NL$R_slot" || return 1; else sha256_str "$R_key" || return 1; fi
        [ "$SHA" = "${5#* }" ] || { REC_ERR="the key's SHA-256 is not its directory name (REC-7, LANE-6)"; return 1; } ;;
    esac
  fi
  return 0
}

# _rr_rules TYPE: the conditional rules of a schema (if/then, oneOf).
_rr_rules() {
  case $1 in
    spec)
      case $_rr_seen in
        *'|argv|'*)
          case $_rr_seen in
            *'|handler|'*|*'|payload|'*) REC_ERR="argv excludes handler and payload (SPEC-1)"; return 1 ;;
          esac
          R_kind=command ;;
        *'|handler|'*)
          case $_rr_seen in
            *'|payload|'*) ;;
            *) REC_ERR="a handler without a payload member (SPEC-1)"; return 1 ;;
          esac
          R_kind=payload ;;
        *) REC_ERR="neither argv nor handler (SPEC-1)"; return 1 ;;
      esac
      # LANE-5, PREEMPT-2: lane_slots only with a lane, and 1 for a preemptible job.
      if [ -n "$R_lane_slots" ]; then
        [ -n "$R_lane" ] || { REC_ERR="lane_slots without a lane (LANE-5)"; return 1; }
        if [ "$R_preemptible" = true ] && [ "$R_lane_slots" != 1 ]; then REC_ERR="a preemptible job has lane_slots 1 (PREEMPT-2)"; return 1; fi
      fi ;;
    end)
      case $R_reason in
        failed|timed_out|shutdown) _rr_c=true ;;
        *) _rr_c=false ;;
      esac
      [ "$R_counted" = "$_rr_c" ] || { REC_ERR="counted must be $_rr_c for reason $R_reason"; return 1; } ;;
    receipt)
      case $R_outcome in
        succeeded) _rr_ok=0; [ "$R_exit_code" = 0 ] || _rr_ok=1 ;;
        failed) _rr_ok=0; [ "$R_exit_code" -ge 1 ] || _rr_ok=1 ;;
        timed_out|expired) _rr_ok=0; [ "$R_exit_code" = 124 ] || _rr_ok=1 ;;
        lost) _rr_ok=0; [ "$R_exit_code" = 125 ] || _rr_ok=1 ;;
        rejected) _rr_ok=0; [ "$R_exit_code" = 126 ] || _rr_ok=1 ;;
        cancelled) _rr_ok=0; [ "$R_exit_code" = 130 ] || _rr_ok=1 ;;
        force_stopped) _rr_ok=0; [ "$R_exit_code" = 137 ] || _rr_ok=1 ;;
      esac
      [ "$_rr_ok" = 0 ] || { REC_ERR="exit_code $R_exit_code does not fit outcome $R_outcome (EXEC-10)"; return 1; }
      case $R_outcome in
        rejected|lost) [ -n "$R_reason" ] || { REC_ERR="outcome $R_outcome needs a reason (RCPT-4)"; return 1; } ;;
        *) [ -z "$R_reason" ] || { REC_ERR="outcome $R_outcome has no reason (RCPT-4)"; return 1; } ;;
      esac ;;
    hold)
      case $R_kind in
        lane) [ -n "$R_gen" ] || { REC_ERR="a lane hold needs a gen"; return 1; } ;;
        dedupe) [ -z "$R_gen" ] || { REC_ERR="a dedupe hold has gen null"; return 1; } ;;
      esac
      if [ -n "$R_slot" ] && [ "$R_kind" != lane ]; then REC_ERR="only a lane hold has a slot (LANE-6)"; return 1; fi ;;
  esac
  return 0
}

# --- builders: each sets REC to the record text (without its line feed) ----

F10='"fsjob":"1.2"'

rec_claim() { # JOB_ID GEN CLAIMED_MS LEASE_MS
  REC="{$F10,\"type\":\"claim\",\"job_id\":\"$1\",\"gen\":$2,\"owner\":$ID_JSON,\"worker_id\":null,\"claimed_ms\":$3,\"lease_ms\":$4}"
}

rec_exec() { # JOB_ID GEN ATTEMPT PGID START RECORDED_MS
  jstr "$ID_BOOT"
  _rb_b=$JS
  jstr "$ID_NS"
  REC="{$F10,\"type\":\"exec\",\"job_id\":\"$1\",\"gen\":$2,\"attempt\":$3,\"group\":{\"pgid\":$4,\"start\":\"$5\",\"boot_id\":$_rb_b,\"pid_ns\":$JS},\"recorded_ms\":$6}"
}

rec_state() { # JOB_ID GEN PHASE HEARTBEAT_MS ATTEMPT|null STDOUT_BYTES STDERR_BYTES
  REC="{$F10,\"type\":\"state\",\"job_id\":\"$1\",\"gen\":$2,\"phase\":\"$3\",\"heartbeat_ms\":$4,\"attempt\":$5,\"stdout_bytes\":$6,\"stderr_bytes\":$7,\"progress\":null}"
}

# status_json EXIT|"" SIGNAL|"": STATUS_JSON
status_json() {
  if [ -n "$1" ]; then _sj_e=$1; else _sj_e=null; fi
  if [ -n "$2" ]; then _sj_s="\"$2\""; else _sj_s=null; fi
  STATUS_JSON="{\"exit\":$_sj_e,\"signal\":$_sj_s}"
}

rec_end() { # JOB_ID GEN REASON COUNTED RETRY_AT_MS STATUS_JSON|null ENDED_MS
  REC="{$F10,\"type\":\"end\",\"job_id\":\"$1\",\"gen\":$2,\"reason\":\"$3\",\"counted\":$4,\"retry_at_ms\":$5,\"status\":$6,\"ended_ms\":$7}"
}

rec_cancel() { # JOB_ID FORCE(true|false) REQUESTED_MS [REASON]
  if [ -n "${4:-}" ]; then jstr "$4"; _rb_r=$JS; else _rb_r=null; fi
  REC="{$F10,\"type\":\"cancel\",\"job_id\":\"$1\",\"force\":$2,\"requested_ms\":$3,\"by\":$ID_JSON,\"reason\":$_rb_r}"
}

# output_json GEN BYTES_TOTAL|null BYTES_KEPT TRUNCATED SHA: OUTPUT_JSON
output_json() {
  OUTPUT_JSON="{\"gen\":$1,\"bytes_total\":$2,\"bytes_kept\":$3,\"truncated\":$4,\"sha256\":\"$5\"}"
}

# rec_receipt JOB_ID GEN OUTCOME EXIT_CODE REASON|null MESSAGE|"" ATTEMPTS
#   STATUS_JSON|null STARTED_MS|null FINISHED_MS STDOUT_JSON|null STDERR_JSON|null
rec_receipt() {
  if [ "$5" = null ]; then _rb_r=null; else _rb_r="\"$5\""; fi
  if [ -n "$6" ]; then jstr "$6"; _rb_m=$JS; else _rb_m=null; fi
  REC="{$F10,\"type\":\"receipt\",\"job_id\":\"$1\",\"gen\":$2,\"outcome\":\"$3\",\"exit_code\":$4,\"reason\":$_rb_r,\"message\":$_rb_m,\"attempts\":$7,\"status\":$8,\"started_ms\":$9,\"finished_ms\":${10},\"stdout\":${11},\"stderr\":${12},\"result\":null,\"by\":$ID_JSON}"
}

rec_hold() { # KIND KEY_JSON JOB_ID GEN|null CREATED_MS [SLOT]
  # LANE-6: a hold of slot 1 carries no slot, as a 1.1 lane hold.
  if [ "${6:-1}" -gt 1 ]; then _rb_s=",\"slot\":$6"; else _rb_s=; fi
  REC="{$F10,\"type\":\"hold\",\"kind\":\"$1\",\"key\":$2,\"job_id\":\"$3\",\"gen\":$4,\"owner\":$ID_JSON,\"created_ms\":$5$_rb_s}"
}

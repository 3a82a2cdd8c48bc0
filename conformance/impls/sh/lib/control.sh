# control.sh - cancel (spec/control.md) and one-shot recovery (spec/recovery-and-gc.md).

# cmd_cancel FORCE(true|false) ROOT ID...: CANCEL-1, CANCEL-2 for each job
# named, as the reference's `fsjob cancel A B C` (each_job).
cmd_cancel() {
  queue_open "$2" || return 1
  _cm_force=$1
  shift 2
  each_job cancel_one "$_cm_force" "$@"
}

# cancel_one ID FORCE(true|false): CANCEL-1, CANCEL-2 for one job of the
# open queue Q; 0 the request stands (or stood already), 1 refused
# (finished, unsafe, not written), 4 no such job.
cancel_one() {
  _cn_jd=$Q/jobs/$1
  if [ -L "$_cn_jd" ]; then log "$_cn_jd: symlink refused (SEC-2)"; return 1; fi
  # HOLD-3: a gated job is cancelled in jobs/<id>.gated/ (GATE-4 finds it there).
  job_place "$1"
  [ "$PLACE" = gated ] && _cn_jd=$Q/jobs/$1.gated
  if [ ! -d "$_cn_jd" ]; then log "$1: no such job in $Q (it was never published there, or it was removed)"; return 4; fi
  id_init || return 1
  job_scan "$_cn_jd"
  if [ "$J_RECEIPT" = 1 ]; then
    log "$1: already finished; a job with a receipt cannot be cancelled (CANCEL-1)"
    return 1
  fi
  if [ "$2" = true ]; then _cn_name=cancel-force.json; else _cn_name=cancel.json; fi
  now_ms
  rec_cancel "$1" "$2" "$NOW_MS"
  pub_link "$_cn_jd" "$_cn_name" "$REC"
  case $? in
    0|1) ;;
    *) log "$PUB_WHY"; return 1 ;;
  esac
  if [ "$PLACE" = gated ]; then
    # GATE-3 allows the gate to open with a cancel entry, durable first.
    pub_flush
    spec_load "$_cn_jd" "$1"
    _cn_p=0
    [ "$S_OK" = 1 ] && _cn_p=$S_prio
    gate_open "$1" "$_cn_p" || { log "$1: cannot open its gate"; return 1; }
    _cn_jd=$Q/jobs/$1
  fi
  # CANCEL-2: nobody owns the job: finish it now.
  job_scan "$_cn_jd"
  if [ "$J_RECEIPT" = 0 ] && [ "$J_OPEN" = 0 ] && [ "$J_G" -lt "$GEN_MAX" ]; then
    if claim_job "$_cn_jd" "$1" $((J_G + 1)); then
      decide cancel "$_cn_jd" "$1" $((J_G + 1))
    fi
  fi
  return 0
}

# temp_gc DIR...: TEMP-1 for the temporary names in each DIR.
temp_gc() {
  now_ms
  _tg_now=$((NOW_MS / 1000))
  for _tg_d do
    [ -d "$_tg_d" ] && [ ! -L "$_tg_d" ] || continue
    for _tg_f in "$_tg_d"/.[!.]* "$_tg_d"/..?*; do
      [ -e "$_tg_f" ] || [ -L "$_tg_f" ] || continue
      _temp_gc_one "$_tg_f"
    done
  done
}

_temp_gc_one() {
  if [ -L "$1" ]; then
    log "$1: symlink left in place (SEC-2)"
    return 0
  fi
  fs_stat "$1" || return 0
  [ $((_tg_now - FS_MTIME)) -gt $((TEMP_MAX_AGE / 1000)) ] || return 0
  rm -rf -- "$1" && log "removed stale temporary $1 (TEMP-1)"
}

# cmd_recover ROOT: RECOV-1 (with end reason released), RECOV-4, READY-4,
# TEMP-1, TEMP-2. Exit status 1 when it left a job alone and reported it
# (MANIFEST-4): UNPROVEN, damaged, a foreign claim whose watch (LEASE-3) a
# one-shot run cannot wait out, GEN_MAX.
cmd_recover() {
  queue_open "$1" || return 1
  id_init || return 1
  _rv_left=0
  ready_rebuild
  for _rv_jd in "$Q"/jobs/*; do
    _rv_id=${_rv_jd##*/}
    [ -e "$_rv_jd" ] || [ -L "$_rv_jd" ] || continue
    if ! is_job_id "$_rv_id"; then
      log "$_rv_jd: foreign entry (LAYOUT-4)"
      continue
    fi
    if [ -L "$_rv_jd" ] || [ ! -d "$_rv_jd" ]; then
      log "$_rv_jd: not a directory, or a symlink (SEC-2)"
      continue
    fi
    job_scan "$_rv_jd"
    [ "$J_RECEIPT" = 0 ] && [ "$J_OPEN" = 1 ] || continue
    WATCH_NEXT=
    claim_verdict "$_rv_jd" "$_rv_id" "$J_G"
    if [ "$OWNER" = unknown ]; then
      log "$_rv_jd: the owner of claim $J_G cannot be judged (yet); left alone (RECOV-1, LEASE-3)"
      _rv_left=1
      continue
    fi
    [ "$OWNER" = dead ] || continue
    if [ "$J_G" -ge "$GEN_MAX" ]; then
      gen_max_finish "$_rv_jd" "$_rv_id" && continue
      log "$_rv_jd: generation $GEN_MAX reached; cannot recover (CLAIM-4)"
      _rv_left=1
      continue
    fi
    orphan_stoppable "$_rv_jd" "$_rv_id" || { _rv_left=1; continue; }
    _rv_g=$((J_G + 1))
    claim_job "$_rv_jd" "$_rv_id" "$_rv_g" || continue
    decide recover "$_rv_jd" "$_rv_id" "$_rv_g"
    log "$_rv_jd: recovered generation $((_rv_g - 1)) as generation $_rv_g: $DECIDED"
  done
  # TEMP-1.
  set -- "$Q" "$Q/ready" "$Q/workers" "$Q/dedupe" "$Q/lanes" "$Q/jobs"
  for _rv_d in "$Q"/jobs/* "$Q"/dedupe/* "$Q"/lanes/*; do
    [ -d "$_rv_d" ] && [ ! -L "$_rv_d" ] && set -- "$@" "$_rv_d"
  done
  temp_gc "$@"
  for _rv_f in "$Q"/tmp/* "$Q"/tmp/.[!.]* "$Q"/tmp/..?*; do
    [ -e "$_rv_f" ] || [ -L "$_rv_f" ] || continue
    # TEMP-2: an entry named after a published job may be that job's own
    # directory under its old name (a power loss, DUR-3): never removed.
    _rv_n=${_rv_f##*/}
    case $_rv_n in .gc-*) _rv_n=${_rv_n#.gc-}; _rv_n=${_rv_n%-*} ;; esac
    if is_job_id "$_rv_n" && { [ -e "$Q/jobs/$_rv_n" ] || [ -L "$Q/jobs/$_rv_n" ]; }; then
      log "$_rv_f: named after the published job $_rv_n; left alone (TEMP-2)"
      continue
    fi
    _temp_gc_one "$_rv_f"
  done
  # Stale worker registrations (WORKER-1).
  for _rv_f in "$Q"/workers/*.json; do
    _rv_w=${_rv_f##*/}
    is_hex 16 "${_rv_w%.json}" || continue
    if ! rec_read "$_rv_f" worker; then
      log "$_rv_f: invalid registration: $REC_ERR"
      continue
    fi
    owner_verdict "$R_owner_boot_id" "$R_owner_pid_ns" "$R_owner_pid" "$R_owner_start" "$R_heartbeat_ms" "$R_lease_ms"
    [ "$OWNER" = dead ] && rm_entry "$_rv_f"
  done
  [ "$_rv_left" = 0 ]
}

# cmd_check_record TYPE FILE [NAME]: check FILE as a TYPE record stored under
# NAME (a path relative to a queue root, LAYOUT-5), as REC-4 orders it. For
# the conformance vectors (conformance/vectors/README.md); prints "valid" or
# the reason, exits 0 or 1.
cmd_check_record() {
  Q_UID=$(id -u)
  _ck_type=$1 _ck_id= _ck_gen= _ck_extra=
  case $3 in
    '') ;;
    jobs/*/*)
      _ck_id=${3#jobs/}
      _ck_id=${_ck_id%%/*}
      _ck_id=${_ck_id%.gated}
      _ck_n=${3##*/}
      case $_ck_n in
        spec.json) _ck_type=spec ;;
        release.json) _ck_type=release ;;
        receipt.json) _ck_type=receipt ;;
        cancel.json) _ck_type=cancel _ck_extra=false ;;
        cancel-force.json) _ck_type=cancel _ck_extra=true ;;
        claim.*.json|exec.*.json|state.*.json|end.*.json)
          _ck_type=${_ck_n%%.*}
          _ck_gen=${_ck_n#*.}
          _ck_gen=${_ck_gen%.json}
          is_gen "$_ck_gen" || { echo "invalid: ${3}: not a generation (LAYOUT-5)"; return 1; } ;;
        *) echo "invalid: ${3}: unknown name (LAYOUT-6)"; return 1 ;;
      esac ;;
    dedupe/*/*.json|lanes/*/*.json)
      _ck_type=hold
      _ck_h=${3#*/}
      _ck_h=${_ck_h%%/*}
      case $3 in dedupe/*) _ck_extra="dedupe $_ck_h" ;; *) _ck_extra="lane $_ck_h" ;; esac ;;
    workers/*.json)
      _ck_type=worker
      _ck_extra=${3#workers/}
      _ck_extra=${_ck_extra%.json} ;;
    fsjob.json) _ck_type=queue ;;
  esac
  if rec_read "$2" "$_ck_type" "$_ck_id" "$_ck_gen" "$_ck_extra"; then
    echo valid
    return 0
  fi
  echo "invalid: $REC_ERR"
  return 1
}

# cmd_check_request FILE: check a request (REQ-1); prints "valid" or why.
cmd_check_request() {
  if request_read "$1"; then
    echo valid
    return 0
  fi
  echo "invalid: $RQ_ERR"
  return 1
}

# cmd_wait ROOT ID [TIMEOUT_S]: wait for the job's receipt, read it as REC-4
# says, print "ID OUTCOME (exit code N)" and exit with the job's exit code
# (EXEC-10), as `fsjob wait` does; 75 when TIMEOUT_S seconds pass first,
# 4 when there is no such job (src/cli/exit.ts).
# The wait is bounded on /proc/uptime, not the wall clock (a clock step must
# neither end it early nor stretch it).
cmd_wait() {
  queue_open "$1" || return 1
  if ! is_job_id "$2"; then
    log "$2: not a job id (LAYOUT-4)"
    return 2
  fi
  case ${3-} in
    '') _wt_end= ;;
    *[!0-9]*) log "$3: the timeout is a whole number of seconds"; return 2 ;;
    *) uptime_cs; _wt_end=$((UP_CS + $3 * 100)) ;;
  esac
  _wt_nap=0.05
  while :; do
    # HOLD-1: a held or gated job waits in jobs/<id>.gated/ (GATE-4) until
    # it is released into jobs/<id>/, where its receipt will be.
    job_place "$2"
    _wt_jd=$Q/jobs/$2
    [ "$PLACE" = gated ] && _wt_jd=$_wt_jd.gated
    if [ -L "$_wt_jd" ]; then log "$_wt_jd: symlink refused (SEC-2)"; return 1; fi
    if [ ! -d "$_wt_jd" ]; then log "$2: no such job in $Q (it was never published there, or it was removed)"; return 4; fi
    # REC-9: the name decides that the job is finished; its content is then read in full.
    if [ -e "$_wt_jd/receipt.json" ] || [ -L "$_wt_jd/receipt.json" ]; then
      if ! rec_read "$_wt_jd/receipt.json" receipt "$2"; then
        log "$_wt_jd/receipt.json: the job is finished but its receipt is invalid: $REC_ERR (SEC-10)"
        return 1
      fi
      # The receipt's message after the outcome, as `fsjob wait` prints it ("...: timed out after 1000 ms").
      _wt_tail=
      if [ -n "${R_message-}" ] && jw_decode "$R_message"; then _wt_tail=": $JW_S"; fi
      printf '%s %s (exit code %s)%s\n' "$2" "$R_outcome" "$R_exit_code" "$_wt_tail"
      return "$R_exit_code"
    fi
    [ -z "$_wt_end" ] || uptime_cs
    if [ -n "$_wt_end" ] && [ "$UP_CS" -ge "$_wt_end" ]; then
      log "$2: no receipt after $3 s"
      return 75
    fi
    sleep "$_wt_nap"
    case $_wt_nap in 0.05) _wt_nap=0.2 ;; 0.2) _wt_nap=1 ;; esac
  done
}

# uptime_cs: UP_CS = /proc/uptime in centiseconds (a monotonic clock read without a fork).
uptime_cs() {
  IFS=' .' read -r _uc_s _uc_c _uc_r < /proc/uptime
  UP_CS=$((_uc_s * 100 + 1$_uc_c - 100))
}

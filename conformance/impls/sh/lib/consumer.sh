# consumer.sh - choosing and claiming (spec/claim.md), deciding (CLAIM-6), running
# (spec/running.md) and finishing jobs; the guardian (WORKER-2).

RECOVER_GRACE=5000
GUARDIAN_GRACE=3000
# An attempt that could not start (EXEC-3) is given back runnable
# START_RETRY_MS later (the reference's delay); START_TRIES such attempts of
# one job, or in a row, end the run (start_failed).
START_RETRY_MS=2000
START_TRIES=3

# spec_load JD ID: read spec.json (REC-4) into S_* (argv and env stay in
# R_argv_*, R_env*). S_OK=1 when valid; otherwise S_ERR and S_REASON.
# A spec never changes, so the last one loaded is kept (S_ID) until another
# spec record is read (rec_read clears S_ID, since R_argv_* are shared).
S_ID=
spec_load() {
  [ "$S_ID" = "$2" ] && return 0
  S_OK=0 S_ERR= S_REASON=invalid_spec S_DIR_OK=1
  # SEC-5, SEC-6 for the job directory, in the same stat(1) as the spec.
  FS_ALSO=$1
  if ! rec_read "$1/spec.json" spec "$2"; then
    FS_ALSO=
    [ "$FS_ALSO_OK" = 0 ] && S_DIR_OK=0
    S_ERR=$REC_ERR S_REASON=$REC_REASON
    return 1
  fi
  FS_ALSO=
  [ "$FS_ALSO_OK" = 0 ] && S_DIR_OK=0
  S_OK=1 S_KIND=$R_kind S_cwd=$R_cwd S_stdin=$R_stdin S_stdin_bytes=${R_stdin_bytes:-}
  S_timeout=$R_timeout_ms S_grace=$R_kill_grace_ms S_deadline=$R_queue_deadline_ms
  S_created=$R_created_ms S_maxatt=$R_max_attempts S_retry=$R_retry_delay_ms
  S_prio=$R_priority S_lane=$R_lane S_preempt=$R_preemptible S_maxout=$R_max_output_bytes
  S_keep=${R_output_keep:-head} S_notbefore=$R_not_before_ms S_slots=${R_lane_slots:-1}
  S_ID=$2
  return 0
}

# --- finishing a generation ------------------------------------------------------

# finish_receipt JD ID G OUTCOME EXIT_CODE REASON|null MESSAGE ATTEMPTS
#   STATUS_JSON|null STARTED|null STDOUT|null STDERR|null
# RCPT-3 and READY-2; the files in FINISH_SYNC (the outputs the receipt
# describes) are fsynced before the link (RCPT-2). Returns 1 when
# superseded (nothing published).
FINISH_SYNC_OUT= FINISH_SYNC_ERR=
finish_receipt() {
  if [ -e "$1/claim.$(($3 + 1)).json" ] || [ -L "$1/claim.$(($3 + 1)).json" ]; then
    log "$1: superseded; generation $3 publishes nothing more (CLAIM-7)"
    return 1
  fi
  _fr_msg=$7
  [ ${#_fr_msg} -le 1024 ] || _fr_msg="(message over 1024 bytes omitted)"
  # finished_ms: never before the start it reports (LEASE-4).
  gen_time_ms "${10}"
  rec_receipt "$2" "$3" "$4" "$5" "$6" "$_fr_msg" "$8" "$9" "${10}" "$NOW_MS" "${11}" "${12}"
  set -- "$1" "$2"
  [ -n "$FINISH_SYNC_OUT" ] && [ -f "$FINISH_SYNC_OUT" ] && [ ! -L "$FINISH_SYNC_OUT" ] && set -- "$@" "$FINISH_SYNC_OUT"
  [ -n "$FINISH_SYNC_ERR" ] && [ -f "$FINISH_SYNC_ERR" ] && [ ! -L "$FINISH_SYNC_ERR" ] && set -- "$@" "$FINISH_SYNC_ERR"
  FINISH_SYNC_OUT= FINISH_SYNC_ERR=
  _fr_jd=$1 _fr_id=$2
  shift 2
  pub_link "$_fr_jd" receipt.json "$REC" "$@"
  case $? in
    0) ready_remove "$_fr_id"; return 0 ;;
    1) log "$_fr_jd: already finished by someone else (RCPT-3)"; ready_remove "$_fr_id"; return 0 ;;
    *) log "$PUB_WHY"; return 2 ;;
  esac
}

# finish_end JD ID G REASON COUNTED RETRY_AT STATUS_JSON|null
# (spec/records.md). RETRY_AT is the caller's NOW_MS plus the retry delay:
# it moves with ended_ms (gen_time_ms, LEASE-4), so the delay stays the same.
finish_end() {
  if [ -e "$1/claim.$(($3 + 1)).json" ] || [ -L "$1/claim.$(($3 + 1)).json" ]; then
    log "$1: superseded; generation $3 publishes nothing more (CLAIM-7)"
    return 1
  fi
  _fe_delay=$(($6 - NOW_MS))
  gen_time_ms
  rec_end "$2" "$3" "$4" "$5" $((NOW_MS + _fe_delay)) "$7" "$NOW_MS"
  pub_link "$1" "end.$3.json" "$REC"
  case $? in
    0) return 0 ;;
    *) log "${PUB_WHY:-$1/end.$3.json exists}"; return 2 ;;
  esac
}

# lost_outputs JD G: OUT_JSON / ERR_JSON describing generation G's files with
# bytes_total null (RECOV-1 step 3); STARTED from its exec record.
lost_outputs() {
  OUT_JSON=null ERR_JSON=null STARTED=null FINISH_SYNC_OUT= FINISH_SYNC_ERR=
  [ "$2" -gt 0 ] || return 0
  FINISH_SYNC_OUT=$1/stdout.$2 FINISH_SYNC_ERR=$1/stderr.$2
  if rec_read "$1/exec.$2.json" exec "" "$2"; then STARTED=$R_recorded_ms; fi
  for _lo_s in stdout stderr; do
    _lo_j=null
    if fs_check_file "$1/$_lo_s.$2" "$OUTPUT_MAX"; then
      if [ "$FS_SIZE" = 0 ]; then SHA=$SHA_EMPTY; else sha256_of "$1/$_lo_s.$2" || SHA=; fi
      if [ -n "$SHA" ]; then
        # Whether bytes were discarded is unknown: true exactly when the file
        # holds the head part of the bound (RCPT-8, EXEC-17): all of it for
        # head, half for head_tail, never for tail (nothing was written yet).
        case ${S_keep:-head} in
          tail) _lo_h=0 ;;
          head_tail) _lo_h=$((${S_maxout:-0} / 2)) ;;
          *) _lo_h=${S_maxout:-0} ;;
        esac
        _lo_t=false
        [ "$_lo_h" -gt 0 ] && [ "$FS_SIZE" = "$_lo_h" ] && _lo_t=true
        output_json "$2" null "$FS_SIZE" "$_lo_t" "$SHA"
        _lo_j=$OUTPUT_JSON
      fi
    fi
    if [ "$_lo_s" = stdout ]; then OUT_JSON=$_lo_j; else ERR_JSON=$_lo_j; fi
  done
}

# --- after the claim (CLAIM-6) -------------------------------------------------------

# decide MODE JD ID G: the owner of claim G decides what happens (CLAIM-6).
# MODE consume runs the job; recover only releases it or finishes it as
# lost (RECOV-1 step 3); cancel finishes it (CANCEL-2).
# DECIDED says what happened: receipt, end, run, start_failed (run, but the
# attempt could not start: given back), superseded, error.
decide() {
  _dc_mode=$1 _dc_jd=$2 _dc_id=$3 _dc_g=$4
  DECIDED=error
  job_scan "$_dc_jd"
  # 0. a superseded owner finished the job meanwhile.
  if [ "$J_RECEIPT" = 1 ]; then
    ready_remove "$_dc_id"
    DECIDED=receipt
    return 0
  fi
  spec_load "$_dc_jd" "$_dc_id"
  job_attempts "$_dc_jd" "$_dc_id"
  # Steps 1 to 5 are the same for every claimer (CLAIM-10): consume, recover
  # and cancel publish the same receipt for the same job.
  # 1. invalid spec.
  if [ "$S_OK" != 1 ]; then
    log "$_dc_jd/spec.json: rejected: $S_ERR"
    finish_receipt "$_dc_jd" "$_dc_id" "$_dc_g" rejected 126 "$S_REASON" "$S_ERR" "$ATTEMPTS" null null null null &&
      DECIDED=receipt
    return 0
  fi
  # 2. cancelled; the request's reason says why (AFTER-3: the dependency that failed).
  if [ "$J_CANCEL" != none ]; then
    _dc_msg="cancelled before it started"
    for _dc_c in cancel-force.json cancel.json; do
      if [ -f "$_dc_jd/$_dc_c" ] && rec_read "$_dc_jd/$_dc_c" cancel "$_dc_id" && [ -n "$R_reason" ]; then
        _dc_msg="$_dc_msg: $R_reason"
        break
      fi
    done
    finish_receipt "$_dc_jd" "$_dc_id" "$_dc_g" cancelled 130 null "$_dc_msg" "$ATTEMPTS" null null null null &&
      DECIDED=receipt
    return 0
  fi
  if [ "$_dc_mode" = cancel ]; then
    DECIDED=none
    return 0
  fi
  # 3. expired.
  now_ms
  if [ -n "$S_deadline" ] && [ -z "$J_EXECS" ] && [ "$NOW_MS" -gt $((S_created + S_deadline)) ]; then
    finish_receipt "$_dc_jd" "$_dc_id" "$_dc_g" expired 124 null "not started within queue_deadline_ms" "$ATTEMPTS" null null null null &&
      DECIDED=receipt
    return 0
  fi
  # 4. the last attempt died with its owner.
  if [ "$ATTEMPTS" -ge "$S_maxatt" ]; then
    lost_outputs "$_dc_jd" "$J_LASTEXEC"
    finish_receipt "$_dc_jd" "$_dc_id" "$_dc_g" lost 125 owner_lost \
      "the last attempt died with its owner" "$ATTEMPTS" null "$STARTED" "$OUT_JSON" "$ERR_JSON" &&
      DECIDED=receipt
    return 0
  fi
  # 5. generation GEN_MAX never runs the job (CLAIM-9).
  if [ "$_dc_g" -ge "$GEN_MAX" ]; then
    finish_receipt "$_dc_jd" "$_dc_id" "$_dc_g" lost 125 claim_limit \
      "generation $GEN_MAX reached: no generation may run the job (CLAIM-9)" "$ATTEMPTS" null null null null &&
      DECIDED=receipt
    return 0
  fi
  # A one-shot recover gives the job back for any consumer (RECOV-1 step 3).
  if [ "$_dc_mode" = recover ]; then
    now_ms
    finish_end "$_dc_jd" "$_dc_id" "$_dc_g" released false "$NOW_MS" null && DECIDED=end
    return 0
  fi
  if [ "$S_KIND" != command ]; then
    # A payload job: this consumer has no handlers; give it back.
    finish_end "$_dc_jd" "$_dc_id" "$_dc_g" released false "$NOW_MS" null && DECIDED=end
    return 0
  fi
  # 6. working directory (EXEC-5) and stdin (EXEC-7).
  _dc_why=
  lexical_path "$S_cwd"
  case $LEX_PATH in
    "$Q_LEX"|"$Q_LEX"/*|"$Q"|"$Q"/*) _dc_why="cwd $S_cwd lies inside the queue as written (EXEC-5)" ;;
  esac
  if [ -n "$_dc_why" ]; then
    :
  elif [ ! -d "$S_cwd" ]; then
    _dc_why="cwd $S_cwd is not a directory"
  elif cd -P -- "$S_cwd" 2>/dev/null; then
    # cd -P leaves the physical path in PWD: no fork for pwd -P.
    _dc_pcwd=$PWD
    cd /
    case $_dc_pcwd in
      "$Q"|"$Q"/*) _dc_why="cwd $S_cwd lies inside the queue (EXEC-5)" ;;
    esac
  else
    _dc_why="cwd $S_cwd cannot be entered"
  fi
  if [ -n "$_dc_why" ]; then
    finish_receipt "$_dc_jd" "$_dc_id" "$_dc_g" rejected 126 cwd_unusable "$_dc_why" "$ATTEMPTS" null null null null &&
      DECIDED=receipt
    return 0
  fi
  if [ "$S_stdin" = object ]; then
    if ! fs_check_file "$_dc_jd/stdin" "$STDIN_MAX"; then
      _dc_why="stdin: $FS_WHY"
    elif [ "$FS_SIZE" != "$S_stdin_bytes" ]; then
      _dc_why="stdin holds $FS_SIZE bytes, the spec says $S_stdin_bytes"
    elif [ "$FS_NLINK" != 1 ]; then
      # SEC-10: another name shares its content, possibly outside the queue.
      _dc_why="stdin has $FS_NLINK hard links: its content may be another file's (SEC-9, SEC-10)"
    fi
    if [ -n "$_dc_why" ]; then
      finish_receipt "$_dc_jd" "$_dc_id" "$_dc_g" rejected 126 stdin_unusable "$_dc_why" "$ATTEMPTS" null null null null &&
        DECIDED=receipt
      return 0
    fi
  fi
  # 7. the lane: the first of its slots 1 to lane_slots that can be taken (LANE-2, LANE-5).
  if [ -n "$S_lane" ]; then
    _dc_k=1 _dc_rc=3
    while [ "$_dc_rc" = 3 ] && [ "$_dc_k" -le "$S_slots" ]; do
      hold_open lane "$S_lane" "$_dc_k"
      _dc_rc=$?
      [ "$_dc_rc" = 0 ] && { hold_take "$_dc_id" "$_dc_g"; _dc_rc=$?; }
      _dc_k=$((_dc_k + 1))
    done
    case $_dc_rc in
      0) ;;
      3)
        now_ms
        finish_end "$_dc_jd" "$_dc_id" "$_dc_g" lane_busy false "$NOW_MS" null && DECIDED=end
        return 0 ;;
      *)
        now_ms
        finish_end "$_dc_jd" "$_dc_id" "$_dc_g" released false "$NOW_MS" null && DECIDED=end
        return 0 ;;
    esac
  fi
  # 8. run.
  _dc_attempt=$((ATTEMPTS + 1))
  run_command "$_dc_jd" "$_dc_id" "$_dc_g" "$_dc_attempt"
  FINISH_SYNC_OUT=$_dc_jd/stdout.$_dc_g FINISH_SYNC_ERR=$_dc_jd/stderr.$_dc_g
  DECIDED=run
  if [ "$RUN_EXEC" = 1 ]; then _dc_used=$_dc_attempt; else _dc_used=$ATTEMPTS; fi
  if [ -n "$RUN_SIGNAL" ]; then
    status_json "" "$RUN_SIGNAL"
  elif [ -n "$RUN_EXIT" ]; then
    status_json "$RUN_EXIT" ""
  else
    STATUS_JSON=null
  fi
  case $RUN_OUTCOME in
    superseded) DECIDED=superseded; return 0 ;;
    fenced)
      # LEASE-6: a counted failure; with no attempt left, lost with its lease.
      if [ "$_dc_used" -lt "$S_maxatt" ]; then
        now_ms
        finish_end "$_dc_jd" "$_dc_id" "$_dc_g" failed true $((NOW_MS + S_retry)) "$STATUS_JSON"
      else
        finish_receipt "$_dc_jd" "$_dc_id" "$_dc_g" lost 125 owner_lost "the attempt was stopped because its lease lapsed (LEASE-6)" \
          "$_dc_used" "$STATUS_JSON" "$RUN_STARTED" "$OUT_JSON" "$ERR_JSON"
      fi
      return 0 ;;
    start_failed)
      # EXEC-3: nothing ran (the exec record was not published): given
      # back, not runnable at once, so a failure that persists is not
      # claimed again and again.
      now_ms
      finish_end "$_dc_jd" "$_dc_id" "$_dc_g" released false $((NOW_MS + START_RETRY_MS)) null
      DECIDED=start_failed
      return 0 ;;
    preempted)
      # PREEMPT-1: not counted, runnable again at once.
      now_ms
      finish_end "$_dc_jd" "$_dc_id" "$_dc_g" preempted false "$NOW_MS" "$STATUS_JSON"
      return 0 ;;
    succeeded)
      finish_receipt "$_dc_jd" "$_dc_id" "$_dc_g" succeeded 0 null "" "$_dc_used" "$STATUS_JSON" "$RUN_STARTED" "$OUT_JSON" "$ERR_JSON" ;;
    cancelled)
      finish_receipt "$_dc_jd" "$_dc_id" "$_dc_g" cancelled 130 null "" "$_dc_used" "$STATUS_JSON" "$RUN_STARTED" "$OUT_JSON" "$ERR_JSON" ;;
    force_stopped)
      finish_receipt "$_dc_jd" "$_dc_id" "$_dc_g" force_stopped 137 null "" "$_dc_used" "$STATUS_JSON" "$RUN_STARTED" "$OUT_JSON" "$ERR_JSON" ;;
    shutdown)
      if [ "$_dc_used" -lt "$S_maxatt" ]; then
        now_ms
        finish_end "$_dc_jd" "$_dc_id" "$_dc_g" shutdown true "$NOW_MS" "$STATUS_JSON"
      else
        finish_receipt "$_dc_jd" "$_dc_id" "$_dc_g" lost 125 shutdown "the consumer stopped the last attempt while shutting down" \
          "$_dc_used" "$STATUS_JSON" "$RUN_STARTED" "$OUT_JSON" "$ERR_JSON"
      fi ;;
    failed|timed_out)
      # RETRY-3.
      if [ "$_dc_used" -lt "$S_maxatt" ]; then
        now_ms
        finish_end "$_dc_jd" "$_dc_id" "$_dc_g" "$RUN_OUTCOME" true $((NOW_MS + S_retry)) "$STATUS_JSON"
      elif [ "$RUN_OUTCOME" = timed_out ]; then
        finish_receipt "$_dc_jd" "$_dc_id" "$_dc_g" timed_out 124 null "timed out after $S_timeout ms" "$_dc_used" "$STATUS_JSON" "$RUN_STARTED" "$OUT_JSON" "$ERR_JSON"
      else
        if [ -n "$RUN_SIGNAL" ]; then
          signal_number "$RUN_SIGNAL"
          _dc_code=$((128 + SIGNUM))
        else
          _dc_code=${RUN_EXIT:-1}
        fi
        [ "$_dc_code" -ge 1 ] && [ "$_dc_code" -le 255 ] || _dc_code=1
        finish_receipt "$_dc_jd" "$_dc_id" "$_dc_g" failed "$_dc_code" null "" "$_dc_used" "$STATUS_JSON" "$RUN_STARTED" "$OUT_JSON" "$ERR_JSON"
      fi ;;
  esac
  return 0
}

# claim_job JD ID G: publish claim.<G>.json (CLAIM-5). 0 claimed, 1 lost
# to another process, 2 failure.
claim_job() {
  now_ms
  mono_ms
  # CLAIM_MONO: the claim's first renewal on the guardian's clock (LEASE-5).
  CLAIM_MS=$NOW_MS CLAIM_LEASE_MS=$LEASE_DEFAULT CLAIM_MONO=$MONO_MS
  # The generation's instants count from claimed_ms (gen_time_ms, LEASE-4).
  GEN_LAST_MS=$NOW_MS GEN_LAST_MONO=$MONO_MS
  [ "$MONO_MS" != 0 ] || GEN_LAST_MS=
  rec_claim "$2" "$3" "$CLAIM_MS" "$CLAIM_LEASE_MS"
  # The directory fsync is done with the next record's first fsync.
  PUB_DEFER=1
  pub_link "$1" "claim.$3.json" "$REC"
  _cj_rc=$?
  PUB_DEFER=
  case $_cj_rc in
    0) return 0 ;;
    1) return 1 ;;
    *) log "$PUB_WHY"; return 2 ;;
  esac
}

# gen_max_finish JD ID: RECOV-4: the dead owner of the open claim GEN_MAX may
# not run the job (CLAIM-9): once RECOV-1 step 1 proves an execution it
# recorded anyway stopped, publish its lost receipt (claim_limit) without a
# claim.
gen_max_finish() {
  job_scan "$1"
  [ "$J_RECEIPT" = 0 ] && [ "$J_G" = "$GEN_MAX" ] && [ "$J_OPEN" = 1 ] || return 1
  orphan_stoppable "$1" "$2" || return 1
  job_attempts "$1" "$2"
  # No claim of ours: no earlier instant of this generation to follow.
  GEN_LAST_MS=
  finish_receipt "$1" "$2" "$GEN_MAX" lost 125 claim_limit \
    "generation $GEN_MAX was claimed by an owner that died before finishing it (RECOV-4)" "$ATTEMPTS" null null null null
}

# orphan_stoppable JD ID: RECOV-1 step 1 for the open claim J_G of a dead
# owner. 0 when its execution is proven stopped (stopping a same-host group
# whose identity matches first); 1 UNPROVEN.
orphan_stoppable() {
  [ "$J_EXEC" = 1 ] || return 0
  exec_group_state "$1" "$2" "$J_G"
  [ "$GROUP" = stopped ] && return 0
  if [ "$GROUP" = running ] && [ "$EXEC_LOCAL" = 1 ]; then
    log "$1: stopping the orphaned group $EXEC_PGID of generation $J_G (RECOV-1)"
    group_stop "$EXEC_PGID" "$EXEC_START" "$RECOVER_GRACE"
    [ "$GROUP" = stopped ] && return 0
  fi
  log "$1: UNPROVEN: the execution of generation $J_G may still run; left alone (RECOV-1)"
  return 1
}

# --- choosing (CLAIM-1, CLAIM-2) -------------------------------------------------

# _cs_skipped ID: the job is on this run's skip list, or was dropped from it.
_cs_skipped() {
  case " $SKIP_IDS $DROP_IDS " in *" $1 "*) return 0 ;; esac
  return 1
}

# start_failed JD ID: an attempt of ID could not start and was given back
# (EXEC-3; START_WHY says why). The run fails (exit 1). Too few descriptors
# do not come back, and neither, likely, does what failed START_TRIES times
# in a row: the run stops, leaving the jobs queued for a later one. A job
# whose attempts failed START_TRIES times between others that started is
# left for a later run.
start_failed() {
  CONSUME_ERRORS=1
  START_ROW=$((START_ROW + 1))
  START_FAILED="$START_FAILED $2"
  _sf_n=0
  for _sf_i in $START_FAILED; do
    [ "$_sf_i" != "$2" ] || _sf_n=$((_sf_n + 1))
  done
  if [ "$START_FATAL" = 1 ]; then
    log "stopping; the jobs stay queued: $START_WHY"
    CONSUME_FAILED=1
  elif [ "$START_ROW" -ge "$START_TRIES" ]; then
    log "stopping; the jobs stay queued: $START_ROW attempts in a row could not start (the last: $START_WHY)"
    CONSUME_FAILED=1
  elif [ "$_sf_n" -ge "$START_TRIES" ]; then
    log "$1: $_sf_n attempts could not start; left for a later run"
    DROP_IDS="$DROP_IDS $2"
  fi
}

# preempt_waiter LANE AFTER_ENTRY: a waiting non-preemptible job of LANE
# exists (PREEMPT-2).
preempt_waiter() {
  for _pw_e in "$Q"/ready/*; do
    _pw_n=${_pw_e##*/}
    case $_pw_n in [0-2][0-9][0-9][0-9]-*) ;; *) continue ;; esac
    _pw_id=${_pw_n#????-}
    is_job_id "$_pw_id" || continue
    [ "$_pw_id" = "$1" ] && continue
    _pw_jd=$Q/jobs/$_pw_id
    [ -d "$_pw_jd" ] && [ ! -L "$_pw_jd" ] || continue
    job_scan "$_pw_jd"
    [ "$J_RECEIPT" = 0 ] && [ "$J_OPEN" = 0 ] && [ "$J_CANCEL" = none ] || continue
    if [ "$J_G" -gt 0 ] && rec_read "$_pw_jd/end.$J_G.json" end "$_pw_id" "$J_G"; then
      now_ms
      [ "$R_retry_at_ms" -gt "$NOW_MS" ] && continue
    fi
    rec_read "$_pw_jd/spec.json" spec "$_pw_id" || continue
    [ "$R_lane" = "$2" ] && [ "$R_preemptible" = false ] && return 0
  done
  return 1
}

# consume_pass: consider ready entries in order; claim and handle the first
# job this consumer can make progress on. PASS_DID=1 when it handled one;
# PASS_NEXT = the earliest retry_at_ms of a retrying job (or not_before_ms
# of a delayed one) it could run; PASS_PAUSED=1 when the queue is paused.
consume_pass() {
  PASS_DID=0 PASS_NEXT= WATCH_NEXT= PASS_PAUSED=0
  # PAUSE-1: while an entry named pause.json exists, claim nothing.
  if [ -e "$Q/pause.json" ] || [ -L "$Q/pause.json" ]; then
    log "$Q is paused (pause.json); claiming nothing (PAUSE-1)"
    PASS_PAUSED=1
    return 0
  fi
  for _cp_e in "$Q"/ready/*; do
    [ -z "$SHUTDOWN_AT" ] || return 0
    _cp_n=${_cp_e##*/}
    case $_cp_n in [0-2][0-9][0-9][0-9]-*) ;; *) continue ;; esac
    _cp_id=${_cp_n#????-}
    is_job_id "$_cp_id" || continue
    _cs_skipped "$_cp_id" && continue
    _cp_jd=$Q/jobs/$_cp_id
    if [ -L "$_cp_jd" ]; then
      log "$_cp_jd: symlink refused (SEC-2)"
      SKIP_IDS="$SKIP_IDS $_cp_id"
      continue
    fi
    # No jobs/<id>: a gated job is looked at, and opened when it may be (GATE-2, GATE-3, AFTER-4).
    [ -d "$_cp_jd" ] || gate_look "$_cp_id" || :
    [ -d "$_cp_jd" ] || continue
    job_scan "$_cp_jd"
    _cp_top=$J_G _cp_exec=$J_EXEC
    if [ "$J_RECEIPT" = 1 ]; then
      ready_remove "$_cp_id"
      continue
    fi
    if [ "$J_G" -ge "$GEN_MAX" ]; then
      # CLAIM-4: no claim past GEN_MAX. An open claim GEN_MAX of a dead owner
      # is finished without a claim (RECOV-4); anything else is reported.
      if [ "$J_OPEN" = 1 ]; then
        claim_verdict "$_cp_jd" "$_cp_id" "$J_G"
        if [ "$OWNER" = dead ] && gen_max_finish "$_cp_jd" "$_cp_id"; then PASS_DID=1; return 0; fi
      fi
      log "$_cp_jd: generation $GEN_MAX reached; not claimed (CLAIM-4)"
      SKIP_IDS="$SKIP_IDS $_cp_id"
      continue
    fi
    _cp_orphan=0
    if [ "$J_OPEN" = 1 ]; then
      claim_verdict "$_cp_jd" "$_cp_id" "$J_G"
      [ "$OWNER" = dead ] || continue
      _cp_orphan=1
    fi
    # The spec says whether this consumer can run the job at all.
    if spec_load "$_cp_jd" "$_cp_id"; then
      [ "$S_KIND" = command ] || continue
    fi
    if [ "$S_DIR_OK" = 0 ]; then
      log "$_cp_jd: $FS_ALSO_WHY; the job is left alone"
      SKIP_IDS="$SKIP_IDS $_cp_id"
      continue
    fi
    now_ms
    _cp_waiting=queued
    if [ "$_cp_orphan" = 0 ] && [ "$J_G" -gt 0 ] && ! rec_read "$_cp_jd/end.$J_G.json" end "$_cp_id" "$J_G"; then
      # SEC-10: the current end record is invalid: the job is damaged, left alone.
      log "$_cp_jd/end.$J_G.json: invalid record: $REC_ERR; the job is left alone (SEC-10)"
      SKIP_IDS="$SKIP_IDS $_cp_id"
      continue
    fi
    if [ "$_cp_orphan" = 0 ]; then
      if [ "$J_CANCEL" != none ]; then
        _cp_waiting=cancelling
      elif [ "$S_OK" = 1 ] && [ -n "$S_deadline" ] && [ -z "$J_EXECS" ] && [ "$NOW_MS" -gt $((S_created + S_deadline)) ]; then
        _cp_waiting=expired
      elif [ "$S_OK" = 1 ] && [ -n "$S_notbefore" ] && [ "$NOW_MS" -lt "$S_notbefore" ]; then
        # DELAY-1: delayed; not claimable before not_before_ms.
        if [ -z "$PASS_NEXT" ] || [ "$S_notbefore" -lt "$PASS_NEXT" ]; then
          PASS_NEXT=$S_notbefore
        fi
        continue
      elif [ "$J_G" -gt 0 ] && rec_read "$_cp_jd/end.$J_G.json" end "$_cp_id" "$J_G" && ! retry_due "$_cp_id.$J_G" "$R_ended_ms" "$R_retry_at_ms"; then
        _cp_due=$((NOW_MS + RETRY_LEFT))
        if [ -z "$PASS_NEXT" ] || [ "$_cp_due" -lt "$PASS_NEXT" ]; then
          PASS_NEXT=$_cp_due
        fi
        continue
      fi
    fi
    if [ "$_cp_waiting" = queued ] && [ "$S_OK" = 1 ] && [ -n "$S_lane" ]; then
      # LANE-4: a held lane means skip the job.
      lane_busy_for "$_cp_id" "$S_lane" && continue
      # PREEMPT-2.
      if [ "$S_preempt" = true ] && preempt_waiter "$_cp_id" "$S_lane"; then
        continue
      fi
    fi
    # The checks above may have scanned other jobs (preempt_waiter runs
    # job_scan on each waiter): restore this job's own scan. Never scan it
    # again here: a claim taken meanwhile would make this consumer claim
    # over it instead of losing the link (CLAIM-5).
    J_G=$_cp_top J_EXEC=$_cp_exec
    if [ "$_cp_orphan" = 1 ]; then
      orphan_stoppable "$_cp_jd" "$_cp_id" || { SKIP_IDS="$SKIP_IDS $_cp_id"; continue; }
    fi
    _cp_g=$((J_G + 1))
    # Someone else may have claimed it meanwhile: a cheap look first.
    if [ -e "$_cp_jd/claim.$_cp_g.json" ] || [ -L "$_cp_jd/claim.$_cp_g.json" ]; then
      PASS_DID=1
      return 0
    fi
    claim_job "$_cp_jd" "$_cp_id" "$_cp_g"
    case $? in
      0) ;;
      1) PASS_DID=1; return 0 ;;
      # Not a lost race (FS-2): the run must not exit 0 as if nothing remained.
      *) CONSUME_ERRORS=1; SKIP_IDS="$SKIP_IDS $_cp_id"; continue ;;
    esac
    guardian_check
    decide consume "$_cp_jd" "$_cp_id" "$_cp_g"
    pub_flush
    case $DECIDED in
      run|receipt) SKIP_IDS= START_ROW=0 ;;
      start_failed) start_failed "$_cp_jd" "$_cp_id" ;;
      *) SKIP_IDS="$SKIP_IDS $_cp_id" ;;
    esac
    PASS_DID=1
    return 0
  done
}

consume_signal() {
  # A monotonic instant (LEASE-4): runner.sh measures the shutdown grace from it.
  mono_ms
  SHUTDOWN_AT=$MONO_MS
}

# cmd_consume ROOT: process runnable jobs until none remains (MANIFEST-1).
cmd_consume() {
  queue_open "$1" || return 1
  id_init || { log "cannot determine this process's identity"; return 1; }
  SHUTDOWN_AT= SKIP_IDS= CONSUME_FAILED=0 CONSUME_ERRORS=0 GUARD_PID= SCRATCH=
  DROP_IDS= START_FAILED= START_ROW=0 START_FATAL=0 START_WHY=
  trap consume_signal TERM INT HUP
  # bash (as sh) notes on stderr each job it reaps that died of a signal
  # this shell does not trap: a trap on KILL, which no process can catch,
  # silences the note for what timeouts and cancels kill (_rc_poll reads
  # the status).
  [ -z "${BASH_VERSION-}" ] || trap : KILL
  scratch_init || { log "cannot create a scratch directory in $Q/tmp"; return 1; }
  guardian_start || log "no guardian: running commands will not be stopped if this process dies"
  ready_rebuild
  while [ -z "$SHUTDOWN_AT" ]; do
    consume_pass
    [ "$CONSUME_FAILED" = 0 ] || break
    [ "$PASS_PAUSED" = 1 ] && break
    [ "$PASS_DID" = 1 ] && continue
    if [ -n "$WATCH_NEXT" ]; then
      # A foreign claim that missed a renewal is being watched (LEASE-3):
      # wait for the watch to decide (MANIFEST-4).
      if [ "$WATCH_NEXT" -ge 1000 ]; then sleep 1; else sleep "0.$(printf '%03d' "$WATCH_NEXT")"; fi
      continue
    fi
    [ -n "$PASS_NEXT" ] || break
    # Wait out a retry delay, a second at a time, unless it is far away: a
    # job retrying in an hour is not one this run can make progress on.
    now_ms
    if [ $((PASS_NEXT - NOW_MS)) -gt "${FSJOB_SH_RETRY_WAIT_MAX_MS:-60000}" ]; then
      log "the next retry is due in $(((PASS_NEXT - NOW_MS) / 1000)) s; not waiting"
      break
    fi
    if [ "$PASS_NEXT" -gt "$NOW_MS" ]; then
      _cc_wait=$((PASS_NEXT - NOW_MS))
      [ "$_cc_wait" -le 1000 ] || _cc_wait=1000
      sleep "$((_cc_wait / 1000)).$(printf '%03d' $((_cc_wait % 1000)))"
    fi
  done
  pub_flush
  guardian_stop
  [ -n "$SCRATCH" ] && rm -rf -- "$SCRATCH"
  [ "$CONSUME_FAILED" = 0 ] && [ "$CONSUME_ERRORS" = 0 ]
}

# scratch_init: a private directory for this process's pipes and counters,
# created once (tmp/ is on the queue's filesystem and is never read as
# records; TEMP-1 removes it if this process dies).
scratch_init() {
  rand_hex16 || return 1
  SCRATCH=$Q/tmp/.fsjob-sh.$$.$RAND
  mkdir -m 700 -- "$SCRATCH" || { SCRATCH=; return 1; }
  mkfifo -m 600 -- "$SCRATCH/a.o" "$SCRATCH/a.e" "$SCRATCH/a.r" "$SCRATCH/g" "$SCRATCH/j" || return 1
  # fd 3: the report pipe (runner.sh).
  command exec 3<>"$SCRATCH/j"
}

# --- the guardian (WORKER-2, LEASE-5) ----------------------------------------------
#
# A separate process in its own process group (so a signal to the consumer's
# group does not reach it) reads lines from a pipe whose write end only the
# consumer holds:
#   + PGID START DEADLINE   a group was recorded; stop it unless renewed by DEADLINE
#   r PGID DEADLINE         its claim was renewed; the new deadline
#   - PGID                  the group is done
# A deadline is in milliseconds of /proc/uptime (mono_ms), which every process
# of the host shares: the start of the claim or renewal plus lease_ms. End of
# file means the consumer is gone: every group still listed is stopped if its
# identity matches (ID-9). A passed deadline means the consumer has not
# renewed for lease_ms (it is stopped, or stuck): that group is stopped the
# same way (the deadman, LEASE-5). dash's read has no timeout, so the pipe is
# polled with dd iflag=nonblock. Set FSJOB_SH_NO_GUARDIAN=1 to run without one
# (tests of RECOV-1).

guardian_start() {
  [ "${FSJOB_SH_NO_GUARDIAN:-}" = 1 ] && return 0
  _gd_f=$SCRATCH/g
  command exec 9<>"$_gd_f" 8<"$_gd_f" || return 1
  timeout 0 "$FSJOB_SH" _guardian "$$" "$ID_START" <&8 >/dev/null 2>&1 3>&- 8<&- 9>&- &
  GUARD_PID=$!
  exec 8<&-
  GUARD_START=
  _gd_i=0
  while [ "$_gd_i" -lt 100 ]; do
    proc_stat "$GUARD_PID" && GUARD_START=$PS_START && break
    _gd_i=$((_gd_i + 1))
  done
  [ -n "$GUARD_START" ]
}

# guardian_check: the guardian still runs; if it does not, stop telling it.
guardian_check() {
  [ -n "$GUARD_PID" ] || return 0
  proc_stat "$GUARD_PID"
  if [ $? = 0 ] && [ "$PS_START" = "$GUARD_START" ] && [ "$PS_STATE" != Z ]; then
    return 0
  fi
  log "the guardian $GUARD_PID is gone"
  GUARD_PID=
  exec 9>&-
}

guardian_tell() {
  [ -n "$GUARD_PID" ] || return 0
  printf '%s\n' "$1" >&9
}

# guardian_stop: close the pipe. Nothing is listed any more (each attempt
# retires its group), so the guardian exits at its next poll without
# signalling anything; waiting for it would only delay this process's exit.
guardian_stop() {
  [ -n "$GUARD_PID" ] || return 0
  exec 9>&-
  GUARD_PID=
}

# _gm_handle LINE: one message of the consumer. guardian_main's list _gm_list
# holds lines "PGID START DEADLINE" (DEADLINE "none" when none was given).
_gm_handle() {
  set -f
  # shellcheck disable=SC2086
  set -- $1
  set +f
  case ${2:-x} in *[!0-9]*) return 0 ;; esac
  case $1 in
    +)
      _gm_forget "$2"
      _gm_d=${4:-none}
      case $_gm_d in *[!0-9]*) _gm_d=none ;; esac
      _gm_list="$_gm_list$2 $3 $_gm_d$J_NL" ;;
    r)
      case ${3:-x} in *[!0-9]*) return 0 ;; esac
      _gm_new=
      while IFS=' ' read -r _gm_p _gm_s _gm_o; do
        [ -n "$_gm_p" ] || continue
        [ "$_gm_p" = "$2" ] && _gm_o=$3
        _gm_new="$_gm_new$_gm_p $_gm_s $_gm_o$J_NL"
      done <<LIST
$_gm_list
LIST
      _gm_list=$_gm_new ;;
    -) _gm_forget "$2" ;;
  esac
}

_gm_forget() { # PGID
  _gm_new=
  while IFS=' ' read -r _gm_p _gm_s _gm_o; do
    [ -n "$_gm_p" ] || continue
    [ "$_gm_p" = "$1" ] || _gm_new="$_gm_new$_gm_p $_gm_s $_gm_o$J_NL"
  done <<LIST
$_gm_list
LIST
  _gm_list=$_gm_new
}

# _gm_stop LIST: stop each "PGID START ..." group of LIST (ID-9), TERM then
# KILL after GUARDIAN_GRACE, never the job's kill_grace_ms (WORKER-2).
_gm_stop() {
  while IFS=' ' read -r _gm_p _gm_s _gm_o; do
    [ -n "$_gm_p" ] || continue
    group_stop "$_gm_p" "$_gm_s" "$GUARDIAN_GRACE"
  done <<LIST
$1
LIST
}

# _gm_deadman: stop (and forget) every group whose deadline has passed (LEASE-5).
_gm_deadman() {
  mono_ms || return 0
  _gm_due= _gm_new=
  while IFS=' ' read -r _gm_p _gm_s _gm_o; do
    [ -n "$_gm_p" ] || continue
    if [ "$_gm_o" != none ] && [ "$_gm_o" -le "$MONO_MS" ]; then
      _gm_due="$_gm_due$_gm_p $_gm_s$J_NL"
    else
      _gm_new="$_gm_new$_gm_p $_gm_s $_gm_o$J_NL"
    fi
  done <<LIST
$_gm_list
LIST
  _gm_list=$_gm_new
  [ -z "$_gm_due" ] || _gm_stop "$_gm_due"
}

guardian_main() { # CONSUMER_PID CONSUMER_START
  trap '' INT HUP
  _gm_list= _gm_pending=
  while :; do
    _gm_chunk=$(dd bs=65536 count=1 iflag=nonblock 2>/dev/null; printf '/%s' "$?")
    _gm_rc=${_gm_chunk##*/}
    _gm_chunk=${_gm_chunk%/*}
    # End of file: the consumer is gone.
    [ "$_gm_rc" = 0 ] && [ -z "$_gm_chunk" ] && break
    _gm_pending=$_gm_pending$_gm_chunk
    while :; do
      case $_gm_pending in *"$J_NL"*) ;; *) break ;; esac
      _gm_handle "${_gm_pending%%"$J_NL"*}"
      _gm_pending=${_gm_pending#*"$J_NL"}
    done
    if [ -n "$_gm_list" ]; then
      _gm_deadman
      sleep 0.5
    else
      sleep 1
    fi
  done
  [ -n "$_gm_list" ] || return 0
  _gm_stop "$_gm_list"
  return 0
}

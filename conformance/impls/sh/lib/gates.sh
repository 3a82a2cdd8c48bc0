# gates.sh - gated jobs (spec/gates.md): dependencies (after) and held jobs.
#
# A gated job lives at jobs/<id>.gated, where no 1.1 reader looks (GATE-1),
# and is never claimed there (GATE-2). Its gate opens by one rename within
# jobs/ to jobs/<id> (GATE-3): with a cancel entry, or once every
# dependency is satisfied (AFTER-1) and the job is released (HOLD-1).

# job_place ID: PLACE = open|gated|missing (GATE-4: jobs/<id>, then
# jobs/<id>.gated, then jobs/<id> again, for a gate only opens).
job_place() {
  PLACE=missing
  for _jp_n in "$1" "$1.gated" "$1"; do
    if [ -e "$Q/jobs/$_jp_n" ] || [ -L "$Q/jobs/$_jp_n" ]; then
      case $_jp_n in *.gated) PLACE=gated ;; *) PLACE=open ;; esac
      return 0
    fi
  done
}

# dep_state ID WHEN: DEP = satisfied|pending|never (AFTER-1), DEP_WHAT why never.
dep_state() {
  DEP=pending DEP_WHAT=
  job_place "$1"
  case $PLACE in
    gated) return 0 ;;
    missing)
      # Retired after it finished (only GC-1 removes a job): its outcome is gone.
      if [ "$2" = finished ]; then DEP=satisfied; else DEP=never DEP_WHAT='no longer exists, so its outcome is unknown'; fi
      return 0 ;;
  esac
  [ -e "$Q/jobs/$1/receipt.json" ] || [ -L "$Q/jobs/$1/receipt.json" ] || return 0
  # REC-9: the entry finishes the job whatever it holds.
  if [ "$2" = finished ]; then DEP=satisfied; return 0; fi
  if ! rec_read "$Q/jobs/$1/receipt.json" receipt "$1"; then
    DEP=never DEP_WHAT='finished, but its receipt is invalid, so it did not provably succeed (SEC-10)'
  elif [ "$R_outcome" = succeeded ]; then
    DEP=satisfied
  else
    DEP=never DEP_WHAT="finished $R_outcome (exit code $R_exit_code)"
  fi
}

# gate_verdict ID: GATE = open|cancel|held|blocked|newer (GATE-3, AFTER-3,
# HOLD-1); GATE_WHY for cancel, GATE_PRIO the spec's priority (0 if invalid).
gate_verdict() {
  _gv_d=$Q/jobs/$1.gated
  GATE=open GATE_WHY= GATE_PRIO=0 _gv_ok=0
  rec_read "$_gv_d/spec.json" spec "$1" && _gv_ok=1 GATE_PRIO=$R_priority
  for _gv_c in cancel.json cancel-force.json; do
    if [ -e "$_gv_d/$_gv_c" ] || [ -L "$_gv_d/$_gv_c" ]; then return 0; fi
  done
  if [ "$_gv_ok" = 0 ]; then
    GATE=cancel GATE_WHY="its spec.json is not a valid record, so its gate cannot be judged (AFTER-3)"
    return 0
  fi
  # A newer minor may add gates this reader cannot see.
  if [ "$_rr_minor" -gt 2 ]; then GATE=newer; return 0; fi
  # rec_read below overwrites R_*: the dependencies are copied first.
  _gv_hold=${R_hold:-false} _gv_n=$R_afterc _gv_i=0
  while [ "$_gv_i" -lt "$_gv_n" ]; do
    eval "_gv_job_$_gv_i=\$R_after_job_$_gv_i _gv_when_$_gv_i=\$R_after_when_$_gv_i"
    _gv_i=$((_gv_i + 1))
  done
  _gv_await= _gv_i=0
  while [ "$_gv_i" -lt "$_gv_n" ]; do
    eval "_gv_job=\$_gv_job_$_gv_i _gv_when=\$_gv_when_$_gv_i"
    dep_state "$_gv_job" "$_gv_when"
    case $DEP in
      never)
        GATE=cancel GATE_WHY="dependency $_gv_job $DEP_WHAT; this job runs only after it $_gv_when (AFTER-3)"
        return 0 ;;
      pending) [ -n "$_gv_await" ] || _gv_await=$_gv_job ;;
    esac
    _gv_i=$((_gv_i + 1))
  done
  if [ "$_gv_hold" = true ] && [ ! -e "$_gv_d/release.json" ] && [ ! -L "$_gv_d/release.json" ]; then
    GATE=held
    return 0
  fi
  [ -z "$_gv_await" ] || GATE=blocked
  return 0
}

# gate_open ID PRIORITY: GATE-3. The ready entry first (a 1.1 consumer may
# have removed it, READY-3), the rename (the commit point), then fsync of
# jobs/ before anything depends on the opening (DUR-4). Returns 0 when the
# job is open, by this call or another's.
gate_open() {
  ready_prefix "$2"
  create_excl "$Q/ready/$P-$1" || :
  if [ ! -e "$Q/jobs/$1" ] && [ ! -L "$Q/jobs/$1" ]; then
    mv -T -- "$Q/jobs/$1.gated" "$Q/jobs/$1" 2>/dev/null || :
  fi
  [ -d "$Q/jobs/$1" ] && [ ! -L "$Q/jobs/$1" ] || return 1
  sync -- "$Q/jobs"
}

# gate_look ID: AFTER-4 for a job whose ready entry names no open directory.
# Returns 0 when the job is open now (claim it as any job), 1 when it stays
# gated (held, blocked, newer) or does not exist.
gate_look() {
  job_place "$1"
  case $PLACE in
    open) return 0 ;;
    missing) return 1 ;;
  esac
  gate_verdict "$1"
  case $GATE in
    held|blocked|newer) return 1 ;;
    cancel)
      # AFTER-3: the cancel record first, so that every claimer, a 1.1 one too, ends the job unrun.
      now_ms
      rec_cancel "$1" false "$NOW_MS" "$GATE_WHY"
      pub_link "$Q/jobs/$1.gated" cancel.json "$REC"
      case $? in
        # Durable before the rename that opens the gate: a power loss must not keep the opening without the cancel.
        0|1) pub_flush; log "$1: cancelled: $GATE_WHY" ;;
        *) job_place "$1"; [ "$PLACE" = open ] && return 0; log "$PUB_WHY"; return 1 ;;
      esac ;;
  esac
  gate_open "$1" "$GATE_PRIO"
}

# cmd_release ROOT ID...: HOLD-2 for each job named, as the reference's
# `fsjob release A B C` (each_job).
cmd_release() {
  queue_open "$1" || return 1
  shift
  each_job release_one - "$@"
}

# release_one ID: HOLD-2 for one job of the open queue Q. 0 released (now or
# before), 1 never held or finished, 4 no such job.
release_one() {
  id_init || return 1
  job_place "$1"
  case $PLACE in
    missing) log "$1: no such job"; return 4 ;;
    open) _rl_d=$Q/jobs/$1 ;;
    gated) _rl_d=$Q/jobs/$1.gated ;;
  esac
  if [ -e "$_rl_d/receipt.json" ] || [ -L "$_rl_d/receipt.json" ]; then
    log "$1: already finished; there is nothing to release (HOLD-2)"
    return 1
  fi
  if ! rec_read "$_rl_d/spec.json" spec "$1"; then
    log "$1: spec.json is invalid ($REC_ERR); whether it is held cannot be read"
    return 1
  fi
  if [ "${R_hold:-false}" != true ]; then
    log "$1: was not enqueued held, so it cannot be released (HOLD-1)"
    return 1
  fi
  [ "$PLACE" = gated ] || return 0
  now_ms
  REC="{$F10,\"type\":\"release\",\"job_id\":\"$1\",\"released_ms\":$NOW_MS,\"by\":$ID_JSON}"
  pub_link "$_rl_d" release.json "$REC"
  case $? in
    0|1) ;;
    *)
      job_place "$1"
      [ "$PLACE" = open ] && return 0
      log "$PUB_WHY"
      return 1 ;;
  esac
  pub_flush
  gate_verdict "$1"
  [ "$GATE" = open ] || return 0
  gate_open "$1" "$GATE_PRIO" || { log "$1: cannot open its gate"; return 1; }
  return 0
}

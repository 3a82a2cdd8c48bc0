# jobs.sh - what a job directory says (STATUS-1, RETRY-1) and the ready
# index (spec/claim.md).

LEASE_DEFAULT=30000

# each_job ACT ARG ID...: `ACT ID ARG` for each job named, as the
# reference's commands of several ids (src/cli/each-job.ts): an id that is
# not one refuses the whole command before anything is written (2); then each
# job is acted on or refused on its own (ACT says why on stderr), so a
# finished or missing one neither hides the jobs done before it nor leaves
# those after it undone. The status is the first refusal's, in the order
# named; an id named twice counts once; one id is what ACT returns.
each_job() {
  _ej_act=$1 _ej_arg=$2
  shift 2
  for _ej_id do
    is_job_id "$_ej_id" || { log "$_ej_id: not a job id (LAYOUT-4)"; return 2; }
  done
  _ej_rc=0 _ej_seen=' '
  for _ej_id do
    case $_ej_seen in *" $_ej_id "*) continue ;; esac
    _ej_seen="$_ej_seen$_ej_id "
    "$_ej_act" "$_ej_id" "$_ej_arg"
    _ej_one=$?
    [ "$_ej_rc" != 0 ] || _ej_rc=$_ej_one
  done
  return "$_ej_rc"
}

# job_scan JD: one listing of a job directory.
#   J_G       highest claim generation (0 if none)
#   J_RECEIPT 1 when receipt.json exists (in any form: the name is taken)
#   J_CANCEL  none, graceful or force
#   J_EXECS   generations with an exec record, ascending, space separated
#   J_LASTEXEC the highest of them (0 if none)
#   J_OPEN    1 when claim J_G exists without end.<J_G>.json
#   J_EXEC    1 when exec.<J_G>.json exists
job_scan() {
  J_G=0 J_RECEIPT=0 J_CANCEL=none J_EXECS= J_LASTEXEC=0 J_OPEN=0 J_EXEC=0
  for _js_f in "$1"/*; do
    _js_n=${_js_f##*/}
    case $_js_n in
      claim.*.json)
        _js_g=${_js_n#claim.}
        _js_g=${_js_g%.json}
        is_gen "$_js_g" && [ "$_js_g" -gt "$J_G" ] && J_G=$_js_g ;;
      exec.*.json)
        _js_g=${_js_n#exec.}
        _js_g=${_js_g%.json}
        if is_gen "$_js_g"; then
          J_EXECS="$J_EXECS $_js_g"
          [ "$_js_g" -gt "$J_LASTEXEC" ] && J_LASTEXEC=$_js_g
        fi ;;
      receipt.json) J_RECEIPT=1 ;;
      cancel.json) [ "$J_CANCEL" = force ] || J_CANCEL=graceful ;;
      cancel-force.json) J_CANCEL=force ;;
    esac
  done
  if [ "$J_G" -gt 0 ]; then
    if [ ! -e "$1/end.$J_G.json" ] && [ ! -L "$1/end.$J_G.json" ]; then
      J_OPEN=1
    fi
    if [ -e "$1/exec.$J_G.json" ] || [ -L "$1/exec.$J_G.json" ]; then
      J_EXEC=1
    fi
  fi
  return 0
}

# job_attempts JD ID: ATTEMPTS = attempts used (RETRY-1): generations with
# an exec record, minus those whose end record says counted false. An end
# record that cannot be read counts the attempt (never run more than
# max_attempts).
job_attempts() {
  ATTEMPTS=0
  for _ja_g in $J_EXECS; do
    if [ -e "$1/end.$_ja_g.json" ] && rec_read "$1/end.$_ja_g.json" end "$2" "$_ja_g" && [ "$R_counted" = false ]; then
      continue
    fi
    ATTEMPTS=$((ATTEMPTS + 1))
  done
}

# claim_verdict JD ID G: OWNER (alive, dead, unknown) of claim G, with
# CLAIM_LEASE and CLAIM_RENEWED (the last renewal, LEASE-3).
claim_verdict() {
  if ! rec_read "$1/claim.$3.json" claim "$2" "$3"; then
    log "$1/claim.$3.json: invalid record: $REC_ERR"
    OWNER=unknown
    return 0
  fi
  CLAIM_LEASE=$R_lease_ms
  CLAIM_RENEWED=$R_claimed_ms
  CLAIM_OWNER_BOOT=$R_owner_boot_id
  CLAIM_OWNER_NS=$R_owner_pid_ns
  if [ "$R_owner_boot_id" != "$ID_BOOT" ] || [ "$R_owner_pid_ns" != "$ID_NS" ]; then
    _cv_boot=$R_owner_boot_id _cv_ns=$R_owner_pid_ns _cv_pid=$R_owner_pid _cv_start=$R_owner_start
    if [ -e "$1/state.$3.json" ] || [ -L "$1/state.$3.json" ]; then
      if ! rec_read "$1/state.$3.json" state "$2" "$3"; then
        # SEC-10: a foreign owner's renewal cannot be read: unknown.
        log "$1/state.$3.json: invalid record: $REC_ERR; the foreign owner is unknown (SEC-10)"
        OWNER=unknown
        return 0
      fi
      [ "$R_heartbeat_ms" -gt "$CLAIM_RENEWED" ] && CLAIM_RENEWED=$R_heartbeat_ms
    fi
    owner_verdict "$_cv_boot" "$_cv_ns" "$_cv_pid" "$_cv_start" "$CLAIM_RENEWED" "$CLAIM_LEASE"
    lease_watch "$2.$3" "$CLAIM_RENEWED" "$CLAIM_LEASE"
  else
    owner_verdict "$R_owner_boot_id" "$R_owner_pid_ns" "$R_owner_pid" "$R_owner_start" "$CLAIM_RENEWED" "$CLAIM_LEASE"
  fi
}

# --- watches (LEASE-3, LEASE-4, RETRY-4) -------------------------------------
#
# A foreign claim is broken only after this process has watched its last
# renewal stay unchanged for lease + GUARDIAN_LIMIT + LEASE_SKEW on its
# monotonic clock (mono_ms); a renewal seen to change means alive. The wall
# clock alone never kills (a clock that runs ahead would break live claims).
# _W_TABLE holds lines "KEY VALUE SINCE CHANGED": the value last read, the
# mono_ms when it was first read, and whether it changed while watched.
_W_TABLE=
# WATCH_NEXT: the shortest watch left (ms) of a claim that missed a renewal
# by the wall clock: consume waits for it (MANIFEST-4). Reset by its caller.
WATCH_NEXT=

# _w_sight KEY VALUE: W_SINCE and W_CHANGED for KEY, recording VALUE.
_w_sight() {
  mono_ms
  _ws_new= W_SINCE= W_CHANGED=0
  while IFS=' ' read -r _ws_k _ws_v _ws_s _ws_c; do
    [ -n "$_ws_k" ] || continue
    if [ "$_ws_k" = "$1" ]; then
      if [ "$_ws_v" = "$2" ]; then W_SINCE=$_ws_s W_CHANGED=$_ws_c; else W_SINCE=$MONO_MS W_CHANGED=1; fi
      continue
    fi
    _ws_new="$_ws_new$_ws_k $_ws_v $_ws_s $_ws_c$J_NL"
  done <<LIST
$_W_TABLE
LIST
  [ -n "$W_SINCE" ] || W_SINCE=$MONO_MS
  _W_TABLE="$_ws_new$1 $2 $W_SINCE $W_CHANGED$J_NL"
}

# lease_watch KEY RENEWAL LEASE: refine OWNER, the wall-clock verdict of a
# foreign owner, by the watch (LEASE-3): dead only once watched long enough.
lease_watch() {
  _w_sight "$1" "$2"
  _lw_grace=$(($3 + GUARDIAN_LIMIT + LEASE_SKEW))
  _lw_unch=$((MONO_MS - W_SINCE))
  if [ "$_lw_unch" -gt "$_lw_grace" ]; then OWNER=dead; return 0; fi
  if [ "$W_CHANGED" = 1 ]; then OWNER=alive; return 0; fi
  now_ms
  if [ $((NOW_MS - $2)) -gt $(($3 / 3 + LEASE_SKEW)) ]; then
    _lw_left=$((_lw_grace + 1 - _lw_unch))
    if [ -z "$WATCH_NEXT" ] || [ "$_lw_left" -lt "$WATCH_NEXT" ]; then WATCH_NEXT=$_lw_left; fi
  fi
  [ "$OWNER" = dead ] && OWNER=unknown
  return 0
}

# retry_due KEY ENDED RETRY_AT: 0 when an end record's retry is due (RETRY-4):
# by the wall clock, or after RETRY_AT - ENDED watched on the monotonic clock.
# RETRY_LEFT = ms until it is due (0 when due), the earlier of the two, so a
# wait for it (MANIFEST-4) is not stretched by a wall clock that jumped back.
retry_due() {
  now_ms
  RETRY_LEFT=0
  [ "$NOW_MS" -ge "$3" ] && return 0
  _w_sight "r.$1" "$3"
  RETRY_LEFT=$(($3 - $2 - (MONO_MS - W_SINCE)))
  [ "$RETRY_LEFT" -le 0 ] && { RETRY_LEFT=0; return 0; }
  [ $(($3 - NOW_MS)) -lt "$RETRY_LEFT" ] && RETRY_LEFT=$(($3 - NOW_MS))
  return 1
}

# exec_group_state JD ID G: GROUP (stopped, running, unknown) of the
# execution recorded by exec.<G>.json (ID-8), with EXEC_PGID and EXEC_START
# when it is a same-host group (EXEC_LOCAL=1).
exec_group_state() {
  EXEC_LOCAL=0 EXEC_PGID= EXEC_START=
  if ! rec_read "$1/exec.$3.json" exec "$2" "$3"; then
    log "$1/exec.$3.json: invalid record: $REC_ERR"
    GROUP=unknown
    return 0
  fi
  if [ -z "$R_group" ]; then
    # A payload execution runs inside its owner: stopped exactly when the
    # owner is dead (PAYLOAD-1).
    claim_verdict "$1" "$2" "$3"
    if [ "$OWNER" = dead ]; then GROUP=stopped; else GROUP=running; fi
    return 0
  fi
  if [ "$R_group_boot_id" = "$ID_BOOT" ] && [ "$R_group_pid_ns" = "$ID_NS" ]; then
    EXEC_LOCAL=1 EXEC_PGID=$R_group_pgid EXEC_START=$R_group_start
    group_state "$EXEC_PGID" "$EXEC_START"
  else
    # Foreign: stopped once its owner's lease has expired (LEASE-3: the owner
    # stopped it, LEASE-2, or its guardian did, WORKER-2).
    claim_verdict "$1" "$2" "$3"
    if [ "$OWNER" = dead ]; then GROUP=stopped; else GROUP=running; fi
  fi
}

# job_gone ID: the job exists under neither name (GATE-4: jobs/<id>, then
# jobs/<id>.gated, then jobs/<id> again, for a gate opens between two looks).
job_gone() {
  for _jg_n in "$1" "$1.gated" "$1"; do
    [ -e "$Q/jobs/$_jg_n" ] || [ -L "$Q/jobs/$_jg_n" ] && return 1
  done
  return 0
}

# ready_remove ID: remove every ready entry of a job (READY-2, READY-3).
ready_remove() {
  for _rm_e in "$Q"/ready/[0-9][0-9][0-9][0-9]-"$1"; do
    if [ -L "$_rm_e" ] || [ -f "$_rm_e" ]; then
      pub_trash "$_rm_e"
    fi
  done
}

# ready_rebuild: give every unfinished job an entry (READY-4), gated jobs
# (jobs/<id>.gated, GATE-1) included, remove entries of finished jobs and old
# entries without a job under either name (READY-3, GATE-4). Ids are matched
# with one sort, so a large queue costs O(n log n).
ready_rebuild() {
  now_ms
  _rb_missing=$(
    for _rb_d in "$Q"/jobs/*; do
      _rb_id=${_rb_d##*/}
      _rb_id=${_rb_id%.gated}
      is_job_id "$_rb_id" || continue
      [ -d "$_rb_d" ] && [ ! -L "$_rb_d" ] || continue
      [ -e "$_rb_d/receipt.json" ] || [ -L "$_rb_d/receipt.json" ] && continue
      printf '%s\n%s\n' "$_rb_id" "$_rb_id"
    done
    for _rb_e in "$Q"/ready/*; do
      _rb_n=${_rb_e##*/}
      case $_rb_n in [0-2][0-9][0-9][0-9]-*) ;; *) continue ;; esac
      is_job_id "${_rb_n#????-}" && printf '%s\n' "${_rb_n#????-}"
    done | sort -u
  )
  _rb_missing=$(printf '%s\n' "$_rb_missing" | sort | uniq -c)
  set -f
  _rb_ifs=$IFS
  IFS=$J_NL
  # shellcheck disable=SC2086
  set -- $_rb_missing
  IFS=$_rb_ifs
  set +f
  for _rb_l do
    set -f
    # shellcheck disable=SC2086
    set -- $_rb_l
    set +f
    [ "$1" = 2 ] || continue
    _rb_id=$2
    _rb_prio=0
    _rb_d=$Q/jobs/$_rb_id
    [ -d "$_rb_d" ] || _rb_d=$_rb_d.gated
    if rec_read "$_rb_d/spec.json" spec "$_rb_id"; then
      _rb_prio=$R_priority
    fi
    ready_prefix "$_rb_prio"
    if create_excl "$Q/ready/$P-$_rb_id"; then
      log "rebuilt the ready entry of $_rb_id (READY-4)"
    fi
  done
  # Entries of finished jobs, and stale entries without a job.
  for _rb_e in "$Q"/ready/*; do
    _rb_n=${_rb_e##*/}
    case $_rb_n in [0-2][0-9][0-9][0-9]-*) ;; *) continue ;; esac
    _rb_id=${_rb_n#????-}
    is_job_id "$_rb_id" || continue
    if [ -e "$Q/jobs/$_rb_id/receipt.json" ]; then
      rm_entry "$_rb_e"
    elif job_gone "$_rb_id"; then
      fs_stat "$_rb_e" && [ $((NOW_MS / 1000 - FS_MTIME)) -gt $((TEMP_MAX_AGE / 1000)) ] && rm_entry "$_rb_e"
    fi
  done
}

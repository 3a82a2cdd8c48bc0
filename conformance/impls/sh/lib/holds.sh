# holds.sh - dedupe holds (spec/producer.md) and lane holds (spec/lanes.md).
#
# A key's holds are numbered files dedupe/<h>/<n>.json or lanes/<h>/<n>.json;
# only the highest one matters, and a new one is published by link so two
# takers can never both get number n + 1.

# DEDUPE-3, DEDUPE-5: how long a staged job's dedupe hold counts.
DEDUPE_STAGE_MAX=60000

# hold_open KIND KEY [SLOT]: HOLD_DIR (created if missing), HOLD_KIND
# (dedupe|lane), HOLD_KEY_JSON, HOLD_SLOT (LANE-6: slot k's directory is the
# SHA-256 of the key, a line feed and k; slot 1's the key's own).
hold_open() {
  hold_dir_of "$@" || return 2
  jstr "$2"
  HOLD_KEY_JSON=$JS
  fs_mkdir "$HOLD_DIR" || { log "$HOLD_DIR: $FS_WHY"; return 2; }
}

# hold_dir_of KIND KEY [SLOT]: HOLD_DIR without creating it.
hold_dir_of() {
  HOLD_SLOT=${3:-1}
  if [ "$HOLD_SLOT" -gt 1 ]; then sha256_str "$2$J_NL$HOLD_SLOT" || return 1; else sha256_str "$2" || return 1; fi
  case $1 in
    dedupe) HOLD_DIR=$Q/dedupe/$SHA ;;
    lane) HOLD_DIR=$Q/lanes/$SHA ;;
  esac
  HOLD_KIND=$1 HOLD_HASH=$SHA
}

# hold_top: HOLD_N = the highest hold number in HOLD_DIR, 0 if none.
hold_top() {
  HOLD_N=0
  for _ht_f in "$HOLD_DIR"/*.json; do
    _ht_n=${_ht_f##*/}
    _ht_n=${_ht_n%.json}
    is_hold_num "$_ht_n" || continue
    [ "$_ht_n" -gt "$HOLD_N" ] && HOLD_N=$_ht_n
  done
  return 0
}

# hold_is_held N: whether hold N of HOLD_DIR is held (DEDUPE-3, LANE-2).
# HOLD_JOB names its job. A hold that cannot be read is reported and counts
# as held: a key or a lane is never taken on a guess (SEC-10).
hold_is_held() {
  HOLD_JOB=
  if ! rec_read "$HOLD_DIR/$1.json" hold "" "" "$HOLD_KIND $HOLD_HASH"; then
    log "$HOLD_DIR/$1.json: invalid hold, counted as held (SEC-10): $REC_ERR"
    return 0
  fi
  HOLD_JOB=$R_job_id
  _hh_gen=$R_gen
  _hh_boot=$R_owner_boot_id _hh_ns=$R_owner_pid_ns _hh_pid=$R_owner_pid
  _hh_start=$R_owner_start _hh_created=$R_created_ms
  _hh_jd=$Q/jobs/$HOLD_JOB
  # A gated job (GATE-1) holds its dedupe key as any published job does.
  [ "$HOLD_KIND" = dedupe ] && [ ! -e "$_hh_jd" ] && [ -d "$_hh_jd.gated" ] && [ ! -L "$_hh_jd.gated" ] && _hh_jd=$_hh_jd.gated
  if [ "$HOLD_KIND" = dedupe ]; then
    if [ -d "$_hh_jd" ] && [ ! -L "$_hh_jd" ]; then
      [ -e "$_hh_jd/receipt.json" ] || [ -L "$_hh_jd/receipt.json" ] && return 1
      return 0
    fi
    if [ -d "$Q/tmp/$HOLD_JOB" ] && [ ! -L "$Q/tmp/$HOLD_JOB" ]; then
      # DEDUPE-3: a staged job's hold counts for DEDUPE_STAGE_MAX (+ skew) on
      # any host, and no longer once a same-host producer is proven dead.
      _hh_staged=held
      now_ms
      if [ "$NOW_MS" -gt $((_hh_created + DEDUPE_STAGE_MAX + LEASE_SKEW)) ]; then
        _hh_staged=
      elif [ "$_hh_boot" = "$ID_BOOT" ] && [ "$_hh_ns" = "$ID_NS" ]; then
        owner_verdict "$_hh_boot" "$_hh_ns" "$_hh_pid" "$_hh_start" "$_hh_created" "$LEASE_DEFAULT"
        [ "$OWNER" = dead ] && _hh_staged=
      fi
      [ -n "$_hh_staged" ] && return 0
    fi
    # Every "not held" comes after a last look at jobs/ (DEDUPE-3): the
    # producer's rename (ENQ-3) may have fallen between the looks, and the
    # producer may have exited since, so its pid is dead.
    [ -d "$_hh_jd" ] || { [ -d "$_hh_jd.gated" ] && [ ! -L "$_hh_jd.gated" ] && _hh_jd=$_hh_jd.gated; }
    if [ -d "$_hh_jd" ] && [ ! -L "$_hh_jd" ]; then
      [ -e "$_hh_jd/receipt.json" ] || [ -L "$_hh_jd/receipt.json" ] && return 1
      return 0
    fi
    return 1
  fi
  # lane
  [ -n "$_hh_gen" ] || return 1
  [ -d "$_hh_jd" ] && [ ! -L "$_hh_jd" ] || return 1
  [ -e "$_hh_jd/receipt.json" ] || [ -L "$_hh_jd/receipt.json" ] && return 1
  _hh_top=0
  for _hh_f in "$_hh_jd"/claim.*.json; do
    _hh_n=${_hh_f##*/}
    _hh_n=${_hh_n#claim.}
    _hh_n=${_hh_n%.json}
    is_gen "$_hh_n" && [ "$_hh_n" -gt "$_hh_top" ] && _hh_top=$_hh_n
  done
  if [ "$_hh_top" = "$_hh_gen" ] && [ ! -e "$_hh_jd/end.$_hh_gen.json" ] && [ ! -L "$_hh_jd/end.$_hh_gen.json" ]; then
    claim_verdict "$_hh_jd" "$HOLD_JOB" "$_hh_gen"
    [ "$OWNER" = dead ] || return 0
  fi
  if [ -e "$_hh_jd/exec.$_hh_gen.json" ] || [ -L "$_hh_jd/exec.$_hh_gen.json" ]; then
    exec_group_state "$_hh_jd" "$HOLD_JOB" "$_hh_gen"
    [ "$GROUP" = stopped ] || return 0
  fi
  return 1
}

# hold_take JOB_ID GEN|null: take the key of HOLD_DIR (DEDUPE-2, LANE-2).
# Returns 0 when this job now holds it (HOLD_N is its number), 3 when the
# key is held by another job, 2 on failure.
hold_take() {
  _ht_try=0
  while [ "$_ht_try" -lt 100 ]; do
    _ht_try=$((_ht_try + 1))
    hold_top
    if [ "$HOLD_N" -gt 0 ] && hold_is_held "$HOLD_N"; then
      if [ "$HOLD_JOB" = "$1" ] && [ "$HOLD_KIND" = lane ] && [ "$_hh_gen" = "$2" ]; then
        return 0
      fi
      return 3
    fi
    now_ms
    rec_hold "$HOLD_KIND" "$HOLD_KEY_JSON" "$1" "$2" "$NOW_MS" "$HOLD_SLOT"
    _ht_next=$((HOLD_N + 1))
    # PUB-5: the hold is durable only if its key directory's entry is: the
    # parent (dedupe/, lanes/) is fsynced in the same sync(1) as the hold's
    # temporary file, before the link (also when another process made it).
    pub_link "$HOLD_DIR" "$_ht_next.json" "$REC" "${HOLD_DIR%/*}"
    case $? in
      0)
        # LANE-2, DEDUPE-2 (1.1): one more listing. A higher hold means others
        # took this number and the next while we were between our look and
        # our link, and the number was removed below the newer hold: the
        # link re-created it and takes nothing.
        hold_top
        [ "$HOLD_N" -gt "$_ht_next" ] && continue
        # Holds below the highest never matter again (LANE-3, GC-2).
        for _ht_f in "$HOLD_DIR"/*.json; do
          _ht_n=${_ht_f##*/}
          _ht_n=${_ht_n%.json}
          is_hold_num "$_ht_n" && [ "$_ht_n" -lt "$_ht_next" ] && [ -f "$_ht_f" ] && [ ! -L "$_ht_f" ] && pub_trash "$_ht_f"
        done
        HOLD_N=$_ht_next
        return 0 ;;
      1) continue ;;
      *) log "$PUB_WHY"; return 2 ;;
    esac
  done
  return 3
}

# lane_busy_for JOB_ID LANE [SLOTS]: every slot 1 to SLOTS (default: the
# loaded spec's lane_slots) of the lane is held by another job (LANE-4 check
# before claiming, LANE-5). Never creates anything.
lane_busy_for() {
  _lb_k=1
  while [ "$_lb_k" -le "${3:-${S_slots:-1}}" ]; do
    slot_busy_for "$1" "$2" "$_lb_k" || return 1
    _lb_k=$((_lb_k + 1))
  done
  return 0
}

slot_busy_for() {
  hold_dir_of lane "$2" "$3" || return 1
  [ -d "$HOLD_DIR" ] && [ ! -L "$HOLD_DIR" ] || return 1
  hold_top
  [ "$HOLD_N" -gt 0 ] || return 1
  hold_is_held "$HOLD_N" || return 1
  [ "$HOLD_JOB" != "$1" ]
}

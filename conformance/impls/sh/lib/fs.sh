# fs.sh - the three writing primitives of spec/writing.md and the checks of spec/security.md.
#
# Every path handled here is built from the queue root Q and names that
# matched their patterns (SEC-7). Nothing is followed through a symlink
# (SEC-2): each path is tested with [ -L ] before use, and the link and
# rename steps use -T so a directory planted under a target name is never
# entered.

RECORD_MAX=1048576
STDIN_MAX=67108864
OUTPUT_MAX=67108864
TEMP_MAX_AGE=3600000

# now_ms: NOW_MS = wall clock in milliseconds since the epoch. date(1) costs
# a fork, so it is read once a minute and the time in between is advanced by
# /proc/uptime (centiseconds, read without a fork). NOW_MS goes only into
# records: a wall clock that jumps shows at the next read, so intervals are
# measured with mono_ms (LEASE-4; runner.sh's deadlines and renewals).
_NOW_UP= _NOW_MS=
now_ms() {
  _nu=
  if { IFS=' .' read -r _nu_s _nu_c _nu_r < /proc/uptime; } 2>/dev/null; then
    case $_nu_s$_nu_c in
      *[!0-9]*|'') ;;
      *) [ ${#_nu_c} = 2 ] && _nu=$((_nu_s * 100 + 1$_nu_c - 100)) ;;
    esac
  fi
  if [ -n "$_nu" ] && [ -n "$_NOW_UP" ] && [ "$_nu" -ge "$_NOW_UP" ] && [ $((_nu - _NOW_UP)) -lt 6000 ]; then
    NOW_MS=$((_NOW_MS + (_nu - _NOW_UP) * 10))
    return 0
  fi
  NOW_MS=$(date +%s%3N)
  _NOW_UP=$_nu _NOW_MS=$NOW_MS
}

# mono_ms: MONO_MS = milliseconds of /proc/uptime, the monotonic clock the
# guardian's deadlines use (LEASE-4, LEASE-5); 0 when it cannot be read.
mono_ms() {
  MONO_MS=0
  { IFS=' .' read -r _mo_s _mo_c _mo_r < /proc/uptime; } 2>/dev/null || return 1
  case $_mo_s$_mo_c in *[!0-9]*|'') return 1 ;; esac
  [ ${#_mo_c} = 2 ] || return 1
  MONO_MS=$((_mo_s * 1000 + (1$_mo_c - 100) * 10))
}

# gen_time_ms [AT_LEAST|null]: NOW_MS = the instant to write for the claimed
# generation: the wall clock, but never before the last instant this owner
# wrote for it (GEN_LAST_MS; claim_job starts it at claimed_ms) plus the
# monotonic time since, nor before AT_LEAST (LEASE-4). A wall clock that went
# back a day mid-run then gives no receipt that finishes a day before it
# started, any more than a stale heartbeat. Every instant a generation
# writes (recorded_ms, heartbeat_ms, ended_ms, finished_ms) comes from here.
GEN_LAST_MS= GEN_LAST_MONO=
gen_time_ms() {
  now_ms
  if mono_ms && [ -n "$GEN_LAST_MS" ] && [ "$NOW_MS" -lt $((GEN_LAST_MS + MONO_MS - GEN_LAST_MONO)) ]; then
    NOW_MS=$((GEN_LAST_MS + MONO_MS - GEN_LAST_MONO))
  fi
  case ${1:-null} in
    null) ;;
    *) [ "$NOW_MS" -ge "$1" ] || NOW_MS=$1 ;;
  esac
  [ "$MONO_MS" = 0 ] || GEN_LAST_MS=$NOW_MS GEN_LAST_MONO=$MONO_MS
}

# log MESSAGE...: a diagnostic line on stderr.
log() {
  printf 'fsjob-sh: %s\n' "$*" >&2
}

# fs_stat PATH: FS_TYPE (regular|directory|symlink|other|missing), FS_SIZE,
# FS_UID, FS_MODE (octal text), FS_MTIME (seconds), FS_NLINK. One stat(1) without -L,
# so a symlink is reported as itself.
FS_FMT='%F|%s|%u|%a|%Y|%h'
fs_stat() {
  if [ ! -e "$1" ] && [ ! -L "$1" ]; then
    FS_TYPE=missing
    return 1
  fi
  _fs_out=$(stat -c "$FS_FMT" -- "$1" 2>/dev/null) || { FS_TYPE=missing; return 1; }
  _fs_parse "$_fs_out"
}

# _fs_parse LINE: one line of stat -c "$FS_FMT" into FS_*.
_fs_parse() {
  _fs_out=$1
  FS_TYPE=${_fs_out%%|*}
  _fs_out=${_fs_out#*|}
  FS_SIZE=${_fs_out%%|*}
  _fs_out=${_fs_out#*|}
  FS_UID=${_fs_out%%|*}
  _fs_out=${_fs_out#*|}
  FS_MODE=${_fs_out%%|*}
  _fs_out=${_fs_out#*|}
  FS_MTIME=${_fs_out%%|*}
  FS_NLINK=${_fs_out#*|}
  case $FS_TYPE in
    'regular file'|'regular empty file') FS_TYPE=regular ;;
    directory) ;;
    'symbolic link') FS_TYPE=symlink ;;
    *) FS_TYPE=other ;;
  esac
  return 0
}

# fs_trusted: the last fs_stat result is owned by the queue owner and not
# writable by group or others (SEC-5, SEC-6).
fs_trusted() {
  [ "$FS_UID" = "$Q_UID" ] || { FS_WHY="owned by uid $FS_UID, not $Q_UID (SEC-6)"; return 1; }
  [ $((0$FS_MODE & 022)) = 0 ] || { FS_WHY="writable by group or others (SEC-5)"; return 1; }
}

# fs_check_file PATH MAX: PATH is a trusted regular file of at most MAX
# bytes. Sets FS_SIZE, or FS_WHY on failure. A FIFO or device is refused
# here, before anything opens it (SEC-3). When FS_ALSO names a directory, the
# same stat(1) also checks it (FS_ALSO_OK=0 and FS_ALSO_WHY when it is a
# symlink or not trusted, SEC-5, SEC-6).
FS_ALSO= FS_ALSO_OK=1
fs_check_file() {
  FS_ALSO_OK=1
  if [ -n "$FS_ALSO" ] && [ -L "$FS_ALSO" ]; then
    FS_ALSO_OK=0 FS_ALSO_WHY="symlink refused (SEC-2)"
  fi
  if [ -L "$1" ]; then FS_WHY="symlink refused (SEC-2)"; return 1; fi
  if [ ! -f "$1" ]; then
    if [ -e "$1" ]; then FS_WHY="not a regular file (SEC-3)"; else FS_WHY="missing"; fi
    return 1
  fi
  if [ -n "$FS_ALSO" ] && [ "$FS_ALSO_OK" = 1 ]; then
    # The directory in the same stat(1) as the file.
    _fs_two=$(stat -c "$FS_FMT" -- "$FS_ALSO" "$1" 2>/dev/null) || { FS_WHY="missing"; return 1; }
    _fs_parse "${_fs_two%%"$J_NL"*}"
    fs_trusted || { FS_ALSO_OK=0 FS_ALSO_WHY="the job directory is $FS_WHY"; }
    _fs_parse "${_fs_two#*"$J_NL"}"
  else
    fs_stat "$1" || { FS_WHY="missing"; return 1; }
  fi
  [ "$FS_TYPE" = regular ] || { FS_WHY="not a regular file (SEC-3)"; return 1; }
  fs_trusted || return 1
  [ "$FS_SIZE" -le "$2" ] || { FS_WHY="$FS_SIZE bytes, over the bound of $2 (SEC-4)"; return 1; }
}

# fs_check_dir PATH: PATH is a trusted directory that is not a symlink.
fs_check_dir() {
  if [ -L "$1" ]; then FS_WHY="symlink refused (SEC-2)"; return 1; fi
  [ -d "$1" ] || { FS_WHY="not a directory"; return 1; }
  fs_stat "$1" || { FS_WHY="missing"; return 1; }
  [ "$FS_TYPE" = directory ] || { FS_WHY="not a directory"; return 1; }
  fs_trusted
}

# fs_read_line PATH MAX: FS_LINE = the single line of a record file (without
# its line feed). Fails unless the file is a trusted regular file of at most
# MAX bytes holding exactly one line that ends with a line feed and no NUL.
fs_read_line() {
  fs_check_file "$1" "$2" || return 1
  FS_LINE=
  if ! IFS= read -r FS_LINE < "$1"; then
    FS_WHY="no terminating line feed (REC-1)"
    return 1
  fi
  [ $((${#FS_LINE} + 1)) = "$FS_SIZE" ] || { FS_WHY="not exactly one line, or NUL bytes (REC-1)"; return 1; }
}

# fs_mkdir PATH: create a directory with mode 0700 (PUB-8), or check an
# existing one (SEC-2, SEC-5, SEC-6).
fs_mkdir() {
  if [ ! -e "$1" ] && [ ! -L "$1" ]; then
    mkdir -m 700 -- "$1" 2>/dev/null || true
  fi
  fs_check_dir "$1" || return 1
  case $FS_MODE in
    700) ;;
    *) [ "$FS_UID" = "$Q_UID" ] && chmod 700 -- "$1" ;;
  esac
}

# _pub_tmp DIR NAME CONTENT: _pl_tmp = a new temporary file ".NAME.<pid>.<n>"
# in DIR holding CONTENT and a line feed, created with O_EXCL (noclobber) so
# nothing that exists is ever opened (PUB-1). No fork: mktemp(1) is the
# fallback.
_PUB_N=0
_pub_tmp() {
  _pl_i=0
  while [ "$_pl_i" -lt 8 ]; do
    _PUB_N=$((_PUB_N + 1))
    _pl_i=$((_pl_i + 1))
    _pl_tmp=$1/.$2.$$.$_PUB_N
    [ ! -e "$_pl_tmp" ] && [ ! -L "$_pl_tmp" ] || continue
    set -C
    if printf '%s\n' "$3" 2>/dev/null > "$_pl_tmp"; then
      set +C
      return 0
    fi
    set +C
  done
  _pl_tmp=$(mktemp -- "$1/.$2.XXXXXXXXXX" 2>/dev/null) || return 1
  printf '%s\n' "$3" >> "$_pl_tmp" && return 0
  rm -f -- "$_pl_tmp"
  return 1
}

# Forks are the cost of a shell implementation, so two steps are batched:
# - PUB_PENDING: with PUB_DEFER=1 the final directory fsync of a link (PUB-5)
#   is left pending and done by the first fsync of the next publication (or
#   pub_flush), which happens before that publication's link: nothing that
#   depends on the record becomes visible before the record is durable.
# - PUB_TRASH: temporary names that were linked, and ready entries of
#   finished jobs, are unlinked together by pub_flush (PUB-6 only removes a
#   second name of a record that is already published and durable).
PUB_PENDING= PUB_TRASH= PUB_DEFER=

# pub_flush: do the pending directory fsync and removals.
pub_flush() {
  if [ -n "$PUB_PENDING" ]; then
    sync -- "$PUB_PENDING" 2>/dev/null
    PUB_PENDING=
  fi
  if [ -n "$PUB_TRASH" ]; then
    set -f
    _pf_ifs=$IFS
    IFS=$J_NL
    # shellcheck disable=SC2086
    rm -f -- $PUB_TRASH 2>/dev/null
    IFS=$_pf_ifs
    set +f
    PUB_TRASH=
  fi
}

# pub_trash PATH: remove PATH (a file) at the next pub_flush.
pub_trash() {
  case $1 in
    *"$J_NL"*) rm -f -- "$1" ;;
    *) PUB_TRASH=$PUB_TRASH$1$J_NL ;;
  esac
}

# pub_link DIR NAME CONTENT [FILE...]: publish CONTENT and a line feed as
# DIR/NAME by link (PUB-1..PUB-6); FILEs are fsynced together with it (RCPT-2).
# Returns 0 when published and durable, 1 when NAME already exists (the step
# was lost to someone else), 2 on another failure.
pub_link() {
  _pub_tmp "$1" "$2" "$3" || { PUB_WHY="cannot create a temporary file in $1"; return 2; }
  _pl_d=$1 _pl_n=$2
  shift 3
  [ -n "$PUB_PENDING" ] && set -- "$@" "$PUB_PENDING"
  if ! sync -- "$_pl_tmp" "$@"; then
    rm -f -- "$_pl_tmp"
    PUB_WHY="cannot fsync $_pl_d/$_pl_n"
    return 2
  fi
  PUB_PENDING=
  set -- "$_pl_d" "$_pl_n"
  if ln -T -- "$_pl_tmp" "$1/$2" 2>/dev/null; then
    :
  # FS-3: a retransmitted link says "exists" for the link it made: the name
  # is ours when it is our temporary file (-ef) or holds exactly its bytes.
  elif [ -f "$1/$2" ] && [ ! -L "$1/$2" ] && { [ "$_pl_tmp" -ef "$1/$2" ] || cmp -s -- "$_pl_tmp" "$1/$2"; }; then
    :
  else
    rm -f -- "$_pl_tmp"
    if [ -e "$1/$2" ] || [ -L "$1/$2" ]; then
      return 1
    fi
    PUB_WHY="cannot link $1/$2 (FS-2: the filesystem may lack hard links)"
    return 2
  fi
  pub_trash "$_pl_tmp"
  if [ "$PUB_DEFER" = 1 ]; then
    PUB_PENDING=$1
  else
    sync -- "$1" || { PUB_WHY="cannot fsync $1"; return 2; }
  fi
  return 0
}

# fs_probe TMP: FS-2's probe of a queue's filesystem in its tmp/: exclusive
# create, link, link onto an existing name (must fail), rename over, fsync.
# Returns 1 with PUB_WHY naming what failed.
fs_probe() {
  _fp=$1/.fsjob-probe-$$
  rm -f -- "$_fp.a" "$_fp.b" "$_fp.c"
  PUB_WHY=
  if ! (set -C; printf 'a\n' > "$_fp.a") 2>/dev/null || ! sync -- "$_fp.a"; then
    PUB_WHY="exclusive creation of a file in $1 failed"
  elif ! ln -T -- "$_fp.a" "$_fp.b" 2>/dev/null; then
    PUB_WHY="link() to a new name in $1 failed: the filesystem has no hard links"
  elif ! (set -C; printf 'c\n' > "$_fp.c") 2>/dev/null; then
    PUB_WHY="exclusive creation of a file in $1 failed"
  elif ln -T -- "$_fp.c" "$_fp.b" 2>/dev/null; then
    PUB_WHY="link() onto an existing name in $1 succeeded: it must fail"
  elif ! mv -fT -- "$_fp.c" "$_fp.b" 2>/dev/null || [ "$(cat -- "$_fp.b")" != c ]; then
    PUB_WHY="rename() over an existing file in $1 failed"
  elif ! sync -- "$1"; then
    PUB_WHY="fsync of the directory $1 failed"
  fi
  rm -f -- "$_fp.a" "$_fp.b" "$_fp.c"
  [ -z "$PUB_WHY" ] || { PUB_WHY="the filesystem cannot hold an fsjob queue: $PUB_WHY (FS-1, FS-2)"; return 1; }
}

# pub_rename DIR NAME CONTENT: publish CONTENT by rename over DIR/NAME
# (PUB-4); only for state.<g>.json and workers/<w>.json.
pub_rename() {
  if [ -L "$1/$2" ] || { [ -e "$1/$2" ] && [ ! -f "$1/$2" ]; }; then
    PUB_WHY="$1/$2 is not a regular file"
    return 2
  fi
  _pub_tmp "$1" "$2" "$3" || { PUB_WHY="cannot create a temporary file in $1"; return 2; }
  if ! sync -- "$_pl_tmp" || ! mv -fT -- "$_pl_tmp" "$1/$2" 2>/dev/null; then
    rm -f -- "$_pl_tmp"
    PUB_WHY="cannot publish $1/$2"
    return 2
  fi
  sync -- "$1" || { PUB_WHY="cannot fsync $1"; return 2; }
}

# create_excl PATH: create an empty file exclusively (PUB-7), without
# following or opening anything that exists.
create_excl() {
  [ ! -e "$1" ] && [ ! -L "$1" ] || return 1
  set -C
  if true 2>/dev/null > "$1"; then
    set +C
    return 0
  fi
  set +C
  return 1
}

# rm_entry PATH: remove a file that is not a directory, never following it.
rm_entry() {
  if [ -L "$1" ] || [ -f "$1" ]; then
    rm -f -- "$1" 2>/dev/null
  fi
}

# sha256_of FILE: SHA = hex digest of a regular file (read on stdin so odd
# names need no escaping).
SHA_EMPTY=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
sha256_of() {
  SHA=$(sha256sum < "$1") || return 1
  SHA=${SHA%% *}
}

# sha256_str TEXT: SHA = hex digest of TEXT's bytes (LAYOUT-8).
sha256_str() {
  SHA=$(printf '%s' "$1" | sha256sum) || return 1
  SHA=${SHA%% *}
}

# rand_hex16: RAND = 16 lowercase hex digits from /dev/urandom.
rand_hex16() {
  RAND=$(od -An -N8 -tx1 /dev/urandom) || return 1
  set -f
  # shellcheck disable=SC2086
  set -- $RAND
  set +f
  RAND=$1$2$3$4$5$6$7$8
  [ ${#RAND} = 16 ]
}

# is_job_id NAME (LAYOUT-4)
is_job_id() {
  case $1 in
    [0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]) return 0 ;;
  esac
  return 1
}

# is_gen TEXT: 1 to GEN_MAX without leading zeros (LAYOUT-5).
GEN_MAX=10000
is_gen() {
  case $1 in
    [1-9]|[1-9][0-9]|[1-9][0-9][0-9]|[1-9][0-9][0-9][0-9]|10000) return 0 ;;
  esac
  return 1
}

# is_hex N TEXT: TEXT is N lowercase hex digits.
is_hex() {
  [ ${#2} = "$1" ] || return 1
  case $2 in *[!0-9a-f]*|'') return 1 ;; esac
  return 0
}

# is_hold_num TEXT: 1 to 2^53-1 without leading zeros (LAYOUT-8).
is_hold_num() {
  case $1 in
    [1-9]|[1-9]*[0-9]) ;;
    *) return 1 ;;
  esac
  case $1 in *[!0-9]*) return 1 ;; esac
  [ ${#1} -le 16 ] && [ "$1" -le 9007199254740991 ]
}

# ready_prefix PRIORITY: P = four digits of 1000 - priority (LAYOUT-7).
ready_prefix() {
  P=$((1000 - $1))
  while [ ${#P} -lt 4 ]; do P=0$P; done
}

# lexical_path PATH: LEX_PATH = the absolute PATH with "." and ".." removed
# and no link resolved (EXEC-5's lexical half).
lexical_path() {
  LEX_PATH=
  _lp_ifs=$IFS
  IFS=/
  set -f
  # shellcheck disable=SC2086
  set -- $1
  set +f
  IFS=$_lp_ifs
  for _lp_c do
    case $_lp_c in
      ''|.) ;;
      ..) LEX_PATH=${LEX_PATH%/*} ;;
      *) LEX_PATH=$LEX_PATH/$_lp_c ;;
    esac
  done
  [ -n "$LEX_PATH" ] || LEX_PATH=/
}

# queue_open ROOT: check the queue root (SEC-1, LAYOUT-2) and its queue
# record; sets Q (physical path), Q_LEX (the root as given, absolute and
# normalised lexically: EXEC-5 judges a cwd against both), Q_UID.
queue_open() {
  case $1 in
    '') log "no queue given"; return 2 ;;
  esac
  if [ -L "$1" ]; then log "$1: the queue root is a symlink (SEC-1)"; return 1; fi
  if [ ! -d "$1" ]; then log "$1: not a directory"; return 1; fi
  Q=$(cd -P -- "$1" && pwd -P) || { log "$1: cannot enter the queue root"; return 1; }
  case $1 in
    /*) lexical_path "$1" ;;
    *) lexical_path "$PWD/$1" ;;
  esac
  Q_LEX=$LEX_PATH
  [ -n "${Q_UID:-}" ] || Q_UID=$(id -u)
  fs_stat "$Q" || { log "$Q: cannot stat"; return 1; }
  fs_trusted || { log "$Q: $FS_WHY (SEC-1)"; return 1; }
  rec_read "$Q/fsjob.json" queue || {
    log "$Q/fsjob.json: not a queue ($REC_ERR) (LAYOUT-2)"
    return 1
  }
  # The six directories in one stat(1).
  for _qo_d in tmp jobs ready dedupe lanes workers; do
    if [ -L "$Q/$_qo_d" ] || [ ! -d "$Q/$_qo_d" ]; then
      log "$Q/$_qo_d: not a directory, or a symlink (LAYOUT-1)"
      return 1
    fi
  done
  _qo_out=$(stat -c '%u %a' -- "$Q/tmp" "$Q/jobs" "$Q/ready" "$Q/dedupe" "$Q/lanes" "$Q/workers") || return 1
  set -f
  # shellcheck disable=SC2086
  set -- $_qo_out
  set +f
  while [ $# -ge 2 ]; do
    FS_UID=$1 FS_MODE=$2
    fs_trusted || { log "$Q: a queue directory is $FS_WHY"; return 1; }
    shift 2
  done
}

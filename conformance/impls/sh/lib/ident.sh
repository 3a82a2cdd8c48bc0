# ident.sh - process identity and liveness (spec/identity.md), Linux /proc only.
#
# Signals are used only to stop groups and to ask the kernel whether a
# process group has members (ID-8); an owner is never judged by kill -0
# (ID-6), because a reused pid answers it.

LEASE_SKEW=5000
# A dead consumer's commands are stopped within this (WORKER-2).
GUARDIAN_LIMIT=10000

# id_init: this process's identity (ID-1..ID-4): ID_HOST, ID_BOOT, ID_NS,
# ID_PID, ID_START, ID_UID and ID_JSON, the identity object of REC-8.
id_init() {
  # uname -n is the UTS node name, which Linux shows here without a fork.
  IFS= read -r ID_HOST < /proc/sys/kernel/hostname 2>/dev/null || ID_HOST=$(uname -n) || return 1
  if [ -n "${Q_UID:-}" ]; then ID_UID=$Q_UID; else ID_UID=$(id -u) || return 1; fi
  IFS= read -r ID_BOOT < /proc/sys/kernel/random/boot_id || return 1
  ID_NS=$(readlink /proc/self/ns/pid) || return 1
  ID_PID=$$
  proc_stat "$ID_PID" || return 1
  ID_START=$PS_START
  jstr "$ID_HOST"
  _id_h=$JS
  jstr "$ID_BOOT"
  _id_b=$JS
  jstr "$ID_NS"
  ID_JSON="{\"host\":$_id_h,\"boot_id\":$_id_b,\"pid_ns\":$JS,\"pid\":$ID_PID,\"start\":\"$ID_START\",\"uid\":$ID_UID}"
}

# proc_stat PID: PS_STATE (field 3), PS_PGRP (field 5), PS_START (field 22).
# Returns 0 when read, 1 when the process does not exist, 2 when the process
# table cannot be read (unknown, ID-6). The command name in parentheses may
# hold anything, so fields are counted after the LAST ')' (ID-2).
proc_stat() {
  case $1 in ''|*[!0-9]*) return 1 ;; esac
  _ps_f=/proc/$1/stat
  _ps_l=
  if ! { IFS= read -r _ps_l < "$_ps_f"; } 2>/dev/null; then
    if [ -e "$_ps_f" ]; then
      return 2
    fi
    [ -r /proc/self/stat ] || return 2
    return 1
  fi
  case $_ps_l in
    *') '*) ;;
    *) _ps_l=$(cat -- "$_ps_f" 2>/dev/null) || return 1 ;;
  esac
  _ps_r=${_ps_l##*) }
  set -f
  # shellcheck disable=SC2086
  set -- $_ps_r
  set +f
  if [ $# -lt 20 ]; then
    _ps_l=$(cat -- "$_ps_f" 2>/dev/null) || return 1
    _ps_r=${_ps_l##*) }
    set -f
    # shellcheck disable=SC2086
    set -- $_ps_r
    set +f
    [ $# -ge 20 ] || return 2
  fi
  PS_STATE=$1 PS_PGRP=$3
  eval "PS_START=\${20}"
  return 0
}

# owner_verdict BOOT NS PID START LAST_RENEWAL_MS LEASE_MS: OWNER = alive,
# dead or unknown (ID-6, ID-7, LEASE-3). Same host: by the process table;
# foreign: by the lease only.
owner_verdict() {
  if [ "$1" = "$ID_BOOT" ] && [ "$2" = "$ID_NS" ]; then
    proc_stat "$3"
    case $? in
      1) OWNER=dead ;;
      2) OWNER=unknown ;;
      *)
        case $PS_STATE in
          Z|X) OWNER=dead ;;
          *)
            if [ "$PS_START" = "$4" ]; then OWNER=alive; else OWNER=dead; fi ;;
        esac ;;
    esac
  else
    # LEASE-3: the owner may have died just before its lease ran out
    # (LEASE-2), and its guardian may take GUARDIAN_LIMIT more to stop its
    # commands.
    now_ms
    if [ "$NOW_MS" -gt $(($5 + $6 + GUARDIAN_LIMIT + LEASE_SKEW)) ]; then OWNER=dead; else OWNER=alive; fi
  fi
}

# group_members PGID: GM_LIVE = members of process group PGID that are not
# zombies, GM_ALL = all members, from one read of /proc/*/stat. The group is
# kept in _gm_group: `set --` below replaces the positional parameters.
group_members() {
  GM_LIVE=0 GM_ALL=0
  _gm_group=$1
  _gm_all=$(cat /proc/[0-9]*/stat 2>/dev/null)
  set -f
  _gm_ifs=$IFS
  IFS=$J_NL
  # shellcheck disable=SC2086
  set -- $_gm_all
  IFS=$_gm_ifs
  set +f
  for _gm_l do
    case $_gm_l in
      *") "*" $_gm_group "*) ;;
      *) continue ;;
    esac
    _gm_r=${_gm_l##*) }
    _gm_s=${_gm_r%% *}
    _gm_r=${_gm_r#* }
    _gm_r=${_gm_r#* }
    [ "${_gm_r%% *}" = "$_gm_group" ] || continue
    GM_ALL=$((GM_ALL + 1))
    case $_gm_s in
      Z|X) ;;
      *) GM_LIVE=$((GM_LIVE + 1)) ;;
    esac
  done
}

# group_gone PGID: the kernel knows no member of group PGID (ESRCH).
group_gone() {
  kill -s 0 -- "-$1" 2>/dev/null && return 1
  # Gone, or not ours to signal (EPERM): only the message tells.
  _gg=$(kill -s 0 -- "-$1" 2>&1) && return 1
  case $_gg in
    *'No such process'*) return 0 ;;
  esac
  return 2
}

# group_state PGID START: GROUP = stopped (proven, ID-8), running (the
# recorded group still has live members) or unknown.
group_state() {
  proc_stat "$1"
  case $? in
    0)
      if [ "$PS_START" != "$2" ]; then
        # A different leader proves the recorded group gone.
        GROUP=stopped
        return 0
      fi
      case $PS_STATE in
        Z|X) ;;
        *) GROUP=running; return 0 ;;
      esac ;;
    2) GROUP=unknown; return 0 ;;
  esac
  group_gone "$1"
  case $? in
    0) GROUP=stopped; return 0 ;;
    2) GROUP=unknown; return 0 ;;
  esac
  # Members remain: stopped only if every one is a zombie in two scans.
  group_members "$1"
  if [ "$GM_LIVE" -gt 0 ]; then GROUP=running; return 0; fi
  sleep 0.05
  group_members "$1"
  if [ "$GM_LIVE" -gt 0 ]; then GROUP=running; else GROUP=stopped; fi
}

# group_signal PGID START SIGNAL: signal the group only when its identity
# matches (ID-9): the leader has the recorded start, or the leader is gone
# and the group still has live members.
group_signal() {
  proc_stat "$1"
  case $? in
    0) [ "$PS_START" = "$2" ] || return 1 ;;
    1)
      group_members "$1"
      [ "$GM_LIVE" -gt 0 ] || return 1 ;;
    *) return 1 ;;
  esac
  kill -s "$3" -- "-$1" 2>/dev/null
}

# group_stop PGID START GRACE_MS: SIGTERM, up to GRACE_MS for the group to
# stop, then SIGKILL; GROUP = the final verdict (stopped, running, unknown).
group_stop() {
  group_state "$1" "$2"
  [ "$GROUP" = running ] || return 0
  group_signal "$1" "$2" TERM
  _gs_waited=0
  while [ "$_gs_waited" -lt "$3" ]; do
    sleep 0.1
    _gs_waited=$((_gs_waited + 100))
    group_state "$1" "$2"
    [ "$GROUP" = running ] || return 0
  done
  group_signal "$1" "$2" KILL
  _gs_waited=0
  while [ "$_gs_waited" -lt 3000 ]; do
    sleep 0.1
    _gs_waited=$((_gs_waited + 100))
    group_state "$1" "$2"
    [ "$GROUP" = running ] || return 0
  done
}

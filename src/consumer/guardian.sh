#!/bin/sh
# The guardian of one fsjob consumer (spec WORKER-2, LEASE-5).
#
# It reads its stdin, a pipe whose write end only the consumer holds:
#   "+ <pgid> <leader-start> <deadline> [<cgroup>]"  a command group the consumer recorded (exec.<g>.json),
#                                         with the cgroup it runs in when the consumer has one (EXEC-16)
#   "r <pgid> <deadline>"                 the claim of that group's job was renewed
#   "- <pgid>"                            that group is finished; forget it
# A deadline is a time in milliseconds of /proc/uptime (a monotonic clock every
# process of the host shares): the start of the claim or of its last renewal,
# plus lease_ms.
#
# Two events stop a group (SIGTERM, then SIGKILL after GUARDIAN_GRACE, 5 s):
# - end of file on the pipe: the consumer is gone (killed, crashed, or done);
#   every group still listed is stopped;
# - a deadline passed: the consumer has not renewed that claim for lease_ms,
#   because it does not run (SIGSTOP, a filesystem call that hangs). Its lease
#   lapses now and a judge on another host may break the claim after
#   lease_ms + GUARDIAN_LIMIT + LEASE_SKEW (LEASE-3): the group must be gone
#   within GUARDIAN_LIMIT (10 s) of the deadline (LEASE-2, LEASE-5).
#
# POSIX sh has no read timeout, so the pipe is polled: dd with
# iflag=nonblock returns at once with what is there, nothing, or end of file.
#
# A group is signalled only while its identity matches (ID-9): its leader pid
# still has the recorded start time, or the leader is gone and the group still
# has members (the kernel keeps a pid number out of reuse while a group of
# that number lives). A reused pid is never signalled.
#
# A group announced with a cgroup (fsjob work --cgroup, EXEC-16): once the
# group is stopped, whatever is left in that cgroup (a process that left the
# group by setsid) is killed too, through cgroup.kill, else SIGKILL to each
# pid of cgroup.procs, and the cgroup directory is removed. A cgroup is this
# consumer's own directory, made for one attempt: its name is its identity.
#
# It ignores INT, TERM and HUP: a Ctrl-C that reaches the consumer's terminal
# group must not take the guardian down with it before it has done its job.
trap '' INT TERM HUP

grace_tenths=${FSJOB_GUARDIAN_GRACE_TENTHS:-50}
NL='
'

start_of() { # <pid> -> prints field 22 of /proc/<pid>/stat, fails if no such process
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  s=${s##*) }
  # shellcheck disable=SC2086
  set -- $s
  [ "$1" = Z ] && return 1
  [ "$1" = X ] && return 1
  eval "printf '%s\n' \"\${20}\""
}

matches() { # <pgid> <start>: the group is still the recorded one
  if now_start=$(start_of "$1"); then
    [ "$now_start" = "$2" ]
    return
  fi
  kill -0 "-$1" 2>/dev/null
}

# A group whose members are all zombies is finished: an init that never
# reaps must not make the guardian wait out its grace for nothing. The scan
# is one cat of every /proc/<pid>/stat, split on line feeds by the shell:
# dash's read takes a system call per byte, which made a read loop over a few
# hundred processes cost seconds.
has_live_member() { # PGID LINE...: a line of the scan is a live member of PGID
  want=$1
  shift
  for line do
    rest=${line##*) }
    state=${rest%% *}
    rest=${rest#* }
    rest=${rest#* }
    [ "${rest%% *}" = "$want" ] || continue
    [ "$state" != Z ] && [ "$state" != X ] && return 0
  done
  return 1
}

# live_groups <list of "pgid start" lines>: prints how many listed groups
# still match (ID-9) and have a member that is not a zombie.
live_groups() {
  alive=0
  procs=$(cat /proc/[0-9]*/stat 2>/dev/null)
  while IFS=' ' read -r p s _; do
    [ -n "$p" ] || continue
    matches "$p" "$s" || continue
    saved_ifs=$IFS
    IFS=$NL
    set -f
    # shellcheck disable=SC2086
    has_live_member "$p" $procs && alive=$((alive + 1))
    IFS=$saved_ifs
    set +f
  done <<LIST
$1
LIST
  echo "$alive"
}

# signal_matching <signal> <list>: the signal to each listed group whose identity still matches (ID-9).
signal_matching() {
  while IFS=' ' read -r p s _; do
    [ -n "$p" ] || continue
    matches "$p" "$s" && kill "-$1" "-$p" 2>/dev/null
  done <<LIST
$2
LIST
}

any_present() { # <list>: some listed group still has a process (zombies included)
  while IFS=' ' read -r p _ _; do
    [ -n "$p" ] || continue
    kill -0 "-$p" 2>/dev/null && return 0
  done <<LIST
$1
LIST
  return 1
}

# stop_list <list>: stop the listed groups, then their cgroups.
stop_list() {
  stop_groups "$1"
  stop_cgroups "$1"
}

# stop_cgroups <list>: kill what is left in each listed cgroup (at most 5 s
# of tries), then remove the directory.
stop_cgroups() {
  while IFS=' ' read -r _ _ _ c; do
    [ -n "$c" ] && [ -d "$c" ] || continue
    tries=0
    while [ "$tries" -lt 50 ]; do
      tries=$((tries + 1))
      rmdir "$c" 2>/dev/null && break
      [ -d "$c" ] || break
      if [ -e "$c/cgroup.kill" ]; then
        echo 1 >"$c/cgroup.kill" 2>/dev/null
      else
        while read -r pid; do kill -KILL "$pid" 2>/dev/null; done <"$c/cgroup.procs"
      fi
      sleep 0.1
    done
  done <<LIST
$1
LIST
}

# stop_groups <list>: SIGTERM, then SIGKILL once GUARDIAN_GRACE has passed on
# the clock if a member remains. A group left with zombies only is finished
# (seen by a scan every 2 s: scanning /proc is the expensive part).
stop_groups() {
  signal_matching TERM "$1"
  any_present "$1" || return 0
  uptime_ms
  kill_at=$((now + grace_tenths * 100))
  polls=0
  while :; do
    sleep 0.1
    polls=$((polls + 1))
    any_present "$1" || return 0
    if [ $((polls % 20)) = 0 ]; then [ "$(live_groups "$1")" -gt 0 ] || return 0; fi
    uptime_ms
    [ "$now" -lt "$kill_at" ] || break
  done
  signal_matching KILL "$1"
}

uptime_ms() { # -> now: milliseconds of /proc/uptime
  IFS=' ' read -r up _ </proc/uptime
  secs=${up%.*}
  cents=${up#*.}
  now=$((secs * 1000 + ${cents#0} * 10))
}

# handle <line>: one message of the consumer.
#
# The list of groups, `groups`, is one line per group, "pgid start deadline
# cgroup" (the cgroup empty without one), each ending in a line feed. It is
# walked by splitting it on line feeds (in_groups), never with a read loop:
# dash's read takes a system call per byte, and a here-document a pipe, so
# forgetting one group cost a read(2) per byte of every line listed, some 240
# system calls per command job at 16 at once (strace -c, 1,000 `true` jobs).
handle() {
  set -f
  # shellcheck disable=SC2086
  set -- $1
  set +f
  case "$1:$2" in
    +:*[!0-9]* | r:*[!0-9]* | -:*[!0-9]* | +: | r: | -:) return 0 ;;
  esac
  case $1 in
    +)
      deadline=${4:-}
      case $deadline in '' | *[!0-9]*) deadline=none ;; esac
      forget "$2"
      groups="$groups$2 $3 $deadline ${5:-}$NL" ;;
    r)
      case ${3:-} in '' | *[!0-9]*) return 0 ;; esac
      renewed=$2 deadline=$3
      kept=''
      in_groups renew
      groups=$kept ;;
    -) forget "$2" ;;
  esac
}

# in_groups <function>: calls it with p, s, d and c set to the fields of each
# listed group, in order (c is the rest of the line: a cgroup path may hold a
# space, as read's last variable did).
in_groups() {
  g_ifs=$IFS
  IFS=$NL
  set -f
  for g_line in $groups; do
    p=${g_line%% *} g_rest=${g_line#* }
    s=${g_rest%% *} g_rest=${g_rest#* }
    d=${g_rest%% *} c=${g_rest#* }
    "$1"
  done
  IFS=$g_ifs
  set +f
}

renew() {
  if [ "$p" = "$renewed" ]; then kept="$kept$p $s $deadline $c$NL"; else kept="$kept$p $s $d $c$NL"; fi
}

forget() { # <pgid>
  # A `+` line forgets its pgid first (a reused pid), which is most often
  # not listed: one match says so, without a walk.
  case $NL$groups in
    *"$NL$1 "*) ;;
    *) return 0 ;;
  esac
  forgotten=$1
  kept=''
  in_groups keep_other
  groups=$kept
}

keep_other() {
  [ "$p" = "$forgotten" ] || kept="$kept$p $s $d $c$NL"
}

# deadman: stop every group whose deadline has passed, and forget it.
deadman() {
  [ -n "$groups" ] || return 0
  uptime_ms
  due='' kept=''
  in_groups sort_due
  groups=$kept
  [ -z "$due" ] || stop_list "$due"
}

sort_due() {
  if [ "$d" != none ] && [ "$d" -le "$now" ]; then due="$due$p $s $d $c$NL"; else kept="$kept$p $s $d $c$NL"; fi
}

groups=''
pending=''
while :; do
  chunk=$(dd bs=65536 count=1 iflag=nonblock 2>/dev/null; printf '/%s' "$?")
  rc=${chunk##*/}
  chunk=${chunk%/*}
  if [ "$rc" = 0 ] && [ -z "$chunk" ]; then
    break # end of file: the consumer is gone
  fi
  pending=$pending$chunk
  while :; do
    case $pending in
      *"$NL"*) ;;
      *) break ;;
    esac
    line=${pending%%"$NL"*}
    pending=${pending#*"$NL"}
    handle "$line"
  done
  deadman
  if [ -n "$groups" ]; then sleep 0.5; else sleep 1; fi
done

[ -n "$groups" ] || exit 0
stop_list "$groups"
exit 0

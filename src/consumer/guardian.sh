#!/bin/sh
# The guardian of one `fsjob work` process (spec WORKER-2).
#
# It reads its stdin, a pipe whose write end only the worker holds:
#   "+ <pgid> <leader-start>"  a command group the worker recorded (exec.<g>.json)
#   "- <pgid>"                 that group is finished; forget it
# End of file means the worker is gone (killed with SIGKILL, crashed, or done).
# Then every group still listed is stopped: SIGTERM, then SIGKILL after a
# grace, within GUARDIAN_LIMIT (10 s) of the worker's death.
#
# A group is signalled only while its identity matches (ID-9): its leader pid
# still has the recorded start time, or the leader is gone and the group still
# has members (the kernel keeps a pid number out of reuse while a group of
# that number lives). A reused pid is never signalled.
#
# It ignores INT, TERM and HUP: a Ctrl-C that reaches the worker's terminal
# group must not take the guardian down with it before it has done its job.
trap '' INT TERM HUP

grace_tenths=${FSJOB_GUARDIAN_GRACE_TENTHS:-50}

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
  if now=$(start_of "$1"); then
    [ "$now" = "$2" ]
    return
  fi
  kill -0 "-$1" 2>/dev/null
}

groups=''
while IFS=' ' read -r op pgid start; do
  case "$op:$pgid" in
    +:*[!0-9]* | -:*[!0-9]* | +: | -:) continue ;;
    +:*) groups="$groups$pgid $start
" ;;
    -:*)
      kept=''
      while IFS=' ' read -r p s; do
        [ -n "$p" ] || continue
        [ "$p" = "$pgid" ] || kept="$kept$p $s
"
      done <<LIST
$groups
LIST
      groups=$kept
      ;;
  esac
done

[ -n "$groups" ] || exit 0

# A group whose members are all zombies is finished: an init that never
# reaps must not make the guardian wait out its grace for nothing.
has_live_member() { # <pgid>
  for f in /proc/[0-9]*/stat; do
    IFS= read -r line <"$f" 2>/dev/null || continue
    line=${line##*) }
    # shellcheck disable=SC2086
    set -- $line
    if [ "$3" = "$pgid_probe" ] && [ "$1" != Z ] && [ "$1" != X ]; then return 0; fi
  done
  return 1
}

signal_all() { # <signal>; prints how many groups still have live members
  alive=0
  while IFS=' ' read -r p s; do
    [ -n "$p" ] || continue
    matches "$p" "$s" || continue
    pgid_probe=$p
    has_live_member || continue
    [ "$1" = 0 ] || kill "-$1" "-$p" 2>/dev/null
    alive=$((alive + 1))
  done <<LIST
$groups
LIST
  echo "$alive"
}

[ "$(signal_all TERM)" -gt 0 ] || exit 0
waited=0
while [ "$waited" -lt "$grace_tenths" ]; do
  sleep 0.1
  waited=$((waited + 1))
  [ "$(signal_all 0)" -gt 0 ] || exit 0
done
signal_all KILL >/dev/null
exit 0

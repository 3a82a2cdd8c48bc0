# runner.sh - running one command attempt (spec/running.md).
#
# Process layout of one attempt:
#
#   consume (this shell)
#    |-- reader: head -c N; wc -c      <- FIFO <- command stdout   (x2: stderr)
#    `-- timeout 0 sh -c LEADER ...      new process group (coreutils timeout
#          `-- sh: read 1 byte from the calls setpgid(0,0): dash has no job
#              release pipe, then          control without a terminal, so
#              exec env -i ... argv        `set -m` cannot make the group)
#
# The group leader is the `timeout` process; its pid is the pgid recorded in
# exec.<g>.json (EXEC-3). Its child waits on a pipe whose write end only
# this shell holds; end of file (this shell died) means exit 125 without
# running anything (EXEC-2).
#
# File descriptors of this shell:
#   3  the report pipe (whole run): `jobs -l` is written to it and read back
#      (jobs in a command substitution sees no jobs), and the readers write
#      their byte counts to it. Pipes leave no files behind and are not
#      filesystem writes in the queue.
#   4, 5  the output files while the readers start, then the write ends of
#      the output pipes while the leader starts
#   6, 7  the output pipes, read-write, while the readers start; then
#   6  the release pipe, read-write: the only writer (until the release)
#   7  the release pipe's read end, handed to the leader
#   9  the guardian's pipe (consumer.sh)

CANCEL_GRACE=10000
CONTROL_POLL_MAX=0.2
DRAIN_LIMIT=2000

# The leader's child: $1 is the working directory, the rest is the env(1)
# command line. fd 7 is the release pipe.
# EXEC-13: a background job of a non-interactive shell starts with SIGINT
# and SIGQUIT ignored, and an ignored signal stays ignored across exec:
# env --default-signal resets every signal for the command; umask 022 is
# the mask it starts with (this shell runs with 077).
LEADER_SCRIPT='IFS= read -r _go <&7 || exit 125
exec 7<&-
cd -P -- "$1" || exit 125
shift
umask 022
exec env -i --default-signal -- "$@"'

# _rc_poll: whether the leader has ended, from `jobs -l`, which also reaps
# finished children without blocking (dash). Returns 0 while it runs; once
# it ended, sets RUN_EXIT / RUN_SIGNAL from the status text ("Done",
# "Done(N)" or the signal's description) and returns 1. `wait` alone cannot
# tell exit status 137 from death by SIGKILL. bash (as sh) lists a job that
# exited until `jobs` reports it, but drops one that died of a signal as
# soon as it reaps it (saying so on stderr): a job it no longer lists died
# of the signal that `wait`'s 128 + n names.
_rc_poll() {
  _rc_jobs
  _rc_status
}

# _rc_jobs: one `jobs -l` through the report pipe: _rs_text = the leader's
# status text (empty when it is not listed); the readers' counts on the way.
_rc_jobs() {
  _rs_text=
  if jobs -l >&3 2>/dev/null && printf '.\n' >&3; then
    while IFS= read -r _rs_l <&3; do
      case $_rs_l in
        .) break ;;
        'co '*) _rc_ok_rest=${_rs_l#co }; continue ;;
        'ce '*) _rc_er_rest=${_rs_l#ce }; continue ;;
        '['*']'*) ;;
        *) continue ;;
      esac
      _rs_r=${_rs_l#*]}
      while :; do
        case $_rs_r in
          ' '*|'+'*|'-'*) _rs_r=${_rs_r#?} ;;
          *) break ;;
        esac
      done
      [ "${_rs_r%% *}" = "$_rc_lp" ] || continue
      _rs_text=${_rs_r#"$_rc_lp"}
      while :; do case $_rs_text in ' '*) _rs_text=${_rs_text#?} ;; *) break ;; esac; done
      # bash prints the job's command after its status.
      _rs_text=${_rs_text%%" timeout 0 "*}
      while :; do case $_rs_text in *' ') _rs_text=${_rs_text%?} ;; *) break ;; esac; done
    done
  fi
}

# _rc_status: interpret _rs_text (see _rc_poll).
_rc_status() {
  case $_rs_text in
    Running|'Running '*|Stopped*) return 0 ;;
  esac
  RUN_EXIT= RUN_SIGNAL=
  _rs_text=${_rs_text% (core dumped)}
  case $_rs_text in
    Done) RUN_EXIT=0; return 1 ;;
    'Done('*')') RUN_EXIT=${_rs_text#Done(}; RUN_EXIT=${RUN_EXIT%)}; return 1 ;;
    # bash outside POSIX mode.
    'Exit '*) RUN_EXIT=${_rs_text#Exit }; return 1 ;;
  esac
  case $_rs_text in
    Hangup) RUN_SIGNAL=SIGHUP ;; Interrupt) RUN_SIGNAL=SIGINT ;; Quit) RUN_SIGNAL=SIGQUIT ;;
    'Illegal instruction') RUN_SIGNAL=SIGILL ;; 'Trace/breakpoint trap') RUN_SIGNAL=SIGTRAP ;;
    Aborted) RUN_SIGNAL=SIGABRT ;; 'Bus error') RUN_SIGNAL=SIGBUS ;;
    'Floating point exception') RUN_SIGNAL=SIGFPE ;; Killed) RUN_SIGNAL=SIGKILL ;;
    'User defined signal 1') RUN_SIGNAL=SIGUSR1 ;; 'Segmentation fault') RUN_SIGNAL=SIGSEGV ;;
    'User defined signal 2') RUN_SIGNAL=SIGUSR2 ;; 'Broken pipe') RUN_SIGNAL=SIGPIPE ;;
    'Alarm clock') RUN_SIGNAL=SIGALRM ;; Terminated) RUN_SIGNAL=SIGTERM ;;
    'Stack fault') RUN_SIGNAL=SIGSTKFLT ;; 'CPU time limit exceeded') RUN_SIGNAL=SIGXCPU ;;
    'File size limit exceeded') RUN_SIGNAL=SIGXFSZ ;; 'Virtual timer expired') RUN_SIGNAL=SIGVTALRM ;;
    'Profiling timer expired') RUN_SIGNAL=SIGPROF ;; 'I/O possible') RUN_SIGNAL=SIGIO ;;
    'Power failure') RUN_SIGNAL=SIGPWR ;; 'Bad system call') RUN_SIGNAL=SIGSYS ;;
    '')
      # No line: decide by the process, and take wait's status (128 + n
      # for a signal, which is all bash no longer lists, see _rc_poll).
      kill -s 0 "$_rc_lp" 2>/dev/null && { proc_stat "$_rc_lp"; [ "$PS_STATE" != Z ]; } && return 0
      wait "$_rc_lp" 2>/dev/null
      _rs_rc=$?
      RUN_EXIT=$_rs_rc
      [ "$_rs_rc" = 127 ] && RUN_EXIT=
      if [ -n "${BASH_VERSION-}" ] && [ "$_rs_rc" -gt 128 ]; then
        signal_name $((_rs_rc - 128))
        [ -z "$SIGNAME" ] || RUN_EXIT= RUN_SIGNAL=$SIGNAME
      fi
      return 1 ;;
    *) RUN_EXIT=; log "unknown status of the group leader: $_rs_text" ;;
  esac
  return 1
}

# The signals a status names (Linux numbers).
SIGNALS='1 SIGHUP 2 SIGINT 3 SIGQUIT 4 SIGILL 5 SIGTRAP 6 SIGABRT 7 SIGBUS 8 SIGFPE
9 SIGKILL 10 SIGUSR1 11 SIGSEGV 12 SIGUSR2 13 SIGPIPE 14 SIGALRM 15 SIGTERM
16 SIGSTKFLT 24 SIGXCPU 25 SIGXFSZ 26 SIGVTALRM 27 SIGPROF 29 SIGIO 30 SIGPWR 31 SIGSYS'

# signal_number NAME: SIGNUM (for exit code 128 + n, EXEC-10), 0 if unknown.
# signal_name N: SIGNAME, empty if unknown.
signal_number() {
  _sig_find "$1" 2
  SIGNUM=${_sig_other:-0}
}
signal_name() {
  _sig_find "$1" 1
  SIGNAME=$_sig_other
}
_sig_find() { # VALUE FIELD: _sig_other, the other field of the pair whose FIELD is VALUE
  _sig_other=
  set -f
  # shellcheck disable=SC2086
  set -- "$1" "$2" $SIGNALS
  set +f
  _sig_v=$1 _sig_f=$2
  shift 2
  while [ $# -ge 2 ]; do
    if [ "$_sig_f" = 1 ] && [ "$1" = "$_sig_v" ]; then _sig_other=$2; return 0; fi
    if [ "$_sig_f" = 2 ] && [ "$2" = "$_sig_v" ]; then _sig_other=$1; return 0; fi
    shift 2
  done
}

# _rc_alive PID START: our child PID still runs (not exited, not a zombie).
# Only /proc is read: polling writes nothing (a pipe inside the queue would
# count as a filesystem write for a crash injector).
_rc_alive() {
  kill -s 0 "$1" 2>/dev/null || return 1
  proc_stat "$1"
  case $? in
    0)
      [ -z "$2" ] || [ "$PS_START" = "$2" ] || return 1
      case $PS_STATE in Z|X) return 1 ;; esac
      return 0 ;;
    1) return 1 ;;
  esac
  return 0
}

_rc_signal() { # SIGNAL
  group_signal "$_rc_lp" "$_rc_ls" "$1"
}

# _rc_close_fds: close every descriptor of this attempt held by this shell.
_rc_close_fds() {
  exec 4>&- 5>&- 6>&- 7<&-
}

# _rc_abort_start WHY: the command must not start (EXEC-3 failed): kill what
# was started, clean up, RUN_OUTCOME=start_failed. START_WHY says why, and
# START_FATAL=1 when descriptors ran short (fsjob-sh's fd_short): a leader
# that cannot redirect its descriptors dies before it makes its group.
_rc_abort_start() {
  START_WHY=$1
  if fd_short; then
    START_WHY="$1: $FD_WHY"
    START_FATAL=1
  fi
  log "$_rc_jd: cannot start generation $_rc_g: $START_WHY"
  if [ -n "$_rc_lp" ]; then
    kill -s KILL -- "-$_rc_lp" 2>/dev/null || kill -s KILL "$_rc_lp" 2>/dev/null
  fi
  _rc_close_fds
  if [ -n "$_rc_ro" ]; then kill -s KILL "$_rc_ro" "$_rc_re" 2>/dev/null; fi
  # Only this attempt's children: a bare wait (none started yet: an output
  # file already exists) would wait for the guardian, forever.
  [ -z "$_rc_lp$_rc_ro$_rc_re" ] || wait $_rc_lp $_rc_ro $_rc_re 2>/dev/null
  RUN_OUTCOME=start_failed
  return 1
}

# _rc_heartbeat PHASE: LEASE-1, with heartbeat_ms _rc_hb (LEASE-4).
_rc_heartbeat() {
  _rc_ob=0 _rc_eb=0
  _rc_sz=$(stat -c %s -- "$_rc_out" "$_rc_err" 2>/dev/null) && {
    _rc_ob=${_rc_sz%%"$J_NL"*}
    _rc_eb=${_rc_sz#*"$J_NL"}
  }
  rec_state "$_rc_id" "$_rc_g" "$1" "$_rc_hb" "$_rc_att" "$_rc_ob" "$_rc_eb"
  [ ! -e "$_rc_jd/claim.$((_rc_g + 1)).json" ] || return 1
  pub_rename "$_rc_jd" "state.$_rc_g.json" "$REC"
}

# consumer_home: HOME_DIR = this consumer's home directory (EXEC-6): its HOME
# when that is absolute, else its uid's entry in the user database, else /.
consumer_home() {
  case ${HOME:-} in
    /*) HOME_DIR=$HOME; return 0 ;;
  esac
  HOME_DIR=/
  command -v getent >/dev/null 2>&1 || return 0
  _ch_line=$(getent passwd "$(id -u)" 2>/dev/null) || return 0
  _ch_ifs=$IFS
  IFS=:
  set -f
  # shellcheck disable=SC2086
  set -- $_ch_line
  set +f
  IFS=$_ch_ifs
  case ${6:-} in /*) HOME_DIR=$6 ;; esac
}

# run_command JD ID G ATTEMPT: run the spec loaded by spec_load (S_* and
# R_argv_*, R_env*) as attempt ATTEMPT of generation G. Sets:
#   RUN_OUTCOME  succeeded failed timed_out cancelled force_stopped shutdown
#                preempted superseded fenced start_failed
#   RUN_EXEC     1 when exec.<G>.json was published (the attempt counts)
#   RUN_EXIT, RUN_SIGNAL, RUN_STARTED (ms), OUT_JSON, ERR_JSON
run_command() {
  _rc_jd=$1 _rc_id=$2 _rc_g=$3 _rc_att=$4
  RUN_OUTCOME= RUN_EXEC=0 RUN_EXIT= RUN_SIGNAL= RUN_STARTED=null OUT_JSON=null ERR_JSON=null
  _rc_lp= _rc_ls= _rc_ro= _rc_re=
  _rc_pfx=$SCRATCH/a
  _rc_out=$_rc_jd/stdout.$_rc_g
  _rc_err=$_rc_jd/stderr.$_rc_g
  # EXEC-1: the output files, created exclusively.
  for _rc_f in "$_rc_out" "$_rc_err"; do
    if [ -e "$_rc_f" ] || [ -L "$_rc_f" ]; then
      _rc_abort_start "$_rc_f exists"
      return 1
    fi
  done
  # The scratch pipes are reused from job to job; recreate them if a
  # garbage collector removed them.
  if [ ! -p "$_rc_pfx.o" ] || [ ! -p "$_rc_pfx.e" ] || [ ! -p "$_rc_pfx.r" ] || [ ! -p "$_rc_pfx.oc" ] || [ ! -p "$_rc_pfx.ec" ]; then
    rm -f -- "$_rc_pfx.o" "$_rc_pfx.e" "$_rc_pfx.r" "$_rc_pfx.oc" "$_rc_pfx.ec"
    mkdir -p -m 700 -- "$SCRATCH" 2>/dev/null
    if ! mkfifo -m 600 -- "$_rc_pfx.o" "$_rc_pfx.e" "$_rc_pfx.r" "$_rc_pfx.oc" "$_rc_pfx.ec"; then
      _rc_abort_start "cannot create pipes"
      return 1
    fi
  fi
  set -C
  if ! command exec 4>"$_rc_out"; then set +C; _rc_abort_start "cannot create $_rc_out"; return 1; fi
  if ! command exec 5>"$_rc_err"; then set +C; _rc_abort_start "cannot create $_rc_err"; return 1; fi
  set +C
  _rc_ok_rest= _rc_er_rest=
  # EXEC-17: the head part goes to the file as it arrives, the last
  # _rc_tail bytes of the rest are appended at end of file.
  case ${S_keep:-head} in
    tail) _rc_head=0 ;;
    head_tail) _rc_head=$((S_maxout / 2)) ;;
    *) _rc_head=$S_maxout ;;
  esac
  _rc_tail=$((S_maxout - _rc_head))
  # The readers keep those bytes of each stream and count the rest, so a
  # command that writes more never blocks (EXEC-1). They ignore the signals
  # a terminal or a runner sends to this shell's process group. The pipes
  # are held read-write while they open them, so no open blocks: a reader
  # whose consumer dies before the leader starts (a fatal shell error, a
  # SIGKILL) reads end of file and exits, instead of waiting in open(2)
  # for ever with this shell's stdout and stderr.
  if ! command exec 6<>"$_rc_pfx.o" 7<>"$_rc_pfx.e"; then
    _rc_abort_start "cannot open the output pipes"
    return 1
  fi
  (
    trap '' INT TERM HUP
    exec 4>&- 5>&- 6>&- 7<&- 9>&-
    _rc_keep co "$_rc_pfx.oc"
  ) < "$_rc_pfx.o" >&4 2>/dev/null &
  _rc_ro=$!
  (
    trap '' INT TERM HUP
    exec 4>&- 5>&- 6>&- 7<&- 9>&-
    _rc_keep ce "$_rc_pfx.ec"
  ) < "$_rc_pfx.e" >&5 2>/dev/null &
  _rc_re=$!
  exec 4>&- 5>&-
  if ! command exec 4>"$_rc_pfx.o" 5>"$_rc_pfx.e"; then
    _rc_abort_start "cannot open the output pipes"
    return 1
  fi
  exec 6>&- 7>&-
  # The release pipe: this shell holds the only write end (fd 6).
  if ! command exec 6<>"$_rc_pfx.r" 7<"$_rc_pfx.r"; then
    _rc_abort_start "cannot open the release pipe"
    return 1
  fi
  # EXEC-6: exactly this environment.
  set -- "$S_cwd"
  _rc_i=0 _rc_haspath=0 _rc_hashome=0
  while [ "$_rc_i" -lt "$R_envc" ]; do
    eval "_rc_k=\$R_envk_$_rc_i"
    case $_rc_k in PATH) _rc_haspath=1 ;; HOME) _rc_hashome=1 ;; esac
    _rc_i=$((_rc_i + 1))
  done
  [ "$_rc_haspath" = 1 ] || set -- "$@" "PATH=/usr/local/bin:/usr/bin:/bin"
  [ "$_rc_hashome" = 1 ] || { consumer_home; set -- "$@" "HOME=$HOME_DIR"; }
  set -- "$@" "FSJOB_JOB_ID=$_rc_id" "FSJOB_ATTEMPT=$_rc_att" "FSJOB_QUEUE=$Q"
  _rc_i=0
  while [ "$_rc_i" -lt "$R_envc" ]; do
    eval "set -- \"\$@\" \"\$R_envk_$_rc_i=\$R_envv_$_rc_i\""
    _rc_i=$((_rc_i + 1))
  done
  # env(1) takes every leading NAME=VALUE operand as an assignment, so a
  # command name containing '=' is run through nice(1), which takes none and
  # executes its operand as execvp(3) does, 126 and 127 as a shell. A shell
  # there would set PWD, IFS, OPTIND and PPID of its own accord, and bash
  # keeps PPID read-only and takes options from a job's SHELLOPTS (EXEC-6).
  case $R_argv_0 in
    *=*)
      [ -n "${NICE_PATH-}" ] || NICE_PATH=$(command -v nice) || NICE_PATH=/usr/bin/nice
      set -- "$@" "$NICE_PATH" -n 0 --
      ;;
  esac
  _rc_i=0
  while [ "$_rc_i" -lt "$R_argc" ]; do
    eval "set -- \"\$@\" \"\$R_argv_$_rc_i\""
    _rc_i=$((_rc_i + 1))
  done
  if [ "$S_stdin" = object ]; then _rc_in=$_rc_jd/stdin; else _rc_in=/dev/null; fi
  # EXEC-2: the group leader, waiting for the release.
  timeout 0 /bin/sh -c "$LEADER_SCRIPT" fsjob-leader "$@" \
    < "$_rc_in" >&4 2>&5 3>&- 4>&- 5>&- 6>&- 9>&- &
  _rc_lp=$!
  exec 4>&- 5>&- 7<&-
  # Wait until timeout(1) has made its own process group (kill -0 on the
  # group is cheap), then read the leader's identity.
  _rc_i=0
  while ! kill -s 0 -- "-$_rc_lp" 2>/dev/null; do
    _rc_i=$((_rc_i + 1))
    if [ "$_rc_i" -gt 400 ] || ! kill -s 0 "$_rc_lp" 2>/dev/null; then
      _rc_abort_start "the group leader did not start a process group"
      return 1
    fi
    [ "$_rc_i" -gt 100 ] && sleep 0.002
  done
  proc_stat "$_rc_lp"
  if [ $? != 0 ] || [ "$PS_PGRP" != "$_rc_lp" ] || [ "$PS_STATE" = Z ]; then
    _rc_abort_start "the group leader exited before it was recorded"
    return 1
  fi
  _rc_ls=$PS_START
  # LEASE-5: the guardian stops the group unless the claim is renewed by then.
  _rc_last_mono=$CLAIM_MONO
  guardian_tell "+ $_rc_lp $_rc_ls $((_rc_last_mono + CLAIM_LEASE_MS))"
  # CLAIM-7, then EXEC-3: the commit point of the attempt.
  if [ -e "$_rc_jd/claim.$((_rc_g + 1)).json" ] || [ -L "$_rc_jd/claim.$((_rc_g + 1)).json" ]; then
    _rc_abort_start "superseded"
    guardian_tell "- $_rc_lp"
    RUN_OUTCOME=superseded
    return 1
  fi
  gen_time_ms
  rec_exec "$_rc_id" "$_rc_g" "$_rc_att" "$_rc_lp" "$_rc_ls" "$NOW_MS"
  if ! pub_link "$_rc_jd" "exec.$_rc_g.json" "$REC"; then
    _rc_abort_start "cannot publish exec.$_rc_g.json"
    guardian_tell "- $_rc_lp"
    return 1
  fi
  RUN_EXEC=1
  # Release: the command starts now.
  printf '\n' >&6
  exec 6>&-
  RUN_STARTED=$NOW_MS
  # LEASE-4: every interval of the attempt (its timeout, graces, renewals,
  # the lease itself) is measured on the monotonic clock (_rc_m, mono_ms);
  # the wall clock (NOW_MS) only says what the records say, and may jump.
  mono_ms
  _rc_m=$MONO_MS
  _rc_deadline=$((_rc_m + S_timeout))
  _rc_stop= _rc_kill_at= _rc_next_pre=$((_rc_m + 1000))
  _rc_next_hb=$((CLAIM_MONO + CLAIM_LEASE_MS / 3))
  _rc_nap=0.005
  # A short command is often done at once: look a few times before sleeping.
  _rc_i=0
  _rc_running=1
  while [ "$_rc_i" -lt 8 ]; do
    _rc_alive "$_rc_lp" "$_rc_ls" || { _rc_running=0; break; }
    _rc_i=$((_rc_i + 1))
  done
  while [ "$_rc_running" = 1 ] && _rc_alive "$_rc_lp" "$_rc_ls"; do
    now_ms
    mono_ms
    _rc_m=$MONO_MS
    # CLAIM-7, OWN-1: a newer generation exists: stop at once, say nothing.
    if [ -e "$_rc_jd/claim.$((_rc_g + 1)).json" ] || [ -L "$_rc_jd/claim.$((_rc_g + 1)).json" ]; then
      if [ "$_rc_stop" != superseded ]; then
        log "$_rc_jd: superseded by generation $((_rc_g + 1)) (OWN-1)"
        _rc_signal KILL
        _rc_stop=superseded _rc_kill_at=
      fi
    fi
    # CANCEL-3.
    if [ -e "$_rc_jd/cancel-force.json" ] || [ -L "$_rc_jd/cancel-force.json" ]; then
      case $_rc_stop in
        ''|cancel|timeout|shutdown)
          _rc_signal KILL
          _rc_stop=force _rc_kill_at= ;;
      esac
    elif [ -z "$_rc_stop" ] && { [ -e "$_rc_jd/cancel.json" ] || [ -L "$_rc_jd/cancel.json" ]; }; then
      _rc_signal TERM
      _rc_stop=cancel _rc_kill_at=$((_rc_m + CANCEL_GRACE))
    fi
    # EXEC-8.
    if [ -z "$_rc_stop" ] && [ "$_rc_m" -ge "$_rc_deadline" ]; then
      _rc_signal TERM
      _rc_stop=timeout _rc_kill_at=$((_rc_m + S_grace))
    fi
    # PREEMPT-1: a preemptible job gives way to a waiting non-preemptible
    # job of its lane (checked every 1.5 s, within CONTROL_LATENCY).
    if [ -z "$_rc_stop" ] && [ "$S_preempt" = true ] && [ -n "$S_lane" ] && [ "$_rc_m" -ge "$_rc_next_pre" ]; then
      _rc_next_pre=$((_rc_m + 1500))
      if preempt_waiter "$_rc_id" "$S_lane"; then
        log "$_rc_jd: preempted by a waiting job of lane $S_lane (PREEMPT-1)"
        _rc_signal TERM
        mono_ms
        _rc_m=$MONO_MS
        _rc_stop=preempt _rc_kill_at=$((_rc_m + S_grace))
      fi
    fi
    # WORKER-3: after CANCEL_GRACE of a shutdown, stop the attempt.
    if [ -z "$_rc_stop" ] && [ -n "$SHUTDOWN_AT" ] && [ "$_rc_m" -ge $((SHUTDOWN_AT + CANCEL_GRACE)) ]; then
      _rc_signal TERM
      _rc_stop=shutdown _rc_kill_at=$((_rc_m + S_grace))
    fi
    if [ -n "$_rc_kill_at" ] && [ "$_rc_m" -ge "$_rc_kill_at" ]; then
      _rc_signal KILL
      _rc_kill_at=
    fi
    # LEASE-6: a lease that lapsed (this process did not run for lease_ms) is
    # never renewed: the guardian has stopped the group, or is about to.
    if [ "$_rc_stop" != superseded ] && [ "$_rc_stop" != fenced ] && [ "$_rc_m" -gt 0 ] &&
      [ $((_rc_m - _rc_last_mono)) -ge "$CLAIM_LEASE_MS" ]; then
      log "$_rc_jd: the lease lapsed; stopping the attempt (LEASE-6)"
      _rc_signal KILL
      _rc_stop=fenced _rc_kill_at=
    fi
    # LEASE-1 and LEASE-2, scheduled by monotonic time; the heartbeat is
    # never less than the last instant written plus the monotonic time since
    # (LEASE-4, gen_time_ms), so a wall clock that jumped back does not make
    # it look stale.
    if [ "$_rc_stop" != superseded ] && [ "$_rc_stop" != fenced ] && [ "$_rc_m" -ge "$_rc_next_hb" ]; then
      if [ -n "$_rc_stop" ]; then _rc_ph=stopping; else _rc_ph=running; fi
      gen_time_ms
      _rc_hb=$NOW_MS
      if _rc_heartbeat "$_rc_ph"; then
        _rc_last_mono=$_rc_m
        guardian_tell "r $_rc_lp $((_rc_last_mono + CLAIM_LEASE_MS))"
      elif [ "$_rc_m" -ge $((_rc_last_mono + CLAIM_LEASE_MS - CLAIM_LEASE_MS / 6)) ]; then
        log "$_rc_jd: cannot renew the lease; stopping the attempt (LEASE-2)"
        _rc_signal KILL
        _rc_stop=fenced _rc_kill_at=
      fi
      _rc_next_hb=$((_rc_m + CLAIM_LEASE_MS / 3))
    fi
    sleep "$_rc_nap"
    case $_rc_nap in
      0.005) _rc_nap=0.01 ;;
      0.01) _rc_nap=0.02 ;;
      0.02) _rc_nap=0.05 ;;
      0.05) _rc_nap=0.1 ;;
      *) _rc_nap=$CONTROL_POLL_MAX ;;
    esac
  done
  # LEASE-6: the group may have ended while this process was stopped (its
  # guardian stopped it at the deadline, LEASE-5): a lapsed lease is a
  # counted failure whatever the command's status says.
  if [ -z "$_rc_stop" ] && mono_ms && [ $((MONO_MS - _rc_last_mono)) -ge "$CLAIM_LEASE_MS" ]; then
    log "$_rc_jd: the lease lapsed while the command ran; a counted failure (LEASE-6)"
    _rc_stop=fenced
  fi
  # Its status, once: jobs also reaps it if it is still a zombie.
  _rc_i=0
  while _rc_poll; do
    _rc_i=$((_rc_i + 1))
    [ "$_rc_i" -lt 100 ] || { log "$_rc_jd: the group leader is still listed as running"; break; }
    sleep 0.01
  done
  # EXEC-11: nothing of the job runs after its attempt ends.
  GM_LIVE=0
  kill -s 0 -- "-$_rc_lp" 2>/dev/null && group_members "$_rc_lp"
  if [ "$GM_LIVE" -gt 0 ]; then
    kill -s TERM -- "-$_rc_lp" 2>/dev/null
    mono_ms
    _rc_kill_at=$((MONO_MS + S_grace))
    while :; do
      group_members "$_rc_lp"
      [ "$GM_LIVE" -gt 0 ] || break
      mono_ms
      if [ "$MONO_MS" -ge "$_rc_kill_at" ]; then
        kill -s KILL -- "-$_rc_lp" 2>/dev/null
        _rc_kill_at=$((MONO_MS + 600000))
      fi
      sleep 0.05
    done
  fi
  guardian_tell "- $_rc_lp"
  # The owner waits for end of file on both pipes (EXEC-11), for at most
  # DRAIN_LIMIT (EXEC-12): a process that left the group could hold a pipe
  # open forever (EXEC-16).
  _rc_i=0
  mono_ms
  _rc_drain_end=$((MONO_MS + DRAIN_LIMIT))
  while :; do
    _rc_done=1
    _rc_alive "$_rc_ro" "" && _rc_done=0
    [ "$_rc_done" = 1 ] && _rc_alive "$_rc_re" "" && _rc_done=0
    [ "$_rc_done" = 1 ] && break
    _rc_i=$((_rc_i + 1))
    if [ "$_rc_i" -gt 8 ]; then
      mono_ms
      [ "$MONO_MS" -lt "$_rc_drain_end" ] || break
      sleep 0.01
    fi
  done
  _rc_count_ok=1
  if [ "$_rc_done" != 1 ]; then
    log "$_rc_jd: an output pipe is still open after the group ended; bytes_total unknown"
    kill -s KILL "$_rc_ro" "$_rc_re" 2>/dev/null
    _rc_count_ok=0
  fi
  wait "$_rc_ro" "$_rc_re" 2>/dev/null
  # RCPT-1: the outputs are complete (the caller fsyncs them with the
  # receipt, RCPT-2).
  _rc_sz=$(stat -c %s -- "$_rc_out" "$_rc_err" 2>/dev/null)
  _rc_ok_kept=${_rc_sz%%"$J_NL"*}
  _rc_er_kept=${_rc_sz#*"$J_NL"}
  # The counts the readers reported (they wrote them before they exited).
  _rc_jobs
  if [ "$_rc_count_ok" != 1 ]; then
    _rc_ok_rest= _rc_er_rest=
  fi
  # Both digests in one sha256sum when both streams have bytes.
  _rc_ok_sha=$SHA_EMPTY _rc_er_sha=$SHA_EMPTY
  if [ "$_rc_ok_kept" != 0 ] && [ "$_rc_er_kept" != 0 ]; then
    _rc_sums=$(sha256sum -- "$_rc_out" "$_rc_err" 2>/dev/null)
    _rc_ok_sha=${_rc_sums%%[ $J_NL]*}
    _rc_er_sha=${_rc_sums#*"$J_NL"}
    _rc_er_sha=${_rc_er_sha%% *}
    _rc_ok_sha=${_rc_ok_sha#\\}
    _rc_er_sha=${_rc_er_sha#\\}
  elif [ "$_rc_ok_kept" != 0 ]; then
    sha256_of "$_rc_out" && _rc_ok_sha=$SHA
  elif [ "$_rc_er_kept" != 0 ]; then
    sha256_of "$_rc_err" && _rc_er_sha=$SHA
  fi
  _rc_output_json "$_rc_ok_sha" "$_rc_ok_kept" "$_rc_ok_rest"
  OUT_JSON=$OUTPUT_JSON
  _rc_output_json "$_rc_er_sha" "$_rc_er_kept" "$_rc_er_rest"
  ERR_JSON=$OUTPUT_JSON
  case $_rc_stop in
    superseded) RUN_OUTCOME=superseded ;;
    fenced) RUN_OUTCOME=fenced ;;
    force) RUN_OUTCOME=force_stopped ;;
    cancel) RUN_OUTCOME=cancelled ;;
    timeout) RUN_OUTCOME=timed_out ;;
    shutdown) RUN_OUTCOME=shutdown ;;
    preempt) RUN_OUTCOME=preempted ;;
    *)
      if [ "$RUN_EXIT" = 0 ]; then RUN_OUTCOME=succeeded; else RUN_OUTCOME=failed; fi ;;
  esac
  return 0
}

# _rc_keep TAG FIFO: the reader of one stream (standard input) into its
# output file (standard output): the first _rc_head bytes as they come, then
# the last _rc_tail bytes of the rest once the stream ends (EXEC-17), counted
# through FIFO by a wc beside the tee. Reports "TAG <bytes discarded>" on fd 3.
_rc_keep() {
  head -c "$_rc_head"
  if [ "$_rc_tail" -gt 0 ]; then
    exec 8>&1
    _n=$(wc -c < "$2" & tee "$2" | tail -c "$_rc_tail" >&8; wait)
    exec 8>&-
    if [ "${_n:-0}" -gt "$_rc_tail" ]; then _n=$((_n - _rc_tail)); else _n=0; fi
  else
    _n=$(wc -c)
  fi
  printf '%s %s\n' "$1" "$_n" >&3
}

# _rc_output_json SHA KEPT REST: OUTPUT_JSON for RCPT-5.
_rc_output_json() {
  case $2 in ''|*[!0-9]*) OUTPUT_JSON=null; return 0 ;; esac
  is_hex 64 "$1" || { OUTPUT_JSON=null; return 0; }
  case $3 in
    ''|*[!0-9]*) output_json "$_rc_g" null "$2" false "$1" ;;
    0) output_json "$_rc_g" "$2" "$2" false "$1" ;;
    *) output_json "$_rc_g" $(($2 + $3)) "$2" true "$1" ;;
  esac
}

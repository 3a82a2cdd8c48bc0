# The spawner of one fsjob worker (spec/design-spawner.md): it starts every
# command of the worker, so that the worker's node process, tens to hundreds
# of MiB, never forks.
#
# The worker starts it as `/bin/sh -s fsjob-spawner`, writes this script to
# its standard input and then one request per line (or, where bash is
# installed, as bash with this script in its environment and each request
# framed by its length; see the end of this script): the requests are shell
# commands calling the functions below, every argument single-quoted by the
# worker ('\'' for a quote), so each byte of an argument or environment
# value travels exactly as given (anything but NUL, which neither can hold).
# The shell parses them from an 8 KiB buffer (bash: one `read -N` each): no
# read per byte. End of file (the worker closed the pipe, or died) ends the
# spawner; the commands it started run on, and the worker's guardian stops
# them if the worker is gone (WORKER-2).
#
# Its standard output is the reply channel (a socket pair node made). Every
# reply is one short line written by one printf or jobs, a single write:
# Linux queues a short write to a stream socket whole, as it does a pipe
# write under PIPE_BUF, so the lines of several writers never mix:
#   ready <pid> <chain>...        the checks below passed for these chains
#                                 (`bash`, `sh`); requests welcome
#   fail <reason>                 no chain passed; the spawner exits
#   m <tag> ok|fail               fsjob_fifos made its FIFOs (or not)
#   w <id> <pid>                  fsjob_run started the waiter of request <id>
#                                 (the sh chain only)
#   p <id> <pid> [<start>]        the gate of <id> runs in its own process
#                                 group, <pid> = pgid, and waits for its
#                                 release; written by the gate itself (bash's
#                                 with its start, ID-2)
#   [<n>] <+|-> <pid> <status>    `jobs -l`: how a gate ended (the sh chain's
#                                 waiter; bash's spawner, `jobs -n -l`)
#   x <id> <pid> <status>         the `wait` status: the gate <pid> ended
#   e <id>                        the working directory or a FIFO could not
#                                 be opened: nothing was started
#
# One attempt, in one of two chains:
#   bash:  spawner (this shell)
#           `-- gate (fsjob_lead, a subshell), the leader of the job's new
#               process group, made by bash's job control (`set -m`:
#               setpgid); it opens the FIFOs, reports its pid, reads the
#               release, then becomes the command (exec): one fork and one
#               exec per command, the command's own. The spawner reaps it.
#   sh:    spawner
#           `-- waiter: a subshell, in the spawner's process group
#                `-- gate: setsid sh -c GATE ... env -i --default-signal
#                    NAME=VALUE..., three execs before the command's (no
#                    POSIX sh can make a process group or reset a signal a
#                    background job starts with ignored)
# The sh chain's waiter is the gate's parent so that the exit status has one
# owner that waits for it while dash's spawner blocks in its read. bash's
# spawner reaps its gates itself (a waiter's fork was 37% of its tree's CPU
# per command): while any runs, it reads requests with a timeout (bash
# blocks SIGCHLD while `read` waits, so no trap can end the read), 1 ms at
# a time after the worker prompts it (an empty request: at each release and
# when a running command's outputs reach end of file), slower the longer
# nothing happens, 128 ms while no gate was released, and after each read
# reports the gates that ended (fsjob_reap). A
# spawner that dies takes the exit statuses of its bash gates with it: the
# worker ends those attempts as a dead owner's (spec/design-spawner.md, 7).
# The bash chain costs a fork and an exec where the sh chain costs a fork
# and four execs (measured: spec/design-spawner.md, "Spawning commands"); the
# worker takes it for every job whose environment holds no name that bash
# treats specially (spawner-request.ts), the sh chain for the others.
# `wait` gives 128 + n for a death by signal n and for `exit 128+n` alike;
# the shell's `jobs -l` tells them apart ("Done(130)" against "Interrupt"),
# in dash (printed after the wait) and bash (the waiter's CHLD trap, before
# `wait` forgets the job; bash's spawner, `jobs -n -l` before its `wait`; bash
# prints no line for a death by SIGINT or SIGPIPE). The worker reads the jobs
# line and falls back on the `x` status when there is none.
#
# Why each step of the bash chain:
# - `set -m` only around the gate's `&`: the gate's group is made by fork
#   (setpgid in the child and in the spawner), and with job control off
#   again `wait` waits for the end of the gate, not for a stop.
# - the gate resets the spawner's ignored signals (`trap -`: they were
#   ignored by this script, not on entry, so bash may reset them; a job of a
#   shell with job control starts with none ignored), reports $BASHPID (its
#   own pid, the pgid), reads the release, then sets the environment: the
#   spawner exported nothing from its start (`export -n`), `cd` exported
#   OLDPWD, which is unset, and each of the job's names is unset (a
#   variable bash computes, RANDOM or SECONDS, loses its magic) and then
#   exported with its value; bash's `exec` adds nothing to the environment
#   from a `( )` subshell (from a function's own `&` it exports SHLVL).
#   From the export on, IFS is the job's: every expansion after it is
#   quoted (an IFS of digits split `shift $((...))`, and the command never
#   ran), and the export's stderr is discarded: bash warns there about a
#   locale the job names but this system lacks (LC_ALL, LANG), a line the
#   command never wrote; the job's names are identifiers that are not
#   read-only (bashChainFits), so the export has no error of its own to lose.
#   A check at start-up runs this gate once and compares the environment
#   `env` prints; the bash chain is offered only when it is exact.
# Why each program of the sh chain:
# - env --default-signal: a background job of a shell without job control
#   starts with SIGINT and SIGQUIT ignored, and an ignored signal stays
#   ignored across exec; EXEC-13 wants every disposition at its default.
#   env -i with the job's NAME=VALUE words: exactly the environment of EXEC-6.
#   env is the last program before the command, so setsid and the gate's
#   shell run in the spawner's environment, never the job's: where /bin/sh
#   is bash, a job's SHELLOPTS=xtrace traced the gate into the job's stderr,
#   its PPID (read-only in bash) failed the gate with 127, and bash exported
#   SHLVL and its own SHELLOPTS and BASHOPTS values to the command. The gate
#   sets no variable of the job's, so the shell is any POSIX sh. An argv[0]
#   with `=` in it, which env would take for one more NAME=VALUE, is run
#   through `nice -n 0 --` (same 126 and 127; spawner-request.ts).
#   Until the release the gate ignores what the spawner ignores (a shell
#   cannot reset a signal ignored on its entry); the worker stops an
#   unreleased gate with SIGKILL or end of file on the release.
# - setsid: a shell without a terminal has no job control (`set -m` is
#   refused), so it cannot make a process group; setsid(1) makes the gate
#   the leader of a new session and group (EXEC-2). The gate is not a group
#   leader (it is in the spawner's group), so setsid calls setsid() itself
#   and does not fork: the gate's pid is the pgid.
# - the gate, a shell, reports its pid from inside the new group, then waits
#   for one line on fd 3 (the release FIFO, whose only writer is the worker):
#   end of file means the worker died before recording the group, so it
#   exits 125 without running anything (EXEC-2, EXEC-3).
#
# Descriptors. The waiter (bash: the gate) opens each FIFO in two steps,
# read-write first:
# an open for reading blocks until the FIFO has a writer, one for writing
# until it has a reader; a FIFO opened read-write has both, so the second
# open returns at once, and the read-write one is closed at once. So no open
# can hang, whether the worker is there or not, and afterwards the gate holds
# only the read end of the release FIFO (the worker's write end is the only
# writer: end of file when the worker dies) and only the write ends of the
# output FIFOs (end of file for the worker when the group is done). The sh
# chain's gate gets the reply pipe as fd 7 to report its pid and closes it
# and fd 3 before the command starts (bash's gate reports on the spawner's
# standard output, which it then replaces with the stdout FIFO, and closes
# fd 3): the command has 0, 1 and 2 only (EXEC-13). The waiter closes its
# copies once the gate has them. Nothing here holds a write end of the
# request pipe or of an output FIFO.
#
# It ignores INT, TERM and HUP (a job's terminal signals must not stop it;
# it has its own session anyway), and PIPE: a reply to a worker that died
# fails instead of killing it, so that it still reads end of file and exits
# through its EXIT trap. The gate resets them all for the command (env
# --default-signal in the sh chain, `trap -` in the bash chain).
# When it exits (end of file: the worker closed the pipe or died) it removes
# the worker's FIFO directory, $FSJOB_SPAWNER_DIR: a worker killed with
# SIGKILL leaves nothing behind in the temporary directory. The FIFOs that
# running commands have open stay open.
trap '' INT TERM HUP PIPE
trap '[ -z "$FSJOB_SPAWNER_DIR" ] || rm -rf -- "$FSJOB_SPAWNER_DIR"' EXIT
# EXEC-13 asks that a command not get descriptors the consumer inherited
# either: one that whatever started the worker left open without
# close-on-exec (a shell's `exec 200<file`, a harness's pipe) passes through
# node's spawn to here and would reach every command. bash closes them once,
# now, before it opens anything of its own (node gives it 0, 1 and 2 only).
# A POSIX sh cannot: it takes no descriptor above 9 in a redirection (dash
# would read `exec 12>&-` as a command named 12), so the sh chain passes
# them on, as spec/design-spawner.md says.
if [ -n "${BASH_VERSION-}" ] && [ -d "/proc/$$/fd" ]; then
  for fsjob_fd in /proc/$$/fd/*; do
    fsjob_fd=${fsjob_fd##*/}
    case $fsjob_fd in
      0 | 1 | 2 | *[!0-9]*) ;;
      *) eval "exec $fsjob_fd>&-" ;;
    esac
  done
  unset fsjob_fd
fi

# /dev/null, opened once, as fd 8: what each request and each attempt
# discards goes there without an open of its own. Every gate closes it
# before the command starts (EXEC-13: descriptors 0, 1 and 2 only).
exec 8>/dev/null

# What the gate runs, in its own group, as
# `sh -c "$G" fsjob-gate ID "$E" -i --default-signal -- NAME=VALUE... ARGV...`
# (EXEC-13: umask 022): env(1) sets the job's environment (EXEC-6).
G='printf "p %s %s\n" "$1" "$$" >&7 || exit 125
exec 7>&-
IFS= read -r fsjob_go <&3 || exit 125
exec 3<&-
umask 022
shift
exec "$@"'

# The programs, by absolute path: env -i sets the job's PATH before it
# executes nice, and the job's PATH must not choose them.
# S is set where the sh chain runs; S_FAIL says why it does not.
E=$(command -v env) || E=
X=$(command -v setsid) || X=
N=$(command -v nice) || N=
B=/bin/sh
S=
if [ -z "$X" ] || [ -z "$E" ] || [ -z "$N" ]; then
  S_FAIL='setsid(1) (util-linux), env(1) or nice(1) is not on /usr/local/bin:/usr/bin:/bin'
elif ! "$E" -i --default-signal "$X" -- "$B" -c 'exit 0' 2>/dev/null; then
  S_FAIL="$E -i --default-signal $X -- $B failed: env needs --default-signal (coreutils 8.31 or later)"
else
  S=1
fi

# fsjob_fifos TAG PATH...: make FIFOs, mode 0600, in the worker's directory.
fsjob_fifos() {
  fsjob_tag=$1
  shift
  if mkfifo -m 600 -- "$@" 2>&8; then
    printf 'm %s ok\n' "$fsjob_tag"
  else
    printf 'm %s fail\n' "$fsjob_tag"
  fi
}

# fsjob_run ID CWD STDIN OUT ERR RELEASE LEADER...: start the waiter of one
# attempt of the sh chain. STDIN is a path to open for reading (/dev/null,
# or the worker's /proc/<pid>/fd/<n> of the job's checked stdin file: the
# same open file, whatever its name now points at); LEADER is the gate's
# command line.
fsjob_run() {
  # The waiters that ended are reaped here, so the job table stays small
  # (bash's fsjob_reap reports its gates' ends too).
  if [ "${FSJOB_SPAWNER_INPUT-}" = framed ]; then fsjob_reap; else jobs >&8 2>&8; fi
  fsjob_wait "$@" &
  printf 'w %s %s\n' "$1" "$!"
}

fsjob_wait() {
  exec 2>&8
  id=$1 cwd=$2 in=$3 out=$4 err=$5 rel=$6
  shift 6
  if ! { cd -P -- "$cwd" && command exec 9<>"$rel" 3<"$rel" 9>&- 9<>"$out" 4>"$out" 9>&- 9<>"$err" 5>"$err" 9>&- 6<"$in"; }; then
    printf 'e %s\n' "$id"
    exit 0
  fi
  trap 'jobs -l' CHLD
  "$@" <&6 7>&1 >&4 2>&5 4>&- 5>&- 6<&- 8>&- &
  exec 3<&- 4>&- 5>&- 6<&-
  wait "$!"
  st=$?
  jobs -l
  printf 'x %s %s %s\n' "$id" "$!" "$st"
  exit 0
}

# fsjob_gate N NAME... NAME=VALUE... ARGV...: the bash chain's gate (bash
# only: ${@:i:n}), the leader of its group; EXEC-2, EXEC-6, EXEC-13.
fsjob_gate() {
  trap - INT TERM HUP PIPE
  IFS= read -r -N 3 -u 3 PWD || exit 125
  umask 022
  unset -v OLDPWD PWD "${@:2:$1}"
  [ "$1" = 0 ] || export "${@:2+$1:$1}" || exit 125
  shift "$((1 + 2 * $1))"
  exec "$@" >&5 2>&4 3<&- 4>&- 5>&- 6<&-
}

# The bash chain where this is bash reading framed requests (its loop at the
# end reaps the gates), job control works, and a gate run once hands `env`
# exactly the environment it was given.
C=
if [ -n "${BASH_VERSION-}" ] && [ "${FSJOB_SPAWNER_INPUT-}" = framed ] && [ -n "$E" ] && (set -m) 2>/dev/null; then
  for fsjob_name in $(compgen -e 2>/dev/null || echo PATH LC_ALL FSJOB_SPAWNER_DIR PWD OLDPWD SHLVL); do
    export -n "$fsjob_name"
  done
  fsjob_seen=$(cd / && printf 'go\n' | { set -m; (fsjob_gate 2 RANDOM SHLVL "RANDOM=it's" SHLVL=7 "$E") 3<&0 </dev/null 4>&2 5>&1 6<&- 2>&8 8>&- & wait "$!"; } 2>/dev/null)
  case $fsjob_seen in "RANDOM=it's
SHLVL=7" | "SHLVL=7
RANDOM=it's") C=bash ;; esac
fi
if [ -n "$S" ]; then
  C="$C sh"
elif [ -z "$C" ]; then
  printf 'fail %s\n' "$S_FAIL"
  exit 0
fi
if [ "${FSJOB_SPAWNER_INPUT-}" = framed ] && ! printf 'a b\n' | { IFS= read -r -N 4 fsjob_request && [ "$fsjob_request" = 'a b
' ]; } 2>/dev/null; then
  printf 'fail %s\n' "bash $BASH_VERSION has no read -N (bash 4.1 or later)"
  exit 0
fi

printf 'ready %s %s\n' "$$" "$C"

# Where the worker started this as `bash --norc -c 'eval "$FSJOB_SPAWNER_SCRIPT"'`
# (FSJOB_SPAWNER_INPUT=framed): each request comes as its length in bytes,
# eight digits, and the request, taken by one `read -N` (LC_ALL=C: a
# character is a byte); a prompt as the one byte `:` (spawner-request.ts). bash reads a script from a pipe one byte per read(2), as it
# must not read past the command it runs; dash, started with -s, reads the
# requests as the rest of this script, 8 KiB at a time.
# bash only, so in a string that dash never parses: the bash chain, which
# the spawner reaps itself, and the loop that reads the requests.
# fsjob_start ID CWD STDIN OUT ERR RELEASE N NAME... NAME=VALUE... ARGV...
# forks the gate (fsjob_lead) in a group of its own and keeps its pid until
# fsjob_reap reports how it ended: `jobs -n -l` (a job that ended by SIGINT
# or SIGPIPE has no line), then an `x` line per gate that bash reaped, with
# `wait`'s status (the job is done: `wait` returns at once). A gate bash
# reaped has no /proc/<pid> any more (a zombie still has one); pids are
# handed out in turn, so none is reused this soon. fsjob_probe holds the
# test of every running gate's /proc entry, one `[` for all of them (a
# `kill -0` each cost three system calls and a redirection for its error).
# No CHLD trap: bash runs none while `read` waits (it blocks SIGCHLD there).
if [ "${FSJOB_SPAWNER_INPUT-}" = framed ]; then
  eval '
declare -A fsjob_ids=() fsjob_dead=()
fsjob_probe="-d /proc" fsjob_ms=128 fsjob_t=0.128 fsjob_idle=32
# Where /proc hides the processes of other users (hidepid=2 or 4), a gate
# that became a set-user-ID command has no /proc entry while it runs, and
# `wait` would block on it: there the reap asks bash for its jobs instead.
fsjob_hidden=
while IFS= read -r fsjob_line; do
  case $fsjob_line in *" /proc "*" - proc "*hidepid=[24]* | *" /proc "*" - proc "*hidepid=[ip]*) fsjob_hidden=1 ;; esac
done </proc/self/mountinfo 2>&8

fsjob_start() {
  set -m
  (fsjob_lead "$@") 2>&8 8>&- <"$3" 9<>"$6" 3<"$6" 9>&- 9<>"$4" 5>"$4" 9>&- 9<>"$5" 4>"$5" 9>&- 6</proc/self/stat &
  set +m
  fsjob_ids[$!]=$1
  fsjob_probe+=" -a -e /proc/$!"
}

# The gate: its descriptors were opened by the redirections of its own
# subshell (in the gate, after the fork, none saved to be restored: a
# redirection of a command in the gate costs five system calls more): the
# stdin of the job as 0, the reply channel as 1 (that of the spawner: the
# report needs no redirection), /dev/null as 2 until the exec (what cd and
# export complain of is no line of the job; the copy of the spawner, 8, closed),
# the release as 3, the stderr FIFO as 4, the stdout FIFO as 5, its own stat
# as 6 (/proc/self, opened by the gate). A redirection that fails ends the gate
# with status 1 before it reports: nothing ran, and the worker reads its
# `x` line. It reports from inside its group with its start (field 22 of
# its stat; none where the comm holds a space, and the worker reads it
# then), then fsjob_gate.
fsjob_lead() {
  cd -P -- "$2" || { printf "e %s\n" "$1"; exit 125; }
  IFS=" " read -r -u 6 _ fsjob_comm _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ fsjob_began _
  case $fsjob_comm in "("*")") ;; *) fsjob_began= ;; esac
  printf "p %s %s %s\n" "$1" "$BASHPID" "$fsjob_began"
  shift 6
  fsjob_gate "$@"
}

fsjob_reap() {
  jobs -n -l
  # fsjob_list: the list bash keeps of the jobs still there, through a file (no
  # fork to capture it), only where /proc hides processes (fsjob_hidden) and
  # the file can be written; else a gate is up while its /proc entry is
  # there. A zombie that fsjob_zombies found (fsjob_dead) is reaped either way.
  fsjob_list=
  [ -z "$fsjob_hidden" ] || ! jobs -p >"$FSJOB_SPAWNER_DIR/jobs" || ! mapfile -t fsjob_jobs <"$FSJOB_SPAWNER_DIR/jobs" || fsjob_list=" ${fsjob_jobs[*]} "
  fsjob_probe="-d /proc" fsjob_out=
  for fsjob_pid in "${!fsjob_ids[@]}"; do
    if [[ -z ${fsjob_dead[$fsjob_pid]-} && ( -z $fsjob_list && -e /proc/$fsjob_pid || $fsjob_list == *" $fsjob_pid "* ) ]]; then
      fsjob_probe+=" -a -e /proc/$fsjob_pid"
    else
      wait "$fsjob_pid"
      fsjob_out+="x ${fsjob_ids[$fsjob_pid]} $fsjob_pid $?
"
      unset "fsjob_ids[$fsjob_pid]"
    fi
  done
  fsjob_dead=()
  [ -z "$fsjob_out" ] || { printf %s "$fsjob_out"; fsjob_ms=1 fsjob_t=0.001 fsjob_idle=0; }
}

# fsjob_zombies: the gates that ended but that bash did not reap, zombies
# whose /proc entries stay, which bash lists as running. Should SIGCHLD be
# blocked again for another cause than the one fsjob_poll puts right, their
# ends are late, not lost: looked for by their state in /proc once the poll
# is at 128 ms, every eighth wake-up (a second with no end; never on the
# path of a command that ends at once), and reaped by `fsjob_reap` (`wait`
# on a zombie returns at once). bash cannot report on a gate that it does
# not see end; here it says so on its standard error.
fsjob_zombies() {
  for fsjob_pid in "${!fsjob_ids[@]}"; do
    IFS= read -r fsjob_line <"/proc/$fsjob_pid/stat" || continue
    fsjob_line=${fsjob_line##*) }
    [ "${fsjob_line%% *}" != Z ] || fsjob_dead[$fsjob_pid]=1
  done 2>&8
  (( ! ${#fsjob_dead[@]} )) || { printf "fsjob-spawner: bash did not reap gates %s: SIGCHLD blocked?\n" "${!fsjob_dead[*]}" >&2; fsjob_reap; }
}

# fsjob_poll: the wait for the first byte of a request while gates run, in
# an `eval` of its own (the loop calls `eval fsjob_poll`) that puts the
# signal mask back after a timeout. In bash 5.2, a `read -t` whose timeout
# passed before it began to read (a spawner preempted for longer than its
# 1 ms poll) sets the mask from a variable it never set: stack garbage,
# SIGCHLD in it about one time in two (bash 5.3 sets it first: "initialize
# prevset for very short timeouts"). With SIGCHLD blocked for good, bash
# reaps no gate: a gate that ends stays a zombie, its /proc entry stays,
# and its end is never reported (seen on this machine: a worker
# with 16 gates of `true` left zombies for minutes, SIGCHLD pending, the
# mask a heap address). So after every timeout an arithmetic error (its
# message to /dev/null) ends the `eval`, and bash restores the mask it saved
# when that `eval` began, before the read; a SIGCHLD held pending meanwhile
# is delivered then. The cost: an `eval` of one word per wake-up, and a
# write and a sigprocmask per timeout. test/consumer/spawner-reaping.test.ts
# makes every read time out before it reads.
fsjob_poll() {
  IFS= read -r -t "$fsjob_t" -N 1 fsjob_first
  fsjob_rc=$?
  (( fsjob_rc <= 128 )) || { : $((fsjob_rc / 0)); } 2>&8
}

# While a gate runs, the wait for the first byte of a request lasts fsjob_ms at
# most: 128 ms where no gate was released since the last end (a gate that
# waits for its release ends only when the worker closes it, and the worker
# prompts then); after a prompt (the worker released a gate, or a running
# command closed its outputs) or an end, 1 ms 32 times, then twice as long
# each time, up to 128 ms. The prompt is the one byte `:`; a request is its
# length in eight digits, then the request (one `read -N` each, where a
# length line took a read(2) per byte). Only the first byte is read with
# the timeout: a `read -t` of more may time out after it took part of it,
# and then nothing tells the part from a whole.
while :; do
  if (( ${#fsjob_ids[@]} )); then
    # The look for ended gates: one `[` of the /proc entry of every gate
    # (fsjob_probe, split by the shell: its words are options and /proc
    # paths, nothing to glob), the reap once one is gone.
    [ $fsjob_probe ] || fsjob_reap
    eval fsjob_poll
    if [ -z "$fsjob_first" ]; then
      (( fsjob_rc > 128 )) || break
      (( ++fsjob_idle < 32 || fsjob_ms >= 128 )) || { (( fsjob_ms *= 2 )); printf -v fsjob_t "%d.%03d" $((fsjob_ms / 1000)) $((fsjob_ms % 1000)); }
      (( fsjob_ms < 128 || fsjob_idle % 8 )) || fsjob_zombies
      continue
    fi
  else
    fsjob_ms=128 fsjob_t=0.128 fsjob_idle=32
    IFS= read -r -N 1 fsjob_first || break
  fi
  [ "$fsjob_first" != : ] || { fsjob_ms=1 fsjob_t=0.001 fsjob_idle=0; continue; }
  IFS= read -r -N 7 fsjob_bytes && IFS= read -r -N "$((10#$fsjob_first$fsjob_bytes))" fsjob_request || break
  eval "$fsjob_request"
done
exit 0
'
fi

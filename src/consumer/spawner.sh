# The spawner of one fsjob worker (spec/design-notes.md, "Spawning
# commands"): it starts every command of the worker, so that the worker's
# node process, tens to hundreds of MiB, never forks.
#
# The worker starts it as `/bin/sh -s fsjob-spawner`, writes this script to
# its standard input and then one request per line: the requests are shell
# commands calling the functions below, every argument single-quoted by the
# worker ('\'' for a quote), so each byte of an argument or environment
# value travels exactly as given (anything but NUL, which neither can hold).
# The shell parses them from an 8 KiB buffer: no read per byte. End of file
# (the worker closed the pipe, or died) ends the spawner; the commands it
# started run on, and the worker's guardian stops them if the worker is gone
# (WORKER-2).
#
# Its standard output is the reply channel (a socket pair node made). Every
# reply is one short line written by one printf or jobs, a single write:
# Linux queues a short write to a stream socket whole, as it does a pipe
# write under PIPE_BUF, so the lines of several writers never mix:
#   ready <pid>                   the checks below passed; requests welcome
#   fail <reason>                 they did not; the spawner exits
#   m <tag> ok|fail               fsjob_fifos made its FIFOs (or not)
#   w <id> <pid>                  fsjob_run started the waiter of request <id>
#   p <id> <pid>                  the gate of <id> runs in its own session and
#                                 process group, <pid> = pgid, and waits for
#                                 its release (written by the gate itself)
#   [<n>] <+|-> <pid> <status>    the waiter's `jobs -l`: how the gate ended
#   x <id> <pid> <status>         the waiter's `wait` status: the gate <pid> ended
#   e <id>                        the waiter could not open the working
#                                 directory or a FIFO: nothing was started
#
# One attempt, three processes:
#   spawner (this shell)
#    `-- waiter: a subshell, in the spawner's process group, outside the job's
#         `-- gate: env -i --default-signal NAME=VALUE... setsid sh -c GATE
#               reads the release, then becomes the command (exec)
# The waiter is the gate's parent so that the exit status has one owner that
# waits for it, and so that the spawner can take the next request at once.
# `wait` gives 128 + n for a death by signal n and for `exit 128+n` alike;
# the shell's `jobs -l` tells them apart ("Done(130)" against "Interrupt"),
# in dash (printed after the wait) and bash (printed by the CHLD trap, before
# `wait` forgets the job). The worker reads the jobs line and falls back on
# the `x` status when there is none.
#
# Why each program:
# - env --default-signal: a background job of a shell without job control
#   starts with SIGINT and SIGQUIT ignored, and an ignored signal stays
#   ignored across exec; EXEC-13 wants every disposition at its default.
#   env -i with the job's NAME=VALUE words: exactly the environment of EXEC-6.
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
# Descriptors. The waiter opens each FIFO in two steps, read-write first:
# an open for reading blocks until the FIFO has a writer, one for writing
# until it has a reader; a FIFO opened read-write has both, so the second
# open returns at once, and the read-write one is closed at once. So no open
# can hang, whether the worker is there or not, and afterwards the gate holds
# only the read end of the release FIFO (the worker's write end is the only
# writer: end of file when the worker dies) and only the write ends of the
# output FIFOs (end of file for the worker when the group is done). The gate
# gets the reply pipe as fd 7 to report its pid and closes it and fd 3 before
# the command starts: the command has 0, 1 and 2 only (EXEC-13). The waiter
# closes its copies once the gate has them. Nothing here holds a write end
# of the request pipe or of an output FIFO.
#
# It ignores INT, TERM and HUP (a job's terminal signals must not stop it;
# it has its own session anyway), and PIPE: a reply to a worker that died
# fails instead of killing it, so that it still reads end of file and exits
# through its EXIT trap. The gate's env resets them all for the command.
# When it exits (end of file: the worker closed the pipe or died) it removes
# the worker's FIFO directory, $FSJOB_SPAWNER_DIR: a worker killed with
# SIGKILL leaves nothing behind in the temporary directory. The FIFOs that
# running commands have open stay open.
trap '' INT TERM HUP PIPE
trap '[ -z "$FSJOB_SPAWNER_DIR" ] || rm -rf -- "$FSJOB_SPAWNER_DIR"' EXIT

# What the gate runs, in its own group, as `sh -c "$G" fsjob-gate ID PWD ARGV...`.
# EXEC-13: umask 022. The shell exports PWD of its own accord; EXEC-6 wants
# exactly the job's environment, so PWD says what PWD must be: "-" for none,
# "=<value>" when the job's env sets it.
G='printf "p %s %s\n" "$1" "$$" >&7 || exit 125
exec 7>&-
IFS= read -r fsjob_release <&3 || exit 125
exec 3<&-
umask 022
case $2 in -) unset PWD ;; *) PWD=${2#=}; export PWD ;; esac
shift 2
exec "$@"'

# The programs, by absolute path: env -i clears PATH before it executes
# setsid, and the job's PATH must not choose them.
E=$(command -v env) || E=
X=$(command -v setsid) || X=
B=/bin/sh
if [ -z "$X" ] || [ -z "$E" ]; then
  printf 'fail %s\n' 'setsid(1) (util-linux) or env(1) is not on /usr/local/bin:/usr/bin:/bin'
  exit 0
fi
if ! "$E" -i --default-signal "$X" -- "$B" -c 'exit 0' 2>/dev/null; then
  printf 'fail %s\n' "$E -i --default-signal $X -- $B failed: env needs --default-signal (coreutils 8.31 or later)"
  exit 0
fi

# fsjob_fifos TAG PATH...: make FIFOs, mode 0600, in the worker's directory.
fsjob_fifos() {
  fsjob_tag=$1
  shift
  if mkfifo -m 600 -- "$@" 2>/dev/null; then
    printf 'm %s ok\n' "$fsjob_tag"
  else
    printf 'm %s fail\n' "$fsjob_tag"
  fi
}

# fsjob_run ID CWD STDIN OUT ERR RELEASE LEADER...: start the waiter of one
# attempt. STDIN is a path to open for reading (/dev/null, or the worker's
# /proc/<pid>/fd/<n> of the job's checked stdin file: the same open file,
# whatever its name now points at); LEADER is the gate's command line.
fsjob_run() {
  # The waiters that ended are reaped here, so the job table stays small.
  jobs >/dev/null 2>&1
  fsjob_wait "$@" &
  printf 'w %s %s\n' "$1" "$!"
}

fsjob_wait() {
  exec 2>/dev/null
  id=$1 cwd=$2 in=$3 out=$4 err=$5 rel=$6
  shift 6
  if ! { cd -P -- "$cwd" && command exec 9<>"$rel" 3<"$rel" 9>&- 9<>"$out" 4>"$out" 9>&- 9<>"$err" 5>"$err" 9>&- 6<"$in"; }; then
    printf 'e %s\n' "$id"
    exit 0
  fi
  trap 'jobs -l' CHLD
  "$@" <&6 7>&1 >&4 2>&5 4>&- 5>&- 6<&- &
  exec 3<&- 4>&- 5>&- 6<&-
  wait "$!"
  st=$?
  jobs -l
  printf 'x %s %s %s\n' "$id" "$!" "$st"
  exit 0
}

printf 'ready %s\n' "$$"

"""File descriptors: how many a worker needs, and what it says when there are too few.

A worker below its need would claim a job and then fail to start it (at
``ulimit -n 13`` it used to leave every claim it made open). So
:func:`worker_room` runs before anything is read or claimed: below what one
attempt needs it refuses to start, in one line naming the limit and the
need (as the reference and fsjob-sh do, exit 1); above, it runs as many
attempts at once as the limit has room for, up to ``--concurrency``.
:func:`short_of_descriptors` tells an attempt that ran out anyway (another
process lowered the limit, a payload handler that keeps files open) from
other failures: the worker gives the job back (EXEC-3) and stops. An
attempt whose command ran waits for descriptors instead (RCPT-7's
patience, up to ``lease_ms``): it must prove its group stopped and publish
its receipt itself, so it never leaves its claim behind for lack of them.
"""

from __future__ import annotations

import os
from typing import Optional, Tuple

from .errors import FsjobError

#: The worker's own, beside what is open when it starts: the write end of
#: the guardian's pipe (WORKER-2), held for the whole run, and the main
#: thread's choosing and claiming while attempts run: a record open while
#: it is read (a spec, a claim, /proc/<pid>/stat of an owner), and one of a
#: claim's or registration's publication (the temporary file is closed
#: before the directory is opened for its fsync, PUB-5), so 2.
WORKER_NEED = 3

#: One command attempt at its peak, the fork of its group leader (EXEC-1,
#: EXEC-2, EXEC-7; command.py): stdout.<g> and stderr.<g> (2), the two
#: output pipes and the release pipe, both ends of each until the leader
#: has them (6), the job's stdin or /dev/null (1), and the pipe through which
#: subprocess learns whether the leader's exec failed (2): 11. After the
#: fork it holds 5 (the two files, the read ends of the output pipes, the
#: write end of the release pipe), and publishing exec.<g>.json, a state or
#: the receipt adds one at a time to those. A payload attempt needs 1 of its
#: own (one record published at a time) plus what its handler opens.
ATTEMPT_NEED = 11

_ADVICE = "raise the limit (ulimit -n 1024, LimitNOFILE= in a systemd unit)"


def soft_limit() -> Optional[int]:
    """The soft limit on open files (what ``ulimit -n`` sets); None where there is none."""
    try:
        import resource
    except ImportError:  # not a POSIX system
        return None
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return None if soft == resource.RLIM_INFINITY else int(soft)


def limit_and_open() -> Optional[Tuple[int, int]]:
    """The soft limit on open files and how many descriptors below it are open now; None where the system does not say (or no limit)."""
    soft = soft_limit()
    if soft is None:
        return None
    for listing in ("/proc/self/fd", "/dev/fd"):
        try:
            names = os.listdir(listing)
        except OSError:
            continue
        # The listing's own descriptor is closed again; one at or above the limit (inherited) takes no room below it.
        fds = [int(name) for name in names if name.isdigit()]
        open_now = sum(1 for fd in fds if fd < soft and _is_open(fd))
        return soft, open_now
    return None


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


def worker_room(concurrency: int, commands: bool) -> Tuple[int, Optional[str]]:
    """How many attempts at once the limit has room for, at most ``concurrency``, and what to log when that is fewer;
    FsjobError IO (errno EMFILE) when it has room for none."""
    found = limit_and_open()
    if found is None:
        return concurrency, None
    limit, open_now = found
    per_attempt = ATTEMPT_NEED if commands else 1
    what = "command attempt" if commands else "payload attempt"
    terms = f"{open_now} open now, {WORKER_NEED} for the worker, {per_attempt} for each {what}"
    room = (limit - open_now - WORKER_NEED) // per_attempt
    if room >= concurrency:
        return concurrency, None
    if room >= 1:
        return room, f"running {room} attempt(s) at once, not {concurrency}: ulimit -n {limit} has room for no more ({terms}); {_ADVICE}"
    need = open_now + WORKER_NEED + per_attempt
    raise FsjobError("IO", f"cannot start: too few file descriptors (EMFILE): ulimit -n {limit}, and fsjob work needs {need} here ({terms}); {_ADVICE}",
                     errno="EMFILE")


def short_of_descriptors(error: BaseException) -> bool:
    """Whether ``error`` (or an error it was raised from) says descriptors ran out: EMFILE, or ENFILE for the whole system."""
    import errno as errno_module

    current: Optional[BaseException] = error
    for _ in range(8):
        if current is None:
            return False
        if isinstance(current, FsjobError) and current.errno in ("EMFILE", "ENFILE"):
            return True
        if isinstance(current, OSError) and current.errno in (errno_module.EMFILE, errno_module.ENFILE):
            return True
        current = current.__cause__ or current.__context__
    return False


def no_descriptor_left() -> bool:
    """Whether this process has no descriptor left to open now (one dup(2) of stderr tells, and is closed again)."""
    import errno as errno_module

    try:
        os.close(os.dup(2))
        return False
    except OSError as error:
        return error.errno in (errno_module.EMFILE, errno_module.ENFILE)


def shortage(error: Optional[BaseException] = None) -> str:
    """What to say when descriptors ran out (of ``error``, when it says so): the limit now and what to do."""
    soft = soft_limit()
    limit = "" if soft is None else f": ulimit -n {soft}"
    said = "" if error is None else f": {error}"
    return f"too few file descriptors (EMFILE){limit}{said}; {_ADVICE}"

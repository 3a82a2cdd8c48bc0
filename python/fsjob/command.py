"""Running one attempt of a command job (spec/running.md).

The armed handshake (EXEC-2, EXEC-3): the command's process group is created
first, with a leader (:mod:`fsjob.gate`, run by this interpreter) that
waits on a pipe before it executes anything. Only after exec.<g>.json is
durable is the leader released; if this process dies before that, the
leader reads end of file and exits 125 without running the command. So no
command ever runs unrecorded, and recovery can always find and stop what is
running.

The leader starts through subprocess (fork and exec: a new session and
process group, only descriptors 0 to 2 and the release pipe, which it
closes before the command starts); it resets every signal to its default
and the mask to empty, sets the umask to 0022 (EXEC-13) and executes the
command as execvp(3) would (EXEC-4: 127 not found, 126 not executable). A
sh leader could not do it: dash cannot name a descriptor above 9, and
posix_spawn(3) leaves glibc's two internal signals ignored in the child.
"""

from __future__ import annotations

import os
import pwd
import select
import signal
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Optional

from .clock import mono_ms
from .bytesform import bytes_of_text
from .constants import CANCEL_GRACE, CONTROL_POLL, DEFAULT_COMMAND_PATH, DRAIN_LIMIT, OUTPUT_MAX, renew_interval
from .descriptors import no_descriptor_left, shortage
from .errors import FsjobError
from .generation import Generation, Superseded
from .guardian import Guardian
from .identity import group_state, process_start, self_identity, signal_group
from .outputs import Capture
from .safefs import create_exclusive, exists, refuse_unsafe

#: The leader's program (gate.py, run by this interpreter without site or PYTHON* variables).
GATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gate.py")

#: Which causes override an earlier one (EXEC-14, CANCEL-3, LEASE-6, OWN-1).
_RANK = {"force": 1, "fenced": 2, "superseded": 3}


def consumer_home() -> str:
    """EXEC-6: this consumer's HOME when it is absolute, else its user's home in the user database, else /."""
    home = os.environ.get("HOME", "")
    if home.startswith("/"):
        return home
    try:
        entry = pwd.getpwuid(os.geteuid()).pw_dir
        if entry.startswith("/"):
            return entry
    except KeyError:
        pass
    return "/"


def command_env(spec: Dict[str, Any], job_id: str, attempt: int, root: str) -> Dict[str, bytes]:
    """EXEC-6: exactly PATH, HOME, FSJOB_JOB_ID, FSJOB_ATTEMPT, FSJOB_QUEUE and the spec's env; SPEC-3: each value as the bytes the spec holds."""
    env = {name: os.fsencode(value) for name, value in (("PATH", DEFAULT_COMMAND_PATH), ("HOME", consumer_home()), ("FSJOB_JOB_ID", job_id),
                                                          ("FSJOB_ATTEMPT", str(attempt)), ("FSJOB_QUEUE", root))}
    env.update((name, bytes_of_text(value)) for name, value in spec["env"].items())
    return env


def command_argv(spec: Dict[str, Any]) -> List[bytes]:
    """SPEC-3: the command line as the bytes the spec holds."""
    return [bytes_of_text(arg) for arg in spec["argv"]]


class Controls:
    """What the worker tells a running attempt, and what it asks it (called from the attempt's thread).

    ``shutdown_at`` gives the monotonic instant after which running attempts
    are stopped once the consumer shuts down (WORKER-3); ``preempt_waiter``
    says whether a non-preemptible job of the lane waits (PREEMPT-1);
    ``started`` hears how the attempt ended before its generation ends (an
    attempt that was not released: why it could not start, EXEC-3).
    """

    def __init__(self, shutdown_at: Callable[[], Optional[int]] = lambda: None, preempt_waiter: Callable[[], bool] = lambda: False,
                 log: Callable[[str], None] = lambda text: None,
                 started: Callable[["Outcome"], None] = lambda outcome: None) -> None:
        self.shutdown_at = shutdown_at
        self.preempt_waiter = preempt_waiter
        self.log = log
        self.started = started


class Outcome:
    """How an attempt ended (the caller publishes the end record or the receipt)."""

    def __init__(self, released: bool, stopped_by: Optional[str], exit: Optional[int] = None, signal: Optional[str] = None,
                 started_ms: Optional[int] = None, stdout: Optional[Dict[str, Any]] = None, stderr: Optional[Dict[str, Any]] = None,
                 group_stopped: bool = True, message: Optional[str] = None, result: Any = None, error: Optional[BaseException] = None) -> None:
        self.released = released
        self.stopped_by = stopped_by
        self.exit = exit
        self.signal = signal
        self.started_ms = started_ms
        self.stdout = stdout
        self.stderr = stderr
        self.group_stopped = group_stopped
        self.message = message
        self.result = result
        #: Why an attempt that was not released could not start (EXEC-3), when an error said so.
        self.error = error


def _open_stdin(path: str, uid: int, size: int) -> int:
    """The job's stdin, opened without following or blocking and checked again on the descriptor (EXEC-7, SEC-3)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        refuse_unsafe(path, st, "file", uid)
        if st.st_nlink != 1 or st.st_size != size:
            raise FsjobError("NOT_REGULAR", f"{path} changed after it was checked", path=path, clause="EXEC-7")
        os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


class CommandRun:
    """One attempt of a command job, run in the calling thread."""

    def __init__(self, gen: Generation, spec: Dict[str, Any], attempt: int, uid: int, guardian: Guardian, controls: Controls, output_limit: int = OUTPUT_MAX) -> None:
        self.gen = gen
        self.spec = spec
        self.attempt = attempt
        self.uid = uid
        self.guardian = guardian
        self.controls = controls
        self.bound = min(int(spec["max_output_bytes"]), output_limit)
        self.pid = 0
        self.start = ""
        self.reaped: Optional[int] = None
        self.stopped_by: Optional[str] = None
        self.kill_at: Optional[int] = None

    def run(self) -> Outcome:
        """EXEC-1..EXEC-14 for one attempt; never raises for the command's own behaviour."""
        try:
            release_w = self._launch()
        except (FsjobError, OSError) as error:
            # EXEC-3: nothing was recorded, so nothing ran: the caller gives the generation back (an end record, released).
            message = error.message if isinstance(error, FsjobError) else f"could not start the command's group: {error}"
            return Outcome(False, "start_failed", message=message, error=error)
        try:
            started = self._record()
        except BaseException as error:
            self._abort(release_w)
            if isinstance(error, Superseded):
                return Outcome(False, "superseded")
            if isinstance(error, (FsjobError, OSError)):
                return Outcome(False, "start_failed", message=error.message if isinstance(error, FsjobError) else str(error), error=error)
            raise
        # The release: the command starts now.
        try:
            os.write(release_w, b"\n")
        finally:
            os.close(release_w)
        return self._supervise(started)

    def _launch(self) -> int:
        """EXEC-1 and EXEC-2: the output files, the pipes and the group's leader, waiting; returns the write end of its release pipe.

        What fails here (a file that exists, no descriptor left, no process
        left) closes every descriptor it opened and kills nothing: no leader
        was started, or it was killed and reaped before this raises.
        """
        gen, spec = self.gen, self.spec
        out_path, err_path = os.path.join(gen.dir, f"stdout.{gen.gen}"), os.path.join(gen.dir, f"stderr.{gen.gen}")
        # EXEC-1: the output files, created exclusively, before the execution is recorded.
        opened: List[int] = []
        try:
            out_fd = create_exclusive(out_path)
            opened.append(out_fd)
            err_fd = create_exclusive(err_path)
            opened.append(err_fd)
            out_r, out_w = os.pipe()
            opened += (out_r, out_w)
            err_r, err_w = os.pipe()
            opened += (err_r, err_w)
            release_r, release_w = os.pipe()
            opened += (release_r, release_w)
        except BaseException:
            for fd in opened:
                os.close(fd)
            raise
        os.set_blocking(out_r, False)
        os.set_blocking(err_r, False)
        keep = str(spec.get("output_keep", "head"))  # EXEC-17; absent in every 1.0 spec
        self.out = Capture(out_r, out_fd, out_path, self.bound, keep)
        self.err = Capture(err_r, err_fd, err_path, self.bound, keep)
        stdin_fd = -1
        try:
            if spec["stdin"] is not None:
                stdin_fd = _open_stdin(os.path.join(gen.dir, "stdin"), self.uid, int(spec["stdin"]["bytes"]))
            else:
                stdin_fd = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
            env = command_env(spec, gen.job_id, self.attempt, gen.root)
            # SPEC-3: bytes go to the gate as bytes (it keeps them in surrogate escapes and execs them as given).
            pairs = [name.encode("ascii") + b"=" + value for name, value in env.items()]
            no_env: Dict[str, str] = {}
            # The leader: a new session and process group (EXEC-2), only fds 0-2 and the release pipe.
            self.proc = subprocess.Popen(
                [sys.executable, "-S", "-E", GATE, str(release_r), str(len(pairs)), *pairs, *command_argv(spec)],
                stdin=stdin_fd, stdout=out_w, stderr=err_w, pass_fds=(release_r,), close_fds=True,
                cwd=spec["cwd"], env=no_env, start_new_session=True, restore_signals=True,
            )
            self.pid = self.proc.pid
        except BaseException:
            for fd in (stdin_fd, out_w, err_w, release_r, release_w):
                if fd >= 0:
                    os.close(fd)
            self.out.abandon()
            self.err.abandon()
            raise
        for fd in (stdin_fd, out_w, err_w, release_r):
            os.close(fd)
        return release_w

    def _record(self) -> int:
        """ID-2, LEASE-5, EXEC-3: read the leader's start, tell the guardian, publish exec.<g>.json durably."""
        start = process_start(self.pid)
        if start is None:
            raise FsjobError("IO", f"the group leader {self.pid} exited before it was recorded", clause="EXEC-3")
        self.start = start
        if not self.guardian.alive():
            raise FsjobError("IO", "the guardian is not running: no command starts without one (WORKER-2)", clause="WORKER-2")
        self.guardian.track(self.pid, start, self.gen.deadline_mono)
        me = self_identity()
        recorded = self.gen.time_ms()
        self.gen.publish_exec(self.attempt, {"pgid": self.pid, "start": start, "boot_id": me["boot_id"], "pid_ns": me["pid_ns"]}, recorded)
        return recorded

    def _abort(self, release_w: int) -> None:
        """Never released: kill the gate and report the attempt as not started (EXEC-3)."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass
        os.close(release_w)
        self._reap(block=True)
        self.guardian.untrack(self.pid)
        self.out.abandon()
        self.err.abandon()

    def _reap(self, block: bool = False) -> bool:
        """Whether the leader has exited (its status in ``reaped``: negative for a signal, as subprocess says)."""
        if self.reaped is not None:
            return True
        code = self.proc.wait() if block else self.proc.poll()
        if code is None:
            return False
        self.reaped = code
        return True

    def _signal(self, sig: int) -> None:
        if self.reaped is None:
            try:
                os.killpg(self.pid, sig)
            except OSError:
                pass
        else:
            signal_group(self.pid, self.start, sig)

    def stop(self, reason: str, grace_ms: int) -> None:
        """Stop the group for ``reason``: SIGKILL at once when ``grace_ms`` is 0, else SIGTERM and SIGKILL after it.

        EXEC-14: the first cause decides the outcome, except that a force
        cancel escalates a graceful stop (CANCEL-3), and a lapsed lease
        (LEASE-6) or a lost claim (OWN-1) override everything before them.
        """
        rank = _RANK.get(reason, 0)
        if self.stopped_by is not None and rank <= _RANK.get(self.stopped_by, 0):
            return
        self.stopped_by = reason
        if grace_ms == 0:
            self._signal(signal.SIGKILL)
            self.kill_at = None
        else:
            self._signal(signal.SIGTERM)
            self.kill_at = mono_ms() + grace_ms

    def _pump(self, timeout: float) -> None:
        fds = [c.pipe_fd for c in (self.out, self.err) if not c.eof and c.pipe_fd >= 0]
        if not fds:
            if timeout > 0:
                select.select([], [], [], timeout)
            return
        readable, _, _ = select.select(fds, [], [], timeout)
        if readable:
            self.out.read()
            self.err.read()

    def _heartbeat(self, phase: str) -> None:
        """LEASE-1 and LEASE-5 (renew, then tell the guardian); LEASE-6 when the lease lapsed."""
        gen = self.gen
        if self.stopped_by in ("superseded", "fenced"):
            return
        if mono_ms() - gen.renewed_mono >= gen.lease_ms:
            self.controls.log(f"{gen.dir}: the lease lapsed; stopping the attempt (LEASE-6)")
            self.stop("fenced", 0)
            return
        if mono_ms() - gen.renewed_mono < renew_interval(gen.lease_ms):
            return
        try:
            gen.heartbeat(phase, self.attempt, self.out.total, self.err.total)
            self.guardian.renewed(self.pid, gen.deadline_mono)
        except Superseded:
            self.stop("superseded", 0)
        except FsjobError as error:
            self.controls.log(f"{gen.dir}: cannot renew the lease: {error.message}")

    def _controls(self, deadline: int, next_preempt: List[int]) -> None:
        gen, spec = self.gen, self.spec
        if gen.superseded():
            if self.stopped_by != "superseded":
                self.controls.log(f"{gen.dir}: superseded by generation {gen.gen + 1} (OWN-1)")
            self.stop("superseded", 0)
            return
        now = mono_ms()
        if exists(os.path.join(gen.dir, "cancel-force.json")):
            self.stop("force", 0)
        elif self.stopped_by is None and exists(os.path.join(gen.dir, "cancel.json")):
            self.stop("cancel", CANCEL_GRACE)
        if self.stopped_by is None and now >= deadline:
            self.stop("timeout", int(spec["kill_grace_ms"]))
        if self.stopped_by is None and spec["preemptible"] and spec["lane"] is not None and now >= next_preempt[0]:
            next_preempt[0] = now + 1000
            if self.controls.preempt_waiter():
                self.controls.log(f"{gen.dir}: preempted by a waiting job of lane {spec['lane']!r} (PREEMPT-1)")
                self.stop("preempt", int(spec["kill_grace_ms"]))
        shutdown = self.controls.shutdown_at()
        if self.stopped_by is None and shutdown is not None and now >= shutdown:
            self.stop("shutdown", int(spec["kill_grace_ms"]))
        if self.kill_at is not None and now >= self.kill_at:
            self._signal(signal.SIGKILL)
            self.kill_at = None
        self._heartbeat("running" if self.stopped_by is None else "stopping")

    def _supervise(self, started_ms: int) -> Outcome:
        spec = self.spec
        deadline = mono_ms() + int(spec["timeout_ms"])
        next_control = 0
        next_preempt = [mono_ms() + 1000]
        nap = 0.005
        while not self._reap():
            self._pump(nap)
            nap = min(nap * 2, CONTROL_POLL / 1000)
            if mono_ms() >= next_control:
                self._controls(deadline, next_preempt)
                next_control = mono_ms() + CONTROL_POLL
        exit_code = self.reaped or 0
        code: Optional[int] = exit_code if exit_code >= 0 else None
        sig: Optional[str] = None if exit_code >= 0 else signal.Signals(-exit_code).name
        if self.stopped_by != "superseded" and mono_ms() - self.gen.renewed_mono >= self.gen.lease_ms:
            # LEASE-6: the owner did not run for lease_ms (its guardian stopped the group): a counted failure.
            self.stopped_by = "fenced"
        # EXEC-11: nothing of the job runs in its group after its attempt ends.
        stopped = self._finish_group()
        if stopped:
            self.guardian.untrack(self.pid)
        total_known = self._drain()
        notes: List[str] = []
        if not total_known:
            notes.append("a process outside the group kept an output open; its total is unknown (EXEC-12, EXEC-16)")
        self.out.finish()
        self.err.finish()
        return Outcome(True, self.stopped_by, code, sig, started_ms, self.out.summary(self.gen.gen, total_known), self.err.summary(self.gen.gen, total_known),
                       stopped, "; ".join(notes) or None)

    def _group_state(self) -> str:
        """ID-8 for the attempt's group; while no descriptor is left to read /proc with, it waits for one, as RCPT-7
        waits to publish (up to lease_ms): "unknown" would leave the claim open (UNPROVEN) until this worker is gone."""
        state = group_state(self.pid, self.start)
        if state != "unknown" or not no_descriptor_left():
            return state
        self.controls.log(f"{self.gen.dir}: waiting for a file descriptor to prove generation {self.gen.gen}'s group stopped: {shortage()}")
        give_up = mono_ms() + self.gen.lease_ms
        pause = 0.2
        while state == "unknown" and no_descriptor_left() and mono_ms() < give_up:
            time.sleep(pause)
            pause = min(pause * 2, 2.0)
            state = group_state(self.pid, self.start)
        return state

    def _finish_group(self) -> bool:
        """EXEC-11: SIGTERM what is left of the group, SIGKILL after kill_grace_ms; True once proven stopped (ID-8)."""
        state = self._group_state()
        if state == "stopped":
            return True
        if state == "running":
            signal_group(self.pid, self.start, signal.SIGTERM)
            kill_at = mono_ms() + int(self.spec["kill_grace_ms"])
            give_up = kill_at + 30_000
            while True:
                self._pump(0.05)
                self._heartbeat("stopping")
                state = self._group_state()
                if state != "running":
                    break
                now = mono_ms()
                if now >= kill_at:
                    signal_group(self.pid, self.start, signal.SIGKILL)
                    kill_at = now + 1000
                if now >= give_up:
                    break
        return state == "stopped"

    def _drain(self) -> bool:
        """EXEC-12: wait at most DRAIN_LIMIT for end of file on both pipes; False when it stopped waiting."""
        end = mono_ms() + DRAIN_LIMIT
        while not (self.out.eof and self.err.eof):
            left = end - mono_ms()
            if left <= 0:
                return False
            self._pump(min(left, 100) / 1000)
        return True


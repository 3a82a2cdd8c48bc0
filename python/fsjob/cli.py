"""``python3 -m fsjob``: the command line of the Python implementation, with
the roles of a conformance manifest (spec/tools.md MANIFEST-1, MANIFEST-4).

Exit status: 0 success, 1 failure, 2 usage, 3 (enqueue) a held dedupe key.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

from .constants import LEASE_MAX, LEASE_MIN
from .errors import FsjobError
from .names import record_name_of
from .queue import Queue
from .records import inspect_bytes


def _log(text: str) -> None:
    sys.stderr.write(f"fsjob-py: {text}\n")
    sys.stderr.flush()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m fsjob", description="fsjob 1.1 for Python: a producer and a consumer of the fsjob protocol.")
    commands = parser.add_subparsers(dest="command", required=True)

    def with_queue(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("--queue", "-q", required=True, help="the queue directory")
        return sub

    with_queue("init", "create a queue (idempotent)")
    enqueue = with_queue("enqueue", "enqueue a job; prints its id")
    enqueue.add_argument("--request", help="a request file (schemas/request.schema.json); '-' reads stdin")
    enqueue.add_argument("--stdin-file", help="the job's standard input, from this file")
    enqueue.add_argument("--dedupe", help="dedupe key (exit 3 when an unfinished job holds it)")
    enqueue.add_argument("--lane", help="lane key: at most one running job per lane")
    enqueue.add_argument("--priority", type=int, default=0)
    enqueue.add_argument("--max-attempts", type=int, default=1)
    enqueue.add_argument("--timeout", type=float, help="seconds")
    enqueue.add_argument("--cwd", help="working directory of the command (default: this one)")
    enqueue.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    enqueue.add_argument("--max-output-bytes", type=int, help="bytes of each output stream kept")
    enqueue.add_argument("--output-keep", choices=("head", "tail", "head_tail"), help="which bytes of a longer output are kept (EXEC-17)")
    enqueue.add_argument("--delay", type=float, help="seconds from now before which no consumer starts the job (DELAY-1)")
    enqueue.add_argument("argv", nargs="*", help="the command and its arguments (after --)")
    work_cmd = with_queue("work", "run jobs")
    work_cmd.add_argument("--drain", action="store_true", help="exit once nothing remains this consumer can make progress on")
    work_cmd.add_argument("--concurrency", "-c", type=int, default=1)
    work_cmd.add_argument("--handlers", action="append", default=[], metavar="MODULE:NAME",
                          help="a dict of payload handlers (name -> callable) to import, e.g. mymod:HANDLERS")
    work_cmd.add_argument("--no-commands", action="store_true", help="leave command jobs to other consumers")
    work_cmd.add_argument("--shutdown-grace", type=float, default=10.0, help="seconds running attempts get after SIGTERM")
    work_cmd.add_argument("--lease", type=float, default=30.0, help="lease of each claim in seconds, 3 to 3600")
    wait = with_queue("wait", "wait for a job's receipt; exits with its exit code")
    wait.add_argument("id")
    wait.add_argument("--timeout", type=float)
    wait.add_argument("--json", action="store_true", help="print the receipt record")
    status = with_queue("status", "print a job's status")
    status.add_argument("id")
    cancel = with_queue("cancel", "cancel a job")
    cancel.add_argument("id")
    cancel.add_argument("--force", action="store_true", help="kill at once (cancel-force.json)")
    logs = with_queue("logs", "print a job's kept output")
    logs.add_argument("id")
    pause = with_queue("pause", "pause consumption: no consumer claims a job until resume (PAUSE-1)")
    pause.add_argument("--reason", help="why, for people (at most 1024 bytes)")
    with_queue("resume", "resume a paused queue")
    with_queue("recover", "recover orphaned claims, rebuild the ready index, remove stale temporary files")
    check = commands.add_parser("check-record", help="check one record file as REC-4 orders it; prints valid or the finding")
    check.add_argument("type")
    check.add_argument("file")
    check.add_argument("name", nargs="?", help="the path it is stored under, relative to a queue root")
    check_request = commands.add_parser("check-request", help="check a request file (REQ-1)")
    check_request.add_argument("file")
    return parser


def _load_handlers(specs: List[str]) -> Dict[str, Any]:
    handlers: Dict[str, Any] = {}
    for spec in specs:
        module_name, _, attr = spec.partition(":")
        module = importlib.import_module(module_name)
        value = getattr(module, attr or "HANDLERS")
        if not isinstance(value, dict):
            raise FsjobError("USAGE", f"{spec} is not a dict of handlers")
        handlers.update(value)
    return handlers


def _enqueue(args: argparse.Namespace) -> int:
    queue = Queue.open(args.queue)
    if args.request is not None:
        if args.argv:
            raise FsjobError("USAGE", "give either --request or a command, not both")
        if args.request == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(args.request, "rb") as handle:
                data = handle.read()
        job_id = queue.enqueue_request(data)
    else:
        if not args.argv:
            raise FsjobError("USAGE", "no command given (enqueue --queue Q -- COMMAND ARGS...)")
        stdin: Optional[bytes] = None
        if args.stdin_file is not None:
            with open(args.stdin_file, "rb") as handle:
                stdin = handle.read()
        env = dict(item.split("=", 1) for item in args.env if "=" in item)
        job_id = queue.enqueue(args.argv, stdin=stdin, env=env or None, cwd=args.cwd, timeout=args.timeout, lane=args.lane,
                               dedupe=args.dedupe, priority=args.priority, max_attempts=args.max_attempts,
                               max_output_bytes=args.max_output_bytes, output_keep=args.output_keep,
                               not_before=None if args.delay is None else time.time() + args.delay)
    sys.stdout.write(job_id + "\n")
    return 0


def _check_record(args: argparse.Namespace) -> int:
    expect = record_name_of(args.name) if args.name else None
    type_ = expect.type if expect is not None else args.type
    with open(args.file, "rb") as handle:
        data = handle.read()
    inspection = inspect_bytes(type_, data, args.file, expect)
    print("valid" if inspection.ok else f"invalid: {inspection.findings[0].code}: {inspection.reason}")
    return 0 if inspection.ok else 1


def run(argv: Optional[Sequence[str]] = None) -> int:
    """The command line; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        return _dispatch(args)
    except FsjobError as error:
        _log(f"{error.code}: {error.message}")
        if error.code == "DEDUPE_HELD":
            return 3
        if error.code == "USAGE":
            return 2
        return 1
    except OSError as error:
        _log(f"{error}")
        return 1
    except KeyboardInterrupt:
        return 130


def _dispatch(args: argparse.Namespace) -> int:
    command = args.command
    if command == "check-record":
        return _check_record(args)
    if command == "check-request":
        with open(args.file, "rb") as handle:
            inspection = inspect_bytes("request", handle.read(), args.file)
        print("valid" if inspection.ok else f"invalid: {inspection.reason}")
        return 0 if inspection.ok else 1
    if command == "init":
        Queue.init(args.queue)
        return 0
    if command == "enqueue":
        return _enqueue(args)
    queue = Queue.open(args.queue)
    if command == "work":
        from .worker import work

        os.umask(0o077)
        lease = int(args.lease * 1000)
        if not LEASE_MIN <= lease <= LEASE_MAX:
            raise FsjobError("USAGE", f"--lease is {LEASE_MIN // 1000} to {LEASE_MAX // 1000} seconds")
        return work(queue, _load_handlers(args.handlers), args.concurrency, drain=args.drain, commands=not args.no_commands,
                    lease_ms=lease, shutdown_grace=args.shutdown_grace, log=_log)
    if command == "wait":
        receipt = queue.wait(args.id, args.timeout)
        if args.json:
            print(json.dumps(receipt.record, ensure_ascii=False, separators=(",", ":")))
        else:
            print(receipt.outcome)
        return int(receipt.exit_code)
    if command == "status":
        state = queue.status(args.id)
        line: Dict[str, Any] = {"job_id": state.job_id, "status": state.status, "gen": state.gen, "attempts": state.attempts}
        if state.receipt is not None:
            line["outcome"] = state.receipt.outcome
        if state.note:
            line["note"] = state.note
        if state.not_before_ms is not None:
            line["not_before_ms"] = state.not_before_ms
        print(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
        return 1 if state.status == "missing" else 0
    if command == "cancel":
        try:
            queue.cancel(args.id, force=args.force)
        except FsjobError as error:
            if error.code in ("FINISHED", "NOT_FOUND"):
                _log(error.message)
                return 1
            raise
        return 0
    if command == "logs":
        output = queue.logs(args.id)
        sys.stdout.buffer.write(output.stdout)
        sys.stdout.flush()
        sys.stderr.buffer.write(output.stderr)
        sys.stderr.flush()
        return 0
    if command == "pause":
        if not queue.pause(args.reason):
            _log(f"{queue.root} was paused already")
        return 0
    if command == "resume":
        if not queue.resume():
            _log(f"{queue.root} was not paused")
        return 0
    if command == "recover":
        from .recover import recover

        report = recover(queue, _log)
        for done in report.recovered:
            _log(done)
        return 1 if report.left_alone else 0
    raise FsjobError("USAGE", f"unknown command {command}")

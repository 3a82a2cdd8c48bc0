"""``fsjob`` (installed by pip) and ``python3 -m fsjob``: the command line of
the Python implementation, with the options, units, environment and exit
statuses of the reference's (``cli_options.json`` is the one table of
options both follow; test/python/cli-options.test.ts checks both), and the
roles of a conformance manifest (spec/tools.md MANIFEST-1, MANIFEST-4).

Exit status: 0 success, 1 failure, 2 usage, 3 (enqueue) a held dedupe key,
4 no such job, 75 (wait) --timeout elapsed; ``wait`` exits with the job's
exit code (EXEC-10), for several jobs 0 only when every one succeeded, else
the exit code of the first (in the order given) that did not.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import stat
import sys
import time
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Optional, Sequence, Set

from . import constants, jsontext
from .errors import FsjobError
from .names import GATED_SUFFIX, is_job_id, record_name_of
from .queue import Queue
from .records import RECORD_TYPES, inspect_bytes
from .units import format_clock, format_elapsed, parse_bytes, parse_duration, parse_integer, parse_pairs

_TABLE_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cli_options.json")
#: First look for a live worker after this long, then every LOOK_EVERY seconds (as the reference's).
_FIRST_LOOK = 1.5
_LOOK_EVERY = 5.0
_STATUSES = ("queued", "held", "blocked", "delayed", "retrying", "claimed", "running", "cancelling", "expired", "orphaned", "finished", "damaged",
             "succeeded", "failed", "timed_out", "cancelled", "force_stopped", "lost", "rejected")
#: The reference's exit statuses by error code (src/cli/exit.ts); every other code is 1.
_EXIT_OF = {"USAGE": 2, "DEDUPE_HELD": 3, "NOT_FOUND": 4, "TIMEOUT": 75}


def _log(text: str) -> None:
    sys.stderr.write(f"fsjob: {text}\n")
    sys.stderr.flush()


def _table() -> Dict[str, Any]:
    with open(_TABLE_PATH, encoding="utf-8") as handle:
        value: Dict[str, Any] = json.load(handle)
    return value


def _ours(entry: Dict[str, Any]) -> bool:
    return bool(entry.get("only", "python") == "python")


def _bound(value: Any) -> Optional[int]:
    """A bound of the table: a number, or the name of a constant of fsjob/constants.py."""
    if value is None or isinstance(value, int):
        return value
    bound: int = getattr(constants, str(value))
    return bound


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as the reference does: ``fsjob: ...`` and exit 2 (run() says it, as JSON too under --json)."""

    def error(self, message: str) -> Any:
        self.print_usage(sys.stderr)
        raise FsjobError("USAGE", message)


def _parser(prog: str) -> argparse.ArgumentParser:
    from . import __version__

    table = _table()
    parser = _Parser(prog=prog, allow_abbrev=False, description="fsjob for Python: a producer and a consumer of the fsjob protocol (spec/README.md).")
    parser.add_argument("--version", action="version", version=__version__)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, command in table["commands"].items():
        if not _ours(command):
            continue
        sub = commands.add_parser(name, help=command["help"], description=command["help"], allow_abbrev=False)
        if command.get("queue", True):
            for option in table["global"]:
                if _ours(option):
                    sub.add_argument(*option["flags"], dest=option["flags"][0][2:].replace("-", "_"), help=option["help"])
        for positional in command.get("positionals", []):
            nargs = positional.get("nargs")
            sub.add_argument(positional["name"], help=positional["help"], **({} if nargs is None else {"nargs": nargs}))
        for option in command.get("options", []):
            if not _ours(option):
                continue
            kind = option["kind"]
            extra: Dict[str, Any] = {"help": option["help"], "dest": option["flags"][0][2:].replace("-", "_")}
            if kind == "flag":
                extra["action"] = "store_true"
            elif kind == "pairs":
                extra.update(action="append", default=[], metavar="NAME=VALUE")
            elif kind == "list":
                # --status A B and --after ID ID (as pueue takes them); the others one value each
                several = name == "status" or option["flags"][0] == "--after"
                extra.update(action="extend" if several else "append", nargs="+" if several else None, default=[])
            elif kind == "choice":
                extra["choices"] = option["choices"]
            if "default" in option:
                extra["default"] = str(option["default"])
            sub.add_argument(*option["flags"], **extra)
    return parser


def _option(command: str, flag: str) -> Dict[str, Any]:
    for option in _table()["commands"][command]["options"]:
        if flag in option["flags"]:
            found: Dict[str, Any] = option
            return found
    raise KeyError(flag)


_PARSERS = {"duration": parse_duration, "int": parse_integer, "bytes": parse_bytes}


def _number(args: argparse.Namespace, command: str, flag: str) -> Optional[int]:
    """The value of a duration (ms), int or bytes option, read in its unit within the table's bounds; None when not given."""
    text = getattr(args, flag.replace("-", "_"))
    if text is None:
        return None
    option = _option(command, f"--{flag}")
    return _PARSERS[option["kind"]](str(text), flag, _bound(option.get("min")), _bound(option.get("max")))


def _queue_path(args: argparse.Namespace) -> str:
    """--queue, else $FSJOB_QUEUE, else the per-user default under the XDG state directory (as the reference's)."""
    given = getattr(args, "queue", None)
    if given == "":
        # An empty shell variable: never the default queue in its place (a job would land in another queue).
        raise FsjobError("USAGE", "--queue was given an empty value; name the queue directory, or leave the option out for its default")
    if given:
        return str(given)
    from_env = os.environ.get("FSJOB_QUEUE", "")
    if from_env:
        return os.path.abspath(from_env)
    state = os.environ.get("XDG_STATE_HOME", "")
    base = state if os.path.isabs(state) else os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "fsjob", "default")


def _open(args: argparse.Namespace) -> Queue:
    # Queue.open's refusals say how to make the queue where init can (a missing root, one without fsjob.json), and not where it cannot.
    return Queue.open(_queue_path(args))


#: Shortest id prefix taken (the reference's PREFIX_MIN, src/cli/queue-arg.ts).
_PREFIX_MIN = 4


def _job_id(queue: Queue, typed: str) -> str:
    """A job id as typed: a whole id (LAYOUT-4), or a unique prefix of one or of its random part, as the reference's
    resolveJobId (src/cli/queue-arg.ts). Anything else is a usage error (exit 2), never a name joined to a path (SEC-7)."""
    if is_job_id(typed):
        return typed
    if len(typed) < _PREFIX_MIN or re.fullmatch(r"[0-9a-f-]+", typed) is None:
        raise FsjobError("USAGE", f"{json.dumps(typed)} is not a job id (LAYOUT-4: 19 digits, \"-\", 16 hex digits, as fsjob enqueue prints) "
                         f"nor {_PREFIX_MIN} or more of its first digits or of its hex part", clause="LAYOUT-4")
    matches = [found for found in queue.job_ids() if found.startswith(typed) or found[20:].startswith(typed)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise FsjobError("NOT_FOUND", f"no job id in {queue.root} starts with {typed} (gc may have removed it after it finished); fsjob status lists the jobs",
                         path=queue.path("jobs"))
    shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
    raise FsjobError("USAGE", f"{typed} is the start of {len(matches)} job ids ({shown}); type more of it")


def _job_ids(queue: Queue, typed: List[str]) -> List[str]:
    """Each id resolved (_job_id); an id named twice counts once, in the order first given."""
    ids: List[str] = []
    for text in typed:
        found = _job_id(queue, text)
        if found not in ids:
            ids.append(found)
    return ids


def _json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _read_input(name: str, bound: int, what: str) -> bytes:
    """A file, or standard input for "-", at most ``bound`` bytes."""
    if name == "-":
        data = sys.stdin.buffer.read(bound + 1)
    else:
        try:
            with open(name, "rb") as handle:
                data = handle.read(bound + 1)
        except OSError as error:
            raise FsjobError("USAGE", f"cannot read the {what} {name}: {error.strerror}", path=name) from error
    if len(data) > bound:
        raise FsjobError("USAGE", f"the {what} {name} is larger than {bound} bytes")
    return data


# --- the commands ------------------------------------------------------------

def _init(args: argparse.Namespace) -> int:
    root = os.path.abspath(_queue_path(args))
    existed = os.path.lexists(os.path.join(root, "fsjob.json"))
    queue = Queue.init(root)
    created = not existed
    if args.json:
        with open(queue.path("fsjob.json"), "rb") as handle:
            record = json.loads(handle.read())
        _json({"queue": queue.root, "created": created, "record": record})
    else:
        sys.stdout.write(f"{'created queue' if created else 'already a queue:'} {queue.root}\n")
    return 0


#: Options that describe one job; --request and --batch carry these in the request instead.
_JOB_FLAGS = ("timeout", "queue-deadline", "max-attempts", "retry-delay", "lane", "dedupe", "priority", "stdin", "env", "cwd", "label",
              "max-output", "kill-grace", "preemptible", "handler", "payload", "delay", "at", "output-keep", "after", "hold", "lane-slots")


def _given(args: argparse.Namespace, flag: str) -> bool:
    value = getattr(args, flag.replace("-", "_"))
    return value not in (None, False, [])


def _not_before(args: argparse.Namespace) -> Optional[int]:
    """--delay D or --at TIME as the instant the job may start (DELAY-1); None for neither."""
    if args.delay is not None and args.at is not None:
        raise FsjobError("USAGE", "give --delay or --at, not both")
    now = int(time.time() * 1000)
    if args.delay is not None:
        ms = _number(args, "enqueue", "delay") or 0
        return None if ms == 0 else now + ms
    if args.at is None:
        return None
    text = str(args.at).strip()
    at: Optional[int] = None
    if re.match(r"^@[0-9]+$", text):
        at = int(text[1:]) * 1000
    else:
        try:
            # As the reference's Date.parse: a date alone is UTC, a date and time without a zone local time.
            if re.match(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$", text):
                moment = datetime.fromisoformat(text).replace(tzinfo=timezone.utc)
            else:
                moment = datetime.fromisoformat(re.sub(r"Z$", "+00:00", text.replace(" ", "T", 1)))
            at = int(moment.timestamp() * 1000)
        except ValueError:
            at = None
    if at is None:
        raise FsjobError("USAGE", f"--at \"{text}\" is not a time; write 2026-12-01T18:30 (local), 2026-12-01T18:30Z, or @1796000000 (seconds since the epoch)")
    if at <= now:
        raise FsjobError("USAGE", f"--at {text} is in the past; a job may start at once without it")
    if at - now > constants.DELAY_MAX:
        raise FsjobError("USAGE", f"--at {text} is too far ahead: at most 365d from now")
    return at


def _request(args: argparse.Namespace) -> Dict[str, Any]:
    """The request (schemas/request.schema.json) the options describe, as the reference's enqueue builds it."""
    request: Dict[str, Any] = {}
    if args.handler is not None:
        if args.cmd:
            raise FsjobError("USAGE", "give either a command (after --) or --handler, not both (SPEC-1)", clause="SPEC-1")
        request["handler"] = args.handler
        if args.payload is not None:
            # REQ-2: kept as written, number for number.
            payload = jsontext.parse_payload_text(args.payload)
            if isinstance(payload, str):
                raise FsjobError("USAGE", f"--payload is not one JSON value: {payload}")
            request["payload"] = payload
    else:
        if args.payload is not None:
            raise FsjobError("USAGE", "--payload needs --handler: only payload jobs have a payload (SPEC-1)", clause="SPEC-1")
        if not args.cmd:
            raise FsjobError("USAGE", "name the command to run after --, for example: fsjob enqueue -- make test (or use --handler, --request or --batch)")
        request["argv"] = list(args.cmd)
    if args.cwd == "":
        # An empty --cwd (a shell variable that was empty) names no directory: abspath would make it this one.
        raise FsjobError("USAGE", '--cwd "" names no directory; give the directory the command runs in, or leave --cwd out for the current one')
    if args.cwd is not None:
        request["cwd"] = os.path.abspath(args.cwd)
    for key, value in (("env", parse_pairs(args.env, "env", os.environ)), ("labels", parse_pairs(args.label, "label"))):
        if value is not None:
            request[key] = value
    for flag in ("timeout", "kill-grace", "queue-deadline", "retry-delay", "max-attempts", "priority", "max-output", "lane-slots"):
        number = _number(args, "enqueue", flag)
        if number is not None:
            request[_option("enqueue", f"--{flag}")["request"]] = number
    for flag in ("lane", "dedupe", "output-keep"):
        if getattr(args, flag.replace("-", "_")) is not None:
            request[_option("enqueue", f"--{flag}")["request"]] = getattr(args, flag.replace("-", "_"))
    if "lane_slots" in request and "lane" not in request:
        # LANE-5: slots are a lane's; said in the flag's terms rather than as the schema's missing member.
        raise FsjobError("USAGE", "--lane-slots needs --lane: the slots are those of a lane (--lane L --lane-slots N)", clause="LANE-5")
    if args.preemptible:
        request["preemptible"] = True
    if args.hold:
        request["hold"] = True
    after = _after(args.after)
    if after is not None:
        request["after"] = after
    not_before = _not_before(args)
    if not_before is not None:
        request["not_before_ms"] = not_before
    if args.stdin is not None:
        import base64

        request["stdin_base64"] = base64.b64encode(_read_input(args.stdin, constants.STDIN_MAX, "--stdin file")).decode("ascii")
    return request


def _after(given: List[str]) -> Optional[List[Dict[str, str]]]:
    """--after ID[:succeeded|:finished], repeatable or several ids after one --after (AFTER-1); None when not given."""
    if not given:
        return None
    typed = [text for value in given for text in re.split(r"[\s,]+", value) if text != ""]
    if not typed:
        raise FsjobError("USAGE", "--after needs a job id (ID, ID:succeeded or ID:finished)")
    after: List[Dict[str, str]] = []
    for text in typed:
        job_id, _, when = text.rpartition(":") if ":" in text else (text, "", "succeeded")
        if when not in ("succeeded", "finished"):
            raise FsjobError("USAGE", f"--after {text}: say ID, ID:succeeded (the default: run only if it succeeded) or ID:finished "
                             "(run once it finished, whatever its outcome)", clause="AFTER-1")
        after.append({"job_id": job_id, "when": when})
    return after


def _spec_text(queue: Queue, job_id: str) -> str:
    from .gates import place

    directory = queue.job_dir(job_id) + (GATED_SUFFIX if place(queue.root, job_id) == "gated" else "")
    with open(os.path.join(directory, "spec.json"), "rb") as handle:
        return handle.read().decode("utf-8").rstrip("\n")


def _enqueue(args: argparse.Namespace) -> int:
    if args.request is not None or args.batch is not None:
        if args.request is not None and args.batch is not None:
            raise FsjobError("USAGE", "give --request or --batch, not both")
        given = [f"--{flag}" for flag in _JOB_FLAGS if _given(args, flag)] + (["the command"] if args.cmd else [])
        if given:
            raise FsjobError("USAGE", f"--request and --batch take every job option from the request; drop {', '.join(given)}")
    queue = _open(args)
    if args.batch is not None:
        return _enqueue_batch(queue, args.batch, args.json)
    if args.request is not None:
        job_id = queue.enqueue_request(_read_input(args.request, constants.REQUEST_MAX, "request file"))
    else:
        request = _request(args)
        from .producer import enqueue_request

        for dependency in request.get("after", []):
            dependency["job_id"] = _job_id(queue, dependency["job_id"])
        # A refusal names the request's members by the options that gave them (--lane-slots 2 with --preemptible).
        job_id = enqueue_request(queue, request, name_field=_enqueue_flag)
    text = _spec_text(queue, job_id)
    _enqueue_warnings(queue, json.loads(text), args.request is None)
    sys.stdout.write((text if args.json else job_id) + "\n")
    return 0


def _enqueue_flag(field: str) -> Optional[str]:
    """The enqueue option that gives the request member ``field`` (a JSON pointer: "/lane_slots" -> "--lane-slots")."""
    member = field[1:]
    return next((option["flags"][0] for option in _table()["commands"]["enqueue"]["options"] if option.get("request") == member), None)


def _enqueue_warnings(queue: Queue, spec: Dict[str, Any], from_options: bool) -> None:
    """What will make the accepted job fail or never run, said now on stderr, as the reference's enqueue says it."""
    from .advice import command_warnings
    from .gates import unsatisfiable

    warnings = command_warnings(spec, queue.root) if from_options else []
    for warning in warnings + unsatisfiable(queue.root, queue.uid, spec):
        _log(f"warning: {warning}")


def _enqueue_batch(queue: Queue, source: str, as_json: bool) -> int:
    """One request per line, each enqueued on its own (the reference shares their fsyncs); 1 when any line failed."""
    failed = False
    text = _read_input(source, constants.REQUEST_MAX * 64, "batch file")
    for number, line in enumerate(text.split(b"\n"), start=1):
        if line.strip() == b"":
            continue
        try:
            job_id = queue.enqueue_request(line)
        except FsjobError as error:
            failed = True
            if as_json:
                sys.stdout.write(_compact({"line": number, "error": error.to_json()}) + "\n")
            _log(f"line {number}: {error.message}")
            continue
        sys.stdout.write((_compact({"line": number, "id": job_id}) if as_json else job_id) + "\n")
        sys.stdout.flush()
    return 1 if failed else 0


def _load_handlers(specs: List[str]) -> Dict[str, Any]:
    handlers: Dict[str, Any] = {}
    for spec in specs:
        module_name, _, attr = spec.partition(":")
        if not module_name:
            raise FsjobError("USAGE", f"--handlers {spec!r}: name a module, MODULE:NAME, e.g. mymod:HANDLERS")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            # Only a missing module is the option's mistake; an error inside the module's own code keeps its traceback.
            raise FsjobError("USAGE", f"--handlers {spec}: no module {error.name!r} on the Python path (sys.path: the current directory, PYTHONPATH)") from error
        value = getattr(module, attr or "HANDLERS", None)
        if value is None:
            raise FsjobError("USAGE", f"--handlers {spec}: module {module_name} has no {attr or 'HANDLERS'}")
        if not isinstance(value, dict) or not all(isinstance(name, str) and callable(handler) for name, handler in value.items()):
            raise FsjobError("USAGE", f"--handlers {spec} is not a dict of handlers (name -> callable)")
        handlers.update(value)
    return handlers


def _work(args: argparse.Namespace) -> int:
    from .worker import work

    queue = _open(args)
    concurrency = _number(args, "work", "concurrency") or 1
    lease = _number(args, "work", "lease") or constants.LEASE_DEFAULT
    grace = _number(args, "work", "shutdown-grace") or 0
    os.umask(0o077)
    return work(queue, _load_handlers(args.handlers), concurrency, drain=args.drain, commands=not args.no_commands,
                lease_ms=lease, shutdown_grace=grace / 1000, log=_log)


#: Statuses in which a job needs a consumer to move on (STATUS-1): only then is "no live worker" worth saying.
_WAITING = frozenset(("queued", "retrying", "cancelling", "expired", "orphaned", "delayed", "blocked"))


class _Notice:
    """Advice while a wait or logs --follow waits (the reference's service notice, src/producer/service-notice.ts):
    once per job that waits for a release (held, or blocked behind a held one), once when the queue is paused or
    resumed, once when a job waits with no live worker serving the queue, and once when one shows up. It only reads."""

    def __init__(self, queue: Queue, ids: Sequence[str]) -> None:
        self.queue = queue
        self.ids = ids
        self.next_look = time.monotonic() + _FIRST_LOOK
        self.served: Optional[bool] = None
        self.paused = False
        self.held: Set[str] = set()
        self.behind_held: Set[str] = set()

    def due_in(self) -> float:
        return max(0.0, self.next_look - time.monotonic())

    def look(self) -> None:
        if time.monotonic() < self.next_look:
            return
        self.next_look = time.monotonic() + _LOOK_EVERY
        try:
            self._look()
        except FsjobError:
            pass  # advice only: a queue that cannot be read is reported by the wait itself

    def _look(self) -> None:
        from .gates import held_upstream
        from .registrations import live_workers

        root = self.queue.root
        waiting = False
        for job_id in self.ids:
            status = self.queue.status(job_id).status
            if status == "held" and job_id not in self.held:
                self.held.add(job_id)
                _log(f"job {job_id} is held, so it waits until it is released (fsjob release -q {root} {job_id})")
            if status == "blocked" and job_id not in self.behind_held:
                upstream = held_upstream(root, self.queue.uid, job_id)
                if upstream is not None:
                    self.behind_held.add(job_id)
                    _log(f"job {job_id} waits for job {upstream}, which is held, so it runs only once that one is released (fsjob release -q {root} {upstream})")
            if status in _WAITING:
                waiting = True
                break  # one waiting job is enough to advise
        live = live_workers(self.queue)
        paused = waiting and self.queue.paused().paused
        if paused != self.paused:
            _log(f"{root} is paused, so the job waits until fsjob resume -q {root}" if paused else f"{root} is resumed")
            self.paused = paused
        served = bool(live) or not waiting
        if not served and self.served is not False:
            _log(f"no live worker serves {root}, so the job waits until one does (start one: fsjob work -q {root}); a one-shot consumer runs it without registering")
        elif served and self.served is False and live:
            _log(f"worker {live[0]['worker_id']} now serves {root}")
        self.served = served


def _stdin_ids() -> List[str]:
    """The ids on standard input, one per line, as fsjob enqueue prints them: the id alone, or its JSON (job_id, or id of --batch --json; a refused batch line is skipped)."""
    ids = []
    for number, raw in enumerate(sys.stdin, start=1):
        text = raw.strip()
        if not text:
            continue
        if not text.startswith("{"):
            ids.append(text)
            continue
        try:
            record = json.loads(text)
        except ValueError as error:
            raise FsjobError("USAGE", f"line {number} of standard input starts with \"{{\" but is not JSON; give one job id per line, as fsjob enqueue prints them") from error
        found = record.get("job_id", record.get("id")) if isinstance(record, dict) else None
        if isinstance(found, str):
            ids.append(found)
        elif not (isinstance(record, dict) and "error" in record):
            raise FsjobError("USAGE", f"line {number} of standard input is JSON without \"job_id\" or \"id\"; give one job id per line, as fsjob enqueue prints them")
    return ids


def _wait(args: argparse.Namespace) -> int:
    from .waiting import summary_exit_code, unfinished_jobs, wait_many

    queue = _open(args)
    _empty_lane(args)
    labels = parse_pairs(args.label, "label")
    selecting = args.all or args.lane is not None or labels is not None
    if args.all and (args.lane is not None or labels is not None):
        raise FsjobError("USAGE", "--all waits for every unfinished job; drop it to wait for those of --lane or --label only")
    if selecting and args.ids:
        raise FsjobError("USAGE", "name job ids or select them with --all, --lane or --label, not both")
    if not selecting and not args.ids:
        raise FsjobError("USAGE", "name the jobs to wait for: ids, - to read ids from standard input, or --all, --lane L, --label NAME=VALUE")
    if selecting:
        ids = unfinished_jobs(queue, args.lane, labels)
    else:
        ids = _job_ids(queue, [found for typed in args.ids for found in (_stdin_ids() if typed == "-" else [typed])])
    if not ids:
        _log(f"no job to wait for ({'no unfinished job matches' if selecting else 'standard input named none'})")
        return 0
    timeout = _number(args, "wait", "timeout")
    notice = _Notice(queue, ids)

    def report(receipt: Any) -> None:
        if args.json:
            sys.stdout.write(_compact(receipt.record) + "\n")
        else:
            tail = "" if receipt.message is None else f": {receipt.message}"
            sys.stdout.write(f"{receipt.job_id} {receipt.outcome} (exit code {receipt.exit_code}){tail}\n")
        sys.stdout.flush()

    try:
        receipts = wait_many(queue, ids, None if timeout is None else timeout / 1000, report, on_idle=notice.look)
    except FsjobError as error:
        if error.code != "TIMEOUT":
            raise
        from .registrations import live_workers

        served = "" if live_workers(queue) else f"; no live worker serves {queue.root} (start one: fsjob work -q {queue.root})"
        # job_ids: every job still unfinished, so a script goes on with exactly those (the message names a few), as the reference's.
        raise FsjobError("TIMEOUT", f"{error.message}{served}", path=error.path, job_id=error.job_id, job_ids=error.job_ids) from error
    return summary_exit_code(receipts)


def _status(args: argparse.Namespace) -> int:
    from .listing import job_line, job_lines, queue_json, select_lines

    queue = _open(args)
    wanted = set(args.status)
    unknown = sorted(wanted.difference(_STATUSES))
    if unknown:
        raise FsjobError("USAGE", f"--status {' '.join(unknown)}: not a status or outcome; choose from {', '.join(_STATUSES)}")
    if args.id is not None:
        job_id = _job_id(queue, args.id)
        state = queue.status(job_id)
        if state.status == "missing":
            raise FsjobError("NOT_FOUND", f"no job {job_id} in {queue.root}", job_id=job_id)
        if args.json:
            from .report import job_report

            _json(job_report(queue, job_id))
            return 0
        for key, value in job_line(queue, job_id).items():
            sys.stdout.write(f"{key:<12}{'-' if value is None else value}\n")
        return 0
    limit = _number(args, "status", "limit")
    every = job_lines(queue)
    counts: Dict[str, int] = {}
    for line in every:
        counts[line["status"]] = counts.get(line["status"], 0) + 1
    lines = select_lines(every, wanted, parse_pairs(args.label, "label"), args.sort or "age")
    limit = 20 if limit is None else limit
    shown = lines if limit == 0 else lines[:limit]
    if args.json:
        _json(queue_json(queue, every, shown, len(shown) < len(lines)))
        return 0
    summary = ", ".join(f"{count} {name}" for name, count in sorted(counts.items()))
    sys.stdout.write(f"{len(every)} jobs{': ' + summary if summary else ''}\n")
    now = time.time() * 1000
    if shown:
        sys.stdout.write(f"{'ID':<36}  {'STATUS':<10}  {'PRI':>5}  {'STARTED':>11}  {'FINISHED':>11}  {'DURATION':>8}  RESULT\n")
    for line in shown:
        started = "-" if line["started_ms"] is None else format_clock(line["started_ms"], now)
        finished = "-" if line["finished_ms"] is None else format_clock(line["finished_ms"], now)
        took = "-" if line["duration_ms"] is None else format_elapsed(line["duration_ms"])
        sys.stdout.write(f"{line['job_id']}  {line['status']:<10}  {line['priority'] if line['priority'] is not None else '?':>5}  {started:>11}  {finished:>11}  {took:>8}  {line['outcome'] or '-'}\n")
    return 0


def _each_job(ids: Sequence[str], alone: bool, act: Callable[[str], Any]) -> Any:
    """``act`` on each of ``ids`` in turn, as the reference's eachJob (src/cli/each-job.ts): with ``alone`` a refusal is the
    command's (raised as it is); of several, each is refused on its own (said on stderr, kept), so a refusal never hides the
    jobs done before it nor leaves those after it undone. Returns (results, [(id, FsjobError)]), each in the order named."""
    done: List[Any] = []
    refused: List[Any] = []
    for job_id in ids:
        try:
            done.append(act(job_id))
        except FsjobError as error:
            if alone:
                raise
            refused.append((job_id, error))
            _log(error.message)
    return done, refused


def _refused_json(refused: Sequence[Any]) -> List[Dict[str, Any]]:
    return [{"id": job_id, "error": error.to_json()} for job_id, error in refused]


def _refusal_status(refused: Sequence[Any]) -> int:
    """0 when none was refused, else the first refusal's in the order named, as wait's first job that did not succeed decides."""
    return _EXIT_OF.get(refused[0][1].code, 1) if refused else 0


def _cancel(args: argparse.Namespace) -> int:
    from .ops import cancel_request

    queue = _open(args)
    ids = _job_ids(queue, args.ids)
    # One id: the output scripts parse (one result; a refusal is the command's). Several: each on its own, --json {cancelled, refused}.
    alone = len(ids) == 1
    done, refused = _each_job(ids, alone, lambda job_id: (job_id, cancel_request(queue, job_id, force=args.force, reason=args.reason)))
    if args.json:
        # schemas/output/cancel.schema.json, as the reference prints it
        results = [{"id": job_id, "record": c.record, "published": c.published, "next": c.next, "receipt": c.receipt} for job_id, c in done]
        _json(results[0] if alone else {"cancelled": results, "refused": _refused_json(refused)})
        return _refusal_status(refused)
    for job_id, cancelled in done:
        sys.stdout.write(_cancel_line(job_id, cancelled) + "\n")
    return _refusal_status(refused)


def _cancel_line(job_id: str, done: Any) -> str:
    asked = f"{done.record} {'published' if done.published else 'was already there'}"
    if done.next == "finished" and done.receipt is not None and done.receipt["outcome"] == "rejected":
        return f"{job_id} rejected: nobody had claimed it and its spec is invalid ({done.receipt['reason']}), so it is finished now (exit code 126, CLAIM-10)"
    if done.next == "finished":
        return f"{job_id} cancelled: nobody had claimed it, so it is finished now (exit code {130 if done.receipt is None else done.receipt['exit_code']})"
    if done.next == "owner":
        return f"{job_id}: {asked}; its owner stops it within {constants.CONTROL_LATENCY // 1000} s (CANCEL-3), or recovery does if the owner died. fsjob wait {job_id} shows the outcome"
    if done.next == "claimed_elsewhere":
        return f"{job_id}: {asked}; a consumer claimed it at the same moment and will cancel it (CLAIM-6). fsjob wait {job_id} shows the outcome"
    return f"{job_id}: {asked}, but the job finished meanwhile; fsjob status {job_id} shows how"


def _empty_lane(args: argparse.Namespace) -> None:
    # No job has the lane "" (enqueue refuses it): `--lane "$LANE"` with LANE unset would select nothing and exit 0.
    if args.lane == "":
        raise FsjobError("USAGE", "--lane was given an empty value; name the lane (enqueue --lane L gave it its name)")


def _release(args: argparse.Namespace) -> int:
    queue = _open(args)
    _empty_lane(args)
    labels = parse_pairs(args.label, "label")
    ids = _job_ids(queue, args.ids)
    if not ids and args.lane is None and labels is None:
        raise FsjobError("USAGE", "name the held jobs to release: ids, --lane L or --label NAME=VALUE")
    # One job named alone: its refusal is the command's. Several: each is released or refused on its own and every
    # result reported (as the reference's), so a refusal never hides the jobs released before it nor keeps those after it held.
    alone = len(ids) == 1 and args.lane is None and labels is None
    results, refused = _each_job(ids, alone, queue.release)
    if args.lane is not None or labels is not None:
        selected = queue.release_where(lane=args.lane, labels=labels)
        if not selected and not ids:
            _log("no held job matches; nothing released")
        results += [result for result in selected if result.job_id not in ids]
    if args.json:
        _json({"released": [{"id": r.job_id, "published": r.published, "next": r.next, "waiting_for": r.waiting_for} for r in results],
               "refused": _refused_json(refused)})
    for result in [] if args.json else results:
        released = "released" if result.published else "was released already"
        tail = "it runs when a worker is free" if result.next == "open" else f"it still waits for {result.waiting_for or 'its dependencies'}"
        sys.stdout.write(f"{result.job_id} {released}; {tail}\n")
    return _refusal_status(refused)


def _gap_marker(queue: Queue, job_id: str, stream: str, kept: bytes, logs: Any) -> Optional[Any]:
    """(offset, text) of the truncation marker of a finished, truncated stream, else None."""
    state = queue.status(job_id)
    summary = None if state.receipt is None else getattr(state.receipt, stream)
    if summary is None or not summary.truncated:
        return None
    dropped = "an unknown number of" if summary.bytes_total is None else str(summary.bytes_total - summary.bytes_kept)
    return logs.gap(kept), f"[truncated: {dropped} bytes dropped]\n"


def _logs_json(queue: Queue, job_id: str, stream: str) -> Dict[str, Any]:
    """One job's stream as ``logs --json`` prints it (schemas/output/logs.schema.json, as the reference's)."""
    import base64

    # The status first, then the bytes: a job that finishes meanwhile is reported unfinished beside part of its output,
    # never finished beside part of it (RCPT-2 before RCPT-3), so a script polling until finished gets the whole.
    state = queue.status(job_id)
    logs = queue.logs(job_id)
    kept: bytes = getattr(logs, stream)
    summary = None if state.receipt is None else getattr(state.receipt, stream)
    truncated = summary is not None and bool(summary.truncated)
    dropped = (None if summary.bytes_total is None else summary.bytes_total - summary.bytes_kept) if summary is not None and truncated else 0
    try:
        text: Optional[str] = kept.decode("utf-8")
    except UnicodeDecodeError:
        text = None  # a job's output need not be UTF-8: base64 carries any bytes
    return {"job_id": job_id, "stream": stream, "gen": logs.gen or None, "status": state.status, "finished": state.receipt is not None,
            "bytes_kept": len(kept), "truncated": truncated, "dropped": dropped, "text": text, "base64": base64.b64encode(kept).decode("ascii")}


def _logs(args: argparse.Namespace) -> int:
    queue = _open(args)
    stream = "stderr" if args.stderr else "stdout"
    if args.follow and len(args.ids) > 1:
        raise FsjobError("USAGE", f"logs --follow takes one job id, not {len(args.ids)}")
    if args.follow and args.json:
        raise FsjobError("USAGE", "logs --json prints what is kept so far; it does not --follow")
    out = sys.stdout.buffer
    ids = _job_ids(queue, args.ids)
    if args.json:
        for job_id in ids:
            sys.stdout.write(_compact(_logs_json(queue, job_id, stream)) + "\n")
        return 0
    for index, job_id in enumerate(ids):
        if len(ids) > 1:
            out.write(f"{'' if index == 0 else chr(10)}==> {job_id} <==\n".encode())
        if args.follow:
            _follow(queue, job_id, stream)
            continue
        logs = queue.logs(job_id)
        kept: bytes = getattr(logs, stream)
        marker = _gap_marker(queue, job_id, stream, kept, logs)
        if marker is None:
            out.write(kept)
        elif args.raw:
            out.write(kept)
            _log(marker[1].strip())
        else:
            out.write(kept[: marker[0]] + marker[1].encode() + kept[marker[0]:])
    out.flush()
    return 0


def _follow(queue: Queue, job_id: str, stream: str) -> None:
    """New bytes of the job's output as they come, until it has a receipt (read after the receipt, so nothing is missed)."""
    notice = _Notice(queue, [job_id])
    gen, offset = 0, 0
    while True:
        finished = queue.status(job_id).status == "finished"
        logs = queue.logs(job_id)
        kept: bytes = getattr(logs, stream)
        if logs.gen != gen:
            gen, offset = logs.gen, 0
        if len(kept) > offset:
            sys.stdout.buffer.write(kept[offset:])
            sys.stdout.buffer.flush()
            offset = len(kept)
        if finished:
            return
        notice.look()
        time.sleep(0.2)


def _pause(args: argparse.Namespace) -> int:
    queue = _open(args)
    published = queue.pause(args.reason)
    state = queue.paused()
    if args.json:
        _json({"queue": queue.root, "published": published, "pause": state.record})
    elif published:
        sys.stdout.write(f"paused {queue.root}: no job is claimed until fsjob resume\n")
    else:
        sys.stdout.write(f"{queue.root} was paused already\n")
    return 0


def _resume(args: argparse.Namespace) -> int:
    queue = _open(args)
    resumed = queue.resume()
    if args.json:
        _json({"queue": queue.root, "resumed": resumed})
    else:
        sys.stdout.write(f"resumed {queue.root}\n" if resumed else f"{queue.root} was not paused\n")
    return 0


def _recover(args: argparse.Namespace) -> int:
    from .recover import recover

    queue = _open(args)
    report = recover(queue, _log)
    if args.json:
        _json(report.json(queue.root))
        return 1 if report.left_alone or report.failed else 0
    for done in report.recovered:
        _log(done)
    # A summary on stdout, as the reference's (silence read as "nothing ran"); the details went to stderr above.
    sys.stdout.write(f"recovered {queue.root}\njobs recovered: {len(report.recovered)}\nstale entries removed: {len(report.removed)}\n"
                     f"left alone: {len(report.left_alone)}\n")
    return 1 if report.left_alone or report.failed else 0


def _record_file(path: str, bound: int) -> bytes:
    """A file to check: a regular file, read to one byte past ``bound`` (a larger one is a finding, REC-2, REQ-1).
    One that is missing, unreadable or not a regular file (a FIFO is never opened) is a usage error, as fsjob validate says."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise FsjobError("USAGE", f"{path} is not a regular file; name a record file", path=path)
        with open(path, "rb") as handle:
            return handle.read(bound + 1)
    except OSError as error:
        raise FsjobError("USAGE", f"cannot read {path}: {error.strerror}", path=path) from error


def _check_record(args: argparse.Namespace) -> int:
    expect = record_name_of(args.name) if args.name else None
    type_ = expect.type if expect is not None else args.type
    if type_ not in RECORD_TYPES:
        raise FsjobError("USAGE", f"{type_!r} is not a record type; choose from {', '.join(RECORD_TYPES)}")
    inspection = inspect_bytes(type_, _record_file(args.file, constants.RECORD_MAX), args.file, expect)
    print("valid" if inspection.ok else f"invalid: {inspection.findings[0].code}: {inspection.reason}")
    return 0 if inspection.ok else 1


def _check_request(args: argparse.Namespace) -> int:
    inspection = inspect_bytes("request", _record_file(args.file, constants.REQUEST_MAX), args.file)
    print("valid" if inspection.ok else f"invalid: {inspection.reason}")
    return 0 if inspection.ok else 1


_COMMANDS: Dict[str, Callable[[argparse.Namespace], int]] = {
    "init": _init, "enqueue": _enqueue, "work": _work, "wait": _wait, "status": _status, "cancel": _cancel, "release": _release, "logs": _logs,
    "pause": _pause, "resume": _resume, "recover": _recover, "check-record": _check_record, "check-request": _check_request,
}


def run(argv: Optional[Sequence[str]] = None, prog: str = "python3 -m fsjob") -> int:
    """The command line; returns the exit status."""
    given = list(sys.argv[1:] if argv is None else argv)
    # Under --json a failure is data too, as the reference prints it (schemas/output/error.schema.json): one line on stdout.
    as_json = "--json" in (given[:given.index("--")] if "--" in given else given)
    try:
        args = _parser(prog).parse_args(given)
        return _COMMANDS[args.command](args)
    except FsjobError as error:
        status = _EXIT_OF.get(error.code, 1)
        if as_json:
            sys.stdout.write(_compact({"error": {**error.to_json(), "exit_status": status}}) + "\n")
        _log(error.message)
        return status
    except OSError as error:
        _log(f"{error}")
        return 1
    except KeyboardInterrupt:
        return 130


def main() -> None:
    """The ``fsjob`` command that ``pip install`` puts on PATH (the console script of the package)."""
    sys.exit(run(prog="fsjob"))

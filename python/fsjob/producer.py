"""Enqueueing (spec/producer.md): a request (REQ-1, REQ-2) becomes a spec
with every default filled (SPEC-2), staged in ``tmp/<id>/``, published by
one rename into ``jobs/`` (ENQ-3) and made durable before the id is
returned (ENQ-4)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
from typing import TYPE_CHECKING, Any, Callable, Dict, Mapping, Optional, Sequence, Tuple, Union

from . import gates, ready
from .bytesform import require_text, text_of
from .clock import mono_ms
from .constants import (
    DEDUPE_STAGE_MAX, DELAY_MAX, KILL_GRACE_DEFAULT, OUTPUT_DEFAULT, PROTOCOL_VERSION, SLOTS_MAX, STDIN_MAX, TIMEOUT_DEFAULT,
)
from .errors import DedupeHeld, FsjobError, io_error
from .holds import Key
from .identity import self_identity
from .judge import Judge
from .jsontext import dumps_compact
from .names import RecordName, new_job_id
from .records import encode_record, inspect_bytes
from .safefs import create_exclusive, fsync_dir, lstat_or_none, make_dir, remove_tree, write_all

if TYPE_CHECKING:
    from .queue import Queue

#: SPEC-2: the defaults of spec/spec-record.md, written into every spec.
DEFAULTS: Dict[str, Any] = {
    "env": {},
    "timeout_ms": TIMEOUT_DEFAULT,
    "kill_grace_ms": KILL_GRACE_DEFAULT,
    "queue_deadline_ms": None,
    "max_attempts": 1,
    "retry_delay_ms": 0,
    "priority": 0,
    "lane": None,
    "dedupe": None,
    "preemptible": False,
    "max_output_bytes": OUTPUT_DEFAULT,
    "labels": {},
}
_SPEC_ORDER = (
    "argv", "handler", "payload", "cwd", "env", "stdin", "timeout_ms", "kill_grace_ms", "queue_deadline_ms",
    "max_attempts", "retry_delay_ms", "priority", "lane", "dedupe", "preemptible", "max_output_bytes", "output_keep",
    "not_before_ms", "lane_slots", "after", "hold", "labels",
)


def _ms(seconds: Optional[float], name: str) -> Optional[int]:
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise FsjobError("USAGE", f"{name} is a number of seconds, not {seconds!r}", clause="ENQ-1")
    return int(round(seconds * 1000))


def build_request(
    *,
    argv: Optional[Sequence[Union[str, bytes]]] = None,
    handler: Optional[str] = None,
    payload: Any = None,
    stdin: Union[bytes, str, None] = None,
    env: Optional[Mapping[str, Union[str, bytes]]] = None,
    cwd: Optional[str] = None,
    timeout: Optional[float] = None,
    kill_grace: Optional[float] = None,
    queue_deadline: Optional[float] = None,
    lane: Optional[str] = None,
    dedupe: Optional[str] = None,
    priority: int = 0,
    max_attempts: int = 1,
    retry_delay: Optional[float] = None,
    preemptible: bool = False,
    max_output_bytes: Optional[int] = None,
    output_keep: Optional[str] = None,
    not_before: Optional[float] = None,
    labels: Optional[Dict[str, str]] = None,
    after: Optional[Sequence[Union[str, Tuple[str, str]]]] = None,
    hold: bool = False,
    lane_slots: Optional[int] = None,
) -> Dict[str, Any]:
    """The request form (schemas/request.schema.json) of the keyword arguments of :meth:`Queue.enqueue`.

    ``after`` lists the jobs this one runs after: an id (runs once it
    succeeded) or ``(id, "finished" | "succeeded")`` (AFTER-1).
    """
    if (argv is None) == (handler is None):
        raise FsjobError("USAGE", "a job has exactly one of argv (a command) or handler (a payload job) (SPEC-1)", clause="SPEC-1")
    request: Dict[str, Any] = {"fsjob": PROTOCOL_VERSION}
    if argv is not None:
        if isinstance(argv, (str, bytes)):
            raise FsjobError("USAGE", "argv is a sequence of strings, not one string", clause="ENQ-1")
        # SPEC-3: each argument as the bytes given (str with surrogate escapes, as sys.argv has them, or bytes).
        request["argv"] = [text_of(arg, f"argv[{i}]") for i, arg in enumerate(argv)]
    else:
        request["handler"] = handler
        request["payload"] = payload
    if cwd is not None:
        request["cwd"] = require_text(os.fspath(cwd), "cwd")
    if env is not None:
        request["env"] = {require_text(name, f"the env name {name!r}"): text_of(value, f"env {name}") for name, value in env.items()}
    if stdin is not None:
        if isinstance(stdin, str):
            request["stdin_text"] = stdin
        else:
            request["stdin_base64"] = base64.b64encode(bytes(stdin)).decode("ascii")
    for name, value in (("timeout_ms", _ms(timeout, "timeout")), ("kill_grace_ms", _ms(kill_grace, "kill_grace")),
                        ("queue_deadline_ms", _ms(queue_deadline, "queue_deadline")), ("retry_delay_ms", _ms(retry_delay, "retry_delay"))):
        if value is not None:
            request[name] = value
    request.update({"priority": priority, "max_attempts": max_attempts, "preemptible": preemptible, "lane": require_text(lane, "lane"), "dedupe": require_text(dedupe, "dedupe")})
    if max_output_bytes is not None:
        request["max_output_bytes"] = max_output_bytes
    if output_keep is not None:
        request["output_keep"] = output_keep
    if not_before is not None:
        # DELAY-1: an instant, in seconds since the epoch like time.time().
        ms = _ms(not_before, "not_before")
        request["not_before_ms"] = ms
    if labels is not None:
        request["labels"] = {require_text(name, "a label name"): require_text(value, f"label {name}") for name, value in labels.items()}
    if after:
        request["after"] = [{"job_id": item} if isinstance(item, str) else {"job_id": item[0], "when": item[1]} for item in after]
    if hold:
        request["hold"] = True
    if lane_slots is not None:
        request["lane_slots"] = lane_slots
    return request


def _preemptible_slots(data: bytes, field: Optional[str], source: str, name_field: Optional[Callable[[str], Optional[str]]]) -> Optional[FsjobError]:
    """PREEMPT-2: a preemptible job runs in slot 1 of its lane only, so ``lane_slots`` above 1 beside ``preemptible`` true is
    refused. The schema says only that lane_slots "must be 1"; this names both members (the CLI's options, through
    ``name_field``) and why, as the reference's (src/producer/request.ts). None for any other refusal."""
    if field != "/lane_slots":
        return None
    try:
        value = json.loads(data)
    except ValueError:
        return None
    request = value if isinstance(value, dict) else {}
    slots = request.get("lane_slots")
    if request.get("preemptible") is not True or type(slots) is not int or not 2 <= slots <= SLOTS_MAX:
        return None
    slots_name, preemptible_name = (None, None) if name_field is None else (name_field("/lane_slots"), name_field("/preemptible"))
    what = f"{slots_name} {slots} with {preemptible_name}" if slots_name and preemptible_name else f"{source}: lane_slots {slots} with preemptible true"
    return FsjobError("USAGE", f"{what}: a preemptible job runs in slot 1 of its lane only, the slot it gives up to a waiting job of the lane "
                      f"(PREEMPT-1, PREEMPT-2), so it cannot take {slots} slots; drop {preemptible_name or 'preemptible'} to run in up to {slots} "
                      f"slots, or {slots_name or 'lane_slots'} to stay preemptible (ENQ-1)", clause="PREEMPT-2", field="/lane_slots")


def parse_request(request: Union[bytes, Dict[str, Any]], path: str = "request", name_field: Optional[Callable[[str], Optional[str]]] = None) -> Dict[str, Any]:
    """Validate a request (REQ-1, REQ-2, ENQ-1); USAGE naming the first problem when it is invalid (its ``field``: the member).
    ``name_field`` names a member as the caller's user gave it (the CLI: its option), where a refusal says so."""
    if isinstance(request, dict):
        try:
            data = dumps_compact(request).encode("utf-8")
        except (TypeError, ValueError, UnicodeEncodeError) as error:
            raise FsjobError("USAGE", f"the request is not JSON: {error} (REQ-1)", clause="REQ-1") from error
    else:
        data = bytes(request)
    inspection = inspect_bytes("request", data, path)
    if not inspection.ok:
        first = inspection.findings[0]
        slots = _preemptible_slots(data, first.field, path, name_field)
        if slots is not None:
            raise slots
        code = "UNSUPPORTED_VERSION" if first.code == "RECORD_VERSION" else "TOO_LARGE" if first.code == "RECORD_TOO_LARGE" else "USAGE"
        raise FsjobError(code, f"invalid request: {inspection.reason}", path=None if path == "request" else path, clause=first.clause,
                         field=first.field or None)
    return inspection.value


def _stdin_bytes(request: Dict[str, Any]) -> Optional[bytes]:
    if "stdin_text" in request:
        data = str(request["stdin_text"]).encode("utf-8")
    elif "stdin_base64" in request:
        try:
            data = base64.b64decode(request["stdin_base64"], validate=True)
        except (binascii.Error, ValueError) as error:
            raise FsjobError("USAGE", f"stdin_base64 is not padded base64: {error} (REQ-1)", clause="REQ-1") from error
    else:
        return None
    if len(data) > STDIN_MAX:
        raise FsjobError("TOO_LARGE", f"the job's stdin is {len(data)} bytes, over STDIN_MAX ({STDIN_MAX}) (REQ-1)", clause="REQ-1")
    return data


def spec_of(request: Dict[str, Any], job_id: str, created_ms: int, stdin: Optional[bytes]) -> Dict[str, Any]:
    """The spec record of a validated request with every default filled (SPEC-2)."""
    merged: Dict[str, Any] = dict(DEFAULTS)
    for name in _SPEC_ORDER:
        if name in request:
            merged[name] = request[name]
    if "handler" in merged and "payload" not in merged:
        merged["payload"] = None
    if "cwd" not in merged:
        # SPEC-3: a working directory whose path is not UTF-8 is refused, not written as other bytes.
        merged["cwd"] = require_text(os.getcwd(), "the working directory (give cwd)")
    merged["stdin"] = None if stdin is None else {"bytes": len(stdin), "sha256": hashlib.sha256(stdin).hexdigest()}
    # SPEC-2: the members added after 1.0 are written only when they say something.
    if merged.get("output_keep") == "head":
        del merged["output_keep"]
    if merged.get("not_before_ms", 0) is None:
        del merged["not_before_ms"]
    if merged.get("lane_slots") == 1:
        del merged["lane_slots"]
    if merged.get("hold") is False:
        del merged["hold"]
    if "after" in merged:
        merged["after"] = [{"job_id": item["job_id"], "when": item.get("when", "succeeded")} for item in merged["after"]]
    # VER-4: a 1.2 writer says 1.2 whatever members it uses.
    spec: Dict[str, Any] = {"fsjob": PROTOCOL_VERSION, "type": "spec", "id": job_id, "created_ms": created_ms}
    for name in _SPEC_ORDER:
        if name in merged:
            spec[name] = merged[name]
    spec["producer"] = self_identity()
    return spec


def enqueue_request(queue: "Queue", request: Union[bytes, Dict[str, Any]], path: str = "request",
                    name_field: Optional[Callable[[str], Optional[str]]] = None) -> str:
    """ENQ-1..ENQ-6 for one request; returns the id once jobs/<id> is durable. ``name_field`` as parse_request's."""
    value = parse_request(request, path, name_field)
    stdin = _stdin_bytes(value)
    queue.require_layout()
    dedupe_key = value.get("dedupe")
    if dedupe_key is not None:
        queue.require("dedupe")
    job_id = new_job_id()
    created_ms = int(job_id[:19]) // 1_000_000
    spec = spec_of(value, job_id, created_ms, stdin)
    _check_delay(spec)
    gated = _gate_of(queue, spec)
    try:
        data = encode_record("spec", spec, RecordName("spec", job_id=job_id))
    except FsjobError as error:
        if error.code == "TOO_LARGE":
            raise FsjobError("TOO_LARGE", f"the job's spec would be over RECORD_MAX: {error.message} (ENQ-7, REC-2)", clause="REC-2") from error
        raise FsjobError("USAGE", f"invalid request: {error.message}", clause=error.clause) from error
    stage = queue.path("tmp", job_id)
    entry_made = False
    try:
        make_dir(stage, queue.uid)
        if stdin is not None:
            _write_new(os.path.join(stage, "stdin"), stdin)
        _write_new(os.path.join(stage, "spec.json"), data)
        fsync_dir(stage)
        if dedupe_key is not None:
            held_since = mono_ms()
            verdict = Key(queue.root, queue.uid, "dedupe", dedupe_key).take(job_id, None, Judge())
            if verdict.held:
                raise _dedupe_refusal(queue, dedupe_key, verdict.job_id)
        entry_made = ready.create(queue.root, spec["priority"], job_id)
        target = queue.job_dir(job_id)
        if lstat_or_none(target) is not None:
            raise FsjobError("EXISTS", f"{target} already exists (ENQ-3)", path=target, clause="ENQ-3")
        if gated:
            # GATE-1: neither name may exist; the job goes to jobs/<id>.gated.
            target = gates.gated_dir(queue.root, job_id)
            if lstat_or_none(target) is not None:
                raise FsjobError("EXISTS", f"{target} already exists (GATE-1)", path=target, clause="GATE-1")
        if dedupe_key is not None and mono_ms() - held_since >= DEDUPE_STAGE_MAX:
            raise FsjobError("TIMEOUT", f"more than {DEDUPE_STAGE_MAX} ms passed since the dedupe hold was taken; the job is refused (DEDUPE-5)", clause="DEDUPE-5")
        try:
            os.rename(stage, target)
        except OSError as error:
            raise io_error(error, "cannot publish the job", target, "ENQ-3") from error
    except BaseException:
        # ENQ-6: remove what was staged; a dedupe hold stops counting with its staging directory (DEDUPE-3).
        try:
            remove_tree(stage)
            if entry_made:
                ready.remove_named(queue.root, spec["priority"], job_id)
        except FsjobError:
            pass
        raise
    fsync_dir(queue.path("jobs"))
    try:
        fsync_dir(queue.path("tmp"))
    except FsjobError:
        pass
    return job_id


def _dedupe_refusal(queue: "Queue", key: str, holder: Optional[str]) -> DedupeHeld:
    """DEDUPE-1's refusal with the holder's status (and for a blocked one the held job up its chain), for its advice; read
    only on this refusal, never on the enqueue that takes the key. A holder staged and not yet published (DEDUPE-3), or
    unreadable, has none."""
    status: Optional[str] = None
    upstream: Optional[str] = None
    if holder is not None:
        try:
            status = queue.status(holder).status
            upstream = gates.held_upstream(queue.root, queue.uid, holder) if status == "blocked" else None
        except FsjobError:
            status = None
        if status == "missing":
            status = None
    return DedupeHeld(key, holder, path=queue.path("dedupe"), job_status=status, held_upstream=upstream)


def _gate_of(queue: "Queue", spec: Dict[str, Any]) -> bool:
    """AFTER-2 (each dependency named once and existing, GATE-4) and GATE-1: whether the job is published gated.

    A job that is not held and whose dependencies are all satisfied now is published open: a satisfied dependency stays so.
    """
    satisfied = True
    seen = set()
    for dependency in spec.get("after", []):
        job_id = dependency["job_id"]
        if job_id in seen:
            raise FsjobError("USAGE", f"invalid request: after names job {job_id} twice (AFTER-2)", job_id=job_id, clause="AFTER-2")
        seen.add(job_id)
        if gates.place(queue.root, job_id) == "missing":
            raise FsjobError("NOT_FOUND", f"after names job {job_id}, which does not exist in {queue.root} (AFTER-2)", job_id=job_id, clause="AFTER-2")
        if satisfied and gates.dependency_state(queue.root, queue.uid, job_id, dependency["when"])[0] != "satisfied":
            satisfied = False
    return spec.get("hold") is True or not satisfied


def _check_delay(spec: Dict[str, Any]) -> None:
    """DELAY-1: a delayed start at most DELAY_MAX after created_ms, and (SHOULD) before the queue deadline expires the job."""
    not_before = spec.get("not_before_ms")
    if not_before is None:
        return
    if not_before > spec["created_ms"] + DELAY_MAX:
        raise FsjobError("USAGE", f"not_before_ms {not_before} lies more than DELAY_MAX ({DELAY_MAX} ms, 365 days) after the job's creation (DELAY-1)", clause="DELAY-1")
    deadline = spec["queue_deadline_ms"]
    if deadline is not None and not_before >= spec["created_ms"] + deadline:
        raise FsjobError("USAGE", "not_before_ms lies at or after the queue deadline (created_ms + queue_deadline_ms): the job would expire before it may start (DELAY-1)", clause="DELAY-1")


def _write_new(path: str, data: bytes) -> None:
    """Create a staged file exclusively (PUB-7), write it and fsync it (ENQ steps 3 and 4)."""
    fd = create_exclusive(path)
    try:
        write_all(fd, data)
        os.fsync(fd)
    except OSError as error:
        raise io_error(error, "cannot write a staged file", path, "PUB-7") from error
    finally:
        os.close(fd)


"""The record layer: from bytes to a trusted record, or to findings that say why not.

Every record this package reads goes through :func:`read_record`, which
applies REC-4 in order and stops at the first step that fails:

1. a regular file that is not a symlink (SEC-2, SEC-3), with a safe owner
   and mode (SEC-6, SEC-5), within RECORD_MAX (SEC-4): :mod:`safefs`;
2. compact form (REC-1): :mod:`jsontext`;
3. a supported version (VER-1);
4. the type the name says (REC-3);
5. the schema (REC-5), unknown members judged by VER-2 and VER-3;
6. the members the name fixes: job id, generation, force, kind, key, worker (REC-7).

Bad input is never an exception here: it is a list of findings. What is not
the file's fault (it is missing, the disk failed) is an FsjobError.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from . import jsontext
from ._schemas import DOCUMENTS
from .constants import PROTOCOL_MAJOR, PROTOCOL_MINOR, PROTOCOL_VERSION, RECORD_MAX, REQUEST_MAX
from .errors import FsjobError
from .findings import Finding, make_finding
from .names import RecordName, key_hash
from .safefs import EUID, read_bounded
from .schema import SchemaError, Validator

RECORD_TYPES = ("queue", "spec", "claim", "exec", "state", "end", "cancel", "receipt", "hold", "worker", "pause", "release")
_VERSION_FORM = re.compile(r"(0|[1-9][0-9]{0,5})\.(0|[1-9][0-9]{0,5})\Z")
_JOB_ID = re.compile(r"[0-9]{19}-[0-9a-f]{16}\Z")
_VALIDATOR = Validator(DOCUMENTS)
_REFUSALS = {
    "SYMLINK_REFUSED": "RECORD_SYMLINK",
    "NOT_REGULAR": "RECORD_NOT_REGULAR",
    "TOO_LARGE": "RECORD_TOO_LARGE",
    "UNSAFE_MODE": "RECORD_MODE",
    "FOREIGN_OWNER": "RECORD_OWNER",
}


class Inspection:
    """A record that passed (``value``, with any info findings), or the findings that reject it."""

    __slots__ = ("ok", "value", "findings", "nlink")

    def __init__(self, ok: bool, value: Optional[Dict[str, Any]] = None, findings: Optional[List[Finding]] = None) -> None:
        self.ok = ok
        self.value: Dict[str, Any] = {} if value is None else value
        self.findings: List[Finding] = [] if findings is None else findings
        #: Hard links of the file (SEC-9, SEC-10: the stdin row), when read from disk.
        self.nlink = 1

    @property
    def reason(self) -> str:
        """The first error finding, for logs and receipt messages."""
        for finding in self.findings:
            if finding.severity == "error":
                return str(finding)
        return ""

    @property
    def unsupported_version(self) -> bool:
        """Whether the record failed VER-1 (a spec of another major is rejected ``unsupported_version``)."""
        return any(f.code == "RECORD_VERSION" for f in self.findings)


def _known_job_id(value: Any) -> Optional[str]:
    return value if isinstance(value, str) and _JOB_ID.match(value) else None


def _reject(path: str, job_id: Optional[str], code: str, what: str, field_: Optional[str] = None, clause: Optional[str] = None) -> Inspection:
    return Inspection(False, findings=[make_finding(code, what, path, job_id, field_, clause)])


def _schema_findings(errors: List[SchemaError], path: str, job_id: Optional[str]) -> List[Finding]:
    findings: List[Finding] = []
    seen = set()
    for error in errors:
        if error.keyword in ("unevaluatedProperties", "additionalProperties"):
            if error.member is None:
                continue
            finding = make_finding("RECORD_UNKNOWN_MEMBER", f"member {jsontext.dumps_compact(error.member)} is not defined by fsjob {PROTOCOL_VERSION}", path, job_id, error.pointer)
        else:
            where = error.pointer or "the record"
            finding = make_finding("RECORD_SCHEMA", f"{where} {error.message}", path, job_id, error.pointer)
        key = (finding.code, finding.field, finding.message)
        if key not in seen:
            seen.add(key)
            findings.append(finding)
    if not findings:
        findings.append(make_finding("RECORD_SCHEMA", "the record does not match its schema", path, job_id, ""))
    return findings


def inspect_bytes(type_: str, data: bytes, path: str = "-", expect: Optional[RecordName] = None) -> Inspection:
    """Check the bytes of a record of ``type_`` (or of a request, ``type_="request"``) from REC-4's size step on."""
    is_request = type_ == "request"
    job_id = expect.job_id if expect is not None else None
    bound = REQUEST_MAX if is_request else RECORD_MAX
    if len(data) > bound:
        return _reject(path, job_id, "RECORD_TOO_LARGE", f"the file is {len(data)} bytes, over the bound of {bound}", clause="REQ-1" if is_request else "REC-2")
    parsed = jsontext.parse_bytes(data, "request" if is_request else "record")
    if isinstance(parsed, jsontext.ParseFailure):
        return _reject(path, job_id, parsed.code, f"{parsed.detail} (at byte {parsed.offset})", parsed.field, "REQ-1" if is_request else "REC-1")
    value = parsed
    if job_id is None:
        job_id = _known_job_id(value.get("job_id")) or _known_job_id(value.get("id"))
    version = value.get("fsjob")
    minor = PROTOCOL_MINOR
    if not (is_request and "fsjob" not in value):
        match = _VERSION_FORM.match(version) if isinstance(version, str) else None
        if match is None:
            what = 'the record has no member "fsjob"' if "fsjob" not in value else f'"fsjob" is {jsontext.dumps_compact(version)}, not of the form "<major>.<minor>"'
            return _reject(path, job_id, "RECORD_VERSION", f"unsupported_version: {what}", "/fsjob")
        if int(match.group(1)) != PROTOCOL_MAJOR:
            return _reject(path, job_id, "RECORD_VERSION", f"unsupported_version: fsjob {version} is major {match.group(1)}; this reader reads major {PROTOCOL_MAJOR}", "/fsjob")
        minor = int(match.group(2))
    if not is_request and value.get("type") != type_:
        found = value.get("type")
        what = f"a {jsontext.dumps_compact(found)} record is stored under a {type_} name" if isinstance(found, str) else f'the record has no string member "type" (expected "{type_}")'
        return _reject(path, job_id, "RECORD_TYPE_MISMATCH", what, "/type")
    errors = _VALIDATOR.validate(f"{type_}.schema.json", value)
    if errors:
        return Inspection(False, findings=_schema_findings(errors, path, job_id))
    mismatches = _name_findings(type_, value, expect, path, job_id)
    if mismatches:
        return Inspection(False, findings=mismatches)
    notes: List[Finding] = []
    if minor > PROTOCOL_MINOR:
        notes.append(make_finding("RECORD_NEWER_MINOR", f"the record is fsjob {version}, newer than this reader's {PROTOCOL_VERSION}", path, job_id, "/fsjob"))
    return Inspection(True, value, notes)


def _name_findings(type_: str, value: Dict[str, Any], expect: Optional[RecordName], path: str, job_id: Optional[str]) -> List[Finding]:
    """REC-7: what the name a record is stored under fixes about its members."""
    if expect is None:
        return []
    findings: List[Finding] = []
    if expect.job_id is not None and type_ in ("spec", "claim", "exec", "state", "end", "cancel", "receipt", "release"):
        member = "id" if type_ == "spec" else "job_id"
        if value.get(member) != expect.job_id:
            findings.append(make_finding("RECORD_ID_MISMATCH", f"{member} is {jsontext.dumps_compact(value.get(member))} but the record is in the directory of job {expect.job_id}", path, job_id, f"/{member}"))
    if expect.gen is not None and value.get("gen") != expect.gen:
        findings.append(make_finding("RECORD_GEN_MISMATCH", f"gen is {jsontext.dumps_compact(value.get('gen'))} but the file name says generation {expect.gen}", path, job_id, "/gen"))
    if expect.force is not None and value.get("force") is not expect.force:
        where = "cancel-force.json holds force true" if expect.force else "cancel.json holds force false"
        findings.append(make_finding("RECORD_NAME_MISMATCH", f"force is {jsontext.dumps_compact(value.get('force'))} but {where}", path, job_id, "/force"))
    if expect.kind is not None and value.get("kind") != expect.kind:
        findings.append(make_finding("RECORD_NAME_MISMATCH", f"kind is {jsontext.dumps_compact(value.get('kind'))} but the hold is under {'lanes' if expect.kind == 'lane' else 'dedupe'}/", path, job_id, "/kind"))
    if expect.worker_id is not None and value.get("worker_id") != expect.worker_id:
        findings.append(make_finding("RECORD_NAME_MISMATCH", f"worker_id is {jsontext.dumps_compact(value.get('worker_id'))} but the file is workers/{expect.worker_id}.json", path, job_id, "/worker_id"))
    if expect.key_hash is not None and isinstance(value.get("key"), str):
        # LANE-6: a lane hold of slot k above 1 is under the SHA-256 of key, line feed and k.
        slot = value.get("slot") if isinstance(value.get("slot"), int) and value.get("slot", 1) > 1 else 1
        digest = key_hash(value["key"] if slot == 1 else f"{value['key']}\n{slot}")
        if digest != expect.key_hash:
            what = "the SHA-256 of key" if slot == 1 else f"the SHA-256 of key and slot {slot} (LANE-6)"
            findings.append(make_finding("RECORD_NAME_MISMATCH", f"{what} is {digest} but the hold is under {expect.key_hash}/", path, job_id, "/key"))
    return findings


def read_record(path: str, type_: str, expect: Optional[RecordName] = None, uid: int = EUID, allow_missing: bool = False) -> Optional[Inspection]:
    """Read and check the record at ``path`` (REC-4 from the first step).

    A symlink, FIFO, oversized, unsafe-mode or foreign file is refused without
    blocking and reported as a finding naming the path and the clause.
    Returns None for a missing file when ``allow_missing``; raises NOT_FOUND
    otherwise, and IO: those are not the record's fault.
    """
    try:
        read = read_bounded(path, RECORD_MAX, uid, allow_missing)
    except FsjobError as error:
        code = _REFUSALS.get(error.code)
        if code is None:
            raise
        job_id = expect.job_id if expect is not None else None
        return Inspection(False, findings=[make_finding(code, error.message, path, job_id, None, error.clause)])
    if read is None:
        return None
    data, st = read
    inspection = inspect_bytes(type_, data, path, expect)
    inspection.nlink = st.st_nlink
    return inspection


def encode_record(type_: str, value: Dict[str, Any], expect: Optional[RecordName] = None) -> bytes:
    """The bytes to publish for a record a writer built, checked against its schema (VER-4: nothing invalid is written)."""
    data = jsontext.serialize_record(value)
    inspection = inspect_bytes(type_, data, "-", expect)
    if not inspection.ok:
        raise FsjobError("INVALID_RECORD", f"refusing to write an invalid {type_} record: {inspection.reason}", clause=inspection.findings[0].clause)
    return data

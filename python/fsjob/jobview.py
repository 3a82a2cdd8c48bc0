"""What a job directory says: one listing (LAYOUT-5), the records it holds
(each read as REC-4 says), attempts (RETRY-1) and the hazards of SEC-10.

A name counts by its existence (REC-9): ``receipt.json``, cancel records and
claims are recognised from the listing alone; their content is read only
where a rule needs it, and an invalid record then does what the hazard
table says.
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Optional, Set

from .errors import FsjobError
from .names import RecordName, parse_gen
from .records import Inspection, read_record
from .safefs import list_dir, lstat_or_none, refuse_unsafe

_GEN_RECORD = re.compile(r"(claim|exec|state|end)\.([^.]+)\.json\Z")
_OUTPUT = re.compile(r"(stdout|stderr)\.([^.]+)\Z")


class Listing:
    """One listing of a job directory, classified by name."""

    def __init__(self) -> None:
        self.claims: Set[int] = set()
        self.execs: Set[int] = set()
        self.states: Set[int] = set()
        self.ends: Set[int] = set()
        self.outputs: Set[str] = set()
        self.receipt = False
        self.cancel = False
        self.cancel_force = False
        self.has_spec = False
        self.has_stdin = False

    @property
    def top(self) -> int:
        """The highest claim generation (0 if none)."""
        return max(self.claims) if self.claims else 0

    @property
    def open(self) -> bool:
        """STATUS-1 step 2: claim g exists without end.<g>.json."""
        g = self.top
        return g > 0 and g not in self.ends

    @property
    def cancel_kind(self) -> Optional[str]:
        """"force", "graceful" or None: which cancel record entries exist (REC-9)."""
        if self.cancel_force:
            return "force"
        return "graceful" if self.cancel else None


def scan(job_dir: str) -> Listing:
    """List a job directory once; names that are not protocol names are unknown and never opened (LAYOUT-6)."""
    listing = Listing()
    for name in list_dir(job_dir):
        if name.startswith("."):
            continue
        if name == "spec.json":
            listing.has_spec = True
        elif name == "stdin":
            listing.has_stdin = True
        elif name == "receipt.json":
            listing.receipt = True
        elif name == "cancel.json":
            listing.cancel = True
        elif name == "cancel-force.json":
            listing.cancel_force = True
        else:
            match = _GEN_RECORD.match(name)
            if match is not None:
                gen = parse_gen(match.group(2))
                if gen is not None:
                    {"claim": listing.claims, "exec": listing.execs, "state": listing.states, "end": listing.ends}[match.group(1)].add(gen)
                continue
            match = _OUTPUT.match(name)
            if match is not None and parse_gen(match.group(2)) is not None:
                listing.outputs.add(name)
    return listing


class JobView:
    """A job directory as one reader sees it; records are read (REC-4) once each and cached."""

    def __init__(self, root: str, job_id: str, uid: int) -> None:
        self.root = root
        self.job_id = job_id
        self.dir = os.path.join(root, "jobs", job_id)
        self.uid = uid
        self.listing = Listing()
        self._records: Dict[str, Optional[Inspection]] = {}
        #: SEC-10, the row of jobs/<id>: why the job directory itself is unusable (then the job is left alone).
        self.dir_problem: Optional[str] = None

    def refresh(self) -> "JobView":
        """Look at the job directory again (a new listing; cached records of names that still exist are kept: write-once)."""
        st = lstat_or_none(self.dir)
        self.dir_problem = None
        if st is None:
            self.dir_problem = "missing"
            self.listing = Listing()
            return self
        try:
            refuse_unsafe(self.dir, st, "dir", self.uid)
        except FsjobError as error:
            self.dir_problem = error.message
            self.listing = Listing()
            return self
        self.listing = scan(self.dir)
        # state records are mutable: never keep one.
        for key in [k for k in self._records if k.startswith("state.")]:
            del self._records[key]
        return self

    @property
    def exists(self) -> bool:
        """Whether jobs/<id> exists as a usable directory."""
        return self.dir_problem is None

    def path(self, name: str) -> str:
        """A path in the job directory."""
        return os.path.join(self.dir, name)

    def record(self, name: str, type_: str, gen: Optional[int] = None, force: Optional[bool] = None) -> Optional[Inspection]:
        """The record at ``name`` read as REC-4 says (None when missing); cached except state records."""
        if name in self._records:
            return self._records[name]
        inspection = read_record(self.path(name), type_, RecordName(type_, job_id=self.job_id, gen=gen, force=force), self.uid, allow_missing=True)
        if not name.startswith("state."):
            self._records[name] = inspection
        return inspection

    def spec(self) -> Inspection:
        """spec.json (an invalid or missing spec is an Inspection with ok False: the job is rejected, CLAIM-6 step 1)."""
        inspection = self.record("spec.json", "spec")
        if inspection is None:
            from .findings import make_finding

            return Inspection(False, findings=[make_finding("RECORD_SCHEMA", "spec.json is missing", self.path("spec.json"), self.job_id, "")])
        return inspection

    def spec_value(self) -> Optional[Dict[str, Any]]:
        """The spec when it is valid, else None."""
        inspection = self.spec()
        return inspection.value if inspection.ok else None

    def claim(self, gen: int) -> Optional[Inspection]:
        """claim.<g>.json."""
        return self.record(f"claim.{gen}.json", "claim", gen)

    def exec_record(self, gen: int) -> Optional[Inspection]:
        """exec.<g>.json."""
        return self.record(f"exec.{gen}.json", "exec", gen)

    def end(self, gen: int) -> Optional[Inspection]:
        """end.<g>.json."""
        return self.record(f"end.{gen}.json", "end", gen)

    def state(self, gen: int) -> Optional[Inspection]:
        """state.<g>.json (re-read every time: it is mutable)."""
        return self.record(f"state.{gen}.json", "state", gen)

    def receipt(self) -> Optional[Inspection]:
        """receipt.json."""
        return self.record("receipt.json", "receipt")

    def attempts(self) -> int:
        """RETRY-1: generations with an exec entry, minus those whose end record is valid and says counted false.

        An invalid end record counts the attempt (1.1): a start the spec may forbid is never allowed on a guess.
        """
        used = 0
        for gen in self.listing.execs:
            if gen in self.listing.ends:
                end = self.end(gen)
                if end is not None and end.ok and end.value.get("counted") is False:
                    continue
            used += 1
        return used

    def last_exec(self) -> int:
        """The highest generation with an exec entry (0 if none)."""
        return max(self.listing.execs) if self.listing.execs else 0

    def stdin_problem(self, spec: Dict[str, Any]) -> Optional[str]:
        """EXEC-7 with SEC-10's stdin row: why the job's stdin is unusable, or None."""
        expected = spec.get("stdin")
        if expected is None:
            return None
        path = self.path("stdin")
        st = lstat_or_none(path)
        if st is None:
            return "stdin is missing"
        try:
            refuse_unsafe(path, st, "file", self.uid)
        except FsjobError as error:
            return error.message
        if st.st_nlink != 1:
            return f"stdin has {st.st_nlink} hard links: its content may be another file's (SEC-9, SEC-10)"
        if st.st_size != expected.get("bytes"):
            return f"stdin holds {st.st_size} bytes, the spec says {expected.get('bytes')} (EXEC-7)"
        return None


def list_outputs(view: JobView, gen: int) -> List[str]:
    """The output file names of generation ``gen`` that exist."""
    return [name for name in (f"stdout.{gen}", f"stderr.{gen}") if name in view.listing.outputs]

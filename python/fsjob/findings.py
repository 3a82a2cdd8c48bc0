"""Findings: what a reader reports about something on disk.

A finding is data, never an exception: the record layer returns findings for
bad input (REC-4: the path, the clause and the reason). The codes are those
of the reference (src/records/findings.ts) that a record reader can report.
"""

from __future__ import annotations

from typing import Any, Dict, NamedTuple, Optional, Tuple

#: code -> (severity, clause): the registry of the codes this package reports.
FINDING_CODES: Dict[str, Tuple[str, str]] = {
    "RECORD_SYMLINK": ("error", "SEC-2"),
    "RECORD_NOT_REGULAR": ("error", "SEC-3"),
    "RECORD_TOO_LARGE": ("error", "SEC-4"),
    "RECORD_MODE": ("error", "SEC-5"),
    "RECORD_OWNER": ("error", "SEC-6"),
    "RECORD_LINKED": ("warning", "SEC-9"),
    "RECORD_EMPTY": ("error", "REC-1"),
    "RECORD_BAD_UTF8": ("error", "REC-1"),
    "RECORD_BOM": ("error", "REC-1"),
    "RECORD_BAD_JSON": ("error", "REC-1"),
    "RECORD_TRAILING_DATA": ("error", "REC-1"),
    "RECORD_NO_FINAL_LF": ("error", "REC-1"),
    "RECORD_NOT_OBJECT": ("error", "REC-1"),
    "RECORD_DUPLICATE_KEY": ("error", "REC-1"),
    "RECORD_NOT_COMPACT": ("error", "REC-1"),
    "RECORD_TOO_DEEP": ("error", "REC-1"),
    "RECORD_VERSION": ("error", "VER-1"),
    "RECORD_NEWER_MINOR": ("info", "VER-3"),
    "RECORD_TYPE_MISMATCH": ("error", "REC-3"),
    "RECORD_SCHEMA": ("error", "REC-5"),
    "RECORD_UNKNOWN_MEMBER": ("error", "VER-2"),
    "RECORD_ID_MISMATCH": ("error", "REC-7"),
    "RECORD_GEN_MISMATCH": ("error", "REC-7"),
    "RECORD_NAME_MISMATCH": ("error", "REC-7"),
}


class Finding(NamedTuple):
    """One thing wrong (or worth noting) about a file, naming the clause at stake."""

    code: str
    severity: str
    path: str
    job_id: Optional[str]
    clause: str
    message: str
    field: Optional[str] = None

    def __str__(self) -> str:
        where = f" at {self.field}" if self.field else ""
        return f"{self.path}: {self.message}{where} ({self.clause})"


def make_finding(code: str, message: str, path: str, job_id: Optional[str] = None, field: Optional[str] = None, clause: Optional[str] = None) -> Finding:
    """A finding of a registered code; ``clause`` overrides the code's default clause."""
    severity, default_clause = FINDING_CODES[code]
    return Finding(code, severity, path, job_id, clause or default_clause, message, field)


def finding_json(finding: Finding) -> Dict[str, Any]:
    """A finding as schemas/report.schema.json has it (``field`` only when there is one)."""
    return {key: value for key, value in finding._asdict().items() if key != "field" or value is not None}

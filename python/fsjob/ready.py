"""The ready index (spec/claim.md): a hint, never trusted.

An entry counts by its name alone (READY-1, SEC-10): its content, kind,
owner and mode are never read; every reader verifies against the job
directory before acting.
"""

from __future__ import annotations

import os
import stat
from typing import Dict, List, Tuple

from .clock import now_ms
from .constants import TEMP_MAX_AGE
from .errors import FsjobError
from .jobview import JobView
from .names import READY_NAME, is_job_id, ready_name
from .safefs import create_exclusive, list_dir, lstat_or_none, remove_file


def entries(root: str) -> List[Tuple[str, str]]:
    """(entry name, job id) of every ready entry, in ascending byte order of the names (CLAIM-1: priority, then FIFO)."""
    out: List[Tuple[str, str]] = []
    for name in list_dir(os.path.join(root, "ready")):
        match = READY_NAME.match(name)
        if match is not None and int(match.group(1)) <= 2000:
            out.append((name, match.group(2)))
    return out


def create(root: str, priority: int, job_id: str) -> bool:
    """Create the ready entry of a job exclusively (PUB-7, ENQ-2); False when it exists."""
    try:
        fd = create_exclusive(os.path.join(root, "ready", ready_name(priority, job_id)))
    except FsjobError as error:
        if error.code == "EXISTS":
            return False
        raise
    os.close(fd)
    return True


def remove(root: str, job_id: str) -> None:
    """Remove every ready entry of a job (READY-2, READY-3), by unlink."""
    for name, entry_id in entries(root):
        if entry_id == job_id:
            remove_file(os.path.join(root, "ready", name))


def remove_named(root: str, priority: int, job_id: str) -> None:
    """Remove the entry a valid spec's priority names (READY-2), without listing ready/."""
    remove_file(os.path.join(root, "ready", ready_name(priority, job_id)))


def rebuild(root: str, uid: int) -> int:
    """READY-4 and READY-5: give every unfinished job an entry; READY-3: drop entries of finished jobs and stale ones without a job.

    Returns how many entries it created.
    """
    present: Dict[str, List[str]] = {}
    for name, job_id in entries(root):
        present.setdefault(job_id, []).append(name)
    created = 0
    for job_id in list_dir(os.path.join(root, "jobs")):
        if not is_job_id(job_id):
            continue
        view = JobView(root, job_id, uid).refresh()
        if not view.exists:
            continue
        if view.listing.receipt:
            for name in present.get(job_id, []):
                remove_file(os.path.join(root, "ready", name))
            continue
        if job_id in present:
            continue
        spec = view.spec_value()
        priority = int(spec["priority"]) if spec is not None else 0
        if create(root, priority, job_id):
            created += 1
    now = now_ms()
    for job_id, names in present.items():
        if lstat_or_none(os.path.join(root, "jobs", job_id)) is not None:
            continue
        for name in names:
            path = os.path.join(root, "ready", name)
            st = lstat_or_none(path)
            # The producer may be between ENQ-2 and ENQ-3: only an old entry goes.
            if st is not None and not stat.S_ISDIR(st.st_mode) and now - st.st_mtime * 1000 > TEMP_MAX_AGE:
                remove_file(path)
    return created

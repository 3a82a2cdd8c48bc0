"""The ready index (spec/claim.md): a hint, never trusted.

An entry counts by its name alone (READY-1, SEC-10): its content, kind,
owner and mode are never read; every reader verifies against the job
directory before acting.
"""

from __future__ import annotations

import os
import stat
from typing import Dict, List, NamedTuple, Tuple

from .clock import now_ms
from .constants import TEMP_MAX_AGE
from .errors import FsjobError
from .jobview import JobView
from .names import GATED_SUFFIX, READY_NAME, RecordName, is_job_id, ready_name
from .records import read_record
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


class Rebuilt(NamedTuple):
    """What a rebuild did: the jobs it gave an entry, and the entries (names in ready/) it removed."""

    created: List[str]
    removed: List[str]


def rebuild(root: str, uid: int) -> Rebuilt:
    """READY-4 and READY-5: give every unfinished job an entry; READY-3: drop entries of finished jobs and stale ones without a job."""
    present: Dict[str, List[str]] = {}
    for name, job_id in entries(root):
        present.setdefault(job_id, []).append(name)
    done = Rebuilt([], [])
    for name in list_dir(os.path.join(root, "jobs")):
        if name.endswith(GATED_SUFFIX) and is_job_id(name[: -len(GATED_SUFFIX)]):
            # A gated job (GATE-1) has no receipt and needs its entry too.
            job_id = name[: -len(GATED_SUFFIX)]
            if job_id not in present:
                spec = read_record(os.path.join(root, "jobs", name, "spec.json"), "spec", RecordName("spec", job_id=job_id), uid, allow_missing=True)
                priority = int(spec.value["priority"]) if spec is not None and spec.ok else 0
                if create(root, priority, job_id):
                    done.created.append(job_id)
            continue
        job_id = name
        if not is_job_id(job_id):
            continue
        view = JobView(root, job_id, uid).refresh()
        if not view.exists:
            continue
        if view.listing.receipt:
            for name in present.get(job_id, []):
                remove_file(os.path.join(root, "ready", name))
                done.removed.append(name)
            continue
        if job_id in present:
            continue
        value = view.spec_value()
        priority = int(value["priority"]) if value is not None else 0
        if create(root, priority, job_id):
            done.created.append(job_id)
    now = now_ms()
    for job_id, names in present.items():
        # GATE-4: a gated job's entry is not stale (jobs/<id>, jobs/<id>.gated, jobs/<id> again).
        if any(lstat_or_none(os.path.join(root, "jobs", n)) is not None for n in (job_id, job_id + GATED_SUFFIX, job_id)):
            continue
        for name in names:
            path = os.path.join(root, "ready", name)
            st = lstat_or_none(path)
            # The producer may be between ENQ-2 and ENQ-3: only an old entry goes.
            if st is not None and not stat.S_ISDIR(st.st_mode) and now - st.st_mtime * 1000 > TEMP_MAX_AGE:
                remove_file(path)
                done.removed.append(name)
    return done

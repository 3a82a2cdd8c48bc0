"""One job as ``fsjob status ID --json`` shows it (the reference's jobStatus,
schemas/output/status.schema.json): its spec, derived status (STATUS-1), the
current owner judged, every generation's records and output sizes, the
receipt, the cancel requests, names that are not protocol names (LAYOUT-6)
and protocol names that are not regular files (SEC-2, SEC-3), each invalid
record as a finding, and what a live owner has not finished."""

from __future__ import annotations

import os
import re
import stat
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from .clock import now_ms
from .findings import finding_json
from .gates import dependency_state, held_upstream, placed_view
from .judge import Judge, judge_once
from .records import Inspection
from .safefs import list_dir, lstat_or_none

if TYPE_CHECKING:
    from .queue import Queue

#: The names a job directory may hold (LAYOUT-5); anything else is unknown and never opened (LAYOUT-6).
_PROTOCOL = re.compile(r"(spec\.json|stdin|receipt\.json|cancel\.json|cancel-force\.json|(claim|exec|state|end)\.[1-9][0-9]*\.json|(stdout|stderr)\.[1-9][0-9]*)\Z")


def findings_json(inspection: Optional[Inspection]) -> List[Dict[str, Any]]:
    """The findings that reject a record ([] when it is valid or missing)."""
    return [] if inspection is None or inspection.ok else [finding_json(finding) for finding in inspection.findings]


def _value(inspection: Optional[Inspection], findings: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    findings.extend(findings_json(inspection))
    return inspection.value if inspection is not None and inspection.ok else None


def job_report(queue: "Queue", job_id: str) -> Dict[str, Any]:
    """Everything known about one job (the caller has found it: queue.status(job_id) is not missing)."""
    state = queue.status(job_id)
    view = placed_view(queue.root, job_id, queue.uid)
    listing = view.listing
    findings: List[Dict[str, Any]] = []
    spec = _value(view.record("spec.json", "spec"), findings) if listing.has_spec else None
    receipt = _value(view.receipt(), findings) if listing.receipt else None
    names = [name for name in list_dir(view.dir) if not name.startswith(".")] if view.exists else []
    unknown = [name for name in names if _PROTOCOL.match(name) is None]
    hazards = [name for name in names if _PROTOCOL.match(name) is not None and not _regular(os.path.join(view.dir, name))]
    gens = sorted(listing.claims | listing.execs | listing.states | listing.ends | {int(name.split(".")[1]) for name in listing.outputs})
    generations: List[Dict[str, Any]] = []
    outputs: List[Dict[str, Any]] = []
    for gen in gens:
        own: List[Dict[str, Any]] = []
        sizes = {stream: _size(view.path(f"{stream}.{gen}")) if f"{stream}.{gen}" in listing.outputs else None for stream in ("stdout", "stderr")}
        generations.append({
            "gen": gen,
            "claim": _value(view.claim(gen), own) if gen in listing.claims else None,
            "exec": _value(view.exec_record(gen), own) if gen in listing.execs else None,
            "state": _value(view.state(gen), own) if gen in listing.states else None,
            "end": _value(view.end(gen), own) if gen in listing.ends else None,
            "stdout_bytes": sizes["stdout"],
            "stderr_bytes": sizes["stderr"],
            "findings": own,
        })
        outputs.extend({"stream": stream, "gen": gen, "bytes": size} for stream, size in sizes.items() if size is not None)
    owner = _owner(view) if view.exists and listing.open else None
    return {
        "id": job_id,
        "dir": view.dir,
        "status": state.status,
        "gen": listing.top,
        "attempts": state.attempts,
        "spec": spec,
        "owner": owner,
        "receipt": receipt,
        "cancel": {"graceful": listing.cancel, "force": listing.cancel_force},
        "generations": generations,
        "outputs": outputs,
        "unknown": unknown,
        "hazards": hazards,
        "findings": findings,
        "pending": _pending(view, state.status, owner),
        **_dependencies(queue, job_id, spec, state.status),
    }


def _dependencies(queue: "Queue", job_id: str, spec: Optional[Dict[str, Any]], status: str) -> Dict[str, Any]:
    """Each dependency of the spec judged now (AFTER-1), and for a blocked job the held job up its chain (HOLD-1)."""
    dependencies = []
    for dependency in [] if spec is None else spec.get("after", []):
        state, what = dependency_state(queue.root, queue.uid, dependency["job_id"], dependency["when"])
        dependencies.append({"job_id": dependency["job_id"], "when": dependency["when"], "state": state, "what": what if state == "never" else None})
    return {"dependencies": dependencies, "held_upstream": held_upstream(queue.root, queue.uid, job_id) if status == "blocked" else None}


def _regular(path: str) -> bool:
    st = lstat_or_none(path)
    return st is not None and stat.S_ISREG(st.st_mode)


def _size(path: str) -> Optional[int]:
    st = lstat_or_none(path)
    return st.st_size if st is not None and stat.S_ISREG(st.st_mode) else None


def _renewed(view: Any, gen: int, claim: Dict[str, Any]) -> int:
    """The claim's last renewal: its state record's heartbeat, else when it was claimed (an invalid state hides it, SEC-10)."""
    state = view.state(gen) if gen in view.listing.states else None
    return max(int(claim["claimed_ms"]), int(state.value["heartbeat_ms"])) if state is not None and state.ok else int(claim["claimed_ms"])


def _owner(view: Any) -> Dict[str, str]:
    """The open claim's owner judged in one look (judge_once)."""
    gen = view.listing.top
    claim = view.claim(gen)
    if claim is None or not claim.ok:
        return {"verdict": "unknown", "basis": "process", "reason": f"claim.{gen}.json cannot be read, so its owner is unknown (SEC-10)"}
    verdict, basis, reason = judge_once(claim.value["owner"], _renewed(view, gen, claim.value), int(claim.value["lease_ms"]))
    return {"verdict": verdict, "basis": basis, "reason": reason}


def _pending(view: Any, status: str, owner: Optional[Dict[str, str]]) -> Optional[str]:
    """What the live owner of a running job has not done although its command ended (its process group is gone, ID-8)."""
    if status != "running" or owner is None or owner["verdict"] != "alive":
        return None
    gen = view.listing.top
    if Judge().group(view, gen).state != "stopped":
        return None
    claim = view.claim(gen)
    if claim is None or not claim.ok:
        return None
    ago = max(0, now_ms() - _renewed(view, gen, claim.value))
    return (f"the command has ended (its process group is gone) but its owner, alive, has not published the receipt or end record; "
            f"the lease was last renewed {ago // 1000} s ago (lease {int(claim.value['lease_ms']) // 1000} s): if that grows, the owner "
            f"cannot write to the queue and its log says why; it tries again while its lease holds (RCPT-7), then leaves the claim "
            f"open for fsjob recover once it is gone")

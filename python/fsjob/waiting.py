"""Waiting on many jobs, and which jobs a lane or a label means (the
reference's src/producer/wait-many.ts and selection.ts): ``fsjob wait --all``,
``--lane``, ``--label`` and ids read from standard input.

- A selection (lane, labels) is matched against the job's spec, the one
  record that never changes; a job whose spec cannot be read matches no lane
  or label.
- ``--all``, ``--lane`` and ``--label`` wait for the jobs without a receipt
  when the wait starts: never one enqueued later, nor one finished before.
- Each receipt is reported as its job finishes (jobs finished already first,
  in the order given); the exit status that sums them up is 0 only when every
  job succeeded, else the exit code of the first, in the order given, that
  did not (EXEC-10), whatever order they finished in.

Python has no portable file watch in its standard library, so this polls;
a sweep reads one name per pending job, and sweeps are spaced by the number
pending (as the reference's are)."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Callable, Dict, List, Mapping, Optional, Sequence

from .errors import FsjobError
from .gates import place, placed_view
from .names import is_job_id
from .receipt import Receipt

if TYPE_CHECKING:
    from .queue import Queue

#: Pending jobs looked at per millisecond between two sweeps, and the longest gap (the reference's).
_SWEEP_JOBS_PER_MS = 20
_SWEEP_GAP_MAX = 5.0


def matches(spec: Optional[Mapping[str, object]], lane: Optional[str] = None, labels: Optional[Mapping[str, str]] = None) -> bool:
    """Whether a job with this spec is selected by ``lane`` and every one of ``labels``."""
    if lane is None and not labels:
        return True
    if spec is None:
        return False
    if lane is not None and spec.get("lane") != lane:
        return False
    own = spec.get("labels")
    return all(isinstance(own, dict) and own.get(name) == value for name, value in (labels or {}).items())


def unfinished_jobs(queue: "Queue", lane: Optional[str] = None, labels: Optional[Mapping[str, str]] = None) -> List[str]:
    """The jobs without a receipt now that match, in enqueue order (what ``wait --all``, ``--lane``, ``--label`` wait for)."""
    picked = []
    for job_id in sorted(queue.job_ids()):
        if os.path.lexists(os.path.join(queue.job_dir(job_id), "receipt.json")):
            continue
        if lane is not None or labels:
            view = placed_view(queue.root, job_id, queue.uid)
            if not view.exists or not matches(view.spec_value(), lane, labels):
                continue
        picked.append(job_id)
    return picked


def summary_exit_code(receipts: Sequence[Receipt]) -> int:
    """0 when every job succeeded (and for none), else the exit code of the first that did not."""
    return next((int(receipt.exit_code) for receipt in receipts if receipt.exit_code != 0), 0)


def wait_many(queue: "Queue", job_ids: Sequence[str], timeout: Optional[float] = None, on_receipt: Optional[Callable[[Receipt], None]] = None,
              poll: float = 0.1, on_idle: Optional[Callable[[], None]] = None) -> List[Receipt]:
    """Wait until every job has a receipt; return the receipts in the order of ``job_ids`` (an id named twice counts once).

    ``on_receipt`` gets each receipt as its job finishes; ``on_idle`` is called
    between sweeps (the CLI's advice when no worker serves the queue). Raises
    NOT_FOUND for an unknown id before waiting, TIMEOUT after ``timeout``
    seconds naming the jobs still unfinished (its ``job_ids``: every one, in the
    order of ``job_ids``; the receipts before it went to
    ``on_receipt``), INVALID_RECORD for an invalid receipt.
    """
    from .ops import wait

    order = list(dict.fromkeys(job_ids))
    for job_id in order:
        if not is_job_id(job_id) or place(queue.root, job_id) == "missing":  # GATE-4: held and blocked jobs are known too
            raise FsjobError("NOT_FOUND", f"no job {job_id} in {queue.root} (it was never published there, or gc removed it after it finished)",
                             path=os.path.join(queue.root, "jobs", job_id), job_id=job_id)
    give_up = None if timeout is None else time.monotonic() + timeout
    pending = list(order)
    got: Dict[str, Receipt] = {}
    while True:
        still = []
        for job_id in pending:
            if not os.path.lexists(os.path.join(queue.job_dir(job_id), "receipt.json")):
                still.append(job_id)
                continue
            receipt = wait(queue, job_id, 0)
            got[job_id] = receipt
            if on_receipt is not None:
                on_receipt(receipt)
        pending = still
        if not pending:
            return [got[job_id] for job_id in order]
        if give_up is not None and time.monotonic() >= give_up:
            shown = ", ".join(pending[:3]) + (f", and {len(pending) - 3} more" if len(pending) > 3 else "")
            which = f"job {shown} has" if len(order) == 1 else f"{len(pending)} of {len(order)} jobs have"
            raise FsjobError("TIMEOUT", f"{which} no receipt yet after {timeout} s of waiting{'' if len(order) == 1 else f' ({shown})'}; still unfinished",
                             path=queue.job_dir(pending[0]), job_id=pending[0], job_ids=pending)
        if on_idle is not None:
            on_idle()
        gap = max(poll, min(_SWEEP_GAP_MAX, len(pending) / _SWEEP_JOBS_PER_MS / 1000))
        time.sleep(gap if give_up is None else max(0.0, min(gap, give_up - time.monotonic())))

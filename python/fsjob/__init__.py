"""fsjob for Python: the fsjob filesystem job protocol (spec/README.md; records of 1.1)
with the standard library only.

Producer::

    from fsjob import Queue
    q = Queue.init("/tmp/q")
    job = q.enqueue(argv=["echo", "hello"])
    receipt = q.wait(job, timeout=60)
    print(receipt.outcome, q.logs(job).stdout)

Consumer::

    from fsjob import Queue, work
    work(Queue.open("/tmp/q"), handlers={"resize": lambda job: {"done": job.payload}}, concurrency=4)

Errors are :class:`FsjobError` with a ``code`` from a closed set
(:data:`ERROR_CODES`, the same as the TypeScript reference's).
"""

from typing import TYPE_CHECKING, Any

from .constants import PROTOCOL_VERSION
from .errors import ERROR_CODES, DedupeHeld, FsjobError

if TYPE_CHECKING:
    from .attempt import PayloadJob
    from .queue import Queue
    from .receipt import ExecStatus, JobStatus, Logs, OutputSummary, Receipt
    from .recover import RecoverReport, recover
    from .worker import Worker, work

__version__ = "0.1.0"

__all__ = [
    "DedupeHeld", "ERROR_CODES", "ExecStatus", "FsjobError", "JobStatus", "Logs", "OutputSummary", "PROTOCOL_VERSION",
    "PayloadJob", "Queue", "Receipt", "RecoverReport", "Worker", "recover", "work",
]

# Imported on first use, so that a command-line run loads only what it needs.
_LAZY = {
    "PayloadJob": "attempt", "Queue": "queue", "ExecStatus": "receipt", "JobStatus": "receipt", "Logs": "receipt",
    "OutputSummary": "receipt", "Receipt": "receipt", "RecoverReport": "recover", "recover": "recover", "Worker": "worker", "work": "worker",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fsjob' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value

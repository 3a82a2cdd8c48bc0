"""One exception class for everything fsjob refuses or fails at.

Callers branch on :attr:`FsjobError.code`, a closed set shared with the
TypeScript reference (src/base/errors.ts), never on the message. The other
fields say where (``path``, ``job_id``) and which spec clause was at stake.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Union

#: The closed set of codes, in the reference's order.
ERROR_CODES = (
    "USAGE",  # a caller passed something that is not a valid request
    "NOT_A_QUEUE",  # the directory is not an fsjob queue (no valid fsjob.json)
    "UNSAFE_QUEUE",  # queue root is a symlink, foreign-owned or group/other-writable
    "SYMLINK_REFUSED",  # a path inside the queue is a symbolic link
    "NOT_REGULAR",  # a FIFO, socket, device or directory where a file belongs
    "TOO_LARGE",  # a file is over the bound the spec sets for it
    "UNSAFE_MODE",  # a file or directory has wider permissions than the spec allows
    "FOREIGN_OWNER",  # a file or directory is owned by another user
    "INVALID_ID",  # a job id, generation or file name outside the spec's charset
    "INVALID_RECORD",  # malformed JSON, not compact, or fails its schema
    "UNSUPPORTED_VERSION",  # a record or queue of another protocol major
    "EXISTS",  # an exclusive create lost: the name already exists
    "NOT_FOUND",  # no such job or record
    "DEDUPE_HELD",  # a non-terminal job already holds the dedupe key
    "FINISHED",  # the job already has a receipt: it cannot be cancelled (CANCEL-1)
    "NOT_HELD",  # the job was not enqueued held: there is nothing to release (HOLD-1)
    "SUPERSEDED",  # this owner's claim is no longer the current one
    "UNPROVEN",  # an execution could not be proven stopped; left alone
    "TIMEOUT",  # a bounded wait ran out
    "IO",  # the filesystem failed (ENOSPC, EACCES, EROFS, EMFILE, ...): see errno
)


class FsjobError(Exception):
    """An fsjob refusal or failure with a code from :data:`ERROR_CODES`."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        path: Optional[str] = None,
        job_id: Optional[str] = None,
        clause: Optional[str] = None,
        errno: Optional[str] = None,
        field: Optional[str] = None,
        job_ids: Optional[Sequence[str]] = None,
        job_status: Optional[str] = None,
    ) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown fsjob error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.path = path
        self.job_id = job_id
        self.clause = clause
        self.errno = errno
        #: The member of a request or record that was refused, as a JSON pointer ("/lane_slots").
        self.field = field
        #: Every job at stake where there are several, in the order given (a wait on many that timed out: each job still unfinished).
        self.job_ids: Optional[List[str]] = None if job_ids is None else list(job_ids)
        #: The status (STATUS-1) of the job at stake (job_id) where it decides what to do next (DEDUPE_HELD: the holder's).
        self.job_status = job_status

    def to_json(self) -> Dict[str, Union[str, List[str]]]:
        """The error in the reference's JSON form (FsjobError.toJSON: snake_case members, in its order)."""
        out: Dict[str, Union[str, List[str]]] = {"code": self.code, "message": self.message}
        for name, value in (("path", self.path), ("job_id", self.job_id), ("clause", self.clause), ("errno", self.errno), ("field", self.field),
                            ("job_ids", self.job_ids), ("job_status", self.job_status)):
            if value is not None:
                out[name] = value if isinstance(value, str) else list(value)
        return out

    def __repr__(self) -> str:
        return f"FsjobError({self.code!r}, {self.message!r})"


class DedupeHeld(FsjobError):
    """Enqueue refused: an unfinished job already holds the dedupe key (DEDUPE-1).

    ``holder`` is the id of the job that holds it, when it could be read; ``job_status`` its status (STATUS-1), when it
    could be told: a held holder (or one blocked behind ``held_upstream``, a held job) runs only once released, so
    waiting for it never ends, and the message says to release or cancel it, as the reference's.
    """

    def __init__(self, key: str, holder: Optional[str], *, path: Optional[str] = None, job_status: Optional[str] = None,
                 held_upstream: Optional[str] = None) -> None:
        if holder is None:
            said = f"the dedupe key {key!r} is held (DEDUPE-1)"
        elif job_status == "held":
            said = (f"the dedupe key {key!r} is held by job {holder}, which is held (enqueued with --hold): it runs only once released, and waiting "
                    f"for it never ends; release it (fsjob release {holder}) or cancel it (fsjob cancel {holder}), then enqueue again (DEDUPE-1)")
        elif held_upstream is not None:
            said = (f"the dedupe key {key!r} is held by job {holder}, which is blocked behind held job {held_upstream}: it runs only once that one "
                    f"is released, and waiting for it never ends; release that one (fsjob release {held_upstream}) or cancel this one "
                    f"(fsjob cancel {holder}), then enqueue again (DEDUPE-1)")
        else:
            seen = "" if job_status is None else f" ({job_status})"
            said = (f"the dedupe key {key!r} is held by job {holder}, which is not finished{seen}; wait for it (fsjob wait {holder}) "
                    f"or cancel it (fsjob cancel {holder}), then enqueue again (DEDUPE-1)")
        super().__init__("DEDUPE_HELD", said, path=path, job_id=holder, clause="DEDUPE-1", job_status=job_status)
        self.key = key
        self.holder = holder


def io_error(error: OSError, what: str, path: Optional[str] = None, clause: Optional[str] = None) -> FsjobError:
    """An IO FsjobError for an OSError, naming the errno (ENOSPC, EACCES, ...)."""
    import errno as errno_module

    name = errno_module.errorcode.get(error.errno or 0, "EIO")
    where = path if path is not None else (error.filename if isinstance(error.filename, str) else None)
    text = f"{what}: {error.strerror or name}" + (f" ({where})" if where else "")
    return FsjobError("IO", text, path=where, clause=clause, errno=name)

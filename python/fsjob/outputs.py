"""Bounded output capture (EXEC-1, EXEC-17, RCPT-5): of a stream longer than
its bound N the file keeps the bytes ``output_keep`` names (the first N for
"head", the last N for "tail", the first N/2 and the last N - N/2 for
"head_tail"); the rest is read and counted but discarded, so a command that
writes more never blocks on a full pipe. The file stays append-only (PUB-7):
the head part is written as it arrives, the tail part is held here and
appended once the stream has ended."""

from __future__ import annotations

import hashlib
import os
from typing import Any, Dict, Optional

#: EXEC-17 (1.1): the values of a spec's output_keep; absent is "head" (SPEC-2).
OUTPUT_KEEPS = ("head", "tail", "head_tail")


def head_part(bound: int, keep: str) -> int:
    """Bytes of a bound written as they arrive: all for head, none for tail, half (rounded down) for head_tail."""
    return bound if keep == "head" else 0 if keep == "tail" else bound // 2


def gap_offset(keep: str, bytes_kept: int) -> int:
    """EXEC-17: where a truncated output's missing bytes belong, as an offset into the kept bytes."""
    return bytes_kept if keep == "head" else 0 if keep == "tail" else bytes_kept // 2

from .errors import io_error
from .safefs import write_all


class Capture:
    """One output stream: the read end of its pipe and the exclusively created file it fills."""

    def __init__(self, pipe_fd: int, file_fd: int, path: str, bound: int, keep: str = "head") -> None:
        self.pipe_fd = pipe_fd
        self.file_fd = file_fd
        self.path = path
        self.bound = bound
        self.total = 0
        self.kept = 0
        self.eof = False
        self._digest = hashlib.sha256()
        self._head = head_part(bound, keep)
        self._tail_room = bound - self._head
        #: The last ``_tail_room`` bytes seen past the head part (EXEC-17), appended by :meth:`finish`.
        self._tail = bytearray()

    def read(self) -> None:
        """Read what the pipe holds now (the fd is non-blocking) and keep what fits under the bound."""
        while not self.eof:
            try:
                chunk = os.read(self.pipe_fd, 65536)
            except BlockingIOError:
                return
            except OSError as error:
                raise io_error(error, "cannot read a command's output", self.path) from error
            if not chunk:
                self.eof = True
                return
            self.total += len(chunk)
            room = max(0, self._head - self.kept)
            if room > 0:
                self._append(chunk[:room])
            if len(chunk) > room and self._tail_room > 0:
                self._tail += chunk[room:]
                if len(self._tail) > self._tail_room:
                    del self._tail[: len(self._tail) - self._tail_room]

    def _append(self, data: bytes) -> None:
        try:
            write_all(self.file_fd, data)
        except OSError as error:
            raise io_error(error, "cannot append a command's output", self.path, "EXEC-1") from error
        self._digest.update(data)
        self.kept += len(data)

    def close_pipe(self) -> None:
        """Close the read end (EXEC-12: after DRAIN_LIMIT a process outside the group may hold it open)."""
        if self.pipe_fd >= 0:
            os.close(self.pipe_fd)
            self.pipe_fd = -1

    def finish(self) -> None:
        """Append the held tail (EXEC-17), fsync and close the file (RCPT-1, RCPT-2)."""
        self.close_pipe()
        if self.file_fd >= 0:
            try:
                if self._tail:
                    tail, self._tail = bytes(self._tail), bytearray()
                    self._append(tail)
                os.fsync(self.file_fd)
            except OSError as error:
                raise io_error(error, "cannot fsync a command's output", self.path, "RCPT-2") from error
            finally:
                os.close(self.file_fd)
                self.file_fd = -1

    def abandon(self) -> None:
        """Close everything without a summary (the attempt never started)."""
        self.close_pipe()
        if self.file_fd >= 0:
            os.close(self.file_fd)
            self.file_fd = -1

    def summary(self, gen: int, total_known: bool) -> Dict[str, Any]:
        """RCPT-5: the stream's summary for the receipt."""
        total: Optional[int] = self.total if total_known and self.eof else None
        return {"gen": gen, "bytes_total": total, "bytes_kept": self.kept, "truncated": self.total > self.kept, "sha256": self._digest.hexdigest()}

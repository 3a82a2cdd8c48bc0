"""Bounded output capture (EXEC-1, RCPT-5): the first N bytes of a stream are
appended to its file, the rest read and counted but discarded, so a command
that writes more never blocks on a full pipe."""

from __future__ import annotations

import hashlib
import os
from typing import Any, Dict, Optional

from .errors import io_error
from .safefs import write_all


class Capture:
    """One output stream: the read end of its pipe and the exclusively created file it fills."""

    def __init__(self, pipe_fd: int, file_fd: int, path: str, bound: int) -> None:
        self.pipe_fd = pipe_fd
        self.file_fd = file_fd
        self.path = path
        self.bound = bound
        self.total = 0
        self.kept = 0
        self.eof = False
        self._digest = hashlib.sha256()

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
            room = self.bound - self.kept
            if room > 0:
                keep = chunk[:room]
                try:
                    write_all(self.file_fd, keep)
                except OSError as error:
                    raise io_error(error, "cannot append a command's output", self.path, "EXEC-1") from error
                self._digest.update(keep)
                self.kept += len(keep)

    def close_pipe(self) -> None:
        """Close the read end (EXEC-12: after DRAIN_LIMIT a process outside the group may hold it open)."""
        if self.pipe_fd >= 0:
            os.close(self.pipe_fd)
            self.pipe_fd = -1

    def finish(self) -> None:
        """fsync and close the file (RCPT-1, RCPT-2)."""
        self.close_pipe()
        if self.file_fd >= 0:
            try:
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

"""What will make an accepted command job fail on this machine, for the
person who enqueued it to hear now (the reference's commandWarnings,
src/producer/request-options.ts): a working directory inside the queue or
missing (EXEC-5, cwd_unusable), and a command that is not on the job's PATH
(EXEC-4, EXEC-6: /usr/local/bin:/usr/bin:/bin unless the job's env sets PATH,
not the enqueuing shell's). The job is accepted either way: the consumer's
machine may differ from this one. One sentence each, for stderr."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

from .constants import DEFAULT_COMMAND_PATH


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _on_path(name: str, search: str, cwd: str) -> Optional[str]:
    """Where execvp(3) would find ``name`` on ``search`` (an empty entry is the working directory), or None."""
    for directory in search.split(":"):
        candidate = os.path.normpath(os.path.join(cwd, directory or ".", name))
        if _executable(candidate):
            return candidate
    return None


def command_warnings(spec: Dict[str, Any], root: str, shell_path: Optional[str] = None) -> List[str]:
    """The warnings for a command job's spec enqueued into the queue at ``root`` (none for a payload job)."""
    argv = spec.get("argv")
    if not isinstance(argv, list) or not argv:
        return []
    warnings: List[str] = []
    cwd = str(spec["cwd"])
    inside = cwd == root or cwd.startswith(root + "/")
    if inside or not os.path.isdir(cwd):
        why = "lies inside the queue" if inside else "is not a directory here"
        warnings.append(f"the working directory {cwd} {why}; a consumer will reject the job (EXEC-5, cwd_unusable) unless that changes")
    program = argv[0]
    job_path = spec.get("env", {}).get("PATH", DEFAULT_COMMAND_PATH)
    # A program or PATH that is not UTF-8 (SPEC-3, {"base64": ...}) is not looked up here: the warning is only a help.
    if not isinstance(program, str) or not isinstance(job_path, str):
        return warnings
    if "/" in program:
        if not _executable(os.path.join(cwd, program)):
            warnings.append(f"{program} is not an executable file here (from {cwd}); the job will fail with exit 127 or 126 unless that changes")
        return warnings
    if _on_path(program, job_path, cwd) is not None:
        return warnings
    here = _on_path(program, os.environ.get("PATH", "") if shell_path is None else shell_path, cwd)
    hint = "" if here is None else f"; it is {here} in this shell: give that path, or pass this shell's PATH with --env PATH"
    warnings.append(f"{program} is not on the job's PATH ({job_path}), so the job will fail with exit 127{hint}")
    return warnings

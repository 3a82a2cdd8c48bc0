"""The leader of a command's process group (EXEC-2, EXEC-4, EXEC-13), run as
its own program: ``python3 -S -E gate.py RELEASE_FD N NAME=VALUE... ARGV...``.

It is started in a new session and process group, in the command's working
directory, with the job's stdin and the output pipes on 0, 1 and 2 and the
release pipe on RELEASE_FD. It puts every signal at its default and empties
the mask, waits for one byte on the release pipe (end of file: the owner died
before recording the execution, exit 125 without running anything), closes
it, sets the umask to 0022 and becomes the command with exactly the N
variables it was given (its own environment is empty: the interpreter's
locale coercion must not reach the command, EXEC-6). The program is found
as execvp(3) finds it, with the PATH of that environment; 127 when it cannot
be found, 126 when it cannot be executed.

Arguments and variables are the bytes the spec holds (SPEC-3): they arrive
here as bytes, sys.argv keeps a byte that is not UTF-8 as a surrogate
escape (PEP 383), and execve writes each back as that byte.

This file imports nothing from fsjob: it runs before and instead of the command.
"""

import errno
import os
import signal
import sys
from typing import Dict, List, NoReturn


def _defaults() -> None:
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    for number in signal.valid_signals():
        if number in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            signal.signal(number, signal.SIG_DFL)
        except (OSError, ValueError, RuntimeError):
            pass


def _exec(argv: List[str], env: Dict[str, str]) -> NoReturn:
    name = argv[0]
    candidates = [name] if "/" in name else [os.path.join(d or ".", name) for d in env.get("PATH", "/usr/local/bin:/usr/bin:/bin").split(":")]
    status = 127
    for path in candidates:
        try:
            os.execve(path, argv, env)
        except OSError as error:
            if error.errno == errno.ENOEXEC:
                # execvp(3) runs a file it cannot execute directly with the shell.
                try:
                    os.execve("/bin/sh", ["sh", path] + argv[1:], env)
                except OSError:
                    status = 126
            elif error.errno not in (errno.ENOENT, errno.ENOTDIR):
                status = 126
    sys.stderr.write(f"fsjob: {name}: {'not found' if status == 127 else 'cannot be executed'}\n")
    os._exit(status)


def main() -> NoReturn:
    """Wait for the release, then become the command."""
    _defaults()
    release = int(sys.argv[1])
    count = int(sys.argv[2])
    env = dict(item.split("=", 1) for item in sys.argv[3:3 + count])
    argv = sys.argv[3 + count:]
    try:
        go = os.read(release, 1)
    except OSError:
        go = b""
    if not go:
        os._exit(125)
    os.close(release)
    os.umask(0o022)
    _exec(argv, env)


if __name__ == "__main__":
    main()

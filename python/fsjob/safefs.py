"""The writing primitives of spec/writing.md and the file checks of spec/security.md.

Reads refuse a symlink (SEC-2), anything but a regular file or directory
where one belongs, without ever opening it in blocking mode (SEC-3: lstat
first, open with O_NONBLOCK and O_NOFOLLOW, verify with fstat), a file over
its bound (SEC-4), a file writable by group or others (SEC-5) and one owned
by another uid (SEC-6), in that order. Writes are only: publish by link
(PUB-1..PUB-6), publish by rename (PUB-4), create exclusively (PUB-7), make
a directory (PUB-8), rename a directory (PUB-9) and remove (PUB-10); nothing
else in this package writes inside a queue (PUB-11).
"""

from __future__ import annotations

import errno
import os
import stat
from typing import List, Optional, Tuple

from .errors import FsjobError, io_error

EUID = os.geteuid()
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_GROUP_OR_OTHER_WRITE = 0o022


def lstat_or_none(path: str) -> Optional[os.stat_result]:
    """lstat, or None when nothing is there (other errors raise IO)."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    except OSError as error:
        raise io_error(error, "cannot look at an entry", path) from error


def exists(path: str) -> bool:
    """Whether any entry has this name (REC-9: a name counts by its existence; links are not followed)."""
    return lstat_or_none(path) is not None


def describe_kind(st: os.stat_result) -> str:
    """What an entry is, for messages."""
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def refuse_unsafe(path: str, st: os.stat_result, wanted: str, uid: int = EUID) -> None:
    """SEC-2, SEC-3, SEC-6, SEC-5 on one lstat or fstat result (``wanted``: "file" or "dir")."""
    if stat.S_ISLNK(st.st_mode):
        raise FsjobError("SYMLINK_REFUSED", f"{path} is a symbolic link; fsjob never follows links inside a queue (SEC-2)", path=path, clause="SEC-2")
    right = stat.S_ISREG(st.st_mode) if wanted == "file" else stat.S_ISDIR(st.st_mode)
    if not right:
        belongs = "a regular file" if wanted == "file" else "a directory"
        raise FsjobError("NOT_REGULAR", f"{path} is {describe_kind(st)} where {belongs} belongs (SEC-3)", path=path, clause="SEC-3")
    if st.st_uid != uid:
        raise FsjobError("FOREIGN_OWNER", f"{path} is owned by uid {st.st_uid}, not by uid {uid} (SEC-6)", path=path, clause="SEC-6")
    if st.st_mode & _GROUP_OR_OTHER_WRITE:
        raise FsjobError("UNSAFE_MODE", f"{path} has mode 0{st.st_mode & 0o7777:o}, writable by group or others (SEC-5)", path=path, clause="SEC-5")


def check_dir(path: str, uid: int = EUID) -> os.stat_result:
    """A trusted directory that is not a symlink (SEC-2, SEC-5, SEC-6); NOT_FOUND when missing."""
    st = lstat_or_none(path)
    if st is None:
        raise FsjobError("NOT_FOUND", f"{path} does not exist", path=path)
    refuse_unsafe(path, st, "dir", uid)
    return st


def read_bounded(path: str, max_bytes: int, uid: int = EUID, allow_missing: bool = False, noatime: bool = False) -> Optional[Tuple[bytes, os.stat_result]]:
    """The bytes and fstat of a trusted regular file of at most ``max_bytes`` (SEC-2..SEC-6).

    Returns None for a missing file when ``allow_missing``; raises NOT_FOUND
    otherwise, and the refusal codes of :func:`refuse_unsafe` or TOO_LARGE.
    """
    st = lstat_or_none(path)
    if st is None:
        if allow_missing:
            return None
        raise FsjobError("NOT_FOUND", f"{path} does not exist", path=path)
    refuse_unsafe(path, st, "file", uid)
    if st.st_size > max_bytes:
        raise FsjobError("TOO_LARGE", f"{path} is {st.st_size} bytes, over the {max_bytes}-byte bound (SEC-4)", path=path, clause="SEC-4")
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _O_CLOEXEC
    if noatime:
        flags |= getattr(os, "O_NOATIME", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        if allow_missing:
            return None
        raise FsjobError("NOT_FOUND", f"{path} does not exist", path=path) from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise FsjobError("SYMLINK_REFUSED", f"{path} is a symbolic link; fsjob never follows links inside a queue (SEC-2)", path=path, clause="SEC-2") from None
        if error.errno == errno.EPERM and noatime:
            return read_bounded(path, max_bytes, uid, allow_missing, False)
        raise io_error(error, "cannot open a file", path) from error
    try:
        fst = os.fstat(fd)
        refuse_unsafe(path, fst, "file", uid)
        if fst.st_size > max_bytes:
            raise FsjobError("TOO_LARGE", f"{path} is {fst.st_size} bytes, over the {max_bytes}-byte bound (SEC-4)", path=path, clause="SEC-4")
        chunks = []
        left = max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > max_bytes:
            raise FsjobError("TOO_LARGE", f"{path} grew over the {max_bytes}-byte bound while read (SEC-4)", path=path, clause="SEC-4")
        return data, fst
    except OSError as error:
        raise io_error(error, "cannot read a file", path) from error
    finally:
        os.close(fd)


def fsync_dir(path: str) -> None:
    """fsync a directory (PUB-5, PUB-9, ENQ-4): its entries are durable after this returns (DUR-2)."""
    try:
        fd = os.open(path, os.O_RDONLY | _O_DIRECTORY | os.O_NOFOLLOW | _O_CLOEXEC)
    except OSError as error:
        raise io_error(error, "cannot open a directory to fsync it", path) from error
    try:
        os.fsync(fd)
    except OSError as error:
        raise io_error(error, "cannot fsync a directory", path) from error
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte (os.write may write less than asked)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def create_exclusive(path: str) -> int:
    """Create a new data file (PUB-7): O_CREAT|O_EXCL|O_NOFOLLOW|O_WRONLY, mode 0600. EXISTS when the name is taken."""
    try:
        return os.open(path, os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_WRONLY | _O_CLOEXEC, 0o600)
    except FileExistsError:
        raise FsjobError("EXISTS", f"{path} already exists (PUB-7)", path=path, clause="PUB-7") from None
    except OSError as error:
        raise io_error(error, "cannot create a file", path, "PUB-7") from error


def _temp_name(directory: str, name: str) -> str:
    return os.path.join(directory, f".{name}.{os.getpid()}.{os.urandom(4).hex()}")


def _write_temp(directory: str, name: str, data: bytes) -> str:
    """PUB-1 and PUB-2: a temporary file in the target's directory holding every byte, fsynced."""
    for _ in range(8):
        temp = _temp_name(directory, name)
        try:
            fd = os.open(temp, os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_WRONLY | _O_CLOEXEC, 0o600)
        except FileExistsError:
            continue
        except OSError as error:
            raise io_error(error, "cannot create a temporary file", temp, "PUB-1") from error
        try:
            write_all(fd, data)
            os.fsync(fd)
        except OSError as error:
            os.close(fd)
            _unlink_quietly(temp)
            raise io_error(error, "cannot write a temporary file", temp, "PUB-2") from error
        os.close(fd)
        return temp
    raise FsjobError("IO", f"cannot find a free temporary name in {directory}", path=directory, clause="PUB-1")


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


# FS-2: what a filesystem says when it cannot link or rename at all (EXDEV is LAYOUT-3's).
_LACKS = {errno.EPERM, errno.ENOSYS, errno.EOPNOTSUPP, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)}
_WHERE = "ext4, xfs, btrfs, tmpfs, NFSv4; sshfs only where the server has the hardlink and posix-rename extensions"


def _lack(error: OSError, operation: str, path: str) -> Optional[FsjobError]:
    """FS-2: the error for a link or rename the filesystem cannot do, never a lost race; None for other errors."""
    if error.errno not in _LACKS:
        return None
    name = errno.errorcode.get(error.errno or 0, "EIO")
    return FsjobError("IO", f"the filesystem of {path} refused {operation}() with {name}: fsjob needs it (FS-1); put the queue on a filesystem that has it ({_WHERE})",
                      path=path, clause="FS-2", errno=name)


def _holds_own_record(temp: str, target: str, data: bytes) -> bool:
    """FS-3: whether ``target``, which link() said exists, is the record linked from ``temp`` (a retransmitted link).

    Same device and inode, or, where hard links show as separate files
    (sshfs), exactly the same bytes: every write-once record names its writer.
    """
    try:
        there = os.lstat(target)
        if not stat.S_ISREG(there.st_mode):
            return False
        if os.path.samestat(os.lstat(temp), there):
            return True
        if there.st_size != len(data):
            return False
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            return os.read(fd, len(data) + 1) == data
        finally:
            os.close(fd)
    except OSError:
        return False


def probe_filesystem(tmp_dir: str) -> None:
    """FS-2: try FS-1's operations in a queue's tmp/ (exclusive create, link, link onto an existing name, rename over, fsync); raise IO naming the one that failed."""
    # SEC-2 first: a probe never writes through a symlinked or foreign tmp/ (LAYOUT-10 refuses it by name).
    check_dir(tmp_dir)
    stem = os.path.join(tmp_dir, f".fsjob-probe-{os.getpid()}-{os.urandom(4).hex()}")
    first, linked, second = stem + ".a", stem + ".b", stem + ".c"

    def refuse(operation: str, detail: str, error: Optional[OSError] = None) -> FsjobError:
        name = None if error is None else errno.errorcode.get(error.errno or 0, "EIO")
        return FsjobError("IO", f"the filesystem of {tmp_dir} cannot hold an fsjob queue: {operation} {detail} (FS-1); put the queue on a filesystem that does ({_WHERE})",
                          path=tmp_dir, clause="FS-2", errno=name)

    def create(path: str, text: bytes) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, text)
            os.fsync(fd)
        finally:
            os.close(fd)

    try:
        try:
            create(first, b"a\n")
        except OSError as error:
            raise refuse("exclusive creation of a private file", f"failed with {errno.errorcode.get(error.errno or 0, 'EIO')}", error) from error
        try:
            os.link(first, linked, follow_symlinks=False)
        except OSError as error:
            raise refuse("link() to a new name", f"failed with {errno.errorcode.get(error.errno or 0, 'EIO')}", error) from error
        create(second, b"c\n")
        try:
            os.link(second, linked, follow_symlinks=False)
        except FileExistsError:
            pass
        except OSError as error:
            raise refuse("link() onto an existing name", f"failed with {errno.errorcode.get(error.errno or 0, 'EIO')} instead of EEXIST", error) from error
        else:
            raise refuse("link() onto an existing name", "succeeded: it must fail with EEXIST")
        try:
            os.rename(second, linked)
        except OSError as error:
            raise refuse("rename() over an existing file", f"failed with {errno.errorcode.get(error.errno or 0, 'EIO')}", error) from error
        with open(linked, "rb") as handle:
            if handle.read(8) != b"c\n":
                raise refuse("rename() over an existing file", "left the old content in place")
        try:
            fsync_dir(tmp_dir)
        except FsjobError as error:
            raise refuse("fsync of a directory", f"failed ({error.message})") from error
    finally:
        for path in (first, linked, second):
            _unlink_quietly(path)


def publish_link(directory: str, name: str, data: bytes, sync: bool = True) -> bool:
    """Publish a write-once record by link (PUB-1..PUB-6).

    Returns True when this call published it, False when the name existed
    (the step was lost to someone else, PUB-3). The directory is fsynced
    before this returns unless ``sync`` is False (the batching of
    spec/writing.md: the caller then fsyncs it before anything depends on the record).
    """
    target = os.path.join(directory, name)
    temp = _write_temp(directory, name, data)
    try:
        os.link(temp, target, follow_symlinks=False)
    except FileExistsError:
        if not _holds_own_record(temp, target, data):
            _unlink_quietly(temp)
            return False
    except OSError as error:
        _unlink_quietly(temp)
        raise _lack(error, "link", target) or io_error(error, "cannot link a record", target, "PUB-3") from error
    try:
        if sync:
            fsync_dir(directory)
    finally:
        _unlink_quietly(temp)
    return True


def publish_rename(directory: str, name: str, data: bytes) -> None:
    """Publish a mutable record by rename (PUB-4): temporary file, rename over the name, fsync of the directory."""
    target = os.path.join(directory, name)
    temp = _write_temp(directory, name, data)
    try:
        os.rename(temp, target)
    except OSError as error:
        _unlink_quietly(temp)
        raise _lack(error, "rename", target) or io_error(error, "cannot rename a record into place", target, "PUB-4") from error
    fsync_dir(directory)


def make_dir(path: str, uid: int = EUID) -> bool:
    """Make a directory with mode 0700, then chmod 0700 (PUB-8); check an existing one (SEC-2, SEC-5, SEC-6).

    Returns True when this call created it.
    """
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        check_dir(path, uid)
        return False
    except OSError as error:
        raise io_error(error, "cannot create a directory", path, "PUB-8") from error
    try:
        os.chmod(path, 0o700)
    except OSError as error:
        raise io_error(error, "cannot set the mode of a new directory", path, "PUB-8") from error
    return True


def remove_file(path: str) -> bool:
    """unlink() a file or symlink, never following it (PUB-10). False when it was already gone."""
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False
    except IsADirectoryError:
        return False
    except OSError as error:
        raise io_error(error, "cannot remove an entry", path, "PUB-10") from error


def remove_tree(path: str) -> None:
    """Remove a directory tree depth first with unlink() and rmdir(), following no link (PUB-10)."""
    st = lstat_or_none(path)
    if st is None:
        return
    if not stat.S_ISDIR(st.st_mode):
        remove_file(path)
        return
    try:
        names = os.listdir(path)
    except OSError as error:
        raise io_error(error, "cannot list a directory to remove it", path, "PUB-10") from error
    for name in names:
        remove_tree(os.path.join(path, name))
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError as error:
        raise io_error(error, "cannot remove a directory", path, "PUB-10") from error


def list_dir(path: str) -> List[str]:
    """The names in a directory, sorted by their bytes; [] when it is gone."""
    try:
        names = os.listdir(path)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as error:
        raise io_error(error, "cannot list a directory", path) from error
    names.sort(key=lambda n: n.encode("utf-8", "surrogateescape"))
    return names

"""The PEP 517 build backend of fsjob for Python (pyproject.toml names it
with ``backend-path``): standard library only, so that ``pip install
./python`` builds and installs with no package index reachable.

It writes a pure-Python wheel (PEP 427) of ``fsjob/`` (every module and
the data beside them, no caches) with the metadata below and the ``fsjob``
console script, an sdist of this directory, and for ``pip install -e`` an
editable wheel (PEP 660) that puts this directory on ``sys.path``. The
archives are reproducible: sorted entries, fixed times (SOURCE_DATE_EPOCH
when set).
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile
from typing import Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "fsjob"
SUMMARY = "fsjob for Python: a producer and a consumer of the fsjob filesystem job protocol, standard library only"
REQUIRES_PYTHON = ">=3.9"
LICENSE = "MIT"
#: The commands the wheel installs: name -> module:function.
SCRIPTS = {"fsjob": "fsjob.cli:main"}
TAG = "py3-none-any"

ConfigSettings = Optional[Dict[str, object]]


def version() -> str:
    """``__version__`` of fsjob/__init__.py, read as text (the package is not imported to build it)."""
    with open(os.path.join(HERE, PACKAGE, "__init__.py"), encoding="utf-8") as handle:
        match = re.search(r'^__version__ = "([^"]+)"$', handle.read(), re.M)
    if match is None:
        raise RuntimeError("fsjob/__init__.py has no __version__ line")
    return match.group(1)


def _dist_info() -> str:
    return f"{PACKAGE}-{version()}.dist-info"


def _metadata() -> str:
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as handle:
        readme = handle.read()
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {PACKAGE}\nVersion: {version()}\nSummary: {SUMMARY}\nLicense: {LICENSE}\n"
        f"Requires-Python: {REQUIRES_PYTHON}\nDescription-Content-Type: text/markdown\n\n{readme}"
    )


def _wheel_file() -> str:
    return f"Wheel-Version: 1.0\nGenerator: fsjob tools/build_backend.py\nRoot-Is-Purelib: true\nTag: {TAG}\n"


def _entry_points() -> str:
    return "[console_scripts]\n" + "".join(f"{name} = {target}\n" for name, target in SCRIPTS.items())


def _package_files() -> List[str]:
    """The files of fsjob/ that ship, relative to HERE, sorted: everything but caches."""
    out: List[str] = []
    for directory, subdirs, files in os.walk(os.path.join(HERE, PACKAGE)):
        subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
        out.extend(os.path.relpath(os.path.join(directory, name), HERE) for name in files if not name.endswith((".pyc", ".pyo")))
    return sorted(out)


def _epoch() -> int:
    """The time every archive entry carries: SOURCE_DATE_EPOCH, else 1980-01-01 (zip cannot say earlier)."""
    return max(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")), 315532800)


def _stamp() -> Tuple[int, int, int, int, int, int]:
    year, month, day, hour, minute, second = time.gmtime(_epoch())[:6]
    return (year, month, day, hour, minute, second)


def _write_wheel(directory: str, members: Dict[str, bytes]) -> str:
    """A wheel of ``members`` (archive name -> bytes) plus its RECORD; returns the file name."""
    name = f"{PACKAGE}-{version()}-{TAG}.whl"
    record_name = f"{_dist_info()}/RECORD"
    record = io.StringIO()
    for member, data in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
        record.write(f"{member},sha256={digest},{len(data)}\n")
    record.write(f"{record_name},,\n")
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in [*members.items(), (record_name, record.getvalue().encode("utf-8"))]:
            info = zipfile.ZipInfo(member, _stamp())
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return name


def _info_members() -> Dict[str, bytes]:
    info = _dist_info()
    return {
        f"{info}/METADATA": _metadata().encode("utf-8"),
        f"{info}/WHEEL": _wheel_file().encode("utf-8"),
        f"{info}/entry_points.txt": _entry_points().encode("utf-8"),
    }


# --- PEP 517 ---------------------------------------------------------------

def get_requires_for_build_wheel(config_settings: ConfigSettings = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: ConfigSettings = None) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: ConfigSettings = None) -> str:
    info = os.path.join(metadata_directory, _dist_info())
    os.makedirs(info, exist_ok=True)
    for member, data in _info_members().items():
        with open(os.path.join(metadata_directory, member), "wb") as handle:
            handle.write(data)
    return _dist_info()


def build_wheel(wheel_directory: str, config_settings: ConfigSettings = None, metadata_directory: Optional[str] = None) -> str:
    members: Dict[str, bytes] = {}
    for path in _package_files():
        with open(os.path.join(HERE, path), "rb") as handle:
            members[path.replace(os.sep, "/")] = handle.read()
    members.update(_info_members())
    return _write_wheel(wheel_directory, members)


def build_sdist(sdist_directory: str, config_settings: ConfigSettings = None) -> str:
    base = f"{PACKAGE}-{version()}"
    name = f"{base}.tar.gz"
    files = ["pyproject.toml", "README.md", "tools/build_backend.py", *_package_files()]
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as archive:
        pkg_info = _metadata().encode("utf-8")
        entries = [(f"{base}/PKG-INFO", pkg_info)]
        for path in files:
            with open(os.path.join(HERE, path), "rb") as handle:
                entries.append((f"{base}/{path}", handle.read()))
        for member, data in entries:
            info = tarfile.TarInfo(member)
            info.size, info.mtime, info.mode = len(data), _epoch(), 0o644
            archive.addfile(info, io.BytesIO(data))
    return name


# --- PEP 660 (pip install -e) ----------------------------------------------

def get_requires_for_build_editable(config_settings: ConfigSettings = None) -> List[str]:
    return []


def prepare_metadata_for_build_editable(metadata_directory: str, config_settings: ConfigSettings = None) -> str:
    return prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def build_editable(wheel_directory: str, config_settings: ConfigSettings = None, metadata_directory: Optional[str] = None) -> str:
    members = {f"_{PACKAGE}_editable.pth": f"{HERE}\n".encode("utf-8")}
    members.update(_info_members())
    return _write_wheel(wheel_directory, members)

"""The command line's human units, as the reference's (src/cli/units.ts):
durations ("30s", "10m", "2h", "7d", "250ms", or plain seconds such as
"1.5"), byte counts ("1048576", "64k", "1M") and NAME=VALUE pairs. Each
refuses what it cannot read exactly with USAGE naming the option."""

from __future__ import annotations

import re
from typing import Callable, Dict, Iterable, Mapping, Optional

from .errors import FsjobError

_DURATION = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)?$")
_MS_PER_UNIT = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_BYTES = re.compile(r"^([0-9]+)([kKmMgG]i?[bB]?|[bB])?$")
_BYTES_PER_UNIT = {"k": 1024, "m": 1024 ** 2, "g": 1024 ** 3, "b": 1}
_SAFE_MAX = 2 ** 53 - 1


def format_duration(ms: int) -> str:
    """"7d", "5m", "1.5s", "250ms": the shortest exact way to write a duration."""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms >= size and ms % size == 0:
            return f"{ms // size}{unit}"
    if ms >= 1000 and (ms * 10) % 1000 == 0:
        return f"{ms / 1000:g}s"
    return f"{ms}ms"


def format_bytes(count: int) -> str:
    """"64M", "1M", "64k", "1000": the shortest exact way to write a byte count."""
    for unit, size in (("G", 1024 ** 3), ("M", 1024 ** 2), ("k", 1024)):
        if count >= size and count % size == 0:
            return f"{count // size}{unit}"
    return str(count)


def _bounded(value: int, typed: str, flag: str, low: Optional[int], high: Optional[int], show: Callable[[int], str]) -> int:
    """USAGE naming the option, what was typed and the limit in the option's own terms ("at most 7d")."""
    if high is not None and value > high:
        raise FsjobError("USAGE", f"--{flag} {typed} is too large: at most {show(high)}")
    if low is not None and value < low:
        raise FsjobError("USAGE", f"--{flag} {typed} is too small: at least {show(low)}")
    return value


def parse_duration(text: str, flag: str, low: Optional[int] = None, high: Optional[int] = None) -> int:
    """A duration in whole milliseconds; a bare number is seconds."""
    value = text.strip()
    match = _DURATION.match(value)
    if match is None:
        raise FsjobError("USAGE", f"--{flag} \"{value}\" is not a duration; write seconds (30, 1.5) or a number with a unit: 250ms, 30s, 10m, 2h, 7d")
    # Rounded half up as the reference's Math.round, not to even.
    ms = int(float(match.group(1)) * _MS_PER_UNIT[match.group(2) or "s"] + 0.5)
    if ms > _SAFE_MAX:
        raise FsjobError("USAGE", f"--{flag} {value} is too large" + ("" if high is None else f": at most {format_duration(high)}"))
    return _bounded(ms, value, flag, low, high, format_duration)


def parse_bytes(text: str, flag: str, low: Optional[int] = None, high: Optional[int] = None) -> int:
    """A byte count: a number, optionally with k, M or G (powers of 1024)."""
    value = text.strip()
    match = _BYTES.match(value)
    if match is None:
        raise FsjobError("USAGE", f"--{flag} \"{value}\" is not a byte count; write 1048576, 64k or 1M")
    count = int(match.group(1)) * _BYTES_PER_UNIT[(match.group(2) or "b")[0].lower()]
    if count > _SAFE_MAX:
        raise FsjobError("USAGE", f"--{flag} {value} is too large" + ("" if high is None else f": at most {format_bytes(high)}"))
    return _bounded(count, value, flag, low, high, format_bytes)


def parse_integer(text: str, flag: str, low: Optional[int] = None, high: Optional[int] = None) -> int:
    """An integer option; USAGE for anything else."""
    value = text.strip()
    if re.match(r"^[+-]?[0-9]+$", value) is None:
        raise FsjobError("USAGE", f"--{flag} \"{text}\" is not an integer")
    return _bounded(int(value), text, flag, low, high, str)


def parse_pairs(items: Iterable[str], flag: str, environment: Optional[Mapping[str, str]] = None) -> Optional[Dict[str, str]]:
    """Repeated NAME=VALUE options as a dict (the first "=" separates). With
    ``environment``, a bare NAME takes its value from it (as ``docker run -e
    NAME`` does) and must be set there. None when none was given."""
    pairs = []
    for text in items:
        name, eq, value = text.partition("=")
        if not eq and environment is not None and text != "":
            if text not in environment:
                raise FsjobError("USAGE", f"--{flag} {text}: {text} is not set in this environment; set it, or give --{flag} {text}=VALUE")
            pairs.append((text, environment[text]))
            continue
        if not eq or name == "":
            either = "" if environment is None else " or NAME (its value from this environment)"
            raise FsjobError("USAGE", f"--{flag} \"{text}\" must look like NAME=VALUE{either}")
        pairs.append((name, value))
    if not pairs:
        return None
    out: Dict[str, str] = {}
    for name, value in pairs:
        if name in out:
            raise FsjobError("USAGE", f"--{flag} names {name} twice; give each name once")
        out[name] = value
    return out


def format_elapsed(ms: int) -> str:
    """How long something ran, for tables: 0.3s, 45s, 12m05s, 2h03m, 3d04h (the reference's formatElapsed)."""
    if ms < 10_000:
        return f"{max(0, ms) / 1000:.1f}s"
    s = ms // 1000
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 172_800:
        return f"{s // 3600}h{s // 60 % 60:02d}m"
    return f"{s // 86_400}d{s // 3600 % 24:02d}h"


def format_clock(ms: float, now: float) -> str:
    """An instant in local time: 14:02:09 within a day of ``now``, else 12-03 14:02 (the reference's formatClock)."""
    import time

    at = time.localtime(ms / 1000)
    return time.strftime("%H:%M:%S" if abs(now - ms) < 86_400_000 else "%m-%d %H:%M", at)

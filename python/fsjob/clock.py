"""Clocks. Wall time (``now_ms``) is what records hold; elapsed time is
measured on a monotonic clock (``mono_ms``, LEASE-4). CLOCK_BOOTTIME is used
where the system has it: it keeps counting while the machine is suspended,
and every process of the host shares it, so an owner and its guardian
(LEASE-5) agree on deadlines."""

from __future__ import annotations

import time

_BOOTTIME = getattr(time, "CLOCK_BOOTTIME", None)


def now_ms() -> int:
    """The wall clock in milliseconds since the Unix epoch."""
    return time.time_ns() // 1_000_000


def mono_ms() -> int:
    """A monotonic clock in milliseconds, shared by the processes of one host."""
    if _BOOTTIME is not None:
        return time.clock_gettime_ns(_BOOTTIME) // 1_000_000
    return time.monotonic_ns() // 1_000_000

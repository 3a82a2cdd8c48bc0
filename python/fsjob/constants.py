"""The numbers of the spec's table (spec/README.md), under the
names the spec uses, so that code cites a name a reader can look up.

Times are milliseconds and sizes bytes, as in the spec.
"""

#: The version this implementation writes (VER-4) and the highest minor it reads closed (VER-2).
PROTOCOL_VERSION = "1.2"
PROTOCOL_MAJOR = 1
PROTOCOL_MINOR = 2

RECORD_MAX = 1_048_576
STDIN_MAX = 67_108_864
OUTPUT_DEFAULT = 1_048_576
OUTPUT_MAX = 67_108_864
TEMP_MAX_AGE = 3_600_000
LEASE_DEFAULT = 30_000
LEASE_MIN = 3_000
LEASE_MAX = 3_600_000
LEASE_SKEW = 5_000
KILL_GRACE_DEFAULT = 5_000
CANCEL_GRACE = 10_000
CONTROL_LATENCY = 2_000
GUARDIAN_LIMIT = 10_000
GUARDIAN_GRACE = 5_000
DRAIN_LIMIT = 2_000
DEDUPE_STAGE_MAX = 60_000
RECOVER_GRACE = 5_000
GEN_MAX = 10_000
TIMEOUT_MAX = 604_800_000
TIMEOUT_DEFAULT = 3_600_000
QUEUE_DEADLINE_MAX = 2_592_000_000
ATTEMPTS_MAX = 100
NEST_MAX = 128
INSTANT_MAX = 9_007_199_254_740_991
REQUEST_MAX = 100_663_296
#: DELAY-1 (1.1): how long after created_ms a not_before_ms may lie (365 days).
DELAY_MAX = 31_536_000_000
#: AFTER-1 (1.2): at most this many dependencies per job.
AFTER_MAX = 256
#: LANE-5 (1.2): at most this many slots per lane.
SLOTS_MAX = 64

#: tools.md MANIFEST-4: a draining consumer waits for retries due within this long.
CONSUME_RETRY_WAIT = 60_000
#: DEDUPE-2: how many hold numbers a taker tries before it refuses.
DEDUPE_TRIES = 100
#: How often a running attempt looks at its controls (well inside CONTROL_LATENCY).
CONTROL_POLL = 200
#: EXEC-6: the PATH of a command whose spec sets none.
DEFAULT_COMMAND_PATH = "/usr/local/bin:/usr/bin:/bin"

#: EXEC-10: exit codes by receipt outcome (succeeded and failed carry the command's own).
OUTCOME_EXIT = {
    "timed_out": 124,
    "expired": 124,
    "lost": 125,
    "rejected": 126,
    "cancelled": 130,
    "force_stopped": 137,
}


def renew_interval(lease_ms: int) -> int:
    """RENEW_INTERVAL: the lease renewal period LEASE-1 requires (lease / 3)."""
    return lease_ms // 3

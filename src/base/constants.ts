/**
 * Every number of the spec's table (spec/README.md), and the bounds
 * spec/spec-record.md gives a spec's members, in one place, so code cites a
 * name the spec also uses. Times are milliseconds, sizes bytes.
 */
/** The protocol version this implementation writes and reads (VER-1, VER-4). */
export const PROTOCOL_VERSION = '1.2';
export const PROTOCOL_MAJOR = 1;
export const PROTOCOL_MINOR = 2;

/** RECORD_MAX: the largest record file, in bytes (REC-2). */
export const RECORD_MAX = 1_048_576;
export const STDIN_MAX = 67_108_864;
export const OUTPUT_DEFAULT = 1_048_576;
export const OUTPUT_MAX = 67_108_864;
export const TEMP_MAX_AGE = 3_600_000;
export const LEASE_DEFAULT = 30_000;
export const LEASE_MIN = 3_000;
export const LEASE_MAX = 3_600_000;
export const LEASE_SKEW = 5_000;
export const KILL_GRACE_DEFAULT = 5_000;
export const CANCEL_GRACE = 10_000;
export const CONTROL_LATENCY = 2_000;
export const GUARDIAN_LIMIT = 10_000;
/** WORKER-2: the guardian's TERM-to-KILL grace, whatever kill_grace_ms says. */
export const GUARDIAN_GRACE = 5_000;
/** EXEC-12: how long an owner waits for its output pipes once the group is gone. */
export const DRAIN_LIMIT = 2_000;
/** DEDUPE-3, DEDUPE-5: how long a dedupe hold of an unpublished job counts. */
export const DEDUPE_STAGE_MAX = 60_000;
export const RECOVER_GRACE = 5_000;
export const GEN_MAX = 10_000;
export const TIMEOUT_MAX = 604_800_000;
export const TIMEOUT_DEFAULT = 3_600_000;
export const QUEUE_DEADLINE_MAX = 2_592_000_000;
/** (1.1) How far ahead a drain (the consume role) waits for a retry or a delayed start (spec/tools.md MANIFEST-4). */
export const CONSUME_RETRY_WAIT = 60_000;
/** (1.1) How long after created_ms a not_before_ms may lie (DELAY-1). */
export const DELAY_MAX = 31_536_000_000;
export const ATTEMPTS_MAX = 100;
/** The most dependencies a job may name in `after` (AFTER-1). */
export const AFTER_MAX = 256;
/** The largest `lane_slots` (LANE-5). */
export const SLOTS_MAX = 64;
/** spec/spec-record.md: `kill_grace_ms` is 0 to KILL_GRACE_MAX. */
export const KILL_GRACE_MAX = 300_000;
/** spec/spec-record.md: `retry_delay_ms` is 0 to RETRY_DELAY_MAX. */
export const RETRY_DELAY_MAX = 86_400_000;
/** spec/spec-record.md: `priority` is PRIORITY_MIN to PRIORITY_MAX; higher runs first (LAYOUT-7). */
export const PRIORITY_MIN = -1000;
export const PRIORITY_MAX = 1000;
export const NEST_MAX = 128;
export const INSTANT_MAX = Number.MAX_SAFE_INTEGER;
/** REQUEST_MAX: the largest request file or batch line, in bytes (REQ-1): room for STDIN_MAX in base64. */
export const REQUEST_MAX = 100_663_296;

/** How many hold numbers takeHold tries for one key before giving up (not a spec number). */
export const DEDUPE_TRIES = 100;

/** How often an owner checks for cancel records and preemption (well inside CONTROL_LATENCY). */
export const CONTROL_POLL = 500;
/** The lease renewal period the spec requires (RENEW_INTERVAL = lease / 3). */
export const renewInterval = (leaseMs: number): number => Math.floor(leaseMs / 3);

/** Default PATH of a command's environment (EXEC-6). */
export const DEFAULT_COMMAND_PATH = '/usr/local/bin:/usr/bin:/bin';

/** Exit codes of EXEC-10, by receipt outcome (succeeded and failed carry the command's own). */
export const OUTCOME_EXIT = {
  timed_out: 124,
  expired: 124,
  lost: 125,
  rejected: 126,
  cancelled: 130,
  force_stopped: 137,
} as const;

/**
 * Human units, as options are typed on a command line: durations ("30s",
 * "10m", "2h", "7d", "250ms", "2 hours", or plain seconds such as "1.5"),
 * byte counts ("1048576", "64k", "1M"), and K=V pairs. Each refuses what it
 * cannot read exactly with USAGE naming the option. The CLI and the
 * producer's request options (src/producer/request-options.ts) read them.
 */
import { FsjobError } from './errors.ts';

/** Units of a duration, short and long ("2h", "2 hours"). */
const MS_PER_UNIT: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000, sec: 1000, secs: 1000, second: 1000, seconds: 1000,
  m: 60_000, min: 60_000, mins: 60_000, minute: 60_000, minutes: 60_000,
  h: 3_600_000, hr: 3_600_000, hrs: 3_600_000, hour: 3_600_000, hours: 3_600_000,
  d: 86_400_000, day: 86_400_000, days: 86_400_000,
  w: 604_800_000, week: 604_800_000, weeks: 604_800_000,
};
/** A number and an optional unit, with at most one space between them when the unit is a word. */
const DURATION = /^([0-9]+(?:\.[0-9]+)?)(?:(ms|s|m|h|d|w)|\s?([a-z]+))?$/;

/** True when `word` is a unit of a duration ("hours", "min"): what a value split from its unit by the shell looks like. */
export function isDurationUnit(word: string): boolean {
  return Object.hasOwn(MS_PER_UNIT, word.toLowerCase());
}
const BYTES = /^([0-9]+)([kKmMgG]i?[bB]?|[bB])?$/;
const BYTES_PER_UNIT: Record<string, number> = { k: 1024, m: 1024 ** 2, g: 1024 ** 3, b: 1 };

/** Inclusive bounds of a flag's value, in the flag's own unit (ms, bytes, a count). */
export interface Bounds {
  min?: number;
  max?: number;
}

/** "7d", "5m", "1.5s", "250ms": the shortest exact way to write a duration. */
export function formatDuration(ms: number): string {
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return ms >= 1000 && (ms * 10) % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/** "64M", "1M", "64k", "1000": the shortest exact way to write a byte count. */
export function formatBytes(bytes: number): string {
  for (const [unit, size] of [['G', 1024 ** 3], ['M', 1024 ** 2], ['k', 1024]] as const) {
    if (bytes >= size && bytes % size === 0) return `${bytes / size}${unit}`;
  }
  return String(bytes);
}

/** USAGE naming the flag, what was typed and the limit in the flag's own terms ("at most 7d"). */
function checkBounds(value: number, typed: string, flag: string, bounds: Bounds, format: (n: number) => string): number {
  if (bounds.max !== undefined && value > bounds.max) {
    throw new FsjobError('USAGE', `--${flag} ${typed} is too large: at most ${format(bounds.max)}`);
  }
  if (bounds.min !== undefined && value < bounds.min) {
    throw new FsjobError('USAGE', `--${flag} ${typed} is too small: at least ${format(bounds.min)}`);
  }
  return value;
}

/** A duration in whole milliseconds; a bare number is seconds. */
export function parseDuration(text: unknown, flag: string, bounds: Bounds = {}): number {
  const value = String(text).trim();
  const match = DURATION.exec(value.toLowerCase());
  const unit = match === null ? undefined : (match[2] ?? match[3] ?? 's');
  if (match === null || unit === undefined || !isDurationUnit(unit)) {
    throw new FsjobError('USAGE', `--${flag} ${JSON.stringify(value)} is not a duration; write seconds (30, 1.5) or a number with a unit: 250ms, 30s, 10m, 2h, 7d, "2 hours"`);
  }
  const ms = Math.round(Number(match[1]) * (MS_PER_UNIT[unit] ?? 1000));
  if (!Number.isSafeInteger(ms)) throw new FsjobError('USAGE', `--${flag} ${value} is too large${bounds.max === undefined ? '' : `: at most ${formatDuration(bounds.max)}`}`);
  return checkBounds(ms, value, flag, bounds, formatDuration);
}

/** A byte count: a number, optionally with k, M or G (powers of 1024). */
export function parseBytes(text: unknown, flag: string, bounds: Bounds = {}): number {
  const value = String(text).trim();
  const match = BYTES.exec(value);
  if (match === null) throw new FsjobError('USAGE', `--${flag} ${JSON.stringify(value)} is not a byte count; write 1048576, 64k or 1M`);
  const unit = (match[2] ?? 'b').charAt(0).toLowerCase();
  const bytes = Number(match[1]) * (BYTES_PER_UNIT[unit] ?? 1);
  if (!Number.isSafeInteger(bytes)) throw new FsjobError('USAGE', `--${flag} ${value} is too large${bounds.max === undefined ? '' : `: at most ${formatBytes(bounds.max)}`}`);
  return checkBounds(bytes, value, flag, bounds, formatBytes);
}

/** An integer option (yargs gives numbers or strings); USAGE for anything else. */
export function parseInteger(value: unknown, flag: string, bounds: Bounds = {}): number {
  const number = typeof value === 'number' ? value : Number(String(value).trim());
  // yargs turns the text of a `type: 'number'` option that is no number into NaN before we see it: quoting
  // "NaN" back would name a value the user never wrote.
  if (Number.isNaN(number) && typeof value === 'number') throw new FsjobError('USAGE', `--${flag} takes an integer, and the value given is not a number`);
  if (!Number.isSafeInteger(number)) throw new FsjobError('USAGE', `--${flag} ${JSON.stringify(String(value))} is not an integer`);
  return checkBounds(number, String(value), flag, bounds, String);
}

/**
 * Repeated K=V options as a map; the first "=" separates, so values may
 * contain "=". With `fromEnvironment`, a bare NAME takes its value from that
 * environment (as `docker run -e NAME` and `systemd-run -E NAME` do) and must
 * be set there.
 */
export function parsePairs(values: unknown, flag: string, fromEnvironment?: (name: string) => string | undefined): Record<string, string> | undefined {
  if (values === undefined) return undefined;
  const list = Array.isArray(values) ? values : [values];
  const pairs: [string, string][] = [];
  for (const item of list) {
    const text = String(item);
    const eq = text.indexOf('=');
    if (eq === -1 && fromEnvironment !== undefined && text !== '') {
      const value = fromEnvironment(text);
      if (value === undefined) throw new FsjobError('USAGE', `--${flag} ${text}: ${text} is not set in this environment; set it, or give --${flag} ${text}=VALUE`);
      pairs.push([text, value]);
      continue;
    }
    if (eq <= 0) throw new FsjobError('USAGE', `--${flag} ${JSON.stringify(text)} must look like NAME=VALUE${fromEnvironment === undefined ? '' : ' or NAME (its value from this environment)'}`);
    pairs.push([text.slice(0, eq), text.slice(eq + 1)]);
  }
  const names = new Set<string>();
  for (const [name] of pairs) {
    if (names.has(name)) throw new FsjobError('USAGE', `--${flag} names ${name} twice; give each name once`);
    names.add(name);
  }
  return Object.fromEntries(pairs);
}

/** How long something ran, for tables: "0.3s", "45s", "12m05s", "2h03m", "3d04h" (a short job keeps a tenth of a second). */
export function formatElapsed(ms: number): string {
  const two = (n: number): string => String(n).padStart(2, '0');
  if (ms < 10_000) return `${(Math.max(0, ms) / 1000).toFixed(1)}s`;
  const s = Math.floor(ms / 1000);
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m${two(s % 60)}s`;
  if (s < 172_800) return `${Math.floor(s / 3600)}h${two(Math.floor(s / 60) % 60)}m`;
  return `${Math.floor(s / 86_400)}d${two(Math.floor(s / 3600) % 24)}h`;
}

/** An instant for tables, in local time: "14:02:09" within a day of `now`, else "12-03 14:02". */
export function formatClock(ms: number, now: number): string {
  const at = new Date(ms);
  const two = (n: number): string => String(n).padStart(2, '0');
  const time = `${two(at.getHours())}:${two(at.getMinutes())}`;
  return Math.abs(now - ms) < 86_400_000 ? `${time}:${two(at.getSeconds())}` : `${two(at.getMonth() + 1)}-${two(at.getDate())} ${time}`;
}

/** "3m ago" style age of an instant, for tables. */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172_800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

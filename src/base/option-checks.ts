/**
 * The checks of an options object that a library entry point was given
 * (`new Worker(options)`, `enqueue(queue, request, options)`, `waitFor`):
 * each refusal is USAGE naming the option, with the option as the error's
 * `field` ("/pollMs"), so a JavaScript caller that passed a string where a
 * number belongs hears it at the call, not as a TypeError from deep inside
 * or as a default silently taken instead (p-queue normalises its options
 * once at the entry point the same way). An option left out (undefined) is
 * always accepted: its default applies. The types say the same; these
 * checks are for callers the types do not reach.
 */
import { FsjobError } from './errors.ts';

/** The options object itself: undefined (all defaults) or a plain object. */
export function checkOptionsObject(options: unknown, caller: string): asserts options is object | undefined {
  if (options === undefined) return;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new FsjobError('USAGE', `${caller}'s options must be an object, not ${describe(options)}`);
  }
}

/** Where each check reads its option from. */
type Options = object;

function valueOf(options: Options, name: string): unknown {
  return (options as Record<string, unknown>)[name];
}

function refuse(caller: string, name: string, wants: string, value: unknown, clause?: string): never {
  const where = clause === undefined ? '' : ` (${clause})`;
  throw new FsjobError('USAGE', `${caller}: option ${name} must be ${wants}, not ${describe(value)}${where}`, { field: `/${name}`, ...(clause === undefined ? {} : { clause }) });
}

/** A whole number from min to max (a duration in ms, a count). */
export function checkInteger(options: Options, caller: string, name: string, min: number, max: number, clause?: string): void {
  const value = valueOf(options, name);
  if (value === undefined) return;
  const range = max === Number.MAX_SAFE_INTEGER ? `${min} or more` : `from ${min} to ${max}`;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) refuse(caller, name, `a whole number ${range}`, value, clause);
}

/** A duration in ms from `min` on, whole, or Infinity where `infinite` allows it (no limit). */
export function checkDuration(options: Options, caller: string, name: string, min: number, infinite: boolean, clause?: string): void {
  checkWhole(options, caller, name, min, infinite, 'a whole number of ms', clause);
}

/** A count from `min` on, or Infinity where `infinite` allows it (no limit). */
export function checkCount(options: Options, caller: string, name: string, min: number, infinite: boolean): void {
  checkWhole(options, caller, name, min, infinite, 'a whole number');
}

function checkWhole(options: Options, caller: string, name: string, min: number, infinite: boolean, what: string, clause?: string): void {
  const value = valueOf(options, name);
  if (value === undefined) return;
  if (infinite && value === Number.POSITIVE_INFINITY) return;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) refuse(caller, name, `${what}, ${min} or more${infinite ? ', or Infinity' : ''}`, value, clause);
}

/** true or false. */
export function checkBoolean(options: Options, caller: string, name: string): void {
  const value = valueOf(options, name);
  if (value !== undefined && typeof value !== 'boolean') refuse(caller, name, 'true or false', value);
}

/** A string (non-empty unless `empty`). */
export function checkString(options: Options, caller: string, name: string, empty = false): void {
  const value = valueOf(options, name);
  if (value !== undefined && (typeof value !== 'string' || (!empty && value === ''))) refuse(caller, name, empty ? 'a string' : 'a non-empty string', value);
}

/** One of `choices`. */
export function checkChoice(options: Options, caller: string, name: string, choices: readonly string[]): void {
  const value = valueOf(options, name);
  if (value !== undefined && !choices.includes(value as string)) refuse(caller, name, `one of ${choices.map((choice) => JSON.stringify(choice)).join(', ')}`, value);
}

/** A function (a callback, a seam). */
export function checkFunction(options: Options, caller: string, name: string): void {
  const value = valueOf(options, name);
  if (value !== undefined && typeof value !== 'function') refuse(caller, name, 'a function', value);
}

/** An array of strings, each one of `choices` when given. */
export function checkStrings(options: Options, caller: string, name: string, choices?: readonly string[]): void {
  const value = valueOf(options, name);
  if (value === undefined) return;
  const ok = Array.isArray(value) && value.every((item) => typeof item === 'string' && (choices === undefined || choices.includes(item)));
  if (!ok) refuse(caller, name, choices === undefined ? 'an array of strings' : `an array of ${choices.map((choice) => JSON.stringify(choice)).join(', ')}`, value);
}

/** An object whose every value is a string (labels). */
export function checkStringRecord(options: Options, caller: string, name: string): void {
  const value = valueOf(options, name);
  if (value === undefined) return;
  const ok = typeof value === 'object' && value !== null && !Array.isArray(value) && Object.values(value).every((item) => typeof item === 'string');
  if (!ok) refuse(caller, name, 'an object of string values', value);
}

/** A string or null. */
export function checkNullableString(options: Options, caller: string, name: string): void {
  const value = valueOf(options, name);
  if (value !== undefined && value !== null && typeof value !== 'string') refuse(caller, name, 'a string or null', value);
}

/** An object with these methods (a clock, a filesystem seam). */
export function checkMethods(options: Options, caller: string, name: string, methods: readonly string[]): void {
  const value = valueOf(options, name);
  if (value === undefined) return;
  const has = typeof value === 'object' && value !== null && methods.every((method) => typeof (value as Record<string, unknown>)[method] === 'function');
  if (!has) refuse(caller, name, `an object with ${methods.join(', ')}`, value);
}

/** An instance of `type` (or of a subclass). */
export function checkInstance(options: Options, caller: string, name: string, type: abstract new (...args: never[]) => unknown, what: string): void {
  const value = valueOf(options, name);
  if (value !== undefined && !(value instanceof type)) refuse(caller, name, what, value);
}

/** An AbortSignal. */
export function checkSignal(options: Options, caller: string, name: string): void {
  checkInstance(options, caller, name, AbortSignal, 'an AbortSignal');
}

/** A Uint8Array (a Buffer is one). */
export function checkBytes(options: Options, caller: string, name: string): void {
  checkInstance(options, caller, name, Uint8Array, 'a Uint8Array (a Buffer)');
}

/** What a refused value was, for the message: its type, and short values themselves. */
export function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'string':
      return value.length > 40 ? 'a long string' : `the string ${JSON.stringify(value)}`;
    case 'number':
    case 'boolean':
    case 'bigint':
      return `${typeof value} ${String(value)}`;
    case 'object':
      return `an object (${Object.getPrototypeOf(value)?.constructor?.name ?? 'no prototype'})`;
    default:
      return `a ${typeof value}`;
  }
}

/**
 * A value now, or the promise of it later: what a step returns when it is
 * done before it returns on the common road (a publish whose fsyncs run
 * inline, flush.ts) and must wait on the others. A caller that goes on with
 * the value at once (`thenSoon`) adds no promise, no microtask and no
 * resumption where the step was done; each `await` of a settled promise adds
 * all three (spec/design-consumer-writes-costs.md). Only native promises
 * count as later: no value here is a thenable of another kind.
 */
export type Soon<T> = T | Promise<T>;

/** `next` of the value: at once when it is here, else when the promise resolves. A throw of `next` is thrown, or rejects. */
export function thenSoon<T, U>(value: Soon<T>, next: (value: T) => Soon<U>): Soon<U> {
  return value instanceof Promise ? value.then(next) : next(value);
}

/** `step()`, with `recover` of what it throws or rejects with, now or later. */
export function catchSoon<T>(step: () => Soon<T>, recover: (error: unknown) => Soon<T>): Soon<T> {
  let value: Soon<T>;
  try {
    value = step();
  } catch (error) {
    return recover(error);
  }
  return value instanceof Promise ? value.catch(recover) : value;
}

/** A Soon as a promise, for an interface that hands one out. */
export function promised<T>(step: () => Soon<T>): Promise<T> {
  try {
    const value = step();
    return value instanceof Promise ? value : Promise.resolve(value);
  } catch (error) {
    return Promise.reject(error);
  }
}

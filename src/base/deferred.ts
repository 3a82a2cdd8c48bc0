/**
 * A promise with its resolve and reject in hand: for an answer that arrives
 * through another channel than the call that waits for it (a line on a
 * pipe, an exit event), settled by whoever reads that channel.
 */
export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: Error): void;
}

export function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined); // awaited by whoever needs it; an early failure is not unhandled
  return { promise, resolve, reject };
}

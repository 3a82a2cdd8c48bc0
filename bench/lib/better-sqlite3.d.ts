// The few better-sqlite3 calls the SQLite baseline uses (the package ships no
// types; this avoids a second devDependency for them).
declare module 'better-sqlite3' {
  interface RunResult {
    changes: number;
    lastInsertRowid: number | bigint;
  }
  interface Statement<Row = unknown> {
    run(...params: unknown[]): RunResult;
    get(...params: unknown[]): Row | undefined;
    all(...params: unknown[]): Row[];
  }
  interface Options {
    timeout?: number;
  }
  interface Database {
    prepare<Row = unknown>(sql: string): Statement<Row>;
    exec(sql: string): Database;
    pragma(source: string, options?: { simple?: boolean }): unknown;
    transaction<A extends unknown[], R>(fn: (...args: A) => R): ((...args: A) => R) & { immediate: (...args: A) => R };
    close(): void;
  }
  interface DatabaseConstructor {
    new (filename: string, options?: Options): Database;
  }
  const Database: DatabaseConstructor;
  export default Database;
}

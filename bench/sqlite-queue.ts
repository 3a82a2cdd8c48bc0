/**
 * The alternative a user would pick instead of fsjob: a job queue in one
 * SQLite database in WAL mode through better-sqlite3 12.x, at equal
 * durability (synchronous=FULL: every commit fsyncs the WAL, as every fsjob
 * step fsyncs its record) and at the common relaxed setting (NORMAL: commits
 * are not fsynced in WAL mode; a power loss may lose the last ones).
 *
 * One job costs three transactions: insert; claim (the UPDATE ... RETURNING
 * below, BEGIN IMMEDIATE); complete. Consumers are separate processes
 * sharing the database with busy_timeout, polling every --poll-us when the
 * queue is empty (SQLite has no cross-process wake-up).
 *
 * Modes (children of bench/run.ts, READY/GO protocol of lib/proc.ts):
 *   producer <db> <sync> <n> [--latency]  insert n jobs (--latency: one at a time, each after the previous is done)
 *   consumer <db> <sync> <n>              claim and complete until n jobs are done
 *   depth <db> <sync> <finished> <samples> claim latency with <finished> done rows in the table
 */
import Database from 'better-sqlite3';
import { childProtocol, childResult } from './lib/proc.ts';
import { cpuSince, percentile, wallMicros } from './lib/stats.ts';

type Sync = 'FULL' | 'NORMAL';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS jobs (
  id INTEGER PRIMARY KEY,
  priority INTEGER NOT NULL DEFAULT 0,
  state TEXT NOT NULL DEFAULT 'queued',
  payload TEXT NOT NULL,
  owner TEXT,
  claimed_ms INTEGER,
  result TEXT,
  finished_ms INTEGER
);
CREATE INDEX IF NOT EXISTS jobs_runnable ON jobs (state, priority DESC, id);
`;

/** A payload the size of an fsjob spec record, so both write comparable bytes. */
export function payloadFor(createdUs: number, seq: number): string {
  return JSON.stringify({ created_us: createdUs, seq, argv: null, handler: 'bench', pad: 'x'.repeat(480) });
}

export function openDb(file: string, sync: Sync): Database {
  const db = new Database(file, { timeout: 10_000 });
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${sync}`);
  db.pragma('busy_timeout = 10000');
  db.exec(SCHEMA);
  return db;
}

interface ClaimedRow {
  id: number;
  payload: string;
}

function queue(db: Database) {
  const insert = db.prepare('INSERT INTO jobs (priority, payload) VALUES (0, ?)');
  const claimStmt = db.prepare<ClaimedRow>(
    `UPDATE jobs SET state = 'running', owner = ?, claimed_ms = ?
     WHERE id = (SELECT id FROM jobs WHERE state = 'queued' ORDER BY priority DESC, id LIMIT 1)
     RETURNING id, payload`,
  );
  const completeStmt = db.prepare(`UPDATE jobs SET state = 'done', result = ?, finished_ms = ? WHERE id = ? AND owner = ?`);
  const remaining = db.prepare<{ n: number }>(`SELECT count(*) AS n FROM jobs WHERE state != 'done'`);
  const doneCount = db.prepare<{ n: number }>(`SELECT count(*) AS n FROM jobs WHERE state = 'done'`);
  const stateOf = db.prepare<{ state: string }>('SELECT state FROM jobs WHERE id = ?');
  const claim = db.transaction((owner: string) => claimStmt.get(owner, Date.now()));
  const complete = db.transaction((id: number, owner: string) => completeStmt.run('{"ok":true}', Date.now(), id, owner));
  const enqueue = db.transaction((payload: string) => Number(insert.run(payload).lastInsertRowid));
  return { enqueue, claim, complete, remaining, doneCount, stateOf };
}


const sleep = (us: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, Math.round(us / 1000))));

async function producer(file: string, sync: Sync, n: number, latencyMode: boolean, pollUs: number): Promise<void> {
  const db = openDb(file, sync);
  const q = queue(db);
  const proto = childProtocol();
  await proto.go;
  const cpu0 = process.cpuUsage();
  const t0 = wallMicros();
  const enqueueUs: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = wallMicros();
    const id = q.enqueue.immediate(payloadFor(start, i));
    enqueueUs.push(wallMicros() - start);
    if (latencyMode) {
      while (q.stateOf.get(id)?.state !== 'done') await sleep(pollUs);
      await sleep((50 + Math.random() * 200) * 1000); // as fsjob-lib.ts: the consumer is idle when the next job comes
    }
  }
  const t1 = wallMicros();
  db.close();
  childResult({ t0_us: t0, t1_us: t1, n, cpu_us: cpuSince(cpu0), enqueue_p50_us: percentile(enqueueUs, 50), enqueue_p99_us: percentile(enqueueUs, 99) });
}

async function consumer(file: string, sync: Sync, n: number, pollUs: number): Promise<void> {
  const db = openDb(file, sync);
  const q = queue(db);
  const owner = `pid-${process.pid}`;
  const proto = childProtocol();
  await proto.go;
  const cpu0 = process.cpuUsage();
  let done = 0;
  let lastUs = 0;
  const latencies: number[] = [];
  const claimUs: number[] = [];
  while (!proto.stopped()) {
    const c0 = wallMicros();
    const row = q.claim.immediate(owner);
    if (row === undefined) {
      if ((q.doneCount.get()?.n ?? 0) >= n && (q.remaining.get()?.n ?? 1) === 0) break;
      await sleep(pollUs);
      continue;
    }
    claimUs.push(wallMicros() - c0);
    const payload = JSON.parse(row.payload) as { created_us: number };
    q.complete.immediate(row.id, owner);
    lastUs = wallMicros();
    latencies.push(lastUs - payload.created_us);
    done++;
  }
  db.close();
  childResult({ done, last_us: lastUs, cpu_us: cpuSince(cpu0), latencies_us: latencies, claim_p50_us: percentile(claimUs, 50) });
}

async function depth(file: string, sync: Sync, finished: number, samples: number): Promise<void> {
  const db = openDb(file, sync);
  const q = queue(db);
  const fill = db.prepare(`INSERT INTO jobs (priority, state, payload, owner, result, finished_ms) VALUES (0, 'done', ?, 'filler', '{"ok":true}', ?)`);
  db.transaction(() => {
    for (let i = 0; i < finished; i++) fill.run(payloadFor(0, i), Date.now());
  }).immediate();
  db.pragma('wal_checkpoint(TRUNCATE)');
  const proto = childProtocol();
  await proto.go;
  const claimUs: number[] = [];
  for (let i = 0; i < samples; i++) {
    q.enqueue.immediate(payloadFor(wallMicros(), i));
    const c0 = wallMicros();
    const row = q.claim.immediate('depth');
    claimUs.push(wallMicros() - c0);
    if (row === undefined) throw new Error('depth: no job to claim');
    q.complete.immediate(row.id, 'depth');
  }
  db.close();
  childResult({ finished, samples, claim_us: claimUs });
}

const [mode, file, syncArg, ...rest] = process.argv.slice(2);
const sync: Sync = syncArg === 'NORMAL' ? 'NORMAL' : 'FULL';
const pollIndex = rest.indexOf('--poll-us');
const pollUs = pollIndex >= 0 ? Number(rest[pollIndex + 1]) : 1000;
if (file === undefined) throw new Error('usage: sqlite-queue.ts <mode> <db> <FULL|NORMAL> ...');
if (mode === 'producer') await producer(file, sync, Number(rest[0]), rest.includes('--latency'), pollUs);
else if (mode === 'consumer') await consumer(file, sync, Number(rest[0]), pollUs);
else if (mode === 'depth') await depth(file, sync, Number(rest[0]), Number(rest[1]));
else throw new Error(`unknown mode ${mode}`);
process.exit(0);

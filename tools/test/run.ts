/**
 * The test files of `npm test`, in parallel streams (after the type check and
 * the build, which package.json runs first):
 *
 *   node --import tsx tools/test/run.ts [--streams N] [--record] [--list]
 *
 * Each stream is one uvu process over its share of test/**\/*.test.ts
 * (tools/test/streams.ts deals the files out by measured time). A stream's
 * output is held per test file and printed as one block, labelled [1], [2],
 * when the file is done, with the seconds it took, so two streams never mix
 * inside a file's output. At the end: each stream's totals and every failed
 * test with its file and the first lines of what uvu said of it. Exit status
 * 0 only when every stream exited 0.
 *
 *   --streams N  how many uvu processes (default 2, one per core of the machine
 *                `npm test` must finish on in 10 minutes; 1 runs them one after
 *                another as uvu alone would)
 *   --record     write the seconds each file took to tools/test/timings.json
 *                (commit it when the split has drifted out of balance)
 *   --list       print the split and exit
 *   --only RE    only the test files whose name (relative to test/) RE matches
 *
 * Timing is only used to balance the streams; it never decides a test's outcome.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { listTestFiles, loadTimings, partition, ROOT, splitProblems, TIMINGS_FILE, type Stream, type Timings } from './streams.ts';

interface Options {
  streams: number;
  record: boolean;
  list: boolean;
  only: RegExp | undefined;
}

function parse(argv: string[]): Options {
  const out: Options = { streams: 2, record: false, list: false, only: undefined };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--streams') out.streams = Number(argv[++i]);
    else if (arg === '--record') out.record = true;
    else if (arg === '--list') out.list = true;
    else if (arg === '--only') out.only = new RegExp(argv[++i] ?? '', 'i');
    else throw new Error(`unknown argument ${arg} (use --streams N, --record, --list, --only PATTERN)`);
  }
  if (!Number.isInteger(out.streams) || out.streams < 1) throw new Error('--streams needs a positive integer');
  return out;
}

const ANSI = /\x1b\[[0-9;]*[A-Za-z]/g;
const plain = (line: string): string => line.replace(ANSI, '');

interface Outcome {
  stream: Stream;
  code: number | null;
  signal: NodeJS.Signals | null;
  seconds: number;
  /** Seconds per file, from its header to the next (uvu prints a file's name when it starts its tests). */
  fileSeconds: Timings;
  /** "file: suite "test"" for every FAIL uvu printed. */
  failed: string[];
  /** For each failed test, the lines uvu printed after its FAIL line (the assertion, the message, the stack): repeated at the end, where a CI log's tail still shows them. */
  details: string[][];
  /** uvu's closing lines (Total, Passed, Skipped, Duration). */
  summary: string[];
  /**
   * "file: suite (ran / total)" for every suite that ran fewer tests than it
   * has and failed none: a before hook threw. uvu's runner returns from a
   * finally block, which swallows that error, prints no FAIL and exits 0.
   */
  unrun: string[];
  /** The file that was running when the process ended, when it ended inside one. */
  cutOff: string | undefined;
}

const color = process.stdout.isTTY === true;

/** Runs one stream; its output goes to stdout one finished file at a time. */
function runStream(stream: Stream, children: Set<ChildProcess>): Promise<Outcome> {
  // The path package.json's scripts use (uvu does not export bin.js).
  const uvu = join(ROOT, 'node_modules', 'uvu', 'bin.js');
  const label = `[${stream.index}]`;
  const names = new Set(stream.files);
  const began = Date.now();
  const outcome: Outcome = { stream, code: null, signal: null, seconds: 0, fileSeconds: {}, failed: [], details: [], summary: [], unrun: [], cutOff: undefined };
  let file: string | undefined;
  let fileStart = began;
  let block: string[] = [];
  let inSummary = false;
  /** The lines of the failure being read, until the detail limit or the next file. */
  let detail: string[] | undefined;
  const DETAIL_LINES = 40;

  const flush = (ended: boolean): void => {
    if (file === undefined) {
      // Before the first file (import errors): printed as they are.
      for (const line of block) process.stdout.write(`${label} ${line}\n`);
    } else {
      const seconds = (Date.now() - fileStart) / 1000;
      if (ended) outcome.fileSeconds[file] = Math.round(seconds * 10) / 10;
      process.stdout.write(`${label} ${file}  ${seconds.toFixed(1)} s${ended ? '' : '  (the process ended inside this file)'}\n`);
      for (const line of block) if (plain(line).trim() !== '') process.stdout.write(`${label}   ${line}\n`);
    }
    block = [];
  };

  const onLine = (line: string): void => {
    const text = plain(line).trim();
    if (inSummary) {
      if (text !== '') outcome.summary.push(text);
      return;
    }
    if (names.has(text)) {
      detail = undefined;
      flush(true);
      file = text;
      fileStart = Date.now();
      return;
    }
    if (/^Total:\s+\d+/.test(text)) {
      flush(true);
      file = undefined;
      inSummary = true;
      outcome.summary.push(text);
      return;
    }
    // uvu's line for a suite: its name, a mark per test (• passed, ✘ failed), "(passed / total)".
    const counts = /^(.*?)\s+\((\d+) \/ (\d+)\)$/.exec(text);
    if (counts !== null && Number(counts[2]) < Number(counts[3]) && !(counts[1] ?? '').includes('✘')) {
      outcome.unrun.push(`${file ?? '(before the first file)'}: ${(counts[1] ?? '').replace(/[•\s]+$/, '')} (${counts[2]} / ${counts[3]})`);
    }
    // uvu's own line for a failed test: "  " + the FAIL badge + " suite " + "\"name\"" (a FAIL inside a test's message is not one).
    const fail = /^ {3}FAIL {2}(.*")$/.exec(plain(line));
    if (fail !== null) {
      outcome.failed.push(`${file ?? '(before the first file)'}: ${fail[1]}`);
      detail = [];
      outcome.details.push(detail);
    } else if (detail !== undefined && detail.length < DETAIL_LINES) detail.push(plain(line));
    block.push(line);
  };

  const reader = (): ((chunk: Buffer) => void) => {
    let partial = '';
    return (chunk) => {
      const lines = (partial + chunk.toString('utf8')).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) onLine(line);
    };
  };

  return new Promise((resolve) => {
    // FSJOB_CHECK_WRITES: every record the reference writes is checked against its schema first (src/records/codec.ts encodeBuilt).
    const env = { ...process.env, FSJOB_CHECK_WRITES: process.env['FSJOB_CHECK_WRITES'] ?? '1' };
    const child = spawn(process.execPath, ['--import', 'tsx', uvu, 'test', stream.pattern, ...(color ? [] : ['--no-color'])], { cwd: ROOT, env, stdio: ['inherit', 'pipe', 'pipe'] });
    children.add(child);
    child.stdout.on('data', reader());
    child.stderr.on('data', reader());
    child.on('close', (code, signal) => {
      children.delete(child);
      if (!inSummary && file !== undefined) outcome.cutOff = file;
      if (!inSummary) flush(false);
      outcome.code = code;
      outcome.signal = signal;
      outcome.seconds = (Date.now() - began) / 1000;
      resolve(outcome);
    });
  });
}

function record(outcomes: Outcome[], files: string[]): void {
  const merged: Timings = { ...loadTimings() };
  for (const outcome of outcomes) Object.assign(merged, outcome.fileSeconds);
  const kept = Object.fromEntries(files.filter((f) => merged[f] !== undefined).map((f) => [f, merged[f]]));
  writeFileSync(TIMINGS_FILE, `${JSON.stringify(kept, null, 2)}\n`);
  console.log(`wrote ${TIMINGS_FILE} (${Object.keys(kept).length} files)`);
}

const options = parse(process.argv.slice(2));
const files = listTestFiles().filter((f) => options.only === undefined || options.only.test(f));
const timings = loadTimings();
const streams = partition(files, timings, options.streams);
const problems = splitProblems(streams, files);
if (problems.length > 0) {
  console.error(`tools/test/run.ts: the split would not run every test file exactly once:\n  ${problems.join('\n  ')}`);
  process.exit(2);
}
const unmeasured = files.filter((f) => timings[f] === undefined).length;
for (const s of streams) console.log(`[${s.index}] ${s.files.length} test files, ${s.seconds.toFixed(0)} s as measured${unmeasured > 0 ? ` (${unmeasured} files never measured count as the median)` : ''}`);
if (options.list) {
  for (const s of streams) for (const f of s.files) console.log(`[${s.index}] ${f}`);
  process.exit(0);
}

const children = new Set<ChildProcess>();
let interrupted: NodeJS.Signals | undefined;
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    interrupted = signal;
    for (const child of children) child.kill(signal);
  });
}

const began = Date.now();
const outcomes = await Promise.all(streams.map((s) => runStream(s, children)));
const wall = (Date.now() - began) / 1000;

const bad = outcomes.filter((o) => o.code !== 0 || o.unrun.length > 0);
console.log(`\ntest streams: ${outcomes.length}, ${files.length} files, ${wall.toFixed(1)} s wall`);
for (const o of outcomes) {
  const how = o.signal !== null ? `killed by ${o.signal}` : `exit ${o.code}`;
  console.log(`  [${o.stream.index}] ${o.stream.files.length} files, ${o.seconds.toFixed(1)} s, ${how}; ${o.summary.filter((l) => !l.startsWith('Duration')).map((l) => l.replace(/\s+/g, ' ')).join(', ') || 'no uvu summary'}`);
}
for (const o of bad) {
  console.log(`\nFAILED: stream [${o.stream.index}] (${o.signal ?? `exit ${o.code}`})`);
  o.failed.forEach((f, i) => {
    console.log(`  test/${f}`);
    for (const line of o.details[i] ?? []) if (line.trim() !== '' && !/^\s*at .*node_modules/.test(line)) console.log(`      ${line}`);
  });
  if (o.cutOff !== undefined) console.log(`  the process ended while test/${o.cutOff} was running`);
  for (const u of o.unrun) console.log(`  test/${u}: tests did not run and none failed, so a before hook threw (uvu does not print its error)`);
  if (o.failed.length === 0 && o.cutOff === undefined && o.unrun.length === 0) console.log('  no failed test was printed: see the stream\'s first lines (an import error?)');
}
if (options.record) record(outcomes, files);
if (interrupted !== undefined) process.exit(130);
process.exit(bad.length === 0 ? 0 : 1);

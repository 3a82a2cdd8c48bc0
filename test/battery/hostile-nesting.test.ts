/**
 * Hostile input, nesting (issue 19 point 3): a record nested 200,000 deep in
 * every kind of queue file. NEST_MAX is 128 (REC-1, the record is depth 1), so
 * every reader stops at the first bracket of depth 129 and says so; none
 * recurses into the rest (a recursive reader dies with a stack overflow and
 * loses every other finding). Through the real CLI: validate (queue and
 * files, text and --json), status, logs, wait, recover, gc and work.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { assertNoCrash, fsjobCli, type CliRun } from '../support/faults.ts';

const DEEP = 200_000;
const NEST_MAX = 128;

/** A record of `type` whose member x nests DEEP arrays; returns the byte offset of the first bracket at depth NEST_MAX + 1. */
function plantDeep(path: string, type: string): number {
  const prefix = `{"fsjob":"1.0","type":"${type}","x":`;
  writeFileSync(path, `${prefix}${'['.repeat(DEEP)}${']'.repeat(DEEP)}}\n`, { mode: 0o600 });
  // The record's brace is depth 1, x's first bracket depth 2: depth 129 is the 128th bracket.
  return prefix.length + NEST_MAX - 1;
}

function cli(args: string[]): CliRun {
  const run = fsjobCli(args, { timeoutMs: 120_000 });
  assertNoCrash(run, `fsjob ${args.join(' ')}`);
  return run;
}

interface Finding {
  code: string;
  path: string;
  message: string;
}

const nesting = suite('hostile: records nested 200,000 deep');
nesting.after(cleanupAll);

nesting('every reader stops at depth 129 with a finding, in every kind of queue file; nothing crashes and no other finding is lost', async () => {
  const root = join(await freshDir('fsjob-deep'), 'q');
  const cwd = await freshDir('fsjob-deep-cwd');
  const run = (args: string[]) => fsjobCli(args, { cwd, timeoutMs: 120_000 });
  assert.is(run(['init', '--queue', root]).status, 0);
  const done = run(['enqueue', '--queue', root, '--priority', '10', '--lane', 'L', '--dedupe', 'K', '--', 'echo', 'done']).stdout.trim();
  const badSpec = run(['enqueue', '--queue', root, '--', 'echo', 'never']).stdout.trim();
  const badCancel = run(['enqueue', '--queue', root, '--', 'echo', 'never either']).stdout.trim();
  const plain = run(['enqueue', '--queue', root, '--priority', '-5', '--', 'echo', 'plain']).stdout.trim();
  assert.is(run(['work', '--queue', root, '--once']).status, 0, 'the first job ran');
  const job = (id: string, name: string) => join(root, 'jobs', id, name);
  const only = (dir: string) => join(dir, readdirSync(dir)[0] as string);
  const workerFile = join(root, 'workers', '0123456789abcdef.json');

  const planted = new Map<string, number>([
    [job(done, 'claim.1.json'), plantDeep(job(done, 'claim.1.json'), 'claim')],
    [job(done, 'exec.1.json'), plantDeep(job(done, 'exec.1.json'), 'exec')],
    [job(done, 'receipt.json'), plantDeep(job(done, 'receipt.json'), 'receipt')],
    [only(only(join(root, 'lanes'))), plantDeep(only(only(join(root, 'lanes'))), 'hold')],
    [only(only(join(root, 'dedupe'))), plantDeep(only(only(join(root, 'dedupe'))), 'hold')],
    [job(badSpec, 'spec.json'), plantDeep(job(badSpec, 'spec.json'), 'spec')],
    [job(badCancel, 'cancel.json'), plantDeep(job(badCancel, 'cancel.json'), 'cancel')],
    [workerFile, plantDeep(workerFile, 'worker')],
  ]);

  const check = (findings: Finding[], what: string) => {
    for (const [path, offset] of planted) {
      const found = findings.find((finding) => finding.path === path && finding.code === 'RECORD_TOO_DEEP');
      assert.ok(found, `${what}: RECORD_TOO_DEEP for ${path} (findings: ${JSON.stringify(findings.map((f) => `${f.code} ${f.path}`))})`);
      assert.match(found.message, `at byte ${offset})`, `${what}: the finding is at the first bracket of depth ${NEST_MAX + 1}`);
    }
  };
  const audit = cli(['validate', '--json', root]);
  assert.is(audit.status, 1, 'validate exits 1 on errors');
  check((JSON.parse(audit.stdout) as { findings: Finding[] }).findings, 'validate --json QUEUE');
  const files = cli(['validate', '--json', ...planted.keys()]);
  assert.is(files.status, 1);
  check((JSON.parse(files.stdout) as { findings: Finding[] }).findings, 'validate --json FILE...');
  const text = cli(['validate', root]);
  assert.is(text.status, 1);
  for (const path of planted.keys()) assert.match(text.stdout, `RECORD_TOO_DEEP [REC-1] ${path}:`);

  assert.is(cli(['status', '--queue', root]).status, 0);
  const listed = JSON.parse(cli(['status', '--queue', root, '--json']).stdout) as { jobs: { id: string }[] };
  assert.equal(listed.jobs.map((entry) => entry.id).sort(), [done, badSpec, badCancel, plain].sort(), 'status lists every job');
  for (const id of [done, badSpec, badCancel]) assert.is(cli(['status', '--queue', root, id]).status, 0, `status ${id}`);
  assert.is.not(cli(['logs', '--queue', root, done]).status, null);
  assert.is.not(cli(['wait', '--queue', root, '--timeout', '1s', done]).status, null);
  assert.is.not(cli(['recover', '--queue', root]).status, null);
  assert.is.not(cli(['gc', '--queue', root, '--dry-run']).status, null);

  const work = cli(['work', '--queue', root, '--drain']);
  assert.is(work.status, 0, work.stderr);
  const receipt = (id: string) => JSON.parse(readFileSync(job(id, 'receipt.json'), 'utf8')) as { outcome: string; reason: string | null };
  assert.equal(receipt(badSpec), { ...receipt(badSpec), outcome: 'rejected', reason: 'invalid_spec' }, 'the job with the deep spec is rejected, never run');
  assert.is(receipt(badCancel).outcome, 'cancelled', 'a cancel record decides by its existence (REC-9), deep or not');
  assert.is(receipt(plain).outcome, 'succeeded', 'the healthy job beside them ran');
  assert.ok(existsSync(job(badSpec, 'spec.json')), 'nothing was deleted');
});

nesting('a request nested 200,000 deep is refused with exit 2 (REQ-1), nothing is left behind', async () => {
  const root = join(await freshDir('fsjob-deep-req'), 'q');
  assert.is(cli(['init', '--queue', root]).status, 0);
  const request = join(await freshDir('fsjob-deep-req-file'), 'request.json');
  writeFileSync(request, `{"argv":["echo"],"payload":${'['.repeat(DEEP)}${']'.repeat(DEEP)}}\n`);
  const refused = cli(['enqueue', '--queue', root, '--request', request]);
  assert.is(refused.status, 2, refused.stderr);
  assert.match(refused.stderr, /128/);
  const batch = cli(['enqueue', '--queue', root, '--batch', request]);
  assert.is(batch.status, 1, batch.stderr);
  assert.match(batch.stderr, /line 1/);
  // One argument holds at most 128 KiB (MAX_ARG_STRLEN): 50,000 deep still overflows a recursive reader.
  const payload = cli(['enqueue', '--queue', root, '--handler', 'h', '--payload', `${'['.repeat(50_000)}${']'.repeat(50_000)}`]);
  assert.is(payload.status, 2, payload.stderr);
  assert.equal(readdirSync(join(root, 'jobs')), [], 'no job was published');
  assert.equal(readdirSync(join(root, 'tmp')), [], 'no staging was left');
});

nesting.run();

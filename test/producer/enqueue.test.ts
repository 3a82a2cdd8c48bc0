import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, rm, symlink } from 'node:fs/promises';
import * as nodeFs from 'node:fs/promises';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { enqueue, newJobId, textOfBytes, type JobRequest } from '../../src/producer/index.ts';
import { checkRecord, type SpecRecord } from '../../src/records/codec.ts';
import { listDir, type SafeFsSeam } from '../../src/fs/safefs.ts';
import { selfIdentity } from '../../src/model/identity.ts';
import type { Clock } from '../../src/base/clock.ts';
import { cleanupAll, freshDir, rejectsWith } from '../support/helpers.ts';
import { entries, faultyFs, freshQueue, modeOf, tree, withSeam } from '../support/producer.ts';
import { JOB_ID_PATTERN } from '../../src/records/names.ts';

const sha256 = (bytes: Buffer | string): string => createHash('sha256').update(bytes).digest('hex');

const published = suite('enqueue publishes a complete job');
published.after(cleanupAll);

published('the job directory appears complete: spec.json 0600 and valid, stdin with its digest, the LAYOUT-7 ready entry, nothing left in tmp/', async () => {
  const queue = await freshQueue();
  const { id, spec } = await enqueue(queue, { argv: ['sort'], stdin_text: 'b\na\n', priority: 7 }, { cwd: '/srv/work' });
  assert.ok(JOB_ID_PATTERN.test(id), 'LAYOUT-4 id');
  const dir = queue.paths.job(id);
  assert.equal(await entries(dir), ['spec.json', 'stdin']);
  assert.is(await modeOf(dir), 0o700, 'job directory 0700 (SEC-5)');
  assert.is(await modeOf(join(dir, 'spec.json')), 0o600, 'spec.json 0600');
  assert.is(await modeOf(join(dir, 'stdin')), 0o600, 'stdin 0600');
  const bytes = await readFile(join(dir, 'spec.json'));
  assert.equal(checkRecord('spec', bytes, { expectedJobId: id }), [], 'a valid spec record (REC-4)');
  const onDisk = JSON.parse(bytes.toString('utf8')) as SpecRecord;
  assert.equal(onDisk, spec, 'the returned spec is the one on disk');
  assert.equal(onDisk.stdin, { bytes: 4, sha256: sha256('b\na\n') });
  assert.is((await readFile(join(dir, 'stdin'))).toString('utf8'), 'b\na\n');
  assert.equal(await entries(queue.paths.dir('ready')), [`0993-${id}`], 'ready/<1000-priority>-<id>');
  assert.is(await modeOf(join(queue.paths.dir('ready'), `0993-${id}`)), 0o600);
  assert.equal(await entries(queue.paths.dir('tmp')), [], 'no staging left');
});

published('every member of the spec table is written, with the SPEC-2 defaults', async () => {
  const queue = await freshQueue();
  const me = await selfIdentity();
  const before = Date.now();
  const { spec } = await enqueue(queue, { argv: ['true'] }, { cwd: '/home/ana/site' });
  const { id, created_ms, producer, ...rest } = spec;
  assert.ok(created_ms >= before && created_ms <= Date.now());
  assert.equal(producer, me, 'the producer is this process (ID-1)');
  assert.equal(rest, {
    fsjob: '1.2',
    type: 'spec',
    argv: ['true'],
    cwd: '/home/ana/site',
    env: {},
    stdin: null,
    timeout_ms: 3_600_000,
    kill_grace_ms: 5000,
    queue_deadline_ms: null,
    max_attempts: 1,
    retry_delay_ms: 0,
    priority: 0,
    lane: null,
    dedupe: null,
    preemptible: false,
    max_output_bytes: 1_048_576,
    labels: {},
  });
  assert.equal(Object.keys(spec).slice(0, 5), ['fsjob', 'type', 'id', 'created_ms', 'argv'], 'members in the order of the spec table');
  assert.ok(id.startsWith(String(created_ms)), 'the id carries created_ms');
});

published('a payload job has handler and payload (null by default) and no argv (SPEC-1)', async () => {
  const queue = await freshQueue();
  const a = await enqueue(queue, { handler: 'resize' });
  const b = await enqueue(queue, { handler: 'resize', payload: { w: 640, scale: 1.5 } });
  assert.is(a.spec.payload, null);
  assert.is('argv' in a.spec, false);
  assert.equal(b.spec.payload, { w: 640, scale: 1.5 });
});

published('the bytes of a request file are accepted with whitespace (REQ-1), and stdin_base64 becomes the stdin file', async () => {
  const queue = await freshQueue();
  const bytes = Buffer.from('{ "argv": ["cat"],\n  "stdin_base64": "AAH/" ,"cwd":"/tmp" }\n');
  const { id, spec } = await enqueue(queue, bytes);
  assert.equal(spec.stdin, { bytes: 3, sha256: sha256(Buffer.from([0, 1, 255])) });
  assert.equal([...(await readFile(join(queue.paths.job(id), 'stdin')))], [0, 1, 255]);
});

published('priority sets the ready entry name: 1000 is 0000-, -1000 is 2000- (LAYOUT-7)', async () => {
  const queue = await freshQueue();
  const high = await enqueue(queue, { argv: ['a'], priority: 1000 });
  const low = await enqueue(queue, { argv: ['b'], priority: -1000 });
  assert.equal(await entries(queue.paths.dir('ready')), [`0000-${high.id}`, `2000-${low.id}`]);
});

published('ids increase strictly in enqueue order even when the clock stands still or steps back (LAYOUT-4)', async () => {
  let now = 1_764_476_044_123;
  const clock: Clock = { nowMs: () => now, sleep: async () => undefined };
  const ids: string[] = [];
  for (let i = 0; i < 500; i++) {
    if (i === 250) now -= 5000; // the wall clock jumps back
    ids.push(newJobId(clock));
  }
  assert.equal([...ids].sort(), ids, 'byte order is creation order');
  assert.is(new Set(ids).size, ids.length);
  for (const id of ids) assert.ok(JOB_ID_PATTERN.test(id), id);
  const queue = await freshQueue();
  const made: string[] = [];
  for (let i = 0; i < 20; i++) made.push((await enqueue(queue, { argv: ['true'] })).id);
  assert.equal(await entries(queue.paths.dir('jobs')), made, 'jobs/ lists them in enqueue order');
});

published('a reader watching jobs/ never sees a job without its spec.json and stdin (ENQ-5)', async () => {
  const queue = await freshQueue();
  let done = false;
  const incomplete: string[] = [];
  const watcher = (async () => {
    while (!done) {
      for (const entry of await listDir(queue.paths.dir('jobs'), queue.fsOptions)) {
        const names = await entries(queue.paths.job(entry.name));
        if (!names.includes('spec.json') || !names.includes('stdin')) incomplete.push(`${entry.name}: ${names.join(',')}`);
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
  })();
  for (let i = 0; i < 40; i++) await enqueue(queue, { argv: ['true'], stdin_text: `job ${i}` });
  done = true;
  await watcher;
  assert.equal(incomplete, []);
});

published.run();

const refused = suite('enqueue refuses and leaves nothing behind');
refused.after(cleanupAll);

refused('an invalid request is refused before anything is written (ENQ-1)', async () => {
  const queue = await freshQueue();
  const before = await tree(queue.root);
  const invalid: unknown[] = [
    {},
    { argv: [] },
    { argv: ['x'], handler: 'h' },
    { argv: ['x'], payload: 1 },
    { argv: ['x'], timeout_ms: 0 },
    { argv: ['x'], priority: 1001 },
    { argv: ['x'], max_attempts: 101 },
    { argv: ['x'], surprise: true },
    { argv: ['x'], cwd: 'relative/dir' },
    { argv: ['x'], env: { FSJOB_JOB_ID: 'forged' } },
    { argv: ['x'], env: { 'BAD-NAME': '1' } },
    { argv: ['x'], labels: { Team: 'x' } },
    { argv: ['x'], lane: '' },
    { argv: ['x'], dedupe: 'tab\there' },
    { argv: ['x'], stdin_text: 'a', stdin_base64: 'YQ==' },
    { argv: ['x'], stdin_base64: 'not base64!' },
    { argv: ['x'], timeout_ms: 1.5 },
    { argv: ['a\u0000b'] },
    { handler: 'Upper' },
    [],
    'argv',
    null,
  ];
  // Not JobRequests: what an untyped caller (JSON from elsewhere) can pass; the run-time check refuses each.
  for (const request of invalid) await rejectsWith(enqueue(queue, request as JobRequest), 'USAGE');
  await rejectsWith(enqueue(queue, Buffer.from('{"argv":["x"],"argv":["y"]}')), 'USAGE', { clause: 'REQ-1' });
  await rejectsWith(enqueue(queue, Buffer.from('\ufeff{"argv":["x"]}')), 'USAGE');
  await rejectsWith(enqueue(queue, { fsjob: '2.0', argv: ['x'] }), 'UNSUPPORTED_VERSION');
  await rejectsWith(enqueue(queue, { argv: ['x'] }, { stdin: Buffer.alloc(67_108_865) }), 'TOO_LARGE');
  await rejectsWith(enqueue(queue, { argv: ['x'], payload: 'x'.repeat(10) }), 'USAGE');
  await rejectsWith(enqueue(queue, { handler: 'big', payload: 'x'.repeat(1_100_000) }), 'USAGE', { clause: 'REC-2' });
  assert.equal(await tree(queue.root), before, 'nothing was written anywhere');
});

refused('a request of a newer minor is accepted and its unknown members are not copied (VER-3, VER-4)', async () => {
  const queue = await freshQueue();
  // A 1.7 member is no member of this version's JobRequest: the value arrives untyped, as from a newer producer's file.
  const newer: unknown = { fsjob: '1.7', argv: ['x'], future_member: 1, 'x-note': 'n' };
  const { spec } = await enqueue(queue, newer as JobRequest);
  assert.is('future_member' in spec, false);
  assert.is('x-note' in spec, false);
  assert.is(spec.fsjob, '1.2');
});

refused('a symlinked jobs/ is refused with SYMLINK_REFUSED and nothing is written through it', async () => {
  const queue = await freshQueue();
  const outside = await freshDir('fsjob-outside');
  await rm(queue.paths.dir('jobs'), { recursive: true });
  await symlink(outside, queue.paths.dir('jobs'));
  await rejectsWith(enqueue(queue, { argv: ['x'] }), 'SYMLINK_REFUSED', { clause: 'SEC-2' });
  assert.equal(await entries(outside), [], 'nothing written through the link');
  assert.equal(await entries(queue.paths.dir('tmp')), []);
  assert.equal(await entries(queue.paths.dir('ready')), []);
});

refused('a symlinked ready/ is refused with SYMLINK_REFUSED and nothing is written through it', async () => {
  const queue = await freshQueue();
  const outside = await freshDir('fsjob-outside');
  await rm(queue.paths.dir('ready'), { recursive: true });
  await symlink(outside, queue.paths.dir('ready'));
  await rejectsWith(enqueue(queue, { argv: ['x'], dedupe: 'k' }), 'SYMLINK_REFUSED', { clause: 'SEC-2' });
  assert.equal(await entries(outside), []);
  assert.equal(await entries(queue.paths.dir('tmp')), []);
  assert.equal(await entries(queue.paths.dir('jobs')), []);
  assert.equal(await entries(queue.paths.dir('dedupe')), [], 'no hold was taken');
});

refused('a symlink planted at tmp/<id> just before the mkdir is refused, not followed, and left in place', async () => {
  const outside = await freshDir('fsjob-outside');
  const base = await freshQueue();
  let planted = '';
  const fs: SafeFsSeam = {
    ...nodeFs,
    mkdir: (async (path: string, options?: unknown) => {
      if (path.startsWith(base.paths.dir('tmp'))) {
        planted = path;
        await symlink(outside, path); // the attacker wins the race to the name
      }
      return nodeFs.mkdir(path, options as never);
    }) as SafeFsSeam['mkdir'],
  };
  const queue = await withSeam(base.root, fs);
  await rejectsWith(enqueue(queue, { argv: ['x'], stdin_text: 'secret' }), 'SYMLINK_REFUSED', { clause: 'SEC-2' });
  assert.equal(await entries(outside), [], 'no spec or stdin written through the link');
  assert.equal(await tree(base.paths.dir('tmp')), [`${planted.split('/').at(-1) ?? ''}@`], 'the link is neither followed nor deleted');
  assert.equal(await entries(base.paths.dir('jobs')), []);
  assert.equal(await entries(base.paths.dir('ready')), []);
});

refused('ENOSPC at any mutating call leaves no staging and no ready entry, and is IO with errno ENOSPC (ENQ-6)', async () => {
  const base = await freshQueue();
  const request: JobRequest = { argv: ['x'], stdin_text: 'input', dedupe: 'report' };
  let succeeded = false;
  let failures = 0;
  for (let k = 1; k < 60 && !succeeded; k++) {
    const { fs, calls } = faultyFs(k);
    const queue = await withSeam(base.root, fs);
    try {
      const { id } = await enqueue(queue, request);
      succeeded = true;
      assert.equal(await entries(base.paths.dir('jobs')), [id]);
      break;
    } catch (error) {
      failures += 1;
      const failure = await rejectsWith(Promise.reject(error), 'IO', { errno: 'ENOSPC' });
      const at = calls[k - 1] ?? '?';
      assert.equal(await entries(base.paths.dir('tmp')), [], `no staging after ENOSPC at ${at}`);
      if (failure.clause === 'ENQ-4') {
        // The rename committed; only the fsync of jobs/ failed: the job stays, unreported.
        assert.is((await entries(base.paths.dir('jobs'))).length, 1, at);
        assert.is((await entries(base.paths.dir('ready'))).length, 1, at);
        await rm(base.paths.job(failure.jobId ?? ''), { recursive: true });
        await rm(join(base.paths.dir('ready'), (await entries(base.paths.dir('ready')))[0] ?? ''));
      } else {
        assert.equal(await entries(base.paths.dir('jobs')), [], `no job after ENOSPC at ${at}`);
        assert.equal(await entries(base.paths.dir('ready')), [], `no ready entry after ENOSPC at ${at}`);
      }
      for (const dir of ['jobs', 'ready']) assert.equal((await entries(base.paths.dir(dir as 'jobs'))).filter((n) => n.startsWith('.')), [], `no temp files in ${dir}/`);
    }
  }
  assert.ok(succeeded, 'enqueue succeeds once no call fails');
  assert.ok(failures >= 10, `every mutating call was tried (${failures})`);
});

refused('an existing staging name is never reused or removed', async () => {
  const base = await freshQueue();
  const fs: SafeFsSeam = {
    ...nodeFs,
    mkdir: (async (path: string, options?: unknown) => {
      if (path.startsWith(base.paths.dir('tmp'))) await nodeFs.mkdir(path, { mode: 0o700 }); // someone else's directory
      return nodeFs.mkdir(path, options as never);
    }) as SafeFsSeam['mkdir'],
  };
  const queue = await withSeam(base.root, fs);
  await rejectsWith(enqueue(queue, { argv: ['x'] }), 'EXISTS');
  assert.is((await entries(base.paths.dir('tmp'))).length, 1, 'the foreign directory is left alone');
  assert.equal(await entries(base.paths.dir('ready')), []);
});

refused('a queue that is not a queue is refused', async () => {
  const queue = await freshQueue();
  await rename(queue.paths.queueRecord(), join(queue.root, 'moved.json'));
  await mkdir(join(queue.root, 'sub'));
  const { openQueue } = await import('../../src/model/queue.ts');
  await rejectsWith(openQueue(queue.root), 'NOT_A_QUEUE');
});

refused('a string with a lone surrogate is refused naming the argument; bytes that are not UTF-8 are published in the byte form (SPEC-3)', async () => {
  const queue = await freshQueue();
  const before = await tree(queue.root);
  const error = await rejectsWith(enqueue(queue, { argv: ['echo', 'a\ud800b'] }), 'USAGE', { clause: 'SPEC-3' });
  assert.match(error.message, /argv\[1\] holds a lone surrogate/);
  assert.equal(await tree(queue.root), before, 'nothing was written');
  const { spec } = await enqueue(queue, { argv: ['echo', textOfBytes(Buffer.from([0x61, 0xff])), textOfBytes(Buffer.from('caf\u00e9'))] });
  assert.equal(spec.argv, ['echo', { base64: 'Yf8=' }, 'caf\u00e9'], 'the bytes that are not UTF-8 in the byte form, the others as a string');
});

refused.run();

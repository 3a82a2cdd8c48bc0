/**
 * MANIFEST-2, the runner's side of running an implementation: request files
 * in compact form (REC-1), and each role in its own process group, with the
 * runner's environment plus the manifest's `env`, killed (the whole group)
 * when it exceeds its time limit.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parseManifest } from '../../conformance/runner/manifest.ts';
import { roleEnv, run, runRole } from '../../conformance/runner/process.ts';
import { writeRequest } from '../../conformance/runner/stage.ts';
import { parseRecordBytes } from '../../src/records/json.ts';
import { serializeRecord } from '../../src/records/json-write.ts';
import { parseProcStat, processStart } from '../../src/model/identity.ts';
import { cleanupAll, freshDir } from '../support/helpers.ts';
import { waitFor } from '../support/consumer.ts';

const roles = suite('running roles (MANIFEST-2)');
roles.after(cleanupAll);

roles('a request file is the request in compact form with one line feed (MANIFEST-2, REC-1)', async () => {
  const dir = await freshDir('roles');
  const request = { argv: ['printf', '%s', 'a b'], env: { Z: '1', A: '2' }, labels: { team: 'web' }, timeout_ms: 60_000 };
  const file = await writeRequest(dir, 'r1', request as never);
  const bytes = readFileSync(file);
  assert.equal(bytes, serializeRecord(request), 'byte for byte what the record layer writes');
  const parsed = parseRecordBytes(bytes, 'record');
  assert.ok(parsed.ok, 'it parses as a record: compact, one object, one line feed');
  assert.is(bytes.toString('utf8').split('\n').length, 2);
});

roles('a role runs as the leader of its own process group, with the manifest env added to the runner environment (MANIFEST-2)', async () => {
  // A role runs in its manifest's directory: one that exists (a fixed /tmp/x made the test depend on the machine).
  const manifestFile = join(await freshDir('roles'), 'manifest.json');
  const manifest = parseManifest(JSON.stringify({ name: 't', roles: { produce: ['sh', '-c', 'cat /proc/$$/stat; printf "\\n%s %s" "$FSJOB_T_ADDED" "$FSJOB_T_RUNNER"', 'sh', '{queue}', '{request}'], consume: ['true', '{queue}'] }, env: { FSJOB_T_ADDED: 'from-manifest' } }), manifestFile);
  process.env['FSJOB_T_RUNNER'] = 'from-runner';
  try {
    assert.is(roleEnv(manifest)['FSJOB_T_ADDED'], 'from-manifest');
    const result = await runRole(manifest, 'produce', { queue: '/nonexistent', request: '/nonexistent' });
    assert.is(result.code, 0, result.stderr);
    const lines = result.stdout.split('\n');
    const stat = lines[0] ?? '';
    const values = lines.at(-1) ?? '';
    const fields = parseProcStat(stat);
    assert.ok(fields !== undefined, `a /proc stat line: ${stat}`);
    const pid = Number(stat.split(' ')[0]);
    assert.is(fields?.pgrp, pid, 'the role leads its own group');
    const own = parseProcStat(readFileSync('/proc/self/stat', 'utf8'));
    assert.is.not(fields?.pgrp, own?.pgrp, 'not the runner’s group');
    assert.is(values, 'from-manifest from-runner');
  } finally {
    delete process.env['FSJOB_T_RUNNER'];
  }
});

roles('a role over its time limit is killed with everything in its group (MANIFEST-2)', async () => {
  // The role starts a helper in its group, prints its pid, and waits forever.
  const result = await run(['sh', '-c', 'sleep 600 & echo $!; wait'], { timeoutMs: 300 });
  assert.ok(result.timedOut, 'reported as over its limit');
  assert.is(result.signal, 'SIGKILL');
  const helper = Number(result.stdout.trim());
  assert.ok(helper > 0, `the helper's pid: ${result.stdout}`);
  // The helper was in the role's group: the group kill ended it too (reaped by init, so only a bounded wait).
  await waitFor('the helper to be gone', async () => {
    const info = await processStart(helper);
    return info === null || info.state === 'Z';
  }, 10_000);
});

roles.run();

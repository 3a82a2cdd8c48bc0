/**
 * Validator cases (CONF-3, I8), for implementations with a `validate` role:
 * a clean queue passes (exit 0), a queue with a violation it can see fails
 * (exit 1), and validating writes nothing: the whole queue, content, modes
 * and mtimes included, is the same afterwards.
 */
import { chmod, rename, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { serializeRecord } from '../../src/records/codec.ts';
import type { CaseContext, ConformanceCase } from '../runner/case.ts';
import { listing } from '../runner/inspect.ts';
import { describeExit } from '../runner/process.ts';
import { fingerprint, plantBytes, reopen, stageJob, type Staged } from '../runner/stage.ts';
import { logged } from './jobs.ts';

interface Violation {
  name: string;
  clause: string;
  plant: (job: Staged, outside: string) => Promise<void>;
}

const VIOLATIONS: Violation[] = [
  { name: 'a spec not in compact form', clause: 'REC-1', plant: async (job) => void (await writeFile(path.join(job.dir, 'spec.json'), `${JSON.stringify(job.spec, null, 2)}\n`)) },
  { name: 'a spec of major 2', clause: 'VER-1', plant: async (job) => void (await writeFile(path.join(job.dir, 'spec.json'), serializeRecord({ ...job.spec, fsjob: '2.0' }))) },
  { name: 'an empty claim (a torn record)', clause: 'REC-1', plant: async (job) => plantBytes(path.join(job.dir, 'claim.1.json'), '') },
  {
    name: 'a symlinked spec',
    clause: 'SEC-2',
    plant: async (job, outside) => {
      const away = path.join(outside, `${job.id}-spec.json`);
      await rename(path.join(job.dir, 'spec.json'), away);
      await symlink(away, path.join(job.dir, 'spec.json'));
    },
  },
  { name: 'a spec writable by others', clause: 'SEC-5', plant: async (job) => chmod(path.join(job.dir, 'spec.json'), 0o666) },
];

async function validatorCase(ctx: CaseContext): Promise<void> {
  const check = async (label: string, violation: Violation | undefined): Promise<void> => {
    const root = await ctx.newQueue(label);
    const work = await ctx.subdir(`${label}/work`);
    const outside = await ctx.subdir(`${label}/outside`);
    const queue = await reopen(root);
    const job = await stageJob(queue, { argv: logged(path.join(work, 'starts.log'), 'job'), cwd: work });
    await stageJob(queue, { argv: logged(path.join(work, 'starts.log'), 'other'), cwd: work, stdin_text: 'x' });
    if (violation !== undefined) await violation.plant(job, outside);
    const before = await fingerprint(root);
    const result = await ctx.role('validate', { queue: root });
    const after = await fingerprint(root);
    const evidence = [describeExit(result), ...listing(await ctx.snapshot(root))];
    if (violation === undefined) {
      ctx.check(result.code === 0, ['I8', 'CONF-3'], 'validate must exit 0 on a clean queue', evidence);
    } else {
      ctx.check(result.code === 1, [violation.clause, 'I8', 'CONF-3'], `validate must exit 1 on a queue with ${violation.name}`, evidence);
    }
    if (after !== before) {
      const was = before.split('\n');
      ctx.fail(['CONF-3', 'I8'], `validate changed the queue${violation === undefined ? '' : ` with ${violation.name}`}; a validator writes nothing`, [...after.split('\n').filter((line) => !was.includes(line)).map((line) => `now: ${line}`), describeExit(result)]);
    }
  };
  await check('clean', undefined);
  let index = 0;
  for (const violation of VIOLATIONS) await check(`violation-${++index}`, violation);
}

export const validatorCases: ConformanceCase[] = [
  { name: 'validator/queue', clauses: ['CONF-3', 'I8', 'REC-1', 'VER-1', 'SEC-2', 'SEC-5'], level: 'validator', strength: 'MUST', roles: ['validate'], run: validatorCase },
];

/**
 * vectors/other-records: the invalid vectors of the record types no other
 * vector case plants (cancel, state, hold, worker; one per finding and
 * clause, or every one with --all-vectors), each where its file name puts
 * it in a real queue: cancel and state records in a queued job of their
 * own (a state after a dead owner's claim), holds under dedupe/ and
 * lanes/, registrations under workers/. recover (if any), produce (with
 * the key of the first dedupe hold) and consume run, and then:
 *
 * - no role hangs or dies by a signal (an error exit is fine);
 * - every planted record is still there, byte for byte: a reader reports
 *   an invalid record and never acts on it, and removing or replacing it
 *   is acting on it (REC-4); only a hold below a higher one of its key may
 *   go (GC-2).
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { VectorCase } from '../../src/records/codec.ts';
import { type CaseContext, type ConformanceCase } from '../runner/case.ts';
import { claimRecord, deadOwner } from '../runner/fixtures.ts';
import { listing } from '../runner/inspect.ts';
import { describeExit, type ProcessResult } from '../runner/process.ts';
import { plantBytes, plantRecord, reopen, stageJob } from '../runner/stage.ts';
import { logged } from './jobs.ts';
import { loadVectors, remapIds, selectVectors, vectorBytes } from './vectors.ts';

const TYPES = ['cancel', 'state', 'hold', 'worker'] as const;
const GEN = /\.([0-9]+)\.json$/;

interface PlantedRecord {
  type: string;
  test: VectorCase;
  file: string;
  bytes: Buffer;
}

/** Whether the hold directory of `file` now holds a higher number than its own. */
async function higherHold(file: string): Promise<boolean> {
  const own = Number(path.basename(file, '.json'));
  const names = await readdir(path.dirname(file)).catch(() => [] as string[]);
  return names.some((name) => /^[1-9][0-9]*\.json$/.test(name) && Number(name.slice(0, -5)) > own);
}

const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

async function otherRecords(ctx: CaseContext): Promise<void> {
  const root = await ctx.newQueue('vectors');
  const work = await ctx.subdir('vectors/work');
  const queue = await reopen(root);
  const log = path.join(work, 'starts.log');
  const planted: PlantedRecord[] = [];
  const keys: string[] = [];
  let index = 0;
  for (const type of TYPES) {
    for (const test of selectVectors(loadVectors(type), ctx.settings.allVectors).filter((t) => !t.valid)) {
      index += 1;
      const data = test.data as Record<string, unknown> | undefined;
      let file: string;
      let bytes: Buffer;
      if (type === 'cancel' || type === 'state') {
        const victim = await stageJob(queue, { argv: logged(log, `v${index}`), cwd: work });
        const main = test.file_name === undefined ? undefined : /jobs\/([0-9]{19}-[0-9a-f]{16})\//.exec(test.file_name)?.[1];
        const mainId = main ?? (typeof data?.job_id === 'string' ? data.job_id : undefined);
        const remapped = remapIds(vectorBytes(test), test.file_name, new Map(mainId === undefined ? [] : [[mainId, victim.id]]));
        bytes = remapped.bytes;
        const name = remapped.fileName === undefined ? (type === 'cancel' ? 'cancel.json' : 'state.1.json') : path.basename(remapped.fileName);
        if (type === 'state') {
          const gen = Number(GEN.exec(name)?.[1] ?? '1');
          await plantRecord(queue, victim.dir, `claim.${gen}.json`, 'claim', claimRecord(victim.id, gen, await deadOwner()));
        }
        file = path.join(victim.dir, name);
      } else {
        const remapped = remapIds(vectorBytes(test), test.file_name);
        bytes = remapped.bytes;
        const key = typeof data?.key === 'string' ? data.key : `vector key ${index}`;
        const rel = remapped.fileName ?? (type === 'hold' ? `dedupe/${sha256(key)}/1.json` : 'workers/0123456789abcdef.json');
        file = path.join(root, rel);
        if (type === 'hold' && rel === `dedupe/${sha256(key)}/${path.basename(rel)}` && keys.length < 1 && !keys.includes(key)) keys.push(key);
      }
      if (planted.some((p) => p.file === file)) continue; // two vectors for one name: the first is planted
      await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
      await plantBytes(file, bytes);
      planted.push({ type, test, file, bytes });
    }
  }
  const runs: ProcessResult[] = [];
  if (ctx.impl.roles.recover !== undefined) runs.push(await ctx.role('recover', { queue: root }));
  for (const key of keys) runs.push((await ctx.produce(root, { argv: ['/bin/true'], cwd: work, dedupe: key })).result);
  runs.push(await ctx.role('consume', { queue: root }));
  for (const run of runs) ctx.check(!run.timedOut && run.signal === null, ['I7', 'MANIFEST-2'], 'recover, produce and consume must get through invalid records without hanging or crashing', [describeExit(run)]);
  const snapshot = await ctx.snapshot(root);
  for (const { type, test, file, bytes } of planted) {
    const now = await readFile(file).catch(() => undefined);
    if (now !== undefined && now.equals(bytes)) continue;
    if (now === undefined && type === 'hold' && (await higherHold(file))) continue; // GC-2: a hold below the highest of its key may go
    const rel = path.relative(root, file);
    ctx.fail(['REC-4', test.clause, 'I7'], `the invalid ${type} record ${rel} was ${now === undefined ? 'removed' : 'changed'}; a reader reports an invalid record and never acts on it: ${test.description}`, [...runs.map(describeExit), ...listing(snapshot, new Set(/^jobs\/([^/]+)\//.exec(rel)?.slice(1) ?? []))]);
  }
  ctx.note(`${planted.length} invalid cancel, state, hold and worker records`);
}

const clauses = [...new Set(['REC-4', 'I7', ...TYPES.flatMap((type) => loadVectors(type).tests.map((test) => test.clause))])];

export const otherVectorCases: ConformanceCase[] = [{ name: 'vectors/other-records', clauses, level: 'consumer', strength: 'MUST', run: otherRecords }];

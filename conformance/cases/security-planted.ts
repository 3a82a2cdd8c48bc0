/**
 * Planted names and states for hostile/job-entries (security.ts runs them):
 * what a reader must ignore, leave alone, or refuse to act on, though none
 * of it is a symlink or a broken record.
 *
 * - a directory in jobs/ whose name is not a job id (uppercase hex), with a
 *   valid spec and a ready entry: foreign, never opened or run (LAYOUT-4);
 * - an unknown name in a job directory: never opened or deleted (LAYOUT-6);
 * - claim names whose generation is not 1..GEN_MAX without leading zeros
 *   (claim.01.json, claim.0.json): not claims at all, so the job runs with
 *   claim.1.json (SEC-7, LAYOUT-5);
 * - a regular file already at stdout.1: output files are created
 *   exclusively, so it is never opened for writing, truncated or appended
 *   to (PUB-7);
 * - a finished job whose ready entry is still there: the index is a hint,
 *   verified against the job before acting; nothing is claimed (READY-1);
 * - a complete job still in tmp/<id>/ with a ready entry: not published,
 *   so readers never look at it (ENQ-5).
 */
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { selfIdentity } from '../../src/model/identity.ts';
import { readyEntryName } from '../../src/model/layout.ts';
import { serializeRecord } from '../../src/records/codec.ts';
import { claimRecord, deadOwner, execRecord, receiptRecord } from '../runner/fixtures.ts';
import { plantBytes, plantRecord } from '../runner/stage.ts';
import type { Scenario } from './security.ts';

export const PLANTED_SCENARIOS: Scenario[] = [
  {
    name: 'foreign-job-name',
    clauses: ['LAYOUT-4', 'SEC-7', 'I7'],
    build: async (env) => {
      const victim = await env.stage();
      const foreign = `${victim.id.slice(0, 20)}${victim.id.slice(20).toUpperCase().replace(/^[0-9]/, 'A')}`;
      const dir = path.join(env.root, 'jobs', foreign);
      await rename(victim.dir, dir);
      await rename(path.join(env.root, 'ready', readyEntryName(victim.spec.priority, victim.id)), path.join(env.root, 'ready', readyEntryName(victim.spec.priority, foreign)));
      await writeFile(path.join(dir, 'spec.json'), serializeRecord({ ...victim.spec, id: foreign }), { mode: 0o600 });
      return { hostile: dir, keepAlso: [path.join(dir, 'spec.json')], mustNotRun: true, receipt: 'any', victim: { ...victim, id: foreign, dir } };
    },
  },
  {
    name: 'unknown-name-in-job',
    clauses: ['LAYOUT-6', 'I7'],
    build: async (env) => {
      const victim = await env.stage();
      const hostile = path.join(victim.dir, 'notes.txt');
      await plantBytes(hostile, 'left by an operator\n');
      return { hostile, keepAlso: [hostile], mustNotRun: false, mustRun: true, receipt: 'any', victim };
    },
  },
  {
    name: 'generation-names',
    clauses: ['SEC-7', 'LAYOUT-5', 'I7'],
    build: async (env) => {
      const victim = await env.stage();
      const owner = await deadOwner();
      const hostile = path.join(victim.dir, 'claim.01.json');
      // Well-formed claims under names that are not generations: not claims, so not an open claim either.
      await plantBytes(hostile, serializeRecord(claimRecord(victim.id, 1, owner)));
      const zero = path.join(victim.dir, 'claim.0.json');
      await plantBytes(zero, serializeRecord(claimRecord(victim.id, 1, owner)));
      return { hostile, keepAlso: [hostile, zero], mustNotRun: false, mustRun: true, receipt: 'any', victim };
    },
  },
  {
    name: 'planted-output',
    clauses: ['PUB-7', 'EXEC-1', 'I7'],
    build: async (env) => {
      const victim = await env.stage();
      const hostile = path.join(victim.dir, 'stdout.1');
      await plantBytes(hostile, 'planted before any claim\n');
      return { hostile, keepAlso: [hostile], mustNotRun: false, receipt: 'any', victim };
    },
  },
  {
    name: 'finished-with-ready-entry',
    clauses: ['READY-1', 'RCPT-3', 'I7'],
    build: async (env) => {
      const victim = await env.stage();
      const self = await selfIdentity();
      // Its owner is dead, as after any finished run: only the receipt says the job is done.
      const owner = await deadOwner();
      await plantRecord(env.queue, victim.dir, 'claim.1.json', 'claim', claimRecord(victim.id, 1, owner));
      await plantRecord(env.queue, victim.dir, 'exec.1.json', 'exec', execRecord(victim.id, 1, owner));
      for (const stream of ['stdout.1', 'stderr.1']) await plantBytes(path.join(victim.dir, stream), '');
      await plantRecord(env.queue, victim.dir, 'receipt.json', 'receipt', receiptRecord(victim.id, 1, self));
      // READY-3 lets anyone remove the entry; what matters is that nothing acts on the finished job.
      return { hostile: path.join(env.root, 'ready', readyEntryName(victim.spec.priority, victim.id)), keep: false, mustNotRun: true, frozen: true, receipt: 'any', victim };
    },
  },
  {
    name: 'staged-in-tmp',
    clauses: ['ENQ-5', 'I7'],
    build: async (env) => {
      const victim = await env.stage();
      const staging = path.join(env.root, 'tmp', victim.id);
      await mkdir(path.dirname(staging), { recursive: true, mode: 0o700 });
      await rename(victim.dir, staging);
      return { hostile: staging, keepAlso: [path.join(staging, 'spec.json')], mustNotRun: true, receipt: 'none', victim: { ...victim, dir: staging } };
    },
  },
];

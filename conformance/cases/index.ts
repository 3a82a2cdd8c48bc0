/**
 * The case catalog, in the order results are printed: the cases of each
 * spec file, in the order of spec/README.md's files (a spec file's cases are
 * in conformance/cases/<its name>.ts, and <its name>-<aspect>.ts where one
 * aspect needs its own machinery), then the cases that cut across files:
 * the behaviour plans and interoperability, forced races, record vectors,
 * the validator, and the crash and power-loss modes. Each module's header
 * says what its cases check; conformance/README.md lists them all.
 */
import type { ConformanceCase } from '../runner/case.ts';
import { behaviourCases } from './behaviour.ts';
import { claimCases } from './claim.ts';
import { controlCases } from './control.ts';
import { controlClockCases } from './control-clock.ts';
import { crashCases } from './crash.ts';
import { holdReuseCases } from './hold-reuse.ts';
import { identityCases } from './identity.ts';
import { interopCases } from './interop.ts';
import { lanesCases } from './lanes.ts';
import { laneSlotsCases } from './lanes-slots.ts';
import { gatesCases } from './gates.ts';
import { leasesCases } from './leases-and-guardian.ts';
import { clockCases } from './leases-and-guardian-clock.ts';
import { judgeClockCases } from './leases-and-guardian-judge-clock.ts';
import { powerCases } from './power.ts';
import { producerCases } from './producer.ts';
import { dedupeRaceCases } from './producer-dedupe-race.ts';
import { raceCases } from './races.ts';
import { recoveryCases } from './recovery-and-gc.ts';
import { housekeepingCases } from './recovery-and-gc-housekeeping.ts';
import { runningCases } from './running.ts';
import { securityCases } from './security.ts';
import { bytesCases } from './spec-record-bytes.ts';
import { rootCases } from './security-root.ts';
import { validatorCases } from './validator.ts';
import { vectorCases } from './vectors.ts';
import { otherVectorCases } from './vectors-others.ts';
import { workersCases } from './workers.ts';
import { writingCases } from './writing.ts';
import { movesCases } from './writing-moves.ts';

export const ALL_CASES: readonly ConformanceCase[] = [
  ...producerCases,
  ...dedupeRaceCases,
  ...holdReuseCases,
  ...bytesCases,
  ...writingCases,
  ...movesCases,
  ...claimCases,
  ...lanesCases,
  ...laneSlotsCases,
  ...gatesCases,
  ...runningCases,
  ...leasesCases,
  ...clockCases,
  ...judgeClockCases,
  ...workersCases,
  ...controlCases,
  ...controlClockCases,
  ...identityCases,
  ...recoveryCases,
  ...housekeepingCases,
  ...securityCases,
  ...rootCases,
  ...behaviourCases,
  ...interopCases,
  ...raceCases,
  ...vectorCases,
  ...otherVectorCases,
  ...validatorCases,
  ...crashCases,
  ...powerCases,
];

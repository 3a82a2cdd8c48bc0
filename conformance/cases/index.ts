/**
 * The case catalog, in the order results are printed. Each module's header
 * says what its cases check; conformance/README.md lists them all.
 */
import type { ConformanceCase } from '../runner/case.ts';
import { behaviourCases } from './behaviour.ts';
import { bytesCases } from './bytes.ts';
import { consumerCases } from './consumer.ts';
import { crashCases } from './crash.ts';
import { executionCases } from './execution.ts';
import { hostileCases } from './hostile.ts';
import { housekeepingCases } from './housekeeping.ts';
import { rootCases } from './hostile-root.ts';
import { identityCases } from './identity.ts';
import { interopCases } from './interop.ts';
import { decisionCases } from './decisions.ts';
import { fencingCases } from './fencing.ts';
import { clockCases } from './clock.ts';
import { hazardCases } from './hazards.ts';
import { dedupeRaceCases } from './dedupe-race.ts';
import { holdReuseCases } from './hold-reuse.ts';
import { filesystemCases } from './filesystem.ts';
import { retryClockCases } from './retry-clock.ts';
import { judgeClockCases } from './judge-clock.ts';
import { operationsCases } from './operations.ts';
import { ownershipCases } from './ownership.ts';
import { movesCases } from './moves.ts';
import { powerCases } from './power.ts';
import { producerCases } from './producer.ts';
import { raceCases } from './races.ts';
import { recoveryCases } from './recovery.ts';
import { schedulingCases } from './scheduling.ts';
import { validatorCases } from './validator.ts';
import { vectorCases } from './vectors.ts';
import { otherVectorCases } from './vectors-others.ts';

export const ALL_CASES: readonly ConformanceCase[] = [...producerCases, ...bytesCases, ...behaviourCases, ...consumerCases, ...operationsCases, ...executionCases, ...ownershipCases, ...schedulingCases, ...raceCases, ...housekeepingCases, ...hostileCases, ...rootCases, ...identityCases, ...fencingCases, ...clockCases, ...retryClockCases, ...judgeClockCases, ...decisionCases, ...hazardCases, ...dedupeRaceCases, ...holdReuseCases, ...filesystemCases, ...recoveryCases, ...vectorCases, ...otherVectorCases, ...interopCases, ...validatorCases, ...movesCases, ...crashCases, ...powerCases];

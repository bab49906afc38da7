/**
 * The worker's gates, in the order a delivery passes them (docs/architecture.md, "Where a new
 * feature goes"). A gate the job type's spec does not need builds to nothing, and costs nothing.
 *
 * The order matters: the message-only gates first (no read), then the debounce (which may end
 * the job, so nothing is taken for it), the throttle's turn, and the slots last (so a job that
 * waits for its turn holds no slot meanwhile).
 */
import { predecessorGate } from './after';
import { debounceGate } from './debounce';
import type { GateBuilder } from './gate';
import { notBeforeGate } from './not-before';
import { slotsGate } from './slots';
import { throttleGate } from './throttle';

export const STANDARD_GATES: readonly GateBuilder[] = [
  notBeforeGate,
  predecessorGate,
  debounceGate,
  throttleGate,
  slotsGate,
];

export type { AfterClaim, Delivery, Ending, Gate, GateBuilder, GatePass, Outcome, Verdict } from './gate';

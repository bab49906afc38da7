/**
 * Job shapes that stand on either side of every clause of the claim rule
 * (`shared/core/claim-rule.ts`), each with what a claim of a `echo` delivery at `now` gives:
 * `claim`, `takeover` (a claim of an expired lease) or the refusal's kind. The rule's unit test
 * checks `claimVerdict` against them; the job-store contract checks each store's claim.
 */
import fc from 'fast-check';
import type { Job } from '../../shared/core/job';
import { MAX_CLOCK_SKEW_MS } from '../../shared/core/lease';
import type { ClaimResult } from '../../shared/core/ports';
import { EARLY_START_TOLERANCE_MS } from '../../shared/core/scheduling';
import { CLAIMABLE_STATES, JOB_STATES, SETTLED_STATES } from '../../shared/core/states';

const iso = (ms: number) => new Date(ms).toISOString();

export type ClaimOutcome = 'claim' | 'takeover' | Exclude<ClaimResult['kind'], 'claimed'>;

export interface ClaimShape {
  name: string;
  /** Overrides of a fresh `queued` job of type `echo` (attempts 0 of 3, due at `now`). */
  job: Partial<Job>;
  expected: ClaimOutcome;
}

/** The shapes, for a claim at `now`. */
export function claimShapes(now: number): ClaimShape[] {
  const held = now - MAX_CLOCK_SKEW_MS; // expired, but not longer than the skew bound ago
  const expired = now - MAX_CLOCK_SKEW_MS - 1;
  const early = iso(now + EARLY_START_TOLERANCE_MS + 1);
  const shapes: ClaimShape[] = [];
  for (const state of CLAIMABLE_STATES) {
    const attempts = state === 'retrying' ? 1 : 0;
    const base = { state, attempts, leaseToken: attempts };
    shapes.push(
      { name: `${state}, due`, job: { ...base, runAt: iso(now - 60_000) }, expected: 'claim' },
      {
        name: `${state}, due within the early-start tolerance`,
        job: { ...base, runAt: iso(now + EARLY_START_TOLERANCE_MS) },
        expected: 'claim',
      },
      { name: `${state}, early`, job: { ...base, runAt: early }, expected: 'early' },
      {
        name: `${state}, an earlier lease possibly held`,
        job: { ...base, leaseExpiresAt: held },
        expected: 'fenced',
      },
      {
        name: `${state}, an earlier lease past its fence`,
        job: { ...base, leaseExpiresAt: expired },
        expected: 'claim',
      },
      {
        name: `${state}, no attempt left`,
        job: { ...base, attempts: 3, maxAttempts: 3 },
        expected: 'missing',
      },
    );
  }
  shapes.push(
    { name: 'waiting for its parents', job: { state: 'waiting', pendingParents: 1 }, expected: 'blocked' },
    { name: 'queued, another type', job: { type: 'other' }, expected: 'missing' },
    {
      name: 'running, lease live',
      job: { state: 'running', attempts: 1, leaseToken: 1, leaseOwner: 'w0', leaseExpiresAt: now + 5_000 },
      expected: 'busy',
    },
    {
      name: 'running, lease expired within the skew bound',
      job: { state: 'running', attempts: 1, leaseToken: 1, leaseOwner: 'w0', leaseExpiresAt: held },
      expected: 'busy',
    },
    {
      name: 'running, lease expired past its fence',
      job: { state: 'running', attempts: 1, leaseToken: 1, leaseOwner: 'w0', leaseExpiresAt: expired },
      expected: 'takeover',
    },
    {
      name: 'running, lease expired on the last attempt',
      job: { state: 'running', attempts: 3, maxAttempts: 3, leaseToken: 3, leaseOwner: 'w0', leaseExpiresAt: expired },
      expected: 'exhausted',
    },
    {
      name: 'running without a lease expiry (never taken over)',
      job: { state: 'running', attempts: 1, leaseToken: 1, leaseOwner: 'w0' },
      expected: 'missing',
    },
    { name: 'queued, dispatchBy passed', job: { dispatchBy: iso(now - 1) }, expected: 'past-deadline' },
    {
      name: 'scheduled, dispatchBy passed',
      job: { state: 'scheduled', dispatchBy: iso(now - 1) },
      expected: 'past-deadline',
    },
    { name: 'queued, dispatchBy now', job: { dispatchBy: iso(now) }, expected: 'claim' },
    { name: 'queued, dispatchBy ahead', job: { dispatchBy: iso(now + 1) }, expected: 'claim' },
    {
      name: 'retrying, dispatchBy passed after an attempt',
      job: { state: 'retrying', attempts: 1, leaseToken: 1, dispatchBy: iso(now - 60_000) },
      expected: 'claim',
    },
    {
      name: 'waiting after a sleep, dispatchBy passed (it had started)',
      job: { state: 'waiting', attempts: 0, leaseToken: 1, resumes: 1, dispatchBy: iso(now - 60_000) },
      expected: 'claim',
    },
  );
  // held too: a delivery of a held job's message is refused as a finished one's (an operator's to move)
  for (const state of SETTLED_STATES) {
    shapes.push({ name: state, job: { state, attempts: 1, leaseToken: 1 }, expected: 'finished' });
  }
  return shapes;
}

/**
 * Any job shape the claim rule reads, near its edges: every state, the type, attempts against
 * maxAttempts, runAt, lease expiry, parents, dispatchBy and resumes, for a claim at `now`.
 */
export function claimShapeArbitrary(now: number): fc.Arbitrary<Partial<Job>> {
  const offset = (values: readonly number[]) => fc.constantFrom(...values.map((d) => now + d));
  const optional = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
  const skew = MAX_CLOCK_SKEW_MS;
  const tolerance = EARLY_START_TOLERANCE_MS;
  return fc
    .record({
      state: fc.constantFrom(...JOB_STATES),
      type: fc.constantFrom('echo', 'echo', 'echo', 'other'),
      attempts: fc.integer({ min: 0, max: 3 }),
      maxAttempts: fc.integer({ min: 1, max: 3 }),
      runAt: offset([-60_000, 0, tolerance, tolerance + 1, 60_000]).map(iso),
      leaseExpiresAt: optional(offset([-skew - 1, -skew, -skew + 1, 5_000])),
      pendingParents: optional(fc.constant(1)),
      dispatchBy: optional(offset([-1, 0, 1]).map(iso)),
      resumes: optional(fc.constant(1)),
    })
    .map(({ leaseExpiresAt, pendingParents, dispatchBy, resumes, ...rest }) => ({
      ...rest,
      leaseToken: rest.attempts,
      ...(leaseExpiresAt === undefined ? {} : { leaseExpiresAt, leaseOwner: 'w0' }),
      ...(pendingParents === undefined ? {} : { pendingParents }),
      ...(dispatchBy === undefined ? {} : { dispatchBy }),
      ...(resumes === undefined ? {} : { resumes }),
    }));
}

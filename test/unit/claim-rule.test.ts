/**
 * The claim rule (shared/core/claim-rule.ts) as `claimVerdict` reads it: the outcome of each
 * shape on either side of a clause, and the refusals `classifyRefusedClaim` gives. The stores are
 * held to the same verdicts by the job-store contract.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CLAIM_RULE, claimVerdict, evaluate } from '../../shared/core/claim-rule';
import { classifyRefusedClaim } from '../../shared/core/lease';
import { claimShapeArbitrary, claimShapes } from '../support/claim-shapes';
import { newJob } from '../support/fakes';

const NOW = Date.parse('2026-06-01T00:00:00.000Z');
const job = (overrides: object) => newJob({ id: 'j1', type: 'echo', ...overrides }, NOW - 120_000);

describe('claimVerdict', () => {
  it('says missing when there is no job', () => {
    expect(claimVerdict(undefined, 'echo', NOW)).toEqual({ kind: 'missing' });
  });

  for (const shape of claimShapes(NOW)) {
    it(`${shape.name}: ${shape.expected}`, () => {
      const verdict = claimVerdict(job(shape.job), 'echo', NOW);
      const kind = verdict.kind === 'claim' ? (verdict.takeover ? 'takeover' : 'claim') : verdict.kind;
      expect(kind).toBe(shape.expected);
    });
  }

  it('gives the refusal classifyRefusedClaim gives, with the job as it was', () => {
    const j = job({ runAt: new Date(NOW + 60_000).toISOString() });
    expect(claimVerdict(j, 'echo', NOW)).toEqual(classifyRefusedClaim(j, NOW, 'echo'));
    expect(claimVerdict(j, 'echo', NOW)).toEqual({ kind: 'early', job: j });
  });

  it('claims exactly when the rule holds, and a claimable job is one classifyRefusedClaim would not refuse', () => {
    fc.assert(
      fc.property(claimShapeArbitrary(NOW), (overrides) => {
        const j = job(overrides);
        const verdict = claimVerdict(j, 'echo', NOW);
        expect(verdict.kind === 'claim').toBe(evaluate(CLAIM_RULE, j, { type: 'echo', now: NOW }));
        if (verdict.kind === 'claim') {
          expect(verdict.takeover).toBe(j.state === 'running');
          expect(classifyRefusedClaim(j, NOW, 'echo')).toEqual({ kind: 'missing' });
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('evaluate', () => {
  it('judges a comparison with a missing attribute false, as DynamoDB does', () => {
    const running = job({ state: 'running', attempts: 1 });
    const lease = { kind: 'compare', attribute: 'leaseExpiresAt', op: '<', to: { parameter: 'fence' } } as const;
    expect(evaluate(lease, running, { type: 'echo', now: NOW })).toBe(false);
    expect(evaluate({ kind: 'absent', attribute: 'leaseExpiresAt' }, running, { type: 'echo', now: NOW })).toBe(true);
  });

  it('compares instants as instants and attributes with attributes', () => {
    const j = job({ attempts: 2, maxAttempts: 2, runAt: new Date(NOW + 1_000).toISOString() });
    const input = { type: 'echo', now: NOW };
    expect(evaluate({ kind: 'compare', attribute: 'runAt', op: '<=', to: { parameter: 'earliest' } }, j, input)).toBe(
      true,
    );
    expect(evaluate({ kind: 'compare', attribute: 'runAt', op: '<=', to: { parameter: 'now' } }, j, input)).toBe(false);
    expect(
      evaluate({ kind: 'compare', attribute: 'attempts', op: '<', to: { attribute: 'maxAttempts' } }, j, input),
    ).toBe(false);
  });
});

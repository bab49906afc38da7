/**
 * The invokes one wait may await are capped: each child counted off the parent grows the parent's
 * status item (its edge marker), so an unbounded fan-out would grow it past DynamoDB's 400 KB
 * item limit, and the last releases would be refused with the parent left waiting. The invoke
 * past the cap fails the job with a StepUsageError before it records or starts anything.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../shared/core/clock';
import { MAX_INVOKES_PER_WAIT } from '../../shared/core/invoke';
import { StepUsageError } from '../../shared/errors';
import { createWorkflow, Suspension } from '../../shared/runtime/workflow';
import { FakeJournal } from '../support/journal-fake';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');

describe('ctx.invoke: the children one wait awaits are capped', () => {
  it(`refuses the invoke past ${MAX_INVOKES_PER_WAIT.toLocaleString('en-US')} in one run, before it records or starts a child`, async () => {
    const started: string[] = [];
    const journal = new FakeJournal();
    const workflow = createWorkflow({
      job: { id: 'parent', createdAt: new Date(T0).toISOString(), attempts: 1 },
      journal,
      clock: new ManualClock(T0),
      signal: new AbortController().signal,
      expiresAt: () => Math.floor(T0 / 1000) + 86_400,
      invoker: {
        start: async (child) => {
          started.push(child.id);
        },
        look: async () => undefined,
      },
    });
    const calls = Array.from({ length: MAX_INVOKES_PER_WAIT + 1 }, (_, i) => workflow.invoke(`c${i}`, 'child', { i }));
    const settled = await Promise.allSettled(calls);
    const reasons = settled.map((s) => (s.status === 'rejected' ? s.reason : undefined));
    // the cap's worth of children started and awaited (each call ends the attempt: Suspension)
    expect(reasons.filter((r) => r instanceof Suspension)).toHaveLength(MAX_INVOKES_PER_WAIT);
    expect(started).toHaveLength(MAX_INVOKES_PER_WAIT);
    // the one past it is refused, names the cap, and started nothing
    const refused = reasons.filter((r) => r instanceof StepUsageError);
    expect(refused).toHaveLength(1);
    expect(String((refused[0] as Error).message)).toContain(MAX_INVOKES_PER_WAIT.toLocaleString('en-US'));
    expect(started).not.toContain(`parent.c${MAX_INVOKES_PER_WAIT}`);
  }, 60_000);
});

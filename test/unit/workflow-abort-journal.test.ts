/**
 * An aborted attempt's steps stop at once, even while their journal call hangs. A lost lease (or
 * a timeout) aborts `ctx.signal`, and the worker gives the handler one heartbeat interval to stop
 * before the lease runs out and another attempt may start. A journal read or write slowed by
 * DynamoDB retries must not hold the handler past that: the step's promise rejects with the
 * abort's reason, so a handler that awaits it ends, and no two executions of a job overlap.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../shared/core/clock';
import type { Journal } from '../../shared/core/journal';
import { LeaseLostError } from '../../shared/errors';
import { createWorkflow } from '../../shared/runtime/workflow';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');

/** A journal whose every call never settles: a request stuck in the SDK's retries. */
function hangingJournal(): Journal & { calls: string[] } {
  const calls: string[] = [];
  const hang = (name: string) => () => {
    calls.push(name);
    return new Promise<never>(() => {});
  };
  return {
    calls,
    get: hang('get'),
    load: hang('load'),
    record: hang('record'),
    signal: hang('signal'),
    deliver: hang('deliver'),
  };
}

/** How `call` stands once everything already queued has run: settled or still running. */
async function stateOf(call: Promise<unknown>): Promise<{ settled: false } | { settled: true; error: unknown }> {
  let state: { settled: false } | { settled: true; error: unknown } = { settled: false };
  call.then(
    () => {
      state = { settled: true, error: undefined };
    },
    (error: unknown) => {
      state = { settled: true, error };
    },
  );
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  return state;
}

function setUp(attempts: number) {
  const journal = hangingJournal();
  const controller = new AbortController();
  const workflow = createWorkflow({
    job: { id: 'j1', createdAt: new Date(T0).toISOString(), attempts, ...(attempts > 1 ? { retries: 0 } : {}) },
    journal,
    clock: new ManualClock(T0),
    signal: controller.signal,
    expiresAt: (now) => Math.floor(now / 1000) + 86_400,
  });
  const lost = new LeaseLostError('j1', 1);
  return { journal, controller, workflow, lost };
}

describe('an aborted attempt does not wait for a hanging journal call', () => {
  it("a step whose result's write hangs rejects with the abort's reason", async () => {
    const { journal, controller, workflow, lost } = setUp(1);
    const step = workflow.step('charge', () => 42);
    expect(await stateOf(step)).toEqual({ settled: false });
    expect(journal.calls).toEqual(['record']);
    controller.abort(lost);
    expect(await stateOf(step)).toEqual({ settled: true, error: lost });
    expect(await workflow.settle(0)).toBe(true);
  });

  it('a replayed step whose journal read hangs rejects with the abort reason, and its body never runs', async () => {
    const { journal, controller, workflow, lost } = setUp(2);
    let ran = 0;
    const step = workflow.step('charge', () => ++ran);
    expect(await stateOf(step)).toEqual({ settled: false });
    expect(journal.calls).toEqual(['load']);
    controller.abort(lost);
    expect(await stateOf(step)).toEqual({ settled: true, error: lost });
    expect(ran).toBe(0);
  });

  it("a sleep whose wake time's write hangs rejects with the abort's reason", async () => {
    const { journal, controller, workflow, lost } = setUp(1);
    const sleeping = workflow.sleep('cool-off', '1h');
    expect(await stateOf(sleeping)).toEqual({ settled: false });
    expect(journal.calls).toEqual(['record']);
    controller.abort(lost);
    expect(await stateOf(sleeping)).toEqual({ settled: true, error: lost });
  });

  it("a signal wait whose inbox read hangs rejects with the abort's reason", async () => {
    const { journal, controller, workflow, lost } = setUp(2);
    const waiting = workflow.waitForSignal('payment', { timeout: '1h' });
    expect(await stateOf(waiting)).toEqual({ settled: false });
    expect(journal.calls.length).toBeGreaterThan(0);
    controller.abort(lost);
    expect(await stateOf(waiting)).toEqual({ settled: true, error: lost });
  });
});

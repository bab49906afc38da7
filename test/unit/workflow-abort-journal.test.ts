/**
 * An aborted attempt's steps stop at once, even while their journal call hangs. A lost lease (or
 * a timeout) aborts `ctx.signal`, and the worker gives the handler one heartbeat interval to stop
 * before the lease runs out and another attempt may start. A journal read or write slowed by
 * DynamoDB retries must not hold the handler past that: the step's promise rejects with the
 * abort's reason, so a handler that awaits it ends, and no two executions of a job overlap.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../shared/core/clock';
import type { JobGraph } from '../../shared/core/dependencies';
import type { Journal } from '../../shared/core/journal';
import { LeaseLostError } from '../../shared/errors';
import { createWorkflow } from '../../shared/runtime/workflow';
import { sqsEvent } from '../support/fakes';
import { echoJob, harness, logged, messageFor } from './worker-harness';

const NOT_STOPPED = 'the handler did not stop within a heartbeat interval of its abort signal; pass ctx.signal on';

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

describe('in the worker: a handler that awaits a hanging journal or graph call stops at its abort', () => {
  it("a step whose result's write hangs: the attempt times out, and the handler stops within its interval", async () => {
    // lease 600 ms: a 200 ms heartbeat interval; the echo type's timeout is 1 s
    let ended = false;
    const h = harness({
      leaseMs: 600,
      run: async (_p, ctx) => {
        try {
          return await ctx.step('charge', () => 42);
        } finally {
          ended = true;
        }
      },
    });
    h.journal.record = () => new Promise<never>(() => {});
    h.store.seed(echoJob('job-1'));

    await h.worker(sqsEvent(messageFor('job-1')));

    expect(h.store.peek('job-1')?.errors[0]?.reason).toBe('timeout');
    expect(ended).toBe(true);
    expect(logged(h.logs, NOT_STOPPED)).toEqual([]);
  });

  it('ctx.parents() whose read hangs: the attempt times out, and the handler stops within its interval', async () => {
    let ended = false;
    const graph = {
      parents: () => new Promise<never>(() => {}),
      jobs: () => new Promise<never>(() => {}),
    } as unknown as JobGraph;
    const h = harness({
      leaseMs: 600,
      graph,
      run: async (_p, ctx) => {
        try {
          return await ctx.parents();
        } finally {
          ended = true;
        }
      },
    });
    h.store.seed(echoJob('job-1'));

    await h.worker(sqsEvent(messageFor('job-1')));

    expect(h.store.peek('job-1')?.errors[0]?.reason).toBe('timeout');
    expect(ended).toBe(true);
    expect(logged(h.logs, NOT_STOPPED)).toEqual([]);
  });
});

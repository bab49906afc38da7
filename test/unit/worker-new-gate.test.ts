/**
 * A new gate is one file and one line in the list (docs/architecture.md, "Where a new feature
 * goes"). The gate here, "refuse jobs whose payload has `hold: true`", lives in this test and
 * touches no file of the worker: the worker is built with the standard list plus it.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJobType } from '../../shared/core/job-type';
import { type GateBuilder, STANDARD_GATES } from '../../shared/runtime/gates';
import { GO } from '../../shared/runtime/gates/gate';
import { sqsEvent } from '../support/fakes';
import { echoJob, harness, logged, messageFor } from './worker-harness';

/** Holds a job whose payload says `hold: true`: it is not claimed, and waits for an operator's message. */
const holdGate: GateBuilder = () => ({
  name: 'hold',
  pass: (d) => ({
    async beforeClaim() {
      const job = await d.job();
      const held = (job?.payload as { hold?: unknown } | undefined)?.hold === true;
      return held ? { kind: 'wait', why: 'held: its payload says hold', fields: { by: 'hold' } } : GO;
    },
  }),
});

const holdable = defineJobType({
  type: 'echo',
  payload: z.object({ n: z.number(), tenant: z.string(), hold: z.optional(z.boolean()) }),
  timeoutMs: 1000,
  retry: { maxAttempts: 3, backoff: { kind: 'constant', delayMs: 2000 } },
  concurrency: [{ limit: 1, key: (p) => p.tenant }],
});

describe('a gate added to the list', () => {
  it('holds the job its rule refuses, unclaimed, and lets the others run', async () => {
    let runs = 0;
    const h = harness({
      spec: holdable,
      gates: [...STANDARD_GATES, holdGate],
      run: async () => {
        runs++;
        return 'ok';
      },
    });
    h.store.seed(echoJob('held', { payload: { n: 1, tenant: 't1', hold: true }, flowKeys: ['t1'] }));
    h.store.seed(echoJob('free', { payload: { n: 2, tenant: 't2' }, flowKeys: ['t2'] }));

    const response = await h.worker(sqsEvent(messageFor('held'), messageFor('free')));

    expect(response).toEqual({ batchItemFailures: [] });
    expect(h.store.peek('held')).toMatchObject({ state: 'queued', attempts: 0, leaseToken: 0 });
    expect(h.store.peek('free')).toMatchObject({ state: 'succeeded', attempts: 1 });
    expect(runs).toBe(1);
    expect(logged(h.logs, 'held: its payload says hold')).toEqual([
      expect.objectContaining({ jobId: 'held', by: 'hold' }),
    ]);
  });

  it('gives back what the gates before it took for the job it stops (its concurrency slot)', async () => {
    const h = harness({ spec: holdable, gates: [...STANDARD_GATES, holdGate] });
    h.store.seed(echoJob('held', { payload: { n: 1, tenant: 't1', hold: true }, flowKeys: ['t1'] }));
    h.store.seed(echoJob('next', { payload: { n: 2, tenant: 't1' }, flowKeys: ['t1'] }));

    await h.worker(sqsEvent(messageFor('held')));
    // the slot the held job took before the hold gate is free again: the next job of t1 runs
    expect(await h.flow.state({ scope: 'echo#0', key: 't1' })).toMatchObject({ holders: [], waiting: 0 });
    await h.worker(sqsEvent(messageFor('next')));
    expect(h.store.peek('next')).toMatchObject({ state: 'succeeded' });
  });

  it('gives back the slots of an attempt a later gate hands back after its claim', async () => {
    const handBack: GateBuilder = (kit) => ({
      name: 'hand-back',
      pass: () => ({
        async afterClaim() {
          return { kind: 'give-back', runAt: kit.clock.now() + 60_000, what: 'handing the attempt back' };
        },
      }),
    });
    const h = harness({ spec: holdable, gates: [...STANDARD_GATES, handBack] });
    h.store.seed(echoJob('back', { payload: { n: 1, tenant: 't1' }, flowKeys: ['t1'] }));

    expect(await h.worker(sqsEvent(messageFor('back')))).toEqual({ batchItemFailures: [] });

    // refunded, due again in a minute, and its slot free for the next job of t1
    expect(h.store.peek('back')).toMatchObject({ state: 'retrying', attempts: 0 });
    expect(await h.flow.state({ scope: 'echo#0', key: 't1' })).toMatchObject({ holders: [], waiting: 0 });
  });

  it('is not there without its line in the list: the held job runs', async () => {
    const h = harness({ spec: holdable });
    h.store.seed(echoJob('held', { payload: { n: 1, tenant: 't1', hold: true }, flowKeys: ['t1'] }));
    await h.worker(sqsEvent(messageFor('held')));
    expect(h.store.peek('held')).toMatchObject({ state: 'succeeded' });
  });
});

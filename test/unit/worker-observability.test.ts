import { describe, expect, it } from 'vitest';
import { METRIC } from '../../shared/core/metrics';
import { PermanentError } from '../../shared/errors';
import { CostMeter } from '../../shared/lambda/cost-meter';
import { sqsRecord } from '../support/fakes';
import { echoJob, harness, logged, messageFor, T0 } from './worker-harness';

const counts = (h: ReturnType<typeof harness>) =>
  Object.fromEntries(
    [METRIC.started, METRIC.succeeded, METRIC.failed, METRIC.retried, METRIC.deadLettered].map((name) => [
      name,
      h.metrics.sum(name, 'echo'),
    ]),
  );

describe('worker metrics', () => {
  it('a success: started, succeeded, its queue delay (due to start) and run duration, all of type echo', async () => {
    const h = harness({
      run: async (payload) => {
        h.clock.advance(250);
        return payload;
      },
    });
    h.store.seed(echoJob('job-1', { runAt: new Date(T0 - 1500).toISOString() }));
    await h.worker({ Records: [messageFor('job-1')] });
    expect(counts(h)).toEqual({ JobsStarted: 1, JobsSucceeded: 1, JobsFailed: 0, JobsRetried: 0, JobsDeadLettered: 0 });
    expect(h.metrics.values(METRIC.queueDelay)).toEqual([1500]);
    expect(h.metrics.values(METRIC.runDuration)).toEqual([250]);
    expect(new Set(h.metrics.recorded.map((m) => m.type))).toEqual(new Set(['echo']));
  });

  it('a failed attempt with attempts left is retried; the last one fails', async () => {
    const h = harness({
      run: async () => {
        throw new Error('nope');
      },
    });
    h.store.seed(echoJob('job-1', { maxAttempts: 2 }));
    await h.worker({ Records: [messageFor('job-1')] });
    expect(counts(h)).toMatchObject({ JobsStarted: 1, JobsRetried: 1, JobsFailed: 0 });
    h.clock.advance(2000);
    await h.worker({ Records: [messageFor('job-1', { receiveCount: 2 })] });
    expect(counts(h)).toMatchObject({ JobsStarted: 2, JobsRetried: 1, JobsFailed: 1, JobsSucceeded: 0 });
    expect(h.metrics.values(METRIC.runDuration)).toHaveLength(2);
  });

  it('a permanent error fails at once; a job that is not due starts nothing', async () => {
    const h = harness({
      run: async () => {
        throw new PermanentError('bad input');
      },
    });
    h.store.seed(echoJob('job-1'));
    h.store.seed(echoJob('later', { state: 'scheduled', runAt: new Date(T0 + 60_000).toISOString() }));
    await h.worker({ Records: [messageFor('job-1'), messageFor('later')] });
    expect(counts(h)).toMatchObject({ JobsStarted: 1, JobsFailed: 1, JobsRetried: 0 });
  });

  it('counts a message given back on its last receive as dead-lettered, and logs it with its job id', async () => {
    const h = harness({ maxReceiveCount: 5 });
    const bad = sqsRecord({ v: 1, id: 'job-x', type: 'other' }, { messageId: 'm-bad', receiveCount: 5 });
    const early = sqsRecord({ v: 1, id: 'job-y', type: 'other' }, { messageId: 'm-early', receiveCount: 4 });
    const out = await h.worker({ Records: [bad, early] });
    expect(out.batchItemFailures).toEqual([{ itemIdentifier: 'm-bad' }, { itemIdentifier: 'm-early' }]);
    expect(h.metrics.sum(METRIC.deadLettered, 'echo')).toBe(1);
    expect(logged(h.logs, 'the message had its last receive: SQS moves it to the dead-letter queue')).toEqual([
      expect.objectContaining({
        level: 'error',
        jobId: 'job-x',
        messageId: 'm-bad',
        receiveCount: 5,
        maxReceiveCount: 5,
      }),
    ]);
  });

  it('without a maxReceiveCount in its route, counts no dead letters', async () => {
    const h = harness();
    await h.worker({ Records: [sqsRecord('not json', { receiveCount: 1000 })] });
    expect(h.metrics.sum(METRIC.deadLettered)).toBe(0);
  });
});

describe('worker cost', () => {
  it("records the delivery's requests and write units on the job with its final write, and as metrics", async () => {
    const h = harness({ meter: new CostMeter() });
    h.store.seed(echoJob('job-1'));
    await h.worker({ Records: [messageFor('job-1')] });
    // claim + succeed, one request and one write unit each (the metered store); the final write
    // counts itself in what it records
    expect(h.store.peek('job-1')?.cost).toEqual({ requests: 2, writeUnits: 2 });
    expect(h.metrics.values(METRIC.requests, 'echo')).toEqual([2]);
    expect(h.metrics.values(METRIC.writeUnits, 'echo')).toEqual([2]);
  });

  it('sums the cost over the attempts, each delivery counted on its own (records of a batch apart)', async () => {
    let runs = 0;
    const h = harness({
      meter: new CostMeter(),
      run: async (payload) => {
        runs += 1;
        if (runs === 1) throw new Error('first time');
        return payload;
      },
    });
    h.store.seed(echoJob('job-1'));
    h.store.seed(echoJob('job-2'));
    await h.worker({ Records: [messageFor('job-1'), messageFor('job-2')] });
    // job-1: claim, retry (its error item counted by the store): 1 + 2 requests
    expect(h.store.peek('job-1')?.cost).toEqual({ requests: 3, writeUnits: 3 });
    expect(h.store.peek('job-2')?.cost).toEqual({ requests: 2, writeUnits: 2 });
    h.clock.advance(2000);
    await h.worker({ Records: [messageFor('job-1', { receiveCount: 2 })] });
    expect(h.store.peek('job-1')?.cost).toEqual({ requests: 5, writeUnits: 5 });
    expect(h.metrics.sum(METRIC.requests, 'echo')).toBe(2 + 2 + 2);
  });

  it('records no cost without a meter', async () => {
    const h = harness();
    h.store.seed(echoJob('job-1'));
    await h.worker({ Records: [messageFor('job-1')] });
    expect(h.store.peek('job-1')?.state).toBe('succeeded');
    expect(h.store.peek('job-1')?.cost).toBeUndefined();
    expect(h.metrics.values(METRIC.requests)).toEqual([]);
  });
});

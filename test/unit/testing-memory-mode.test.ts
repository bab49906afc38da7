/**
 * The testing kit's in-memory mode end to end, as an app's tests would use it: job types defined
 * with `defineJobType`/`defineJob`, `createTestPlatform({ mode: 'memory' })`, and the typed client
 * over HTTP. The production API and worker run on the contract-tested fakes; time is a
 * ManualClock that the tests move (a retry's backoff, a day's sleep, a timeout). The same job
 * types run on local AWS in test/integration/testing-local-aws.test.ts.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../shared/core/clock';
import { createTestPlatform, type TestPlatform } from '../local-aws/testing';
import { counters, DAY, jobs, specs } from '../support/testing-kit-jobs';

let platform: TestPlatform;
let clock: ManualClock;

beforeEach(async () => {
  counters.charges = 0;
  clock = new ManualClock(Date.parse('2026-06-01T09:00:00.000Z'));
  platform = await createTestPlatform({
    jobs,
    mode: 'memory',
    clock,
    logLevel: 'silent',
    worker: { random: () => 0.5 },
  });
});

afterEach(async () => {
  await platform.stop();
});

describe('the in-memory mode, through the typed client', () => {
  it('runs an enqueued job to success', async () => {
    const orrery = platform.client(specs);
    const { created, job } = await orrery.enqueue('greet', { name: 'Ada' });
    expect(created).toBe(true);

    await platform.runUntilIdle();

    const done = await orrery.get(job.id);
    expect(done).toMatchObject({ state: 'succeeded', attempts: 1, result: { hello: 'Ada' } });
  });

  it('retries a failed attempt after its backoff, when the clock gets there', async () => {
    const orrery = platform.client(specs);
    const { job } = await orrery.enqueue('flaky', { failures: 1 });

    await platform.runUntilIdle();
    const retrying = await orrery.get(job.id);
    expect(retrying).toMatchObject({ state: 'retrying', attempts: 1, lastError: { message: 'attempt 1 fails' } });
    expect(Date.parse(retrying.runAt) - clock.now()).toBe(2_000);

    await platform.advance(1_999);
    expect((await orrery.get(job.id)).state).toBe('retrying');
    await platform.advance(1);
    expect(await orrery.get(job.id)).toMatchObject({ state: 'succeeded', attempts: 2, result: { attempt: 2 } });
  });

  it('runs a workflow: a step, a day of sleep in a few milliseconds, then a signal', async () => {
    const orrery = platform.client(specs);
    const { job } = await orrery.enqueue('order', { orderId: 'o-1' });

    await platform.runUntilIdle();
    expect(await orrery.get(job.id)).toMatchObject({
      state: 'waiting',
      waitingFor: { kind: 'sleep', key: 'cool-off' },
    });
    // recorded at one clock time: by kind and name
    expect((await platform.steps(job.id)).map(({ kind, name }) => `${kind} ${name}`)).toEqual([
      'sleep cool-off',
      'step charge',
    ]);

    await platform.advance(DAY);
    const waiting = await orrery.get(job.id);
    expect(waiting).toMatchObject({ state: 'waiting', waitingFor: { kind: 'signal', key: 'shipped' } });

    const receipt = await orrery.signal(job.id, 'shipped', { carrier: 'dhl' });
    expect(receipt).toMatchObject({ resumed: true, late: false });
    await platform.runUntilIdle();

    expect(await orrery.get(job.id)).toMatchObject({
      state: 'succeeded',
      result: { chargeId: 'ch-o-1', carrier: 'dhl' },
    });
    expect(counters.charges).toBe(1); // replayed twice, charged once
    // by time, then by kind and name: the sleep and the step were recorded at one clock time, and
    // so were the signal wait's deadline (`wait`, 7 days on) and its outcome (`signal`)
    expect(await platform.steps(job.id)).toMatchObject([
      { kind: 'sleep', name: 'cool-off', value: clock.now() },
      { kind: 'step', name: 'charge', value: { chargeId: 'ch-o-1' } },
      {
        kind: 'signal',
        name: 'shipped',
        value: { received: new Date(clock.now()).toISOString() },
        payload: { carrier: 'dhl' },
      },
      { kind: 'wait', name: 'shipped', value: clock.now() + 7 * DAY },
    ]);
  });

  it('starts a job that depends on another once its parent succeeded, with the parent’s result', async () => {
    const orrery = platform.client(specs);
    const { job: parent } = await orrery.enqueue('greet', { name: 'Grace' });
    const { job: child } = await orrery.enqueue('report', {}, { dependsOn: [parent.id] });

    await platform.runUntilIdle();

    expect(await orrery.get(child.id)).toMatchObject({
      state: 'succeeded',
      result: { parents: { [parent.id]: { state: 'succeeded', result: { hello: 'Grace' } } } },
    });
    expect(Date.parse((await orrery.get(child.id)).startedAt ?? '')).toBeGreaterThanOrEqual(
      Date.parse((await orrery.get(parent.id)).finishedAt ?? ''),
    );
  });

  it('fails an attempt that runs past its timeout when the clock passes it', async () => {
    const orrery = platform.client(specs);
    const { job } = await orrery.enqueue('hang', {});

    await platform.advance(4_999);
    expect((await orrery.get(job.id)).state).toBe('running');
    await platform.advance(1);

    expect(await orrery.get(job.id)).toMatchObject({
      state: 'failed',
      attempts: 1,
      lastError: { reason: 'timeout', name: 'JobTimeoutError' },
    });
  });
});

/**
 * `createTestPlatform({ mode: 'local-aws' })`: the job types of the in-memory tests
 * (test/unit/testing-memory-mode.test.ts) on DynamoDB Local, fauxqs and the Scheduler stand-in,
 * through the same test-platform calls: the typed client, `runUntilIdle`, `advance` on a
 * ManualClock (a day's sleep goes through Scheduler, whose stand-in follows the clock) and
 * `steps`, which reads the journal from DynamoDB here.
 */
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { ManualClock } from '../../shared/core/clock';
import { startLocalAws } from '../local-aws';
import type { LocalAws } from '../local-aws/index';
import { createTestPlatform, type TestPlatform } from '../local-aws/testing';
import { counters, DAY, jobs, specs } from '../support/testing-kit-jobs';

const clock = new ManualClock();
let aws: LocalAws;
let platform: TestPlatform;

beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint'), clock });
  platform = await createTestPlatform({ jobs, mode: 'local-aws', aws, clock, logLevel: 'silent' });
});

afterAll(async () => {
  await platform?.stop();
  await aws?.stop();
});

it('runs an enqueued job, and one that depends on it with its result', async () => {
  const orrery = platform.client(specs);
  const { job: parent } = await orrery.enqueue('greet', { name: 'Grace' });
  const { job: child } = await orrery.enqueue('report', {}, { dependsOn: [parent.id] });

  await platform.runUntilIdle();

  expect(await orrery.get(parent.id)).toMatchObject({ state: 'succeeded', result: { hello: 'Grace' } });
  expect(await orrery.get(child.id)).toMatchObject({
    state: 'succeeded',
    result: { parents: { [parent.id]: { state: 'succeeded', result: { hello: 'Grace' } } } },
  });
});

it('runs a workflow: a step, a day of sleep on the ManualClock, then a signal', async () => {
  counters.charges = 0;
  const orrery = platform.client(specs);
  const { job } = await orrery.enqueue('order', { orderId: 'o-2' });

  await platform.runUntilIdle();
  expect(await orrery.get(job.id)).toMatchObject({ state: 'waiting', waitingFor: { kind: 'sleep', key: 'cool-off' } });

  await platform.advance(DAY);
  expect(await orrery.get(job.id)).toMatchObject({ state: 'waiting', waitingFor: { kind: 'signal', key: 'shipped' } });

  await orrery.signal(job.id, 'shipped', { carrier: 'ups' });
  await platform.runUntilIdle();

  expect(await orrery.get(job.id)).toMatchObject({
    state: 'succeeded',
    result: { chargeId: 'ch-o-2', carrier: 'ups' },
  });
  expect(counters.charges).toBe(1);
  // by time, then by kind and name: the sleep and the step were recorded at one clock time, and
  // so were the signal wait's deadline (`wait`, 7 days on) and its outcome (`signal`)
  expect(await platform.steps(job.id)).toMatchObject([
    { kind: 'sleep', name: 'cool-off', value: clock.now() },
    { kind: 'step', name: 'charge', value: { chargeId: 'ch-o-2' } },
    {
      kind: 'signal',
      name: 'shipped',
      value: { received: new Date(clock.now()).toISOString() },
      payload: { carrier: 'ups' },
    },
    { kind: 'wait', name: 'shipped', value: clock.now() + 7 * DAY },
  ]);
});

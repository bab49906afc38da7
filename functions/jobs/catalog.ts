/**
 * The job types this deployment knows, schema only (no handler code), so the enqueue API
 * can validate payloads at enqueue time with a small bundle. Each handler file under
 * `functions/jobs/` imports its spec from here. The schemas use `zod/mini`: every worker loads
 * them all, and full `zod` would add a good part to its cold start (either flavour works).
 */
import * as z from 'zod/mini';
import { defineEvent, subscribe } from '../../shared/core/events';
import { defineJobType } from '../../shared/core/job-type';

/** `echo`: any JSON object; the result is the payload. */
export const echoJob = defineJobType({
  type: 'echo',
  payload: z.record(z.string(), z.unknown()),
  timeoutMs: 10_000,
});

/** `flaky`: fails its first `failTimes` attempts, then succeeds. */
export const flakyJob = defineJobType({
  type: 'flaky',
  payload: z.strictObject({ failTimes: z.int().check(z.minimum(0), z.maximum(100)) }),
  timeoutMs: 10_000,
  retry: { maxAttempts: 5, backoff: { kind: 'constant', delayMs: 1000 } },
});

/** `sleep`: waits `ms` milliseconds, honouring its abort signal. */
export const sleepJob = defineJobType({
  type: 'sleep',
  payload: z.strictObject({ ms: z.int().check(z.minimum(0), z.maximum(800_000)) }),
  timeoutMs: 60_000,
});

/**
 * `tenant-sync`: syncs one tenant's data (here: waits `ms`). At most 2 run at once per tenant, and
 * 8 in all, shared fairly between the tenants that wait: a freed place goes to the tenant running
 * fewest (by weight), so one tenant's backlog, however large, does not hold the others up. The
 * rest wait their turn without polling, the higher `priority` first within a tenant (0–10; the
 * oldest first within one).
 */
export const tenantSyncJob = defineJobType({
  type: 'tenant-sync',
  payload: z.strictObject({ tenantId: z.string(), ms: z.optional(z.int().check(z.minimum(0), z.maximum(50_000))) }),
  timeoutMs: 60_000,
  concurrency: [
    { limit: 2, key: (p) => p.tenantId },
    { limit: 8, fairBy: (p) => p.tenantId },
  ],
  priority: { default: 0, agingSeconds: 30 },
});

/** `api-call`: calls a downstream API at most 5 times a second per API key (bursts of 5); the excess waits. */
export const apiCallJob = defineJobType({
  type: 'api-call',
  payload: z.strictObject({ apiKey: z.string(), path: z.string() }),
  timeoutMs: 10_000,
  throttle: { limit: 5, periodSeconds: 1, burst: 5, key: (p) => p.apiKey },
});

/**
 * `user.signed-up`: sent once per new user (`POST /events`); `welcome-email` and `account-sync`
 * each get one job of it (docs/events.md).
 */
export const userSignedUpEvent = defineEvent(
  'user.signed-up',
  z.strictObject({ userId: z.string(), email: z.string() }),
);

/**
 * `account-sync`: one sync per account at a time; a newer request cancels the running one (its
 * handler's signal aborts) and starts once it has stopped.
 */
export const accountSyncJob = defineJobType({
  type: 'account-sync',
  payload: z.strictObject({ accountId: z.string(), ms: z.optional(z.int().check(z.minimum(0), z.maximum(50_000))) }),
  timeoutMs: 60_000,
  retry: { maxAttempts: 1 },
  singleton: { key: (p) => p.accountId, mode: 'cancel-running' },
  on: [subscribe(userSignedUpEvent, { payload: (d) => ({ accountId: d.userId }) })],
});

/** `welcome-email`: at most one per user per hour; repeats are written as `skipped` and never sent. */
export const welcomeEmailJob = defineJobType({
  type: 'welcome-email',
  payload: z.strictObject({ userId: z.string(), to: z.string() }),
  timeoutMs: 10_000,
  rateLimit: { limit: 1, periodSeconds: 3600, key: (p) => p.userId },
  on: [subscribe(userSignedUpEvent, { payload: (d) => ({ userId: d.userId, to: d.email }) })],
});

/** `reindex`: rebuilds a catalog's search index once its changes have stopped for 5 s (at least every minute). */
export const reindexJob = defineJobType({
  type: 'reindex',
  payload: z.strictObject({ catalogId: z.string(), change: z.optional(z.string()) }),
  timeoutMs: 30_000,
  debounce: { key: (p) => p.catalogId, periodSeconds: 5, maxWaitSeconds: 60 },
});

/**
 * `fulfil-order`: a durable workflow (docs/workflows.md): reserves each item (a step each), waits
 * for the `payment` signal (up to an hour), sleeps through a short cooling-off period, then ships.
 * A retry or a resumption replays the steps already recorded instead of running them again.
 */
export const fulfilOrderJob = defineJobType({
  type: 'fulfil-order',
  payload: z.strictObject({
    orderId: z.string(),
    items: z.array(z.string()).check(z.minLength(1), z.maxLength(50)),
    coolingOffSeconds: z.optional(z.int().check(z.minimum(0), z.maximum(86_400))),
  }),
  timeoutMs: 30_000,
  signals: { payment: z.strictObject({ amount: z.number(), reference: z.string() }) },
});

/** `pack-item`: packs one item of an order (a child of the order's `fulfil-order` job in its flow). */
export const packItemJob = defineJobType({
  type: 'pack-item',
  payload: z.strictObject({ orderId: z.string(), item: z.string() }),
  timeoutMs: 10_000,
});

/** `ship-order`: ships an order once every item is packed (the join of the order's flow: `dependsOn` each `pack-item`). */
export const shipOrderJob = defineJobType({
  type: 'ship-order',
  payload: z.strictObject({ orderId: z.string() }),
  timeoutMs: 10_000,
});

/**
 * `quote-order`: prices an order by invoking one `price-item` job per item (`ctx.invoke`, all in one
 * `Promise.all`: the attempt ends once, and the job resumes once, after the last item is priced),
 * then adds up their results (docs/workflows.md, "Invoke").
 */
export const quoteOrderJob = defineJobType({
  type: 'quote-order',
  payload: z.strictObject({ orderId: z.string(), items: z.array(z.string()).check(z.minLength(1), z.maxLength(50)) }),
  timeoutMs: 30_000,
});

/** `price-item`: prices one item (a deterministic made-up price); `quote-order` invokes it. */
export const priceItemJob = defineJobType({
  type: 'price-item',
  payload: z.strictObject({ orderId: z.string(), item: z.string() }),
  timeoutMs: 10_000,
});

/**
 * `parcel.shipped`: sent by a `ship-parcel` job (`ctx.emit`); an `await-parcel` job of the same
 * order waits for it, matched on `orderId` (docs/workflows.md, "Events: ctx.emit and ctx.waitForEvent").
 */
export const parcelShippedEvent = defineEvent(
  'parcel.shipped',
  z.strictObject({ orderId: z.string(), trackingId: z.string() }),
  { matchOn: ['orderId'] },
);

/** `await-parcel`: waits (up to an hour, no Lambda running) for the `parcel.shipped` event of its order. */
export const awaitParcelJob = defineJobType({
  type: 'await-parcel',
  payload: z.strictObject({ orderId: z.string() }),
  timeoutMs: 10_000,
  waitsFor: [parcelShippedEvent],
});

/** `ship-parcel`: ships an order's parcel and announces it with the `parcel.shipped` event (`ctx.emit`). */
export const shipParcelJob = defineJobType({
  type: 'ship-parcel',
  payload: z.strictObject({ orderId: z.string() }),
  timeoutMs: 10_000,
});

/**
 * `send-receipt`: a batch type (`defineBatchJob`): its handler gets up to 10 receipts per call,
 * gathered for up to 2 s, and answers one outcome per receipt; each keeps its own attempts.
 */
export const sendReceiptJob = defineJobType({
  type: 'send-receipt',
  payload: z.strictObject({ orderId: z.string(), email: z.string() }),
  timeoutMs: 10_000,
  batch: { maxSize: 10, maxWaitSeconds: 2 },
});

export const catalog = [
  echoJob,
  flakyJob,
  sleepJob,
  tenantSyncJob,
  apiCallJob,
  accountSyncJob,
  welcomeEmailJob,
  reindexJob,
  fulfilOrderJob,
  packItemJob,
  shipOrderJob,
  quoteOrderJob,
  priceItemJob,
  awaitParcelJob,
  shipParcelJob,
  sendReceiptJob,
] as const;

/**
 * `orrery-jobs/runtime`: what job handler files and the enqueue API's entry import. A spec
 * ({@link defineJobType}) goes in a module without handler code, so the API bundles only the
 * specs; a handler file binds its spec to a function with {@link defineJob} and exports the
 * result's `handler` as its Lambda entry.
 *
 * @example
 * // jobs/catalog.ts
 * import * as z from 'zod/mini';
 * import { defineJobType } from 'orrery-jobs/runtime';
 * export const invoiceJob = defineJobType({ type: 'invoice', payload: z.object({ orderId: z.string() }) });
 * export const catalog = [invoiceJob] as const;
 *
 * // jobs/invoice.ts (a worker's entry)
 * import { defineJob, PermanentError } from 'orrery-jobs/runtime';
 * export const invoice = defineJob(invoiceJob, async ({ orderId }, ctx) => ({ orderId }));
 * export const handler = invoice.handler;
 *
 * // jobs/api.ts (the enqueue API's entry, `apiEntry` of the JobPlatform)
 * import { createLambdaApiHandler } from 'orrery-jobs/runtime';
 * export const handler = createLambdaApiHandler(catalog);
 *
 * @module
 */
export { eventsFrom } from '../api/events-from';
export { createLambdaApiHandler } from '../api/lambda';
export type { Backoff, BackoffInput, RetryPolicy } from '../core/backoff';
export { type BatchOptions, MAX_BATCH_SIZE, MAX_BATCH_WAIT_SECONDS } from '../core/batch';
export type { DebounceOptions } from '../core/debounce';
export {
  defineEvent,
  type EventDataSchema,
  type EventDefinition,
  type Subscription,
  subscribe,
} from '../core/events';
export type { ConcurrencyLimit, SingletonMode, SingletonOptions } from '../core/flow';
export type { AttemptError } from '../core/job';
export {
  defineJobType,
  type JobTypeOptions as DefineJobTypeOptions,
  type JobTypeSpec,
  type PayloadSchema,
  type SignalSchemas,
} from '../core/job-type';
export type { RateLimitOptions, ThrottleOptions } from '../core/pace';
export * from '../errors';
export type { Logger, LogLevel } from '../logger';
export type {
  BatchContext,
  BatchHandler,
  BatchItem,
  BatchJobDefinition,
  BatchOutcome,
} from '../runtime/batch-worker';
export { codeVersionOf } from '../runtime/code-version';
export { defineBatchJob } from '../runtime/define-batch-job';
export { defineJob, type LambdaSqsHandler } from '../runtime/define-job';
export type {
  EventSenderFactory,
  FailureInfo,
  JobContext,
  JobDefinition,
  JobHandler,
  JobOptions,
} from '../runtime/job-definition';
export {
  type ReceivedEvent,
  type SignalWait,
  Suspension,
  type WaitForEventOptions,
  type WaitForSignalOptions,
} from '../runtime/workflow';

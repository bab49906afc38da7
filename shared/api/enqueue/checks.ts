/**
 * The checks of an enqueue request that read and write nothing: its type, payload, keys,
 * priority, times and the form of its `dependsOn`. Each throws the 400 (or 413) an enqueue answers.
 */

import { MAX_BLOB_BYTES } from '../../core/blobs';
import { resolveDebounceKey } from '../../core/debounce';
import { parentEdges } from '../../core/dependencies';
import { type EnqueueRequest, jsonBytes, MAX_PAYLOAD_BYTES, planEnqueue } from '../../core/enqueue';
import { isEventJobId } from '../../core/events';
import { resolveFlowKeys, resolveSingletonKey } from '../../core/flow';
import type { JobTypeSpec } from '../../core/job-type';
import { resolvePaceKey } from '../../core/pace';
import { payloadHash } from '../../core/payload-hash';
import { resolvePriority } from '../../core/priority';
import { checkDispatchBy } from '../../core/scheduling';
import { parseOrThrow } from '../../core/validation';
import { PayloadTooLargeError, ValidationError } from '../../errors';
import type { EnqueueContext } from './deps';

/** Types that are both in the catalog and deployed (have a route). */
export function deployedTypes({ deps, specs }: EnqueueContext): string[] {
  return [...specs.keys()].filter((type) => deps.config.routes[type]).sort();
}

/**
 * A request's job type (deployed), payload (its schema, its size), the keys it resolves to, and
 * its priority (the request's, else the type's default; none for a type without the option).
 */
export function checkRequest(ctx: EnqueueContext, request: EnqueueRequest) {
  const spec = ctx.specs.get(request.type);
  const route = ctx.deps.config.routes[request.type];
  if (!spec || !route) {
    throw new ValidationError(
      `unknown job type "${request.type}"`,
      [{ path: 'type', message: `must be one of: ${deployedTypes(ctx).join(', ')}` }],
      'unknown_type',
    );
  }
  const size = jsonBytes(request.payload);
  // with a payload bucket, a larger payload is kept there (./payload-ref.ts)
  const limit = ctx.deps.blobs ? MAX_BLOB_BYTES : MAX_PAYLOAD_BYTES;
  if (size > limit) {
    throw new PayloadTooLargeError(
      ctx.deps.blobs
        ? `payload is ${size} bytes of JSON; the limit is ${limit} bytes`
        : `payload is ${size} bytes of JSON; the limit is ${limit} bytes (it is stored in the job's DynamoDB item)`,
      limit,
    );
  }
  const payload = parseOrThrow(spec.payload, request.payload, {
    message: `payload does not match the ${spec.type} schema`,
    code: 'invalid_payload',
    prefix: 'payload',
  });
  return {
    spec,
    payload,
    ...keysOf(spec, request, payload),
    priority: resolvePriority(spec.priority, request.priority),
  };
}

/**
 * The concurrency, singleton and throttle keys of a request's job (refused for a type without
 * them); its rate-limit and debounce keys are checked too.
 */
function keysOf(spec: JobTypeSpec, request: EnqueueRequest, payload: unknown) {
  if (request.concurrencyKey !== undefined && !spec.concurrency?.some((l) => l.key)) {
    throw new ValidationError(
      `job type "${spec.type}" has no keyed concurrency limit`,
      [{ path: 'concurrencyKey', message: 'only for a job type with a concurrency limit that has a key' }],
      'invalid_concurrency_key',
    );
  }
  const flowKeys = spec.concurrency ? resolveFlowKeys(spec.concurrency, payload, request.concurrencyKey) : undefined;
  if (request.singletonKey !== undefined && !spec.singleton) {
    throw new ValidationError(
      `job type "${spec.type}" has no singleton`,
      [{ path: 'singletonKey', message: 'only for a job type with a singleton' }],
      'invalid_singleton_key',
    );
  }
  const singletonKey = spec.singleton ? resolveSingletonKey(spec.singleton, payload, request.singletonKey) : undefined;
  const throttleKey = spec.throttle ? resolvePaceKey(spec.throttle, payload, 'throttle') : undefined;
  // the rate limit's and the debounce's keys are resolved again where they are spent; here, so a
  // key the payload cannot give is refused before anything is written (a flow's, an event's jobs)
  if (spec.rateLimit) resolvePaceKey(spec.rateLimit, payload, 'rateLimit');
  if (spec.debounce) resolveDebounceKey(spec.debounce, payload);
  return { flowKeys, singletonKey, throttleKey };
}

/**
 * An id of the shape of an event's job id (`ev.` and 40 hex digits) is the events' own: only the
 * jobs `POST /events` makes may carry one (400 `reserved_id`), so no caller can take an event's
 * job before the event comes, or list under it a job no event made.
 */
export function refuseEventJobId(request: EnqueueRequest, fromEvent: boolean | undefined): void {
  if (fromEvent || request.id === undefined || !isEventJobId(request.id)) return;
  throw new ValidationError(
    `job id ${request.id} has the shape of the jobs events make (ev. and 40 hex digits)`,
    [{ path: 'id', message: 'is reserved for the jobs POST /events makes' }],
    'reserved_id',
  );
}

/** A debounced type's jobs start when their key has been quiet: a delay is refused (400). */
export function refuseDebouncedDelay(spec: JobTypeSpec, request: EnqueueRequest): void {
  for (const field of ['delaySeconds', 'runAt'] as const) {
    if (request[field] !== undefined) {
      throw new ValidationError(
        `job type "${spec.type}" is debounced: its jobs start when their key has been quiet`,
        [{ path: field, message: 'not allowed for a debounced job type' }],
        'debounced_type',
      );
    }
  }
}

/** A type whose runs a debounce or a rate limit decides cannot wait for parents (400). */
export function refuseParentsOf(spec: JobTypeSpec): void {
  if (spec.debounce || spec.rateLimit) {
    throw new ValidationError(
      `job type "${spec.type}" has a ${spec.debounce ? 'debounce' : 'rate limit'}: its jobs cannot wait for parents`,
      [{ path: 'dependsOn', message: 'not allowed for this job type' }],
      'dependencies_unsupported',
    );
  }
}

/**
 * Every check of an enqueue request that writes nothing and reads nothing (type, payload, keys,
 * priority, times, the form of `dependsOn`): what `POST /flows` runs on every node before it writes any.
 * A type with a debounce or a rate limit is refused when the request has parents. Returns the
 * hash a job of this request would carry (to tell a replay from an id conflict); the issues of
 * a refusal are named under `path`.
 */
export function validateRequest(
  ctx: EnqueueContext,
  request: EnqueueRequest,
  path: string,
  options: { fromEvent?: boolean } = {},
): { payloadHash: string } {
  try {
    refuseEventJobId(request, options.fromEvent);
    const { spec, payload } = checkRequest(ctx, request);
    if (spec.debounce) refuseDebouncedDelay(spec, request);
    const now = ctx.deps.clock.now();
    const plan = planEnqueue(request, now);
    if (request.dispatchBy !== undefined) checkDispatchBy(request.dispatchBy, plan.runAt, now);
    if (request.dependsOn) {
      refuseParentsOf(spec);
      parentEdges(request.dependsOn, request.id);
    }
    return { payloadHash: payloadHash(spec.type, payload) };
  } catch (error) {
    if (error instanceof ValidationError) throw prefixed(error, path);
    throw error;
  }
}

/** `error` with each issue's path under `prefix` (e.g. `jobs.3`). */
function prefixed(error: ValidationError, prefix: string): ValidationError {
  return new ValidationError(
    error.message,
    (error.issues ?? []).map((issue) => ({ ...issue, path: issue.path ? `${prefix}.${issue.path}` : prefix })),
    error.code,
  );
}

/** A rate-limited type's verdict on a new job: one start counted, or skipped over its rate. */
import type { EnqueueRequest } from '../../core/enqueue';
import type { SkipReason } from '../../core/job';
import type { JobTypeSpec } from '../../core/job-type';
import { paceScope, rateLimitPace, resolvePaceKey } from '../../core/pace';
import { type EnqueueContext, exists } from './deps';

/**
 * Undefined when the new job is accepted (one start counted), or why it is skipped. A replay of
 * a job id that exists already counts nothing (a read first, only when the caller names the id).
 */
export async function rateLimited(
  ctx: EnqueueContext,
  spec: JobTypeSpec,
  request: EnqueueRequest,
  payload: unknown,
  now: number,
): Promise<SkipReason | undefined> {
  const { rateLimit } = spec;
  const pacer = ctx.deps.pacer;
  if (!rateLimit || !pacer) return undefined;
  const key = resolvePaceKey(rateLimit, payload, 'rateLimit');
  if (request.id !== undefined && (await exists(ctx, request.id, now))) return undefined;
  const ok = await pacer.tryStart({
    scope: paceScope(spec.type, 'rateLimit'),
    key,
    now,
    pace: rateLimitPace(rateLimit),
  });
  return ok ? undefined : { kind: 'rate-limit', key, at: new Date(now).toISOString() };
}

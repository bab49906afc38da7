import type { SQSRecord } from 'aws-lambda';
import { isFireMessage } from '../../core/fire-message';
import type { JobMessage } from '../../core/job';
import * as z from '../../core/zod-mini';
import { dispatchNow } from '../../dispatch/dispatch';
import { errorFields } from '../../logger';
import { resolveFire } from '../fire';
import type { Outcome } from '../gates/gate';
import type { WorkerKit } from './kit';

const messageSchema = z.object({
  v: z.literal(1),
  id: z.string().check(z.minLength(1)),
  type: z.string().check(z.minLength(1)),
  after: z.optional(z.string().check(z.minLength(1))),
  notBefore: z.optional(z.iso.datetime()),
});

/** A record read: the job message it carries, or what to answer for it at once. */
export type Parsed = { kind: 'job'; message: JobMessage } | { kind: 'answer'; outcome: Outcome };

/**
 * Reads a record of the type's queue: a job message, or a recurring schedule's fire message
 * resolved into its run's job message (see ../fire.ts). A malformed or misrouted message is left
 * for the DLQ.
 */
export async function parseRecord(kit: WorkerKit, record: SQSRecord): Promise<Parsed> {
  const { deps, type, route } = kit;
  let body: unknown;
  try {
    body = JSON.parse(record.body);
  } catch {
    body = undefined;
  }
  if (isFireMessage(body)) {
    const fired = await resolveFire({
      body,
      record,
      type,
      jobs: deps.store,
      schedules: deps.schedules,
      send: async (message) => {
        await dispatchNow(kit.handOff, message, kit.clock.now());
      },
      retentionMs: deps.config.retentionDays * 86_400_000,
      now: kit.clock.now(),
      log: kit.log,
    });
    if (fired.kind === 'settled') {
      if (fired.comeBackSeconds !== undefined) {
        await deps.queue
          .changeVisibility(route.queueUrl, record.receiptHandle, fired.comeBackSeconds)
          .catch((error: unknown) => kit.log.warn('could not bring the fire back soon', errorFields(error)));
      }
      return { kind: 'answer', outcome: fired.outcome };
    }
    body = fired.message;
  }
  const message = messageSchema.safeParse(body);
  if (!message.success || message.data.type !== type) {
    kit.log.error('malformed or misrouted message; leaving it for the DLQ', {
      messageId: record.messageId,
      receiveCount: receiveCountOf(record),
      reason: message.success ? `type ${message.data.type} on the ${type} queue` : 'not a job message',
    });
    return { kind: 'answer', outcome: 'retry' };
  }
  return { kind: 'job', message: message.data as JobMessage };
}

/** How many times SQS has delivered the record (1 on its first receive). */
export function receiveCountOf(record: SQSRecord): number {
  return Number(record.attributes?.ApproximateReceiveCount ?? '1');
}

/** `{ jobId }` of a job message, for a log line about the message; empty when the body names none. */
export function jobIdOf(record: SQSRecord): { jobId?: string } {
  try {
    const id = (JSON.parse(record.body) as { id?: unknown } | null)?.id;
    return typeof id === 'string' ? { jobId: id } : {};
  } catch {
    return {};
  }
}

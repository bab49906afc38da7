/**
 * The contract of {@link JobQueue}'s sends, run against the in-memory fake
 * (test/unit/contract-fakes.test.ts), SqsJobQueue on fauxqs (test/integration/job-queue-groups.test.ts)
 * and SqsJobQueue on moto server (test/moto/job-queue-groups.test.ts): what is sent comes back as
 * sent, and a message's group (its `MessageGroupId`, for SQS fair queues) is accepted on a
 * standard queue, by SendMessage and by every SendMessageBatch entry.
 *
 * Whether the group comes back on receive is what the implementations differ in, so each leg
 * says what its queue does (`groups`): SQS and moto 5.2.1 keep it, fauxqs 2.4.1 drops it. None
 * of them shows fair delivery itself (no emulator reorders by group): that is only seen on AWS.
 */
import { describe, expect, it } from 'vitest';
import type { JobMessage } from '../../shared/core/job';
import type { JobQueue } from '../../shared/core/ports';

/** A message as a consumer receives it: its body and, when the queue returns one, its group. */
export interface ReceivedMessage {
  message: JobMessage;
  groupId?: string | undefined;
}

export interface JobQueueLeg {
  queue: JobQueue;
  /** A new, empty standard queue of the leg's own: its URL. */
  newQueue(): Promise<string>;
  /** Receives `count` messages of the queue (each once), asking for their group. */
  receive(queueUrl: string, count: number): Promise<ReceivedMessage[]>;
  /** What the queue does with a standard-queue message's group: keeps and returns it, or drops it. */
  groups: 'kept' | 'dropped';
}

const message = (id: string): JobMessage => ({ v: 1, id, type: 'tenant-sync' });

export function jobQueueContract(leg: () => Promise<JobQueueLeg>): void {
  describe('job queue', () => {
    it('sends one message, and a batch, whose bodies come back as sent', async () => {
      const { queue, newQueue, receive } = await leg();
      const url = await newQueue();
      await queue.send(url, message('one'));
      const outcomes = await queue.sendBatch(url, [
        { message: message('b1') },
        { message: { ...message('b2'), after: 'one' } },
      ]);
      expect(outcomes).toEqual([{ sent: true }, { sent: true }]);
      const got = await receive(url, 3);
      expect(got.map((m) => m.message).sort((a, b) => a.id.localeCompare(b.id))).toEqual([
        { ...message('b1') },
        { ...message('b2'), after: 'one' },
        { ...message('one') },
      ]);
    });

    it('takes a message group on a send and on each batch entry, a plain one and a hashed one, with a delay too', async () => {
      const { queue, newQueue, receive, groups } = await leg();
      const url = await newQueue();
      const hashed = `tenant-sync#${'A'.repeat(42)}_`;
      await queue.send(url, message('g1'), 1, 'tenant-sync:acme');
      const outcomes = await queue.sendBatch(url, [
        { message: message('g2'), groupId: 'tenant-sync:globex', delaySeconds: 1 },
        { message: message('g3'), groupId: hashed },
        { message: message('g4') },
      ]);
      expect(outcomes.every((o) => o.sent)).toBe(true);
      const got = Object.fromEntries((await receive(url, 4)).map((m) => [m.message.id, m.groupId]));
      const sent = { g1: 'tenant-sync:acme', g2: 'tenant-sync:globex', g3: hashed, g4: undefined };
      expect(got).toEqual(groups === 'kept' ? sent : { g1: undefined, g2: undefined, g3: undefined, g4: undefined });
    });
  });
}

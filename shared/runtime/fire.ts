/**
 * The worker's side of recurring schedules: a fire message on the ready queue becomes the job
 * message of its run (created on the way, idempotently), which the worker then claims and runs
 * like any other job. Called from the worker's record handler.
 */
import type { SQSRecord } from 'aws-lambda';
import { fireMessageSchema } from '../core/fire-message';
import type { JobMessage } from '../core/job';
import type { JobStore } from '../core/ports';
import { errorFields, type Logger } from '../logger';
import { processFire } from '../schedules/fire-processor';
import type { ScheduleStore } from '../schedules/ports';

/** The record becomes this job message, or is settled with this outcome (`done`: delete it). */
export type ResolvedFire =
  | { kind: 'job'; message: JobMessage }
  /** `comeBackSeconds`: make the message visible again this soon (a fire that has more to do). */
  | { kind: 'settled'; outcome: 'done' | 'retry'; comeBackSeconds?: number };

/**
 * Resolves a fire message (`{"v":1,"kind":"fire",...}`) into the job message of its run.
 * Malformed or misrouted fires are left for the DLQ; AWS errors return the record for a retry.
 */
export async function resolveFire(input: {
  body: unknown;
  record: SQSRecord;
  type: string;
  jobs: JobStore;
  schedules: ScheduleStore | undefined;
  /** Sends the job messages of runs created for earlier slots on the way (see `FireResult.also`). */
  send: (message: JobMessage) => Promise<void>;
  /** How long finished jobs are kept (see `FireProcessorDeps.retentionMs`). */
  retentionMs: number;
  now: number;
  log: Logger;
}): Promise<ResolvedFire> {
  const { log } = input;
  const parsed = fireMessageSchema.safeParse(input.body);
  if (!parsed.success || parsed.data.type !== input.type) {
    log.error('malformed or misrouted fire message; leaving it for the DLQ', {
      messageId: input.record.messageId,
      reason: parsed.success ? `type ${parsed.data.type} on the ${input.type} queue` : 'not a fire message',
    });
    return { kind: 'settled', outcome: 'retry' };
  }
  const fire = parsed.data;
  const fireLog = log.child({ schedule: fire.schedule, scheduledTime: fire.scheduledTime });
  if (!input.schedules) {
    fireLog.error('this worker has no schedule store configured; the fire returns to the queue');
    return { kind: 'settled', outcome: 'retry' };
  }
  try {
    const result = await processFire(
      { schedules: input.schedules, jobs: input.jobs, log: fireLog, retentionMs: input.retentionMs },
      { name: fire.schedule, type: fire.type, fireTime: Date.parse(fire.scheduledTime) },
      input.now,
    );
    for (const message of result.also) {
      await input.send(message);
      fireLog.info('schedule fire created the run of an earlier slot', { jobId: message.id });
    }
    switch (result.kind) {
      case 'run':
        if (result.created) fireLog.info('schedule fired; run created', { jobId: result.message.id });
        return { kind: 'job', message: result.message };
      case 'skipped':
        fireLog.info('schedule fire skipped: the previous run is still active (overlap policy)');
        return { kind: 'settled', outcome: 'done' };
      case 'ignored':
        fireLog.info('schedule fire ignored', { reason: result.reason });
        return { kind: 'settled', outcome: 'done' };
      case 'pending':
        fireLog.info('schedule fire handled earlier slots first; it comes back for its own');
        return { kind: 'settled', outcome: 'retry', comeBackSeconds: 1 };
    }
  } catch (error) {
    fireLog.error('could not handle the schedule fire; it will be delivered again', errorFields(error));
    return { kind: 'settled', outcome: 'retry' };
  }
}

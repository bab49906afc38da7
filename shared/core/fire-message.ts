/**
 * The message a recurring schedule puts on its job type's ready queue each time it fires.
 * EventBridge Scheduler sends it (its target Input is {@link fireMessageTemplate}, with the
 * `<aws.scheduler.scheduled-time>` placeholder filled in), and the supervisor sends the same
 * message for a fire Scheduler missed. The worker turns it into a job run whose id is derived
 * from the schedule name and the scheduled time, so every copy of one fire is the same run.
 */
import { fnv1a } from './table';
import * as z from './zod-mini';

/** Placeholder EventBridge Scheduler replaces with the fire's scheduled time (`2026-01-01T10:00:00Z`). */
export const SCHEDULED_TIME_PLACEHOLDER = '<aws.scheduler.scheduled-time>';

export const fireMessageSchema = z.object({
  v: z.literal(1),
  kind: z.literal('fire'),
  schedule: z.string().check(z.minLength(1), z.maxLength(64)),
  type: z.string().check(z.minLength(1)),
  /** ISO 8601 UTC, whole seconds, as Scheduler fills it in. */
  scheduledTime: z.iso.datetime({ offset: true }),
});

export type FireMessage = z.output<typeof fireMessageSchema>;

/** True when a parsed SQS body looks like a fire message (it may still fail the schema). */
export function isFireMessage(body: unknown): boolean {
  return typeof body === 'object' && body !== null && (body as { kind?: unknown }).kind === 'fire';
}

/** The target Input of a schedule's EventBridge Scheduler schedule. */
export function fireMessageTemplate(schedule: string, type: string): string {
  return JSON.stringify({ v: 1, kind: 'fire', schedule, type, scheduledTime: SCHEDULED_TIME_PLACEHOLDER });
}

/** A fire message for `scheduledTime` (epoch ms), as the supervisor sends it. */
export function fireMessage(schedule: string, type: string, scheduledTime: number): FireMessage {
  return { v: 1, kind: 'fire', schedule, type, scheduledTime: scheduledTimeText(scheduledTime) };
}

/** `2026-01-01T10:00:00Z`: the scheduled-time format of EventBridge Scheduler (whole seconds, UTC). */
export function scheduledTimeText(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** `20260101T100000Z`: the compact time stamp in run ids. */
export function runStamp(ms: number): string {
  return scheduledTimeText(ms).replace(/[-:]/g, '');
}

const MAX_ID = 64;

/**
 * The id of the job run for one fire: `<schedule>.<yyyymmddThhmmssZ>`, a valid job id of at
 * most 64 characters. A name too long for that keeps its first characters and adds an 8-digit
 * hash of the whole name, so two long names never share run ids.
 *
 * @example
 * runId('nightly-report', Date.parse('2026-03-01T02:00:00Z')); // 'nightly-report.20260301T020000Z'
 */
export function runId(schedule: string, scheduledTime: number): string {
  const stamp = runStamp(scheduledTime);
  const plain = `${schedule}.${stamp}`;
  if (plain.length <= MAX_ID) return plain;
  const hash = fnv1a(schedule).toString(16).padStart(8, '0');
  const keep = MAX_ID - stamp.length - hash.length - 2;
  return `${schedule.slice(0, keep)}.${hash}.${stamp}`;
}

import type { Schedule } from './model';

/** A schedule's payload, stored apart from the small, often rewritten schedule item. */
export interface SchedulePayload {
  payload: unknown;
  payloadHash: string;
}

/** Persistence of recurring schedules. Every write of the schedule item is conditioned on its version. */
export interface ScheduleStore {
  /** The schedule item (strongly consistent read). */
  get(name: string): Promise<Schedule | undefined>;
  getPayload(name: string): Promise<SchedulePayload | undefined>;
  /** Writes a new schedule and its payload unless the name exists; returns the existing one otherwise. */
  create(
    schedule: Schedule,
    payload: SchedulePayload,
  ): Promise<{ created: true } | { created: false; existing: Schedule }>;
  /**
   * Replaces the schedule item (and the payload, when given) if its version is still
   * `expectedVersion`. Returns false when the schedule changed or is gone.
   */
  save(schedule: Schedule, expectedVersion: number, payload?: SchedulePayload): Promise<boolean>;
  /** Deletes the schedule and its payload; false when it did not exist. Runs it created stay. */
  delete(name: string): Promise<boolean>;
  /** Schedules by name, `limit` at a time; `cursor` continues a listing. */
  list(options: { limit: number; cursor?: string }): Promise<{ schedules: Schedule[]; cursor?: string }>;
}

/** What the trigger of a schedule needs: the EventBridge Scheduler schedule that fires it. */
export interface TriggerDefinition {
  name: string;
  type: string;
  expression: string;
  timezone: string;
  /** Epoch ms; Scheduler refuses start dates more than 5 minutes in the past. */
  startDate?: number;
  endDate?: number;
  enabled: boolean;
  /** The job type's ready queue, which receives the fire messages. */
  queueArn: string;
}

/** The recurring trigger of each schedule (EventBridge Scheduler in AWS). */
export interface RecurringTrigger {
  /** Creates or replaces the trigger of `definition.name`. */
  put(definition: TriggerDefinition): Promise<void>;
  /** Deletes the trigger; false when it did not exist. */
  delete(name: string): Promise<boolean>;
}

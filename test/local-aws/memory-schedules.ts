/**
 * In-memory stand-ins for the schedule ports, for the unit tests and the in-memory mode.
 * `FakeScheduleStore` enforces the DynamoDB adapter's conditions: create only when the name is
 * free, save only at the version read. Schedules are copied in and out, as the adapter's
 * marshalling does.
 */
import type { Schedule } from '../../shared/schedules/model';
import type { RecurringTrigger, SchedulePayload, ScheduleStore, TriggerDefinition } from '../../shared/schedules/ports';

const copy = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

export class FakeScheduleStore implements ScheduleStore {
  readonly schedules = new Map<string, Schedule>();
  readonly payloads = new Map<string, SchedulePayload>();
  /** Saves refused because the version had moved. */
  conflicts = 0;
  /** Makes the next `n` saves fail as if another writer won (to test the retry loop). */
  conflictNext = 0;

  async get(name: string): Promise<Schedule | undefined> {
    const schedule = this.schedules.get(name);
    return schedule ? copy(schedule) : undefined;
  }

  async getPayload(name: string): Promise<SchedulePayload | undefined> {
    const payload = this.payloads.get(name);
    return payload ? copy(payload) : undefined;
  }

  async create(
    schedule: Schedule,
    payload: SchedulePayload,
  ): Promise<{ created: true } | { created: false; existing: Schedule }> {
    const existing = this.schedules.get(schedule.name);
    if (existing) return { created: false, existing: copy(existing) };
    this.schedules.set(schedule.name, copy(schedule));
    this.payloads.set(schedule.name, copy(payload));
    return { created: true };
  }

  async save(schedule: Schedule, expectedVersion: number, payload?: SchedulePayload): Promise<boolean> {
    const current = this.schedules.get(schedule.name);
    if (this.conflictNext > 0) {
      this.conflictNext -= 1;
      this.conflicts += 1;
      if (current) this.schedules.set(schedule.name, { ...current, version: current.version + 1 });
      return false;
    }
    if (!current || current.version !== expectedVersion) {
      this.conflicts += 1;
      return false;
    }
    this.schedules.set(schedule.name, copy(schedule));
    if (payload) this.payloads.set(schedule.name, copy(payload));
    return true;
  }

  async delete(name: string): Promise<boolean> {
    this.payloads.delete(name);
    return this.schedules.delete(name);
  }

  async list({
    limit,
    cursor,
  }: {
    limit: number;
    cursor?: string;
  }): Promise<{ schedules: Schedule[]; cursor?: string }> {
    const names = [...this.schedules.keys()].sort().filter((name) => cursor === undefined || name > cursor);
    const page = names.slice(0, limit);
    const more = names.length > limit;
    return {
      schedules: page.map((name) => copy(this.schedules.get(name) as Schedule)),
      ...(more ? { cursor: page.at(-1) as string } : {}),
    };
  }
}

/** Keeps the latest definition of each trigger; `failNext` makes the next call throw. */
export class FakeRecurringTrigger implements RecurringTrigger {
  readonly triggers = new Map<string, TriggerDefinition>();
  /** When set, `put` awaits it first (a slow or failing write that a test settles). */
  putHook: (() => Promise<void>) | undefined;
  private failure: unknown;

  failNext(error: unknown): void {
    this.failure = error;
  }

  private check(): void {
    if (this.failure !== undefined) {
      const error = this.failure;
      this.failure = undefined;
      throw error;
    }
  }

  async put(definition: TriggerDefinition): Promise<void> {
    this.check();
    if (this.putHook) await this.putHook();
    this.triggers.set(definition.name, { ...definition });
  }

  async delete(name: string): Promise<boolean> {
    this.check();
    return this.triggers.delete(name);
  }
}

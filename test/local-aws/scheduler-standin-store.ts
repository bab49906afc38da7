/**
 * Schedules, schedule groups and the Scheduler API operations of the stand-in
 * (`scheduler-standin.ts`), independent of HTTP: each operation takes the decoded request and
 * returns the JSON response body, or throws a {@link SchedulerApiError}.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../../shared/core/clock';
import { firstFire, type ScheduleRecord } from './scheduler-standin-firing';
import {
  Constraints,
  checkName,
  conflictError,
  DEFAULT_GROUP,
  decodeNextToken,
  encodeNextToken,
  NAME_PATTERN,
  notFoundError,
  parseMaxResults,
  parseScheduleRequest,
  type StoredSchedule,
  toGetScheduleOutput,
  toScheduleSummary,
  validationError,
} from './scheduler-standin-model';

type Json = Record<string, unknown>;

interface GroupRecord {
  name: string;
  arn: string;
  creationDate: number;
  lastModificationDate: number;
  tags: unknown;
}

function page<T>(items: T[], query: URLSearchParams): { items: T[]; nextToken?: string } {
  const max = parseMaxResults(query.get('MaxResults'));
  const offset = decodeNextToken(query.get('NextToken'));
  const result: { items: T[]; nextToken?: string } = { items: items.slice(offset, offset + max) };
  if (offset + max < items.length) result.nextToken = encodeNextToken(offset + max);
  return result;
}

/** In-memory Scheduler state. The `default` group always exists. */
export class SchedulerStore {
  private readonly groups = new Map<string, GroupRecord>();
  private readonly schedules = new Map<string, ScheduleRecord>();
  private readonly byId = new Map<string, ScheduleRecord>();

  constructor(
    private readonly clock: Clock,
    /** `arn:aws:scheduler:REGION:ACCOUNT` */
    private readonly arnPrefix: string,
    private readonly log: (line: string) => void,
  ) {
    this.addGroup(DEFAULT_GROUP, []);
  }

  // ---- inspection, used by the firing engine and tests -------------------------------------

  records(): ScheduleRecord[] {
    return [...this.schedules.values()];
  }

  lookup(id: string): ScheduleRecord | undefined {
    return this.byId.get(id);
  }

  /** Deletes `record` if it is still the schedule under its name. */
  remove(record: ScheduleRecord): void {
    const current = this.schedules.get(this.key(record.schedule.GroupName, record.schedule.Name));
    if (current === record) this.delete(record);
  }

  deleteDirectly(name: string, group: string): boolean {
    const record = this.schedules.get(this.key(group, name));
    if (record) this.delete(record);
    return record !== undefined;
  }

  /** All schedules, sorted by group then name (live objects: copy before handing out). */
  sorted(): StoredSchedule[] {
    return this.records()
      .map((r) => r.schedule)
      .sort((a, b) => a.GroupName.localeCompare(b.GroupName) || a.Name.localeCompare(b.Name));
  }

  // ---- schedules --------------------------------------------------------------------------

  createSchedule(name: string, body: Json): Json {
    const now = this.clock.now();
    const request = parseScheduleRequest(name, body, now);
    const group = this.existingGroup(request.fields.GroupName);
    const existing = this.schedules.get(this.key(group.name, name));
    if (existing) {
      // An SDK retry of the same call carries the same ClientToken: answer as the first time.
      if (request.clientToken !== undefined && existing.createToken === request.clientToken) {
        return { ScheduleArn: existing.schedule.Arn };
      }
      throw conflictError(`Schedule ${name} already exists.`);
    }
    const record: ScheduleRecord = {
      id: randomUUID(),
      schedule: {
        ...request.fields,
        Arn: `${this.arnPrefix}:schedule/${group.name}/${name}`,
        CreationDate: now,
        LastModificationDate: now,
      },
      parsed: request.parsed,
      completed: false,
    };
    if (request.clientToken !== undefined) record.createToken = request.clientToken;
    this.schedule(record, now);
    this.schedules.set(this.key(group.name, name), record);
    this.byId.set(record.id, record);
    return { ScheduleArn: record.schedule.Arn };
  }

  /** Replaces the whole schedule (omitted optional members reset to their defaults, as in AWS). */
  updateSchedule(name: string, body: Json): Json {
    const now = this.clock.now();
    const request = parseScheduleRequest(name, body, now);
    const record = this.existingSchedule(request.fields.GroupName, name);
    const { Arn, CreationDate } = record.schedule;
    record.schedule = { ...request.fields, Arn, CreationDate, LastModificationDate: now };
    record.parsed = request.parsed;
    record.completed = false;
    this.schedule(record, now);
    return { ScheduleArn: Arn };
  }

  getSchedule(name: string, query: URLSearchParams): Json {
    const group = checkName('GroupName', query.get('groupName'), false) ?? DEFAULT_GROUP;
    return toGetScheduleOutput(this.existingSchedule(group, name).schedule);
  }

  deleteSchedule(name: string, query: URLSearchParams): Json {
    const group = checkName('GroupName', query.get('groupName'), false) ?? DEFAULT_GROUP;
    this.delete(this.existingSchedule(group, name));
    return {};
  }

  listSchedules(query: URLSearchParams): Json {
    const c = new Constraints();
    const rules = { min: 1, max: 64, pattern: NAME_PATTERN };
    const group = c.string('ScheduleGroup', query.get('ScheduleGroup') ?? undefined, rules);
    const prefix = c.string('NamePrefix', query.get('NamePrefix') ?? undefined, rules);
    const state = c.string('State', query.get('State') ?? undefined, { values: ['ENABLED', 'DISABLED'] });
    c.throwIfAny();
    if (group !== undefined) this.existingGroup(group);
    const matching = this.sorted().filter(
      (s) =>
        (group === undefined || s.GroupName === group) &&
        (prefix === undefined || s.Name.startsWith(prefix)) &&
        (state === undefined || s.State === state),
    );
    const { items, nextToken } = page(matching, query);
    return { Schedules: items.map(toScheduleSummary), ...(nextToken ? { NextToken: nextToken } : {}) };
  }

  // ---- schedule groups --------------------------------------------------------------------

  createScheduleGroup(name: string, body: Json): Json {
    if (this.groups.has(name)) throw conflictError(`Schedule group ${name} already exists.`);
    return { ScheduleGroupArn: this.addGroup(name, body.Tags ?? []).arn };
  }

  getScheduleGroup(name: string): Json {
    return this.groupSummary(this.existingGroup(name));
  }

  /** Deletes the group and its schedules at once (AWS passes through a DELETING state). */
  deleteScheduleGroup(name: string): Json {
    if (name === DEFAULT_GROUP) throw validationError('The default schedule group cannot be deleted.');
    this.existingGroup(name);
    for (const record of this.records()) if (record.schedule.GroupName === name) this.delete(record);
    this.groups.delete(name);
    return {};
  }

  listScheduleGroups(query: URLSearchParams): Json {
    const c = new Constraints();
    const prefix = c.string('NamePrefix', query.get('NamePrefix') ?? undefined, {
      min: 1,
      max: 64,
      pattern: NAME_PATTERN,
    });
    c.throwIfAny();
    const matching = [...this.groups.values()]
      .filter((g) => prefix === undefined || g.name.startsWith(prefix))
      .sort((a, b) => a.name.localeCompare(b.name));
    const { items, nextToken } = page(matching, query);
    return { ScheduleGroups: items.map((g) => this.groupSummary(g)), ...(nextToken ? { NextToken: nextToken } : {}) };
  }

  // ---- helpers ----------------------------------------------------------------------------

  /** Computes the first fire; says so when a one-time schedule can never fire. */
  private schedule(record: ScheduleRecord, now: number): void {
    const s = record.schedule;
    s.nextFireAt = firstFire(record, now);
    if (record.parsed.kind === 'at' && s.State === 'ENABLED' && s.nextFireAt === undefined) {
      this.log(
        `${s.Arn}: ${s.ScheduleExpression} (${s.ScheduleExpressionTimezone}) is already past, so it will never fire`,
      );
    }
  }

  private key(group: string, name: string): string {
    return `${group}/${name}`;
  }

  private delete(record: ScheduleRecord): void {
    this.schedules.delete(this.key(record.schedule.GroupName, record.schedule.Name));
    this.byId.delete(record.id);
  }

  private addGroup(name: string, tags: unknown): GroupRecord {
    const now = this.clock.now();
    const group = {
      name,
      arn: `${this.arnPrefix}:schedule-group/${name}`,
      creationDate: now,
      lastModificationDate: now,
      tags,
    };
    this.groups.set(name, group);
    return group;
  }

  private existingGroup(name: string): GroupRecord {
    const group = this.groups.get(name);
    if (!group) throw notFoundError(`Schedule group ${name} does not exist.`);
    return group;
  }

  private existingSchedule(group: string, name: string): ScheduleRecord {
    this.existingGroup(group);
    const record = this.schedules.get(this.key(group, name));
    if (!record) throw notFoundError(`Schedule ${name} does not exist.`);
    return record;
  }

  private groupSummary(g: GroupRecord): Json {
    return {
      Arn: g.arn,
      Name: g.name,
      State: 'ACTIVE',
      CreationDate: g.creationDate / 1000,
      LastModificationDate: g.lastModificationDate / 1000,
    };
  }
}

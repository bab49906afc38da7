/**
 * The logic behind the `/schedules` routes: validate at one boundary, write the schedule to
 * DynamoDB (the source of truth), then create or change its EventBridge Scheduler trigger.
 *
 * If the trigger call fails, a new schedule is removed again (the caller retries cleanly); a
 * changed one keeps its new definition in DynamoDB and the caller is told to retry. Either way
 * nothing is lost: the supervisor fires every enabled schedule whose trigger did not.
 */

import type { PlatformConfig } from '../config';
import { refuseReferenceShape } from '../core/blobs';
import type { Clock } from '../core/clock';
import { jsonBytes, MAX_PAYLOAD_BYTES } from '../core/enqueue';
import type { JobTypeSpec } from '../core/job-type';
import { payloadHash } from '../core/payload-hash';
import { resolvePriority } from '../core/priority';
import { parseOrThrow } from '../core/validation';
import { ConflictError, NotFoundError, PayloadTooLargeError, ValidationError } from '../errors';
import type { Logger } from '../logger';
import {
  definitionOf,
  nextFireOf,
  resolveTrigger,
  SCHEDULE_NAME_PATTERN,
  type Schedule,
  type ScheduleChangeAction,
  type ScheduleView,
  type Trigger,
  toScheduleView,
  withDue,
} from './model';
import type { RecurringTrigger, SchedulePayload, ScheduleStore, TriggerDefinition } from './ports';
import { type ScheduleRequest, scheduleRequestSchema, scheduleUpdateSchema } from './request';
import { runNowId } from './run-now';

export interface SchedulesServiceDeps {
  config: PlatformConfig;
  catalog: readonly JobTypeSpec[];
  schedules: ScheduleStore;
  trigger: RecurringTrigger;
  clock: Clock;
  log: Logger;
}

/** Page size of `GET /schedules`. */
export const LIST_LIMIT = { default: 50, max: 100 } as const;
/** Scheduler refuses a StartDate more than 5 minutes in the past; stay clear of that. */
const START_DATE_SLACK_MS = 4 * 60_000;
const MAX_SAVE_TRIES = 5;

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The EventBridge Scheduler schedule for `schedule`. A `rate()` starts at its next slot, so
 * Scheduler's fire times fall on Orrery's slot grid (`anchorAt + k × period`); a `cron()`
 * passes `startAt` only while it is not in the past.
 */
export function triggerDefinition(schedule: Schedule, queueArn: string, now: number): TriggerDefinition {
  const definition: TriggerDefinition = {
    name: schedule.name,
    type: schedule.type,
    expression: schedule.expression,
    timezone: schedule.timezone,
    enabled: schedule.state === 'enabled',
    queueArn,
  };
  if (schedule.anchorAt !== undefined) {
    const next = schedule.nextFireAt ?? nextFireOf(schedule, now);
    if (next !== undefined) definition.startDate = next;
  } else if (schedule.startAt !== undefined && Date.parse(schedule.startAt) > now - START_DATE_SLACK_MS) {
    definition.startDate = Date.parse(schedule.startAt);
  }
  if (schedule.endAt !== undefined) definition.endDate = Date.parse(schedule.endAt);
  return definition;
}

/** Create, read, change, pause, resume and delete recurring schedules. */
export class SchedulesService {
  private readonly specs: Map<string, JobTypeSpec>;

  constructor(private readonly deps: SchedulesServiceDeps) {
    this.specs = new Map(deps.catalog.map((spec) => [spec.type, spec]));
  }

  /**
   * Validates a definition: type, payload, priority, trigger. Throws 400/413 naming the field;
   * writes nothing. The priority is the request's, else the type's default (none for a type
   * without the option).
   */
  private validate(
    request: Omit<ScheduleRequest, 'name'>,
    now: number,
  ): {
    spec: JobTypeSpec;
    trigger: Trigger;
    payload: SchedulePayload;
    priority: Pick<Schedule, 'priority'>;
    queueArn: string;
  } {
    const spec = this.specs.get(request.type);
    const route = this.deps.config.routes[request.type];
    if (!spec || !route) {
      const types = [...this.specs.keys()].filter((type) => this.deps.config.routes[type]).sort();
      throw new ValidationError(
        `unknown job type "${request.type}"`,
        [{ path: 'type', message: `must be one of: ${types.join(', ')}` }],
        'unknown_type',
      );
    }
    const size = jsonBytes(request.payload);
    if (size > MAX_PAYLOAD_BYTES) {
      throw new PayloadTooLargeError(
        `payload is ${size} bytes of JSON; the limit is ${MAX_PAYLOAD_BYTES} bytes`,
        MAX_PAYLOAD_BYTES,
      );
    }
    const payload = parseOrThrow(spec.payload, request.payload, {
      message: `payload does not match the ${spec.type} schema`,
      code: 'invalid_payload',
      prefix: 'payload',
    });
    // kept inline and copied into each run: one shaped like a reference would be read as the object it names
    refuseReferenceShape(payload, 'payload');
    const priority = resolvePriority(spec.priority, request.priority);
    const trigger = resolveTrigger(request, now);
    return {
      spec,
      trigger,
      payload: { payload, payloadHash: payloadHash(spec.type, payload) },
      priority: priority === undefined ? {} : { priority },
      queueArn: route.queueArn,
    };
  }

  private queueArnOf(schedule: Schedule): string {
    const route = this.deps.config.routes[schedule.type];
    if (!route) throw new ConflictError(`job type ${schedule.type} of schedule ${schedule.name} is not deployed`);
    return route.queueArn;
  }

  /**
   * `POST /schedules`: 201 with the new schedule; 200 for a replay of the same definition (which
   * keeps the first creation's `changedBy`); 409 otherwise. `by` is the caller's ARN, recorded
   * as the schedule's `changedBy` by the write that creates it.
   */
  async create(body: unknown, by?: string): Promise<{ created: boolean; schedule: ScheduleView }> {
    const request = parseOrThrow(scheduleRequestSchema, body, { message: 'invalid schedule' });
    const now = this.deps.clock.now();
    const { spec, trigger, payload, priority, queueArn } = this.validate(request, now);
    const schedule: Schedule = {
      name: request.name,
      type: spec.type,
      ...trigger,
      maxAttempts: request.maxAttempts ?? spec.retry.maxAttempts,
      overlap: request.overlap ?? 'allow',
      ...priority,
      state: 'enabled',
      payloadHash: payload.payloadHash,
      createdAt: iso(now),
      updatedAt: iso(now),
      version: 1,
      skipped: 0,
      missed: 0,
      ...changeBy(by, 'create', now),
    };
    const first = nextFireOf(schedule, now);
    if (first !== undefined) schedule.nextFireAt = first;
    Object.assign(schedule, withDue(schedule, now));

    const written = await this.deps.schedules.create(schedule, payload);
    if (!written.created) {
      if (definitionOf(written.existing) !== definitionOf(schedule)) {
        throw new ConflictError(
          `schedule ${schedule.name} already exists with a different definition`,
          'schedule_exists',
          {
            schedule: schedule.name,
          },
        );
      }
      // A replay may follow a lost trigger write: put it again (idempotent).
      await this.deps.trigger.put(triggerDefinition(written.existing, queueArn, now));
      return { created: false, schedule: toScheduleView(written.existing, payload.payload) };
    }
    try {
      await this.deps.trigger.put(triggerDefinition(schedule, queueArn, now));
    } catch (error) {
      // The schedule stays: a concurrent replay may already have answered for it, and removing it
      // would lose an acknowledged schedule. A replay puts the trigger again; until then the
      // supervisor fires its overdue slots.
      this.deps.log.error('could not create the trigger of a new schedule; a replay creates it', {
        schedule: schedule.name,
        errorMessage: error instanceof Error ? error.message : String(error),
      });
      throw error;
    }
    return { created: true, schedule: toScheduleView(schedule, payload.payload) };
  }

  /**
   * What `POST /schedules/{name}/run` enqueues: one job of the schedule's type, payload,
   * maxAttempts and priority (while its type still takes one), with id `id` if given, else
   * {@link runNowId} of the idempotency key (random without one). A paused schedule can be run too; the schedule itself is not changed (its
   * fires, overlap policy and counters do not see this job). 404 `schedule_not_found`, 409
   * `type_not_deployed` when its type has no route.
   */
  async runRequest(
    name: string,
    choice: { id?: string; idempotencyKey?: string } = {},
  ): Promise<{ type: string; payload: Record<string, unknown>; maxAttempts: number; priority?: number; id: string }> {
    const schedule = await this.find(name);
    if (!this.deps.config.routes[schedule.type]) {
      throw new ConflictError(
        `job type "${schedule.type}" of schedule ${name} is not deployed; it cannot run`,
        'type_not_deployed',
      );
    }
    const stored = await this.deps.schedules.getPayload(name);
    if (!stored) throw new Error(`schedule ${name}: its payload item is missing`);
    return {
      type: schedule.type,
      payload: stored.payload as Record<string, unknown>,
      maxAttempts: schedule.maxAttempts,
      ...(schedule.priority !== undefined && this.specs.get(schedule.type)?.priority
        ? { priority: schedule.priority }
        : {}),
      id: choice.id ?? runNowId(name, choice.idempotencyKey),
    };
  }

  async get(name: string): Promise<ScheduleView> {
    const schedule = await this.find(name);
    const payload = await this.deps.schedules.getPayload(name);
    return toScheduleView(schedule, payload?.payload);
  }

  async list(query: Record<string, string>): Promise<{ schedules: ScheduleView[]; nextCursor: string | null }> {
    const limitText = query.limit ?? String(LIST_LIMIT.default);
    const limit = Number(limitText);
    if (!/^\d+$/.test(limitText) || limit < 1 || limit > LIST_LIMIT.max) {
      throw new ValidationError('invalid limit', [
        { path: 'limit', message: `must be an integer from 1 to ${LIST_LIMIT.max}` },
      ]);
    }
    const cursor = query.cursor;
    if (cursor !== undefined && !SCHEDULE_NAME_PATTERN.test(cursor)) {
      throw new ValidationError('invalid cursor', [
        { path: 'cursor', message: 'use the nextCursor of a previous page' },
      ]);
    }
    const page = await this.deps.schedules.list({ limit, ...(cursor !== undefined ? { cursor } : {}) });
    return { schedules: page.schedules.map((s) => toScheduleView(s)), nextCursor: page.cursor ?? null };
  }

  /**
   * `PUT /schedules/{name}`: replaces the definition; counters and the latest run are kept.
   * `by` (the caller's ARN) is recorded as `changedBy` by the same write.
   */
  async update(name: string, body: unknown, by?: string): Promise<ScheduleView> {
    const request = parseOrThrow(scheduleUpdateSchema, body, { message: 'invalid schedule' });
    if (request.name !== undefined && request.name !== name) {
      throw new ValidationError('the name in the body differs from the path', [
        { path: 'name', message: `must be ${JSON.stringify(name)} (schedules cannot be renamed)` },
      ]);
    }
    const now = this.deps.clock.now();
    const { spec, trigger, payload, priority, queueArn } = this.validate(request, now);
    const saved = await this.change(
      name,
      (current) => {
        const next: Schedule = {
          ...current,
          type: spec.type,
          expression: trigger.expression,
          timezone: trigger.timezone,
          maxAttempts: request.maxAttempts ?? spec.retry.maxAttempts,
          overlap: request.overlap ?? 'allow',
          payloadHash: payload.payloadHash,
          updatedAt: iso(now),
          ...changeBy(by, 'update', now, current),
        };
        for (const field of ['cron', 'rate', 'startAt', 'endAt', 'anchorAt', 'priority'] as const) delete next[field];
        Object.assign(next, trigger, priority);
        // Same rate without a new start: keep the slot grid, so slot run ids stay stable.
        if (trigger.rate !== undefined && request.startAt === undefined && current.expression === trigger.expression) {
          if (current.anchorAt !== undefined) next.anchorAt = current.anchorAt;
        }
        return withNextFire(next, now);
      },
      payload,
    );
    await this.deps.trigger.put(triggerDefinition(saved, queueArn, now));
    return toScheduleView(saved, payload.payload);
  }

  /** `POST /schedules/{name}/pause`: no fire while paused. `by` is recorded as `changedBy` by the same write. */
  async pause(name: string, by?: string): Promise<ScheduleView> {
    const now = this.deps.clock.now();
    const saved = await this.change(name, (current) => {
      const next: Schedule = {
        ...current,
        state: 'paused',
        updatedAt: iso(now),
        ...changeBy(by, 'pause', now, current),
      };
      delete next.nextFireAt;
      return next;
    });
    await this.deps.trigger.put(triggerDefinition(saved, this.queueArnOf(saved), now));
    return toScheduleView(saved);
  }

  /**
   * `POST /schedules/{name}/resume`: fires again from the next slot after now (no catch-up of
   * paused time). `by` is recorded as `changedBy` by the same write.
   */
  async resume(name: string, by?: string): Promise<ScheduleView> {
    const now = this.deps.clock.now();
    const saved = await this.change(name, (current) =>
      withNextFire({ ...current, state: 'enabled', updatedAt: iso(now), ...changeBy(by, 'resume', now, current) }, now),
    );
    await this.deps.trigger.put(triggerDefinition(saved, this.queueArnOf(saved), now));
    return toScheduleView(saved);
  }

  /** `DELETE /schedules/{name}`: removes the schedule and its trigger; runs it created stay. */
  async delete(name: string): Promise<void> {
    const removed = await this.deps.schedules.delete(name);
    // Also when the item is gone already: a retry after a failed trigger delete cleans up.
    const triggerRemoved = await this.deps.trigger.delete(name);
    if (!removed && !triggerRemoved) throw notFound(name);
  }

  private async find(name: string): Promise<Schedule> {
    const schedule = SCHEDULE_NAME_PATTERN.test(name) ? await this.deps.schedules.get(name) : undefined;
    if (!schedule) throw notFound(name);
    return schedule;
  }

  /** Read, change, write conditioned on the version read; again when a fire wrote in between. */
  private async change(
    name: string,
    edit: (current: Schedule) => Schedule,
    payload?: SchedulePayload,
  ): Promise<Schedule> {
    for (let attempt = 0; attempt < MAX_SAVE_TRIES; attempt++) {
      const current = await this.find(name);
      const next = withDue({ ...edit(current), version: current.version + 1 }, this.deps.clock.now());
      if (await this.deps.schedules.save(next, current.version, payload)) return next;
    }
    throw new ConflictError(`schedule ${name} kept changing; try again`, 'schedule_busy');
  }
}

/** Sets `nextFireAt` for an enabled schedule: the first slot after now and after the last fire handled. */
function withNextFire(schedule: Schedule, now: number): Schedule {
  const next = { ...schedule };
  delete next.nextFireAt;
  if (next.state !== 'enabled') return next;
  const fire = nextFireOf(next, Math.max(now, next.lastFireAt ?? Number.NEGATIVE_INFINITY));
  if (fire !== undefined) next.nextFireAt = fire;
  return next;
}

/**
 * The `changedBy` of a change by `by`; without a caller, the schedule's earlier record stays
 * (an embedder calling the service directly records nothing new).
 */
function changeBy(
  by: string | undefined,
  action: ScheduleChangeAction,
  now: number,
  current?: Schedule,
): Pick<Schedule, 'changedBy'> {
  if (by !== undefined) return { changedBy: { action, by, at: iso(now) } };
  return current?.changedBy ? { changedBy: current.changedBy } : {};
}

function notFound(name: string): NotFoundError {
  return new NotFoundError(`schedule ${JSON.stringify(name)} not found`, 'schedule_not_found');
}

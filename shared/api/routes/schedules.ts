import { createAwsClients } from '../../aws/clients';
import { DynamoScheduleStore } from '../../aws/dynamo-schedule-store';
import { EventBridgeRecurringTrigger } from '../../aws/scheduler-recurring-trigger';
import type { PlatformConfig } from '../../config';
import { type Clock, systemClock } from '../../core/clock';
import type { JobTypeSpec } from '../../core/job-type';
import { parseOrThrow } from '../../core/validation';
import { NotFoundError } from '../../errors';
import { createLogger, type Logger } from '../../logger';
import type { RecurringTrigger, ScheduleStore } from '../../schedules/ports';
import { idempotencyKeyOf } from '../../schedules/run-now';
import { SchedulesService } from '../../schedules/service';
import { actorOf, scopeRefusal } from '../access';
import { json, jsonBody, type Route } from '../http';
import type { JobsService } from '../jobs-service';
import { runScheduleRequestSchema } from '../schemas';

/** What the schedule routes need from the API's dependencies. */
export interface ScheduleRouteDeps {
  config: PlatformConfig;
  catalog: readonly JobTypeSpec[];
  clock?: Clock;
  logger?: Logger;
  /** @default DynamoDB and EventBridge Scheduler adapters built from the environment on first use */
  schedules?: { store: ScheduleStore; trigger: RecurringTrigger };
  /** Enqueues the job of `POST /schedules/{name}/run`. Without it that route answers 404. */
  jobs?: Pick<JobsService, 'enqueue'>;
}

/**
 * `POST /schedules`, `GET /schedules`, `GET|PUT|DELETE /schedules/{name}`,
 * `POST /schedules/{name}/pause`, `POST /schedules/{name}/resume`, `POST /schedules/{name}/run`.
 */
export function scheduleRoutes(deps: ScheduleRouteDeps): Route[] {
  let service: SchedulesService | undefined;
  const schedules = (): SchedulesService => {
    if (!service) {
      const ports = deps.schedules ?? defaultPorts(deps.config);
      service = new SchedulesService({
        config: deps.config,
        catalog: deps.catalog,
        schedules: ports.store,
        trigger: ports.trigger,
        clock: deps.clock ?? systemClock,
        log: deps.logger ?? createLogger({ level: deps.config.logLevel }),
      });
    }
    return service;
  };
  const name = (params: Record<string, string>) => params.name ?? '';
  return [
    {
      path: '/schedules',
      // a caller granted read on some types sees only their schedules (a page may hold fewer)
      access: { POST: { action: 'operate', audit: 'schedule.create' }, GET: { action: 'read' } },
      methods: {
        POST: async (request, _params, call) => {
          const { created, schedule } = await schedules().create(jsonBody(request), actorOf(call.principal));
          const location = `/schedules/${encodeURIComponent(schedule.name)}`;
          return json(created ? 201 : 200, schedule, created ? { location } : {});
        },
        GET: async (request, _params, call) => {
          const page = await schedules().list(request.query);
          const scope = call.scope;
          if (scope.kind === 'some') page.schedules = page.schedules.filter((s) => scope.types.has(s.type));
          return json(200, page);
        },
      },
    },
    {
      path: '/schedules/{name}',
      access: {
        // a caller granted read on some types reads the schedule once more, for its type
        GET: { action: 'read', types: async (_request, params) => [(await schedules().get(name(params))).type] },
        PUT: { action: 'operate', audit: 'schedule.update' },
        DELETE: { action: 'operate', audit: 'schedule.delete' },
      },
      methods: {
        GET: async (_request, params, call) => {
          const schedule = await schedules().get(name(params));
          // the check read the type first: the schedule shown must still be of a granted type
          const refusal = scopeRefusal(
            { by: actorOf(call.principal), scope: call.scope },
            { action: 'read', types: [schedule.type] },
          );
          if (refusal) throw refusal;
          return json(200, schedule);
        },
        PUT: async (request, params, call) =>
          json(200, await schedules().update(name(params), jsonBody(request), actorOf(call.principal))),
        DELETE: async (_request, params) => {
          await schedules().delete(name(params));
          return { statusCode: 204, headers: {}, body: '' };
        },
      },
    },
    {
      path: '/schedules/{name}/pause',
      access: { POST: { action: 'operate', audit: 'schedule.pause' } },
      methods: {
        POST: async (_request, params, call) =>
          json(200, await schedules().pause(name(params), actorOf(call.principal))),
      },
    },
    {
      path: '/schedules/{name}/resume',
      access: { POST: { action: 'operate', audit: 'schedule.resume' } },
      methods: {
        POST: async (_request, params, call) =>
          json(200, await schedules().resume(name(params), actorOf(call.principal))),
      },
    },
    {
      path: '/schedules/{name}/run',
      access: { POST: { action: 'operate', audit: 'schedule.run' } },
      methods: {
        // Run now: 201 with the job, 200 when the same id was enqueued already (a retried request).
        POST: async (request, params) => {
          const jobs = deps.jobs;
          if (!jobs) throw new NotFoundError('running a schedule is not configured here', 'route_not_found');
          const idempotencyKey = idempotencyKeyOf(request.headers);
          const body =
            request.bodyText === undefined || request.bodyText.trim() === ''
              ? {}
              : parseOrThrow(runScheduleRequestSchema, jsonBody(request), { message: 'invalid run request' });
          const run = await schedules().runRequest(name(params), {
            ...(body.id !== undefined ? { id: body.id } : {}),
            ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
          });
          const { created, job } = await jobs.enqueue(run, { schedule: name(params) });
          return json(created ? 201 : 200, { job }, created ? { location: `/jobs/${encodeURIComponent(job.id)}` } : {});
        },
      },
    },
  ];
}

/** The production adapters: the job table and the platform's schedule group, from the environment. */
function defaultPorts(config: PlatformConfig): { store: ScheduleStore; trigger: RecurringTrigger } {
  const clients = createAwsClients();
  return {
    store: new DynamoScheduleStore(clients.dynamo, config.tableName),
    trigger: new EventBridgeRecurringTrigger(clients.scheduler, config.scheduleGroup, config.schedulerRoleArn),
  };
}

import type { PlatformConfig } from '../../config';
import type { Clock } from '../../core/clock';
import { type Debouncer, debounceScope } from '../../core/debounce';
import { type FlowSlots, flowKeyProblem, type Holder, singletonScope, WHOLE_TYPE_KEY } from '../../core/flow';
import type { JobTypeSpec } from '../../core/job-type';
import { keyLimitField } from '../../core/key-limits';
import type { Pacer } from '../../core/pace';
import type { JobQueue, JobScheduler } from '../../core/ports';
import { NotFoundError, ValidationError } from '../../errors';
import type { Logger } from '../../logger';
import { actorOf } from '../access';
import { json, jsonBody, type Route } from '../http';
import { KeyLimitsService } from '../key-limits-service';
import { paceView } from '../pace-view';

const running = (holders: readonly Holder[]) =>
  holders.map((h) => ({ jobId: h.jobId, since: new Date(h.since).toISOString() }));

/** A `?limit=` index as the body would give it: a number when it is digits, the text otherwise (refused). */
const indexParam = (text: string | undefined): unknown =>
  text === undefined ? undefined : /^\d{1,4}$/.test(text) ? Number(text) : text;

/**
 * `GET /types/{type}/keys/{key}`: the state of one key value of a job type's flow control: for
 * each concurrency limit (the limit that holds, the spec's, and which one it is), and for its
 * singleton, the jobs holding a slot (and since when) and how many wait. A limit without a key
 * function has one key for the whole type, shown whatever `key` is asked for; so has a singleton
 * without one.
 *
 * `PUT /types/{type}/keys/{key}/limits` (`{ concurrency?, limit?, weight? }`) and `DELETE`
 * (`?limit=`, `?field=concurrency|weight`) set and remove a key's concurrency limit, or its weight
 * in a limit shared fairly, at run time (see {@link KeyLimitsService}). `GET /types/{type}/keys`
 * lists the keys one read can find: a fair limit's keys with their shares. Access:
 * `operate`, as the other changes to how the platform runs (schedules, DLQ redrive), not scoped by
 * type; each is audited (`limits.set`, `limits.clear`).
 */
export function flowRoutes(deps: {
  config: Pick<PlatformConfig, 'routes' | 'queues'>;
  catalog: readonly JobTypeSpec[];
  flow?: FlowSlots;
  pacer?: Pacer;
  debouncer?: Debouncer;
  queue: JobQueue;
  scheduler?: JobScheduler;
  clock: Clock;
  log: Logger;
}): Route[] {
  const specs = new Map(deps.catalog.map((spec) => [spec.type, spec]));
  const flow = deps.flow;
  const limits = flow ? new KeyLimitsService({ ...deps, flow }) : undefined;
  const limitsService = (type: string): KeyLimitsService => {
    if (!specs.has(type)) throw new NotFoundError(`job type ${JSON.stringify(type)} not found`, 'type_not_found');
    if (!limits) throw new NotFoundError('concurrency limits are not configured here', 'not_configured');
    return limits;
  };
  return [
    {
      path: '/types/{type}/keys/{key}/limits',
      access: {
        PUT: { action: 'operate', audit: 'limits.set' },
        DELETE: { action: 'operate', audit: 'limits.clear' },
      },
      methods: {
        PUT: async (request, params, call) => {
          const type = params.type ?? '';
          const service = limitsService(type);
          return json(200, await service.set(type, params.key ?? '', jsonBody(request), actorOf(call.principal)));
        },
        DELETE: async (request, params, call) => {
          const type = params.type ?? '';
          const service = limitsService(type);
          const index = indexParam(request.query.limit);
          const field = keyLimitField(request.query.field);
          return json(200, await service.clear(type, params.key ?? '', index, actorOf(call.principal), field));
        },
      },
    },
    {
      path: '/types/{type}/keys',
      access: { GET: { action: 'read', types: (_request, params) => [params.type ?? ''] } },
      methods: {
        GET: async (_request, params) => json(200, await limitsService(params.type ?? '').keys(params.type ?? '')),
      },
    },
    {
      path: '/types/{type}/keys/{key}',
      access: { GET: { action: 'read', types: (_request, params) => [params.type ?? ''] } },
      methods: {
        GET: async (_request, params) => {
          const type = params.type ?? '';
          const key = params.key ?? '';
          const spec = specs.get(type);
          if (!spec) throw new NotFoundError(`job type ${JSON.stringify(type)} not found`, 'type_not_found');
          const typeLimits = spec.concurrency ?? [];
          const singleton = spec.singleton;
          const paced = [
            ...(spec.throttle ? [['throttle', spec.throttle] as const] : []),
            ...(spec.rateLimit ? [['rateLimit', spec.rateLimit] as const] : []),
          ];
          if (typeLimits.length === 0 && !singleton && paced.length === 0 && !spec.debounce) {
            throw new NotFoundError(
              `job type ${type} has no flow control (concurrency, singleton, throttle, rate limit or debounce)`,
              'no_flow_control',
            );
          }
          if (
            ((typeLimits.length > 0 || singleton) && !flow) ||
            (paced.length > 0 && !deps.pacer) ||
            (spec.debounce && !deps.debouncer)
          ) {
            throw new NotFoundError('flow control state is not configured here', 'not_configured');
          }
          const now = deps.clock.now();
          const problem = flowKeyProblem(key);
          if (problem)
            throw new ValidationError('not a usable key', [{ path: 'key', message: problem }], 'invalid_key');
          const views = typeLimits.length > 0 ? await limitsService(type).views(spec, key) : [];
          let single = {};
          if (singleton && flow) {
            const scope = singletonScope(type, singleton);
            const singleKey = singleton.key ? key : WHOLE_TYPE_KEY;
            const state = await flow.state({ scope, key: singleKey });
            single = {
              singleton: {
                scope: scope.slice(1),
                mode: singleton.mode,
                key: singleKey,
                running: running(state.holders),
                waiting: state.waiting,
              },
            };
          }
          return json(200, {
            type,
            key,
            limits: views,
            ...single,
            ...(spec.debounce && deps.debouncer
              ? await (async () => {
                  const debounceKey = spec.debounce?.key ? key : WHOLE_TYPE_KEY;
                  const window = await deps.debouncer?.state({ scope: debounceScope(type), key: debounceKey });
                  return {
                    debounce: {
                      key: debounceKey,
                      periodSeconds: spec.debounce?.periodSeconds,
                      ...(spec.debounce?.maxWaitSeconds === undefined
                        ? {}
                        : { maxWaitSeconds: spec.debounce.maxWaitSeconds }),
                      ...(window?.run !== undefined && window.first !== undefined
                        ? { run: window.run, since: new Date(window.first).toISOString() }
                        : {}),
                    },
                  };
                })()
              : {}),
            ...Object.fromEntries(
              await Promise.all(
                paced.map(async ([what]) => [what, await paceView(deps.pacer as Pacer, spec, what, key, now)]),
              ),
            ),
          });
        },
      },
    },
  ];
}

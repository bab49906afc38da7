import { type FlowSlots, flowKeyProblem, type Holder, singletonScope, slotsOf, WHOLE_TYPE_KEY } from '../../core/flow';
import type { JobTypeSpec } from '../../core/job-type';
import { NotFoundError, ValidationError } from '../../errors';
import { json, type Route } from '../http';

const running = (holders: readonly Holder[]) =>
  holders.map((h) => ({ jobId: h.jobId, since: new Date(h.since).toISOString() }));

/**
 * `GET /types/{type}/keys/{key}`: the state of one key value of a job type's flow control: for
 * each concurrency limit, and for its singleton, the jobs holding a slot (and since when) and how
 * many wait. A limit without a key function has one key for the whole type, shown whatever `key`
 * is asked for; so has a singleton without one.
 */
export function flowRoutes(deps: { catalog: readonly JobTypeSpec[]; flow?: FlowSlots }): Route[] {
  const specs = new Map(deps.catalog.map((spec) => [spec.type, spec]));
  return [
    {
      path: '/types/{type}/keys/{key}',
      methods: {
        GET: async (_request, params) => {
          const type = params.type ?? '';
          const key = params.key ?? '';
          const spec = specs.get(type);
          if (!spec) throw new NotFoundError(`job type ${JSON.stringify(type)} not found`, 'type_not_found');
          const limits = spec.concurrency ?? [];
          const singleton = spec.singleton;
          if ((limits.length === 0 && !singleton) || !deps.flow) {
            throw new NotFoundError(
              `job type ${type} has no flow control (concurrency or singleton)`,
              'no_flow_control',
            );
          }
          const problem = flowKeyProblem(key);
          if (problem)
            throw new ValidationError('not a usable key', [{ path: 'key', message: problem }], 'invalid_key');
          const keys = limits.map((l) => (l.key ? key : WHOLE_TYPE_KEY));
          const flow = deps.flow;
          const states = await Promise.all(slotsOf(type, limits, keys).map((slot) => flow.state(slot)));
          let single = {};
          if (singleton) {
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
            limits: states.map((state, i) => ({
              index: i,
              limit: limits[i]?.limit ?? 0,
              key: keys[i] ?? key,
              running: running(state.holders),
              waiting: state.waiting,
            })),
            ...single,
          });
        },
      },
    },
  ];
}

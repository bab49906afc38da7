import { type FlowSlots, flowKeyProblem, slotsOf, WHOLE_TYPE_KEY } from '../../core/flow';
import type { JobTypeSpec } from '../../core/job-type';
import { NotFoundError, ValidationError } from '../../errors';
import { json, type Route } from '../http';

/**
 * `GET /types/{type}/keys/{key}`: the state of one key value of a job type's concurrency limits:
 * for each limit, the jobs holding a slot (and since when) and how many wait. A limit without a
 * key function has one key for the whole type, shown whatever `key` is asked for.
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
          const limits = spec.concurrency;
          if (!limits || !deps.flow) {
            throw new NotFoundError(`job type ${type} has no concurrency limits`, 'no_concurrency_limits');
          }
          const problem = flowKeyProblem(key);
          if (problem)
            throw new ValidationError('not a usable key', [{ path: 'key', message: problem }], 'invalid_key');
          const keys = limits.map((l) => (l.key ? key : WHOLE_TYPE_KEY));
          const flow = deps.flow;
          const states = await Promise.all(slotsOf(type, limits, keys).map((slot) => flow.state(slot)));
          return json(200, {
            type,
            key,
            limits: states.map((state, i) => ({
              index: i,
              limit: limits[i]?.limit ?? 0,
              key: keys[i] ?? key,
              running: state.holders.map((h) => ({ jobId: h.jobId, since: new Date(h.since).toISOString() })),
              waiting: state.waiting,
            })),
          });
        },
      },
    },
  ];
}

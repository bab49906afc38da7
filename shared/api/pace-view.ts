/**
 * A key's throttle or rate limit as the key views show it (`GET /types/{type}/keys/{key}`, and
 * the answer of a `PUT …/limits` that set one): the pace that holds (the one set at run time, or
 * the spec's), where it comes from, and the next start the key allows.
 */
import { WHOLE_TYPE_KEY } from '../core/flow';
import type { JobTypeSpec } from '../core/job-type';
import { type Pacer, paceScope, rateLimitPace, throttlePace } from '../core/pace';
import { rankTime } from '../core/priority';

/** How many jobs of a throttle's line the view lists. */
const LINE_SHOWN = 50;

/** A throttle or rate limit of a key, as the key views show it. */
export interface PaceView {
  key: string;
  limit: number;
  periodSeconds: number;
  burst?: number;
  /** `runtime`: set by `PUT …/limits`; `spec`: the spec's holds. */
  source: 'spec' | 'runtime';
  specLimit: number;
  specPeriodSeconds: number;
  setBy?: string;
  setAt?: string;
  /** The next start the key allows: a throttle's next turn, or when a rate limit accepts again. */
  nextStartAt: string;
  /**
   * The throttle of a type with priorities: the first jobs waiting for a turn, in the order they
   * are served, and the time each rank stands for.
   */
  line?: { jobId: string; rankedAt: string }[];
}

/** The view of a key's throttle or rate limit (`what`), as it holds now: two reads (three with a throttle's line). */
export async function paceView(
  pacer: Pacer,
  spec: JobTypeSpec,
  what: 'throttle' | 'rateLimit',
  key: string,
  now: number,
): Promise<PaceView | undefined> {
  const options = spec[what];
  if (!options) return undefined;
  const paceKey = options.key ? key : WHOLE_TYPE_KEY;
  const scope = paceScope(spec.type, what);
  const lined = what === 'throttle' && spec.priority !== undefined;
  const [tat, runtime, line] = await Promise.all([
    pacer.state({ scope, key: paceKey }),
    pacer.runtimePace({ scope, key: paceKey }),
    lined ? pacer.line({ scope, key: paceKey, max: LINE_SHOWN }) : undefined,
  ]);
  const pace = runtime?.pace ?? (what === 'throttle' ? throttlePace(options) : rateLimitPace(options));
  // the next start the key allows: a throttle's next turn, a rate limit's next accepted job
  const next = tat === undefined ? now : Math.max(now, tat - pace.toleranceMs);
  const burst = runtime ? runtime.burst : (options as { burst?: number }).burst;
  return {
    key: paceKey,
    limit: runtime?.limit ?? options.limit,
    periodSeconds: runtime?.periodSeconds ?? options.periodSeconds,
    ...(what === 'throttle' ? { burst: burst ?? 1 } : {}),
    source: runtime ? 'runtime' : 'spec',
    specLimit: options.limit,
    specPeriodSeconds: options.periodSeconds,
    ...(runtime ? { setBy: runtime.by, setAt: new Date(runtime.at).toISOString() } : {}),
    nextStartAt: new Date(next).toISOString(),
    ...(line
      ? { line: line.map((e) => ({ jobId: e.jobId, rankedAt: new Date(rankTime(e.rank)).toISOString() })) }
      : {}),
  };
}

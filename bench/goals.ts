/**
 * The issue's goals, checked against the figures. The bench reports them; it never fails on them.
 */
import type { ColdStartResult } from './cold-start';
import type { OverheadResult } from './overhead';
import type { PathResult } from './paths';

export interface Goal {
  goal: string;
  target: string;
  measured: string;
  met: boolean;
}

/** The round trips a bare SQS → Lambda pipeline also makes: SendMessage before, none of ours after. */
const FLOOR_BEFORE = 1;

/** Sequential AWS calls our code makes before and after the handler of an immediate job, beyond the floor's. */
export function addedRoundTrips(path: PathResult): { before: number; after: number } | undefined {
  const s = path.figures?.sequential;
  if (!s) return undefined;
  return { before: s.api + s.workerBefore - FLOOR_BEFORE, after: s.workerAfter };
}

export function checkGoals(paths: PathResult[], overhead: OverheadResult, coldStart: ColdStartResult): Goal[] {
  const goals: Goal[] = [];
  const immediate = paths.find((p) => p.id === 'immediate');
  const trips = immediate ? addedRoundTrips(immediate) : undefined;
  if (immediate?.figures && trips) {
    const s = immediate.figures.sequential;
    goals.push({
      goal: 'Sequential platform round trips before the handler (enqueue → handler starts)',
      target: '≤ 2',
      measured: `${trips.before} (API ${s.api} in sequence − the SendMessage any queue needs + worker claim ${s.workerBefore})`,
      met: trips.before <= 2,
    });
    goals.push({
      goal: 'Sequential platform round trips after the handler (handler returns → job recorded)',
      target: '≤ 2',
      measured: `${trips.after} (worker UpdateItem)`,
      met: trips.after <= 2,
    });
    const w = immediate.figures.writeUnits;
    goals.push({
      goal: 'DynamoDB write units, immediate job that succeeds',
      target: '≤ 3',
      measured: `${w.total} billed (table ${w.table} + indexes ${Object.entries(w.indexes)
        .map(([name, units]) => `${name} ${units}`)
        .join(', ')})`,
      met: w.total <= 3,
    });
  }
  goals.push({
    goal: 'Runtime CPU overhead per job (createWorker vs bare handler, in-memory ports)',
    target: '≤ 500 µs',
    measured: `${overhead.worker.overheadUs} µs (${overhead.worker.runtimeWithSdk.us} µs with the DynamoDB adapter + SDK, transport stubbed)`,
    met: overhead.worker.overheadUs <= 500,
  });
  const worker = coldStart.bundles.find((b) => b.name.startsWith('worker'));
  if (worker?.ratio !== undefined) {
    goals.push({
      goal: 'Worker bundle load time vs SDK-only baseline (same clients)',
      target: '≤ 1.5×',
      measured: `${worker.ratio}× (${worker.importMs} ms vs ${worker.baseline})`,
      met: worker.ratio <= 1.5,
    });
  }
  return goals;
}

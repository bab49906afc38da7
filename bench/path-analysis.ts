/**
 * Turns the calls recorded while jobs ran (one job at a time) into per-job figures: requests by
 * actor/service/operation, DynamoDB units, and sequential round trips around the handler.
 */
import { type CallRecord, sequentialDepth } from './counting-middleware';

/** The calls of one worker invocation and when the job handler ran inside it. */
export interface Invocation {
  calls: CallRecord[];
  /** `performance.now()` at handler start and end; undefined when the handler did not run. */
  handler?: { start: number; end: number };
  /** Wall-clock ms of the invocation. */
  ms: number;
}

/** One job's recorded activity. */
export interface JobTrace {
  api: CallRecord[];
  invocations: Invocation[];
  /** Calls the event source mapping made for this job (only receives that returned a message). */
  esm: CallRecord[];
  schedulerInvocations: number;
  apiMs: number;
}

export interface OperationCount {
  actor: string;
  service: string;
  operation: string;
  perJob: number;
  /** HTTP attempts per job, SDK retries included. */
  attemptsPerJob: number;
}

export interface Units {
  total: number;
  table: number;
  indexes: Record<string, number>;
}

export interface SequentialTrips {
  /** API: from request to response. */
  api: number;
  /** Worker, on the attempt that succeeded: before the handler starts, and after it returns. */
  workerBefore: number;
  workerAfter: number;
  /** Worker, after the handler of an attempt that failed (0 when none failed). */
  workerAfterFailure: number;
  /** Event source mapping: receive before, delete after (also in a bare SQS → Lambda pipeline). */
  esmBefore: number;
  esmAfter: number;
}

export interface PathFigures {
  jobs: number;
  operations: OperationCount[];
  writeUnits: Units;
  readUnits: Units;
  schedulerInvocations: number;
  lambdaInvocations: { api: number; worker: number };
  sequential: SequentialTrips;
  /** Wall-clock ms measured locally (against emulators: informative only). */
  localMs: { api: number; workerInvocation: number };
}

const round = (n: number) => Math.round(n * 100) / 100;

function addUnits(into: Units, call: CallRecord): void {
  const capacity = call.capacity;
  if (!capacity) return;
  into.total += capacity.total;
  into.table += capacity.table;
  for (const [name, units] of Object.entries(capacity.indexes)) into.indexes[name] = (into.indexes[name] ?? 0) + units;
}

function divide(units: Units, n: number): Units {
  return {
    total: round(units.total / n),
    table: round(units.table / n),
    indexes: Object.fromEntries(Object.entries(units.indexes).map(([k, v]) => [k, round(v / n)])),
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? 0 : (sorted[Math.floor((sorted.length - 1) / 2)] ?? 0);
}

/** Averages traces of jobs that took the same path. */
export function analyse(traces: JobTrace[]): PathFigures {
  const n = Math.max(1, traces.length);
  const counts = new Map<string, OperationCount>();
  const writeUnits: Units = { total: 0, table: 0, indexes: {} };
  const readUnits: Units = { total: 0, table: 0, indexes: {} };
  let schedulerInvocations = 0;
  let workerInvocations = 0;
  const seq: SequentialTrips[] = [];
  const workerMs: number[] = [];

  for (const trace of traces) {
    const all = [...trace.api, ...trace.invocations.flatMap((i) => i.calls), ...trace.esm];
    for (const call of all) {
      const key = `${call.actor}|${call.service}|${call.operation}`;
      const count = counts.get(key) ?? {
        actor: call.actor,
        service: call.service,
        operation: call.operation,
        perJob: 0,
        attemptsPerJob: 0,
      };
      count.perJob += 1;
      count.attemptsPerJob += call.attempts;
      counts.set(key, count);
      addUnits(call.capacity?.kind === 'read' ? readUnits : writeUnits, call);
    }
    schedulerInvocations += trace.schedulerInvocations;
    workerInvocations += trace.invocations.length;
    const last = trace.invocations.at(-1);
    const handler = last?.handler;
    const worker = last?.calls.filter((c) => c.actor === 'worker') ?? [];
    const afterFailures = trace.invocations.slice(0, -1).map((inv) => {
      const end = inv.handler?.end;
      return end === undefined ? 0 : sequentialDepth(inv.calls.filter((c) => c.start >= end));
    });
    const receives = trace.esm.filter((c) => c.operation === 'ReceiveMessage');
    const deletes = trace.esm.filter((c) => c.operation.startsWith('DeleteMessage'));
    seq.push({
      api: sequentialDepth(trace.api),
      workerBefore: handler ? sequentialDepth(worker.filter((c) => c.start < handler.start)) : 0,
      workerAfter: handler ? sequentialDepth(worker.filter((c) => c.start >= handler.end)) : 0,
      workerAfterFailure: Math.max(0, ...afterFailures),
      esmBefore: receives.length > 0 ? 1 : 0,
      esmAfter: deletes.length > 0 ? 1 : 0,
    });
    for (const invocation of trace.invocations) workerMs.push(invocation.ms);
  }

  const maxOf = (pick: (s: SequentialTrips) => number) => Math.max(0, ...seq.map(pick));
  return {
    jobs: traces.length,
    operations: [...counts.values()].map((c) => ({
      ...c,
      perJob: round(c.perJob / n),
      attemptsPerJob: round(c.attemptsPerJob / n),
    })),
    writeUnits: divide(writeUnits, n),
    readUnits: divide(readUnits, n),
    schedulerInvocations: round(schedulerInvocations / n),
    lambdaInvocations: { api: 1, worker: round(workerInvocations / n) },
    sequential: {
      api: maxOf((s) => s.api),
      workerBefore: maxOf((s) => s.workerBefore),
      workerAfter: maxOf((s) => s.workerAfter),
      workerAfterFailure: maxOf((s) => s.workerAfterFailure),
      esmBefore: maxOf((s) => s.esmBefore),
      esmAfter: maxOf((s) => s.esmAfter),
    },
    localMs: { api: round(median(traces.map((t) => t.apiMs))), workerInvocation: round(median(workerMs)) },
  };
}

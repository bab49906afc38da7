/**
 * Turns the calls recorded while jobs ran (one trace at a time) into per-job figures: requests
 * by actor/service/operation, DynamoDB units, Lambda invocations, and sequential round trips
 * around the handler.
 */
import { type CallRecord, sequentialDepth } from './counting-middleware';

/** The calls of one worker invocation and when the job handler ran inside it. */
export interface Invocation {
  calls: CallRecord[];
  /** Records in the invocation's event. */
  records: number;
  /** `performance.now()` at the (last) handler start and end; undefined when no handler ran. */
  handler?: { start: number; end: number };
  /** Wall-clock ms of the invocation. */
  ms: number;
}

/** What one trace (one job, one batch of jobs, one fire, one supervisor pass) did. */
export interface JobTrace {
  /** Jobs (or fires, cancels, passes) the trace covers: figures are divided by it. */
  jobs: number;
  /** Calls of the API Lambda, and how many API requests made them. */
  api: CallRecord[];
  apiInvocations: number;
  invocations: Invocation[];
  /** Calls the event source mapping made (receives that returned nothing are left out). */
  esm: CallRecord[];
  /** Calls of the supervisor Lambda, and its passes. */
  supervisor: CallRecord[];
  supervisorInvocations: number;
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
  /** Units DynamoDB Local does not report, estimated (refused conditional writes, empty queries). */
  estimated: number;
}

export interface SequentialTrips {
  /** API: from request to response. */
  api: number;
  /** Worker, on the invocation that finished the job: before the handler starts, and after it returns. */
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
  lambdaInvocations: { api: number; worker: number; supervisor: number };
  /** Records per worker invocation, on average (1 when jobs ran one at a time). */
  batchFill: number;
  /** Sequential depth of one API request, and its call count (calls may run in parallel). */
  apiDepth: number;
  apiCallsPerRequest: number;
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
  if (capacity.estimated) into.estimated += capacity.total;
  for (const [name, units] of Object.entries(capacity.indexes)) into.indexes[name] = (into.indexes[name] ?? 0) + units;
}

function divide(units: Units, n: number): Units {
  return {
    total: round(units.total / n),
    table: round(units.table / n),
    indexes: Object.fromEntries(Object.entries(units.indexes).map(([k, v]) => [k, round(v / n)])),
    estimated: round(units.estimated / n),
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? 0 : (sorted[Math.floor((sorted.length - 1) / 2)] ?? 0);
}

function tripsOf(trace: JobTrace): SequentialTrips {
  const last = trace.invocations.at(-1);
  const handler = last?.handler;
  const worker = last?.calls ?? [];
  const afterFailures = trace.invocations.slice(0, -1).map((inv) => {
    const end = inv.handler?.end;
    return end === undefined ? 0 : sequentialDepth(inv.calls.filter((c) => c.start >= end));
  });
  return {
    api: sequentialDepth(trace.api),
    workerBefore: handler ? sequentialDepth(worker.filter((c) => c.start < handler.start)) : 0,
    workerAfter: handler ? sequentialDepth(worker.filter((c) => c.start >= handler.end)) : 0,
    workerAfterFailure: Math.max(0, ...afterFailures),
    esmBefore: trace.esm.some((c) => c.operation === 'ReceiveMessage') ? 1 : 0,
    esmAfter: trace.esm.some((c) => c.operation.startsWith('DeleteMessage')) ? 1 : 0,
  };
}

/** Averages traces of the same path, per job. */
export function analyse(traces: JobTrace[]): PathFigures {
  const n = Math.max(
    1,
    traces.reduce((sum, t) => sum + t.jobs, 0),
  );
  const counts = new Map<string, OperationCount>();
  const writeUnits: Units = { total: 0, table: 0, indexes: {}, estimated: 0 };
  const readUnits: Units = { total: 0, table: 0, indexes: {}, estimated: 0 };
  const totals = { scheduler: 0, api: 0, worker: 0, supervisor: 0, records: 0 };
  for (const trace of traces) {
    const all = [...trace.api, ...trace.invocations.flatMap((i) => i.calls), ...trace.esm, ...trace.supervisor];
    for (const call of all) {
      const key = `${call.actor}|${call.service}|${call.operation}`;
      const count = counts.get(key) ?? { ...call, perJob: 0, attemptsPerJob: 0 };
      count.perJob += 1;
      count.attemptsPerJob += call.attempts;
      counts.set(key, count);
      addUnits(call.capacity?.kind === 'read' ? readUnits : writeUnits, call);
    }
    totals.scheduler += trace.schedulerInvocations;
    totals.api += trace.apiInvocations;
    totals.worker += trace.invocations.length;
    totals.supervisor += trace.supervisorInvocations;
    totals.records += trace.invocations.reduce((sum, i) => sum + i.records, 0);
  }
  const seq = traces.map(tripsOf);
  const maxOf = (pick: (s: SequentialTrips) => number) => Math.max(0, ...seq.map(pick));
  const withApi = traces.filter((t) => t.apiInvocations > 0);
  return {
    jobs: n,
    operations: [...counts.values()].map((c) => ({
      actor: c.actor,
      service: c.service,
      operation: c.operation,
      perJob: round(c.perJob / n),
      attemptsPerJob: round(c.attemptsPerJob / n),
    })),
    writeUnits: divide(writeUnits, n),
    readUnits: divide(readUnits, n),
    schedulerInvocations: round(totals.scheduler / n),
    lambdaInvocations: {
      api: round(totals.api / n),
      worker: round(totals.worker / n),
      supervisor: round(totals.supervisor / n),
    },
    batchFill: totals.worker > 0 ? round(totals.records / totals.worker) : 0,
    apiDepth: maxOf((s) => s.api),
    apiCallsPerRequest: round(withApi.reduce((sum, t) => sum + t.api.length, 0) / Math.max(1, totals.api)),
    sequential: {
      api: maxOf((s) => s.api),
      workerBefore: maxOf((s) => s.workerBefore),
      workerAfter: maxOf((s) => s.workerAfter),
      workerAfterFailure: maxOf((s) => s.workerAfterFailure),
      esmBefore: maxOf((s) => s.esmBefore),
      esmAfter: maxOf((s) => s.esmAfter),
    },
    localMs: {
      api: round(median(withApi.map((t) => t.apiMs))),
      workerInvocation: round(median(traces.flatMap((t) => t.invocations.map((i) => i.ms)))),
    },
  };
}

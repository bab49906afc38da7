/**
 * Fair share on local AWS, through the API and the workers: the noisy neighbour. One type with a
 * limit of 10; tenant `a` enqueues its jobs in batches of 100, and once its first half is in,
 * tenants `b`–`e` enqueue theirs (one batch each, at once); then `a` enqueues its second half.
 * Three runs, one after the other on one platform:
 * - `alone`: `b`–`e` only, on the type shared fairly (what they wait with nobody else);
 * - `oldest-first`: behind `a`, on the same limit without `fairBy` (today's line: oldest first);
 * - `fair share`: behind `a`, on the limit with `fairBy: (p) => p.tenant`.
 * Reported: the quiet tenants' wait from enqueue (the batch request sent) to start (the handler
 * called), and `a`'s, in each run; of the quiet tenants' wait, the part before each job was
 * placed (in line, or started); and the DynamoDB transactions each run sent and had refused. Every job takes {@link JOB_MS} in its handler. The queue runners are the
 * deployed defaults (5 concurrent invocations of up to 10 messages). An uncounted warm-up run on
 * each type comes first.
 */
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { defineJobType } from '../shared/core/job-type';
import { createLogger } from '../shared/logger';
import type { JobDefinition } from '../shared/runtime/job-definition';
import type { LocalAws } from '../test/local-aws/index';
import { startLocalPlatform } from '../test/local-aws/local-platform';
import { uniquePrefix } from '../test/local-aws/namespace';
import { CallRecorder, countedClients } from './counting-middleware';
import { quantile, until } from './scenario';

const LIMIT = 10;
/** How long each job's handler takes. */
const JOB_MS = 50;
const NOISY = 'a';
const QUIET = ['b', 'c', 'd', 'e'];
const BATCH = 100;

const payload = z.object({ tenant: z.string(), i: z.int() });
const fairSpec = defineJobType({
  type: 'tenant-fair',
  payload,
  timeoutMs: 60_000,
  concurrency: [{ limit: LIMIT, fairBy: (p) => p.tenant }],
});
/** The same limit, not shared: a freed place goes to the oldest job in line. */
const plainSpec = defineJobType({ type: 'tenant-plain', payload, timeoutMs: 60_000, concurrency: [{ limit: LIMIT }] });

export interface Waits {
  /** Wait from enqueue to start, ms. */
  p50: number;
  p99: number;
  max: number;
}

export interface NoisyRun {
  row: 'alone' | 'oldest-first' | 'fair share';
  type: string;
  /** The quiet tenants' (`b`–`e`) waits. */
  quiet: Waits;
  /**
   * The part of the quiet tenants' waits before each job was placed: in line (at enqueue, or on
   * its first delivery) or started.
   */
  quietInQueue: Waits;
  /** The noisy tenant's (`a`) waits; absent when it enqueued nothing. */
  noisy?: Waits;
  /**
   * DynamoDB transactions the run sent (joins, admissions) and those refused (a conflict with
   * another writer of the slot item, or a condition another's write broke): each refused one
   * was read again and sent again.
   */
  transactions: { sent: number; refused: number };
  /** From the first enqueue to the last job's start. */
  seconds: number;
}

export interface NoisyNeighbourBench {
  limit: number;
  jobMs: number;
  /** Jobs the noisy tenant enqueues. */
  noisy: number;
  /** Jobs each quiet tenant enqueues. */
  quietEach: number;
  quietTenants: number;
  /** The first round's `alone` run. */
  alone: NoisyRun;
  oldestFirst: NoisyRun;
  /** The first round's `fair share` run. */
  fair: NoisyRun;
  /**
   * Every round of `alone` then `fair share`, the first included: a p99 of 80 waits is nearly
   * their maximum, so one round's ratio swings with the machine; the goal takes the median
   * round's.
   */
  rounds: { alone: NoisyRun; fair: NoisyRun }[];
}

/** A round's ratio: the quiet tenants' p99 with fair share over their p99 alone. */
export const fairRatio = (r: { alone: NoisyRun; fair: NoisyRun }) => r.fair.quiet.p99 / r.alone.quiet.p99;

/** The round of median ratio (the lower middle of an even count). */
export function medianRound<R extends { alone: NoisyRun; fair: NoisyRun }>(rounds: readonly R[]): R {
  const sorted = [...rounds].sort((a, b) => fairRatio(a) - fairRatio(b));
  const middle = sorted[Math.floor((sorted.length - 1) / 2)];
  if (!middle) throw new Error('noisy-neighbour bench: no rounds');
  return middle;
}

interface Planned {
  id: string;
  tenant: string;
  i: number;
}

function waits(values: number[]): Waits {
  const sorted = [...values].sort((x, y) => x - y);
  return { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), max: sorted.at(-1) ?? Number.NaN };
}

const jobsOf = (row: string, tenant: string, n: number): Planned[] =>
  Array.from({ length: n }, (_, i) => ({ id: `${row}-${tenant}-${i}`, tenant, i }));

/** The worker's log line when a delivered job joins a line. */
const JOINED = 'waiting for a concurrency slot';

/** A log sink that notes when each job first joined a line (from the worker's info lines). */
function joining(joined: Map<string, number>) {
  return (line: string) => {
    if (!line.includes(JOINED)) return;
    const { message, jobId } = JSON.parse(line) as { message?: string; jobId?: unknown };
    if (message === JOINED && typeof jobId === 'string' && !joined.has(jobId)) joined.set(jobId, performance.now());
  };
}

/** The handler of both types: notes each job's first start and its end. */
function recording(starts: Map<string, number>, ended: Set<string>) {
  return (async (_p: unknown, ctx: { jobId: string }) => {
    if (!starts.has(ctx.jobId)) starts.set(ctx.jobId, performance.now());
    await new Promise((r) => setTimeout(r, JOB_MS));
    ended.add(ctx.jobId);
    return { ok: true };
  }) as never;
}

/** The platform, its observations, and one run of the scenario on one of its types. */
async function startScenario(aws: LocalAws, quietEach: number) {
  const starts = new Map<string, number>();
  const ended = new Set<string>();
  const joined = new Map<string, number>();
  const run = recording(starts, ended);
  const recorder = new CallRecorder();
  aws.applyEnv();
  const platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('bench-noisy'),
    clients: countedClients(recorder),
    jobs: [
      { spec: fairSpec, run },
      { spec: plainSpec, run },
    ] satisfies JobDefinition[],
    logger: createLogger({ level: 'info', sink: joining(joined) }),
    leaseMs: 30_000,
    runner: { batchSize: 10, maxConcurrency: 5, waitTimeSeconds: 1 },
  });
  const enqueuedAt = new Map<string, number>();
  const enqueue = async (type: string, jobs: Planned[]) => {
    for (let i = 0; i < jobs.length; i += BATCH) {
      const part = jobs.slice(i, i + BATCH);
      const sent = performance.now();
      for (const j of part) enqueuedAt.set(j.id, sent);
      const response = await fetch(`${platform.url}/jobs/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jobs: part.map((j) => ({ id: j.id, type, payload: { tenant: j.tenant, i: j.i } })) }),
      });
      const body = (await response.json()) as { results?: { status: string }[] };
      const failed = (body.results ?? []).filter((r) => r.status === 'error').length;
      if (response.status >= 300 || failed > 0) {
        throw new Error(`noisy-neighbour bench: batch answered ${response.status}, ${failed} jobs refused`);
      }
    }
  };
  const enqueued = (j: Planned) => enqueuedAt.get(j.id) ?? Number.NaN;
  const waitOf = (jobs: Planned[]) => jobs.map((j) => (starts.get(j.id) ?? Number.NaN) - enqueued(j));
  // first delivered: joined the line, or started without waiting
  const delivered = (j: Planned) =>
    Math.min(joined.get(j.id) ?? Number.POSITIVE_INFINITY, starts.get(j.id) ?? Number.NaN);

  const measure = async <Row extends string>(row: Row, type: string, noisyJobs: number, round = 1) => {
    const tag = `${row.replace(/\s/g, '-')}-${type}${round > 1 ? `-r${round}` : ''}`;
    const loud = jobsOf(tag, NOISY, noisyJobs);
    const quiet = QUIET.flatMap((t) => jobsOf(tag, t, quietEach));
    const all = [...loud, ...quiet];
    // the quiet tenants come once the first half of the noisy one's batches is in
    const half = Math.ceil(loud.length / BATCH / 2) * BATCH;
    // the last run's places are given back after its handlers returned: let them go first
    await new Promise((r) => setTimeout(r, 1000));
    const first = performance.now();
    const mark = recorder.mark();
    await enqueue(type, loud.slice(0, half));
    await Promise.all(
      QUIET.map((t) =>
        enqueue(
          type,
          quiet.filter((j) => j.tenant === t),
        ),
      ),
    );
    await enqueue(type, loud.slice(half));
    await until(
      'noisy-neighbour',
      () => all.every((j) => ended.has(j.id)),
      900_000,
      `every job of the ${row} run to end`,
    );
    const last = Math.max(...all.map((j) => starts.get(j.id) ?? Number.NaN));
    const sent = recorder.since(mark).filter((c) => c.service === 'dynamodb' && c.operation === 'TransactWriteItems');
    return {
      row,
      type,
      quiet: waits(waitOf(quiet)),
      quietInQueue: waits(quiet.map((j) => delivered(j) - enqueued(j))),
      ...(loud.length > 0 ? { noisy: waits(waitOf(loud)) } : {}),
      transactions: { sent: sent.length, refused: sent.filter((c) => !c.ok).length },
      seconds: (last - first) / 1000,
    };
  };
  return { measure, stop: () => platform.stop() };
}

/**
 * Runs the scenario: `rounds` rounds of `alone` then `fair share` (each job id carries its round),
 * with the `oldest-first` baseline once, after the first `alone`.
 *
 * @default rounds 1
 */
export async function measureNoisyNeighbour(
  aws: LocalAws,
  noisy: number,
  quietEach: number,
  rounds = 1,
): Promise<NoisyNeighbourBench> {
  const scenario = await startScenario(aws, quietEach);
  try {
    // connections, JIT, the slot items' first writes: not counted
    await scenario.measure('warm-up', fairSpec.type, LIMIT);
    await scenario.measure('warm-up', plainSpec.type, LIMIT);
    const alone = await scenario.measure('alone', fairSpec.type, 0);
    const oldestFirst = await scenario.measure('oldest-first', plainSpec.type, noisy);
    const fair = await scenario.measure('fair share', fairSpec.type, noisy);
    const all = [{ alone, fair }];
    for (let round = 2; round <= rounds; round++) {
      all.push({
        alone: await scenario.measure('alone', fairSpec.type, 0, round),
        fair: await scenario.measure('fair share', fairSpec.type, noisy, round),
      });
    }
    return {
      limit: LIMIT,
      jobMs: JOB_MS,
      noisy,
      quietEach,
      quietTenants: QUIET.length,
      alone,
      oldestFirst,
      fair,
      rounds: all,
    };
  } finally {
    await scenario.stop();
  }
}

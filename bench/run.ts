/**
 * `npm run bench [-- --quick]`: what a job costs on AWS and what the platform adds, measured
 * on local AWS through the real code paths. Prints markdown tables and writes the figures to
 * bench/results/latest.json (`latest-quick.json` for --quick). Reports goals; never fails on them.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BatchHandlersBench, measureBatchHandlers } from './batch-handlers';
import { measureColdStart } from './cold-start';
import { costModel } from './cost-model';
import {
  batchHandlersGoal,
  checkGoals,
  fairShareGoal,
  journalGoals,
  priorityGoal,
  throttlePriorityGoal,
} from './goals';
import { type JournalBench, measureJournal } from './journal';
import { startBenchAws } from './local';
import { measureNoisyNeighbour, type NoisyNeighbourBench } from './noisy-neighbour';
import { measureOverhead } from './overhead';
import { measurePaths } from './paths';
import { measurePowertoolsPeer } from './peers';
import { measurePriorities, type PriorityBench } from './priorities';
import { type BenchResults, renderReport } from './report';
import { measureThrottlePriorities, type ThrottlePriorityBench } from './throttle-priorities';
import { measureThroughput } from './throughput';

const SIZES = {
  quick: {
    jobsPerPath: 2,
    peerJobs: 100,
    overheadJobs: 300,
    overheadRounds: 3,
    coldStartRuns: 5,
    throughputJobs: 300,
    resumeSteps: [1000],
    sequentialSteps: 300,
    priorityLow: 100,
    priorityHigh: 10,
    throttleLow: 60,
    throttleHigh: 10,
    noisyJobs: 200,
    quietJobsEach: 5,
    noisyRounds: 1,
    batchJobs: 100,
  },
  full: {
    jobsPerPath: 10,
    peerJobs: 100,
    overheadJobs: 2000,
    overheadRounds: 3,
    coldStartRuns: 15,
    throughputJobs: 5000,
    resumeSteps: [1000, 10_000],
    sequentialSteps: 2000,
    priorityLow: 1000,
    priorityHigh: 50,
    throttleLow: 300,
    throttleHigh: 30,
    noisyJobs: 2000,
    quietJobsEach: 20,
    noisyRounds: 3,
    batchJobs: 1000,
  },
} as const;
const CONCURRENCY = [1, 4, 16];

function usage(): never {
  process.stderr.write('usage: npm run bench [-- --quick]\n');
  process.exit(2);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.some((a) => a !== '--quick')) usage();
  const mode = args.includes('--quick') ? 'quick' : 'full';
  const size = SIZES[mode];
  const started = performance.now();
  const loadBefore = loadavg()[0] ?? 0;
  const step = (what: string) =>
    process.stderr.write(`[bench ${((performance.now() - started) / 1000).toFixed(1)} s] ${what}\n`);

  step(`runtime CPU overhead (${size.overheadJobs} jobs × ${size.overheadRounds})`);
  const overhead = await measureOverhead(size.overheadJobs, size.overheadRounds);
  step(`cold start (${size.coldStartRuns} loads per bundle)`);
  const coldStart = await measureColdStart(size.coldStartRuns);

  step('starting local AWS');
  const bench = await startBenchAws();
  let paths: Awaited<ReturnType<typeof measurePaths>>;
  let handmade: Awaited<ReturnType<typeof measurePowertoolsPeer>>;
  let throughput: Awaited<ReturnType<typeof measureThroughput>>;
  let journal: JournalBench;
  let priorities: PriorityBench;
  let throttlePriorities: ThrottlePriorityBench;
  let noisyNeighbour: NoisyNeighbourBench;
  let batchHandlers: BatchHandlersBench;
  try {
    step(`requests per job (${size.jobsPerPath} jobs per path)`);
    paths = await measurePaths(bench.aws, bench.clock, size.jobsPerPath, mode === 'full');
    step(`hand-built peer: SQS → Lambda + Powertools idempotency (${size.peerJobs} jobs)`);
    handmade = await measurePowertoolsPeer(bench.aws, size.peerJobs);
    step(`throughput (${size.throughputJobs} jobs at ${CONCURRENCY.join(', ')} pollers)`);
    throughput = await measureThroughput(bench.aws, size.throughputJobs, CONCURRENCY, bench.dynamodbPid);
    step(`journal: resume of ${size.resumeSteps.join(', ')} recorded steps; ${size.sequentialSteps} sequential steps`);
    journal = await measureJournal(bench.aws, size);
    step(`priorities: ${size.priorityLow} low-priority jobs in line, then ${size.priorityHigh} high-priority ones`);
    priorities = await measurePriorities(bench.aws, size.priorityLow, size.priorityHigh);
    step(
      `throttle priorities: ${size.throttleLow} low-priority jobs in a throttle's line, then ${size.throttleHigh} high-priority ones`,
    );
    throttlePriorities = await measureThrottlePriorities(bench.aws, size.throttleLow, size.throttleHigh);
    step(
      `fair share: ${size.quietJobsEach} jobs each of 4 quiet tenants in the middle of one tenant's ${size.noisyJobs}; alone, oldest-first, fair share; ${size.noisyRounds} round(s) of alone and fair share`,
    );
    noisyNeighbour = await measureNoisyNeighbour(bench.aws, size.noisyJobs, size.quietJobsEach, size.noisyRounds);
    step(`batch handlers: ${size.batchJobs} jobs with a batch handler, then ${size.batchJobs} single jobs`);
    batchHandlers = await measureBatchHandlers(bench.aws, size.batchJobs);
  } finally {
    step('stopping local AWS');
    await bench.stop();
  }

  const cpu = cpus();
  const cost = costModel(paths, overhead, [handmade]);
  const results: BenchResults = {
    meta: {
      date: new Date().toISOString(),
      mode,
      node: process.version,
      cpu: cpu[0]?.model.trim() ?? 'unknown',
      cores: cpu.length,
      seconds: (performance.now() - started) / 1000,
      loadAverage: [loadBefore, loadavg()[0] ?? 0].map((n) => Math.round(n * 100) / 100),
    },
    goals: [
      ...checkGoals(paths, overhead, coldStart, cost),
      ...journalGoals(journal),
      priorityGoal(priorities),
      throttlePriorityGoal(throttlePriorities),
      fairShareGoal(noisyNeighbour),
      batchHandlersGoal(batchHandlers),
    ],
    paths,
    peers: [handmade],
    cost,
    overhead,
    coldStart,
    throughput,
    journal,
    priorities,
    throttlePriorities,
    noisyNeighbour,
    batchHandlers,
  };
  const out = join(
    dirname(fileURLToPath(import.meta.url)),
    'results',
    mode === 'quick' ? 'latest-quick.json' : 'latest.json',
  );
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(`${renderReport(results)}\n\nFigures: ${out}\n`);
  step('done');
}

main().then(
  // Clients and servers are closed; exit anyway in case a library left a timer or socket behind.
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);

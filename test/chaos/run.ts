/**
 * `npm run test:chaos [-- --jobs 2000 --seed 42 ...]`: the full chaos run (see chaos.ts).
 * Starts its own DynamoDB Local (Java 17+), fauxqs and Scheduler stand-in; prints progress
 * and a report; exits 1 when a guarantee was violated.
 *
 * Options (defaults in DEFAULT_CHAOS): --jobs --seed --types --runners --concurrency --batch
 * --lease-ms --visibility --timeout-ms --fault-rate --escape-rate --after-share
 * --escape-final-writes --lost-responses all|idempotent --kill-rate --dup-rate --deadline-ms
 * --json FILE (write the whole report, with every violation's story, as JSON)
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { type ChaosOptions, runChaos } from './chaos';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string' },
    seed: { type: 'string' },
    types: { type: 'string' },
    runners: { type: 'string' },
    concurrency: { type: 'string' },
    batch: { type: 'string' },
    'lease-ms': { type: 'string' },
    visibility: { type: 'string' },
    'timeout-ms': { type: 'string' },
    'fault-rate': { type: 'string' },
    'escape-rate': { type: 'string' },
    'after-share': { type: 'string' },
    'escape-final-writes': { type: 'boolean' },
    'lost-responses': { type: 'string' },
    'kill-rate': { type: 'string' },
    'dup-rate': { type: 'string' },
    'deadline-ms': { type: 'string' },
    json: { type: 'string' },
  },
});

function num(name: keyof typeof values): number | undefined {
  const raw = values[name];
  if (raw === undefined || typeof raw !== 'string') return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new Error(`--${name} must be a number, got ${raw}`);
  return n;
}

const lostOption = values['lost-responses'];
if (lostOption !== undefined && lostOption !== 'all' && lostOption !== 'idempotent') {
  throw new Error('--lost-responses is all or idempotent');
}
const lost: ChaosOptions['lostResponses'] | undefined = lostOption;

const input: Partial<ChaosOptions> = {
  ...defined({
    jobs: num('jobs'),
    seed: num('seed'),
    types: num('types'),
    runnersPerQueue: num('runners'),
    maxConcurrency: num('concurrency'),
    batchSize: num('batch'),
    leaseMs: num('lease-ms'),
    visibilitySeconds: num('visibility'),
    timeoutMs: num('timeout-ms'),
    faultRate: num('fault-rate'),
    escapeRate: num('escape-rate'),
    afterShare: num('after-share'),
    killRate: num('kill-rate'),
    duplicateRate: num('dup-rate'),
    deadlineMs: num('deadline-ms'),
    escapeFinalWrites: values['escape-final-writes'],
    lostResponses: lost,
  }),
  progress: (line) => console.log(line),
};

function defined<T extends Record<string, unknown>>(record: T): Partial<T> {
  return Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined)) as Partial<T>;
}

const report = await runChaos(input);
console.log(report.text);
if (values.json) {
  writeFileSync(values.json, JSON.stringify(report, null, 2));
  console.log(`report written to ${values.json}`);
}
process.exitCode = report.ok ? 0 : 1;

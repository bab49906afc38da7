/**
 * `npm run test:chaos [-- --jobs 10000 --seed 42 ...]`: the system chaos run (system-chaos.ts).
 * Starts its own DynamoDB Local (Java 17+), fauxqs and Scheduler stand-in; prints its seed,
 * progress and a report with every invariant as checked / violated counts; exits 1 when an
 * invariant was violated or the run timed out.
 *
 * `--worker-only` runs the older worker-level chaos run instead (test/chaos/run.ts, with its
 * own options); so does `npm run test:chaos:worker`.
 *
 * Options (defaults in DEFAULT_SYSTEM_CHAOS): --jobs --seed --types --runners --concurrency
 * --lease-ms --timeout-ms --schedules --horizon-hours --client-timeout-ms --kill-rate
 * --dup-rate --control-rate --workflows --compose-share --deadline-ms --json FILE (the whole report, with every story)
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

if (process.argv.includes('--worker-only')) {
  process.argv = process.argv.filter((arg) => arg !== '--worker-only');
  await import('./run');
} else {
  const { runSystemChaos } = await import('./system-chaos');
  const { values } = parseArgs({
    options: {
      jobs: { type: 'string' },
      seed: { type: 'string' },
      types: { type: 'string' },
      runners: { type: 'string' },
      concurrency: { type: 'string' },
      'lease-ms': { type: 'string' },
      'timeout-ms': { type: 'string' },
      schedules: { type: 'string' },
      'horizon-hours': { type: 'string' },
      'client-timeout-ms': { type: 'string' },
      'kill-rate': { type: 'string' },
      'dup-rate': { type: 'string' },
      'control-rate': { type: 'string' },
      workflows: { type: 'string' },
      'compose-share': { type: 'string' },
      'deadline-ms': { type: 'string' },
      json: { type: 'string' },
    },
  });
  const num = (name: keyof typeof values): number | undefined => {
    const raw = values[name];
    if (raw === undefined || typeof raw !== 'string') return undefined;
    const n = Number(raw);
    if (!Number.isFinite(n)) throw new Error(`--${name} must be a number, got ${raw}`);
    return n;
  };
  const hours = num('horizon-hours');
  const input = Object.fromEntries(
    Object.entries({
      jobs: num('jobs'),
      seed: num('seed'),
      types: num('types'),
      runnersPerQueue: num('runners'),
      maxConcurrency: num('concurrency'),
      leaseMs: num('lease-ms'),
      timeoutMs: num('timeout-ms'),
      schedules: num('schedules'),
      horizonMs: hours === undefined ? undefined : hours * 3600_000,
      clientTimeoutMs: num('client-timeout-ms'),
      killRate: num('kill-rate'),
      duplicateRate: num('dup-rate'),
      controlRate: num('control-rate'),
      workflows: num('workflows'),
      composeShare: num('compose-share'),
      deadlineMs: num('deadline-ms'),
    }).filter(([, v]) => v !== undefined),
  );
  const report = await runSystemChaos({ ...input, progress: (line) => console.log(line) });
  console.log(report.text);
  if (values.json) {
    writeFileSync(values.json, JSON.stringify(report, null, 2));
    console.log(`report written to ${values.json}`);
  }
  process.exitCode = report.ok ? 0 : 1;
}

/**
 * `orrery journal export` and `orrery replay-check` on local AWS: a `checkout` job of version 1
 * runs on the local platform (DynamoDB Local, the SQS emulator) until its cool-off sleep; the CLI
 * exports its journal from the job table (the real SDK, routed by AWS_ENDPOINT_URL_DYNAMODB) to
 * a file, and replays each version of the job against it: v1 and a `patched()` branch pass
 * (exit 0), a renamed, removed or reordered step fails (exit 5). No step body runs in a replay.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type CliIo, main } from '../../shared/cli/main';
import type { JobView } from '../../shared/core/job';
import { createLogger } from '../../shared/logger';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { type LocalPlatform, startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';
import { enqueueNew } from '../support/local-api';
import { checkout, stepBodies } from '../support/replay/checkout-jobs';

let aws: LocalAws;
let platform: LocalPlatform;
const CONFIGS = join(import.meta.dirname, '..', 'support', 'replay');

beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
  aws.applyEnv();
  platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('journal-export'),
    jobs: [checkout('v1')],
    logger: createLogger({ level: 'error' }),
  });
}, 120_000);
afterAll(async () => {
  await platform?.stop();
  await aws?.stop();
});

function capture() {
  const output = {
    text: '',
    isTTY: false,
    columns: 200,
    write(chunk: string) {
      output.text += chunk;
      return true;
    },
  };
  return output;
}

async function cli(argv: string[], cwd = CONFIGS) {
  const stdout = capture();
  const stderr = capture();
  const io: CliIo = { stdout, stderr, env: {}, cwd, readStdin: async () => '' };
  const code = await main(argv, io);
  return { code, out: stdout.text, err: stderr.text };
}

async function until(id: string, done: (job: JobView) => boolean, ms = 30_000): Promise<JobView> {
  const deadline = Date.now() + ms;
  for (;;) {
    const job = (await fetch(`${platform.url}/jobs/${id}`).then((r) => r.json())) as JobView;
    if (done(job)) return job;
    if (Date.now() > deadline) throw new Error(`job ${id} stayed ${JSON.stringify(job)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('orrery journal export, then orrery replay-check, on local AWS', () => {
  it('exports a running job, and the replay check passes v1 and patched, fails renamed, removed and reordered', async () => {
    const id = `order-${Date.now()}`;
    await enqueueNew(platform.url, { id, type: 'checkout', payload: { order: id } });
    await until(id, (j) => j.state === 'waiting');

    const dir = mkdtempSync(join(tmpdir(), 'orrery-export-'));
    const file = join(dir, `${id}.json`);
    const exported = await cli(['journal', 'export', id, '--table', platform.config.tableName, '--out', file]);
    expect(exported.err).toContain(`wrote 3 entries of job ${id} (checkout)`);
    expect(exported.code).toBe(0);
    const journal = JSON.parse(readFileSync(file, 'utf8')) as {
      format: string;
      job: { id: string; type: string; payload: unknown };
      entries: { kind: string; name: string; mark?: { seq: number; version?: string } }[];
    };
    expect(journal).toMatchObject({
      format: 'orrery-journal/1',
      job: { id, type: 'checkout', payload: { order: id } },
    });
    expect(journal.entries.map((e) => [e.kind, e.name, e.mark?.seq, e.mark?.version])).toEqual([
      ['step', 'reserve', 0, 'checkout-v1'],
      ['step', 'charge', 1, 'checkout-v1'],
      ['sleep', 'cool-off', 2, 'checkout-v1'],
    ]);

    stepBodies.length = 0;
    for (const variant of ['v1', 'patched']) {
      const result = await cli(['replay-check', dir, '--config', `orrery.${variant}.config.ts`]);
      expect(result.out).toContain('1 journal(s) replay on this code');
      expect(result.code).toBe(0);
    }
    for (const variant of ['renamed', 'removed', 'reordered']) {
      const result = await cli(['replay-check', dir, '--config', `orrery.${variant}.config.ts`]);
      expect(result.out).toContain('this code does not replay the job');
      expect(result.out).toContain('(version checkout-v1)');
      expect(result.code).toBe(5);
    }
    expect(stepBodies).toEqual([]);
  }, 60_000);

  it('an unknown job, or no table, is an error with nothing written', async () => {
    const missing = await cli(['journal', 'export', 'no-such-job', '--table', platform.config.tableName]);
    expect(missing.code).toBe(2);
    expect(missing.err).toContain('no job no-such-job');
    const noTable = await cli(['journal', 'export', 'x']);
    expect(noTable.code).toBe(2);
    expect(noTable.err).toContain('--table');
  });
});

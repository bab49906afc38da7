/**
 * The built `orrery` binary end to end: `npm run build:cli`'s bundle, spawned as
 * `node bin/orrery.mjs ...`, against a local platform of this file's own (local AWS, a unique
 * prefix), or against the deployed stack named by ORRERY_E2E_OUTPUTS.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { echo } from '../../functions/jobs/echo';
import { flaky } from '../../functions/jobs/flaky';
import { sleep } from '../../functions/jobs/sleep';
import { tenantSync } from '../../functions/jobs/tenant-sync';
import { buildCli } from '../../shared/cli/build';
import { apiUrlFromOutputs } from '../../shared/cli/config';
import { createLogger } from '../../shared/logger';
import { startLocalAws } from '../local-aws/index';
import { startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';
import { flowTest, onMoto } from './target';

const ROOT = resolve(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'orrery.mjs');

let url: string;
let stop: () => Promise<void> = async () => {};

beforeAll(async () => {
  await buildCli();
  const outputs = process.env.ORRERY_E2E_OUTPUTS;
  if (outputs) {
    url = apiUrlFromOutputs(outputs);
    return;
  }
  const aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
  const platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('cli'),
    jobs: [echo, flaky, sleep, tenantSync],
    logger: createLogger({ level: 'silent' }),
  });
  url = platform.url;
  stop = async () => {
    await platform.stop();
    await aws.stop();
  };
});

afterAll(async () => {
  await stop();
});

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI as a user would: a child process, not a TTY, ORRERY_URL pointing at the platform. */
function orrery(
  args: string[],
  options: { env?: Record<string, string | undefined>; cwd?: string } = {},
): Promise<Result> {
  const env: Record<string, string | undefined> = {
    ...process.env,
    ORRERY_URL: url,
    NO_COLOR: undefined,
    ...options.env,
  };
  return new Promise((done) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env, cwd: options.cwd ?? ROOT, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        done({ code, stdout, stderr });
      },
    );
  });
}

let counter = 0;
const uid = (label: string) =>
  `${label}-${Date.now().toString(36)}-${++counter}-${Math.random().toString(36).slice(2, 7)}`;

describe('orrery CLI (built)', () => {
  it('runs the fresh bundle', async () => {
    const { code, stdout } = await orrery(['--version']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^orrery \d+\.\d+\.\d+ \(bundle\)\n$/);
  });

  it('enqueue → watch → get', async () => {
    const enqueued = await orrery(['enqueue', 'flaky', '--payload', '{"failTimes":1}', '-q']);
    expect(enqueued).toMatchObject({ code: 0, stderr: '' });
    const id = enqueued.stdout.trim();
    expect(id).toMatch(/^[0-9a-f-]{36}$/);

    const watched = await orrery(['watch', id, '--interval', '100', '--timeout', '60']);
    expect(watched.code).toBe(0);
    expect(watched.stdout).toMatch(/\d\d:\d\d:\d\d\.\d{3}\s+succeeded\s+attempt 2 of 5/);
    expect(watched.stdout).not.toContain('\u001b['); // not a TTY
    expect(watched.stdout).toMatch(/result\s+\{"succeededOnAttempt":2\}/);

    const got = await orrery(['get', id, '--json']);
    expect(got.code).toBe(0);
    expect(JSON.parse(got.stdout)).toMatchObject({ id, type: 'flaky', state: 'succeeded', attempts: 2 });
  });

  it('enqueue prints the job, and a replay of the same id says it existed', async () => {
    const id = uid('cli-idem');
    const first = await orrery(['enqueue', 'echo', '--payload', '{"a":1}', '--id', id, '--delay', '1']);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(`created job ${id}`);
    expect(first.stdout).toMatch(/state\s+queued/);
    const replay = await orrery(['enqueue', 'echo', '--payload', '{"a":1}', '--id', id, '--json']);
    expect(replay.code).toBe(0);
    expect(JSON.parse(replay.stdout)).toMatchObject({ id, payload: { a: 1 } });
    const conflict = await orrery(['enqueue', 'echo', '--payload', '{"a":2}', '--id', id]);
    expect(conflict.code).toBe(1);
    expect(conflict.stderr).toContain('error: id_conflict (HTTP 409)');
  });

  it('watch exits 3 for a job that fails', async () => {
    const id = (
      await orrery(['enqueue', 'flaky', '--payload', '{"failTimes":9}', '--max-attempts', '1', '-q'])
    ).stdout.trim();
    const watched = await orrery(['watch', id, '--interval', '100', '--timeout', '60']);
    expect(watched.code).toBe(3);
    expect(watched.stdout).toMatch(/failed\s+attempt 1 of 1/);
  });

  it('list --json pages with --limit and --cursor', async () => {
    const since = new Date(Date.now() - 1000).toISOString();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push(
        (await orrery(['enqueue', 'sleep', '--payload', '{"ms":0}', '--id', uid(`cli-list-${i}`), '-q'])).stdout.trim(),
      );
    }
    const list = (args: string[]) => orrery(['list', '--type', 'sleep', '--created-after', since, '--json', ...args]);
    let all: { items: { id: string }[]; nextCursor: string | null } = { items: [], nextCursor: null };
    const deadline = Date.now() + 10_000; // the listing reads GSIs, which may lag the table a little
    while (Date.now() < deadline) {
      all = JSON.parse((await list(['--limit', '10'])).stdout);
      if (ids.every((id) => all.items.some((item) => item.id === id))) break;
    }
    expect(all.items.map((item) => item.id)).toEqual([...ids].reverse());

    const first = await list(['--limit', '2']);
    expect(first.code).toBe(0);
    const page1 = JSON.parse(first.stdout) as typeof all;
    expect(page1.items).toHaveLength(2);
    expect(page1.nextCursor).toEqual(expect.any(String));
    const page2 = JSON.parse((await list(['--limit', '2', '--cursor', page1.nextCursor ?? ''])).stdout) as typeof all;
    expect([...page1.items, ...page2.items].map((item) => item.id)).toEqual([...ids].reverse());

    const table = await orrery(['list', '--type', 'sleep', '--created-after', since]);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+TYPE\s+STATE\s+ATTEMPTS\s+CREATED\s+FINISHED$/);
    for (const id of ids) expect(table.stdout).toContain(id);
  });

  it('cancel, and a second cancel is an illegal_state error', async () => {
    const id = (await orrery(['enqueue', 'echo', '--delay', '600', '-q'])).stdout.trim();
    const cancelled = await orrery(['cancel', id]);
    expect(cancelled.code).toBe(0);
    expect(cancelled.stdout).toMatch(new RegExp(`^cancelled job ${id}\\n`));
    expect(JSON.parse((await orrery(['get', id, '--json'])).stdout).state).toBe('cancelled');
    const again = await orrery(['cancel', id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('illegal_state (HTTP 409)');
  });

  it('API errors exit 1 with the code, message and issues', async () => {
    const invalid = await orrery(['enqueue', 'flaky', '--payload', '{"failTimes":"x"}']);
    expect(invalid.code).toBe(1);
    expect(invalid.stdout).toBe('');
    expect(invalid.stderr).toContain('error: invalid_payload (HTTP 400): payload does not match the flaky schema');
    expect(invalid.stderr).toMatch(/ {2}- payload\.failTimes: /);
    expect(invalid.stderr).toMatch(/request id: \S+/);

    const unknown = await orrery(['enqueue', 'nope']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('unknown_type');
    // the deployed types, sorted: the local platform's three, or every type of a deployed stack
    const listed = /- type: must be one of: (.+)/.exec(unknown.stderr)?.[1]?.split(', ') ?? [];
    expect(listed).toEqual(expect.arrayContaining(['echo', 'flaky', 'sleep']));
    expect(listed).toEqual([...listed].sort());

    const missing = await orrery(['get', uid('missing'), '--json']);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stderr)).toMatchObject({ error: { status: 404, code: 'job_not_found' } });
  });

  it('usage and configuration errors exit 2', async () => {
    const usage = await orrery(['enqueue']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('missing <type>');
    const badJson = await orrery(['enqueue', 'echo', '--payload', '{']);
    expect(badJson.code).toBe(2);
    const noUrl = await orrery(['get', 'x'], {
      env: { ORRERY_URL: undefined },
      cwd: mkdtempSync(join(tmpdir(), 'orrery-')),
    });
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toContain('no API URL');
    const help = await orrery(['watch', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: orrery watch <id> \[options\]/);
  });

  it('dlq list and schedules work through the binary', async () => {
    const dlq = await orrery(['dlq', 'list', 'echo']);
    expect(dlq.code).toBe(0);
    expect(dlq.stdout).toMatch(/echo DLQ: about \d+ messages waiting/);

    const name = uid('cli-sched');
    const created = await orrery([
      'schedules',
      'create',
      name,
      '--type',
      'echo',
      '--rate',
      '1 day',
      '--payload',
      '{"s":1}',
    ]);
    expect(created.code).toBe(0);
    expect(created.stdout).toContain(`created schedule ${name}`);
    expect((await orrery(['schedules', 'list'])).stdout).toContain(name);
    expect((await orrery(['schedules', 'pause', name])).stdout).toContain(`paused schedule ${name}`);
    const updated = await orrery(['schedules', 'update', name, '--cron', '0 3 * * *', '--json']);
    expect(JSON.parse(updated.stdout)).toMatchObject({ name, cron: '0 3 * * *', payload: { s: 1 } });
    expect((await orrery(['schedules', 'delete', name])).code).toBe(0);
    const gone = await orrery(['schedules', 'get', name]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('schedule_not_found');
  });

  it.skipIf(onMoto)(flowTest('key shows a flow-controlled key: who holds its slots and how many wait'), async () => {
    const tenant = uid('tenant');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const out = await orrery([
        'enqueue',
        'tenant-sync',
        '--payload',
        // long enough that two running and one waiting is seen however slow the CLI's calls are
        JSON.stringify({ tenantId: tenant, ms: 10_000 }),
        // the type has priorities: the third asks for one, the others get the type's default
        ...(i === 2 ? ['--priority', '7'] : []),
        '-q',
      ]);
      expect(out.code, out.stderr).toBe(0);
      ids.push(out.stdout.trim());
    }
    const third = JSON.parse((await orrery(['get', ids[2] as string, '--json'])).stdout);
    expect(third.priority).toBe(7);
    expect(JSON.parse((await orrery(['get', ids[0] as string, '--json'])).stdout).priority).toBe(0);
    // two run (the limit), one waits: poll until the workers have picked them up
    let state: { limits: { limit: number; running: { jobId: string }[]; waiting: number }[] } | undefined;
    for (let i = 0; i < 40; i++) {
      const out = await orrery(['key', 'tenant-sync', tenant, '--json']);
      expect(out.code, out.stderr).toBe(0);
      state = JSON.parse(out.stdout);
      if (state?.limits[0]?.running.length === 2 && state.limits[0].waiting === 1) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(state?.limits[0], JSON.stringify(state)).toMatchObject({ limit: 2, waiting: 1 });
    expect(state?.limits[0]?.running.map((r) => r.jobId).every((id) => ids.includes(id))).toBe(true);
    const text = await orrery(['key', 'tenant-sync', tenant]);
    expect(text.stdout).toContain(`tenant-sync / ${tenant}`);
    expect(text.stdout).toMatch(/concurrency\[0\]\s+\S+\s+2\s/);
    const none = await orrery(['key', 'echo', 'x']);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('no_flow_control');
  });
});

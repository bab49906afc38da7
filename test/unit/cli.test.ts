/**
 * The CLI in-process (`main(argv, io)`): argument parsing, help, URL resolution, formatting
 * and exit codes, against a real HTTP peer on 127.0.0.1 (node:http) standing in for the API.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseCommandLine, UsageError } from '../../shared/cli/args';
import { CliConfigError, resolveApiUrl } from '../../shared/cli/config';
import { createStyle, stripAnsi, table, visibleLength, wantsColor } from '../../shared/cli/format';
import { type CliIo, COMMANDS, main } from '../../shared/cli/main';
import type { JobView } from '../../shared/core/job';

// ------------------------------------------------------------------ a tiny HTTP peer

interface Received {
  method: string;
  rawUrl: string;
  query: URLSearchParams;
  json: unknown;
}
type Reply = { status?: number; body?: unknown };

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startPeer(
  reply: (request: Received, index: number) => Reply,
): Promise<{ url: string; requests: Received[] }> {
  const requests: Received[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => {
      body += chunk.toString('utf8');
    });
    req.on('end', () => {
      const received: Received = {
        method: req.method ?? '',
        rawUrl: req.url ?? '',
        query: new URL(req.url ?? '/', 'http://peer').searchParams,
        json: body ? JSON.parse(body) : undefined,
      };
      requests.push(received);
      const answer = reply(received, requests.length - 1);
      res.writeHead(answer.status ?? 200, { 'content-type': 'application/json', 'x-request-id': 'req-1' });
      res.end(answer.body === undefined ? '' : JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

// ------------------------------------------------------------------ running the CLI in-process

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function capture(isTTY: boolean) {
  const output = {
    text: '',
    isTTY,
    columns: 200,
    write(chunk: string) {
      output.text += chunk;
      return true;
    },
  };
  return output;
}

async function run(
  argv: string[],
  options: {
    url?: string;
    env?: Record<string, string>;
    tty?: boolean;
    cwd?: string;
    stdin?: string;
    now?: number;
  } = {},
): Promise<Run> {
  const stdout = capture(options.tty ?? false);
  const stderr = capture(options.tty ?? false);
  const io: CliIo = {
    stdout,
    stderr,
    env: { ...(options.url ? { ORRERY_URL: options.url } : {}), ...options.env },
    cwd: options.cwd ?? mkdtempSync(join(tmpdir(), 'orrery-cli-')),
    readStdin: async () => options.stdin ?? '',
    now: () => options.now ?? Date.parse('2026-11-22T10:00:10.000Z'),
    sleep: async () => {},
  };
  const code = await main(argv, io);
  return { code, stdout: stdout.text, stderr: stderr.text };
}

function jobView(overrides: Partial<JobView> = {}): JobView {
  return {
    id: 'job-1',
    type: 'echo',
    state: 'queued',
    payload: { hello: 'world' },
    attempts: 0,
    maxAttempts: 3,
    createdAt: '2026-11-22T10:00:00.000Z',
    updatedAt: '2026-11-22T10:00:00.000Z',
    runAt: '2026-11-22T10:00:00.000Z',
    startedAt: null,
    finishedAt: null,
    lastError: null,
    errors: [],
    progress: null,
    result: null,
    retries: 0,
    ...overrides,
  };
}

// ------------------------------------------------------------------ parsing and help

describe('argument parsing', () => {
  it('finds one- and two-word commands, with global options anywhere', () => {
    const get = parseCommandLine(['--json', 'get', 'abc', '--url', 'http://x'], COMMANDS);
    expect(get).toMatchObject({ kind: 'run', args: { id: 'abc' }, options: { json: true, url: 'http://x' } });
    expect(get.kind === 'run' && get.command.path).toEqual(['get']);

    const dlq = parseCommandLine(['dlq', 'redrive', 'echo', '--max-messages', '5'], COMMANDS);
    expect(dlq.kind === 'run' && dlq.command.path).toEqual(['dlq', 'redrive']);
    expect(dlq).toMatchObject({ args: { type: 'echo' }, options: { 'max-messages': '5' } });

    const enqueue = parseCommandLine(['enqueue', 'echo', '--payload={"a":1}', '-q'], COMMANDS);
    expect(enqueue).toMatchObject({ args: { type: 'echo' }, options: { payload: '{"a":1}', quiet: true } });
  });

  it.each([
    [[], /no command given/],
    [['frobnicate'], /unknown command "frobnicate"/],
    [['dlq'], /dlq: which one\? list, redrive/],
    [['dlq', 'purge', 'x'], /unknown command "dlq purge"/],
    [['get'], /missing <id>/],
    [['get', 'a', 'b'], /unexpected argument "b"/],
    [['get', 'a', '--bogus'], /Unknown option '--bogus'/],
    [['list', '--type'], /argument missing/],
    [['get', 'a', '--json=yes'], /does not take an argument/],
  ] as const)('%j is a usage error', (argv, message) => {
    expect(() => parseCommandLine([...argv], COMMANDS)).toThrow(UsageError);
    expect(() => parseCommandLine([...argv], COMMANDS)).toThrow(message);
  });

  it('every command has --help (exit 0) showing its usage, options and the global options', async () => {
    for (const command of COMMANDS) {
      const { code, stdout } = await run([...command.path, '--help']);
      expect(code, command.path.join(' ')).toBe(0);
      expect(stdout).toMatch(new RegExp(`^Usage: orrery ${command.path.join(' ')}`));
      expect(stdout).toContain('Global options:');
      for (const option of Object.keys(command.options)) expect(stdout).toContain(`--${option}`);
    }
    const overview = await run(['--help']);
    expect(overview.code).toBe(0);
    for (const command of COMMANDS) expect(overview.stdout).toContain(command.path.join(' '));
    expect((await run(['schedules', '--help'])).stdout).toContain('Commands of schedules:');
    expect((await run(['help', 'dlq', 'list'])).stdout).toMatch(/^Usage: orrery dlq list <type>/);
    expect((await run(['help'])).stdout).toBe(overview.stdout);
    expect((await run(['--version'])).stdout).toMatch(/^orrery \d+\.\d+\.\d+/);
  });

  it('a usage error exits 2 and points at the help of the command', async () => {
    const { code, stderr, stdout } = await run(['watch']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe("orrery: missing <id>\nRun 'orrery watch --help' for usage.\n");
  });
});

describe('option values', () => {
  it.each([
    [['enqueue', 'echo', '--payload', '{'], /--payload is not valid JSON/],
    [['enqueue', 'echo', '--payload', '[1]'], /must be a JSON object/],
    [['enqueue', 'echo', '--payload', '{}', '--payload-file', 'x.json'], /not both/],
    [['enqueue', 'echo', '--payload-file', 'missing.json'], /cannot read --payload-file missing.json/],
    [['enqueue', 'echo', '--delay', '1.5'], /--delay must be an integer from 0/],
    [['enqueue', 'echo', '--max-attempts', 'three'], /--max-attempts must be an integer/],
    [['enqueue', 'echo', '--run-at', 'tomorrow'], /--run-at must be an ISO 8601 date-time/],
    [['list', '--state', 'done'], /--state must be one of scheduled, queued/],
    [['enqueue', 'echo', '--depends-on', 'extract-1,extract 2'], /--depends-on: "extract 2" is not a job id/],
    [['enqueue', 'echo', '--depends-on', 'a,,b'], /--depends-on: "" is not a job id/],
    [['enqueue', 'echo', '--depends-on=a,-x'], /--depends-on: "-x" is not a job id/],
    [['dlq', 'list', 'echo', '--limit', '11'], /--limit must be an integer from 1 to 10/],
    [['schedules', 'create', 'n', '--rate', '1 day'], /--type is required/],
    [['schedules', 'create', 'n', '--type', 'echo'], /give --cron or --rate/],
    [['schedules', 'create', 'n', '--type', 'echo', '--cron', '@daily', '--rate', '1 day'], /not both/],
    [
      ['schedules', 'create', 'n', '--type', 'echo', '--rate', '1 day', '--overlap', 'never'],
      /--overlap must be one of/,
    ],
    [['schedules', 'update', 'n'], /nothing to change/],
  ] as const)('%j exits 2 before any request', async (argv, message) => {
    const peer = await startPeer(() => ({ body: {} }));
    const { code, stderr } = await run([...argv], { url: peer.url });
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
    expect(peer.requests).toHaveLength(0);
  });
});

// ------------------------------------------------------------------ the API URL

describe('API URL', () => {
  function project(outputs: unknown): string {
    const root = mkdtempSync(join(tmpdir(), 'orrery-project-'));
    cleanups.push(() => rmSync(root, { recursive: true, force: true }));
    mkdirSync(join(root, '.orrery'));
    mkdirSync(join(root, 'a', 'b'), { recursive: true });
    writeFileSync(
      join(root, '.orrery', 'outputs.json'),
      typeof outputs === 'string' ? outputs : JSON.stringify(outputs),
    );
    return root;
  }

  it('prefers --url, then ORRERY_URL, then ApiUrl in the nearest .orrery/outputs.json', () => {
    const root = project({ OrreryStack: { ApiUrl: 'https://abc.lambda-url.eu-west-1.on.aws/', TableName: 't' } });
    const cwd = join(root, 'a', 'b');
    expect(resolveApiUrl({ flag: 'http://flag', env: { ORRERY_URL: 'http://env' }, cwd })).toEqual({
      url: 'http://flag',
      source: '--url',
    });
    expect(resolveApiUrl({ flag: undefined, env: { ORRERY_URL: 'http://env' }, cwd }).url).toBe('http://env');
    expect(resolveApiUrl({ flag: undefined, env: {}, cwd })).toEqual({
      url: 'https://abc.lambda-url.eu-west-1.on.aws/',
      source: join('..', '..', '.orrery', 'outputs.json'),
    });
  });

  it('explains what to do when there is no URL or the outputs file is unusable', async () => {
    const none = await run(['get', 'x'], { cwd: mkdtempSync(join(tmpdir(), 'orrery-empty-')) });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('no API URL');
    expect(none.stderr).toContain('export ORRERY_URL=http://127.0.0.1:4600');
    expect(none.stderr).toContain('npm run deploy');

    expect(() => resolveApiUrl({ flag: undefined, env: {}, cwd: project('{oops') })).toThrow(CliConfigError);
    expect(() => resolveApiUrl({ flag: undefined, env: {}, cwd: project({ S: { TableName: 't' } }) })).toThrow(
      /has no ApiUrl output/,
    );
    expect(() =>
      resolveApiUrl({
        flag: undefined,
        env: {},
        cwd: project({ A: { ApiUrl: 'https://a' }, B: { ApiUrl: 'https://b' } }),
      }),
    ).toThrow(/several stacks \(A, B\)/);
    expect((await run(['get', 'x', '--url', 'ftp://nope'])).code).toBe(2);
  });
});

// ------------------------------------------------------------------ commands against the peer

describe('commands', () => {
  it('enqueue maps its options to the request and prints the job', async () => {
    const peer = await startPeer((req) => ({ status: 201, body: jobView({ id: (req.json as { id: string }).id }) }));
    const { code, stdout, stderr } = await run(
      ['enqueue', 'flaky', '--payload', '{"failTimes":2}', '--id', 'order-1', '--delay', '30', '--max-attempts', '5'],
      { url: peer.url },
    );
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(peer.requests[0]?.json).toEqual({
      type: 'flaky',
      payload: { failTimes: 2 },
      id: 'order-1',
      delaySeconds: 30,
      maxAttempts: 5,
    });
    expect(stdout).toContain('created job order-1');
    expect(stdout).toMatch(/state\s+queued/);
    expect(stdout).not.toContain('\u001b['); // not a TTY: no colour
  });

  it('enqueue --depends-on sends the parents, comma-separated, as dependsOn', async () => {
    const peer = await startPeer((req) => ({ status: 201, body: jobView({ id: (req.json as { id: string }).id }) }));
    const { code, stderr } = await run(['enqueue', 'report', '--id', 'r-1', '--depends-on', 'extract-1, extract-2'], {
      url: peer.url,
    });
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(peer.requests[0]?.json).toEqual({
      type: 'report',
      payload: {},
      id: 'r-1',
      dependsOn: ['extract-1', 'extract-2'],
    });
  });

  it('enqueue --priority sends the priority, and refuses one outside 0-10 before any request', async () => {
    const peer = await startPeer((req) => ({
      status: 201,
      body: jobView({ id: (req.json as { id: string }).id, priority: 8 }),
    }));
    const { code, stdout, stderr } = await run(['enqueue', 'render', '--id', 'r-1', '--priority', '8'], {
      url: peer.url,
    });
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(peer.requests[0]?.json).toEqual({ type: 'render', payload: {}, id: 'r-1', priority: 8 });
    expect(stdout).toMatch(/^priority\s+8$/m);
    for (const bad of ['11', '-1', '2.5', 'high']) {
      const refused = await run(['enqueue', 'render', `--priority=${bad}`], { url: peer.url });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(`--priority must be an integer from 0 to 10, got "${bad}"`);
    }
    expect(peer.requests).toHaveLength(1);
  });

  it('get prints the priority of a job that has one (0 included), and no line for one that has none', async () => {
    const peer = await startPeer((req) => ({
      body: req.rawUrl.endsWith('/ranked') ? jobView({ id: 'ranked', priority: 0 }) : jobView(),
    }));
    expect((await run(['get', 'ranked'], { url: peer.url })).stdout).toMatch(/^priority\s+0$/m);
    expect((await run(['get', 'plain'], { url: peer.url })).stdout).not.toMatch(/^priority/m);
  });

  it('invoked follows the pages of GET /jobs/{id}/invoked and prints each job; get names the invoker apart from children', async () => {
    const item = (n: number) => ({ name: `price-${n}`, id: `q1.price-${n}`, type: 'price-item', state: 'succeeded' });
    const peer = await startPeer((req) => {
      if (req.rawUrl.startsWith('/jobs/q1.price-0')) {
        return { body: jobView({ id: 'q1.price-0', children: ['q1', 'after'], invokedBy: ['q1'] }) };
      }
      return req.query.get('cursor') === '100'
        ? { body: { id: 'q1', items: [item(100)], nextCursor: null } }
        : { body: { id: 'q1', items: [item(0)], nextCursor: '100' } };
    });
    const listed = await run(['invoked', 'q1'], { url: peer.url });
    expect({ code: listed.code, stderr: listed.stderr }).toEqual({ code: 0, stderr: '' });
    expect(peer.requests.map((r) => r.rawUrl)).toEqual(['/jobs/q1/invoked', '/jobs/q1/invoked?cursor=100']);
    expect(listed.stdout).toMatch(/^NAME\s+JOB\s+TYPE\s+STATE$/m);
    expect(listed.stdout).toMatch(/^price-0\s+q1\.price-0\s+price-item\s+succeeded$/m);
    expect(listed.stdout).toMatch(/^price-100\s+q1\.price-100\s+price-item\s+succeeded$/m);
    const json = await run(['invoked', 'q1', '--json'], { url: peer.url });
    expect(JSON.parse(json.stdout)).toEqual({ items: [item(0), item(100)] });

    const child = await run(['get', 'q1.price-0'], { url: peer.url });
    expect(child.stdout).toMatch(/^invoked by\s+q1$/m);
    expect(child.stdout).toMatch(/^children\s+after$/m);
  });

  it('timeline follows the pages of GET /jobs/{id}/timeline and prints each attempt and entry', async () => {
    const step = (n: number) => ({
      kind: 'step',
      name: `s${n}`,
      attempt: 0,
      at: '2026-11-23T10:00:01.000Z',
      startedAt: null,
      durationMs: null,
      bytes: 1,
      preview: String(n),
    });
    const attempts = [{ attempt: 1, startedAt: null, endedAt: null, outcome: 'running' }];
    const invoke = {
      kind: 'invoke',
      name: 'child',
      attempt: 0,
      at: '2026-11-23T10:00:02.000Z',
      child: { id: 'o1.child', type: 'echo', state: 'succeeded' },
      endedAt: null,
      outcome: null,
    };
    const page = (entries: unknown[], nextCursor: string | null) => ({
      id: 'o1',
      type: 'order',
      state: 'running',
      series: null,
      attempts,
      entries,
      nextCursor,
    });
    const peer = await startPeer((req) => ({
      body: req.query.get('cursor') === '100' ? page([invoke], null) : page([step(0)], '100'),
    }));
    const shown = await run(['timeline', 'o1'], { url: peer.url });
    expect({ code: shown.code, stderr: shown.stderr }).toEqual({ code: 0, stderr: '' });
    expect(peer.requests.map((r) => r.rawUrl)).toEqual(['/jobs/o1/timeline', '/jobs/o1/timeline?cursor=100']);
    expect(shown.stdout).toMatch(/^attempt 1 running$/m);
    expect(shown.stdout).toMatch(/^ATTEMPT\s+KIND\s+NAME\s+AT\s+DETAIL$/m);
    expect(shown.stdout).toMatch(/^1 running\s+step\s+s0\s+2026-11-23T10:00:01.000Z\s+1 B 0$/m);
    expect(shown.stdout).toMatch(/^1 running\s+invoke\s+child\s+2026-11-23T10:00:02.000Z\s+o1\.child echo succeeded$/m);
    const json = await run(['timeline', 'o1', '--json'], { url: peer.url });
    expect(JSON.parse(json.stdout)).toEqual(page([step(0), invoke], null));
  });

  it('get on a job that waits for a signal or sleeps says so, not "run at" its deadline', async () => {
    const until = '2026-11-23T10:00:00.000Z';
    const waiting = (kind: 'signal' | 'sleep', key: string) =>
      jobView({
        state: 'waiting',
        attempts: 1,
        runAt: until,
        resumes: 1,
        waitingFor: { kind, key, since: '2026-11-22T10:00:05.000Z', until },
      });
    const peer = await startPeer((req) => ({
      body: req.rawUrl.endsWith('/order-1') ? waiting('signal', 'payment') : waiting('sleep', 'cool-down'),
    }));
    const signal = await run(['get', 'order-1'], { url: peer.url });
    expect(signal.stdout).toMatch(new RegExp(`^waiting for\\s+signal "payment" until ${until}$`, 'm'));
    expect(signal.stdout).not.toMatch(/^run at/m);
    const sleep = await run(['get', 'order-2'], { url: peer.url });
    expect(sleep.stdout).toMatch(new RegExp(`^sleeping\\s+until ${until} \\(sleep "cool-down"\\)$`, 'm'));
    expect(sleep.stdout).not.toMatch(/^run at/m);
    // a job that is only due later still shows when it runs
    const queued = await startPeer(() => ({ body: jobView({ state: 'scheduled', runAt: until }) }));
    expect((await run(['get', 'job-1'], { url: queued.url })).stdout).toMatch(new RegExp(`^run at\\s+${until}$`, 'm'));
  });

  it('enqueue reads the payload from a file or stdin, and -q prints only the id', async () => {
    const peer = await startPeer((req) => ({ status: 200, body: jobView({ id: (req.json as { id: string }).id }) }));
    const cwd = mkdtempSync(join(tmpdir(), 'orrery-payload-'));
    writeFileSync(join(cwd, 'p.json'), '{"from":"file"}');
    const fromFile = await run(['enqueue', 'echo', '--payload-file', 'p.json', '--run-at', '2026-12-01T09:00:00Z'], {
      url: peer.url,
      cwd,
    });
    expect(fromFile.stdout).toContain('existing job');
    expect(peer.requests[0]?.json).toMatchObject({ payload: { from: 'file' }, runAt: '2026-12-01T09:00:00Z' });

    const quiet = await run(['enqueue', 'echo', '--payload-file', '-', '-q'], {
      url: peer.url,
      stdin: '{"from":"stdin"}',
    });
    expect(peer.requests[1]?.json).toMatchObject({ payload: { from: 'stdin' } });
    const sent = peer.requests[1]?.json as { id: string } | undefined;
    expect(quiet.stdout).toBe(`${sent?.id}\n`);
  });

  it('event send posts the event under its id and prints its jobs; event get reads them', async () => {
    const event = {
      id: 'order-o1',
      name: 'order.placed',
      jobs: [{ type: 'bill-order', id: 'ev.0123', status: 'created', state: 'queued' }],
    };
    const found = {
      id: 'order-o1',
      jobs: [{ type: 'bill-order', id: 'ev.0123', state: 'succeeded', createdAt: '2026-06-01T00:00:00.000Z' }],
    };
    const peer = await startPeer((req) => ({ status: 200, body: req.method === 'POST' ? event : found }));
    const data = { orderId: 'o1', total: 12 };
    const sent = await run(['event', 'send', 'order.placed', '--id', 'order-o1', '--data', JSON.stringify(data)], {
      url: peer.url,
    });
    expect({ code: sent.code, stderr: sent.stderr }).toEqual({ code: 0, stderr: '' });
    expect(peer.requests[0]).toMatchObject({
      method: 'POST',
      rawUrl: '/events',
      json: { name: 'order.placed', id: 'order-o1', data },
    });
    expect(sent.stdout).toMatch(/bill-order\s+ev\.0123\s+created\s+queued/);
    const got = await run(['event', 'get', 'order-o1', '--json'], { url: peer.url });
    expect(JSON.parse(got.stdout)).toEqual(found);
    expect(peer.requests[1]).toMatchObject({ method: 'GET', rawUrl: '/events/order-o1' });
    // no data: a usage error (exit 2), nothing sent
    expect((await run(['event', 'send', 'order.placed'], { url: peer.url })).code).toBe(2);
    expect(
      (await run(['event', 'send', 'x', '--data', '{}', '--data-file', 'f.json'], { url: peer.url })).stderr,
    ).toContain('give --data or --data-file, not both');
    expect(peer.requests).toHaveLength(2);
  });

  it('flow create posts the file’s jobs under its id and prints the graph; flow get reads it', async () => {
    const flow = {
      id: 'etl',
      createdAt: '2026-06-01T00:00:00.000Z',
      nodes: [
        { id: 'a', type: 'echo', state: 'queued', dependsOn: [], children: ['b'] },
        { id: 'b', type: 'echo', state: 'waiting', dependsOn: [{ id: 'a', onParentFailure: 'ignore' }], children: [] },
      ],
    };
    const peer = await startPeer((req) => ({ status: req.method === 'POST' ? 201 : 200, body: flow }));
    const cwd = mkdtempSync(join(tmpdir(), 'orrery-flow-'));
    const jobs = [
      { id: 'a', type: 'echo', payload: {} },
      { id: 'b', type: 'echo', payload: {}, dependsOn: [{ id: 'a', onParentFailure: 'ignore' }] },
    ];
    writeFileSync(join(cwd, 'flow.json'), JSON.stringify({ id: 'etl', jobs }));
    const created = await run(['flow', 'create', '--file', 'flow.json'], { url: peer.url, cwd });
    expect({ code: created.code, stderr: created.stderr }).toEqual({ code: 0, stderr: '' });
    expect(peer.requests[0]).toMatchObject({ method: 'POST', rawUrl: '/flows', json: { id: 'etl', jobs } });
    expect(created.stdout).toContain('created flow etl');
    expect(created.stdout).toMatch(/b\s+echo\s+waiting\s+a \(ignore\)/);
    const got = await run(['flow', 'get', 'etl', '--json'], { url: peer.url });
    expect(JSON.parse(got.stdout)).toEqual(flow);
    expect(peer.requests[1]).toMatchObject({ method: 'GET', rawUrl: '/flows/etl' });
    expect((await run(['flow', 'create'], { url: peer.url })).code).toBe(2);
  });

  it('--json prints the API answer as JSON', async () => {
    const peer = await startPeer(() => ({ body: jobView({ state: 'succeeded', result: { ok: true } }) }));
    const { code, stdout } = await run(['get', 'job-1', '--json'], { url: peer.url });
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ id: 'job-1', state: 'succeeded', result: { ok: true } });
  });

  it('an API error exits 1 with the code, message, issues and request id', async () => {
    const peer = await startPeer(() => ({
      status: 400,
      body: {
        error: {
          code: 'invalid_payload',
          message: 'payload does not match the flaky schema',
          issues: [{ path: 'payload.failTimes', message: 'expected number' }],
        },
      },
    }));
    const human = await run(['enqueue', 'flaky', '--payload', '{"failTimes":"x"}'], { url: peer.url });
    expect(human.code).toBe(1);
    expect(human.stdout).toBe('');
    expect(human.stderr).toBe(
      'error: invalid_payload (HTTP 400): payload does not match the flaky schema\n' +
        '  - payload.failTimes: expected number\n' +
        '  request id: req-1\n',
    );
    const json = await run(['enqueue', 'flaky', '--json', '--payload', '{"failTimes":"x"}'], { url: peer.url });
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stderr)).toMatchObject({
      error: { status: 400, code: 'invalid_payload', issues: [{ path: 'payload.failTimes' }], requestId: 'req-1' },
    });
  });

  it('a route the API does not serve says so', async () => {
    const peer = await startPeer(() => ({
      status: 404,
      body: { error: { code: 'route_not_found', message: 'no route' } },
    }));
    const { code, stderr } = await run(['latest', 'echo'], { url: peer.url });
    expect(code).toBe(1);
    expect(stderr).toContain('the API does not serve GET /types/echo/latest');
  });

  it('an unreachable local server exits 1 and suggests npm run dev', async () => {
    const peer = await startPeer(() => ({ body: {} }));
    await cleanups.pop()?.(); // stop it
    const { code, stderr } = await run(['get', 'x'], { url: peer.url });
    expect(code).toBe(1);
    expect(stderr).toContain('error: network_error');
    expect(stderr).toContain('ECONNREFUSED');
    expect(stderr).toContain('npm run dev');
  });

  it('list follows cursors up to --limit, prints a table, and the cursor to continue', async () => {
    const summary = (id: string, state: string) => ({
      id,
      type: 'flaky',
      state,
      createdAt: '2026-11-22T10:00:00.000Z',
      runAt: '2026-11-22T10:00:00.000Z',
      attempts: 1,
      finishedAt: state === 'failed' ? '2026-11-22T09:59:00.000Z' : null,
    });
    const peer = await startPeer((req) =>
      req.query.get('cursor') === null
        ? { body: { items: [summary('a', 'failed'), summary('b', 'running')], nextCursor: 'c1' } }
        : { body: { items: [summary('c', 'queued')], nextCursor: 'c2' } },
    );
    const human = await run(['list', '--type', 'flaky', '--limit', '3'], { url: peer.url });
    expect(human.code).toBe(0);
    expect(peer.requests.map((r) => r.rawUrl)).toEqual([
      '/jobs?type=flaky&limit=3',
      '/jobs?type=flaky&limit=1&cursor=c1',
    ]);
    const lines = human.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+TYPE\s+STATE\s+ATTEMPTS\s+CREATED\s+FINISHED$/);
    expect(lines[1]).toMatch(/^a\s+flaky\s+failed\s+1\s+2026-11-22T10:00:00.000Z\s+1m ago$/);
    expect(lines[2]).toMatch(/^b\s+flaky\s+running\s+1\s+\S+\s+-$/);
    expect(lines.at(-1)).toBe('more: add --cursor c2');
    // columns line up
    expect(lines[1]?.indexOf('flaky')).toBe(lines[0]?.indexOf('TYPE'));

    const json = await run(['list', '--json', '--limit', '2'], { url: peer.url });
    expect(JSON.parse(json.stdout)).toEqual({
      items: [summary('a', 'failed'), summary('b', 'running')],
      nextCursor: 'c1',
    });
  });

  it('colours states on a TTY, not with NO_COLOR or --no-color', async () => {
    const peer = await startPeer(() => ({ body: jobView({ state: 'failed' }) }));
    const tty = await run(['get', 'job-1'], { url: peer.url, tty: true });
    expect(tty.stdout).toContain('\u001b[31mfailed\u001b[0m');
    expect((await run(['get', 'job-1'], { url: peer.url, tty: true, env: { NO_COLOR: '1' } })).stdout).not.toContain(
      '\u001b[',
    );
    expect((await run(['get', 'job-1', '--no-color'], { url: peer.url, tty: true })).stdout).not.toContain('\u001b[');
    expect(wantsColor({ write: () => true, isTTY: true }, { TERM: 'dumb' }, false)).toBe(false);
  });

  it('cancel, retry, latest and the dlq commands print their results', async () => {
    const peer = await startPeer((req) => {
      if (req.rawUrl.startsWith('/dlq?')) {
        return {
          body: {
            type: 'echo',
            approximateDepth: { visible: 2, inFlight: 0 },
            messages: [
              { messageId: 'm-1', jobId: 'job-9', receiveCount: 30, sentAt: '2026-11-22T09:00:00.000Z', body: null },
            ],
            lastRedrive: {
              by: 'arn:aws:sts::123456789012:assumed-role/ops/alice',
              at: '2026-11-22T08:00:00.000Z',
              method: 'receive-send',
              moved: 3,
            },
          },
        };
      }
      if (req.rawUrl === '/dlq/redrive') {
        return { body: { method: 'receive-send', moved: 2, stoppedBy: 'empty', remaining: 0 } };
      }
      return { body: jobView({ state: req.rawUrl.endsWith('/cancel') ? 'cancelled' : 'queued' }) };
    });
    expect((await run(['cancel', 'job-1'], { url: peer.url })).stdout).toMatch(/^cancelled job job-1\n/);
    expect((await run(['retry', 'job-1'], { url: peer.url })).stdout).toMatch(/^queued job job-1\n/);
    expect((await run(['latest', 'echo'], { url: peer.url })).stdout).toMatch(/^id\s+job-1/);
    const dlq = await run(['dlq', 'list', 'echo', '--limit', '5'], { url: peer.url });
    expect(dlq.stdout).toContain('about 2 messages waiting');
    expect(dlq.stdout).toMatch(/m-1\s+job-9\s+30/);
    expect(dlq.stdout).toContain('last redriven by role/ops (session alice) at 2026-11-22T08:00:00.000Z (3 moved)');
    const redrive = await run(['dlq', 'redrive', 'echo'], { url: peer.url });
    expect(redrive.stdout).toContain('moved 2 messages of the echo DLQ');
    expect(peer.requests.map((r) => `${r.method} ${r.rawUrl}`)).toEqual([
      'POST /jobs/job-1/cancel',
      'POST /jobs/job-1/retry',
      'GET /types/echo/latest',
      'GET /dlq?type=echo&limit=5',
      'POST /dlq/redrive',
    ]);
  });

  it('rerun sends its step and payload, and prints the queued job', async () => {
    const peer = await startPeer(() => ({ body: jobView({ state: 'queued' }) }));
    const out = await run(['rerun', 'job-1', '--from-step', 'charge', '--payload', '{"total":42}'], { url: peer.url });
    expect(out.stdout).toMatch(/^queued job job-1, from step charge\n/);
    expect((await run(['rerun', 'job-1'], { url: peer.url })).stdout).toMatch(/^queued job job-1, from the start\n/);
    expect(peer.requests.map((r) => `${r.method} ${r.rawUrl} ${JSON.stringify(r.json)}`)).toEqual([
      'POST /jobs/job-1/rerun {"fromStep":"charge","payload":{"total":42}}',
      'POST /jobs/job-1/rerun {}',
    ]);
  });

  it('limits set and unset call the limits route; key shows where each limit comes from', async () => {
    const limits = (source: 'spec' | 'runtime') => [
      {
        index: 0,
        limit: source === 'runtime' ? 5 : 2,
        specLimit: 2,
        source,
        ...(source === 'runtime'
          ? { setBy: 'arn:aws:iam::123456789012:role/ops', setAt: '2026-11-22T10:00:00.000Z' }
          : {}),
        key: 't1',
        running: [{ jobId: 'a', since: '2026-11-22T10:00:00.000Z' }],
        waiting: 0,
      },
    ];
    const peer = await startPeer((req) => {
      if (req.method === 'GET') return { body: { type: 'tenant-sync', key: 't1', limits: limits('runtime') } };
      const source = req.method === 'PUT' ? 'runtime' : 'spec';
      return {
        body: { type: 'tenant-sync', key: 't1', limits: limits(source), handedOn: source === 'runtime' ? ['b'] : [] },
      };
    });
    const set = await run(['limits', 'set', 'tenant-sync', 't1', '--concurrency', '5'], { url: peer.url });
    expect(set.code).toBe(0);
    expect(set.stdout).toContain('set the concurrency limit of tenant-sync / t1 to 5');
    expect(set.stdout).toMatch(/concurrency\[0\]\s+t1\s+5 \(set at run time by role\/ops; spec 2\)/);
    expect(set.stdout).toContain('started now: b');
    await run(['limits', 'set', 'tenant-sync', '*', '--concurrency', '7', '--limit', '1'], { url: peer.url });
    const unset = await run(['limits', 'unset', 'tenant-sync', 't1'], { url: peer.url });
    expect(unset.stdout).toMatch(/concurrency\[0\]\s+t1\s+2\s/);
    const key = await run(['key', 'tenant-sync', 't1'], { url: peer.url });
    expect(key.stdout).toContain('5 (set at run time by role/ops; spec 2)');
    // bad values are refused before any request
    expect((await run(['limits', 'set', 'tenant-sync', 't1', '--concurrency', '0'], { url: peer.url })).code).toBe(2);
    expect((await run(['limits', 'set', 'tenant-sync', 't1'], { url: peer.url })).code).toBe(2);
    expect(peer.requests.map((r) => `${r.method} ${r.rawUrl} ${JSON.stringify(r.json ?? null)}`)).toEqual([
      'PUT /types/tenant-sync/keys/t1/limits {"concurrency":5}',
      'PUT /types/tenant-sync/keys/%2A/limits {"concurrency":7,"limit":1}',
      'DELETE /types/tenant-sync/keys/t1/limits null',
      'GET /types/tenant-sync/keys/t1 null',
    ]);
  });

  it('signal sends the payload to the signal route and says whether the job resumed', async () => {
    const peer = await startPeer((req) => ({
      status: 202,
      body: {
        jobId: 'order-1',
        signal: 'payment',
        receivedAt: '2026-11-22T09:00:00.000Z',
        resumed: req.rawUrl.includes('payment'),
        duplicate: false,
      },
    }));
    const out = await run(['signal', 'order-1', 'payment', '--payload', '{"amount":42}'], { url: peer.url });
    expect(out.code).toBe(0);
    expect(out.stdout).toBe('sent signal payment to order-1: it resumes now\n');
    const json = await run(['signal', 'order-1', 'other', '--json'], { url: peer.url });
    expect(JSON.parse(json.stdout)).toMatchObject({ signal: 'payment', resumed: false });
    expect(peer.requests.map((r) => [r.method, r.rawUrl, r.json])).toEqual([
      ['POST', '/jobs/order-1/signals/payment', { payload: { amount: 42 } }],
      ['POST', '/jobs/order-1/signals/other', { payload: null }],
    ]);
  });

  it('schedules commands call their routes; update merges the options into the stored definition', async () => {
    const schedule = {
      name: 'nightly',
      type: 'echo',
      payload: { report: 'daily' },
      cron: null,
      rate: '1 day',
      expression: 'rate(1 day)',
      timezone: 'UTC',
      startAt: null,
      endAt: '2027-01-01T00:00:00.000Z',
      maxAttempts: 3,
      overlap: 'skip',
      state: 'enabled',
      nextFireAt: '2026-11-23T00:00:00.000Z',
      lastFireAt: null,
      lastRunId: null,
      skipped: { count: 0, lastAt: null },
      missed: 0,
      createdAt: '2026-11-22T10:00:00.000Z',
      updatedAt: '2026-11-22T10:00:00.000Z',
    };
    const peer = await startPeer((req) => {
      if (req.method === 'DELETE') return { status: 204 };
      if (req.method === 'GET' && req.rawUrl.startsWith('/schedules?')) {
        return { body: { schedules: [schedule], nextCursor: null } };
      }
      return { status: req.method === 'POST' && req.rawUrl === '/schedules' ? 201 : 200, body: schedule };
    });
    const created = await run(
      [
        'schedules',
        'create',
        'nightly',
        '--type',
        'echo',
        '--rate',
        '1 day',
        '--overlap',
        'skip',
        '--payload',
        '{"report":"daily"}',
      ],
      { url: peer.url },
    );
    expect(created.code).toBe(0);
    expect(created.stdout).toContain('created schedule nightly');
    expect(created.stdout).toMatch(/next fire\s+2026-11-23T00:00:00.000Z/);
    expect((await run(['schedules', 'list'], { url: peer.url })).stdout).toMatch(
      /nightly\s+echo\s+1 day\s+UTC\s+enabled\s+2026-11-23T00:00:00.000Z/,
    );
    const updated = await run(['schedules', 'update', 'nightly', '--cron', '0 3 * * *', '--timezone', 'Europe/Paris'], {
      url: peer.url,
    });
    expect(updated.stdout).toContain('updated schedule nightly');
    await run(['schedules', 'pause', 'nightly'], { url: peer.url });
    await run(['schedules', 'resume', 'nightly'], { url: peer.url });
    expect((await run(['schedules', 'delete', 'nightly'], { url: peer.url })).stdout).toBe(
      'deleted schedule nightly\n',
    );
    expect(peer.requests.map((r) => `${r.method} ${r.rawUrl}`)).toEqual([
      'POST /schedules',
      'GET /schedules?limit=100',
      'GET /schedules/nightly',
      'PUT /schedules/nightly',
      'POST /schedules/nightly/pause',
      'POST /schedules/nightly/resume',
      'DELETE /schedules/nightly',
    ]);
    expect(peer.requests[0]?.json).toEqual({
      name: 'nightly',
      type: 'echo',
      payload: { report: 'daily' },
      rate: '1 day',
      overlap: 'skip',
    });
    // The rate gives way to the new cron; everything else is kept.
    expect(peer.requests[3]?.json).toEqual({
      type: 'echo',
      payload: { report: 'daily' },
      cron: '0 3 * * *',
      timezone: 'Europe/Paris',
      maxAttempts: 3,
      overlap: 'skip',
      endAt: '2027-01-01T00:00:00.000Z',
    });
  });

  it('schedules create --priority sends it, get shows it, and update keeps it unless given', async () => {
    const schedule = {
      name: 'nightly',
      type: 'render',
      payload: {},
      cron: '0 2 * * *',
      rate: null,
      expression: 'cron(0 2 * * ? *)',
      timezone: 'UTC',
      startAt: null,
      endAt: null,
      maxAttempts: 3,
      overlap: 'allow',
      priority: 6,
      state: 'enabled',
      nextFireAt: '2026-11-23T02:00:00.000Z',
      lastFireAt: null,
      lastRunId: null,
      skipped: { count: 0, lastAt: null },
      missed: 0,
      createdAt: '2026-11-22T10:00:00.000Z',
      updatedAt: '2026-11-22T10:00:00.000Z',
    };
    const peer = await startPeer((req) => ({ status: req.method === 'POST' ? 201 : 200, body: schedule }));
    const created = await run(
      ['schedules', 'create', 'nightly', '--type', 'render', '--cron', '0 2 * * *', '--priority', '6'],
      { url: peer.url },
    );
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^priority\s+6$/m);
    expect(peer.requests[0]?.json).toMatchObject({ name: 'nightly', priority: 6 });
    await run(['schedules', 'update', 'nightly', '--timezone', 'Europe/Paris'], { url: peer.url });
    expect(peer.requests[2]?.json).toMatchObject({ timezone: 'Europe/Paris', priority: 6 });
    await run(['schedules', 'update', 'nightly', '--priority', '2'], { url: peer.url });
    expect(peer.requests[4]?.json).toMatchObject({ priority: 2 });
  });
});

// ------------------------------------------------------------------ watch

describe('watch', () => {
  const failed = { attempt: 3, at: '2026-11-22T10:00:03.000Z', reason: 'error', name: 'Error', message: 'boom' };

  it('prints each state change once and exits 0 when the job succeeds', async () => {
    const states: Partial<JobView>[] = [
      { state: 'queued' },
      { state: 'running', attempts: 1 },
      { state: 'running', attempts: 1, progress: { percent: 50, at: '' } },
      { state: 'succeeded', attempts: 1, result: { ok: 1 } },
    ];
    const peer = await startPeer((_req, i) => ({ body: jobView(states[Math.min(i, states.length - 1)]) }));
    const { code, stdout } = await run(['watch', 'job-1'], { url: peer.url });
    expect(code).toBe(0);
    const changes = stdout.split('\n').filter((line) => /^\d\d:\d\d/.test(line));
    expect(changes.map((line) => line.split(/\s+/)[1])).toEqual(['queued', 'running', 'succeeded']);
    expect(stdout).toMatch(/result\s+\{"ok":1\}/);
    expect(stdout).not.toContain('\r'); // not a TTY: no in-place updates
  });

  it('stops on a held job (its replay diverged), printing why, and exits as for a failure', async () => {
    const held = {
      ...failed,
      attempt: 1,
      reason: 'nondeterministic',
      name: 'NondeterminismError',
      message: 'diverged',
    };
    const states: Partial<JobView>[] = [
      { state: 'running', attempts: 1 },
      { state: 'held', attempts: 1, lastError: held },
    ];
    const peer = await startPeer((_req, i) => ({ body: jobView(states[Math.min(i, 1)]) }));
    const { code, stdout } = await run(['watch', 'job-1', '--timeout', '5'], { url: peer.url });
    expect(code).toBe(3);
    const changes = stdout.split('\n').filter((line) => /^\d\d:\d\d/.test(line));
    expect(changes.map((line) => line.split(/\s+/)[1])).toEqual(['running', 'held']);
    expect(changes[1]).toContain('diverged');
  });

  it('exits 3 when the job fails, and redraws a live line in place on a TTY', async () => {
    const states: Partial<JobView>[] = [
      { state: 'running', attempts: 1 },
      { state: 'running', attempts: 1 },
      { state: 'failed', attempts: 3, lastError: failed },
    ];
    const peer = await startPeer((_req, i) => ({ body: jobView(states[Math.min(i, 2)]) }));
    const { code, stdout } = await run(['watch', 'job-1'], { url: peer.url, tty: true });
    expect(code).toBe(3);
    expect(stdout).toContain('\r\u001b[2K');
    expect(stdout).toContain('boom');
  });

  it('--json prints one JSON line per change; --timeout exits 4', async () => {
    const peer = await startPeer(() => ({ body: jobView({ state: 'running', attempts: 1 }) }));
    let now = Date.parse('2026-11-22T10:00:00.000Z');
    const stdout = capture(false);
    const stderr = capture(false);
    const code = await main(['watch', 'job-1', '--json', '--timeout', '2'], {
      stdout,
      stderr,
      env: { ORRERY_URL: peer.url },
      cwd: tmpdir(),
      readStdin: async () => '',
      now: () => now,
      sleep: async (ms) => {
        now += ms;
      },
    });
    expect(code).toBe(4);
    const lines = stdout.text.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({ id: 'job-1', state: 'running' });
    expect(stderr.text).toContain('still running after 2 s');
    expect(peer.requests.length).toBe(5); // polls at 0, 0.5, 1, 1.5 and 2 s
  });
});

// ------------------------------------------------------------------ formatting

describe('formatting', () => {
  it('aligns table columns by visible width, colours included', () => {
    const style = createStyle(true);
    const out = table(
      ['A', 'B'],
      [
        [style.state('failed'), 'x'],
        ['longer-cell', 'y'],
      ],
      style,
    );
    const lines = out.split('\n').map(stripAnsi);
    expect(lines).toEqual(['A            B', 'failed       x', 'longer-cell  y']);
    expect(visibleLength(style.bold('abc'))).toBe(3);
  });
});

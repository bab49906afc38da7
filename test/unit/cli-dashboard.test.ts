/**
 * `orrery dashboard` in-process: it serves the built UI on 127.0.0.1 and forwards `/api/` to
 * the API URL it resolved, until it is told to stop.
 */

import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type CliIo, main } from '../../shared/cli/main';
import { buildUi } from '../../ui/build';

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

function io(env: Record<string, string>, untilStopped: () => Promise<unknown>) {
  const stdout = capture();
  const stderr = capture();
  const value: CliIo = {
    stdout,
    stderr,
    env,
    cwd: mkdtempSync(join(tmpdir(), 'orrery-cli-dashboard-')),
    readStdin: async () => '',
    untilStopped,
  };
  return { io: value, stdout, stderr };
}

beforeAll(() => {
  // the command serves ui/dist beside the sources, as `npm run build:ui` writes it
  buildUi();
});

describe('orrery dashboard', () => {
  it('serves the UI and forwards API calls to --url until stopped, read-only when asked', async () => {
    const seen: string[] = [];
    const api = createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"items":[],"nextCursor":null}');
    });
    await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
    const apiUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;

    let stop: () => void = () => {};
    const stopped = new Promise<void>((resolve) => {
      stop = resolve;
    });
    const run = io({}, () => stopped);
    const exit = main(['dashboard', '--url', apiUrl, '--port', '0', '--read-only'], run.io);
    let uiUrl: string | undefined;
    for (let i = 0; i < 100 && !uiUrl; i++) {
      uiUrl = /http:\/\/127\.0\.0\.1:\d+\/ui\//.exec(run.stdout.text)?.[0];
      if (!uiUrl) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(uiUrl, run.stderr.text).toBeDefined();
    expect(run.stdout.text).toContain('signed unless on loopback, read-only');
    const base = new URL(uiUrl as string);

    const page = await fetch(uiUrl as string);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await page.text()).toMatch(/<script type="module" src="assets\/app-[A-Z0-9]+\.js">/);
    expect(await (await fetch(new URL('/ui/config.json', base))).json()).toMatchObject({ readOnly: true });
    const listed = await fetch(new URL('/api/jobs?state=failed', base), { headers: { 'x-orrery-dashboard': '1' } });
    expect(await listed.json()).toEqual({ items: [], nextCursor: null });
    const retry = await fetch(new URL('/api/jobs/x/retry', base), {
      method: 'POST',
      headers: { 'x-orrery-dashboard': '1' },
    });
    expect(retry.status).toBe(403);
    expect(seen).toEqual(['GET /jobs?state=failed']);

    stop();
    await expect(exit).resolves.toBe(0);
    await expect(fetch(uiUrl as string)).rejects.toThrow();
    await new Promise<void>((resolve) => api.close(() => resolve()));
  });

  it('is a usage error with a bad port, and says so when the port is taken', async () => {
    const bad = io({}, async () => {});
    expect(await main(['dashboard', '--url', 'http://127.0.0.1:9', '--port', 'x'], bad.io)).toBe(2);
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as AddressInfo).port;
    const taken = io({}, async () => {});
    expect(await main(['dashboard', '--url', 'http://127.0.0.1:9', '--port', String(port)], taken.io)).toBe(2);
    expect(taken.stderr.text).toContain(`port ${port} is in use`);
    await new Promise<void>((resolve) => blocker.close(() => resolve()));
  });

  it('needs an API URL', async () => {
    const none = io({}, async () => {});
    expect(await main(['dashboard'], none.io)).toBe(2);
    expect(none.stderr.text).toContain('no API URL');
  });
});

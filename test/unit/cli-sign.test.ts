/**
 * `--sign`: the CLI signs requests to a loopback API too, as `orrery dev` with grants needs (it
 * refuses unsigned calls); without it a 127.0.0.1 URL is called unsigned, as before.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../shared/cli/main';

function io(seen: Headers[]) {
  const out: string[] = [];
  return {
    out,
    io: {
      stdout: { write: (text: string) => void out.push(text), isTTY: false },
      stderr: { write: (text: string) => void out.push(text), isTTY: false },
      env: {},
      cwd: '/nowhere',
      readStdin: async () => '',
      fetch: (async (_url: string | URL | Request, init?: RequestInit) => {
        seen.push(new Headers(init?.headers));
        return new Response(JSON.stringify({ error: { code: 'job_not_found', message: 'job "j-1" not found' } }), {
          status: 404,
          headers: { 'content-type': 'application/json' },
        });
      }) as typeof fetch,
    },
  };
}

describe('orrery --sign', () => {
  beforeEach(() => {
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'AKIDLOCALSIGN');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'secret');
    vi.stubEnv('AWS_SESSION_TOKEN', '');
    vi.stubEnv('AWS_PROFILE', '');
  });
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('signs a request to 127.0.0.1 with the default credentials', async () => {
    const seen: Headers[] = [];
    const { io: cli } = io(seen);
    await main(['get', 'j-1', '--url', 'http://127.0.0.1:4600', '--sign'], cli);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.get('authorization')).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDLOCALSIGN\/\d{8}\/us-east-1\/lambda\//,
    );
  });

  it('leaves a request to 127.0.0.1 unsigned without it', async () => {
    const seen: Headers[] = [];
    const { io: cli } = io(seen);
    await main(['get', 'j-1', '--url', 'http://127.0.0.1:4600'], cli);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.get('authorization')).toBeNull();
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2ETarget, startTarget } from './target';

let target: E2ETarget;

beforeAll(async () => {
  target = await startTarget();
});

afterAll(async () => {
  await target?.stop();
});

const inAnHour = () => new Date(Date.now() + 3600_000).toISOString();

interface Case {
  name: string;
  method?: string;
  path?: string;
  body?: unknown;
  headers?: Record<string, string>;
  status: number;
  code: string;
  /** A field the error must name in `issues[].path`. */
  field?: string;
}

const cases: Case[] = [
  { name: 'unknown job type', body: { type: 'nope', payload: {} }, status: 400, code: 'unknown_type', field: 'type' },
  {
    name: 'payload fails the type schema',
    body: { type: 'flaky', payload: { failTimes: 'x' } },
    status: 400,
    code: 'invalid_payload',
    field: 'payload.failTimes',
  },
  {
    name: 'payload has a field the schema forbids',
    body: { type: 'sleep', payload: { ms: 1, extra: true } },
    status: 400,
    code: 'invalid_payload',
    field: 'payload.extra',
  },
  {
    name: 'payload is not an object',
    body: { type: 'echo', payload: [1, 2] },
    status: 400,
    code: 'validation_failed',
    field: 'payload',
  },
  { name: 'missing payload', body: { type: 'echo' }, status: 400, code: 'validation_failed', field: 'payload' },
  {
    name: 'malformed JSON',
    body: '{"type": "echo", "payload": {',
    status: 400,
    code: 'malformed_json',
    field: '(body)',
  },
  {
    name: 'bad id pattern',
    body: { id: '../etc/passwd', type: 'echo', payload: {} },
    status: 400,
    code: 'validation_failed',
    field: 'id',
  },
  {
    name: 'id too long',
    body: { id: 'a'.repeat(65), type: 'echo', payload: {} },
    status: 400,
    code: 'validation_failed',
    field: 'id',
  },
  {
    name: 'runAt in the past',
    body: { type: 'echo', payload: {}, runAt: '2020-01-01T00:00:00Z' },
    status: 400,
    code: 'validation_failed',
    field: 'runAt',
  },
  {
    name: 'runAt beyond the horizon',
    body: { type: 'echo', payload: {}, runAt: new Date(Date.now() + 400 * 86_400_000).toISOString() },
    status: 400,
    code: 'validation_failed',
    field: 'runAt',
  },
  {
    name: 'runAt without a time zone',
    body: { type: 'echo', payload: {}, runAt: '2030-01-01T00:00:00' },
    status: 400,
    code: 'validation_failed',
    field: 'runAt',
  },
  {
    name: 'both delaySeconds and runAt',
    body: { type: 'echo', payload: {}, delaySeconds: 5, runAt: inAnHour() },
    status: 400,
    code: 'validation_failed',
    field: 'runAt',
  },
  {
    name: 'negative delaySeconds',
    body: { type: 'echo', payload: {}, delaySeconds: -1 },
    status: 400,
    code: 'validation_failed',
    field: 'delaySeconds',
  },
  {
    name: 'maxAttempts above the limit',
    body: { type: 'echo', payload: {}, maxAttempts: 26 },
    status: 400,
    code: 'validation_failed',
    field: 'maxAttempts',
  },
  {
    name: 'unknown top-level field',
    body: { type: 'echo', payload: {}, priority: 1 },
    status: 400,
    code: 'validation_failed',
    field: 'priority',
  },
  {
    name: 'oversize body',
    body: { type: 'echo', payload: { blob: 'x'.repeat(300 * 1024) } },
    status: 413,
    code: 'payload_too_large',
  },
  {
    name: 'oversize payload',
    body: { type: 'echo', payload: { blob: 'x'.repeat(257 * 1024) } },
    status: 413,
    code: 'payload_too_large',
  },
  {
    name: 'non-JSON content type',
    body: 'type=echo',
    headers: { 'content-type': 'text/plain' },
    status: 415,
    code: 'unsupported_media_type',
  },
  { name: 'unknown route', method: 'GET', path: '/nope', status: 404, code: 'route_not_found' },
  { name: 'wrong method', method: 'DELETE', path: '/jobs', status: 405, code: 'method_not_allowed' },
  { name: 'unknown job id', method: 'GET', path: '/jobs/does-not-exist', status: 404, code: 'job_not_found' },
];

describe('bad input is rejected with a clear error and writes nothing', () => {
  it.each(cases)('$name → $status $code', async (c) => {
    const before = await target.footprint();
    const response = await target.request(c.method ?? 'POST', c.path ?? '/jobs', c.body, c.headers);
    expect(response.status).toBe(c.status);
    const body = (await response.json()) as { error: { code: string; message: string; issues?: { path: string }[] } };
    expect(body.error.code).toBe(c.code);
    expect(body.error.message.length).toBeGreaterThan(0);
    if (c.field) expect(body.error.issues?.map((i) => i.path)).toContain(c.field);
    if (c.status === 405) expect(response.headers.get('allow')).toBe('POST');
    expect(await target.footprint()).toEqual(before);
  });
});

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
  /** For a 405: the methods the `Allow` header must list. */
  allow?: string[];
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
    body: { type: 'echo', payload: {}, urgency: 1 },
    status: 400,
    code: 'validation_failed',
    field: 'urgency',
  },
  {
    name: 'priority on a type without the priority option',
    body: { type: 'echo', payload: {}, priority: 1 },
    status: 400,
    code: 'invalid_priority',
    field: 'priority',
  },
  {
    name: 'priority on a flow job of a type without the option',
    path: '/flows',
    body: {
      jobs: [
        { id: 'a', type: 'echo', payload: {} },
        { id: 'b', type: 'echo', payload: {}, priority: 1 },
      ],
    },
    status: 400,
    code: 'invalid_priority',
    field: 'jobs.1.priority',
  },
  {
    name: 'priority on a schedule of a type without the option',
    path: '/schedules',
    body: { name: 'bad-priority', type: 'echo', payload: {}, rate: '5 minutes', priority: 1 },
    status: 400,
    code: 'invalid_priority',
    field: 'priority',
  },
  {
    // a payload over 256 KiB is kept in the payload bucket (docs/payloads.md): the body's own limit
    // (6 MiB - 128 KiB, under the Function URL's 6 MB) is what refuses it
    name: 'oversize body',
    body: { type: 'echo', payload: { blob: 'x'.repeat(6 * 1024 * 1024 - 96 * 1024) } },
    status: 413,
    code: 'payload_too_large',
  },
  {
    name: 'oversize batch body',
    path: '/jobs/batch',
    body: { jobs: [{ type: 'echo', payload: { blob: 'x'.repeat(5 * 1024 * 1024 + 1024) } }] },
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
  {
    name: 'wrong method',
    method: 'DELETE',
    path: '/jobs',
    status: 405,
    code: 'method_not_allowed',
    allow: ['GET', 'POST'],
  },
  { name: 'unknown job id', method: 'GET', path: '/jobs/does-not-exist', status: 404, code: 'job_not_found' },
];

const deep = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const echo = (extra: Record<string, unknown> = {}) => ({ type: 'echo', payload: {}, ...extra });
/** Bytes that are not UTF-8, in a JSON-typed body the Function URL passes through base64. */
const invalidUtf8 = new Uint8Array([
  ...Buffer.from('{"type":"echo","payload":{"a":"'),
  0xff,
  0xfe,
  0xc3,
  ...Buffer.from('"}}'),
]);

/** The control-plane endpoints' bad inputs (batch, list, cancel/retry, DLQ), and hostile bodies. */
const controlPlaneCases: Case[] = [
  // hostile bodies and paths
  {
    name: 'invalid UTF-8 body',
    body: invalidUtf8,
    headers: { 'content-type': 'application/vnd.orrery+json' },
    status: 400,
    code: 'malformed_body',
    field: '(body)',
  },
  { name: '10,000-deep JSON array', body: deep(10_000), status: 400, code: 'malformed_body', field: '(body)' },
  {
    name: 'payload nested 100 deep',
    body: `{"type":"echo","payload":{"a":${deep(100)}}}`,
    status: 400,
    code: 'malformed_body',
  },
  { name: 'JSON null body', body: 'null', status: 400, code: 'validation_failed' },
  { name: 'JSON array body', body: '[]', status: 400, code: 'validation_failed' },
  {
    name: 'type of the wrong JSON type',
    body: { type: 123, payload: {} },
    status: 400,
    code: 'validation_failed',
    field: 'type',
  },
  {
    name: 'huge type string',
    body: { type: 'e'.repeat(100_000), payload: {} },
    status: 400,
    code: 'validation_failed',
    field: 'type',
  },
  {
    name: 'injection-looking id in the body',
    body: echo({ id: "x' OR '1'='1" }),
    status: 400,
    code: 'validation_failed',
    field: 'id',
  },
  {
    name: 'injection-looking id in the path',
    method: 'GET',
    path: `/jobs/${encodeURIComponent("x' OR 1=1; --")}`,
    status: 404,
    code: 'job_not_found',
  },
  {
    name: 'path traversal in a cancel',
    path: '/jobs/..%2F..%2Fetc%2Fpasswd/cancel',
    status: 404,
    code: 'job_not_found',
  },
  { name: 'cancel of an unknown job', path: '/jobs/no-such-job/cancel', status: 404, code: 'job_not_found' },
  { name: 'retry of an unknown job', path: '/jobs/no-such-job/retry', status: 404, code: 'job_not_found' },
  {
    name: 'GET on cancel',
    method: 'GET',
    path: '/jobs/x/cancel',
    status: 405,
    code: 'method_not_allowed',
    allow: ['POST'],
  },
  // batch
  {
    name: 'batch of 101 jobs',
    path: '/jobs/batch',
    body: { jobs: Array.from({ length: 101 }, () => echo()) },
    status: 400,
    code: 'validation_failed',
    field: 'jobs',
  },
  {
    name: 'batch of none',
    path: '/jobs/batch',
    body: { jobs: [] },
    status: 400,
    code: 'validation_failed',
    field: 'jobs',
  },
  { name: 'batch without jobs', path: '/jobs/batch', body: {}, status: 400, code: 'validation_failed', field: 'jobs' },
  {
    name: 'batch jobs not an array',
    path: '/jobs:batch',
    body: { jobs: 'x' },
    status: 400,
    code: 'validation_failed',
    field: 'jobs',
  },
  {
    name: 'batch with an extra field',
    path: '/jobs/batch',
    body: { jobs: [echo()], atomic: true },
    status: 400,
    code: 'validation_failed',
    field: 'atomic',
  },
  { name: 'batch as a bare array', path: '/jobs/batch', body: [echo()], status: 400, code: 'validation_failed' },
  {
    name: 'batch over 5 MiB',
    path: '/jobs/batch',
    body: { jobs: [echo({ payload: { blob: 'x'.repeat(5.5 * 1024 * 1024) } })] },
    status: 413,
    code: 'payload_too_large',
  },
  {
    name: 'batch as form data',
    path: '/jobs/batch',
    body: 'jobs=1',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    status: 415,
    code: 'unsupported_media_type',
  },
  {
    name: 'batch with malformed JSON',
    path: '/jobs/batch',
    body: '{"jobs": [',
    status: 400,
    code: 'malformed_json',
    field: '(body)',
  },
  // list
  {
    name: 'unknown state filter',
    method: 'GET',
    path: '/jobs?state=paused',
    status: 400,
    code: 'validation_failed',
    field: 'state',
  },
  { name: 'limit of 0', method: 'GET', path: '/jobs?limit=0', status: 400, code: 'validation_failed', field: 'limit' },
  {
    name: 'limit of 101',
    method: 'GET',
    path: '/jobs?limit=101',
    status: 400,
    code: 'validation_failed',
    field: 'limit',
  },
  {
    name: 'limit not a number',
    method: 'GET',
    path: '/jobs?limit=ten',
    status: 400,
    code: 'validation_failed',
    field: 'limit',
  },
  {
    name: 'unknown query parameter',
    method: 'GET',
    path: '/jobs?order=asc',
    status: 400,
    code: 'validation_failed',
    field: 'order',
  },
  {
    name: 'createdAfter not a time',
    method: 'GET',
    path: '/jobs?createdAfter=yesterday',
    status: 400,
    code: 'validation_failed',
    field: 'createdAfter',
  },
  {
    name: 'createdBefore not after createdAfter',
    method: 'GET',
    path: '/jobs?createdAfter=2026-01-02T00:00:00Z&createdBefore=2026-01-01T00:00:00Z',
    status: 400,
    code: 'validation_failed',
    field: 'createdBefore',
  },
  {
    name: 'list of an unknown type',
    method: 'GET',
    path: '/jobs?type=nope',
    status: 400,
    code: 'unknown_type',
    field: 'type',
  },
  {
    name: 'bad cursor',
    method: 'GET',
    path: '/jobs?cursor=bm90LWEtY3Vyc29y',
    status: 400,
    code: 'invalid_cursor',
    field: 'cursor',
  },
  {
    name: 'cursor with SQL in it',
    method: 'GET',
    path: `/jobs?cursor=${encodeURIComponent("' OR 1=1")}`,
    status: 400,
    code: 'invalid_cursor',
    field: 'cursor',
  },
  { name: 'latest of an unknown type', method: 'GET', path: '/types/nope/latest', status: 404, code: 'type_not_found' },
  // DLQ
  {
    name: 'DLQ peek without a type',
    method: 'GET',
    path: '/dlq',
    status: 400,
    code: 'validation_failed',
    field: 'type',
  },
  {
    name: 'DLQ peek of an unknown type',
    method: 'GET',
    path: '/dlq?type=nope',
    status: 400,
    code: 'unknown_type',
    field: 'type',
  },
  {
    name: 'DLQ peek limit of 11',
    method: 'GET',
    path: '/dlq?type=echo&limit=11',
    status: 400,
    code: 'validation_failed',
    field: 'limit',
  },
  { name: 'redrive without a body', path: '/dlq/redrive', body: '', status: 400, code: 'malformed_json' },
  {
    name: 'redrive of a type of the wrong JSON type',
    path: '/dlq/redrive',
    body: { type: ['echo'] },
    status: 400,
    code: 'validation_failed',
    field: 'type',
  },
  {
    name: 'redrive with an extra field',
    path: '/dlq/redrive',
    body: { type: 'echo', all: true },
    status: 400,
    code: 'validation_failed',
    field: 'all',
  },
];

describe('bad input is rejected with a clear error and writes nothing', () => {
  it.each([...cases, ...controlPlaneCases])('$name → $status $code', async (c) => {
    const before = await target.footprint();
    const response = await target.request(c.method ?? 'POST', c.path ?? '/jobs', c.body, c.headers);
    expect(response.status).toBe(c.status);
    const body = (await response.json()) as { error: { code: string; message: string; issues?: { path: string }[] } };
    expect(body.error.code).toBe(c.code);
    expect(body.error.message.length).toBeGreaterThan(0);
    if (c.field) expect(body.error.issues?.map((i) => i.path)).toContain(c.field);
    if (c.status === 405) expect(response.headers.get('allow')?.split(', ').sort()).toEqual(c.allow ?? ['POST']);
    expect(await target.footprint()).toEqual(before);
  });
});

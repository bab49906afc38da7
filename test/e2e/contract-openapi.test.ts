import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openApiDocument } from '../../shared/api/openapi';
import { call, isLocal } from './contract-helpers';
import { type E2ETarget, startTarget } from './target';

let target: E2ETarget;

beforeAll(async () => {
  target = await startTarget();
});

afterAll(async () => {
  await target?.stop();
});

describe('GET /openapi.json', () => {
  it('serves a valid OpenAPI 3.1 document of every endpoint', async () => {
    const doc = await call(target, 'GET', '/openapi.json', 200, z.record(z.string(), z.unknown()));
    const result = await new Validator({ strict: false }).validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(doc.openapi).toBe('3.1.0');
    if (isLocal) expect(doc).toEqual(openApiDocument());
    const paths = Object.keys(doc.paths as Record<string, unknown>);
    for (const path of ['/jobs', '/jobs/{id}', '/jobs/batch', '/jobs/{id}/cancel', '/jobs/{id}/retry', '/dlq']) {
      expect(paths).toContain(path);
    }
  });
});

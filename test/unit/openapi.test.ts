import { Validator } from '@seriousme/openapi-schema-validator';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { allowEveryone } from '../../shared/api/access';
import { createApiHandler } from '../../shared/api/handler';
import { buildOpenApiDocument, OPERATIONS, openApiDocument } from '../../shared/api/openapi';
import { jobViewSchema, listQueryDocSchema, listQuerySchema } from '../../shared/api/schemas';
import { enqueueRequestSchema } from '../../shared/core/enqueue';
import { defineJobType } from '../../shared/core/job-type';
import { FakeBlobStore } from '../support/blob-fake';
import { FakeJobQueue, FakeJobScheduler, FakeJobStore, testConfig } from '../support/fakes';
import { FakeJournal } from '../support/journal-fake';

type Doc = {
  openapi: string;
  paths: Record<
    string,
    Record<string, { parameters?: { name: string; in: string }[]; responses: Record<string, unknown> }>
  >;
  components: { schemas: Record<string, Record<string, unknown>> };
};

const doc = openApiDocument() as Doc;

describe('GET /openapi.json document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator({ strict: false });
    const result = await validator.validate(structuredClone(doc) as Record<string, unknown>);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('is checked by a validator that does catch a broken document', async () => {
    const broken = structuredClone(doc) as Record<string, unknown>;
    delete broken.info;
    (broken.paths as Record<string, unknown>)['/jobs'] = { get: { responses: 'nope' } };
    const result = await new Validator({ strict: false }).validate(broken);
    expect(result.valid).toBe(false);
  });

  it('is generated from the schemas that validate requests, not written by hand', () => {
    const { $schema: _, ...enqueue } = z.toJSONSchema(enqueueRequestSchema, { io: 'input' }) as Record<string, unknown>;
    expect(doc.components.schemas.EnqueueRequest).toEqual(enqueue);
    const jobView = doc.components.schemas.JobView as { properties: Record<string, unknown>; required: string[] };
    expect(Object.keys(jobView.properties).sort()).toEqual(Object.keys(jobViewSchema.shape).sort());
  });

  it('documents priority as an integer 0 to 10, with a description, on every request that takes one', () => {
    const schemas = doc.components.schemas as Record<string, { properties: Record<string, Record<string, unknown>> }>;
    const flowJobs = schemas.FlowRequest?.properties.jobs as { items: { properties: Record<string, unknown> } };
    const flowJob = flowJobs.items;
    for (const priority of [
      schemas.EnqueueRequest?.properties.priority,
      schemas.ScheduleRequest?.properties.priority,
      schemas.ScheduleUpdate?.properties.priority,
      flowJob.properties.priority,
    ]) {
      expect(priority).toMatchObject({ type: 'integer', minimum: 0, maximum: 10, description: expect.any(String) });
    }
    expect(schemas.JobView?.properties.priority).toMatchObject({ type: 'integer' });
    expect(schemas.ScheduleView?.properties.priority).toMatchObject({ type: 'integer' });
  });

  it('documents each query parameter of GET /jobs from the query schema', () => {
    const names = doc.paths['/jobs']?.get?.parameters?.map((p) => `${p.in}:${p.name}`);
    expect(names).toEqual(Object.keys(listQueryDocSchema.shape).map((name) => `query:${name}`));
    expect(names).toEqual([...Object.keys(listQuerySchema.shape), 'payload.{path}'].map((name) => `query:${name}`));
  });

  it('lists every endpoint, each with a success response and error responses in the one error shape', () => {
    const listed = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((m) => `${m} ${path}`),
    );
    expect(listed.sort()).toEqual(
      [
        'post /jobs',
        'get /jobs',
        'get /jobs/{id}',
        'get /jobs/{id}/invoked',
        'get /jobs/{id}/timeline',
        'post /jobs/batch',
        'post /jobs/{id}/cancel',
        'post /jobs/{id}/retry',
        'post /jobs/{id}/rerun',
        'post /jobs/{id}/signals/{name}',
        'get /types/{type}/latest',
        'get /types/{type}/keys',
        'get /types/{type}/keys/{key}',
        'put /types/{type}/keys/{key}/limits',
        'delete /types/{type}/keys/{key}/limits',
        'get /dlq',
        'post /dlq/redrive',
        'get /openapi.json',
        'post /schedules',
        'get /schedules',
        'get /schedules/{name}',
        'put /schedules/{name}',
        'delete /schedules/{name}',
        'post /schedules/{name}/pause',
        'post /schedules/{name}/resume',
        'post /schedules/{name}/run',
        'get /overview',
        'post /jobs/bulk',
        'post /flows',
        'get /flows/{id}',
        'post /events',
        'get /events/{id}',
        'post /uploads',
      ].sort(),
    );
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        const statuses = Object.keys(op.responses);
        expect(
          statuses.some((s) => s.startsWith('2')),
          `${method} ${path}`,
        ).toBe(true);
        for (const status of statuses.filter((s) => Number(s) >= 400)) {
          expect(JSON.stringify(op.responses[status])).toContain('#/components/schemas/Error');
        }
      }
    }
  });

  it('builds the same document every time', () => {
    expect(buildOpenApiDocument()).toEqual(doc);
  });
});

describe('the document matches the router', () => {
  const catalog = [defineJobType({ type: 'echo', payload: z.record(z.string(), z.unknown()) })];
  const api = createApiHandler({
    access: allowEveryone(),
    config: testConfig(['echo']),
    catalog,
    store: new FakeJobStore(),
    queue: new FakeJobQueue(),
    scheduler: new FakeJobScheduler(),
    journal: new FakeJournal(),
    blobs: new FakeBlobStore(),
  });
  const event = (method: string, path: string): APIGatewayProxyEventV2 =>
    ({
      version: '2.0',
      routeKey: '$default',
      rawPath: path,
      rawQueryString: '',
      headers: {},
      requestContext: { http: { method, path }, requestId: 'r-1' },
      isBase64Encoded: false,
    }) as unknown as APIGatewayProxyEventV2;

  it.each(OPERATIONS.map((op) => [op.method.toUpperCase(), op.path]))('%s %s is routed', async (method, path) => {
    const concrete = path.replace('{id}', 'job-1').replace('{type}', 'echo').replace('{name}', 'paid');
    const response = await api(event(method, concrete));
    const body = JSON.parse(response.body ?? '{}') as { error?: { code: string } };
    expect(body.error?.code).not.toBe('route_not_found');
    expect(response.statusCode).not.toBe(405);
  });
});

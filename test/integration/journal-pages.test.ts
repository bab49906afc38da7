/**
 * A resume reads the journal in pages (issue 24, item 5): a run that replays N recorded entries
 * takes at most ⌈journal bytes / 1 MB⌉ + 1 round trips to DynamoDB, not N. Counted with the
 * platform's own request meter (shared/aws/cost-middleware.ts) on DynamoDB Local.
 */
import { randomBytes } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { describe, expect, inject, it } from 'vitest';
import { meterCost } from '../../shared/aws/cost-middleware';
import { DynamoJournal, journalEntryItem } from '../../shared/aws/dynamo-journal';
import { itemBytes } from '../../shared/aws/job-item';
import { ManualClock } from '../../shared/core/clock';
import type { JournalRecord } from '../../shared/core/journal';
import { incarnationOf } from '../../shared/core/table';
import { createWorkflow } from '../../shared/runtime/workflow';
import { LOCAL_CREDENTIALS } from '../local-aws/clients';
import { useJobTable } from '../local-aws/job-table';

const { tableName } = useJobTable('journal-pages');
const T0 = Date.parse('2026-06-01T00:00:00.000Z');
const TTL = Math.floor(T0 / 1000) + 86_400;
const MB = 1024 * 1024;
let seq = 0;

/** A DynamoDB client on the run's DynamoDB Local whose requests are counted. */
function countedClient() {
  const counted = { requests: 0 };
  const client = meterCost(
    new DynamoDBClient({ endpoint: inject('dynamodbEndpoint'), region: 'us-east-1', credentials: LOCAL_CREDENTIALS }),
    {
      record: (cost) => {
        counted.requests += cost.requests;
      },
    },
  );
  return { client, counted };
}

/** Records `values` as steps `s-<i>` of a new job's journal; returns the job and the entries' bytes. */
async function recordedJob(journal: DynamoJournal, values: unknown[]) {
  const job = { id: `pages-${++seq}`, createdAt: new Date(T0).toISOString(), attempts: 1, resumes: 1 };
  const incarnation = incarnationOf(job.createdAt);
  let bytes = 0;
  for (let start = 0; start < values.length; start += 25) {
    await Promise.all(
      values.slice(start, start + 25).map((value, k) => {
        const record: JournalRecord = {
          jobId: job.id,
          incarnation,
          kind: 'step',
          name: `s-${start + k}`,
          value,
          at: T0,
          expiresAt: TTL,
        };
        bytes += itemBytes(journalEntryItem(record));
        return journal.record(record);
      }),
    );
  }
  return { job, bytes };
}

/** A resumed run replaying every recorded step, as the worker runs it; returns its requests. */
async function replay(job: { id: string; createdAt: string; attempts: number; resumes: number }, count: number) {
  const { client, counted } = countedClient();
  const workflow = createWorkflow({
    job,
    journal: new DynamoJournal(client, tableName),
    clock: new ManualClock(T0 + 1000),
    signal: new AbortController().signal,
    expiresAt: () => TTL,
  });
  const seen: unknown[] = [];
  for (let i = 0; i < count; i++) {
    seen.push(
      await workflow.step(`s-${i}`, () => {
        throw new Error(`step s-${i} ran again`);
      }),
    );
  }
  client.destroy();
  return { requests: counted.requests, seen };
}

describe('a resume reads the journal in pages', () => {
  it('replays 1,000 recorded steps in ⌈bytes / 1 MB⌉ + 1 round trips', async () => {
    const { client } = countedClient();
    const values = Array.from({ length: 1000 }, (_, i) => ({ i, ok: true }));
    const { job, bytes } = await recordedJob(new DynamoJournal(client, tableName), values);
    const { requests, seen } = await replay(job, values.length);
    expect(seen).toEqual(values);
    expect(requests).toBeLessThanOrEqual(Math.ceil(bytes / MB) + 1);
    client.destroy();
  }, 60_000);

  it('replays 40 steps of ~45 KB each (about 1.8 MB) in ⌈bytes / 1 MB⌉ + 1 round trips', async () => {
    const { client } = countedClient();
    const values = Array.from({ length: 40 }, (_, i) => ({ i, text: randomBytes(45_000).toString('base64') }));
    const { job, bytes } = await recordedJob(new DynamoJournal(client, tableName), values);
    expect(bytes).toBeGreaterThan(MB);
    const { requests, seen } = await replay(job, values.length);
    expect(seen).toEqual(values);
    expect(requests).toBeLessThanOrEqual(Math.ceil(bytes / MB) + 1);
    client.destroy();
  }, 60_000);

  it('a job’s first run reads nothing from its journal', async () => {
    const { client, counted } = countedClient();
    const workflow = createWorkflow({
      job: { id: `pages-${++seq}`, createdAt: new Date(T0).toISOString(), attempts: 1 },
      journal: new DynamoJournal(client, tableName),
      clock: new ManualClock(T0),
      signal: new AbortController().signal,
      expiresAt: () => TTL,
    });
    for (let i = 0; i < 5; i++) await workflow.step(`s-${i}`, () => i);
    expect(counted.requests).toBe(5); // the 5 recording writes, no read
    client.destroy();
  });
});

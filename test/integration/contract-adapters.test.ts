/**
 * The job-port contract (test/contract/job-store.contract.ts) against the DynamoDB adapters
 * (DynamoJobStore, DynamoJobControl) on DynamoDB Local: the same cases the fakes pass in
 * test/unit/contract-fakes.test.ts. So do the other ports' contracts (test/contract/*.contract.ts).
 */

import { type DynamoDBClient, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { keyOf } from '../../shared/aws/attributes';
import { DynamoDebouncer } from '../../shared/aws/dynamo-debouncer';
import { DynamoDueIndex } from '../../shared/aws/dynamo-due-index';
import { DynamoEventWaits } from '../../shared/aws/dynamo-event-waits';
import { DynamoFlowSlots, flowKeys } from '../../shared/aws/dynamo-flow-slots';
import { DynamoJobControl } from '../../shared/aws/dynamo-job-control';
import { DynamoJobGraph } from '../../shared/aws/dynamo-job-graph';
import { DynamoJobIndex } from '../../shared/aws/dynamo-job-index';
import { DynamoJobStore } from '../../shared/aws/dynamo-job-store';
import { DynamoJournal } from '../../shared/aws/dynamo-journal';
import { DynamoPacer } from '../../shared/aws/dynamo-pacer';
import { DynamoRedriveLog, redriveKey } from '../../shared/aws/dynamo-redrive-log';
import { DynamoScheduleStore } from '../../shared/aws/dynamo-schedule-store';
import { JOB_TABLE, keys } from '../../shared/core/table';
import { debouncerContract } from '../contract/debouncer.contract';
import { dueIndexContract } from '../contract/due-index.contract';
import { eventWaitsContract } from '../contract/event-waits.contract';
import { flowSlotsContract } from '../contract/flow-slots.contract';
import { fairShareEdgesContract } from '../contract/flow-slots-fair-edges.contract';
import { acquireEachContract } from '../contract/flow-slots-many.contract';
import { jobGraphContract } from '../contract/job-graph.contract';
import { jobIndexContract } from '../contract/job-index.contract';
import { type ContractLeg, jobStoreContract } from '../contract/job-store.contract';
import { journalContract } from '../contract/journal.contract';
import { pacerContract } from '../contract/pacer.contract';
import { redriveLogContract } from '../contract/redrive-log.contract';
import { scheduleStoreContract } from '../contract/schedule-store.contract';
import { useJobTable } from '../local-aws/job-table';
import type { DueAttributes } from '../support/fakes';

const { dynamo, tableName } = useJobTable('contract');

/** The item's `dueBucket` and `dueAt`, as the supervisor's `DynamoDueIndex` reads them. */
async function readDue(client: DynamoDBClient, table: string, id: string): Promise<DueAttributes | undefined> {
  const out = await client.send(
    new GetItemCommand({ TableName: table, Key: keyOf(keys.job(id)), ConsistentRead: true }),
  );
  if (!out.Item) return undefined;
  const raw = unmarshall(out.Item) as { dueBucket?: unknown; dueAt?: unknown };
  return {
    ...(typeof raw.dueBucket === 'string' ? { dueBucket: raw.dueBucket } : {}),
    ...(typeof raw.dueAt === 'number' ? { dueAt: raw.dueAt } : {}),
  };
}

const leg: ContractLeg = {
  store: new DynamoJobStore(dynamo, tableName),
  control: new DynamoJobControl(dynamo, tableName),
  dueOf: (id) => readDue(dynamo, tableName, id),
};

describe('job ports contract: DynamoJobStore and DynamoJobControl on DynamoDB Local', () => {
  jobStoreContract(async () => leg);
});

describe('flow slots contract: DynamoFlowSlots on DynamoDB Local', () => {
  flowSlotsContract(async () => ({
    slots: new DynamoFlowSlots(dynamo, tableName),
    orphanTicket: async (slot) => {
      await dynamo.send(
        new UpdateItemCommand({
          TableName: tableName,
          Key: keyOf(flowKeys.slot(slot.scope, slot.key)),
          UpdateExpression: 'ADD iss :one',
          ExpressionAttributeValues: { ':one': { N: '1' } },
        }),
      );
    },
  }));
  fairShareEdgesContract(async () => ({ slots: new DynamoFlowSlots(dynamo, tableName) }));
  acquireEachContract(async () => ({ slots: new DynamoFlowSlots(dynamo, tableName) }));
});

describe('pacer contract: DynamoPacer on DynamoDB Local', () => {
  pacerContract(async () => new DynamoPacer(dynamo, tableName));
});

describe('debouncer contract: DynamoDebouncer on DynamoDB Local', () => {
  debouncerContract(async () => new DynamoDebouncer(dynamo, tableName));
});

describe('job index contract: DynamoJobIndex on DynamoDB Local', () => {
  jobIndexContract(async () => ({
    store: new DynamoJobStore(dynamo, tableName),
    index: new DynamoJobIndex(dynamo, tableName),
  }));
});

describe('job graph contract: DynamoJobGraph on DynamoDB Local', () => {
  jobGraphContract(async () => ({
    store: new DynamoJobStore(dynamo, tableName),
    graph: new DynamoJobGraph(dynamo, tableName),
  }));
});

describe('event waits contract: DynamoEventWaits on DynamoDB Local', () => {
  eventWaitsContract(async () => new DynamoEventWaits(dynamo, tableName));
});

describe('journal contract: DynamoJournal on DynamoDB Local', () => {
  journalContract(async () => new DynamoJournal(dynamo, tableName));
});

describe('due index contract: DynamoDueIndex, DynamoJournal and DynamoJobStore on DynamoDB Local', () => {
  dueIndexContract(async () => ({
    index: new DynamoDueIndex(dynamo, tableName),
    journal: new DynamoJournal(dynamo, tableName),
    store: new DynamoJobStore(dynamo, tableName),
  }));
});

describe('schedule store contract: DynamoScheduleStore on DynamoDB Local', () => {
  scheduleStoreContract(async () => new DynamoScheduleStore(dynamo, tableName));
});

describe('redrive log contract: DynamoRedriveLog on DynamoDB Local', () => {
  redriveLogContract(async () => new DynamoRedriveLog(dynamo, tableName));

  it('writes one item per type, `dlq#<type>`, in no index and with no TTL', async () => {
    const type = `x-${Math.random().toString(36).slice(2, 8)}`;
    const at = '2026-06-01T00:00:00.000Z';
    await new DynamoRedriveLog(dynamo, tableName).record({
      type,
      by: 'anonymous',
      at,
      method: 'receive-send',
      moved: 2,
    });
    const out = await dynamo.send(
      new GetItemCommand({ TableName: tableName, Key: keyOf(redriveKey(type)), ConsistentRead: true }),
    );
    const item = unmarshall(out.Item ?? {});
    expect(item).toEqual({ pk: `dlq#${type}`, sk: '-', type, by: 'anonymous', at, method: 'receive-send', moved: 2 });
    // no key attribute of any index, and not the TTL attribute
    const indexKeys = JOB_TABLE.indexes.flatMap((index) => [index.partitionKey, index.sortKey]);
    for (const name of [...indexKeys, JOB_TABLE.ttlAttribute]) expect(item, name).not.toHaveProperty(name);
  });
});

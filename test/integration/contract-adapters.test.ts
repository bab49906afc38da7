/**
 * The job-port contract (test/contract/job-store.contract.ts) against the DynamoDB adapters
 * (DynamoJobStore, DynamoJobControl) on DynamoDB Local: the same cases the fakes pass in
 * test/unit/contract-fakes.test.ts.
 */

import { type DynamoDBClient, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { describe } from 'vitest';
import { keyOf } from '../../shared/aws/attributes';
import { DynamoDebouncer } from '../../shared/aws/dynamo-debouncer';
import { DynamoDueIndex } from '../../shared/aws/dynamo-due-index';
import { DynamoFlowSlots, flowKeys } from '../../shared/aws/dynamo-flow-slots';
import { DynamoJobControl } from '../../shared/aws/dynamo-job-control';
import { DynamoJobGraph } from '../../shared/aws/dynamo-job-graph';
import { DynamoJobIndex } from '../../shared/aws/dynamo-job-index';
import { DynamoJobStore } from '../../shared/aws/dynamo-job-store';
import { DynamoJournal } from '../../shared/aws/dynamo-journal';
import { DynamoPacer } from '../../shared/aws/dynamo-pacer';
import { DynamoScheduleStore } from '../../shared/aws/dynamo-schedule-store';
import { keys } from '../../shared/core/table';
import { debouncerContract } from '../contract/debouncer.contract';
import { dueIndexContract } from '../contract/due-index.contract';
import { flowSlotsContract } from '../contract/flow-slots.contract';
import { jobGraphContract } from '../contract/job-graph.contract';
import { jobIndexContract } from '../contract/job-index.contract';
import { type ContractLeg, jobStoreContract } from '../contract/job-store.contract';
import { journalContract } from '../contract/journal.contract';
import { pacerContract } from '../contract/pacer.contract';
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

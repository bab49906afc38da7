/**
 * The job-port contract (test/contract/job-store.contract.ts) against the in-memory fakes the
 * unit tests use. The same suite runs against the DynamoDB adapters in
 * test/integration/contract-adapters.test.ts.
 */

import { describe } from 'vitest';
import { blobStoreContract } from '../contract/blob-store.contract';
import { debouncerContract } from '../contract/debouncer.contract';
import { dueIndexContract } from '../contract/due-index.contract';
import { eventWaitsContract } from '../contract/event-waits.contract';
import { flowSlotsContract } from '../contract/flow-slots.contract';
import { fairShareEdgesContract } from '../contract/flow-slots-fair-edges.contract';
import { acquireEachContract } from '../contract/flow-slots-many.contract';
import { jobGraphContract } from '../contract/job-graph.contract';
import { jobIndexContract } from '../contract/job-index.contract';
import { jobQueueContract } from '../contract/job-queue.contract';
import { jobStoreContract } from '../contract/job-store.contract';
import { journalContract } from '../contract/journal.contract';
import { pacerContract } from '../contract/pacer.contract';
import { redriveLogContract } from '../contract/redrive-log.contract';
import { scheduleStoreContract } from '../contract/schedule-store.contract';
import { FakeEventWaits } from '../local-aws/memory-event-waits';
import { FakeScheduleStore } from '../local-aws/memory-schedules';
import { FakeBlobStore } from '../support/blob-fake';
import { FakeJobControl, FakeJobIndex, FakeRedriveLog } from '../support/control-fakes';
import { FakeDueIndex } from '../support/due-index-fake';
import { FakeJobQueue, FakeJobStore } from '../support/fakes';
import { FakeDebouncer, FakeFlowSlots, FakePacer } from '../support/flow-fakes';
import { FakeJobGraph } from '../support/graph-fakes';
import { FakeJournal } from '../support/journal-fake';

describe('job ports contract: FakeJobStore and FakeJobControl', () => {
  jobStoreContract(async () => {
    const store = new FakeJobStore();
    return { store, control: new FakeJobControl(store), dueOf: async (id) => store.due(id) };
  });
});

describe('job queue contract: FakeJobQueue', () => {
  // one fake for every queue URL, as one SQS holds every queue
  const queue = new FakeJobQueue();
  let queues = 0;
  jobQueueContract(async () => ({
    queue,
    newQueue: async () => `https://sqs.eu-west-1.amazonaws.com/123456789012/contract-${++queues}`,
    receive: async (url, count) =>
      queue.sent
        .filter((s) => s.queueUrl === url)
        .slice(0, count)
        .map(({ message, groupId }) => ({ message, groupId })),
    groups: 'kept',
  }));
});

describe('flow slots contract: FakeFlowSlots', () => {
  flowSlotsContract(async () => {
    const slots = new FakeFlowSlots();
    return { slots, orphanTicket: async (slot) => slots.orphanTicket(slot) };
  });
  fairShareEdgesContract(async () => ({ slots: new FakeFlowSlots() }));
  acquireEachContract(async () => ({ slots: new FakeFlowSlots() }));
});

describe('pacer contract: FakePacer', () => {
  // one store behind every "instance", as the table is
  const shared = new FakePacer();
  pacerContract(async () => shared);
});

describe('debouncer contract: FakeDebouncer', () => {
  debouncerContract(async () => new FakeDebouncer());
});

describe('job index contract: FakeJobIndex', () => {
  jobIndexContract(async () => {
    const store = new FakeJobStore();
    return { store, index: new FakeJobIndex(store) };
  });
});

describe('job graph contract: FakeJobGraph', () => {
  jobGraphContract(async () => {
    const store = new FakeJobStore();
    return { store, graph: new FakeJobGraph(store) };
  });
});

describe('event waits contract: FakeEventWaits', () => {
  eventWaitsContract(async () => new FakeEventWaits());
});

describe('journal contract: FakeJournal', () => {
  journalContract(async () => new FakeJournal());
});

describe('due index contract: FakeDueIndex over FakeJobStore and FakeJournal', () => {
  dueIndexContract(async () => {
    const store = new FakeJobStore();
    const journal = new FakeJournal();
    return { index: new FakeDueIndex(store, journal), journal, store };
  });
});

describe('schedule store contract: FakeScheduleStore', () => {
  scheduleStoreContract(async () => new FakeScheduleStore());
});

describe('redrive log contract: FakeRedriveLog', () => {
  // one log behind every case, as the table is
  const shared = new FakeRedriveLog();
  redriveLogContract(async () => shared);
});

describe('blob store contract: FakeBlobStore', () => {
  const shared = new FakeBlobStore();
  blobStoreContract(async () => ({ store: shared, upload: (url, body) => shared.upload(url, body) }));
});

import type { DeadLetterQueues, JobControl, JobIndex, RedriveLog } from '../core/control-ports';
import type { JobGraph } from '../core/dependencies';
import type { Journal } from '../core/journal';
import { ConfigError } from '../errors';
import { BatchService } from './batch-service';
import { BulkService } from './bulk-service';
import { ControlService } from './control-service';
import { DlqService } from './dlq-service';
import type { JobsService } from './jobs-service';
import { ListService } from './list-service';
import { OverviewService } from './overview-service';
import type { ApiServiceDeps } from './service-deps';

/** The adapters the control-plane endpoints need besides the job store, queue and scheduler. */
export interface ControlPlaneAdapters {
  index: JobIndex;
  control: JobControl;
  deadLetters: DeadLetterQueues;
  /** Each job type's last DLQ redrive (`DynamoRedriveLog` on the job table). */
  redrives: RedriveLog;
}

/** The services behind the control-plane routes (batch, list, cancel/retry, bulk, DLQ, overview). */
export interface ControlPlane {
  batch: BatchService;
  list: ListService;
  control: ControlService;
  bulk: BulkService;
  dlq: DlqService;
  overview: OverviewService;
}

export interface ControlPlaneDeps extends ApiServiceDeps {
  /** Job dependencies: a cancel releases the job's children. @default none */
  graph?: JobGraph;
  /** Without them, the listing, cancel/retry and DLQ endpoints fail (a logged 500: a deployment error). */
  controlPlane?: ControlPlaneAdapters;
  /** Job journals: `POST /jobs/{id}/rerun` reads the job's and starts a new series of it. @default reruns fail (a logged 500) */
  journal?: Journal;
}

function notConfigured(): never {
  throw new ConfigError('this API was built without the control-plane adapters (ApiDeps.controlPlane)');
}

const UNCONFIGURED: ControlPlaneAdapters = {
  index: { query: async () => notConfigured() },
  control: {
    cancel: async () => notConfigured(),
    restart: async () => notConfigured(),
    undoRestart: async () => notConfigured(),
  },
  deadLetters: {
    peek: async () => notConfigured(),
    depth: async () => notConfigured(),
    startMove: async () => notConfigured(),
    receive: async () => notConfigured(),
    sendAll: async () => notConfigured(),
    deleteAll: async () => notConfigured(),
  },
  redrives: {
    record: async () => notConfigured(),
    last: async () => notConfigured(),
  },
};

/** Builds the control-plane services on the API's dependencies. */
export function createControlPlane(deps: ControlPlaneDeps, jobs: JobsService): ControlPlane {
  const adapters = deps.controlPlane ?? UNCONFIGURED;
  const control = new ControlService({ ...deps, control: adapters.control });
  return {
    batch: new BatchService({ jobs, log: deps.log }),
    list: new ListService({ config: deps.config, index: adapters.index, jobs, clock: deps.clock }),
    control,
    bulk: new BulkService({ control }),
    dlq: new DlqService({
      config: deps.config,
      deadLetters: adapters.deadLetters,
      redrives: adapters.redrives,
      clock: deps.clock,
      log: deps.log,
    }),
    overview: new OverviewService({
      config: deps.config,
      index: adapters.index,
      deadLetters: adapters.deadLetters,
      clock: deps.clock,
      log: deps.log,
    }),
  };
}

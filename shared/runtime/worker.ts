import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { PayloadSchema, WorkerPort } from '../core/job-type';
import { METRIC } from '../core/metrics';
import { createKit, type HandlerCall, type NoCall, type WorkerDeps } from './delivery/kit';
import { jobIdOf, receiveCountOf } from './delivery/parse';
import { createPipeline } from './delivery/pipeline';
import { STANDARD_GATES } from './gates';
import type { Gate, GateBuilder, Outcome } from './gates/gate';
import type { JobDefinition } from './job-definition';
import type { AnySignals } from './workflow';

export type { WorkerDeps } from './delivery/kit';

/**
 * Builds the SQS batch handler for a job definition. Every record of a batch is handled
 * concurrently; only records that must come back are listed in `batchItemFailures`.
 *
 * Each record goes parse → gates → claim → attempt → outcome (./delivery/pipeline.ts). The gates
 * are what stands between a delivery and a run (a `notBefore`, a `queue-one` predecessor, a
 * debounce, a throttle, concurrency and singleton slots): each is built from the job type's spec,
 * and one the spec does not need costs nothing.
 *
 * @param gates The gate list, in order. @default STANDARD_GATES (./gates/index.ts)
 * @example
 * export const handler = createWorker(sendEmail, { config, store, queue, scheduler });
 */
export function createWorker<Needs extends WorkerPort = never>(
  def: JobDefinition<PayloadSchema, string, AnySignals, unknown, Needs>,
  deps: WorkerDeps & Required<Pick<WorkerDeps, Needs>>,
  gates: readonly GateBuilder[] = STANDARD_GATES,
): (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse> {
  const deliver = createDelivery(def as JobDefinition, deps, gates);
  return async (event: SQSEvent): Promise<SQSBatchResponse> => {
    const outcomes = await Promise.all(event.Records.map((record) => deliver(record)));
    return batchResponse(event, outcomes);
  };
}

/** The SQS partial batch response: the records whose message must come back. */
export function batchResponse(event: SQSEvent, outcomes: readonly Outcome[]): SQSBatchResponse {
  return {
    batchItemFailures: event.Records.flatMap((record, i) =>
      outcomes[i] === 'retry' ? [{ itemIdentifier: record.messageId }] : [],
    ),
  };
}

/**
 * One record's delivery (parse → gates → claim → attempt → outcome), with its cost as a metric
 * and a log line when its message goes to the DLQ: what {@link createWorker} runs for each record.
 * `call` runs the handler of a claimed attempt (a batch worker's share of one call for many);
 * `noCall` is told as soon as a record is known not to call it.
 */
export function createDelivery(
  def: JobDefinition,
  deps: WorkerDeps,
  gates: readonly GateBuilder[] = STANDARD_GATES,
  call?: HandlerCall,
  noCall?: NoCall,
): (record: SQSRecord) => Promise<Outcome> {
  const kit = createKit(def, deps, call, noCall);
  const built = gates.map((build) => build(kit)).filter((gate): gate is Gate => gate !== undefined);
  const handleRecord = createPipeline(kit, built);
  /** One record, with what it cost (as a metric) and whether its message now goes to the DLQ. */
  async function deliver(record: SQSRecord): Promise<Outcome> {
    let outcome: Outcome;
    const meter = deps.meter;
    if (meter) {
      const measured = await meter.measure(() => handleRecord(record));
      kit.metrics.add(METRIC.requests, kit.type, measured.cost.requests);
      kit.metrics.add(METRIC.writeUnits, kit.type, measured.cost.writeUnits);
      outcome = measured.value;
    } else {
      outcome = await handleRecord(record);
    }
    const receiveCount = receiveCountOf(record);
    const maxReceiveCount = kit.route.maxReceiveCount;
    if (outcome === 'retry' && maxReceiveCount !== undefined && receiveCount >= maxReceiveCount) {
      kit.metrics.add(METRIC.deadLettered, kit.type);
      kit.log.error('the message had its last receive: SQS moves it to the dead-letter queue', {
        ...jobIdOf(record),
        messageId: record.messageId,
        receiveCount,
        maxReceiveCount,
      });
    }
    return outcome;
  }

  return deliver;
}

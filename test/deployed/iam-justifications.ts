/**
 * Why a role holds a permission that no call of the `deployed` run used (iam-proof.ts), keyed by
 * `<role kind> <IAM action> <resource>`, the resource in words (iam-proof.ts `resourceLabel`):
 * `table`, `index <name>`, `own ready queue` (a worker's), `ready queues` (`<prefix>_ready_*`),
 * `DLQs` (`<prefix>_dlq_*`), `schedules of the group`, `Scheduler role`, `own log group`, `*`.
 *
 * An unused line with no entry here fails the run, so a permission nobody calls cannot slip in
 * unexplained; an entry that matches no line of any role fails it too (remove it with the
 * permission). An entry applies only when its line is unused: some lines are used in one run and
 * not in another (a path that depends on timing), and keep their entry for the runs that miss it.
 * A worker line that another type's worker used needs no entry (same construct, same statement).
 *
 * Fates: `kept (Lambda uses it)`: the Lambda service acts with the execution role, not the code;
 * `kept (not in the suite)`: the code path exists and runs on AWS, but the e2e suite does not
 * take it; `kept (moto lacks it)`: the call is made on AWS, moto does not implement it;
 * `kept (CDK grant)`: part of a CDK grant, called by nothing.
 */
export interface Justification {
  /** Why no recorded call used it. */
  verdict: string;
  /** What becomes of it. */
  fate: string;
}

const LOGS: Justification = {
  verdict:
    "Lambda writes the function's stdout to its log group with the execution role; the code makes no CloudWatch " +
    "Logs call, and the harness's Lambda host writes the logs to files. (moto resolves the log group's ARN without AWS's ':*'.)",
  fate: 'kept (Lambda uses it)',
};
const XRAY: Justification = {
  verdict:
    "Active tracing: Lambda's X-Ray daemon sends the segments with the execution role (X-Ray has no resource-level " +
    'permissions); the code makes no X-Ray API call, and the harness runs no daemon.',
  fate: 'kept (Lambda uses it)',
};
const PAYLOADS: Justification = {
  verdict:
    'Values too large for an item go to the payload bucket (shared/core/blobs.ts): payloads over 256 KiB, uploads, ' +
    'results and step results over 64 KiB. The deployed suite enqueues small jobs only; the end-to-end runs of ' +
    'the large paths are test/integration/large-payloads.test.ts (fauxqs S3), and test/infra/payload-bucket.test.ts ' +
    'evaluates each of these requests against the synthesized policies with the same simulator.',
  fate: 'kept (not in the suite)',
};
const WORKER_SCHEDULE: Justification = {
  verdict:
    'A worker creates a one-time schedule only for a retry backoff or a step.sleep/waitForSignal longer than a ' +
    "message's longest visibility (11 h 40 min), or to release a child whose runAt is more than 15 minutes away; " +
    'no job of the suite does.',
  fate: 'kept (not in the suite)',
};

export const UNUSED_STATEMENT_VERDICTS: Readonly<Record<string, Justification>> = {
  // Every function role.
  'api logs:CreateLogStream own log group': LOGS,
  'api logs:PutLogEvents own log group': LOGS,
  'supervisor logs:CreateLogStream own log group': LOGS,
  'supervisor logs:PutLogEvents own log group': LOGS,
  'worker logs:CreateLogStream own log group': LOGS,
  'worker logs:PutLogEvents own log group': LOGS,
  'api s3:PutObject payload objects p/*': PAYLOADS,
  'api s3:PutObject payload objects u/*': PAYLOADS,
  'api s3:PutObject payload objects g/*': PAYLOADS,
  'api s3:GetObject payload objects u/*': PAYLOADS,
  'api s3:ListBucket payload bucket': PAYLOADS,
  'worker s3:GetObject payload objects p/*': PAYLOADS,
  'worker s3:GetObject payload objects u/*': PAYLOADS,
  'worker s3:GetObject payload objects s/*': PAYLOADS,
  'worker s3:GetObject payload objects g/*': PAYLOADS,
  'worker s3:GetObject payload objects r/*': PAYLOADS,
  'worker s3:PutObject payload objects r/*': PAYLOADS,
  'worker s3:PutObject payload objects s/*': PAYLOADS,
  'worker s3:ListBucket payload bucket': PAYLOADS,
  'api xray:PutTraceSegments *': XRAY,
  'api xray:PutTelemetryRecords *': XRAY,
  'supervisor xray:PutTraceSegments *': XRAY,
  'supervisor xray:PutTelemetryRecords *': XRAY,
  'worker xray:PutTraceSegments *': XRAY,
  'worker xray:PutTelemetryRecords *': XRAY,

  // The API.
  'api sqs:StartMessageMoveTask DLQs': {
    verdict:
      'POST /dlq/redrive starts an SQS message move task from the DLQ to the ready queue. moto does not implement ' +
      'message move tasks (ListMessageMoveTasks answers NotImplemented, which the run records and allows), so the ' +
      'API falls back to receive, send and delete, which the run proves. Unproven until a run on LocalStack or AWS.',
    fate: 'kept (moto lacks it)',
  },

  'api sqs:ListQueues *': {
    verdict:
      "Only when the API's catalog differs from the deployed job types (ORRERY_TYPES_DIGEST): it lists the ready " +
      "queues once at cold start to serve only the deployed ones (deployedConfig). The repository's catalog is the " +
      'deployed set, so the run never lists; test/integration/deployed-types.test.ts takes that path on local SQS.',
    fate: 'kept (not in the suite)',
  },

  // The supervisor: repairs that a healthy run of a few minutes never needs.
  'supervisor sqs:SendMessage ready queues': {
    verdict:
      'Sends a job again when its message was lost or its worker died (overdue in the due index); no job of the run was.',
    fate: 'kept (not in the suite)',
  },
  'supervisor scheduler:DeleteSchedule schedules of the group': {
    verdict:
      'Deletes the one-time schedule of a job it sends again because the schedule never fired; the suite has no such job ' +
      '(moto never fires schedules, but the suite does not wait out a far-future job’s grace).',
    fate: 'kept (not in the suite)',
  },
  'supervisor dynamodb:PutItem table': {
    verdict:
      "Written only by repairs: a recurring schedule's missed fire caught up (the run's job item and the schedule's " +
      "state, fire-processor.ts) or a waiting child whose release was lost (its parent's release marker, release.ts); " +
      'no pass of the run found one.',
    fate: 'kept (not in the suite)',
  },
  'supervisor dynamodb:BatchGetItem table': {
    verdict:
      'The creation sweep reads the jobs created 8 minutes earlier (DynamoDueIndex.unfinished), and a reconciled child ' +
      'its parents (JobGraph.jobs); the run is shorter than that and reconciled no child.',
    fate: 'kept (not in the suite)',
  },

  // The workers.
  'worker scheduler:CreateSchedule schedules of the group': WORKER_SCHEDULE,
  'worker iam:PassRole Scheduler role': WORKER_SCHEDULE,
  'worker sqs:GetQueueAttributes own ready queue': {
    verdict:
      "The event source mapping's: Lambda requires sqs:GetQueueAttributes (with ReceiveMessage and DeleteMessage) " +
      "on the execution role to create and run the mapping; the harness's poller does not call it.",
    fate: 'kept (Lambda uses it)',
  },
  'worker sqs:GetQueueUrl own ready queue': {
    verdict:
      "Part of CDK's SqsEventSource grant (queue.grantConsumeMessages); nothing calls it (queue URLs are derived " +
      'from ORRERY_QUEUE_URL_BASE). Read-only, on its own queue.',
    fate: 'kept (CDK grant)',
  },
  'worker dynamodb:DeleteItem table': {
    verdict:
      "Only a ranked line's admission deletes: the entry it admits (`flowq#…`, in a TransactWriteItems), for a type " +
      'with priorities whose job had to wait; the grant names no other partition (LeadingKeys, test/infra/iam.test.ts). ' +
      'The deployed run is on moto, whose DynamoDB does not serialise conditional writes, so its flow-control tests ' +
      'are skipped there (test/e2e/target.ts); the ranked line runs on DynamoDB Local (contract, integration, chaos).',
    fate: 'kept (not in the suite)',
  },
  'api dynamodb:Query table': {
    verdict:
      "Only a slot's ranked line (`flowq#…`; LeadingKeys, test/infra/iam.test.ts): a concurrency limit raised at run " +
      "time admits the line's head, and GET /types/{type}/keys/{key} lists the line. The deployed run is on moto, " +
      'whose flow-control tests are skipped (test/e2e/target.ts); the ranked line runs on DynamoDB Local. And an ' +
      "event's match keys (`evmatch#…`): POST /events reads the waits of an event that declares matchOn; the " +
      'deployed suite sends no such event (test/integration/workflow-events.test.ts runs it on DynamoDB Local). ' +
      "And a job's journal (`job#…#journal`): POST /jobs/{id}/rerun reads the entries it cuts; the deployed suite " +
      'makes no rerun (test/integration/workflow-rerun.test.ts runs it on DynamoDB Local).',
    fate: 'kept (not in the suite)',
  },
  // Used in the runs so far; kept for a run whose jobs take no such path.
  'worker sqs:SendMessage ready queues': {
    verdict:
      'A worker sends only when a finished job releases a child (of its type or another) or a freed concurrency slot ' +
      "goes to a waiting job; the suite's dependsOn tests do both, a run without them would not.",
    fate: 'kept (not in the suite)',
  },
  'worker dynamodb:GetItem table': {
    verdict:
      "Reads outside the claim (a step's journal entry, a flow slot, a pace or debounce item, a job after a lost " +
      'claim race): paths a run may or may not take.',
    fate: 'kept (not in the suite)',
  },
};

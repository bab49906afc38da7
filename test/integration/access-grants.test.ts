/**
 * Who may do what, on local AWS (a platform of its own, so it is not among the e2e files that the
 * moto and deployed targets share): the grants matrix (test/support/grants-matrix.ts, which the
 * deployed target runs too), then what only a local platform shows: the audit in the log lines.
 */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { echo } from '../../functions/jobs/echo';
import { flaky } from '../../functions/jobs/flaky';
import { sleep } from '../../functions/jobs/sleep';
import { createLogger } from '../../shared/logger';
import { LOCAL_CREDENTIALS } from '../local-aws/clients';
import { type LocalAws, startLocalAws } from '../local-aws/index';
import { type LocalPlatform, startLocalPlatform } from '../local-aws/local-platform';
import { uniquePrefix } from '../local-aws/namespace';
import { captureLogs } from '../support/fakes';
import { CALLERS, DOCUMENT, WHO } from '../support/grants-callers';
import { expectAuditLines, matrixOn } from '../support/grants-matrix';

const logs = captureLogs();
let aws: LocalAws;
let platform: LocalPlatform;
let matrix: ReturnType<typeof matrixOn>;

beforeAll(async () => {
  aws = await startLocalAws({ dynamodbEndpoint: inject('dynamodbEndpoint') });
  platform = await startLocalPlatform({
    aws,
    prefix: uniquePrefix('access'),
    jobs: [echo, flaky, sleep],
    runWorkers: false,
    logger: createLogger({ level: 'info', sink: logs.sink }),
    grants: DOCUMENT,
    callers: Object.values(CALLERS),
  });
  matrix = matrixOn({
    url: platform.url,
    region: aws.region,
    admin: LOCAL_CREDENTIALS,
    sendToDlq: async (type, body) => {
      await platform.clients.sqs.send(
        new SendMessageCommand({ QueueUrl: platform.config.routes[type]?.dlqUrl, MessageBody: body }),
      );
    },
  });
});

afterAll(async () => {
  await platform?.stop();
  await aws?.stop();
});

describe('grants on local AWS', () => {
  it.each(WHO)('%s: allowed calls succeed, every other call answers 403 and writes nothing', async (who) => {
    expect(await matrix.check(who)).toEqual([]);
  });

  it('names the type a scoped grant does not cover', () => matrix.namesTheType());

  it('shows a reader scoped by type only its types in the overview and the schedule list', () => matrix.scopedReader());

  it('audits a cancel, a retry, a DLQ redrive and a schedule pause: on the job or schedule, and in the log', async () => {
    expectAuditLines(logs.lines, await matrix.auditTrail());
  });

  it('refuses an unsigned request at the Function URL', async () => {
    const response = await fetch(`${platform.url}/jobs/x`);
    expect(response.status).toBe(403);
  });
});

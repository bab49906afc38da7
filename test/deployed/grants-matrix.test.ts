/**
 * Who may do what, on the deployed stack: the grants matrix (test/support/grants-matrix.ts) that
 * the integration tier runs on local AWS, here against the app as `cdk deploy` ships it. The
 * harness synthesizes the app with the matrix's callers (`-c orrery:callers`, global-setup.ts),
 * so their grants are in the SSM parameter CloudFormation wrote and the API function reads at
 * cold start; each caller signs as an assumed role of its own, and the Function URL hands the
 * function its identity. The audit is read back from the API and from the API function's log.
 *
 * Runs in the `deployed` project only (`npm run test:deployed`).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { E2ETarget } from '../e2e/target';
import { WHO } from '../support/grants-callers';
import { expectAuditLines, matrixOn } from '../support/grants-matrix';
import { startDeployedTarget } from './deployed-target';

let target: E2ETarget;
let matrix: ReturnType<typeof matrixOn>;

function outputsDir(): string {
  const outputs = process.env.ORRERY_E2E_OUTPUTS;
  if (!outputs) throw new Error('ORRERY_E2E_OUTPUTS is not set (npm run test:deployed sets it)');
  return dirname(outputs);
}

/** The stack output `ApiUrl`, without its trailing slash. */
function apiUrl(): string {
  const outputs = JSON.parse(readFileSync(process.env.ORRERY_E2E_OUTPUTS ?? '', 'utf8')) as Record<
    string,
    Record<string, string>
  >;
  const url = Object.values(outputs).find((stack) => stack.ApiUrl)?.ApiUrl;
  if (!url) throw new Error('the deployed stack has no ApiUrl output');
  return url.replace(/\/$/, '');
}

/** The API function's structured log lines (the harness writes each function's output to logs/<logical id>.log). */
function apiLog(): Record<string, unknown>[] {
  const dir = outputsDir();
  const deployment = JSON.parse(readFileSync(join(dir, 'deployment.json'), 'utf8')) as {
    functions: { logicalId: string; configuration: { FunctionName: string } }[];
    functionUrls: { functionName: string }[];
  };
  const name = deployment.functionUrls[0]?.functionName;
  const fn = deployment.functions.find((f) => f.configuration.FunctionName === name);
  if (!fn) throw new Error('the deployment has no API function');
  return readFileSync(join(dir, 'logs', `${fn.logicalId}.log`), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

beforeAll(async () => {
  target = await startDeployedTarget();
  const { AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey, AWS_REGION: region } = process.env;
  if (!accessKeyId || !secretAccessKey || !region) throw new Error('the deployed target sets the caller credentials');
  matrix = matrixOn({
    url: apiUrl(),
    region,
    admin: { accessKeyId, secretAccessKey },
    sendToDlq: (type, body) => target.sendToDlq(type, body),
  });
});

afterAll(async () => {
  await target?.stop();
});

describe('grants on the deployed stack (the parameter CloudFormation wrote, the identity the Function URL passes)', () => {
  it.each(WHO)('%s: allowed calls succeed, every other call answers 403 and writes nothing', async (who) => {
    expect(await matrix.check(who)).toEqual([]);
  });

  it('names the type a scoped grant does not cover', () => matrix.namesTheType());

  it('shows a reader scoped by type only its types in the overview and the schedule list', () => matrix.scopedReader());

  it('audits a cancel, a retry, a DLQ redrive and a schedule pause: on the job or schedule, and in the API log', async () => {
    const trail = await matrix.auditTrail();
    // the function's output reaches its log file as it is written; give the last line a moment
    await new Promise((resolve) => setTimeout(resolve, 500));
    expectAuditLines(apiLog(), trail);
  });
});

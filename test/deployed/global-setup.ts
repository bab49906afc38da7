/**
 * vitest `globalSetup` of the `deployed` project (`npm run test:deployed`): the e2e suite against
 * the repository's app as `cdk deploy` would ship it, deployed onto moto's CloudFormation, its
 * `cdk.out` bundles run as the functions by the harness's Lambda host.
 *
 * 1. `cdk synth` with bundling (local esbuild) into .orrery/deployed/cdk.out;
 * 2. moto server, the serial proxy for DynamoDB, the recording proxy; CDK bootstrap leftovers
 *    and assets published; each stack's template patched for moto on a copy (moto-patches.ts)
 *    and created with CreateStack from S3;
 * 3. outputs, functions' deployed configuration, event source mappings and rules read back;
 * 4. the Lambda host started (lambda-host.ts);
 * 5. the e2e suite (test/e2e) then runs as against any deployed stack: `ORRERY_E2E_OUTPUTS`
 *    names the outputs file, requests are signed with SigV4 (the caller's credentials here).
 *
 * On teardown it writes .orrery/deployed/aws-calls.json (every AWS call each function made) and
 * host-stats.json (invocations, errors), then proves IAM from the calls (iam-proof.ts): every
 * call evaluated against its function's role and queue policies, iam-report.md written, a
 * summary printed; a denied call, or an unused policy line without a justification, fails the run.
 *
 * Environment: `ORRERY_DEPLOYED_CDK_OUT=<dir>` reuses a synthesized assembly (skips step 1);
 * `ORRERY_DEPLOYED_SCHEDULE_MS` sets the scheduled rules' period (default: each rule's own rate,
 * one minute for the supervisor; the e2e suite does not wait for it);
 * `ORRERY_DEPLOYED_TIMEOUT_FACTOR` (see moto-patches.ts);
 * `ORRERY_DEPLOYED_OUT` moves the output directory.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { TestProject } from 'vitest/node';
import { localClients } from '../local-aws/clients';
import { findMotoServer, MOTO_INSTALL_HINT, startMotoServer, startSerialProxy } from '../local-aws/moto';
import { LOCAL_ACCOUNT_ID } from '../local-aws/sqs';
import { CALLER_GRANTS, CALLERS } from '../support/grants-callers';
import { REPO_ROOT, readAssembly, synthesize } from './assembly';
import type { AwsEndpoint } from './aws-api';
import { summariseCalls } from './call-summary';
import { type DeployedApp, deployAssembly } from './deploy';
import { iamFailures, proveIam, renderIamReport, summariseIamProof } from './iam-proof';
import { createLambdaHost } from './lambda-host';
import { hostTimeoutFactor } from './moto-patches';
import { type AwsCallRecord, type Principal, startRecordingProxy } from './recording-proxy';

/** moto server's account. */
const ACCOUNT = '123456789012';
const REGION = 'us-east-1';
/**
 * The Function URLs listen on 127.0.0.2, not 127.0.0.1: the typed client and the CLI send
 * unsigned requests to 127.0.0.1/localhost (the `npm run dev` server), and an `AWS_IAM` Function
 * URL must get signed ones, as from any deployed stack.
 */
const FUNCTION_URL_HOST = '127.0.0.2';
/** The identity the e2e suite signs its API requests with (a Function URL caller). */
const CALLER_ACCESS_KEY = 'AKIAORRERYE2ECALLER0';
/**
 * The identity the Function URL reports for that caller (test/local-aws/function-url.ts: any
 * access key without an identity of its own signs as the local user), granted admin at synthesis.
 */
const CALLER_ARN = `arn:aws:iam::${LOCAL_ACCOUNT_ID}:user/local`;

const log = (message: string) => console.log(`[deployed] ${message}`);

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (!findMotoServer()) throw new Error(MOTO_INSTALL_HINT);
  const started = performance.now();
  const lap = () => `${((performance.now() - started) / 1000).toFixed(1)} s`;
  const outDir = resolve(process.env.ORRERY_DEPLOYED_OUT ?? join(REPO_ROOT, '.orrery', 'deployed'));
  const reuse = process.env.ORRERY_DEPLOYED_CDK_OUT;
  rmSync(join(outDir, 'logs'), { recursive: true, force: true });
  rmSync(join(outDir, 'templates'), { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const nodeMajor = Number(process.versions.node.split('.')[0]);
  if (nodeMajor !== 24) log(`warning: the functions run on Node ${process.version}, not nodejs24.x's Node 24`);

  let cdkOut = reuse ? resolve(reuse) : join(outDir, 'cdk.out');
  if (!reuse) {
    rmSync(cdkOut, { recursive: true, force: true });
    // The e2e suite's caller is granted everything; the grants matrix's callers what each holds
    // (test/support/grants-matrix.ts, run by grants-matrix.test.ts).
    await synthesize(cdkOut, { admins: [CALLER_ARN], callers: CALLER_GRANTS });
    log(`synthesized with bundling into ${cdkOut} (${lap()})`);
  }
  cdkOut = resolve(cdkOut);
  const assembly = readAssembly(cdkOut);

  const moto = await startMotoServer();
  const cleanups: (() => Promise<void>)[] = [() => moto.stop()];
  const cleanup = async () => {
    for (const step of cleanups.reverse()) await step().catch((error) => log(`teardown: ${String(error)}`));
  };
  try {
    const serial = await startSerialProxy(moto.endpoint);
    cleanups.push(() => serial.stop());
    const proxy = await startRecordingProxy({
      upstream: moto.endpoint,
      dynamodbUpstream: serial.endpoint,
      account: ACCOUNT,
    });
    cleanups.push(() => proxy.stop());
    const harnessCredentials = { accessKeyId: 'AKIAORRERYHARNESS000', secretAccessKey: 'harness' };
    const api: AwsEndpoint = { endpoint: moto.endpoint, region: REGION, credentials: harnessCredentials };
    const clients = localClients({
      endpoints: { dynamodb: moto.endpoint, sqs: moto.endpoint, scheduler: moto.endpoint },
      region: REGION,
    });
    cleanups.push(async () => clients.destroy());

    const callerSecret = randomBytes(20).toString('hex');
    const timeoutFactor = hostTimeoutFactor();
    proxy.register(CALLER_ACCESS_KEY, { name: 'e2e-caller', via: 'caller' });
    const host = createLambdaHost({
      api,
      proxy,
      account: ACCOUNT,
      logDir: join(outDir, 'logs'),
      functionUrlHost: FUNCTION_URL_HOST,
      callerSecrets: { [CALLER_ACCESS_KEY]: callerSecret },
      callers: Object.values(CALLERS),
      ...(process.env.ORRERY_DEPLOYED_SCHEDULE_MS
        ? { scheduleIntervalMs: Number(process.env.ORRERY_DEPLOYED_SCHEDULE_MS) }
        : {}),
      timeoutFactor,
    });
    cleanups.push(() => host.stop());

    const app = await deployAssembly({
      assembly,
      api,
      clients,
      account: ACCOUNT,
      workDir: outDir,
      serveFunctionUrls: (urls) => host.serveFunctionUrls(urls),
    });
    log(
      `deployed ${Object.keys(app.outputs).join(', ')} on moto ${moto.endpoint}: ${app.functions.length} functions, ` +
        `${app.mappings.length} event source mappings, ${app.rules.length} rules (${lap()})`,
    );
    await host.start(app);

    // The outputs file `cdk deploy --outputs-file` would write; the stack with the API first.
    const stacks = Object.entries(app.outputs).sort(([, a], [, b]) => Number('ApiUrl' in b) - Number('ApiUrl' in a));
    const outputsFile = join(outDir, 'outputs.json');
    writeFileSync(outputsFile, `${JSON.stringify(Object.fromEntries(stacks), null, 2)}\n`);
    writeFileSync(
      join(outDir, 'deployment.json'),
      `${JSON.stringify(
        {
          patches: app.patches,
          wiring: host.wiring(),
          functions: app.functions.map((f) => ({
            logicalId: f.logicalId,
            bundleDir: f.bundleDir,
            configuration: f.configuration,
          })),
          roles: app.roles,
          queuePolicies: app.queuePolicies,
          functionUrls: app.functionUrls,
          mappings: app.mappings,
          rules: app.rules,
        },
        null,
        2,
      )}\n`,
    );

    // What the test workers (forked after this) inherit: a deployed target, signing as the caller.
    for (const name of Object.keys(process.env)) {
      if (name.startsWith('AWS_ENDPOINT_URL') || name === 'AWS_PROFILE' || name === 'AWS_SESSION_TOKEN') {
        delete process.env[name];
      }
    }
    Object.assign(process.env, {
      ORRERY_E2E_OUTPUTS: outputsFile,
      ORRERY_DEPLOYED_AWS_ROUTE: proxy.endpoint,
      AWS_REGION: REGION,
      AWS_DEFAULT_REGION: REGION,
      AWS_ACCESS_KEY_ID: CALLER_ACCESS_KEY,
      AWS_SECRET_ACCESS_KEY: callerSecret,
    });
    delete process.env.ORRERY_AWS;
    project.provide('dynamodbEndpoint', '');
    project.provide('dynamodbPid', 0);
    log(
      `ready: API ${Object.values(app.outputs).find((o) => o.ApiUrl)?.ApiUrl ?? '(none)'}; function timeouts ×${timeoutFactor} ` +
        `(moto-patches.ts); patches: ${app.patches.map((p) => `${p.id} ${p.places}`).join(', ')} (${lap()})`,
    );

    return async () => {
      await host.stop().catch((error) => log(`teardown: ${String(error)}`));
      const summary = summariseCalls(proxy.calls, proxy.principals(), { region: REGION, account: ACCOUNT });
      writeFileSync(join(outDir, 'aws-calls.json'), `${JSON.stringify(summary, null, 1)}\n`);
      writeFileSync(join(outDir, 'host-stats.json'), `${JSON.stringify(host.stats(), null, 2)}\n`);
      const failing = host.stats().filter((s) => s.errors > 0);
      log(
        `${proxy.calls.length} AWS calls recorded in ${join(outDir, 'aws-calls.json')}; ` +
          `${summary.failedCalls.length} distinct failing calls; ` +
          `invocations: ${host.stats().reduce((n, s) => n + s.invocations, 0)}, functions with errors: ` +
          `${failing.map((s) => `${s.logicalId} (${s.errors}: ${s.lastErrors.at(-1)})`).join('; ') || 'none'}`,
      );
      // IAM proven from the calls (iam-proof.ts): fails the run after the cleanup.
      let iamFailed: string[] = [];
      try {
        iamFailed = await proveIamOfRun(project, {
          calls: proxy.calls,
          principals: proxy.principals(),
          app,
          outDir,
          writtenAt: summary.run.writtenAt,
        });
      } catch (error) {
        iamFailed = [
          `the IAM proof could not run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
        ];
      }
      await cleanup();
      if (iamFailed.length > 0) {
        throw new Error(`IAM not proven (${join(outDir, 'iam-report.md')}):\n  ${iamFailed.join('\n  ')}`);
      }
    };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

/**
 * Evaluates every call of the run's functions against their roles (iam-proof.ts), writes
 * iam-report.md, prints a summary, and says why the run fails (empty: proven). Unused lines
 * without a justification fail only a run of the whole suite: a run of some files leaves paths
 * untaken that the justifications do not (and should not) cover; denied calls fail any run.
 */
async function proveIamOfRun(
  project: TestProject,
  run: {
    calls: readonly AwsCallRecord[];
    principals: ReadonlyMap<string, Principal>;
    app: DeployedApp;
    outDir: string;
    writtenAt: string;
  },
): Promise<string[]> {
  const version = (
    JSON.parse(
      readFileSync(join(REPO_ROOT, 'node_modules', '@cloud-copilot', 'iam-simulate', 'package.json'), 'utf8'),
    ) as { version: string }
  ).version;
  const proof = await proveIam({
    calls: run.calls,
    principals: run.principals,
    app: run.app,
    account: ACCOUNT,
    simulator: `@cloud-copilot/iam-simulate ${version}`,
  });
  const all = (await project.globTestFiles()).testFiles.map((file) => resolve(file));
  const ran = new Set(
    project.vitest.state
      .getFiles()
      .filter((file) => file.projectName === project.name)
      .map((file) => resolve(file.filepath)),
  );
  const whole = all.every((file) => ran.has(file)) && !project.vitest.config.testNamePattern;
  writeFileSync(
    join(run.outDir, 'iam-report.md'),
    renderIamReport(proof, { writtenAt: run.writtenAt, calls: run.calls.length }),
  );
  log(
    `${summariseIamProof(proof)}\n  report: ${join(run.outDir, 'iam-report.md')} ` +
      `(${whole ? 'the whole suite ran: unused lines enforced' : 'part of the suite ran: only denied calls enforced'})`,
  );
  if (!whole) {
    const skipped = iamFailures(proof).length - iamFailures(proof, { unusedLines: false }).length;
    if (skipped > 0) log(`IAM: a run of part of the suite: ${skipped} unused-line findings reported, not enforced`);
  }
  return iamFailures(proof, { unusedLines: whole });
}

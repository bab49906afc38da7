/**
 * One execution environment of a deployed function: a Node process (the version the harness
 * runs on, Node 24 under `npm run`, as `nodejs24.x`) that imports the function's `cdk.out`
 * bundle the way Lambda's Node.js runtime does (`<file>.<export>` from `Handler`, relative to
 * the bundle directory) and runs one invocation at a time, on messages from the harness's
 * Lambda host (test/deployed/lambda-host.ts) over the IPC channel.
 *
 * argv: <awsEndpoint> <bundleDir> <handler>. The process environment is the function's, as the
 * host built it; nothing of the harness is added to it (the AWS route comes from argv).
 *
 * Messages in:  { type: 'invoke', id, event, context: { ...Context fields, deadlineMs } }
 * Messages out: { type: 'ready' } | { type: 'init-error', error }
 *               | { type: 'result', id, ok: true, result } | { type: 'result', id, ok: false, error }
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { routeAwsTo } from './aws-network.mjs';

const [awsEndpoint, bundleDir, handlerSetting] = process.argv.slice(2);
if (!awsEndpoint || !bundleDir || !handlerSetting || !process.send) {
  console.error('usage (forked, with IPC): lambda-runtime.mjs <awsEndpoint> <bundleDir> <handler>');
  process.exit(2);
}
routeAwsTo(awsEndpoint);

/** Lambda's error shape: `{ errorType, errorMessage, stack }`. */
function toError(error) {
  if (error instanceof Error) {
    return { errorType: error.name, errorMessage: error.message, stack: (error.stack ?? '').split('\n') };
  }
  return { errorType: 'Error', errorMessage: String(error), stack: [] };
}

/** Resolves `index.handler` to the module file and export, as the Node.js runtime does. */
async function loadHandler() {
  const dot = handlerSetting.lastIndexOf('.');
  const modulePath = handlerSetting.slice(0, dot);
  const exportName = handlerSetting.slice(dot + 1);
  const file = ['.mjs', '.js', '.cjs'].map((ext) => join(bundleDir, `${modulePath}${ext}`)).find(existsSync);
  if (!file) throw new Error(`Runtime.ImportModuleError: cannot find module ${modulePath} in ${bundleDir}`);
  const module = await import(pathToFileURL(file).href);
  const handler = module[exportName];
  if (typeof handler !== 'function') {
    throw new Error(`Runtime.HandlerNotFound: ${modulePath}.${exportName} is not a function`);
  }
  return handler;
}

let handler;
try {
  handler = await loadHandler();
  process.send({ type: 'ready' });
} catch (error) {
  process.send({ type: 'init-error', error: toError(error) }, () => process.exit(1));
}

const unsupported = () => {
  throw new Error('context.done/fail/succeed are not supported by the Node.js 24 runtime; return or throw instead');
};

process.on('message', async (message) => {
  if (message?.type !== 'invoke' || !handler) return;
  const { id, event, context: fields } = message;
  const { deadlineMs, ...rest } = fields;
  const context = {
    ...rest,
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, deadlineMs - Date.now()),
    done: unsupported,
    fail: unsupported,
    succeed: unsupported,
  };
  let reply;
  try {
    const result = await handler(event, context);
    reply = { type: 'result', id, ok: true, result: result === undefined ? null : result };
  } catch (error) {
    reply = { type: 'result', id, ok: false, error: toError(error) };
  }
  process.send(reply);
});

process.on('disconnect', () => process.exit(0));

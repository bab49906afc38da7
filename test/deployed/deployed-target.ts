/**
 * The target of a test in test/deployed: the deployed stack (`npm run test:deployed`), refused
 * elsewhere (these tests assert what only a deployed stack can get wrong).
 */
import { type E2ETarget, startTarget } from '../e2e/target';

/** Starts the e2e target and checks that it is the deployed stack. */
export async function startDeployedTarget(): Promise<E2ETarget> {
  const target = await startTarget();
  if (target.kind !== 'deployed') {
    await target.stop();
    throw new Error('test/deployed runs against a deployed stack (npm run test:deployed)');
  }
  return target;
}

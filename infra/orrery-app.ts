import { App, type AppProps } from 'aws-cdk-lib';

/** The context key that turns bundling off: `cdk synth -c orrery:bundling=false`. */
export const BUNDLING_CONTEXT_KEY = 'orrery:bundling';

/** The CDK's own key: the stacks whose assets are bundled (`[]`: none). */
const BUNDLING_STACKS_KEY = 'aws:cdk:bundling-stacks';

/**
 * A CDK `App` that honours `-c orrery:bundling=false`: no function is bundled, so `cdk synth`
 * takes seconds instead of one esbuild run per function. For checks, diffs and tests only,
 * never for `cdk deploy`: a function whose bundling was skipped has its project directory,
 * unbuilt, as its code asset (no `index.mjs`, and `node_modules` inside).
 *
 * The switch is needed because the CDK CLI refuses context keys that start with `aws:` on its
 * command line, so `-c aws:cdk:bundling-stacks=[]` cannot be given directly; this maps the one to
 * the other before any stack is added (the CDK allows setting context only then).
 *
 * Unset or `true`, every function is bundled, as with a plain `App`.
 *
 * @param props passed to `new App()`; `props.context` may also set `orrery:bundling`.
 * @throws when `orrery:bundling` is anything but `true` or `false`, so a typo does not go unseen.
 *
 * @example
 * // infra/app.ts of your CDK app
 * import { orreryApp } from 'orrery-jobs/cdk';
 *
 * const app = orreryApp();
 * new InvoiceStack(app, 'Invoices');
 * app.synth();
 * // npx cdk synth -c orrery:bundling=false   (templates only)
 */
export function orreryApp(props?: AppProps): App {
  const app = new App(props);
  if (!bundlingEnabled(app.node.tryGetContext(BUNDLING_CONTEXT_KEY))) app.node.setContext(BUNDLING_STACKS_KEY, []);
  return app;
}

/** `orrery:bundling` as given on the command line (a string) or in `cdk.json` / props (a boolean). */
function bundlingEnabled(value: unknown): boolean {
  if (value === undefined) return true;
  const text = String(value);
  if (text === 'true') return true;
  if (text === 'false') return false;
  throw new Error(`context ${BUNDLING_CONTEXT_KEY} must be true or false (got ${JSON.stringify(value)})`);
}

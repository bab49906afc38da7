/**
 * `npm run bench:synth`: what an app of 10, 50 and 200 job types synthesizes to (without
 * bundling), against AWS's deploy-time quotas: synth time, template bytes, resources, outputs,
 * the largest function environment and role policy, dashboard widgets. Reports; never fails.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { appWithTypes, type Figure, largest, measure, QUOTAS, readAssembly } from '../test/infra/quotas';

const COUNTS = [10, 50, 200];

function row(count: number): string {
  const outdir = mkdtempSync(join(tmpdir(), `orrery-synth-${count}-`));
  try {
    const started = performance.now();
    const stacks = readAssembly(appWithTypes(count, outdir, { resourceLimit: false }));
    const ms = performance.now() - started;
    const figures = measure(stacks);
    const top = (kind: string): Figure | undefined => largest(figures, kind);
    const cell = (figure: Figure | undefined) => (figure ? `${figure.value} / ${figure.limit}` : '-');
    return `| ${count} | ${stacks.length} | ${Math.round(ms)} ms | ${cell(top('template bytes'))} | ${cell(top('resources'))} | ${cell(top('outputs'))} | ${cell(top('environment of'))} | ${cell(top('inline policies of role'))} | ${cell(top('widgets of'))} |`;
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

console.log(
  '| job types | stacks | synth | template bytes (largest) | resources (largest stack) | outputs | environment bytes (largest function) | role inline policy chars (largest) | dashboard widgets |',
);
console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const count of COUNTS) console.log(row(count));
console.log(
  `\nLimits: environment ${QUOTAS.lambdaEnvironmentBytes} B, resources ${QUOTAS.stackResources}, outputs ${QUOTAS.stackOutputs}, template ${QUOTAS.templateBytes} B, role policies ${QUOTAS.roleInlinePolicyChars} chars, widgets ${QUOTAS.dashboardWidgets}.`,
);

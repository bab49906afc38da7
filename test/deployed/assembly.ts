/**
 * The repository's app as `cdk deploy` would ship it: `cdk synth` with bundling (local esbuild,
 * never Docker) into a directory of our own, and the cloud assembly read back: the stacks in
 * deployment order, their templates, and the assets (function bundles, nested templates).
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const REPO_ROOT = resolve(import.meta.dirname, '..', '..');

/** A CloudFormation template, as far as the harness reads it. */
export interface Template {
  Parameters?: Record<string, { Type: string; Default?: unknown; [key: string]: unknown }>;
  Conditions?: Record<string, unknown>;
  Mappings?: Record<string, unknown>;
  Rules?: Record<string, unknown>;
  Resources: Record<string, TemplateResource>;
  Outputs?: Record<string, { Value: unknown; Description?: string; Export?: { Name: unknown }; Condition?: string }>;
  [section: string]: unknown;
}

export interface TemplateResource {
  Type: string;
  Properties?: Record<string, unknown>;
  DependsOn?: string | string[];
  Condition?: string;
  Metadata?: Record<string, unknown>;
  [key: string]: unknown;
}

/** One file asset of the assembly (a function's bundle directory, a nested template). */
export interface FileAsset {
  hash: string;
  /** Absolute path of the directory or file in the assembly. */
  path: string;
  packaging: 'zip' | 'file';
  /** Where `cdk deploy` publishes it (bucket and key, with `${AWS::AccountId}`-style placeholders). */
  destinations: { bucketName: string; objectKey: string }[];
}

/** One stack of the assembly. */
export interface AssemblyStack {
  /** The artifact id (also the construct path's stack id). */
  id: string;
  /** The CloudFormation stack name `cdk deploy` uses. */
  stackName: string;
  templateFile: string;
  template: Template;
  /** Artifact ids of the stacks it depends on. */
  dependencies: string[];
}

export interface CloudAssembly {
  dir: string;
  /** In an order in which each stack comes after the stacks it depends on. */
  stacks: AssemblyStack[];
  /** By asset path relative to `dir` (as `aws:asset:path` metadata names it). */
  assets: Map<string, FileAsset>;
}

interface ManifestArtifact {
  type: string;
  properties?: { templateFile?: string; stackName?: string; file?: string };
  dependencies?: string[];
}

/**
 * Runs `cdk synth` (the repository's cdk.json app, as `npx cdk synth` does) into `outdir`.
 * `CDK_DOCKER` points at a binary that does not exist, so a fallback to Docker bundling fails.
 *
 * @example
 * await synthesize('/tmp/orrery-deployed/cdk.out');
 */
export async function synthesize(
  outdir: string,
  options: {
    timeoutMs?: number;
    /** ARNs granted everything on the API (`-c orrery:admins`, infra/app.ts). @default none */
    admins?: readonly string[];
    /** ARNs mapped to scoped grants (`-c orrery:callers`, infra/app.ts). @default none */
    callers?: Readonly<Record<string, readonly unknown[]>>;
  } = {},
): Promise<void> {
  const cli = join(REPO_ROOT, 'node_modules', 'aws-cdk', 'bin', 'cdk');
  const admins = options.admins?.length ? ['-c', `orrery:admins=${options.admins.join(',')}`] : [];
  const callers =
    options.callers && Object.keys(options.callers).length > 0
      ? ['-c', `orrery:callers=${JSON.stringify(options.callers)}`]
      : [];
  const args = [cli, 'synth', '--quiet', '--output', outdir, ...admins, ...callers];
  const child = spawn(process.execPath, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, CDK_DOCKER: '/nonexistent/docker-must-not-be-used', CI: 'true' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-20_000);
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const timeoutMs = options.timeoutMs ?? 240_000;
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((done) => child.once('exit', (c) => done(c)));
  clearTimeout(timer);
  if (code !== 0) throw new Error(`cdk synth failed (exit ${code}):\n${output.trim()}`);
}

/** Reads a synthesized cloud assembly: stacks in dependency order, and every file asset. */
export function readAssembly(dir: string): CloudAssembly {
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as {
    artifacts?: Record<string, ManifestArtifact>;
  };
  const artifacts = manifest.artifacts ?? {};
  const stacks: AssemblyStack[] = [];
  const assets = new Map<string, FileAsset>();
  for (const [id, artifact] of Object.entries(artifacts)) {
    if (artifact.type === 'aws:cloudformation:stack') {
      const templateFile = artifact.properties?.templateFile;
      if (!templateFile) throw new Error(`stack ${id} has no templateFile`);
      stacks.push({
        id,
        stackName: artifact.properties?.stackName ?? id,
        templateFile: join(dir, templateFile),
        template: JSON.parse(readFileSync(join(dir, templateFile), 'utf8')) as Template,
        dependencies: (artifact.dependencies ?? []).filter(
          (dep) => artifacts[dep]?.type === 'aws:cloudformation:stack',
        ),
      });
    }
    if (artifact.type === 'cdk:asset-manifest' && artifact.properties?.file) {
      const assetManifest = JSON.parse(readFileSync(join(dir, artifact.properties.file), 'utf8')) as {
        files?: Record<
          string,
          {
            source: { path?: string; packaging?: 'zip' | 'file' };
            destinations: Record<string, { bucketName: string; objectKey: string }>;
          }
        >;
      };
      for (const [hash, file] of Object.entries(assetManifest.files ?? {})) {
        if (!file.source.path) continue; // built by a command: not ours
        assets.set(file.source.path, {
          hash,
          path: join(dir, file.source.path),
          packaging: file.source.packaging ?? 'file',
          destinations: Object.values(file.destinations).map((d) => ({
            bucketName: d.bucketName,
            objectKey: d.objectKey,
          })),
        });
      }
    }
  }
  return { dir, stacks: inDependencyOrder(stacks), assets };
}

function inDependencyOrder(stacks: AssemblyStack[]): AssemblyStack[] {
  const byId = new Map(stacks.map((s) => [s.id, s]));
  const ordered: AssemblyStack[] = [];
  const visiting = new Set<string>();
  const done = new Set<string>();
  const visit = (stack: AssemblyStack) => {
    if (done.has(stack.id)) return;
    if (visiting.has(stack.id)) throw new Error(`stack dependency cycle through ${stack.id}`);
    visiting.add(stack.id);
    for (const dep of stack.dependencies) {
      const other = byId.get(dep);
      if (other) visit(other);
    }
    visiting.delete(stack.id);
    done.add(stack.id);
    ordered.push(stack);
  };
  for (const stack of stacks) visit(stack);
  return ordered;
}

/** The bundle directory of a function resource (its `aws:asset:path` metadata), or undefined. */
export function bundleDirOf(assembly: CloudAssembly, resource: TemplateResource): string | undefined {
  const assetPath = resource.Metadata?.['aws:asset:path'];
  if (typeof assetPath !== 'string') return undefined;
  const asset = assembly.assets.get(assetPath);
  const dir = asset?.path ?? join(assembly.dir, assetPath);
  return existsSync(dir) ? dir : undefined;
}

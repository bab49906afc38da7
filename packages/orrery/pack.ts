/**
 * `npm run pack:package [-- DIR]`: builds the package and packs it with `npm pack` into DIR
 * (default: the working directory) as `orrery-jobs.tgz`, a name that does not change with the
 * version, so a `file:orrery-jobs.tgz` dependency keeps pointing at it.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, renameSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildPackage, PACKAGE_DIR } from './build';

/** One file of the tarball, as `npm pack --json` lists it. */
export interface PackedFile {
  path: string;
  size: number;
}

export interface Packed {
  /** Absolute path of the tarball. */
  tarball: string;
  /** Files in the tarball, relative to its `package/` folder. */
  files: PackedFile[];
}

/** Builds `dist/`, then packs the package into `destination` as `orrery-jobs.tgz`. */
export function packPackage(destination: string): Packed {
  buildPackage();
  mkdirSync(destination, { recursive: true });
  const npm = spawnSync('npm', ['pack', '--json', '--pack-destination', destination], {
    cwd: PACKAGE_DIR,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (npm.status !== 0) throw new Error(`npm pack failed (exit ${npm.status ?? npm.signal})`);
  const [info] = JSON.parse(npm.stdout) as { filename: string; files: PackedFile[] }[];
  if (!info) throw new Error(`npm pack printed no result: ${npm.stdout}`);
  const tarball = join(destination, 'orrery-jobs.tgz');
  renameSync(join(destination, info.filename), tarball);
  return { tarball, files: info.files };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { tarball, files } = packPackage(resolve(process.argv[2] ?? '.'));
  console.log(`${relative(process.cwd(), tarball) || tarball}: ${files.length} files`);
}

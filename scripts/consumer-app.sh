#!/usr/bin/env bash
# `npm run test:consumer`: packs orrery-jobs and runs examples/consumer-app against the tarball,
# the way a team's own app uses it. The app is copied to a temporary directory outside the
# repository, so nothing resolves from the repository's node_modules: a file missing from the
# tarball or a dependency it does not declare fails here. Then: install, type-check, cdk synth
# (offline, cdk-nag findings fail it), and the app's own tests, the same assertions in memory and
# on local AWS (Java 17+); then `orrery dev` in the app (scripts/consumer-dev.mjs): started, one job
# enqueued through the dashboard's API, a reload with a job waiting, stopped with Ctrl-C.
# All of it on the repository's Node 24, then the same copy again on the oldest Node the package
# supports (its `engines`, 22.22.2), installed from the npm package `node` at that version:
# `npm install --engine-strict` (every package of the app's tree must accept that Node), cdk synth,
# the `orrery` bin and the test.
# The directory is removed on success and kept (its path printed) on failure.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# The repository's Node 24 (npm package `node`, a devDependency) for every step, and nothing else
# of its node_modules: the app runs its own tools.
export PATH="$root/node_modules/node/bin:$PATH"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/orrery-consumer-XXXXXX")"
work="$tmp/app"
mkdir "$work"
trap 'status=$?; if [ $status -eq 0 ]; then rm -rf "$tmp"; else echo "consumer app kept for inspection: $work" >&2; fi' EXIT

step() { printf '\n== %s (%ss)\n' "$1" "$SECONDS"; }

step "pack orrery-jobs"
(cd "$root" && node_modules/.bin/tsx packages/orrery/pack.ts "$work")
tar -C "$root/examples/consumer-app" --exclude=node_modules --exclude=cdk.out --exclude=orrery-jobs.tgz \
  --exclude=package-lock.json -cf - . | tar -C "$work" -xf -

cd "$work"
step "npm install (node $(node --version))"
npm install --no-audit --no-fund --prefer-offline
step "typecheck"
npm run --silent typecheck
step "cdk synth"
npm run --silent synth
for fn in cdk.out/asset.*/index.mjs; do
  printf '  %s  %s KiB\n' "$fn" "$(($(wc -c <"$fn") / 1024))"
done
step "test"
npm test

# The oldest supported Node: `engines.node` of orrery-jobs, which must read `>=x.y.z`.
floor="$(node -e '
  const range = require(process.argv[1]).engines.node;
  const match = /^>=(\d+\.\d+\.\d+)$/.exec(range);
  if (!match) throw new Error(`orrery-jobs engines.node is not ">=x.y.z": ${range}`);
  console.log(match[1]);
' "$root/packages/orrery/package.json")"
step "node $floor, the oldest orrery-jobs supports (npm package node@$floor)"
npm install --prefix "$tmp/node-$floor" "node@$floor" --no-audit --no-fund --prefer-offline
floor_bin="$tmp/node-$floor/node_modules/node/bin"
if [ "$("$floor_bin/node" --version)" != "v$floor" ]; then
  echo "$floor_bin/node is $("$floor_bin/node" --version), not v$floor" >&2
  exit 1
fi
(
  export PATH="$floor_bin:$PATH"
  step "npm install --engine-strict (node $(node --version))"
  npm install --no-audit --no-fund --prefer-offline --engine-strict
  step "cdk synth (node $(node --version))"
  npm run --silent synth
  step "orrery bin (node $(node --version))"
  npx --no orrery --version
  step "test (node $(node --version))"
  npm test
)
# Last: it edits a handler file of the copy, to see the server reload.
step "orrery dev (node $(node --version))"
node "$root/scripts/consumer-dev.mjs"
step "done"

#!/usr/bin/env bash
# `npm run test:consumer`: packs orrery-jobs and runs examples/consumer-app against the tarball,
# the way a team's own app uses it. The app is copied to a temporary directory outside the
# repository, so nothing resolves from the repository's node_modules: a file missing from the
# tarball or a dependency it does not declare fails here. Then: install, type-check, cdk synth
# (offline, cdk-nag findings fail it), and the app's own test on local AWS (Java 17+).
# The directory is removed on success and kept (its path printed) on failure.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# The repository's Node 24 (npm package `node`, a devDependency) for every step, and nothing else
# of its node_modules: the app runs its own tools.
export PATH="$root/node_modules/node/bin:$PATH"

work="$(mktemp -d "${TMPDIR:-/tmp}/orrery-consumer-XXXXXX")"
trap 'status=$?; if [ $status -eq 0 ]; then rm -rf "$work"; else echo "consumer app kept for inspection: $work" >&2; fi' EXIT

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
step "done"

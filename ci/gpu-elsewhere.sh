#!/usr/bin/env bash
# Runs a bundle from ci/gpu-bundle.sh from a copy of this checkout at a path unlike the build's
# (a fresh directory, another depth), so that a test that found its files through a path fixed
# at build time fails here instead of passing by luck: tests in an archive must find their files
# at run time (CARGO_MANIFEST_DIR, NEXTEST_BIN_EXE_*). With --hide-build (root, util-linux's
# unshare), the build's own tree is also hidden for the run by an empty tmpfs mounted over it in
# a private mount namespace, as on a machine where that path does not exist.
# Usage: ci/gpu-elsewhere.sh [--hide-build] BUNDLE_DIR OUT_DIR [nextest args...]
# Writes OUT_DIR/paths.txt and everything ci/gpu-run.sh writes; exits as ci/gpu-run.sh does.
set -euo pipefail
hide=no
if [ "${1:-}" = --hide-build ]; then
    hide=yes
    shift
fi
checkout=$(cd "$(dirname "$0")/.." && pwd)
bundle=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
shift 2
built=$(cat "$bundle/BUILD_ROOT" 2>/dev/null || echo unknown)
base=$(mktemp -d "${TMPDIR:-/tmp}/peerpool-elsewhere.XXXXXX")
trap 'rm -rf "$base"' EXIT
dest="$base/another/checkout"
mkdir -p "$dest"
# The checkout's files: everything but build outputs, bundles and this run's output.
(cd "$checkout" && tar cf - --exclude=./target --exclude=./.gpu --exclude=./gpu-out \
    --exclude="./${bundle#"$checkout"/}" --exclude="./${out#"$checkout"/}" .) | tar xf - -C "$dest"
# The bundle goes along when the build's tree is hidden (it may lie inside it).
if [ "$hide" = yes ]; then
    cp -r "$bundle" "$base/bundle"
    bundle="$base/bundle"
fi
{
    echo "built at:    $built"
    echo "run from:    $dest"
    echo "build hidden: $hide"
} | tee "$out/paths.txt"
if [ "$dest" = "$built" ]; then
    echo "the copy landed on the build's path" >&2
    exit 2
fi
if [ "$hide" = yes ]; then
    # The output may lie in the hidden tree too: write it beside the copy, then bring it back.
    set +e
    unshare -m --propagation private bash -c '
        mount -t tmpfs -o size=1m,mode=0755 peerpool-hidden "$1" || exit 2
        [ -z "$(ls -A "$1")" ] || { echo "the build tree is still visible" >&2; exit 2; }
        cd "$2" && shift 2 && exec ci/gpu-run.sh "$@"' -- "$built" "$dest" "$bundle" "$base/out" "$@"
    status=$?
    set -e
    cp -r "$base/out/." "$out/"
    exit "$status"
fi
cd "$dest"
set +e
ci/gpu-run.sh "$bundle" "$out" "$@"
status=$?
set -e
exit "$status"

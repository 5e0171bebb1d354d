#!/usr/bin/env bash
# The user guide (docs/guide): built by mdBook, then checked offline by ci/guide.py (links and
# anchors, chapters, the table of variables). Its Rust examples are doctests of peerpool-tests
# (tests/guide.rs), run by `cargo test --workspace`.
# mdBook is installed from crates.io once, pinned, into cargo's home (kept between runs on one
# machine, a few minutes to build on two cores), without its server and file watcher.
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.5.4
root="${CARGO_HOME:-$HOME/.cargo}/peerpool-tools/mdbook-$version"
mdbook="$root/bin/mdbook"
if [ "$("$mdbook" --version 2>/dev/null)" != "mdbook v$version" ]; then
    start=$SECONDS
    cargo install mdbook --version "$version" --locked --no-default-features --root "$root" --quiet
    echo "guide: mdbook $version installed in $((SECONDS - start)) s" >&2
fi
rm -rf target/guide
mkdir -p target
# A warning (a chapter that does not parse, say) fails the build as an error does.
if ! "$mdbook" build docs/guide > target/guide-build.log 2>&1 || grep -q 'WARN\|ERROR' target/guide-build.log; then
    cat target/guide-build.log >&2
    exit 1
fi
python3 ci/guide.py target/guide

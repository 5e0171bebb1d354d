#!/usr/bin/env bash
# The command installed the three ways that need no checkout, each built here and smoke-tested
# from a temporary prefix: from each, `peerpool sim --topology four_gpu_islands` runs a
# cuda.core script that knows nothing of peerpool, on the shim the binary carries.
#  1. `cargo install --path` of the packaged command crate, its dependencies from their packages;
#  2. cargo-dist's release archive, and its shell installer served over local HTTP
#     (dist-workspace.toml);
#  3. maturin's wheel (host/cli/pyproject.toml), pip-installed into a fresh venv.
# cargo-dist is installed from crates.io once, pinned, into cargo's home (kept between runs on
# one machine; about ten minutes to build on two cores). maturin and cuda.core come from pip.
set -euo pipefail
cd "$(dirname "$0")/.."
version=0.34.0
dist="${CARGO_HOME:-$HOME/.cargo}/peerpool-tools/cargo-dist-$version/bin/dist"
if [ "$("$dist" --version 2>/dev/null)" != "cargo-dist $version" ]; then
    start=$SECONDS
    cargo install cargo-dist --version "$version" --locked --quiet --root "$(dirname "$(dirname "$dist")")"
    echo "install-paths: cargo-dist $version installed in $((SECONDS - start)) s" >&2
fi
root=$PWD
work=$(mktemp -d "${TMPDIR:-/tmp}/peerpool-install.XXXXXX")
server=
trap '[ -z "$server" ] || kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
pip_install() { "$1/bin/pip" install -q --disable-pip-version-check "${@:2}"; }
# The client's interpreter: a fresh venv with cuda.core and nothing of peerpool (the wheel goes
# in it last).
python3 -m venv "$work/venv"
pip_install "$work/venv" cuda-core==1.2.2 cuda-bindings==13.5.0
client="$root/host/shim/tests/clients/pools.py"
# One binary, from nowhere near a build: no shim beside it, none named; the one it carries is
# written to a cache of its own.
smoke() {
    local peerpool=$1 what=$2 out
    out=$(cd "$work" && env -u PEERPOOL_SHIM -u LD_LIBRARY_PATH XDG_CACHE_HOME="$work/cache-$what" \
        "$peerpool" sim --topology four_gpu_islands -- "$work/venv/bin/python" "$client" 2>&1) || true
    if ! grep -qx "devices 4" <<<"$out" || ! grep -qx done <<<"$out" || grep -q "^fail" <<<"$out"; then
        echo "install-paths: $what: peerpool sim did not run the cuda.core client:" >&2
        echo "$out" >&2
        exit 1
    fi
    ls "$work/cache-$what"/peerpool/shim-*/libpeerpool_shim.so >/dev/null
    echo "install-paths: $what: $peerpool ran the cuda.core client on four simulated GPUs"
}

# 1. The packaged crates, unpacked; crates.io's names patched to them (none is published yet),
#    in a config the command's build and its shim's nested build both find from here.
CARGO_TARGET_DIR="$work/package" cargo package --no-verify --allow-dirty -q \
    -p peerpool-kernels -p peerpool -p peerpool-ptx -p peerpool-sim -p peerpool-shim -p peerpool-cli
mkdir -p "$work/src" "$work/.cargo"
echo "[patch.crates-io]" > "$work/.cargo/config.toml"
for crate in "$work"/package/package/*.crate; do
    tar -xzf "$crate" -C "$work/src"
    dir=$(basename "$crate" .crate)
    echo "${dir%-*} = { path = \"$work/src/$dir\" }" >> "$work/.cargo/config.toml"
done
cli=$(ls -d "$work"/src/peerpool-cli-*)
(cd "$work" && cargo install --offline --quiet --path "$cli" --root "$work/cargo" --target-dir "$work/package-target")
rm -rf "$work/package-target" "$work/package"
smoke "$work/cargo/bin/peerpool" cargo-install

# 2. cargo-dist's archive and installer (its builds go to target/dist, its artifacts to
#    target/distrib).
"$dist" build --artifacts=all > "$work/dist.log" 2>&1 || { cat "$work/dist.log" >&2; exit 1; }
archive=$(ls target/distrib/peerpool-cli-x86_64-unknown-linux-gnu.tar.xz)
mkdir -p "$work/archive"
tar -xJf "$archive" -C "$work/archive"
smoke "$work"/archive/*/peerpool release-archive
# The installer fetches the archive from a download URL it may be given: here, local HTTP.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory target/distrib "$port" > "$work/http.log" 2>&1 &
server=$!
for _ in $(seq 50); do python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/')" 2>/dev/null && break; sleep 0.1; done
PEERPOOL_CLI_DOWNLOAD_URL="http://127.0.0.1:$port" PEERPOOL_CLI_INSTALL_DIR="$work/installed" \
    PEERPOOL_CLI_NO_MODIFY_PATH=1 sh target/distrib/peerpool-cli-installer.sh --quiet
smoke "$(find "$work/installed" -name peerpool -type f | head -n 1)" shell-installer
# Its build is not needed again, and a CI machine's disk is not large.
rm -rf target/dist

# 3. The wheel, built by maturin from its own venv, installed into the client's.
python3 -m venv "$work/build-venv"
pip_install "$work/build-venv" "maturin>=1.8,<2"
(cd host/cli && "$work/build-venv/bin/maturin" build --quiet --release --out "$work/wheels")
pip_install "$work/venv" "$work"/wheels/peerpool-*.whl
smoke "$work/venv/bin/peerpool" wheel

#!/usr/bin/env bash
# Builds, on a machine without CUDA, what ci/gpu-clients.sh runs on a GPU machine: the release
# `peerpool` and its shim, the shim's C clients (host/shim/tests/clients/*.c, compiled against
# NVIDIA's cuda.h and linked with -lcuda, which resolves to NVIDIA's libcuda there), the foreign
# images they load, the PTX executor's corpus (nvcc's, NVRTC's and rustc's PTX), a cudarc program whose kernels NVRTC compiles (fixtures/examples/cudarc-nvrtc),
# and the CUDA-runtime programs (host/shim/tests/runtime/*.cu) built with static and with shared
# cudart. NVIDIA's compiler and headers come from PyPI (CUDA 13.0) into
# target/cuda-venv.
# Usage: ci/clients-bundle.sh [BUNDLE_DIR]   (default .gpu/clients; keep it git-ignored)
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=${1:-.gpu/clients}
mkdir -p "$bundle/image-files"
cuda=$(ci/cuda-wheels.sh)
cargo build --release -q -p peerpool-shim -p peerpool-cli -p cudarc-nvrtc
cp target/release/peerpool target/release/libpeerpool_shim.so target/release/cudarc-nvrtc "$bundle/"
link=$(mktemp -d)
trap 'rm -rf "$link"' EXIT
ln -s "$PWD/target/release/libpeerpool_shim.so" "$link/libcuda.so"
for c in host/shim/tests/clients/*.c; do
    cc -O1 -o "$bundle/$(basename "$c" .c)" "$c" -I"$cuda/include" -L"$link" -lcuda
done
# The corpus again as a program built with fast-math (flush-to-zero set at its start) is.
cc -O1 -ffast-math -o "$bundle/corpus_fast_math" host/shim/tests/clients/corpus.c -I"$cuda/include" -L"$link" -lcuda
PATH="$cuda/bin:$PATH" host/shim/tests/clients/images/build.sh "$bundle/image-files"
# The -gencode table's images, by CUDA 13.0's nvcc and by 13.5's (whose PTX is ISA 9.5).
PATH="$cuda/bin:$PATH" host/shim/tests/clients/images/gencode.sh "$bundle/gencode-files" 13.0
PATH="$(ci/cuda-wheels.sh 13.5)/bin:$PATH" host/shim/tests/clients/images/gencode.sh "$bundle/gencode-files" 13.5
mkdir -p "$bundle/corpus-files"
cp host/ptx/tests/corpus/{corpus.ptx,corpus.nvrtc.ptx,kernels.txt} "$bundle/corpus-files/"
mkdir -p "$bundle/rustc-files"
cp host/ptx/tests/rustc/{kernels.ptx,kernels.txt} "$bundle/rustc-files/"
# The random programs the one_h200 test runs (seed 1, and seed 2 of halves; 3,000 of each),
# made here once.
mkdir -p "$bundle/ptx-random-programs"
python3 host/shim/tests/clients/ptx_random.py 1 3000 "$bundle/ptx-random-programs"
mkdir -p "$bundle/ptx-random-halves"
python3 host/shim/tests/clients/ptx_random.py 2 3000 "$bundle/ptx-random-halves" --halves
rm "$bundle"/ptx-random-{programs,halves}/programs.json
ln -s "$cuda/lib/libcudart.so.13" "$link/libcudart.so"
ln -s "$cuda/lib/libcudadevrt.a" "$link/libcudadevrt.a"
gen=(-gencode 'arch=compute_90,code=[sm_90,compute_90]')
for cu in host/shim/tests/runtime/*.cu; do
    name=$(basename "$cu" .cu)
    PATH="$cuda/bin:$PATH" nvcc "${gen[@]}" -I"$cuda/include" -L"$cuda/lib" "$cu" -o "$bundle/${name}_static"
    PATH="$cuda/bin:$PATH" nvcc -cudart shared "${gen[@]}" -I"$cuda/include" -L"$link" \
        -Xlinker -rpath -Xlinker '$ORIGIN' "$cu" -o "$bundle/${name}_shared"
done
cp "$cuda/lib/libcudart.so.13" "$bundle/"
cp host/shim/tests/clients/*.py host/shim/tests/clients/*.cu host/shim/tests/runtime/*.py "$bundle/"
strip "$bundle/peerpool" "$bundle/libpeerpool_shim.so" "$bundle/cudarc-nvrtc"
git rev-parse HEAD > "$bundle/COMMIT" 2>/dev/null || echo unknown > "$bundle/COMMIT"
git status --porcelain | grep -q . && echo "dirty" >> "$bundle/COMMIT" || true
du -sh "$bundle" | sed 's/^/bundle: /'

#!/usr/bin/env bash
# Builds, on a machine without CUDA, what the graphs record runs on a GPU machine with NVIDIA's
# driver: the graph clients (host/shim/tests/clients/{graphs,graph_memory,graph_params,
# capture_rules}.c, against NVIDIA's cuda.h from PyPI, linked with -lcuda, which resolves to
# NVIDIA's libcuda there), cuda.core's graph scripts, and run.sh, which runs each with its output
# in OUT. Usage: ci/graphs-bundle.sh DIR   (keep DIR git-ignored, e.g. .gpu/graphs)
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=${1:?usage: ci/graphs-bundle.sh DIR}
rm -rf "$bundle"
mkdir -p "$bundle"
cuda=$(ci/cuda-wheels.sh)
cargo build -q -p peerpool-shim
link=$(mktemp -d)
trap 'rm -rf "$link"' EXIT
ln -s "$PWD/target/debug/libpeerpool_shim.so" "$link/libcuda.so"
programs=()
for name in graphs graph_memory graph_params capture_rules; do
    [ -f "host/shim/tests/clients/$name.c" ] || continue
    cc -O1 -o "$bundle/$name" "host/shim/tests/clients/$name.c" -I"$cuda/include" -L"$link" -lcuda
    programs+=("$name")
done
cp host/shim/tests/clients/graphs.py host/shim/tests/clients/graph_definition.py "$bundle/"
git rev-parse --short HEAD > "$bundle/commit.txt"
cat > "$bundle/run.sh" <<RUN
#!/usr/bin/env bash
# Runs each graph client with NVIDIA's driver, its stdout and stderr in OUT (default \$OUT).
cd "\$(dirname "\$0")"
out=\${1:-\$OUT}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "\$out/machine.txt"
cat commit.txt >> "\$out/machine.txt"
for p in ${programs[*]}; do
    timeout 120 ./\$p > "\$out/\$p.txt" 2> "\$out/\$p.err"
    echo "\$p exit \$?" >> "\$out/machine.txt"
done
for py in graphs graph_definition; do
    timeout 120 python3 \$py.py > "\$out/\${py}_py.txt" 2> "\$out/\${py}_py.err"
    echo "\$py.py exit \$?" >> "\$out/machine.txt"
done
RUN
chmod +x "$bundle/run.sh"
ls "$bundle"

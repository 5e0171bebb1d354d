# Sourced (from the checkout's root) by the GPU scripts that take [BUNDLE_DIR] [OUT_DIR]: sets
# $bundle and $out, both absolute, the output directory made, from the script's arguments;
# $default_out when no OUT_DIR is given.
bundle=$(realpath "${1:-.gpu}")
out=${2:-$default_out}
mkdir -p "$out"
out=$(realpath "$out")

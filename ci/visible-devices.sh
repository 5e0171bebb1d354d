#!/usr/bin/env bash
# How a driver reads CUDA_VISIBLE_DEVICES on a one-GPU machine: for each form, the devices
# `peerpool facts` sees (or none). Run on a GPU machine against NVIDIA's driver, and here
# through the libcuda shim on one_gpu, then compare the two listings.
# Usage: ci/visible-devices.sh PEERPOOL UUID [WRAPPER ...]
#   e.g. on a GPU: ci/visible-devices.sh .gpu/peerpool "$(nvidia-smi --query-gpu=uuid --format=csv,noheader)"
#        here:     ci/visible-devices.sh target/debug/peerpool GPU-... target/debug/peerpool sim --topology one_gpu --
set -uo pipefail
peerpool=${1:?usage: ci/visible-devices.sh PEERPOOL UUID [WRAPPER ...]}
u=${2:?usage: ci/visible-devices.sh PEERPOOL UUID [WRAPPER ...]}
shift 2
upper=$(tr 'a-f' 'A-F' <<< "$u")
# label=value: the label says the form, the value is what is set.
forms=(
    "uuid=$u" "uuid,uuid=$u,$u" "0,uuid=0,$u" "0,0=0,0" "space+uuid= $u" "uuid+space=$u " "0+space=0 "
    "space+0= 0" "first 8 hex, upper case=${upper:0:12}" "first 8 hex, gpu- in lower case=gpu-${u:4:8}"
    "GPU- alone=GPU-" "first hex digit=${u:0:5}" "+0=+0" "00=00" "0x0=0x0" "1,0=1,0" "0,1=0,1" "-1=-1" "empty="
)
for form in "${forms[@]}"; do
    label=${form%%=*}
    v=${form#*=}
    seen=$(env CUDA_VISIBLE_DEVICES="$v" "$@" "$peerpool" facts 2>&1 |
        sed -n 's/^devices: \(.*\)/\1 device(s)/p; s/.*reports no GPU.*/no GPU/p; s/^peerpool: .*/cuInit failed/p' | head -n 1)
    printf '%-36s %s\n' "$label" "${seen:-?}"
done

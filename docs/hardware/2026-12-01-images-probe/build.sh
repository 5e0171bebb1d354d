set -e
cd "$(dirname "$0")"
mkdir -p out
nvcc -ptx -arch=compute_90 probe.cu -o out/probe.ptx
nvcc -cubin -arch=sm_90 probe.cu -o out/probe.cubin
nvcc -cubin -arch=sm_80 probe.cu -o out/probe.sm80.cubin
nvcc -ptx -arch=compute_100 probe.cu -o out/probe.sm100.ptx
nvcc -fatbin -gencode 'arch=compute_80,code=[sm_80,compute_80]' probe.cu -o out/probe.sm80ptx.fatbin
nvcc -fatbin -gencode 'arch=compute_80,code=sm_80' probe.cu -o out/probe.sm80only.fatbin
nvcc -fatbin -gencode 'arch=compute_90,code=[sm_90,compute_90]' -Xfatbin=-compress-all -Xfatbin=-compress-mode=speed probe.cu -o out/probe.speed.fatbin
nvcc -fatbin -gencode 'arch=compute_90,code=[sm_90,compute_90]' -gencode 'arch=compute_80,code=[sm_80,compute_80]' probe.cu -o out/probe.multi.fatbin
sed 's/^\.version 9\.0/.version 9.9/' out/probe.ptx > out/probe.v99.ptx

#!/usr/bin/env bash
# Builds the trace plugin of bench/results/wgmma-start-chain/ from a configured and built
# build-device/ (README.md, "On a GPU server"): the K8/V8 wgmma kernels
# (decode_k8v8_wgmma.cu) and the launch code with the combine (decode_launch.cu) compiled again
# with -DTILEPATH_KERNEL_TRACE (plus any extra flags in $EXTRA), put in place of the plain
# objects in a copy of the plugin's host archive, and the plugin linked again into $1.
# Usage, from the repository root: bash bench/results/wgmma-start-chain/build-trace-plugin.sh DIR
set -euo pipefail
dest=$(realpath -m "$1")
mkdir -p "$dest/obj"
cd build-device
commands=$(ninja -t commands plugins/libtilepath_backend_cuda.so)
for tu in decode_k8v8_wgmma decode_launch; do
  c=$(grep -E "kernels/$tu.cu " <<<"$commands" | grep nvcc | head -1)
  c=$(sed "s#-MD -MT [^ ]* -MF [^ ]*##; s# -o [^ ]*\$# -o $dest/obj/$tu.cu.o#; s#-O3#-O3 -DTILEPATH_KERNEL_TRACE ${EXTRA:-}#" <<<"$c")
  eval "$c"
done
cp backends/cuda/libtilepath_cuda_host.a "$dest/obj/host.a"
(cd "$dest/obj" && ar r host.a decode_k8v8_wgmma.cu.o decode_launch.cu.o)
link=$(grep "plugins/libtilepath_backend_cuda.so " <<<"$commands" | tail -1)
link=$(sed "s#backends/cuda/libtilepath_cuda_host.a#$dest/obj/host.a#; s#-o plugins/libtilepath_backend_cuda.so#-o $dest/libtilepath_backend_cuda.so#" <<<"$link")
eval "$link"
rm -rf "$dest/obj"

# CUDA kernel sources of the cuda plugin (owned by the kernels side; the plugin's
# CMakeLists.txt adds ${TILEPATH_CUDA_KERNEL_SOURCES} to its target).
# One translation unit per dtype family so that a -j2 build compiles them in parallel.
# Interface to the host side: backends/cuda/decode_launch.h (unchanged).
set(TILEPATH_CUDA_KERNEL_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/decode_launch.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_k16v16.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_k16v8.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_k8v16.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_k8v8_transform.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_k8v8_fp8qk.cu)

# CUDA kernel sources of the cuda plugin (the plugin's CMakeLists.txt adds
# ${TILEPATH_CUDA_KERNEL_SOURCES} to its target). One translation unit per dtype family
# so that a -j2 build compiles them in parallel; the headers (decode_*.cuh,
# combine_kernel.cuh, device_primitives.cuh, variant_*.h) are included by them.
#
# Notes for the host code (backends/cuda/decode_launch.h is the interface):
#  - launch_decode launches the main kernel and combine with programmatic dependent
#    launch: the main kernel's CTAs may become resident during the previous kernel's
#    tail, and wait (griddepcontrol.wait) before reading anything (Q, lengths, page
#    table, K/V) or writing any output, so the previous kernel may write any of them.
#    q_quant (fp8_qk) runs inside the main kernel's prologue, not as its own launch.
#  - KernelInfo::tile_tokens = tokens per pipeline step of one kv head (its MMA warps x 32
#    tokens); a CTA may cover two kv heads (decode_k8v8_two_heads.cu).
#  - prebias (post-RoPE): the cache holds K_t - RoPE_t(b); the k_bias stage adds the exact
#    bias's scores q.RoPE_t(b) (they change with t, so softmax does not cancel them), with
#    two constant tables (backends/cuda/bias_rotation_tables.h) the host uploads.
#  - The mma.sync ablation variants exist at head_dim 128 only (the wgmma kernels have a
#    load_only at every head dim and, at 128, a compute_only and isolated compute stages,
#    decode_wgmma_compute_ablations_*.cu; no remove or twice); k_prep ablations only for the
#    transform K path, v_prep ablations only for FP8 V. The isolated stage kernels
#    (decode_isolated_*.cu) run one stage alone at the real kernel's CTAs per SM.
set(TILEPATH_CUDA_KERNEL_SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/decode_launch.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_k16v16.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_k16v8.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_k8v16.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_k8v8_transform.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_k8v8_fp8qk.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_k8v8_two_heads.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_k8v8_prebias_transform.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_k8v8_prebias_fp8qk.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_k8v8_wgmma.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_16bit_wgmma.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_wgmma_load_only.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_wgmma_two_heads.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_wgmma_cp_async_k8v8.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_wgmma_cp_async_two_heads.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_wgmma_cp_async_16bit.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_isolated_k16.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_isolated_k8v16.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_isolated_k8v8_transform.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_isolated_k8v8_fp8qk.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_isolated_two_heads.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_isolated_prebias_transform.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_isolated_prebias_fp8qk.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_wgmma_compute_ablations_k8v8.cu
    ${CMAKE_CURRENT_LIST_DIR}/decode_wgmma_compute_ablations_16bit.cu)

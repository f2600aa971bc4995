/*
 * The canonical names of the ABI's enumerations: how a dtype control, K path,
 * transform mode, matrix instruction family, stage or cost method is written on the
 * command line, in sweep specs, in kernel names and in the run store. This header is
 * the one place they are spelled; core (core/operating_point.cpp, core/stage.cpp), the plugins, the
 * CUDA kernels' names and the bench scripts (bench/tilepath_names.py parses the
 * arrays below) all read them from here.
 *
 * Each array is indexed by the enum value of backends/abi/tilepath_backend.h, so
 * its order is the enum's order. Keep each array on the lines between its
 * declaration and "};" with one quoted name per entry: the bench parser expects it.
 */
#ifndef TILEPATH_NAMES_H
#define TILEPATH_NAMES_H

#include <stdint.h>

#include "backends/abi/tilepath_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

static const char* const tp_kv_dtype_names[] = {"k16v16", "k8v16", "k16v8", "k8v8"};
static const char* const tp_k_path_names[] = {"transform", "fp8_qk", "k16"};
static const char* const tp_transform_mode_names[] = {"none", "full", "k_only", "separate_kv"};
static const char* const tp_k_repr_names[] = {"plain", "prebias", "mxfp8"};
static const char* const tp_rope_layout_names[] = {"post_rope", "pre_rope"};
static const char* const tp_scale_granularity_names[] = {"per_tensor", "per_head"};
static const char* const tp_cache_state_names[] = {"l2_warm", "hbm_cold"};
static const char* const tp_mma_names[] = {"mma_sync", "wgmma"};
static const char* const tp_stage_names[] = {"k_load", "k_prep", "qk",      "softmax", "v_load", "v_prep",
                                             "pv",     "accum",  "q_quant", "combine", "k_bias"};
static const char* const tp_cost_method_names[] = {"isolated", "removed", "doubled", "model"};

#define TP_NAME_COUNT(array) ((int32_t)(sizeof(array) / sizeof((array)[0])))

/* The name of value v in one of the arrays above, or "unknown" when v is out of range. */
#define TP_NAME_OF(array, v) ((v) >= 0 && (v) < TP_NAME_COUNT(array) ? (array)[(v)] : "unknown")

#ifdef __cplusplus
}

/* Each table has one name per enum value. */
static_assert(TP_NAME_COUNT(tp_kv_dtype_names) == TP_KV_K8V8 + 1, "one name per dtype control");
static_assert(TP_NAME_COUNT(tp_k_path_names) == TP_KPATH_K16 + 1, "one name per K path");
static_assert(TP_NAME_COUNT(tp_transform_mode_names) == TP_MODE_SEPARATE_KV + 1, "one name per transform mode");
static_assert(TP_NAME_COUNT(tp_k_repr_names) == TP_KREPR_MXFP8 + 1, "one name per K representation");
static_assert(TP_NAME_COUNT(tp_rope_layout_names) == TP_ROPE_PRE + 1, "one name per RoPE layout");
static_assert(TP_NAME_COUNT(tp_scale_granularity_names) == TP_SCALE_PER_HEAD + 1, "one name per scale layout");
static_assert(TP_NAME_COUNT(tp_cache_state_names) == TP_CACHE_HBM_COLD + 1, "one name per cache state");
static_assert(TP_NAME_COUNT(tp_mma_names) == TP_MMA_WGMMA + 1, "one name per matrix instruction family");
static_assert(TP_NAME_COUNT(tp_stage_names) == TP_STAGE_COUNT, "one name per stage");
static_assert(TP_NAME_COUNT(tp_cost_method_names) == TP_COST_METHOD_COUNT, "one name per cost method");
#endif

#endif /* TILEPATH_NAMES_H */

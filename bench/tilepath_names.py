"""The canonical names of tilepath's enumerations, read from backends/abi/tilepath_names.h.

That header is the one place the names of the dtype controls, K paths, transform modes,
matrix instruction families, cache states, stages and cost methods are spelled; this module
parses its arrays so that the bench scripts use the same names as the CLI, the kernels and
the run store. Each list is in enum order (the header's arrays are indexed by the enum values
of tilepath_backend.h), and the constants below unpack them under the enum's names: a header
that gains or loses a name makes the import fail here instead of a script silently using a
stale name.
"""
import os
import re

HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "backends", "abi", "tilepath_names.h")


def parse_name_arrays(text):
    """{array name: [names]} for every `static const char* const tp_<x>_names[] = {...};` in text."""
    arrays = {}
    for name, body in re.findall(r"static\s+const\s+char\s*\*\s*const\s+(tp_\w+_names)\s*\[\]\s*=\s*\{(.*?)\};",
                                 text, re.S):
        arrays[name] = re.findall(r'"([^"]*)"', body)
    return arrays


def _load():
    with open(HEADER) as fh:
        return parse_name_arrays(fh.read())


_ARRAYS = _load()

KV_DTYPES = _ARRAYS["tp_kv_dtype_names"]
K_PATHS = _ARRAYS["tp_k_path_names"]
MODES = _ARRAYS["tp_transform_mode_names"]
K_REPRS = _ARRAYS["tp_k_repr_names"]
ROPE_LAYOUTS = _ARRAYS["tp_rope_layout_names"]
SCALE_GRANULARITIES = _ARRAYS["tp_scale_granularity_names"]
CACHE_STATES = _ARRAYS["tp_cache_state_names"]
MMAS = _ARRAYS["tp_mma_names"]
STAGES = _ARRAYS["tp_stage_names"]
COST_METHODS = _ARRAYS["tp_cost_method_names"]

# The enum values of backends/abi/tilepath_backend.h, by name.
KV_K16V16, KV_K8V16, KV_K16V8, KV_K8V8 = KV_DTYPES
KPATH_TRANSFORM, KPATH_FP8_QK, KPATH_K16 = K_PATHS
MODE_NONE, MODE_FULL, MODE_K_ONLY, MODE_SEPARATE_KV = MODES
CACHE_L2_WARM, CACHE_HBM_COLD = CACHE_STATES
MMA_MMA_SYNC, MMA_WGMMA = MMAS
(STAGE_K_LOAD, STAGE_K_PREP, STAGE_QK, STAGE_SOFTMAX, STAGE_V_LOAD, STAGE_V_PREP, STAGE_PV, STAGE_ACCUM,
 STAGE_Q_QUANT, STAGE_COMBINE, STAGE_K_BIAS) = STAGES
COST_ISOLATED, COST_REMOVED, COST_DOUBLED, COST_MODEL = COST_METHODS

/*
 * tilepath backend plugin ABI.
 *
 * A backend is a shared library that exports exactly one C symbol,
 * TILEPATH_BACKEND_ENTRY_SYMBOL ("tilepath_backend_entry"), of type
 * tp_backend_entry_fn. The host calls it with the ABI version it speaks; the
 * plugin returns a pointer to a static tp_backend_api (or NULL when it cannot
 * serve that host major version).
 *
 * Versioning (after CLAP and OBS):
 *   - abi_major changes break layout: host and plugin must agree exactly.
 *   - abi_minor adds fields at the END of structs only. Every struct starts with
 *     struct_size; a reader touches a field only when struct_size covers it, so
 *     an older, shorter struct from either side stays valid.
 *   - No struct holds an array sized by an enumeration (a new stage would shift
 *     every later field): lists are a pointer and a count, as stage costs and
 *     metrics are.
 *   - The first three fields of tp_backend_api (struct_size, abi_major, abi_minor)
 *     never move, in any major: a host that a plugin refuses asks the entry again
 *     with an older major to learn which one the plugin speaks, and says both.
 *
 * ABI 2 (this header): stage costs are the list tp_result.stage_costs, and
 * tp_result.plugin_owned carries the plugin's handle for release_result. A plugin
 * of ABI 1 is refused with a message naming both versions. 2.1 adds TP_KREPR_MXFP8;
 * 2.2 the inputs' key distribution (tp_run_options.key_distribution) and the numerical
 * gate on the case's own inputs (tp_result.gate_*); 2.3 the stage TP_STAGE_K_BIAS; 2.4 the
 * compiled kernels' records (tp_backend_api.kernel_count / kernel_record), listed without
 * a device; 2.5 the matrix instruction family (tp_case.mma) and the key distribution's
 * parameters (tp_run_options.key_model_json); 2.6 the device's identity on its host
 * (tp_device_info.uid), so that the runs of a several-GPU host name the GPU that ran them.
 *
 * Only plain C types cross this boundary. Strings are NUL-terminated UTF-8.
 *
 * Threading: the host serialises all calls into one plugin (never two calls
 * concurrently), but may make them from any thread (the GUI runs cases on a
 * worker thread). progress callbacks are invoked on the thread that called
 * run_case. The cancel flag may be written by any host thread at any time.
 */
#ifndef TILEPATH_BACKEND_H
#define TILEPATH_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TILEPATH_ABI_MAJOR 2
#define TILEPATH_ABI_MINOR 6
#define TILEPATH_BACKEND_ENTRY_SYMBOL "tilepath_backend_entry"

#if defined(_WIN32)
#define TP_EXPORT __declspec(dllexport)
#else
#define TP_EXPORT __attribute__((visibility("default")))
#endif

/* ---- enumerations (values are stable; stored in databases by name) ---- */

/* dtype control: which of K and V are stored as FP8 E4M3 in HBM */
enum tp_kv_dtype { TP_KV_K16V16 = 0, TP_KV_K8V16 = 1, TP_KV_K16V8 = 2, TP_KV_K8V8 = 3 };

/* how K reaches the matrix unit */
enum tp_k_path {
  TP_KPATH_TRANSFORM = 0, /* FP8 K converted on chip to a 16-bit operand (CUDA: F16), 16-bit MMA for QK */
  TP_KPATH_FP8_QK = 1,    /* Q quantized to E4M3 once per step, FP8xFP8 MMA */
  TP_KPATH_K16 = 2        /* K stays BF16 in HBM */
};

/* where FP8 -> 16-bit operand conversion happens (FlashInfer naming) */
enum tp_transform_mode {
  TP_MODE_NONE = 0,       /* nothing to convert (K16/V16, or fp8_qk with V16) */
  TP_MODE_FULL = 1,       /* MMA warps convert K and V inside the main loop */
  TP_MODE_K_ONLY = 2,     /* K converted for QK; PV consumes FP8 V (P quantized) */
  TP_MODE_SEPARATE_KV = 3 /* dedicated warps convert K and V into staged 16-bit tiles */
};

/* how K (and, for mxfp8, V) is stored when FP8: plain symmetric E4M3 with a per-head or
 * per-tensor scale; prebias: the residual K - b_k quantized, the bias kept exact in F32;
 * mxfp8: E4M3 elements with one E8M0 scale per 32 elements along the head dim (OCP MX) */
enum tp_k_repr { TP_KREPR_PLAIN = 0, TP_KREPR_PREBIAS = 1, TP_KREPR_MXFP8 = 2 };
enum tp_rope_layout { TP_ROPE_POST = 0, TP_ROPE_PRE = 1 };
enum tp_scale_granularity { TP_SCALE_PER_TENSOR = 0, TP_SCALE_PER_HEAD = 1 };
enum tp_cache_state { TP_CACHE_L2_WARM = 0, TP_CACHE_HBM_COLD = 1 };

/* ABI 2.5: the matrix instruction family the kernel's QK and PV are issued on.
 * mma_sync: synchronous MMAs on register operands (NVIDIA mma.sync, HMMA in SASS; on sm_90a
 * mma.sync ... e4m3 is lowered to F16 HMMA plus F2FP conversions); wgmma: Hopper's
 * asynchronous warpgroup MMA (wgmma.mma_async, HGMMA/QGMMA), its only FP8 tensor-core path.
 * A backend that has no such instruction refuses the value (TP_ERR_UNSUPPORTED). */
enum tp_mma { TP_MMA_MMA_SYNC = 0, TP_MMA_WGMMA = 1 };

/* per-tile stages of the stage graph, plus the once-per-step ones */
enum tp_stage {
  TP_STAGE_K_LOAD = 0,
  TP_STAGE_K_PREP = 1,
  TP_STAGE_QK = 2,
  TP_STAGE_SOFTMAX = 3,
  TP_STAGE_V_LOAD = 4,
  TP_STAGE_V_PREP = 5,
  TP_STAGE_PV = 6,
  TP_STAGE_ACCUM = 7,
  TP_STAGE_Q_QUANT = 8, /* once per decode step */
  TP_STAGE_COMBINE = 9, /* once per step: split-KV merge */
  TP_STAGE_K_BIAS = 10, /* ABI 2.3, prebias K: the exact bias's score q.RoPE_t(b) added to each tile's S */
  TP_STAGE_COUNT = 11
};

/* how a stage cost was obtained */
enum tp_cost_method {
  TP_COST_ISOLATED = 0, /* an isolated kernel that runs only this stage */
  TP_COST_REMOVED = 1,  /* full kernel minus the kernel with this stage removed */
  TP_COST_DOUBLED = 2,  /* the kernel with this stage done twice minus the full kernel */
  TP_COST_MODEL = 3,    /* predicted by a performance model (sim backend) */
  TP_COST_METHOD_COUNT = 4
};

/* ablation request bits for tp_run_options.ablations */
#define TP_ABLATE_STAGE_COSTS (1u << 0)   /* measure removed/doubled/isolated stage costs */
#define TP_ABLATE_TILE_INTERVAL (1u << 1) /* measure tile interval from >= 2 contexts */

enum tp_status {
  TP_OK = 0,
  TP_ERR_UNSUPPORTED = 1, /* the case is valid but this backend/device can't run it */
  TP_ERR_INVALID = 2,     /* the case is malformed */
  TP_ERR_RUNTIME = 3,     /* a driver/runtime call failed; message says which */
  TP_ERR_CANCELLED = 4,   /* the cancel flag was seen */
  TP_ERR_WRONG_RESULT = 5 /* ran, but the output failed the error tolerance */
};

/* ---- structs ---- */

typedef struct tp_device_info {
  uint32_t struct_size;
  char name[128];   /* e.g. "NVIDIA H200" */
  char arch[32];    /* e.g. "sm_90a", "gfx942", "x86_64" */
  int32_t sm_count; /* SMs / CUs / CPU threads */
  uint64_t memory_bytes;
  double bandwidth_gbps; /* nominal or measured read bandwidth, GB/s */
  uint64_t l2_bytes;
  double clock_mhz;
  /* ABI 2.6: the device's identity on its host, the same in every process whatever the
   * visible-device mask (the index is not): a GPU's PCI bus id ("0000:19:00.0"), else the
   * plugin's own name for the device ("cpu:1"). Empty from an older plugin. */
  char uid[64];
} tp_device_info;

/* One operating point. Owned by the host; valid for the duration of the call. */
typedef struct tp_case {
  uint32_t struct_size;
  int32_t batch;
  int32_t context;                /* tokens per request when context_lengths is NULL */
  const int32_t* context_lengths; /* optional: batch entries (ragged batch) */
  int32_t q_heads;
  int32_t kv_heads;
  int32_t head_dim;
  int32_t page_size;
  int32_t kv_dtype;          /* enum tp_kv_dtype */
  int32_t k_path;            /* enum tp_k_path */
  int32_t transform_mode;    /* enum tp_transform_mode */
  int32_t k_repr;            /* enum tp_k_repr */
  int32_t rope_layout;       /* enum tp_rope_layout */
  int32_t scale_granularity; /* enum tp_scale_granularity */
  int32_t cache_state;       /* enum tp_cache_state */
  int32_t splits;            /* split-KV count; 0 = backend chooses */
  const char* gpu_model;     /* model name for simulating backends (e.g. "h200"); may be NULL */
  /* ABI 2.5: enum tp_mma. Read it only when struct_size covers it: an older host's
   * shorter case means TP_MMA_MMA_SYNC (what every case before 2.5 ran). */
  int32_t mma;
} tp_case;

/* Progress: fraction in [0,1] and a short phase label. Return nonzero to request
 * cancellation (same effect as setting the cancel flag). */
typedef int (*tp_progress_fn)(void* user, double fraction, const char* phase);

/* The most warm-up or timed launches a case may ask for; a plugin answers TP_ERR_INVALID
 * above it (and for a negative count), so no count of launches or samples can overflow. */
#define TP_MAX_LAUNCHES 100000

typedef struct tp_run_options {
  uint32_t struct_size;
  int32_t warmup;               /* warm-up launches (default 5; 0..TP_MAX_LAUNCHES) */
  int32_t repeats;              /* timed launches; median reported (default 20; 1..TP_MAX_LAUNCHES, 0 = default) */
  uint32_t ablations;           /* TP_ABLATE_* bits */
  uint64_t seed;                /* RNG seed for the random inputs */
  const char* save_tensors_dir; /* if non-NULL, write inputs/outputs as .npy + manifest.json */
  tp_progress_fn progress;      /* may be NULL */
  void* progress_user;
  const volatile int32_t* cancel; /* may be NULL; nonzero = stop as soon as possible */
  /* ABI 2.2: the keys of the random inputs, "gaussian" | "heavy_tailed" | "qwen_bias";
   * NULL = "gaussian". A plugin that cannot make them refuses the case. */
  const char* key_distribution;
  /* ABI 2.5: the text of models/keys/<key_distribution>.json the host gates with (its
   * parameters: bias channels and magnitudes, Student-t dof). NULL = the plugin's built-in
   * copy of that file (embedded at build time). Owned by the host, valid during run_case.
   * A plugin that cannot generate keys with these parameters refuses the case. */
  const char* key_model_json;
} tp_run_options;

/* One stage cost: a stage (enum tp_stage) measured by a method (enum tp_cost_method),
 * microseconds per tile. A removed or doubled cost is a difference of two timings and
 * may be <= 0. A stage the plugin did not measure has no entry (never a 0). */
typedef struct tp_stage_cost {
  int32_t stage;
  int32_t method;
  double cost_us;
} tp_stage_cost;

/* One gate metric over the checked (request, kv head) rows: the worst row and the median. */
typedef struct tp_gate_value {
  double worst;
  double median;
} tp_gate_value;

/* Free-form numeric metric (DRAM bytes, L2 hit rate, occupancy, ...). */
typedef struct tp_metric {
  char name[64];
  char unit[16];
  double value;
} tp_metric;

/* A raw output kept beside the case (profiler report, sample list, log). */
typedef struct tp_artifact {
  char name[128];      /* e.g. "ncu-report.txt", "samples.json" */
  char mime[64];       /* e.g. "text/plain", "application/json" */
  const uint8_t* data; /* owned by the plugin until release_result */
  uint64_t size;
} tp_artifact;

/* Filled by the plugin. The host zero-initialises it and sets struct_size;
 * doubles the plugin cannot provide are left as NaN (the host pre-fills NaN).
 * Pointers inside (stage_costs, metrics, artifacts) and plugin_owned are owned by
 * the plugin and stay valid until the host calls release_result on this struct;
 * the host calls it for every result before shutdown. */
typedef struct tp_result {
  uint32_t struct_size;
  int32_t status;    /* enum tp_status */
  char message[512]; /* human-readable; reason on failure */

  /* timing (microseconds) */
  double latency_us; /* median */
  double latency_min_us;
  double latency_max_us;
  int32_t repeats;
  double tile_interval_us; /* steady-state interval per KV tile (slope over context) */
  int32_t tile_tokens;     /* tokens per KV tile */

  /* the byte floor */
  double bytes_moved;         /* minimum HBM bytes the case must move */
  double read_bandwidth_gbps; /* ceiling measured in the same run */
  double floor_fraction;      /* (bytes_moved / read_bandwidth) / latency */

  /* kernel metadata */
  char kernel_name[256];
  char cubin_sha256[65];
  int32_t regs_per_thread;
  int32_t smem_static_bytes;
  int32_t smem_dynamic_bytes;
  double occupancy_theoretical; /* active warps / max warps, 0..1 */
  double occupancy_achieved;
  int32_t grid[3];
  int32_t block[3];
  int32_t splits; /* split count actually used */

  /* The kernel check: the output against a float64 emulation of the kernel's own
   * arithmetic on the stored cache (fp8_qk: with the query quantized as the kernel does).
   * Whether the kernel computes its function; not the representation's error. */
  double rel_l2_error;
  double max_abs_error;
  double tolerance; /* rel_l2 tolerance applied */
  int32_t passed;   /* 1 if rel_l2_error <= tolerance */

  const tp_stage_cost* stage_costs; /* per tile; see tp_stage_cost */
  int32_t stage_cost_count;
  const tp_metric* metrics;
  int32_t metric_count;
  const tp_artifact* artifacts;
  int32_t artifact_count;
  void* plugin_owned; /* opaque to the host: what release_result frees */

  /* ABI 2.2. The numerical gate on the case's own inputs (docs/gate.md): the output
   * against float64 attention with the query as given (BF16) and the unquantized K and
   * V; kl and top-k from the attention weights over the stored cache. NaN (host
   * pre-filled) where the plugin has no output to compare. The host applies the
   * thresholds. */
  tp_gate_value gate_rel_l2, gate_max_abs, gate_kl, gate_top8, gate_top32;
  int32_t gate_rows_checked; /* (request, kv head) rows compared; 0 = no gate */
  int32_t gate_rows_total;
  int32_t check_rows_checked; /* the kernel check's rows; 0 = not reported */
  int32_t check_rows_total;
  char key_distribution[32]; /* the inputs' keys, e.g. "gaussian"; "" = not reported */
} tp_result;

/* ABI 2.4. One compiled kernel as its plugin describes it from its own binary, with or
 * without a device: what tp_result's kernel metadata says of the kernel a case ran.
 * Filled by the plugin into a host-owned struct (struct_size set by the host). */
typedef struct tp_kernel_record {
  uint32_t struct_size;
  char name[256];                /* as tp_result.kernel_name, e.g. "decode_k8v8_fp8_qk_k_only_d128" */
  char symbol[256];              /* the kernel's symbol in its device binary ("" when not found) */
  char binary_sha256[65];        /* SHA-256 of the device binary (cubin, code object) holding it */
  int32_t registers;             /* per thread (lane); AMD: the unified VGPR count, AGPRs included */
  int32_t accum_registers;       /* AMD: the AGPRs among them; -1 where the GPU has none */
  int32_t shared_bytes;          /* static shared memory (LDS) per block */
  int32_t scratch_bytes;         /* private (local) memory per thread; 0 = no spills, no stack */
  int32_t threads;               /* per block */
  int32_t waves_per_simd;        /* AMD: waves per SIMD its registers and LDS allow; -1 unknown */
  int32_t target_waves_per_simd; /* the occupancy the kernel is built for; -1 unknown */
} tp_kernel_record;

typedef struct tp_backend_api {
  uint32_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  const char* name;    /* short id, e.g. "cpu", "sim", "cuda" (static storage) */
  const char* version; /* plugin version (static storage) */

  /* Initialise the runtime. Returns 0 on success. A missing driver/GPU is NOT an
   * error: return 0 and report zero devices with a reason. Called once, first. */
  int (*init)(char* error, size_t error_len);

  /* Release everything. Called once, last. */
  void (*shutdown)(void);

  /* Number of devices; 0 when the runtime or hardware is absent. */
  int32_t (*device_count)(void);

  /* Why device_count() is 0 (static or plugin-owned string valid until shutdown);
   * "" when there are devices. */
  const char* (*no_device_reason)(void);

  /* Fill *out (host-owned, struct_size set by host). Returns 0 on success. */
  int (*device_info)(int32_t device, tp_device_info* out);

  /* 1 if the case can run on the device, else 0 and a reason in why. */
  int (*supports)(int32_t device, const tp_case* c, char* why, size_t why_len);

  /* Run one case synchronously. Returns the same value as out->status.
   * May be long; polls options->cancel and calls options->progress. */
  int (*run_case)(int32_t device, const tp_case* c, const tp_run_options* options, tp_result* out);

  /* Free what run_case allocated inside *r (metrics, artifacts). Idempotent. */
  void (*release_result)(tp_result* r);

  /* ABI 2.4 (absent from an older plugin's shorter table; NULL = no records). The kernels
   * compiled into the plugin, known without a device; callable any time after init. */
  int32_t (*kernel_count)(void);
  /* Fill *out (host-owned, struct_size set by host) with kernel `index`. 0 on success. */
  int (*kernel_record)(int32_t index, tp_kernel_record* out);
} tp_backend_api;

/* The one exported symbol. Returns NULL when host_major is not supported. */
typedef const tp_backend_api* (*tp_backend_entry_fn)(uint32_t host_major, uint32_t host_minor);

#ifdef __cplusplus
}
#endif

#endif /* TILEPATH_BACKEND_H */

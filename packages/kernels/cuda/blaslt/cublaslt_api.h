// Our own declaration of the small part of cuBLASLt that blaslt/loader.cpp
// uses. No NVIDIA header is needed (nor available on the CI machines): the
// library is dlopen'ed at run time and every function is reached through the
// pointer types below, so these declarations ARE the ABI we rely on. Each value
// states where it was checked; the static_asserts pin what can be pinned here,
// and test/check_library_types.cpp compares the cudaDataType_t values against
// the CUDA toolkit's library_types.h wherever that header is installed.
//
// Sources (abbreviated below):
//   [lt.h]    NVIDIA's cublasLt.h (the 11.x header, e.g. as vendored in
//             ggerganov/llama.cpp include/cuda/cublasLt.h): declarations of the
//             functions, cublasLtMatmulAlgo_t, cublasLtMatmulHeuristicResult_t,
//             and the attribute enums with the C type each attribute takes.
//   [nvmath]  nvmath-python's cuBLAS/cuBLASLt binding reference, generated from
//             the current (12.x/13.x) headers:
//             docs.nvidia.com/cuda/nvmath-python/latest/bindings/generated/
//             nvmath.bindings.cublas.Status, .cublas.ComputeType,
//             .cublasLt.MatmulDescAttribute, .cublasLt.MatmulPreferenceAttribute,
//             .cublasLt.MatmulAlgo (data_: 8 x uint64),
//             .cublasLt.MatmulHeuristicResult (algo, workspace_size: uint64,
//             state: int32, waves_count: float32).
//   [libtypes] /usr/local/cuda-13.0/include/library_types.h (CUDA 13.0):
//             cudaDataType_t.
//   [cublas]  docs.nvidia.com/cuda/cublas/ (cuBLAS API reference), the
//             cublasLtMatmul table of supported type combinations and the
//             "Data Layout" section (column-major storage).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

// Everything is in a namespace: the CUDA runtime headers (cuda_runtime.h ->
// library_types.h) declare cudaDataType_t and CUDA_R_32F globally, and a
// translation unit may include both.
namespace ot_cuda::cublaslt_api {

// ---- cublasStatus_t ([nvmath] cublas.Status; [lt.h] via cublas_api.h) -------
enum cublasStatus_t : int {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_ARCH_MISMATCH = 8,
  CUBLAS_STATUS_MAPPING_ERROR = 11,
  CUBLAS_STATUS_EXECUTION_FAILED = 13,
  CUBLAS_STATUS_INTERNAL_ERROR = 14,
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
  CUBLAS_STATUS_LICENSE_ERROR = 16,
};

// ---- cublasComputeType_t ([nvmath] cublas.ComputeType) ----------------------
// Only the one we use. 68, not 0: CUDA_R_32F (0) is the cudaDataType_t of the
// pre-11.0 API, and passing it as a compute type is a classic hand-written bug.
// CUBLAS_COMPUTE_32F keeps f32 inputs in full f32 (no TF32, which is 77).
enum cublasComputeType_t : int {
  CUBLAS_COMPUTE_32F = 68,
};

// ---- cudaDataType_t ([libtypes], CUDA 13.0) ---------------------------------
enum cudaDataType_t : int {
  CUDA_R_32F = 0,
  CUDA_R_16F = 2,
  CUDA_R_16BF = 14,
};

// ---- cublasOperation_t ([nvmath] cublas.Operation; [lt.h] via cublas_api.h) -
enum cublasOperation_t : int {
  CUBLAS_OP_N = 0,
  CUBLAS_OP_T = 1,
};

// ---- cublasLtMatmulDescAttributes_t ([lt.h]; [nvmath] MatmulDescAttribute) --
// Both attributes take an int32_t holding a cublasOperation_t ([lt.h]: "Transform
// of matrix A, see cublasOperation_t. int32_t, default: CUBLAS_OP_N").
enum cublasLtMatmulDescAttributes_t : int {
  CUBLASLT_MATMUL_DESC_TRANSA = 3,
  CUBLASLT_MATMUL_DESC_TRANSB = 4,
};

// ---- cublasLtMatmulPreferenceAttributes_t ([lt.h]; [nvmath]) ----------------
// Takes a uint64_t ([lt.h]: "Maximum allowed workspace size in bytes. uint64_t,
// default: 0 - no workspace allowed"). 1, not 0 (0 is SEARCH_MODE).
enum cublasLtMatmulPreferenceAttributes_t : int {
  CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,
};
using MatmulTransAttr = std::int32_t;          // the C type of TRANSA / TRANSB
using MaxWorkspaceBytesAttr = std::uint64_t;   // the C type of MAX_WORKSPACE_BYTES

// ---- opaque objects ([lt.h]) --------------------------------------------------
// cublasLtHandle_t is `struct cublasLtContext*`; the descriptors are pointers to
// "semi-opaque" structs whose sizes change between releases (the desc is
// uint64_t[12] in 11.x and larger since). We only ever hold the pointers that
// the *Create functions return (never the *Init variants, which would need the
// size), so incomplete types are exact.
struct cublasLtContext;
struct cublasLtMatmulDescOpaque;
struct cublasLtMatrixLayoutOpaque;
struct cublasLtMatmulPreferenceOpaque;
using cublasLtHandle_t = cublasLtContext*;
using cublasLtMatmulDesc_t = cublasLtMatmulDescOpaque*;
using cublasLtMatrixLayout_t = cublasLtMatrixLayoutOpaque*;
using cublasLtMatmulPreference_t = cublasLtMatmulPreferenceOpaque*;
// cudaStream_t is `struct CUstream_st*` (driver_types.h); any object pointer has
// the same ABI, and our API takes the stream as void*.
using cudaStream_t = void*;

// ---- cublasLtMatmulAlgo_t ([lt.h]: `typedef struct { uint64_t data[8]; }`;
// [nvmath] MatmulAlgo: data_ is an array of length 8 of uint64) ---------------
struct cublasLtMatmulAlgo_t {
  std::uint64_t data[8];
};
static_assert(sizeof(cublasLtMatmulAlgo_t) == 64);
static_assert(alignof(cublasLtMatmulAlgo_t) == 8);

// ---- cublasLtMatmulHeuristicResult_t ([lt.h]; [nvmath] MatmulHeuristicResult)
//   cublasLtMatmulAlgo_t algo; size_t workspaceSize; cublasStatus_t state;
//   float wavesCount; int reserved[4];
// 64 + 8 + 4 + 4 + 16 = 96 bytes. Hand-written versions get this wrong by
// declaring `algo` as a pointer or dropping `reserved` (88 bytes): the library
// then writes past the caller's array.
struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  std::size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};
static_assert(sizeof(cublasLtMatmulHeuristicResult_t) == 96);
static_assert(alignof(cublasLtMatmulHeuristicResult_t) == 8);
static_assert(offsetof(cublasLtMatmulHeuristicResult_t, algo) == 0);
static_assert(offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize) == 64);
static_assert(offsetof(cublasLtMatmulHeuristicResult_t, state) == 72);
static_assert(offsetof(cublasLtMatmulHeuristicResult_t, wavesCount) == 76);
static_assert(offsetof(cublasLtMatmulHeuristicResult_t, reserved) == 80);
static_assert(std::is_standard_layout_v<cublasLtMatmulHeuristicResult_t> &&
              std::is_trivially_copyable_v<cublasLtMatmulHeuristicResult_t>);

// C enums are passed as 32-bit integers on x86-64 and aarch64 Linux; ours must be
// the same size (the state field above, and every by-value parameter).
static_assert(sizeof(cublasStatus_t) == 4 && sizeof(cublasComputeType_t) == 4 && sizeof(cudaDataType_t) == 4 &&
              sizeof(cublasOperation_t) == 4 && sizeof(cublasLtMatmulDescAttributes_t) == 4 &&
              sizeof(cublasLtMatmulPreferenceAttributes_t) == 4);
static_assert(sizeof(void*) == 8, "the declarations assume a 64-bit Linux ABI (size_t and pointers are 8 bytes)");

// ---- functions ([lt.h], unchanged in 12.x/13.x per [nvmath]'s signatures) ---
extern "C" {
using PFN_cublasLtCreate = cublasStatus_t (*)(cublasLtHandle_t* lightHandle);
using PFN_cublasLtDestroy = cublasStatus_t (*)(cublasLtHandle_t lightHandle);
using PFN_cublasLtGetVersion = std::size_t (*)(void);
using PFN_cublasLtMatmulDescCreate = cublasStatus_t (*)(cublasLtMatmulDesc_t* matmulDesc,
                                                        cublasComputeType_t computeType,
                                                        cudaDataType_t scaleType);
using PFN_cublasLtMatmulDescDestroy = cublasStatus_t (*)(cublasLtMatmulDesc_t matmulDesc);
using PFN_cublasLtMatmulDescSetAttribute = cublasStatus_t (*)(cublasLtMatmulDesc_t matmulDesc,
                                                              cublasLtMatmulDescAttributes_t attr,
                                                              const void* buf, std::size_t sizeInBytes);
using PFN_cublasLtMatrixLayoutCreate = cublasStatus_t (*)(cublasLtMatrixLayout_t* matLayout, cudaDataType_t type,
                                                          std::uint64_t rows, std::uint64_t cols, std::int64_t ld);
using PFN_cublasLtMatrixLayoutDestroy = cublasStatus_t (*)(cublasLtMatrixLayout_t matLayout);
using PFN_cublasLtMatmulPreferenceCreate = cublasStatus_t (*)(cublasLtMatmulPreference_t* pref);
using PFN_cublasLtMatmulPreferenceDestroy = cublasStatus_t (*)(cublasLtMatmulPreference_t pref);
using PFN_cublasLtMatmulPreferenceSetAttribute = cublasStatus_t (*)(cublasLtMatmulPreference_t pref,
                                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                                    const void* buf, std::size_t sizeInBytes);
using PFN_cublasLtMatmulAlgoGetHeuristic = cublasStatus_t (*)(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc,
    cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t preference, int requestedAlgoCount,
    cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int* returnAlgoCount);
using PFN_cublasLtMatmul = cublasStatus_t (*)(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
                                              const void* alpha, const void* A, cublasLtMatrixLayout_t Adesc,
                                              const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,
                                              const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo,
                                              void* workspace, std::size_t workspaceSizeInBytes,
                                              cudaStream_t stream);
}

// "CUBLAS_STATUS_NOT_SUPPORTED (15)"; an unknown value prints as "cublasStatus_t 42".
inline std::string status_name(int status) {
  const char* name = nullptr;
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: name = "CUBLAS_STATUS_SUCCESS"; break;
    case CUBLAS_STATUS_NOT_INITIALIZED: name = "CUBLAS_STATUS_NOT_INITIALIZED"; break;
    case CUBLAS_STATUS_ALLOC_FAILED: name = "CUBLAS_STATUS_ALLOC_FAILED"; break;
    case CUBLAS_STATUS_INVALID_VALUE: name = "CUBLAS_STATUS_INVALID_VALUE"; break;
    case CUBLAS_STATUS_ARCH_MISMATCH: name = "CUBLAS_STATUS_ARCH_MISMATCH"; break;
    case CUBLAS_STATUS_MAPPING_ERROR: name = "CUBLAS_STATUS_MAPPING_ERROR"; break;
    case CUBLAS_STATUS_EXECUTION_FAILED: name = "CUBLAS_STATUS_EXECUTION_FAILED"; break;
    case CUBLAS_STATUS_INTERNAL_ERROR: name = "CUBLAS_STATUS_INTERNAL_ERROR"; break;
    case CUBLAS_STATUS_NOT_SUPPORTED: name = "CUBLAS_STATUS_NOT_SUPPORTED"; break;
    case CUBLAS_STATUS_LICENSE_ERROR: name = "CUBLAS_STATUS_LICENSE_ERROR"; break;
    default: return "cublasStatus_t " + std::to_string(status);
  }
  return std::string(name) + " (" + std::to_string(status) + ")";
}

}  // namespace ot_cuda::cublaslt_api

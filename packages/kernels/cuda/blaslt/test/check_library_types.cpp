// Built only where the CUDA toolkit's library_types.h is found (CMakeLists.txt):
// our cudaDataType_t values must be the toolkit's. The cuBLAS enums have no
// header on these machines; their values are pinned in cublaslt_api.h with
// their documentation sources, and by value in test_blaslt.cpp's call logs.
#include <library_types.h>

#include "../../test/check.h"
#include "../cublaslt_api.h"

namespace api = ot_cuda::cublaslt_api;

static_assert(static_cast<int>(api::CUDA_R_32F) == static_cast<int>(::CUDA_R_32F));
static_assert(static_cast<int>(api::CUDA_R_16F) == static_cast<int>(::CUDA_R_16F));
static_assert(static_cast<int>(api::CUDA_R_16BF) == static_cast<int>(::CUDA_R_16BF));
static_assert(sizeof(api::cudaDataType_t) == sizeof(::cudaDataType_t));

TEST(blaslt_data_types_match_the_cuda_toolkit_header) {
  // The checks are the static_asserts above; this records that they were compiled.
  std::printf("    checked against %s/library_types.h\n", OT_CUDA_LIBRARY_TYPES_DIR);
  CHECK_EQ(static_cast<int>(api::CUDA_R_16BF), static_cast<int>(::CUDA_R_16BF));
}

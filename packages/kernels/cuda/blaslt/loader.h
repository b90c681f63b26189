// cuBLASLt, loaded at run time (dlopen), for the dense products on a device.
//
//   auto opened = ot_cuda::blaslt::Blaslt::open();        // never aborts
//   if (!opened) { log(opened.error); use our own GEMM; }
//   Status s = opened.blaslt->gemm({.dtype = DType::bf16, .m = m, .n = n, .k = k,
//                                   .a = x, .b = w, .c = y, .workspace = ws,
//                                   .workspace_bytes = ws_bytes, .stream = stream});
//
// The library is `libcublasLt.so.13`, then `libcublasLt.so.12`, or exactly the
// path in OT_CUBLASLT_LIBRARY when that is set (tests, odd installs). Every
// failure is a one-line message naming what was tried; nothing here aborts or
// throws. Only pointers to device memory are handled: this file needs neither
// the CUDA runtime nor a GPU to build, and is tested against a fake library
// (blaslt/test/fake_cublaslt.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cublaslt_api.h"

namespace ot_cuda::blaslt {

inline constexpr const char* kLibraryEnv = "OT_CUBLASLT_LIBRARY";

// The result of an operation: ok, or a one-line message.
struct Status {
  std::string error;
  bool ok() const { return error.empty(); }
  static Status success() { return {}; }
  static Status failure(std::string message) { return {std::move(message)}; }
};

// The dlopen'ed library and every function we use.
struct Library {
  void* handle = nullptr;
  std::string path;  // the name that dlopen succeeded with
  cublaslt_api::PFN_cublasLtCreate create = nullptr;
  cublaslt_api::PFN_cublasLtDestroy destroy = nullptr;
  cublaslt_api::PFN_cublasLtGetVersion get_version = nullptr;
  cublaslt_api::PFN_cublasLtMatmulDescCreate desc_create = nullptr;
  cublaslt_api::PFN_cublasLtMatmulDescDestroy desc_destroy = nullptr;
  cublaslt_api::PFN_cublasLtMatmulDescSetAttribute desc_set_attribute = nullptr;
  cublaslt_api::PFN_cublasLtMatrixLayoutCreate layout_create = nullptr;
  cublaslt_api::PFN_cublasLtMatrixLayoutDestroy layout_destroy = nullptr;
  cublaslt_api::PFN_cublasLtMatmulPreferenceCreate preference_create = nullptr;
  cublaslt_api::PFN_cublasLtMatmulPreferenceDestroy preference_destroy = nullptr;
  cublaslt_api::PFN_cublasLtMatmulPreferenceSetAttribute preference_set_attribute = nullptr;
  cublaslt_api::PFN_cublasLtMatmulAlgoGetHeuristic algo_get_heuristic = nullptr;
  cublaslt_api::PFN_cublasLtMatmul matmul = nullptr;

  Library() = default;
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  ~Library();  // dlclose

  // The names tried, in order: OT_CUBLASLT_LIBRARY alone when set and not
  // empty, else libcublasLt.so.13 then libcublasLt.so.12.
  static std::vector<std::string> default_candidates();
  // Loads the first candidate that dlopens; a library lacking a symbol is an
  // error (not a reason to try the next: an incomplete cuBLASLt is a broken
  // install worth reporting). nullptr with `error` set on failure.
  static std::unique_ptr<Library> load(const std::vector<std::string>& candidates, std::string& error);
};

enum class DType {
  f32,   // f32 inputs, f32 output, f32 compute (CUBLAS_COMPUTE_32F: no TF32)
  bf16,  // bf16 inputs, f32 output, f32 accumulation (CUBLAS_COMPUTE_32F)
};

// C[m,n] = alpha * op(A) · op(B) + beta * C, all ROW-MAJOR, C always f32.
// The default (trans_a = false, trans_b = true) is our `linear`: y = x·Wᵀ with
// A = x[m,k] and B = W[n,k]. Leading dimensions are row strides in elements; 0
// means contiguous (the stored row length). With beta = 0, C is not read.
struct Gemm {
  DType dtype = DType::f32;
  std::int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;  // [m,k], or [k,m] when trans_a
  const void* b = nullptr;  // [n,k] when trans_b (default), or [k,n]
  void* c = nullptr;        // [m,n] f32
  bool trans_a = false;
  bool trans_b = true;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  float alpha = 1.0f, beta = 0.0f;
  void* workspace = nullptr;  // device memory, may be null when workspace_bytes is 0
  std::size_t workspace_bytes = 0;
  void* stream = nullptr;  // a cudaStream_t; null is the legacy default stream
};

class Blaslt {
 public:
  struct Opened {
    std::unique_ptr<Blaslt> blaslt;
    std::string error;  // set when blaslt is null
    explicit operator bool() const { return blaslt != nullptr; }
  };
  // Loads the library (Library::default_candidates()) and creates a handle.
  static Opened open();
  static Opened open(std::unique_ptr<Library> library);

  Blaslt(const Blaslt&) = delete;
  Blaslt& operator=(const Blaslt&) = delete;
  ~Blaslt();  // cublasLtDestroy, then dlclose

  const std::string& library_path() const { return library_->path; }
  std::size_t version() const { return version_; }  // cublasLtGetVersion(): 130001 is 13.0.1

  // Enqueues the product on g.stream. Creates the matmul descriptor, three
  // layouts and a preference (max workspace = g.workspace_bytes), asks the
  // heuristic for one algorithm, runs cublasLtMatmul, destroys what it created
  // (on every path), and says which call failed, with what, on which shape.
  Status gemm(const Gemm& g) const;

 private:
  Blaslt(std::unique_ptr<Library> library, cublaslt_api::cublasLtHandle_t handle, std::size_t version)
      : library_(std::move(library)), handle_(handle), version_(version) {}
  std::unique_ptr<Library> library_;
  cublaslt_api::cublasLtHandle_t handle_;
  std::size_t version_;
};

}  // namespace ot_cuda::blaslt

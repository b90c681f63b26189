// cuBLASLt through dlopen: see loader.h.
#include "loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <type_traits>

namespace ot_cuda::blaslt {

namespace api = cublaslt_api;

namespace {

// dlerror() text on one line (it has none of its own, but be sure).
std::string one_line(const char* text) {
  std::string s = text != nullptr ? text : "unknown dlopen error";
  for (char& ch : s)
    if (ch == '\n' || ch == '\r') ch = ' ';
  return s;
}

template <class F>
bool resolve(void* handle, const char* name, F& out, std::string& missing) {
  dlerror();
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) {
    missing += missing.empty() ? name : std::string(", ") + name;
    return false;
  }
  out = reinterpret_cast<F>(symbol);
  return true;
}

}  // namespace

Library::~Library() {
  if (handle != nullptr) dlclose(handle);
}

std::vector<std::string> Library::default_candidates() {
  const char* forced = std::getenv(kLibraryEnv);
  if (forced != nullptr && forced[0] != '\0') return {forced};
  return {"libcublasLt.so.13", "libcublasLt.so.12"};
}

std::unique_ptr<Library> Library::load(const std::vector<std::string>& candidates, std::string& error) {
  error.clear();
  std::string tried;
  for (const std::string& name : candidates) {
    dlerror();
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      tried += (tried.empty() ? "" : "; ") + one_line(dlerror());
      continue;
    }
    auto lib = std::make_unique<Library>();
    lib->handle = handle;
    lib->path = name;
    std::string missing;
    resolve(handle, "cublasLtCreate", lib->create, missing);
    resolve(handle, "cublasLtDestroy", lib->destroy, missing);
    resolve(handle, "cublasLtGetVersion", lib->get_version, missing);
    resolve(handle, "cublasLtMatmulDescCreate", lib->desc_create, missing);
    resolve(handle, "cublasLtMatmulDescDestroy", lib->desc_destroy, missing);
    resolve(handle, "cublasLtMatmulDescSetAttribute", lib->desc_set_attribute, missing);
    resolve(handle, "cublasLtMatrixLayoutCreate", lib->layout_create, missing);
    resolve(handle, "cublasLtMatrixLayoutDestroy", lib->layout_destroy, missing);
    resolve(handle, "cublasLtMatmulPreferenceCreate", lib->preference_create, missing);
    resolve(handle, "cublasLtMatmulPreferenceDestroy", lib->preference_destroy, missing);
    resolve(handle, "cublasLtMatmulPreferenceSetAttribute", lib->preference_set_attribute, missing);
    resolve(handle, "cublasLtMatmulAlgoGetHeuristic", lib->algo_get_heuristic, missing);
    resolve(handle, "cublasLtMatmul", lib->matmul, missing);
    if (!missing.empty()) {
      error = "cuBLASLt: " + name + " lacks symbol " + missing + " (not a usable cuBLASLt 12/13)";
      return nullptr;  // ~Library closes it
    }
    return lib;
  }
  if (candidates.empty()) {
    error = "cuBLASLt: no library name to try";
  } else {
    const char* forced = std::getenv(kLibraryEnv);
    const bool from_env = forced != nullptr && forced[0] != '\0' && candidates.size() == 1 && candidates[0] == forced;
    error = "cuBLASLt not loaded: " + tried +
            (from_env ? std::string(" (path from ") + kLibraryEnv + ")"
                      : std::string(" (set ") + kLibraryEnv + " to its path if it is installed elsewhere)");
  }
  return nullptr;
}

Blaslt::Opened Blaslt::open() {
  std::string error;
  auto library = Library::load(Library::default_candidates(), error);
  if (library == nullptr) return {nullptr, error};
  return open(std::move(library));
}

Blaslt::Opened Blaslt::open(std::unique_ptr<Library> library) {
  if (library == nullptr) return {nullptr, "cuBLASLt: no library"};
  const std::size_t version = library->get_version();
  api::cublasLtHandle_t handle = nullptr;
  const api::cublasStatus_t status = library->create(&handle);
  if (status != api::CUBLAS_STATUS_SUCCESS || handle == nullptr) {
    return {nullptr, "cuBLASLt " + library->path + " (version " + std::to_string(version) +
                         "): cublasLtCreate failed: " + api::status_name(status) +
                         (status == api::CUBLAS_STATUS_SUCCESS ? " but returned no handle" : "")};
  }
  return {std::unique_ptr<Blaslt>(new Blaslt(std::move(library), handle, version)), {}};
}

Blaslt::~Blaslt() {
  if (handle_ != nullptr) library_->destroy(handle_);
}

namespace {

// What one gemm call created; destroyed in reverse order on every path.
struct Created {
  api::cublasLtMatmulDesc_t desc = nullptr;
  api::cublasLtMatrixLayout_t layout_a = nullptr, layout_b = nullptr, layout_c = nullptr;
  api::cublasLtMatmulPreference_t preference = nullptr;
};

const char* dtype_name(DType d) { return d == DType::bf16 ? "bf16" : "f32"; }

}  // namespace

// ---------------------------------------------------------------------------
// Row-major → column-major. cuBLASLt is column-major ([cublas] "Data Layout"):
// it computes D = op_A(A')·op_B(B') where a layout (rows, cols, ld) describes
// A' as stored. A row-major X[r,c] with row stride ld is, byte for byte, the
// column-major matrix Xᵀ of shape [c×r] with the same ld. So the row-major
//   C[m,n] = op(A)·op(B)     is the column-major     Cᵀ[n×m] = op(B)ᵀ·op(A)ᵀ,
// and we call cuBLASLt with its A' = our B, its B' = our A, its D = our C:
//   A' (our B) stored as [k×n] when trans_b (B is [n,k]) else [n×k]; ld = ldb;
//       we need op_A(A') = op(B)ᵀ = [n×k], so TRANSA = trans_b ? T : N;
//   B' (our A) stored as [k×m] unless trans_a (A is [k,m]: [m×k]); ld = lda;
//       we need op_B(B') = op(A)ᵀ = [k×m], so TRANSB = trans_a ? T : N;
//   D (our C) [n×m], ld = ldc; cuBLASLt's (m, n, k) are our (n, m, k).
// Our `linear` (y = x·Wᵀ: trans_a = false, trans_b = true) is therefore
// TRANSA = T, TRANSB = N with A' = W as [k×n] (ld k), B' = x as [k×m] (ld k),
// D = y as [n×m] (ld n): the "TN" form (the one cuBLASLt requires for its
// 8-bit types; bf16 and f32 take all four).
// ---------------------------------------------------------------------------
Status Blaslt::gemm(const Gemm& g) const {
  const auto& lib = *library_;
  const std::int64_t a_cols = g.trans_a ? g.m : g.k;  // row length of A as stored
  const std::int64_t b_cols = g.trans_b ? g.k : g.n;  // row length of B as stored
  const std::int64_t lda = g.lda != 0 ? g.lda : a_cols;
  const std::int64_t ldb = g.ldb != 0 ? g.ldb : b_cols;
  const std::int64_t ldc = g.ldc != 0 ? g.ldc : g.n;
  const std::string shape = std::string("cuBLASLt ") + dtype_name(g.dtype) + " gemm m=" + std::to_string(g.m) +
                            " n=" + std::to_string(g.n) + " k=" + std::to_string(g.k) + " (" +
                            (g.trans_a ? "T" : "N") + (g.trans_b ? "T" : "N") + " row-major, lda=" +
                            std::to_string(lda) + " ldb=" + std::to_string(ldb) + " ldc=" + std::to_string(ldc) +
                            ", workspace " + std::to_string(g.workspace_bytes) + " bytes)";
  auto fail = [&](const std::string& what) { return Status::failure(shape + ": " + what); };

  if (g.m < 0 || g.n < 0 || g.k < 0) return fail("negative dimension");
  if (g.m == 0 || g.n == 0) return Status::success();  // nothing to write
  if (g.k == 0) return fail("k must be positive");
  if (lda < a_cols || ldb < b_cols || ldc < g.n) return fail("a leading dimension is smaller than its row");
  if (g.a == nullptr || g.b == nullptr || g.c == nullptr) return fail("null matrix pointer");
  if (g.workspace == nullptr && g.workspace_bytes != 0) return fail("null workspace with a nonzero size");

  const api::cudaDataType_t ab_type = g.dtype == DType::bf16 ? api::CUDA_R_16BF : api::CUDA_R_32F;
  const api::cudaDataType_t c_type = api::CUDA_R_32F;
  const api::cudaDataType_t scale_type = api::CUDA_R_32F;  // alpha and beta are float
  const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };

  Created made;
  auto run = [&]() -> Status {
    auto check = [&](const char* what, api::cublasStatus_t status) -> Status {
      if (status == api::CUBLAS_STATUS_SUCCESS) return Status::success();
      return fail(std::string(what) + " failed: " + api::status_name(status));
    };
    // Fills `slot` only when the create succeeds (whatever a failing one
    // writes), so that only what was really created gets destroyed.
    auto create = [&](const char* what, auto& slot, auto&& create_into) -> Status {
      std::remove_reference_t<decltype(slot)> out = nullptr;
      const api::cublasStatus_t status = create_into(&out);
      if (status == api::CUBLAS_STATUS_SUCCESS) slot = out;
      return check(what, status);
    };
    const api::MatmulTransAttr transa = g.trans_b ? api::CUBLAS_OP_T : api::CUBLAS_OP_N;
    const api::MatmulTransAttr transb = g.trans_a ? api::CUBLAS_OP_T : api::CUBLAS_OP_N;
    const api::MaxWorkspaceBytesAttr max_workspace = g.workspace_bytes;
    // cuBLASLt's A' is our B, its B' our A (see above); rows and cols as stored.
    if (Status s = create("cublasLtMatmulDescCreate", made.desc,
                          [&](auto* p) { return lib.desc_create(p, api::CUBLAS_COMPUTE_32F, scale_type); });
        !s.ok())
      return s;
    if (Status s = check("cublasLtMatmulDescSetAttribute(TRANSA)",
                         lib.desc_set_attribute(made.desc, api::CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
        !s.ok())
      return s;
    if (Status s = check("cublasLtMatmulDescSetAttribute(TRANSB)",
                         lib.desc_set_attribute(made.desc, api::CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb));
        !s.ok())
      return s;
    if (Status s = create("cublasLtMatrixLayoutCreate(A)", made.layout_a,
                          [&](auto* p) { return lib.layout_create(p, ab_type, u(b_cols), u(g.trans_b ? g.n : g.k), ldb); });
        !s.ok())
      return s;
    if (Status s = create("cublasLtMatrixLayoutCreate(B)", made.layout_b,
                          [&](auto* p) { return lib.layout_create(p, ab_type, u(a_cols), u(g.trans_a ? g.k : g.m), lda); });
        !s.ok())
      return s;
    if (Status s = create("cublasLtMatrixLayoutCreate(C/D)", made.layout_c,
                          [&](auto* p) { return lib.layout_create(p, c_type, u(g.n), u(g.m), ldc); });
        !s.ok())
      return s;
    if (Status s = create("cublasLtMatmulPreferenceCreate", made.preference,
                          [&](auto* p) { return lib.preference_create(p); });
        !s.ok())
      return s;
    if (Status s = check("cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)",
                         lib.preference_set_attribute(made.preference, api::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                      &max_workspace, sizeof max_workspace));
        !s.ok())
      return s;

    api::cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    if (Status s = check("cublasLtMatmulAlgoGetHeuristic",
                         lib.algo_get_heuristic(handle_, made.desc, made.layout_a, made.layout_b, made.layout_c,
                                                made.layout_c, made.preference, 1, &result, &found));
        !s.ok())
      return s;
    if (found < 1) return fail("cublasLtMatmulAlgoGetHeuristic found no algorithm for this shape and workspace");
    if (result.state != api::CUBLAS_STATUS_SUCCESS)
      return fail("cublasLtMatmulAlgoGetHeuristic returned an algorithm in state " + api::status_name(result.state));
    if (result.workspaceSize > g.workspace_bytes)
      return fail("cublasLtMatmulAlgoGetHeuristic chose an algorithm needing " +
                  std::to_string(result.workspaceSize) + " workspace bytes, over the limit");

    // C and D are the same matrix (in place; with beta = 0 C is not read).
    return check("cublasLtMatmul",
                lib.matmul(handle_, made.desc, &g.alpha, g.b, made.layout_a, g.a, made.layout_b, &g.beta, g.c,
                           made.layout_c, g.c, made.layout_c, &result.algo, g.workspace, g.workspace_bytes,
                           g.stream));
  };
  const Status result = run();

  // Destroy everything created, in reverse, whatever happened; a failing
  // destroy is reported only when nothing failed before it.
  Status destroyed;
  auto destroy = [&](const char* what, api::cublasStatus_t status) {
    if (status != api::CUBLAS_STATUS_SUCCESS && destroyed.ok())
      destroyed = fail(std::string(what) + " failed: " + api::status_name(status));
  };
  if (made.preference != nullptr)
    destroy("cublasLtMatmulPreferenceDestroy", lib.preference_destroy(made.preference));
  if (made.layout_c != nullptr) destroy("cublasLtMatrixLayoutDestroy(C/D)", lib.layout_destroy(made.layout_c));
  if (made.layout_b != nullptr) destroy("cublasLtMatrixLayoutDestroy(B)", lib.layout_destroy(made.layout_b));
  if (made.layout_a != nullptr) destroy("cublasLtMatrixLayoutDestroy(A)", lib.layout_destroy(made.layout_a));
  if (made.desc != nullptr) destroy("cublasLtMatmulDescDestroy", lib.desc_destroy(made.desc));
  return result.ok() ? destroyed : result;
}

}  // namespace ot_cuda::blaslt

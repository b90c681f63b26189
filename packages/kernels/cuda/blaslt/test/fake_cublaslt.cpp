// A fake libcublasLt.so.13 for the loader's tests (built by CMakeLists.txt as
// a shared library). It exports every cuBLASLt function blaslt/loader.cpp loads,
// with the same signatures, computes nothing, and instead
//   - logs each call on one line with its arguments by value (types, dims,
//     leading dims, attribute values and their byte sizes, pointers, the
//     objects passed by their names: H1 handle, D1 matmul desc, L1.. layouts,
//     P1 preference, A1.. algorithms it returned);
//   - tracks the objects it created: using or destroying one that is not live
//     (never created, already destroyed) is CUBLAS_STATUS_INVALID_VALUE and is
//     logged as `?`;
//   - checks what the real library checks and we could get wrong: attribute
//     buffer sizes (TRANSA/TRANSB are int32_t, MAX_WORKSPACE_BYTES uint64_t),
//     requestedAlgoCount >= 1, matmul workspace >= the algorithm's need;
//   - can be told to fail a given call (by position or by function name);
//   - on request, computes cuBLAS's column-major product on host pointers, so
//     the row-major mapping is checked by value, not only by its arguments.
// The heuristic result is written through the byte offsets of the documented
// cublasLtMatmulHeuristicResult_t (not through our header's struct), so a wrong
// layout in cublaslt_api.h shows in the tests. The test drives it through the
// fake_cublaslt_* functions at the end, found with dlsym on the same file.
//
// With OT_FAKE_CUBLASLT_LACK_MATMUL defined it lacks cublasLtMatmul (the
// loader must then refuse it, naming the symbol).
#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "../cublaslt_api.h"

namespace api = ot_cuda::cublaslt_api;

namespace {

struct Object {
  char kind;  // 'H' handle, 'D' desc, 'L' layout, 'P' preference
  int id;
  int scale_type = -1;        // desc: CUDA_R_32F (0) means alpha/beta are floats
  int transa = 0, transb = 0;  // desc: CUBLAS_OP_N (0) unless set
  int type = -1;              // layout
  std::uint64_t rows = 0, cols = 0;
  std::int64_t ld = 0;
};

struct State {
  std::string log;
  std::map<const void*, Object*> live;  // created, not destroyed
  std::map<char, int> counters;
  int calls = 0;
  int fail_index = -1, fail_index_status = 0;
  std::string fail_name;
  int fail_name_status = 0;
  int heuristic_count = 1, heuristic_state = 0;
  std::uint64_t heuristic_workspace = 1024;
  std::vector<std::uint64_t> algos;  // data[0] of the algorithms returned, A1 first
  bool compute = false;              // cublasLtMatmul computes on host pointers
  std::string snapshot;              // what fake_cublaslt_log/live returned last
};

State& st() {
  static State s;
  return s;
}

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return buf;
}

// Starts a call: returns the injected failure status, or 0.
int begin(const char* name) {
  State& s = st();
  const int index = s.calls++;
  if (index == s.fail_index) {
    s.fail_index = -1;
    return s.fail_index_status;
  }
  if (!s.fail_name.empty() && s.fail_name == name) {
    s.fail_name.clear();
    return s.fail_name_status;
  }
  return 0;
}

void log_line(const std::string& line, int status) {
  st().log += line;
  if (status != 0) st().log += format(" -> %d", status);
  st().log += '\n';
}

Object* find(const void* p, char kind) {
  auto it = st().live.find(p);
  return it != st().live.end() && it->second->kind == kind ? it->second : nullptr;
}
std::string name(const void* p, char kind) {
  const Object* o = find(p, kind);
  return o != nullptr ? format("%c%d", o->kind, o->id) : std::string("?");
}

template <class T>
api::cublasStatus_t create(T* out, char kind, const char* fn, const std::string& args, Object** made = nullptr) {
  const int fail = begin(fn);
  if (fail != 0) {
    // A failed create leaves garbage behind: the caller must not destroy it.
    if (out != nullptr) *out = reinterpret_cast<T>(std::uintptr_t{0xdead0000});
    log_line(std::string(fn) + args, fail);
    return static_cast<api::cublasStatus_t>(fail);
  }
  if (out == nullptr) {
    log_line(std::string(fn) + " null-out" + args, api::CUBLAS_STATUS_INVALID_VALUE);
    return api::CUBLAS_STATUS_INVALID_VALUE;
  }
  auto* o = new Object{kind, ++st().counters[kind]};
  st().live[o] = o;
  *out = reinterpret_cast<T>(o);
  if (made != nullptr) *made = o;
  log_line(format("%s %c%d", fn, kind, o->id) + args, 0);
  return api::CUBLAS_STATUS_SUCCESS;
}

api::cublasStatus_t destroy(const void* p, char kind, const char* fn) {
  const int fail = begin(fn);
  Object* o = find(p, kind);
  const std::string n = name(p, kind);
  int status = fail;
  if (status == 0 && o == nullptr) status = api::CUBLAS_STATUS_INVALID_VALUE;
  log_line(std::string(fn) + " " + n, status);
  if (status != 0) return static_cast<api::cublasStatus_t>(status);
  st().live.erase(p);
  delete o;
  return api::CUBLAS_STATUS_SUCCESS;
}

// "size=4 value=1" for a 4- or 8-byte attribute; the status is INVALID_VALUE
// when the size is not the documented one.
std::string attribute(const void* buf, std::size_t size, std::size_t expected, int& status) {
  std::string s = format(" size=%zu", size);
  if (buf == nullptr) {
    status = api::CUBLAS_STATUS_INVALID_VALUE;
    return s + " value=null";
  }
  if (size == 4) {
    std::int32_t v;
    std::memcpy(&v, buf, 4);
    s += format(" value=%d", v);
  } else if (size == 8) {
    std::uint64_t v;
    std::memcpy(&v, buf, 8);
    s += format(" value=%llu", static_cast<unsigned long long>(v));
  }
  if (size != expected) status = api::CUBLAS_STATUS_INVALID_VALUE;
  return s;
}

[[maybe_unused]] std::string scalar(const void* p, const Object* desc) {
  if (p == nullptr) return "null";
  if (desc == nullptr || desc->scale_type != 0) return "?";
  float v;
  std::memcpy(&v, p, sizeof v);
  return format("%g", static_cast<double>(v));
}

float load(const void* p, int type, std::int64_t index) {
  if (type == 14) {  // CUDA_R_16BF: the high half of an f32
    std::uint16_t h;
    std::memcpy(&h, static_cast<const unsigned char*>(p) + 2 * index, 2);
    const std::uint32_t bits = std::uint32_t{h} << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  float f;
  std::memcpy(&f, static_cast<const unsigned char*>(p) + 4 * index, 4);
  return f;
}

// cuBLAS's definition, column-major: D = alpha * op(A)·op(B) + beta * C with
// op(X) = X or Xᵀ per TRANSA/TRANSB, X(i, j) at X[i + j * ld], shapes from the
// layouts as stored ([cublas] cublasLtMatmul). Only f32 / bf16 inputs, f32 C/D,
// float scale. Returns INVALID_VALUE on any inconsistency.
[[maybe_unused]] int host_matmul(const Object& desc, const Object& la, const Object& lb, const Object& lc, const Object& ldd,
                const void* alpha, const void* A, const void* B, const void* beta, const void* C, void* D) {
  if (desc.scale_type != 0 || ldd.type != 0 || lc.type != 0 || la.type != lb.type || (la.type != 0 && la.type != 14))
    return api::CUBLAS_STATUS_INVALID_VALUE;
  const std::uint64_t m = ldd.rows, n = ldd.cols;
  const std::uint64_t am = desc.transa ? la.cols : la.rows, k = desc.transa ? la.rows : la.cols;
  const std::uint64_t bk = desc.transb ? lb.cols : lb.rows, bn = desc.transb ? lb.rows : lb.cols;
  if (am != m || bk != k || bn != n || lc.rows != m || lc.cols != n || lc.ld != ldd.ld) return api::CUBLAS_STATUS_INVALID_VALUE;
  for (const Object* l : {&la, &lb, &lc, &ldd})
    if (l->ld < static_cast<std::int64_t>(l->rows)) return api::CUBLAS_STATUS_INVALID_VALUE;
  float al, be;
  std::memcpy(&al, alpha, 4);
  std::memcpy(&be, beta, 4);
  auto* out = static_cast<float*>(D);
  for (std::uint64_t j = 0; j < n; ++j)
    for (std::uint64_t i = 0; i < m; ++i) {
      double acc = 0;
      for (std::uint64_t l = 0; l < k; ++l) {
        const std::int64_t ia = desc.transa ? l + i * la.ld : i + l * la.ld;
        const std::int64_t ib = desc.transb ? j + l * lb.ld : l + j * lb.ld;
        acc += static_cast<double>(load(A, la.type, ia)) * load(B, lb.type, ib);
      }
      const double c = be != 0.0f ? load(C, 0, i + j * lc.ld) : 0.0;
      out[i + j * ldd.ld] = static_cast<float>(al * acc + be * c);
    }
  return 0;
}

}  // namespace

extern "C" {

std::size_t cublasLtGetVersion(void) {
  const int fail = begin("cublasLtGetVersion");
  log_line("cublasLtGetVersion", 0);
  (void)fail;  // cannot fail
  return 130002;
}

api::cublasStatus_t cublasLtCreate(api::cublasLtHandle_t* handle) {
  return create(handle, 'H', "cublasLtCreate", "");
}

api::cublasStatus_t cublasLtDestroy(api::cublasLtHandle_t handle) {
  return destroy(handle, 'H', "cublasLtDestroy");
}

api::cublasStatus_t cublasLtMatmulDescCreate(api::cublasLtMatmulDesc_t* desc, api::cublasComputeType_t compute,
                                             api::cudaDataType_t scale) {
  Object* made = nullptr;
  const auto status = create(desc, 'D', "cublasLtMatmulDescCreate",
                             format(" compute=%d scale=%d", static_cast<int>(compute), static_cast<int>(scale)), &made);
  if (made != nullptr) made->scale_type = scale;
  return status;
}

api::cublasStatus_t cublasLtMatmulDescDestroy(api::cublasLtMatmulDesc_t desc) {
  return destroy(desc, 'D', "cublasLtMatmulDescDestroy");
}

api::cublasStatus_t cublasLtMatmulDescSetAttribute(api::cublasLtMatmulDesc_t desc,
                                                   api::cublasLtMatmulDescAttributes_t attr, const void* buf,
                                                   std::size_t size) {
  int status = begin("cublasLtMatmulDescSetAttribute");
  const int a = static_cast<int>(attr);
  // TRANSA (3), TRANSB (4): int32_t. Anything else is not something we set.
  const std::size_t expected = a == 3 || a == 4 ? 4 : 0;
  int check = 0;
  std::string line = "cublasLtMatmulDescSetAttribute " + name(desc, 'D') + format(" attr=%d", a) +
                     attribute(buf, size, expected, check);
  Object* d = find(desc, 'D');
  if (status == 0 && d == nullptr) status = api::CUBLAS_STATUS_INVALID_VALUE;
  if (status == 0) status = check;
  if (status == 0 && buf != nullptr) {
    std::int32_t v;
    std::memcpy(&v, buf, 4);
    (a == 3 ? d->transa : d->transb) = v;
  }
  log_line(line, status);
  return static_cast<api::cublasStatus_t>(status);
}

api::cublasStatus_t cublasLtMatrixLayoutCreate(api::cublasLtMatrixLayout_t* layout, api::cudaDataType_t type,
                                               std::uint64_t rows, std::uint64_t cols, std::int64_t ld) {
  Object* made = nullptr;
  const auto status = create(layout, 'L', "cublasLtMatrixLayoutCreate",
                             format(" type=%d rows=%llu cols=%llu ld=%lld", static_cast<int>(type),
                                    static_cast<unsigned long long>(rows), static_cast<unsigned long long>(cols),
                                    static_cast<long long>(ld)),
                             &made);
  if (made != nullptr) {
    made->type = type;
    made->rows = rows;
    made->cols = cols;
    made->ld = ld;
  }
  return status;
}

api::cublasStatus_t cublasLtMatrixLayoutDestroy(api::cublasLtMatrixLayout_t layout) {
  return destroy(layout, 'L', "cublasLtMatrixLayoutDestroy");
}

api::cublasStatus_t cublasLtMatmulPreferenceCreate(api::cublasLtMatmulPreference_t* pref) {
  return create(pref, 'P', "cublasLtMatmulPreferenceCreate", "");
}

api::cublasStatus_t cublasLtMatmulPreferenceDestroy(api::cublasLtMatmulPreference_t pref) {
  return destroy(pref, 'P', "cublasLtMatmulPreferenceDestroy");
}

api::cublasStatus_t cublasLtMatmulPreferenceSetAttribute(api::cublasLtMatmulPreference_t pref,
                                                         api::cublasLtMatmulPreferenceAttributes_t attr,
                                                         const void* buf, std::size_t size) {
  int status = begin("cublasLtMatmulPreferenceSetAttribute");
  const int a = static_cast<int>(attr);
  const std::size_t expected = a == 1 ? 8 : 0;  // MAX_WORKSPACE_BYTES: uint64_t
  int check = 0;
  std::string line = "cublasLtMatmulPreferenceSetAttribute " + name(pref, 'P') + format(" attr=%d", a) +
                     attribute(buf, size, expected, check);
  if (status == 0 && find(pref, 'P') == nullptr) status = api::CUBLAS_STATUS_INVALID_VALUE;
  if (status == 0) status = check;
  log_line(line, status);
  return static_cast<api::cublasStatus_t>(status);
}

api::cublasStatus_t cublasLtMatmulAlgoGetHeuristic(api::cublasLtHandle_t handle, api::cublasLtMatmulDesc_t desc,
                                                   api::cublasLtMatrixLayout_t a, api::cublasLtMatrixLayout_t b,
                                                   api::cublasLtMatrixLayout_t c, api::cublasLtMatrixLayout_t d,
                                                   api::cublasLtMatmulPreference_t pref, int requested,
                                                   api::cublasLtMatmulHeuristicResult_t results[], int* returned) {
  State& s = st();
  int status = begin("cublasLtMatmulAlgoGetHeuristic");
  const std::string line = "cublasLtMatmulAlgoGetHeuristic " + name(handle, 'H') + " " + name(desc, 'D') + " " +
                           name(a, 'L') + " " + name(b, 'L') + " " + name(c, 'L') + " " + name(d, 'L') + " " +
                           name(pref, 'P') + format(" requested=%d", requested);
  const bool all_live = find(handle, 'H') && find(desc, 'D') && find(a, 'L') && find(b, 'L') && find(c, 'L') &&
                        find(d, 'L') && find(pref, 'P');
  if (status == 0 && (!all_live || requested < 1 || results == nullptr || returned == nullptr))
    status = api::CUBLAS_STATUS_INVALID_VALUE;
  if (status == 0) {
    const int n = requested < s.heuristic_count ? requested : s.heuristic_count;
    // The documented layout, by byte offset: algo (8 x uint64_t) at 0,
    // workspaceSize (size_t) at 64, state (int) at 72, wavesCount (float) at 76,
    // reserved (4 x int) at 80; 96 bytes per element.
    auto* bytes = reinterpret_cast<unsigned char*>(results);
    for (int i = 0; i < n; ++i) {
      unsigned char* r = bytes + 96 * i;
      std::memset(r, 0, 96);
      s.algos.push_back(0xa1600000u + s.algos.size() + 1);
      std::uint64_t algo[8] = {s.algos.back(), 1, 2, 3, 4, 5, 6, 7};
      std::memcpy(r, algo, 64);
      const std::size_t workspace = s.heuristic_workspace;
      std::memcpy(r + 64, &workspace, 8);
      const std::int32_t state = s.heuristic_state;
      std::memcpy(r + 72, &state, 4);
      const float waves = 1.0f;
      std::memcpy(r + 76, &waves, 4);
    }
    *returned = n;
  }
  log_line(line, status);
  return static_cast<api::cublasStatus_t>(status);
}

#ifndef OT_FAKE_CUBLASLT_LACK_MATMUL
api::cublasStatus_t cublasLtMatmul(api::cublasLtHandle_t handle, api::cublasLtMatmulDesc_t desc, const void* alpha,
                                   const void* A, api::cublasLtMatrixLayout_t a_layout, const void* B,
                                   api::cublasLtMatrixLayout_t b_layout, const void* beta, const void* C,
                                   api::cublasLtMatrixLayout_t c_layout, void* D, api::cublasLtMatrixLayout_t d_layout,
                                   const api::cublasLtMatmulAlgo_t* algo, void* workspace, std::size_t workspace_bytes,
                                   api::cudaStream_t stream) {
  State& s = st();
  int status = begin("cublasLtMatmul");
  const Object* d = find(desc, 'D');
  std::string algo_name = "?";
  std::size_t need = 0;
  if (algo != nullptr) {
    for (std::size_t i = 0; i < s.algos.size(); ++i)
      if (algo->data[0] == s.algos[i] && algo->data[7] == 7) {
        algo_name = format("A%zu", i + 1);
        need = s.heuristic_workspace;
      }
  }
  const std::string line = "cublasLtMatmul " + name(handle, 'H') + " " + name(desc, 'D') +
                           " alpha=" + scalar(alpha, d) + format(" A=%p ", A) + name(a_layout, 'L') +
                           format(" B=%p ", B) + name(b_layout, 'L') + " beta=" + scalar(beta, d) +
                           format(" C=%p ", C) + name(c_layout, 'L') + format(" D=%p ", D) + name(d_layout, 'L') +
                           " algo=" + algo_name + format(" workspace=%p bytes=%zu stream=%p", workspace,
                                                         workspace_bytes, stream);
  const bool all_live = find(handle, 'H') && d && find(a_layout, 'L') && find(b_layout, 'L') &&
                        find(c_layout, 'L') && find(d_layout, 'L');
  if (status == 0 && (!all_live || algo_name == "?" || workspace_bytes < need ||
                      (workspace == nullptr && workspace_bytes != 0)))
    status = api::CUBLAS_STATUS_INVALID_VALUE;
  if (status == 0 && s.compute)
    status = host_matmul(*d, *find(a_layout, 'L'), *find(b_layout, 'L'), *find(c_layout, 'L'), *find(d_layout, 'L'),
                         alpha, A, B, beta, C, D);
  log_line(line, status);
  return static_cast<api::cublasStatus_t>(status);
}
#endif

// ---- the test's controls -----------------------------------------------------

// Forgets the log, the call count, the injected failures and the name counters
// (live objects stay live: a leak shows in a later test too), and restores the
// default heuristic (one algorithm, success, 1024 workspace bytes).
void fake_cublaslt_reset(void) {
  State& s = st();
  s.log.clear();
  s.counters.clear();
  s.calls = 0;
  s.fail_index = -1;
  s.fail_name.clear();
  s.heuristic_count = 1;
  s.heuristic_state = 0;
  s.heuristic_workspace = 1024;
  s.algos.clear();
  s.compute = false;
}

// Frees every live object (after a test that made the fake keep one).
void fake_cublaslt_forget(void) {
  for (auto& [p, o] : st().live) delete o;
  st().live.clear();
}

// From now on cublasLtMatmul treats its pointers as host memory and computes
// cuBLAS's column-major product into D (see host_matmul).
void fake_cublaslt_compute_on_host(int on) { st().compute = on != 0; }

// One line per call since the last reset.
const char* fake_cublaslt_log(void) {
  st().snapshot = st().log;
  return st().snapshot.c_str();
}

// The live objects' names, sorted, space-separated ("" when none).
const char* fake_cublaslt_live(void) {
  std::vector<std::string> sorted;
  for (const auto& [p, o] : st().live) sorted.push_back(format("%c%d", o->kind, o->id));
  std::sort(sorted.begin(), sorted.end());
  std::string names;
  for (const auto& n : sorted) names += (names.empty() ? "" : " ") + n;
  st().snapshot = names;
  return st().snapshot.c_str();
}

// The call at `index` (0-based, counted since the last reset) returns `status`.
void fake_cublaslt_fail_call(int index, int status) {
  st().fail_index = index;
  st().fail_index_status = status;
}

// The next call of function `fn` returns `status`.
void fake_cublaslt_fail_function(const char* fn, int status) {
  st().fail_name = fn;
  st().fail_name_status = status;
}

// What the heuristic returns from now on: how many algorithms (at most the
// number requested), their state, and the workspace each needs.
void fake_cublaslt_set_heuristic(int count, int state, unsigned long long workspace_bytes) {
  st().heuristic_count = count;
  st().heuristic_state = state;
  st().heuristic_workspace = workspace_bytes;
}

}  // extern "C"

// Each export has exactly the type the loader casts its dlsym result to.
static_assert(std::is_same_v<decltype(&cublasLtCreate), api::PFN_cublasLtCreate>);
static_assert(std::is_same_v<decltype(&cublasLtDestroy), api::PFN_cublasLtDestroy>);
static_assert(std::is_same_v<decltype(&cublasLtGetVersion), api::PFN_cublasLtGetVersion>);
static_assert(std::is_same_v<decltype(&cublasLtMatmulDescCreate), api::PFN_cublasLtMatmulDescCreate>);
static_assert(std::is_same_v<decltype(&cublasLtMatmulDescDestroy), api::PFN_cublasLtMatmulDescDestroy>);
static_assert(std::is_same_v<decltype(&cublasLtMatmulDescSetAttribute), api::PFN_cublasLtMatmulDescSetAttribute>);
static_assert(std::is_same_v<decltype(&cublasLtMatrixLayoutCreate), api::PFN_cublasLtMatrixLayoutCreate>);
static_assert(std::is_same_v<decltype(&cublasLtMatrixLayoutDestroy), api::PFN_cublasLtMatrixLayoutDestroy>);
static_assert(std::is_same_v<decltype(&cublasLtMatmulPreferenceCreate), api::PFN_cublasLtMatmulPreferenceCreate>);
static_assert(std::is_same_v<decltype(&cublasLtMatmulPreferenceDestroy), api::PFN_cublasLtMatmulPreferenceDestroy>);
static_assert(std::is_same_v<decltype(&cublasLtMatmulPreferenceSetAttribute),
                             api::PFN_cublasLtMatmulPreferenceSetAttribute>);
static_assert(std::is_same_v<decltype(&cublasLtMatmulAlgoGetHeuristic), api::PFN_cublasLtMatmulAlgoGetHeuristic>);
#ifndef OT_FAKE_CUBLASLT_LACK_MATMUL
static_assert(std::is_same_v<decltype(&cublasLtMatmul), api::PFN_cublasLtMatmul>);
#endif

// blaslt/loader.cpp against the fake libcublasLt (fake_cublaslt.cpp, built by
// CMake at OT_FAKE_CUBLASLT; a copy lacking cublasLtMatmul at
// OT_FAKE_CUBLASLT_LACKING): loading and its errors, the exact call sequence and
// arguments of gemm in bf16 and f32, the row-major mapping checked by value
// (the fake computes cuBLAS's column-major product), cleanup on every failure.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../../test/check.h"
#include "../loader.h"

using ot_cuda::blaslt::Blaslt;
using ot_cuda::blaslt::DType;
using ot_cuda::blaslt::Gemm;
using ot_cuda::blaslt::Library;
using ot_cuda::blaslt::Status;

namespace {

// The fake's controls, through our own dlopen of the same file (the same
// loaded object as the loader's, so the same state).
struct Fake {
  void (*reset)();
  void (*forget)();
  void (*compute_on_host)(int);
  const char* (*log)();
  const char* (*live)();
  void (*fail_call)(int, int);
  void (*fail_function)(const char*, int);
  void (*set_heuristic)(int, int, unsigned long long);

  static Fake& get() {
    static Fake fake = [] {
      Fake f{};
      void* h = dlopen(OT_FAKE_CUBLASLT, RTLD_NOW | RTLD_LOCAL);
      if (h == nullptr) {
        std::fprintf(stderr, "cannot load the fake cuBLASLt %s: %s\n", OT_FAKE_CUBLASLT, dlerror());
        std::abort();
      }
      auto sym = [&](const char* name) {
        void* p = dlsym(h, name);
        if (p == nullptr) {
          std::fprintf(stderr, "the fake cuBLASLt lacks %s\n", name);
          std::abort();
        }
        return p;
      };
      f.reset = reinterpret_cast<void (*)()>(sym("fake_cublaslt_reset"));
      f.forget = reinterpret_cast<void (*)()>(sym("fake_cublaslt_forget"));
      f.compute_on_host = reinterpret_cast<void (*)(int)>(sym("fake_cublaslt_compute_on_host"));
      f.log = reinterpret_cast<const char* (*)()>(sym("fake_cublaslt_log"));
      f.live = reinterpret_cast<const char* (*)()>(sym("fake_cublaslt_live"));
      f.fail_call = reinterpret_cast<void (*)(int, int)>(sym("fake_cublaslt_fail_call"));
      f.fail_function = reinterpret_cast<void (*)(const char*, int)>(sym("fake_cublaslt_fail_function"));
      f.set_heuristic = reinterpret_cast<void (*)(int, int, unsigned long long)>(sym("fake_cublaslt_set_heuristic"));
      return f;
    }();
    return fake;
  }
};

// Sets OT_CUBLASLT_LIBRARY (or unsets it, for nullptr) for a scope.
class EnvLibrary {
 public:
  explicit EnvLibrary(const char* value) {
    const char* old = std::getenv(ot_cuda::blaslt::kLibraryEnv);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value != nullptr)
      setenv(ot_cuda::blaslt::kLibraryEnv, value, 1);
    else
      unsetenv(ot_cuda::blaslt::kLibraryEnv);
  }
  ~EnvLibrary() {
    if (had_)
      setenv(ot_cuda::blaslt::kLibraryEnv, old_.c_str(), 1);
    else
      unsetenv(ot_cuda::blaslt::kLibraryEnv);
  }

 private:
  bool had_ = false;
  std::string old_;
};

bool contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }
bool one_line(const std::string& s) { return !s.empty() && s.find('\n') == std::string::npos; }

std::string ptr(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}
void* fake_ptr(std::uintptr_t v) { return reinterpret_cast<void*>(v); }

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < s.size()) {
    const std::size_t end = s.find('\n', start);
    out.push_back(s.substr(start, end - start));
    start = end == std::string::npos ? s.size() : end + 1;
  }
  return out;
}

// Opens the fake through OT_CUBLASLT_LIBRARY after a reset; the open's own
// calls are then forgotten so the log holds only what follows.
std::unique_ptr<Blaslt> open_fake() {
  Fake& fake = Fake::get();
  fake.reset();
  EnvLibrary env(OT_FAKE_CUBLASLT);
  auto opened = Blaslt::open();
  if (!opened) {
    ot_test::fail(__FILE__, __LINE__, "opening the fake failed: " + opened.error);
    return nullptr;
  }
  const char* log = fake.log();
  if (std::string(log) != "cublasLtGetVersion\ncublasLtCreate H1\n")
    ot_test::fail(__FILE__, __LINE__, std::string("open's calls: ") + log);
  fake.reset();  // names restart, H1 stays live
  return std::move(opened.blaslt);
}

// The shape the call-sequence tests use: distinct m, n, k so that a swap shows.
Gemm linear_shape(DType dtype) {
  Gemm g;
  g.dtype = dtype;
  g.m = 64;  // rows of x and y
  g.n = 32;  // rows of W (output features)
  g.k = 48;  // input features
  g.a = fake_ptr(0x10000);
  g.b = fake_ptr(0x20000);
  g.c = fake_ptr(0x30000);
  g.workspace = fake_ptr(0x40000);
  g.workspace_bytes = 4096;
  g.stream = fake_ptr(0x50000);
  return g;
}

}  // namespace

TEST(blaslt_candidates_are_so13_then_so12_or_the_env_path) {
  {
    EnvLibrary env(nullptr);
    const auto c = Library::default_candidates();
    CHECK_EQ(c.size(), 2u);
    if (c.size() == 2) {
      CHECK_EQ(c[0], std::string("libcublasLt.so.13"));
      CHECK_EQ(c[1], std::string("libcublasLt.so.12"));
    }
  }
  {
    EnvLibrary env("");
    CHECK_EQ(Library::default_candidates().size(), 2u);
  }
  {
    EnvLibrary env("/opt/odd/libcublasLt.so.13");
    const auto c = Library::default_candidates();
    CHECK_EQ(c.size(), 1u);
    if (c.size() == 1) CHECK_EQ(c[0], std::string("/opt/odd/libcublasLt.so.13"));
  }
}

TEST(blaslt_opens_the_fake_through_the_env_var) {
  Fake& fake = Fake::get();
  fake.reset();
  {
    EnvLibrary env(OT_FAKE_CUBLASLT);
    auto opened = Blaslt::open();
    CHECK(opened);
    CHECK_EQ(opened.error, std::string());
    if (!opened) return;
    CHECK_EQ(opened.blaslt->library_path(), std::string(OT_FAKE_CUBLASLT));
    CHECK_EQ(opened.blaslt->version(), 130002u);
    CHECK_EQ(std::string(fake.log()), std::string("cublasLtGetVersion\ncublasLtCreate H1\n"));
    CHECK_EQ(std::string(fake.live()), std::string("H1"));
  }  // ~Blaslt destroys the handle
  CHECK_EQ(std::string(fake.log()), std::string("cublasLtGetVersion\ncublasLtCreate H1\ncublasLtDestroy H1\n"));
  CHECK_EQ(std::string(fake.live()), std::string());
}

TEST(blaslt_reports_a_missing_library_file) {
  const std::string path = "/nonexistent/ot-blaslt-test/libcublasLt.so.13";
  EnvLibrary env(path.c_str());
  auto opened = Blaslt::open();
  CHECK(!opened);
  CHECK(one_line(opened.error));
  CHECK(contains(opened.error, "cuBLASLt not loaded"));
  CHECK(contains(opened.error, path));
  CHECK(contains(opened.error, "No such file"));
  CHECK(contains(opened.error, "OT_CUBLASLT_LIBRARY"));
  if (!one_line(opened.error) || !contains(opened.error, path)) std::printf("    error: %s\n", opened.error.c_str());

  // Without the env var every default name is tried, and each is named.
  std::string error;
  auto lib = Library::load({"/nonexistent/a/libcublasLt.so.13", "/nonexistent/b/libcublasLt.so.12"}, error);
  CHECK(lib == nullptr);
  CHECK(one_line(error));
  CHECK(contains(error, "/nonexistent/a/libcublasLt.so.13"));
  CHECK(contains(error, "/nonexistent/b/libcublasLt.so.12"));
}

TEST(blaslt_falls_back_to_the_next_name) {
  std::string error;
  auto lib = Library::load({"/nonexistent/a/libcublasLt.so.13", OT_FAKE_CUBLASLT}, error);
  CHECK(lib != nullptr);
  CHECK_EQ(error, std::string());
  if (lib != nullptr) {
    CHECK_EQ(lib->path, std::string(OT_FAKE_CUBLASLT));
    CHECK(lib->matmul != nullptr && lib->algo_get_heuristic != nullptr && lib->create != nullptr);
  }
}

TEST(blaslt_reports_a_missing_symbol) {
  EnvLibrary env(OT_FAKE_CUBLASLT_LACKING);
  auto opened = Blaslt::open();
  CHECK(!opened);
  CHECK(one_line(opened.error));
  CHECK(contains(opened.error, std::string(OT_FAKE_CUBLASLT_LACKING) + " lacks symbol cublasLtMatmul "));
  CHECK(!contains(opened.error, "cublasLtMatmulDesc"));  // only the missing one is named
  if (!contains(opened.error, "lacks symbol cublasLtMatmul ")) std::printf("    error: %s\n", opened.error.c_str());
  // A library lacking a symbol is refused, not skipped for the next name.
  std::string error;
  CHECK(Library::load({OT_FAKE_CUBLASLT_LACKING, OT_FAKE_CUBLASLT}, error) == nullptr);
  CHECK(contains(error, "lacks symbol cublasLtMatmul"));
}

TEST(blaslt_reports_a_failing_handle_creation) {
  Fake& fake = Fake::get();
  fake.reset();
  fake.fail_function("cublasLtCreate", 1);  // CUBLAS_STATUS_NOT_INITIALIZED
  EnvLibrary env(OT_FAKE_CUBLASLT);
  auto opened = Blaslt::open();
  CHECK(!opened);
  CHECK(one_line(opened.error));
  CHECK(contains(opened.error, "cublasLtCreate failed: CUBLAS_STATUS_NOT_INITIALIZED (1)"));
  CHECK(contains(opened.error, OT_FAKE_CUBLASLT));
  // The garbage the failed create left in the handle is not destroyed.
  CHECK_EQ(std::string(fake.log()), std::string("cublasLtGetVersion\ncublasLtCreate -> 1\n"));
  CHECK_EQ(std::string(fake.live()), std::string());
}

TEST(blaslt_gemm_bf16_linear_call_sequence) {
  auto lt = open_fake();
  if (!lt) return;
  Fake& fake = Fake::get();
  const Gemm g = linear_shape(DType::bf16);
  const Status s = lt->gemm(g);
  CHECK_EQ(s.error, std::string());
  // y[m,n] = x[m,k]·W[n,k]ᵀ row-major is, column-major, yᵀ[n×m] = W·xᵀ: cuBLASLt's
  // A is W stored as [k×n] (ld k) with TRANSA = T (1), its B is x stored as
  // [k×m] (ld k) with TRANSB = N (0), D is y as [n×m] (ld n). Compute type
  // CUBLAS_COMPUTE_32F = 68, scale CUDA_R_32F = 0, inputs CUDA_R_16BF = 14,
  // output CUDA_R_32F = 0; attributes 3/4 (TRANSA/TRANSB) are int32_t, 1
  // (MAX_WORKSPACE_BYTES) a uint64_t.
  const std::string expected =
      "cublasLtMatmulDescCreate D1 compute=68 scale=0\n"
      "cublasLtMatmulDescSetAttribute D1 attr=3 size=4 value=1\n"
      "cublasLtMatmulDescSetAttribute D1 attr=4 size=4 value=0\n"
      "cublasLtMatrixLayoutCreate L1 type=14 rows=48 cols=32 ld=48\n"
      "cublasLtMatrixLayoutCreate L2 type=14 rows=48 cols=64 ld=48\n"
      "cublasLtMatrixLayoutCreate L3 type=0 rows=32 cols=64 ld=32\n"
      "cublasLtMatmulPreferenceCreate P1\n"
      "cublasLtMatmulPreferenceSetAttribute P1 attr=1 size=8 value=4096\n"
      "cublasLtMatmulAlgoGetHeuristic H1 D1 L1 L2 L3 L3 P1 requested=1\n"
      "cublasLtMatmul H1 D1 alpha=1 A=" + ptr(g.b) + " L1 B=" + ptr(g.a) + " L2 beta=0 C=" + ptr(g.c) +
      " L3 D=" + ptr(g.c) + " L3 algo=A1 workspace=" + ptr(g.workspace) + " bytes=4096 stream=" + ptr(g.stream) +
      "\n"
      "cublasLtMatmulPreferenceDestroy P1\n"
      "cublasLtMatrixLayoutDestroy L3\n"
      "cublasLtMatrixLayoutDestroy L2\n"
      "cublasLtMatrixLayoutDestroy L1\n"
      "cublasLtMatmulDescDestroy D1\n";
  CHECK_EQ(std::string(fake.log()), expected);
  CHECK_EQ(std::string(fake.live()), std::string("H1"));
}

TEST(blaslt_gemm_f32_call_sequence_with_strides_and_beta) {
  auto lt = open_fake();
  if (!lt) return;
  Fake& fake = Fake::get();
  Gemm g = linear_shape(DType::f32);
  g.lda = 56;  // row strides of x, W, y (padded)
  g.ldb = 50;
  g.ldc = 40;
  g.alpha = 0.5f;
  g.beta = 1.0f;
  g.workspace_bytes = 1 << 20;
  const Status s = lt->gemm(g);
  CHECK_EQ(s.error, std::string());
  const std::string expected =
      "cublasLtMatmulDescCreate D1 compute=68 scale=0\n"
      "cublasLtMatmulDescSetAttribute D1 attr=3 size=4 value=1\n"
      "cublasLtMatmulDescSetAttribute D1 attr=4 size=4 value=0\n"
      "cublasLtMatrixLayoutCreate L1 type=0 rows=48 cols=32 ld=50\n"
      "cublasLtMatrixLayoutCreate L2 type=0 rows=48 cols=64 ld=56\n"
      "cublasLtMatrixLayoutCreate L3 type=0 rows=32 cols=64 ld=40\n"
      "cublasLtMatmulPreferenceCreate P1\n"
      "cublasLtMatmulPreferenceSetAttribute P1 attr=1 size=8 value=1048576\n"
      "cublasLtMatmulAlgoGetHeuristic H1 D1 L1 L2 L3 L3 P1 requested=1\n"
      "cublasLtMatmul H1 D1 alpha=0.5 A=" + ptr(g.b) + " L1 B=" + ptr(g.a) + " L2 beta=1 C=" + ptr(g.c) +
      " L3 D=" + ptr(g.c) + " L3 algo=A1 workspace=" + ptr(g.workspace) + " bytes=1048576 stream=" +
      ptr(g.stream) +
      "\n"
      "cublasLtMatmulPreferenceDestroy P1\n"
      "cublasLtMatrixLayoutDestroy L3\n"
      "cublasLtMatrixLayoutDestroy L2\n"
      "cublasLtMatrixLayoutDestroy L1\n"
      "cublasLtMatmulDescDestroy D1\n";
  CHECK_EQ(std::string(fake.log()), expected);
  CHECK_EQ(std::string(fake.live()), std::string("H1"));
}

// The fake computes cuBLAS's column-major D = alpha·op(A')·op(B') + beta·C on
// host memory; our row-major mapping must give the row-major product, for each
// transpose combination, padded strides, f32 and bf16, with and without beta.
TEST(blaslt_gemm_row_major_mapping_by_value) {
  auto lt = open_fake();
  if (!lt) return;
  Fake& fake = Fake::get();
  fake.compute_on_host(1);
  const std::int64_t m = 5, n = 3, k = 4, pad = 2;
  auto to_bf16 = [](float f) {  // exact for the small integers used
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return static_cast<std::uint16_t>(bits >> 16);
  };
  for (DType dtype : {DType::f32, DType::bf16})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (float beta : {0.0f, 1.0f}) {
          // Logical op(A)[m,k], op(B)[k,n]; stored row-major as A [m,k] or [k,m], B [k,n] or [n,k].
          auto av = [](std::int64_t i, std::int64_t l) { return static_cast<float>((i * 3 + l * 5) % 7 - 3); };
          auto bv = [](std::int64_t l, std::int64_t j) { return static_cast<float>((l * 2 + j * 3) % 5 - 2); };
          const std::int64_t a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
          const std::int64_t lda = a_cols + pad, ldb = b_cols + pad, ldc = n + pad;
          std::vector<float> a32(a_rows * lda, 99.0f), b32(b_rows * ldb, 99.0f);
          for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t l = 0; l < k; ++l) a32[ta ? l * lda + i : i * lda + l] = av(i, l);
          for (std::int64_t l = 0; l < k; ++l)
            for (std::int64_t j = 0; j < n; ++j) b32[tb ? j * ldb + l : l * ldb + j] = bv(l, j);
          std::vector<std::uint16_t> a16(a32.size()), b16(b32.size());
          for (std::size_t i = 0; i < a32.size(); ++i) a16[i] = to_bf16(a32[i]);
          for (std::size_t i = 0; i < b32.size(); ++i) b16[i] = to_bf16(b32[i]);
          std::vector<float> c(m * ldc, -7.0f);  // padding must stay -7
          for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j) c[i * ldc + j] = static_cast<float>(i - j);
          const std::vector<float> c0 = c;

          Gemm g;
          g.dtype = dtype;
          g.m = m;
          g.n = n;
          g.k = k;
          g.trans_a = ta;
          g.trans_b = tb;
          g.a = dtype == DType::bf16 ? static_cast<const void*>(a16.data()) : a32.data();
          g.b = dtype == DType::bf16 ? static_cast<const void*>(b16.data()) : b32.data();
          g.c = c.data();
          g.lda = lda;
          g.ldb = ldb;
          g.ldc = ldc;
          g.alpha = 2.0f;
          g.beta = beta;
          g.workspace = fake_ptr(0x40000);
          g.workspace_bytes = 4096;
          const Status s = lt->gemm(g);
          if (!s.ok()) {
            ot_test::fail(__FILE__, __LINE__, s.error + "\n" + fake.log());
            continue;
          }
          int wrong = 0;
          for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < ldc; ++j) {
              double want = c0[i * ldc + j];
              if (j < n) {
                double acc = 0;
                for (std::int64_t l = 0; l < k; ++l) acc += static_cast<double>(av(i, l)) * bv(l, j);
                want = 2.0 * acc + beta * c0[i * ldc + j];
              }
              wrong += c[i * ldc + j] != static_cast<float>(want);
            }
          if (wrong != 0)
            ot_test::fail(__FILE__, __LINE__,
                          std::string(dtype == DType::bf16 ? "bf16" : "f32") + (ta ? " T" : " N") + (tb ? "T" : "N") +
                              " beta=" + std::to_string(beta) + ": " + std::to_string(wrong) + " wrong elements");
        }
  fake.compute_on_host(0);
  CHECK_EQ(std::string(fake.live()), std::string("H1"));
}

// Fails each creating/setting/heuristic/matmul call of a gemm in turn: the
// status names that call and the shape, on one line, and everything the gemm
// created is destroyed (and nothing it did not create).
TEST(blaslt_gemm_destroys_everything_when_any_call_fails) {
  auto lt = open_fake();
  if (!lt) return;
  Fake& fake = Fake::get();
  const Gemm g = linear_shape(DType::bf16);
  CHECK(lt->gemm(g).ok());
  const auto calls = lines(fake.log());
  int tried = 0;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const std::string fn = calls[i].substr(0, calls[i].find(' '));
    if (contains(fn, "Destroy")) continue;
    ++tried;
    fake.reset();
    fake.fail_call(static_cast<int>(i), 13);  // CUBLAS_STATUS_EXECUTION_FAILED
    const Status s = lt->gemm(g);
    const std::string log = fake.log();
    CHECK(!s.ok());
    CHECK(one_line(s.error));
    CHECK(contains(s.error, fn));
    CHECK(contains(s.error, " failed: CUBLAS_STATUS_EXECUTION_FAILED (13)"));
    CHECK(contains(s.error, "cuBLASLt bf16 gemm m=64 n=32 k=48"));
    CHECK_EQ(std::string(fake.live()), std::string("H1"));
    CHECK(!contains(log, " ?"));  // no dead or unknown object used
    // Calls 0..i, then one destroy per object created before call i (the
    // desc at 0, layouts at 3, 4, 5, the preference at 6).
    std::size_t created = 0;
    for (std::size_t at : {0u, 3u, 4u, 5u, 6u}) created += at < i;
    CHECK_EQ(lines(log).size(), i + 1 + created);
    if (!contains(s.error, fn)) std::printf("    failing %s gave: %s\n", fn.c_str(), s.error.c_str());
  }
  // 10 calls before the destroys: desc create, 2 attributes, 3 layouts,
  // preference create and attribute, heuristic, matmul.
  CHECK_EQ(tried, 10);
}

TEST(blaslt_gemm_reports_a_failing_destroy) {
  auto lt = open_fake();
  if (!lt) return;
  Fake& fake = Fake::get();
  fake.fail_function("cublasLtMatrixLayoutDestroy", 7);
  const Status s = lt->gemm(linear_shape(DType::f32));
  CHECK(contains(s.error, "cublasLtMatrixLayoutDestroy(C/D) failed: CUBLAS_STATUS_INVALID_VALUE (7)"));
  CHECK(one_line(s.error));
  // The other objects are still destroyed; the fake keeps the one it refused.
  CHECK_EQ(std::string(fake.live()), std::string("H1 L3"));
  const auto log = lines(fake.log());
  CHECK(log.size() == 15 && log.back() == "cublasLtMatmulDescDestroy D1");
  lt.reset();
  fake.forget();
}

TEST(blaslt_gemm_reports_heuristic_failures) {
  auto lt = open_fake();
  if (!lt) return;
  Fake& fake = Fake::get();
  const Gemm g = linear_shape(DType::bf16);
  struct Case {
    const char* what;
    int status, count, state;
    unsigned long long workspace;
    const char* message;
  };
  const Case cases[] = {
      {"status", 15, 1, 0, 1024, "cublasLtMatmulAlgoGetHeuristic failed: CUBLAS_STATUS_NOT_SUPPORTED (15)"},
      {"none found", 0, 0, 0, 1024, "cublasLtMatmulAlgoGetHeuristic found no algorithm"},
      {"bad state", 0, 1, 15, 1024, "returned an algorithm in state CUBLAS_STATUS_NOT_SUPPORTED (15)"},
      {"workspace", 0, 1, 0, 8192, "needing 8192 workspace bytes, over the limit"},
  };
  for (const Case& c : cases) {
    fake.reset();
    fake.set_heuristic(c.count, c.state, c.workspace);
    if (c.status != 0) fake.fail_function("cublasLtMatmulAlgoGetHeuristic", c.status);
    const Status s = lt->gemm(g);
    const std::string log = fake.log();
    CHECK(!s.ok());
    CHECK(one_line(s.error));
    CHECK(contains(s.error, c.message));
    CHECK(contains(s.error, "cuBLASLt bf16 gemm m=64 n=32 k=48 (NT row-major, lda=48 ldb=48 ldc=32, workspace 4096 bytes)"));
    CHECK(!contains(log, "cublasLtMatmul H1"));  // never run without a valid algorithm
    CHECK_EQ(std::string(fake.live()), std::string("H1"));
    if (!contains(s.error, c.message)) std::printf("    %s gave: %s\n", c.what, s.error.c_str());
  }
}

TEST(blaslt_gemm_checks_arguments_before_calling) {
  auto lt = open_fake();
  if (!lt) return;
  Fake& fake = Fake::get();
  struct Case {
    const char* message;
    void (*edit)(Gemm&);
  };
  const Case cases[] = {
      {"k must be positive", [](Gemm& g) { g.k = 0; }},
      {"negative dimension", [](Gemm& g) { g.n = -1; }},
      {"null matrix pointer", [](Gemm& g) { g.b = nullptr; }},
      {"a leading dimension is smaller than its row", [](Gemm& g) { g.lda = 47; }},
      {"a leading dimension is smaller than its row", [](Gemm& g) { g.ldc = 31; }},
      {"null workspace with a nonzero size", [](Gemm& g) { g.workspace = nullptr; }},
  };
  for (const Case& c : cases) {
    fake.reset();
    Gemm g = linear_shape(DType::f32);
    c.edit(g);
    const Status s = lt->gemm(g);
    CHECK(contains(s.error, c.message));
    CHECK(one_line(s.error));
    CHECK_EQ(std::string(fake.log()), std::string());
  }
  // An empty output is nothing to do.
  fake.reset();
  Gemm g = linear_shape(DType::f32);
  g.m = 0;
  CHECK(lt->gemm(g).ok());
  CHECK_EQ(std::string(fake.log()), std::string());
}

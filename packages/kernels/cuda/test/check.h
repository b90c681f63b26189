// A minimal test harness (no downloads): TEST(name) { ... } registers a test,
// CHECK* record a failure with file:line and go on, so one run reports every
// broken expectation; main() in test_main.cpp runs them all.
#pragma once

#include <cstdio>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ot_test {

struct Test {
  const char* name;
  void (*fn)();
};
inline std::vector<Test>& registry() {
  static std::vector<Test> tests;
  return tests;
}
inline int& failures() {
  static int n = 0;
  return n;
}
struct Register {
  Register(const char* name, void (*fn)()) { registry().push_back({name, fn}); }
};

// Failed checks of the running test; only the first few are printed (a check
// in a loop over elements can fail thousands of times), all are counted.
inline int& test_failures() {
  static int n = 0;
  return n;
}
constexpr int kPrintedPerTest = 8;

inline void fail(const char* file, int line, const std::string& what) {
  ++failures();
  if (++test_failures() <= kPrintedPerTest) std::printf("    FAIL %s:%d: %s\n", file, line, what.c_str());
}

template <class A, class B>
void check_eq(const A& a, const B& b, const char* as, const char* bs, const char* file, int line) {
  if (!(a == b)) {
    std::ostringstream s;
    s << as << " == " << bs << " (got " << a << " vs " << b << ")";
    fail(file, line, s.str());
  }
}

// Runs fn, which must throw a std::exception whose what() contains `needle`.
inline void check_throws(const std::function<void()>& fn, const std::string& needle, const char* expr,
                         const char* file, int line) {
  try {
    fn();
  } catch (const std::exception& e) {
    if (std::string(e.what()).find(needle) == std::string::npos) {
      fail(file, line, std::string(expr) + " threw \"" + e.what() + "\", which lacks \"" + needle + "\"");
    }
    return;
  }
  fail(file, line, std::string(expr) + " did not throw (expected \"" + needle + "\")");
}

}  // namespace ot_test

#define OT_CAT2(a, b) a##b
#define OT_CAT(a, b) OT_CAT2(a, b)
#define TEST(name)                                                      \
  static void OT_CAT(test_, name)();                                    \
  static const ot_test::Register OT_CAT(reg_, name)(#name, OT_CAT(test_, name)); \
  static void OT_CAT(test_, name)()

#define CHECK(cond)                                                 \
  do {                                                              \
    if (!(cond)) ot_test::fail(__FILE__, __LINE__, "CHECK(" #cond ")"); \
  } while (0)
#define CHECK_EQ(a, b) ot_test::check_eq((a), (b), #a, #b, __FILE__, __LINE__)
// CHECK_THROWS(statement, "substring of the message")
#define CHECK_THROWS(stmt, needle) \
  ot_test::check_throws([&] { stmt; }, (needle), #stmt, __FILE__, __LINE__)

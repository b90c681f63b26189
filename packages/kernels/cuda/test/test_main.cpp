// Runs every registered test (or those whose name contains argv[1]) and exits
// non-zero if any check failed.
#include <chrono>
#include <cstring>
#include <exception>

#include "check.h"

int main(int argc, char** argv) {
  const char* filter = argc > 1 ? argv[1] : "";
  int run = 0, failed_tests = 0;
  for (const auto& t : ot_test::registry()) {
    if (std::strstr(t.name, filter) == nullptr) continue;
    ++run;
    const int before = ot_test::failures();
    ot_test::test_failures() = 0;
    const auto start = std::chrono::steady_clock::now();
    try {
      t.fn();
    } catch (const std::exception& e) {
      ot_test::fail(__FILE__, __LINE__, std::string("uncaught exception: ") + e.what());
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const bool ok = ot_test::failures() == before;
    if (!ok) ++failed_tests;
    if (ot_test::test_failures() > ot_test::kPrintedPerTest) {
      std::printf("    ... and %d more failed checks\n", ot_test::test_failures() - ot_test::kPrintedPerTest);
    }
    std::printf("%s %s (%.0f ms)\n", ok ? "ok  " : "FAIL", t.name, ms);
  }
  std::printf("%d tests, %d failed, %d failed checks\n", run, failed_tests, ot_test::failures());
  return run == 0 || failed_tests > 0 ? 1 : 0;
}

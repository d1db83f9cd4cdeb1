// A minimal test harness for the C++ unit tests: no dependency beyond the standard library,
// so the standalone build stays self-contained. Each csrc/tests/test_<stem>.cpp is one CTest
// executable whose main() calls the test functions and returns dpcore_test::report().
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

namespace dpcore_test {

inline int& failures() {
  static int count = 0;
  return count;
}

inline void fail(const char* file, int line, const std::string& what) {
  ++failures();
  std::fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, what.c_str());
}

inline int report() {
  if (failures() == 0) {
    std::printf("all checks passed\n");
    return 0;
  }
  std::printf("%d check(s) failed\n", failures());
  return 1;
}

}  // namespace dpcore_test

#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) dpcore_test::fail(__FILE__, __LINE__, #cond);        \
  } while (0)

#define CHECK_NEAR(a, b, tol)                                                         \
  do {                                                                                \
    const double dpcore_a_ = (a), dpcore_b_ = (b);                                    \
    if (!(std::fabs(dpcore_a_ - dpcore_b_) <= (tol)))                                 \
      dpcore_test::fail(__FILE__, __LINE__,                                           \
                        std::string(#a " ~ " #b ": ") + std::to_string(dpcore_a_) +   \
                            " vs " + std::to_string(dpcore_b_));                      \
  } while (0)

#define CHECK_THROWS(expr, Type)                                                  \
  do {                                                                            \
    bool dpcore_thrown_ = false;                                                  \
    try {                                                                         \
      (void)(expr);                                                               \
    } catch (const Type&) {                                                       \
      dpcore_thrown_ = true;                                                      \
    } catch (...) {                                                               \
    }                                                                             \
    if (!dpcore_thrown_)                                                          \
      dpcore_test::fail(__FILE__, __LINE__, "expected " #Type " from " #expr);    \
  } while (0)

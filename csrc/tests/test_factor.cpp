// Unit tests for the factor kernels against direct loops over small tables.
#include "dpcore/factor.hpp"

#include <cmath>
#include <vector>

#include "check.hpp"
#include "dpcore/errors.hpp"

using namespace dpcore;

static Factor ramp(std::vector<AttrId> attrs, std::vector<std::int64_t> shape) {
  Factor f(std::move(attrs), std::move(shape), 0.0);
  for (std::uint64_t i = 0; i < f.size(); ++i) f.data()[i] = 0.5 * static_cast<double>(i) - 3.0;
  return f;
}

static void test_project_sum_and_log() {
  // f over (a=0: 2, b=1: 3, c=2: 4); value at (i, j, k) = 0.5 * (12 i + 4 j + k) - 3.
  const Factor f = ramp({0, 1, 2}, {2, 3, 4});
  const Factor ca = f.project({2, 0});
  CHECK((ca.attrs() == std::vector<AttrId>{2, 0}));
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i) {
      double want = 0.0, want_exp = 0.0;
      for (int j = 0; j < 3; ++j) {
        want += 0.5 * (12 * i + 4 * j + k) - 3.0;
        want_exp += std::exp(0.5 * (12 * i + 4 * j + k) - 3.0);
      }
      CHECK_NEAR(ca.values()[std::size_t(k * 2 + i)], want, 1e-12);
      CHECK_NEAR(f.project({2, 0}, true).values()[std::size_t(k * 2 + i)], std::log(want_exp),
                 1e-12);
    }
  CHECK_NEAR(f.project({}).values()[0], f.sum(), 1e-12);
  CHECK_NEAR(f.project({}, true).values()[0], f.logsumexp(), 1e-12);
}

static void test_logsumexp_is_stable() {
  Factor f({0}, {3}, std::vector<double>{1000.0, 1000.0, -INFINITY});
  CHECK_NEAR(f.logsumexp(), 1000.0 + std::log(2.0), 1e-9);
  Factor g({0, 1}, {2, 2}, std::vector<double>{-INFINITY, -INFINITY, -1e4, 0.0});
  const Factor m = g.project({0}, true);
  CHECK(std::isinf(m.values()[0]) && m.values()[0] < 0);
  CHECK_NEAR(m.values()[1], std::log(std::exp(-1e4) + 1.0), 1e-12);
}

static void test_broadcast_ops() {
  const Factor a = ramp({0, 1}, {2, 3});
  const Factor b = ramp({2, 0}, {4, 2});
  const Factor s = add(a, b);
  CHECK((s.attrs() == std::vector<AttrId>{0, 1, 2}));
  const Factor p = multiply(a, b);
  const Factor d = subtract(a, b);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        const double av = a.values()[std::size_t(i * 3 + j)];
        const double bv = b.values()[std::size_t(k * 2 + i)];
        const std::size_t at = std::size_t((i * 3 + j) * 4 + k);
        CHECK_NEAR(s.values()[at], av + bv, 1e-12);
        CHECK_NEAR(p.values()[at], av * bv, 1e-12);
        CHECK_NEAR(d.values()[at], av - bv, 1e-12);
      }
  const Factor t = s.transpose({2, 0, 1});
  CHECK_NEAR(t.values()[std::size_t((3 * 2 + 1) * 3 + 2)],
             s.values()[std::size_t((1 * 3 + 2) * 4 + 3)], 0.0);
  CHECK_THROWS(a.transpose({0}), InvalidArgument);
  Factor c = a;
  CHECK_THROWS(c.add_inplace(b), InvalidArgument);  // attribute 2 is not in a
  Factor wrong({1}, {5}, 0.0);
  CHECK_THROWS(add(a, wrong), InvalidArgument);  // attribute 1 has size 3 in a
}

static void test_normalize_exp_log() {
  Factor f({0}, {4}, std::vector<double>{1.0, 2.0, 3.0, 4.0});
  f.normalize(2.0);
  CHECK_NEAR(f.sum(), 2.0, 1e-15);
  f.log_inplace();
  f.normalize(1.0, true);
  CHECK_NEAR(f.logsumexp(), 0.0, 1e-15);
  f.exp_inplace();
  CHECK_NEAR(f.values()[3], 0.4, 1e-15);
  Factor z({0}, {2}, 0.0);
  CHECK_THROWS(z.normalize(), InvalidArgument);
  CHECK_THROWS(f.normalize(-1.0), InvalidArgument);
}

static void test_bad_construction() {
  CHECK_THROWS(Factor({0, 0}, {2, 2}), InvalidArgument);
  CHECK_THROWS(Factor({0}, {0}), InvalidArgument);
  CHECK_THROWS(Factor({0}, {3}, std::vector<double>{1.0}), InvalidArgument);
  CHECK_THROWS(Factor({0, 1}, {std::int64_t{1} << 20, std::int64_t{1} << 20}), TableTooLarge);
  CHECK_THROWS(ramp({0, 1}, {2, 3}).project({5}), InvalidArgument);
}

static void test_stride_map_coalesces() {
  // Inner (0, 1) inside outer (0, 1, 2): the first two axes merge into one loop axis.
  const StrideMap m = make_stride_map({0, 1, 2}, {2, 3, 4}, {0, 1}, {2, 3});
  CHECK(m.shape.size() == 2);
  CHECK(m.outer_cells == 24);
  const StrideMap same = make_stride_map({0, 1}, {2, 3}, {0, 1}, {2, 3});
  CHECK(same.shape.size() == 1 && same.shape[0] == 6 && same.stride[0] == 1);
}

static void test_exp_nonpositive_matches_std_exp() {
  std::vector<double> x;
  for (int i = 0; i <= 200000; ++i) x.push_back(-708.0 * i / 200000.0);
  x.push_back(-1e-300);
  std::vector<double> y(x);
  exp_nonpositive(y.data(), y.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i)
    worst = std::max(worst, std::fabs(y[i] - std::exp(x[i])) / std::exp(x[i]));
  CHECK(worst < 4e-16);
  std::vector<double> edge{-INFINITY, -800.0, 0.0, NAN};
  exp_nonpositive(edge.data(), edge.size());
  CHECK(edge[0] == 0.0 && edge[1] == 0.0 && edge[2] == 1.0 && std::isnan(edge[3]));
}

int main() {
  test_exp_nonpositive_matches_std_exp();
  test_project_sum_and_log();
  test_logsumexp_is_stable();
  test_broadcast_ops();
  test_normalize_exp_log();
  test_bad_construction();
  test_stride_map_coalesces();
  return dpcore_test::report();
}

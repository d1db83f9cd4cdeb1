// Sliced Wasserstein kernels against a brute-force definition (full sort of the particles by
// (key, index)), a finite-difference gradient, thread-count invariance, snapping and the
// sparse Adam rule, plus the bad-input paths.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "check.hpp"
#include "dpcore/errors.hpp"
#include "dpcore/sliced_wasserstein.hpp"

namespace {

struct Case {
  std::int64_t m, d;
  std::vector<double> x;  // row-major
  std::vector<std::vector<double>> weights;
  std::vector<dpcore::GridTarget> targets;
  std::vector<double> dirs;
  std::int64_t K;
};

Case random_case(std::mt19937_64& rng, std::int64_t m) {
  std::uniform_real_distribution<double> U(0, 1);
  std::normal_distribution<double> N(0, 1);
  Case c;
  c.m = m;
  c.d = 2 + std::int64_t(rng() % 4);
  c.K = 1 + std::int64_t(rng() % 4);
  for (std::int64_t i = 0; i < m * c.d; ++i) c.x.push_back(U(rng));
  const int T = 1 + int(rng() % 5);
  c.weights.resize(std::size_t(T));
  for (int t = 0; t < T; ++t) {
    dpcore::GridTarget g;
    g.attr_i = int(rng() % std::uint64_t(c.d));
    g.attr_j = int((std::uint64_t(g.attr_i) + 1 + rng() % std::uint64_t(c.d - 1)) % std::uint64_t(c.d));
    g.size_i = 1 + std::int64_t(rng() % 5);
    g.size_j = 1 + std::int64_t(rng() % 5);
    for (std::int64_t k = 0; k < g.size_i * g.size_j; ++k)
      c.weights[std::size_t(t)].push_back(rng() % 3 == 0 ? 0.0 : U(rng));
    c.weights[std::size_t(t)][0] += 0.1;
    c.targets.push_back(g);
  }
  for (std::size_t t = 0; t < c.targets.size(); ++t) c.targets[t].weights = c.weights[t].data();
  for (std::int64_t i = 0; i < T * c.K * 2; ++i) c.dirs.push_back(N(rng));
  return c;
}

// The definition: rank particles by (key, index), match rank r to the target quantile at
// (r + 1/2) / m.
double brute_force(const Case& c, std::vector<double>& grad) {
  const double top = double((std::uint32_t{1} << dpcore::kSlicedKeyBits) - 1);
  double loss = 0.0;
  grad.assign(c.x.size(), 0.0);
  for (std::size_t t = 0; t < c.targets.size(); ++t) {
    const dpcore::GridTarget& g = c.targets[t];
    for (std::int64_t k = 0; k < c.K; ++k) {
      const double t1 = c.dirs[(t * std::size_t(c.K) + std::size_t(k)) * 2];
      const double t2 = c.dirs[(t * std::size_t(c.K) + std::size_t(k)) * 2 + 1];
      const double lo = std::min(0.0, t1) + std::min(0.0, t2);
      const double hi = std::max(0.0, t1) + std::max(0.0, t2);
      const double scale = hi > lo ? top / (hi - lo) : 0.0;
      std::vector<double> y(std::size_t(c.m));
      std::vector<std::pair<std::uint32_t, std::int64_t>> keyed;
      for (std::int64_t r = 0; r < c.m; ++r) {
        y[std::size_t(r)] = t1 * c.x[std::size_t(r * c.d + g.attr_i)] +
                            t2 * c.x[std::size_t(r * c.d + g.attr_j)];
        const double pos = std::max(0.0, (y[std::size_t(r)] - lo) * scale);
        keyed.push_back({std::min(std::uint32_t(top), std::uint32_t(pos)), r});
      }
      std::sort(keyed.begin(), keyed.end());
      std::vector<std::pair<double, std::int64_t>> atoms;
      for (std::int64_t a = 0; a < g.size_i * g.size_j; ++a)
        atoms.push_back({t1 * ((double(a / g.size_j) + 0.5) / double(g.size_i)) +
                             t2 * ((double(a % g.size_j) + 0.5) / double(g.size_j)),
                         a});
      std::sort(atoms.begin(), atoms.end());
      std::vector<double> cum;
      double total = 0.0;
      for (auto& a : atoms) cum.push_back(total += g.weights[a.second]);
      for (std::int64_t r = 0; r < c.m; ++r) {
        const double u = (double(r) + 0.5) / double(c.m) * total;
        std::size_t s = std::size_t(std::upper_bound(cum.begin(), cum.end(), u) - cum.begin());
        s = std::min(s, atoms.size() - 1);
        const std::int64_t p = keyed[std::size_t(r)].second;
        const double diff = y[std::size_t(p)] - atoms[s].first;
        loss += diff * diff / double(c.m) / double(c.K);
        grad[std::size_t(p * c.d + g.attr_i)] += 2 * diff * t1 / double(c.m) / double(c.K);
        grad[std::size_t(p * c.d + g.attr_j)] += 2 * diff * t2 / double(c.m) / double(c.K);
      }
    }
  }
  return loss;
}

dpcore::ParticleMatrix row_major(std::vector<double>& x, std::int64_t m, std::int64_t d) {
  return dpcore::ParticleMatrix{x.data(), m, d, d, 1};
}

void test_against_brute_force() {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 60; ++trial) {
    Case c = random_case(rng, 1 + std::int64_t(rng() % 400));
    std::vector<double> want_grad;
    const double want = brute_force(c, want_grad);
    for (int threads : {1, 2, 3}) {
      std::vector<double> grad(c.x.size(), 0.0);
      const double got = dpcore::sliced_wasserstein(row_major(c.x, c.m, c.d), c.targets,
                                                    c.dirs.data(), c.K, grad.data(), threads);
      CHECK_NEAR(got, want, 1e-12 * (1 + want));
      for (std::size_t i = 0; i < grad.size(); ++i) CHECK_NEAR(grad[i], want_grad[i], 1e-12);
    }
    // the same matrix in column-major order
    std::vector<double> cm(c.x.size()), grad(c.x.size(), 0.0);
    for (std::int64_t r = 0; r < c.m; ++r)
      for (std::int64_t a = 0; a < c.d; ++a) cm[std::size_t(a * c.m + r)] = c.x[std::size_t(r * c.d + a)];
    const double got = dpcore::sliced_wasserstein(dpcore::ParticleMatrix{cm.data(), c.m, c.d, 1, c.m},
                                                  c.targets, c.dirs.data(), c.K, grad.data());
    CHECK_NEAR(got, want, 1e-12 * (1 + want));
    for (std::int64_t r = 0; r < c.m; ++r)
      for (std::int64_t a = 0; a < c.d; ++a)
        CHECK_NEAR(grad[std::size_t(a * c.m + r)], want_grad[std::size_t(r * c.d + a)], 1e-12);
  }
}

void test_finite_differences() {
  std::mt19937_64 rng(7);
  Case c = random_case(rng, 30);
  for (double& v : c.x) v = 0.1 + 0.8 * v;
  std::vector<double> grad(c.x.size(), 0.0);
  dpcore::sliced_wasserstein(row_major(c.x, c.m, c.d), c.targets, c.dirs.data(), c.K, grad.data());
  const double h = 1e-7;
  for (std::size_t i = 0; i < c.x.size(); i += 7) {
    std::vector<double> up = c.x, down = c.x;
    up[i] += h;
    down[i] -= h;
    const double lu = dpcore::sliced_wasserstein(row_major(up, c.m, c.d), c.targets, c.dirs.data(), c.K, nullptr);
    const double ld = dpcore::sliced_wasserstein(row_major(down, c.m, c.d), c.targets, c.dirs.data(), c.K, nullptr);
    CHECK_NEAR((lu - ld) / (2 * h), grad[i], 1e-5 + 1e-4 * std::fabs(grad[i]));
  }
}

void test_snap_and_adam() {
  std::vector<double> x = {0.0, 1.0, 0.49, 0.5, 0.999, 0.2};
  std::vector<std::int64_t> codes(6);
  dpcore::snap_to_grid(row_major(x, 3, 2), {2, 5}, codes.data());
  const std::vector<std::int64_t> want = {0, 4, 0, 2, 1, 1};
  CHECK(codes == want);
  // one Adam step from zero moments moves each non-zero-gradient entry by lr (times sign)
  std::vector<double> p = {0.5, 0.5, 0.5, 0.5}, g = {1.0, -2.0, 0.0, 3.0}, m1(4, 0.0), m2(4, 0.0);
  dpcore::AdamOptions o;
  o.learning_rate = 0.1;
  dpcore::particle_adam_step(row_major(p, 2, 2), g.data(), m1.data(), m2.data(), {0}, 1, o);
  CHECK_NEAR(p[0], 0.4, 1e-9);
  CHECK_NEAR(p[2], 0.5, 0.0);  // zero gradient: untouched
  CHECK_NEAR(p[1], 0.5, 0.0);  // column 1 not in the step
  CHECK(g[0] == 0.0 && g[1] == -2.0);
}

void test_bad_inputs() {
  std::vector<double> x(20, 0.5), w(4, 1.0), dirs(4, 1.0);
  std::vector<dpcore::GridTarget> same = {{0, 0, 2, 2, w.data()}};
  CHECK_THROWS(dpcore::sliced_wasserstein(row_major(x, 10, 2), same, dirs.data(), 2, nullptr),
               dpcore::InvalidArgument);
  std::vector<dpcore::GridTarget> ok = {{0, 1, 2, 2, w.data()}};
  CHECK_THROWS(dpcore::sliced_wasserstein(row_major(x, 10, 2), ok, dirs.data(), 0, nullptr),
               dpcore::InvalidArgument);
  CHECK_THROWS(dpcore::sliced_wasserstein(row_major(x, 10, 2), ok, dirs.data(), 2, nullptr, -1),
               dpcore::InvalidArgument);
  CHECK_THROWS(dpcore::sliced_wasserstein(dpcore::ParticleMatrix{x.data(), 10, 2, 3, 1}, ok,
                                          dirs.data(), 2, nullptr),
               dpcore::InvalidArgument);
  x[3] = -0.1;
  CHECK_THROWS(dpcore::sliced_wasserstein(row_major(x, 10, 2), ok, dirs.data(), 2, nullptr),
               dpcore::InvalidArgument);
  std::vector<std::int64_t> codes(20);
  CHECK_THROWS(dpcore::snap_to_grid(row_major(x, 10, 2), {2, 2}, codes.data()),
               dpcore::InvalidArgument);
  x[3] = 0.5;
  CHECK_THROWS(dpcore::snap_to_grid(row_major(x, 10, 2), {2}, codes.data()), dpcore::InvalidArgument);
  w[1] = std::nan("");
  CHECK_THROWS(dpcore::sliced_wasserstein(row_major(x, 10, 2), ok, dirs.data(), 2, nullptr),
               dpcore::InvalidArgument);
}

}  // namespace

int main() {
  test_against_brute_force();
  test_finite_differences();
  test_snap_and_adam();
  test_bad_inputs();
  return dpcore_test::report();
}

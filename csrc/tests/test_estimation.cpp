// Unit tests for dpcore::fit: noise-free measurements of a distribution on a tree are
// recovered (Private-PGM is consistent), the loss never increases, and bad input is refused.
#include "dpcore/estimation.hpp"

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "check.hpp"
#include "dpcore/errors.hpp"

using namespace dpcore;

using Lists = std::vector<std::vector<AttrId>>;

static void test_noise_free_marginals_are_recovered() {
  // Chain 0-1-2 (sizes 3, 2, 4), measured on both edges and on attribute 1: the targets are a
  // random joint's marginals times N, so the optimum has loss 0 and reproduces them.
  const std::vector<std::int64_t> shape{3, 2, 4};
  const Lists cliques{{0, 1}, {1, 2}};
  const Lists queries{{0, 1}, {1, 2}, {1}};
  auto tree = std::make_shared<JunctionTree>(shape, cliques);
  Calibrator calibrator(tree, cliques, queries);
  std::mt19937_64 rng(3);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> truth(calibrator.potential_cells());
  for (double& x : truth) x = normal(rng);
  std::vector<double> p(calibrator.query_cells());
  calibrator.run(truth.data(), p.data());
  const double n = 1000.0;
  Objective objective;
  objective.total = n;
  for (double x : p) {
    objective.target.push_back(n * x);
    objective.slope.push_back(2.0 * n);  // weight 1
  }
  FitOptions options;
  options.max_iters = 5000;
  options.tol = 0.0;
  options.smoothness = 2.0 * n * n * 3.0;  // 2 N^2 sum_i max|Q^T Q| / sigma^2, three queries
  std::vector<double> losses;
  options.callback = [&](int, double loss) {
    losses.push_back(loss);
    return false;
  };
  const FitResult result =
      fit(calibrator, objective, std::vector<double>(truth.size(), 0.0), options);
  CHECK(result.history.size() == std::size_t(result.iterations) + 1);
  CHECK(losses.size() == std::size_t(result.iterations));
  for (std::size_t i = 1; i < result.history.size(); ++i)
    CHECK(result.history[i] <= result.history[i - 1]);
  CHECK(result.calibrations >= std::uint64_t(result.iterations) + 1);
  std::vector<double> fitted(p.size());
  calibrator.run(result.theta.data(), fitted.data());
  for (std::size_t c = 0; c < p.size(); ++c) CHECK_NEAR(fitted[c], p[c], 1e-8);

  // A callback returning true stops after that iteration.
  options.callback = [](int iteration, double) { return iteration == 3; };
  CHECK(fit(calibrator, objective, std::vector<double>(truth.size(), 0.0), options).iterations ==
        3);
}

static void test_bad_input() {
  const std::vector<std::int64_t> shape{2, 3};
  auto tree = std::make_shared<JunctionTree>(shape, Lists{{0, 1}});
  Calibrator calibrator(tree, {{0, 1}}, {{0}});
  Objective objective{{2.0, 2.0}, {1.0, 1.0}, 2.0, 0.0, {}};
  const FitOptions options;
  const std::vector<double> zeros(6, 0.0);
  CHECK_THROWS(fit(calibrator, objective, std::vector<double>(5, 0.0), options), InvalidArgument);
  Objective short_target = objective;
  short_target.target.pop_back();
  CHECK_THROWS(fit(calibrator, short_target, zeros, options), InvalidArgument);
  Objective zero_total = objective;
  zero_total.total = 0.0;
  CHECK_THROWS(fit(calibrator, zero_total, zeros, options), InvalidArgument);
  FitOptions negative = options;
  negative.tol = -1.0;
  CHECK_THROWS(fit(calibrator, objective, zeros, negative), InvalidArgument);
  FitOptions flat = options;
  flat.smoothness = 0.0;
  CHECK_THROWS(fit(calibrator, objective, zeros, flat), InvalidArgument);
  std::vector<double> nan_theta = zeros;
  nan_theta[2] = NAN;
  CHECK_THROWS(fit(calibrator, objective, nan_theta, options), InvalidArgument);
}

int main() {
  test_noise_free_marginals_are_recovered();
  test_bad_input();
  return dpcore_test::report();
}

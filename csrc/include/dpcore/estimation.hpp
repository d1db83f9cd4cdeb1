// Private-PGM's optimiser: entropic mirror descent over the marginal polytope, written in the
// log-potentials (McKenna, Sheldon & Miklau, ICML 2019, Alg. 1), with Armijo backtracking and,
// optionally, Nesterov momentum with adaptive restart (O'Donoghue & Candes 2015). The loop is
// compiled so that an iteration is one calibration plus a few vector sweeps; dpcore.inference
// documents the method and the step-size rule (dpcore/inference/estimation.py).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "dpcore/calibration.hpp"

namespace dpcore {

/// The loss over the calibrator's flat query marginals p (probabilities):
/// Σ_c slope_c / (2 N) (N p_c - target_c)^2 + constant, plus `extra(p, grad)` when set, which
/// returns further loss terms and adds their gradient into grad (non-identity measurements).
struct Objective {
  std::vector<double> slope;   ///< 2 N w_c: the gradient of the squares is slope * (N p - target)
  std::vector<double> target;  ///< the pooled noisy counts
  double total = 1.0;          ///< N
  double constant = 0.0;
  std::function<double(const double* p, double* grad)> extra;
};

struct FitOptions {
  int max_iters = 2000;
  double tol = 1e-7;        ///< stop when an accepted step gains <= tol * max(loss, 1)
  double smoothness = 1.0;  ///< the loss's Lipschitz bound in l1: the first step is 1 / it
  bool accelerated = true;
  /// Called after every accepted step with (iteration, loss); returning true stops.
  std::function<bool(int, double)> callback;
};

struct FitResult {
  std::vector<double> theta;    ///< the flat log-potentials reached
  std::vector<double> history;  ///< the loss before the first step and after each one
  int iterations = 0;
  bool converged = false;
  std::uint64_t calibrations = 0;  ///< trial points evaluated, the first point included
};

/// Minimises the objective over the calibrator's flat log-potentials from `theta`. Cells of
/// `theta` at -inf (structural zeros) stay at -inf in every iterate.
/// InvalidArgument when the lengths disagree with the calibrator, tol < 0, max_iters < 0 or
/// smoothness <= 0; the calibrator's own errors (non-finite potentials) propagate.
FitResult fit(Calibrator& calibrator, const Objective& objective, std::vector<double> theta,
              const FitOptions& options);

}  // namespace dpcore

#include "dpcore/estimation.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "dpcore/errors.hpp"
#include "vector_math.hpp"

namespace dpcore {

namespace {

// Halvings of the step before giving up: a step of 2^-40 / Lip that still fails the test means
// the loss is flat to machine precision.
constexpr int kMaxBacktracks = 40;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// The optimiser's passes over the query and potential cells. They are vector kernels (AVX2 /
// AVX-512 clones) because on a small tree they cost as much as a third of a calibration; the
// sums run in eight lanes, since one running sum would wait on every add's latency.

// grad = slope * r with r = p n - target; returns Σ grad * r.
DPCORE_VECTOR_KERNEL double residuals(const double* __restrict p, const double* __restrict slope,
                                      const double* __restrict target, double n,
                                      double* __restrict grad, std::size_t cells) {
  double lanes[8] = {};
  std::size_t i = 0;
  for (; i + 8 <= cells; i += 8)
    for (std::size_t j = 0; j < 8; ++j) {
      const double r = p[i + j] * n - target[i + j];
      grad[i + j] = slope[i + j] * r;
      lanes[j] += grad[i + j] * r;
    }
  double total = 0.0;
  for (; i < cells; ++i) {
    const double r = p[i] * n - target[i];
    grad[i] = slope[i] * r;
    total += grad[i] * r;
  }
  for (const double lane : lanes) total += lane;
  return total;
}

// Σ grad * (p - q).
DPCORE_VECTOR_KERNEL double inner_step(const double* __restrict grad, const double* __restrict p,
                                       const double* __restrict q, std::size_t cells) {
  double lanes[8] = {};
  std::size_t i = 0;
  for (; i + 8 <= cells; i += 8)
    for (std::size_t j = 0; j < 8; ++j) lanes[j] += grad[i + j] * (p[i + j] - q[i + j]);
  double total = 0.0;
  for (; i < cells; ++i) total += grad[i] * (p[i] - q[i]);
  for (const double lane : lanes) total += lane;
  return total;
}

// trial = theta - eta step + beta (theta - prev); without prev (nullptr) the plain step.
// A cell at -inf (a structural zero) stays there: the plain step keeps it (-inf minus a finite
// step), and the momentum term, -inf - -inf = NaN, is taken as 0 on such a cell (a select,
// which the vectoriser keeps branch-free).
DPCORE_VECTOR_KERNEL void take_step(const double* __restrict theta, const double* __restrict step,
                                    const double* __restrict prev, double eta, double beta,
                                    double* __restrict trial, std::size_t cells) {
  if (prev == nullptr)
    for (std::size_t i = 0; i < cells; ++i) trial[i] = theta[i] - eta * step[i];
  else
    for (std::size_t i = 0; i < cells; ++i) {
      const double moved = theta[i] - eta * step[i];
      trial[i] = theta[i] == kNegInf ? kNegInf : moved + beta * (theta[i] - prev[i]);
    }
}

// The state of one point: its marginals, loss and gradient in the marginals.
struct Point {
  std::vector<double> p;
  std::vector<double> grad;
  double loss = 0.0;
};

class Loop {
 public:
  Loop(Calibrator& calibrator, const Objective& objective)
      : calibrator_(calibrator), objective_(objective) {}

  std::uint64_t calibrations() const { return calibrations_; }

  void evaluate(const std::vector<double>& theta, Point& at) {
    at.p.resize(calibrator_.query_cells());
    at.grad.resize(at.p.size());
    calibrator_.run(theta.data(), at.p.data());
    ++calibrations_;
    const double squares = residuals(at.p.data(), objective_.slope.data(),
                                     objective_.target.data(), objective_.total, at.grad.data(),
                                     at.p.size());
    at.loss = squares / (2.0 * objective_.total) + objective_.constant;
    if (objective_.extra) at.loss += objective_.extra(at.p.data(), at.grad.data());
  }

  // Evaluates `trial` into `next`; true when it passes the sufficient-decrease test
  // L(p) - L(p') >= <g, p - p'> / 2 against `now` (and does not increase the loss).
  bool accept(const std::vector<double>& trial, const Point& now, Point& next) {
    evaluate(trial, next);
    const double predicted = inner_step(now.grad.data(), now.p.data(), next.p.data(),
                                        now.p.size());
    return std::isfinite(next.loss) && now.loss - next.loss >= 0.5 * predicted &&
           next.loss <= now.loss;
  }

 private:
  Calibrator& calibrator_;
  const Objective& objective_;
  std::uint64_t calibrations_ = 0;
};

}  // namespace

FitResult fit(Calibrator& calibrator, const Objective& objective, std::vector<double> theta,
              const FitOptions& options) {
  const std::uint64_t cells = calibrator.query_cells();
  if (theta.size() != calibrator.potential_cells())
    throw InvalidArgument("theta must have " + std::to_string(calibrator.potential_cells()) +
                          " values, got " + std::to_string(theta.size()));
  if (objective.slope.size() != cells || objective.target.size() != cells)
    throw InvalidArgument("objective slope and target must have " + std::to_string(cells) +
                          " values, got " + std::to_string(objective.slope.size()) + " and " +
                          std::to_string(objective.target.size()));
  if (!(objective.total > 0.0) || !std::isfinite(objective.total))
    throw InvalidArgument("objective total must be finite and > 0, got " +
                          std::to_string(objective.total));
  if (options.max_iters < 0)
    throw InvalidArgument("max_iters must be >= 0, got " + std::to_string(options.max_iters));
  if (!(options.tol >= 0.0))
    throw InvalidArgument("tol must be >= 0, got " + std::to_string(options.tol));
  if (!(options.smoothness > 0.0))
    throw InvalidArgument("smoothness must be > 0, got " + std::to_string(options.smoothness));

  Loop loop(calibrator, objective);
  Point now, next;
  loop.evaluate(theta, now);
  FitResult result;
  result.history.push_back(now.loss);
  double eta = 1.0 / options.smoothness;
  std::vector<double> prev, trial(theta.size()), step(theta.size());
  int momentum = 0;  // iterations since the last restart (Nesterov's k)
  int iters = 0;
  for (iters = 1; iters <= options.max_iters; ++iters) {
    calibrator.spread(now.grad.data(), step.data());
    bool accepted = false;
    if (options.accelerated && !prev.empty()) {
      const double beta = momentum / (momentum + 3.0);
      take_step(theta.data(), step.data(), prev.data(), eta, beta, trial.data(), theta.size());
      accepted = loop.accept(trial, now, next);
      momentum = accepted ? momentum + 1 : 0;
    }
    if (!accepted) {
      eta *= 2.0;
      for (int k = 0; k < kMaxBacktracks && !accepted; ++k) {
        take_step(theta.data(), step.data(), nullptr, eta, 0.0, trial.data(), theta.size());
        accepted = loop.accept(trial, now, next);
        if (!accepted) eta *= 0.5;
      }
    }
    if (!accepted) {
      result.converged = true;
      --iters;
      break;
    }
    prev.swap(theta);
    theta.swap(trial);
    trial.resize(theta.size());
    const double decrease = now.loss - next.loss;
    std::swap(now, next);
    result.history.push_back(now.loss);
    if (options.callback && options.callback(iters, now.loss)) break;
    if (decrease <= options.tol * std::max(now.loss, 1.0)) {
      result.converged = true;
      break;
    }
  }
  result.iterations = std::min(iters, options.max_iters);
  result.calibrations = loop.calibrations();
  result.theta = std::move(theta);
  return result;
}

}  // namespace dpcore

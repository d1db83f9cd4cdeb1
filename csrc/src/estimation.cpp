#include "dpcore/estimation.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "dpcore/errors.hpp"

namespace dpcore {

namespace {

// Halvings of the step before giving up: a step of 2^-40 / Lip that still fails the test means
// the loss is flat to machine precision.
constexpr int kMaxBacktracks = 40;

// Σ term(i) for i < n in eight running sums: one sum would wait on every add's latency, and
// these sums run over all query cells twice an iteration.
template <class Term>
double sum_of(std::size_t n, Term&& term) {
  double lanes[8] = {};
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (std::size_t j = 0; j < 8; ++j) lanes[j] += term(i + j);
  double total = 0.0;
  for (; i < n; ++i) total += term(i);
  for (const double lane : lanes) total += lane;
  return total;
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
    const double n = objective_.total;
    const double* slope = objective_.slope.data();
    const double* target = objective_.target.data();
    const double* p = at.p.data();
    double* grad = at.grad.data();
    const double squares = sum_of(at.p.size(), [&](std::size_t c) {
      const double r = p[c] * n - target[c];
      grad[c] = slope[c] * r;
      return grad[c] * r;
    });
    at.loss = squares / (2.0 * n) + objective_.constant;
    if (objective_.extra) at.loss += objective_.extra(at.p.data(), at.grad.data());
  }

  // Evaluates `trial` into `next`; true when it passes the sufficient-decrease test
  // L(p) - L(p') >= <g, p - p'> / 2 against `now` (and does not increase the loss).
  bool accept(const std::vector<double>& trial, const Point& now, Point& next) {
    evaluate(trial, next);
    const double predicted = sum_of(now.p.size(), [&](std::size_t c) {
      return now.grad[c] * (now.p[c] - next.p[c]);
    });
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
      for (std::size_t i = 0; i < theta.size(); ++i)
        trial[i] = (theta[i] - eta * step[i]) + beta * (theta[i] - prev[i]);
      accepted = loop.accept(trial, now, next);
      momentum = accepted ? momentum + 1 : 0;
    }
    if (!accepted) {
      eta *= 2.0;
      for (int k = 0; k < kMaxBacktracks && !accepted; ++k) {
        for (std::size_t i = 0; i < theta.size(); ++i) trial[i] = theta[i] - eta * step[i];
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

// Binding for the compiled Private-PGM loop (dpcore::fit). dpcore/inference/oracle.py calls
// it with the calibrator and the Problem's loss terms; Python callbacks run under the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "dpcore/errors.hpp"
#include "dpcore/estimation.hpp"

namespace py = pybind11;

[[noreturn]] void raise_type_error(const std::string& message);  // module.cpp
using dpcore::Calibrator;

namespace {

using Array = py::array_t<double, py::array::c_style | py::array::forcecast>;

std::vector<double> to_vector(const Array& a) { return {a.data(), a.data() + a.size()}; }

// A NumPy view of C++ memory for the duration of a callback (no copy, no ownership).
py::array_t<double> view(double* data, std::size_t n) {
  return py::array_t<double>(py::ssize_t(n), data, py::capsule(data, [](void*) {}));
}

}  // namespace

void bind_estimation(py::module_& m) {
  m.def(
      "fit",
      [](Calibrator& calibrator, const Array& slope, const Array& target, double total,
         double constant, py::object extra, const Array& theta, int max_iters, double tol,
         double smoothness, bool accelerated, py::object callback) {
        if (!extra.is_none() && !PyCallable_Check(extra.ptr()))
          raise_type_error("extra must be callable or None, got " +
                           std::string(py::str(py::type::of(extra).attr("__name__"))));
        if (!callback.is_none() && !PyCallable_Check(callback.ptr()))
          raise_type_error("callback must be callable or None, got " +
                           std::string(py::str(py::type::of(callback).attr("__name__"))));
        dpcore::Objective objective{to_vector(slope), to_vector(target), total, constant, {}};
        const std::size_t cells = objective.target.size();
        if (!extra.is_none())
          objective.extra = [extra, cells](const double* p, double* grad) {
            py::gil_scoped_acquire gil;
            return extra(view(const_cast<double*>(p), cells), view(grad, cells)).cast<double>();
          };
        dpcore::FitOptions options{max_iters, tol, smoothness, accelerated, {}};
        // Every iteration (or every 50 ms without a callback) takes the GIL to run Python's
        // signal handlers, so Ctrl-C stops a long estimation; their exception propagates.
        using Clock = std::chrono::steady_clock;
        options.callback = [callback, checked = Clock::now()](int iteration,
                                                              double loss) mutable {
          const auto now = Clock::now();
          if (callback.is_none() && now - checked < std::chrono::milliseconds(50)) return false;
          checked = now;
          py::gil_scoped_acquire gil;
          if (PyErr_CheckSignals() != 0) throw py::error_already_set();
          return !callback.is_none() && callback(iteration, loss).is(py::bool_(true));
        };
        dpcore::FitResult result;
        {
          py::gil_scoped_release release;
          result = dpcore::fit(calibrator, objective, to_vector(theta), options);
        }
        py::array_t<double> out(py::ssize_t(result.theta.size()));
        std::copy(result.theta.begin(), result.theta.end(), out.mutable_data());
        return py::make_tuple(out, py::cast(result.history), result.iterations,
                              result.converged, result.calibrations);
      },
      py::arg("calibrator"), py::arg("slope"), py::arg("target"), py::arg("total"),
      py::arg("constant"), py::arg("extra"), py::arg("theta"), py::arg("max_iters"),
      py::arg("tol"), py::arg("smoothness"), py::arg("accelerated"), py::arg("callback"),
      "Private-PGM's loop (dpcore::fit): returns (theta, loss history, iterations, converged, "
      "calibrations).");
}

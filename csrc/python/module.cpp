// The dpcore._core extension: one entry point that registers every binding file and maps
// the kernels' C++ exceptions onto the Python classes in dpcore.errors.
#include <pybind11/pybind11.h>

#include "dpcore/errors.hpp"

namespace py = pybind11;

// One binding file per concept, same stem as its header (bind_<stem>.cpp).
void bind_marginals(py::module_& m);
void bind_factor(py::module_& m);
void bind_junction_tree(py::module_& m);
void bind_calibration(py::module_& m);
void bind_estimation(py::module_& m);
void bind_sampling(py::module_& m);
void bind_noise(py::module_& m);

PYBIND11_MODULE(_core, m) {
  m.doc() = "dpcore compiled kernels (C++17). Use the Python API in dpcore, not this module.";

  // Translate to the classes dpcore.errors defines, so Python code has one set of types.
  py::module_ errors = py::module_::import("dpcore.errors");
  static py::object invalid_argument = errors.attr("InvalidArgumentError");
  static py::object domain_error = errors.attr("DomainError");
  static py::object too_large = errors.attr("TableTooLargeError");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const dpcore::DomainError& e) {
      PyErr_SetString(domain_error.ptr(), e.what());
    } catch (const dpcore::TableTooLarge& e) {
      PyErr_SetString(too_large.ptr(), e.what());
    } catch (const dpcore::InvalidArgument& e) {
      PyErr_SetString(invalid_argument.ptr(), e.what());
    } catch (const dpcore::Error& e) {
      PyErr_SetString(invalid_argument.ptr(), e.what());
    }
  });

  bind_marginals(m);
  bind_factor(m);
  bind_junction_tree(m);
  bind_calibration(m);
  bind_estimation(m);
  bind_sampling(m);
  bind_noise(m);
}

// Binding of the exact discrete Gaussian sampler: sigma^2 as an integer pair, a seed (or OS
// entropy), an int64 numpy array out; the GIL is released while sampling.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <random>
#include <string>

#include "dpcore/errors.hpp"
#include "dpcore/noise.hpp"

namespace py = pybind11;

namespace {

std::uint64_t as_uint64(py::handle value, const char* what) {
  if (PyBool_Check(value.ptr()) || !PyIndex_Check(value.ptr())) {
    py::object cls = py::module_::import("dpcore.errors").attr("DpcoreTypeError");
    const std::string message = std::string(what) + " must be an integer, got " +
                                std::string(py::repr(value));
    PyErr_SetString(cls.ptr(), message.c_str());
    throw py::error_already_set();
  }
  py::int_ number = py::reinterpret_steal<py::int_>(PyNumber_Index(value.ptr()));
  const unsigned long long out = PyLong_AsUnsignedLongLong(number.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    throw dpcore::InvalidArgument(std::string(what) + " must be in [0, 2^64), got " +
                                  std::string(py::repr(value)));
  }
  return out;
}

py::array_t<std::int64_t> discrete_gaussian(py::handle num, py::handle den, std::int64_t count,
                                            py::handle seed) {
  const std::uint64_t n = as_uint64(num, "sigma_sq_num");
  const std::uint64_t d = as_uint64(den, "sigma_sq_den");
  std::uint64_t s;
  if (seed.is_none()) {
    std::random_device entropy;  // the OS entropy source on Linux
    s = (std::uint64_t(entropy()) << 32) ^ std::uint64_t(entropy());
  } else {
    s = as_uint64(seed, "seed");
  }
  if (count < 0) throw dpcore::InvalidArgument("count must be >= 0, got " + std::to_string(count));
  py::array_t<std::int64_t> out(count);
  std::int64_t* data = out.mutable_data();
  {
    py::gil_scoped_release release;
    dpcore::discrete_gaussian(n, d, count, s, data);
  }
  return out;
}

}  // namespace

void bind_noise(py::module_& m) {
  m.def("discrete_gaussian", &discrete_gaussian, py::arg("sigma_sq_num"),
        py::arg("sigma_sq_den"), py::arg("count"), py::arg("seed") = py::none(),
        "Exact i.i.d. draws of the discrete Gaussian N_Z(0, num/den) as an int64 array\n"
        "(Canonne-Kamath-Steinke 2020, Alg. 1-3, integer arithmetic). seed=None draws the\n"
        "seed from OS entropy. The range limit: 2 * num * den * (floor(sqrt(num/den)) + 1)^2\n"
        "< 2^128 after reducing num/den.");
}

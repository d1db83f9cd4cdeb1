// Binding of the exact discrete Gaussian sampler: sigma^2 as an integer pair, a 32-byte
// ChaCha20 key (the caller draws it: dpcore.accounting.noise), an int64 numpy array out; the
// GIL is released while sampling.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "dpcore/errors.hpp"
#include "dpcore/noise.hpp"
#include "dpcore/sampling.hpp"

namespace py = pybind11;

namespace {

std::uint64_t as_uint64(py::handle value, const char* what) {
  // Python ints and numpy integer scalars (__index__); a bool, a float or an array is refused
  // by type, and the message names the type only (a value's repr can be data, or many lines).
  PyObject* index = (PyBool_Check(value.ptr()) || !PyIndex_Check(value.ptr()))
                        ? nullptr
                        : PyNumber_Index(value.ptr());
  if (index == nullptr) {
    PyErr_Clear();
    py::object cls = py::module_::import("dpcore.errors").attr("DpcoreTypeError");
    const std::string message = std::string(what) + " must be an integer, got " +
                                std::string(py::str(py::type::of(value).attr("__name__")));
    PyErr_SetString(cls.ptr(), message.c_str());
    throw py::error_already_set();
  }
  py::int_ number = py::reinterpret_steal<py::int_>(index);
  const unsigned long long out = PyLong_AsUnsignedLongLong(number.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    throw dpcore::InvalidArgument(std::string(what) + " must be in [0, 2^64), got " +
                                  std::string(py::str(number)));
  }
  return out;
}

dpcore::NoiseKey as_key(py::handle value) {
  if (!PyBytes_Check(value.ptr())) {
    py::object cls = py::module_::import("dpcore.errors").attr("DpcoreTypeError");
    const std::string message = "key must be 32 bytes, got " +
                                std::string(py::str(py::type::of(value).attr("__name__")));
    PyErr_SetString(cls.ptr(), message.c_str());
    throw py::error_already_set();
  }
  const std::string bytes = py::reinterpret_borrow<py::bytes>(value);
  if (bytes.size() != 32)
    throw dpcore::InvalidArgument("key must be 32 bytes, got " + std::to_string(bytes.size()));
  dpcore::NoiseKey key{};
  for (int i = 0; i < 32; ++i)  // little-endian words, as the RFC reads its key bytes
    key[i / 8] |= std::uint64_t(static_cast<unsigned char>(bytes[i])) << (8 * (i % 8));
  return key;
}

py::array_t<std::int64_t> discrete_gaussian(py::handle num, py::handle den, std::int64_t count,
                                            py::handle key_bytes, py::handle nonce_value) {
  const std::uint64_t n = as_uint64(num, "sigma_sq_num");
  const std::uint64_t d = as_uint64(den, "sigma_sq_den");
  const dpcore::NoiseKey key = as_key(key_bytes);
  const std::uint64_t nonce = as_uint64(nonce_value, "nonce");
  if (count < 0) throw dpcore::InvalidArgument("count must be >= 0, got " + std::to_string(count));
  (void)dpcore::record_cells(count, 1);  // the table cap, checked before allocating
  py::array_t<std::int64_t> out(count);
  std::int64_t* data = out.mutable_data();
  {
    py::gil_scoped_release release;
    dpcore::discrete_gaussian(n, d, count, key, nonce, data);
  }
  return out;
}

}  // namespace

void bind_noise(py::module_& m) {
  m.def("discrete_gaussian", &discrete_gaussian, py::arg("sigma_sq_num"),
        py::arg("sigma_sq_den"), py::arg("count"), py::arg("key"), py::arg("nonce") = 0,
        "Exact i.i.d. draws of the discrete Gaussian N_Z(0, num/den) as an int64 array\n"
        "(Canonne-Kamath-Steinke 2020, Alg. 1-3, integer arithmetic), from the ChaCha20\n"
        "keystream of a 32-byte key and a 64-bit nonce (never reuse a pair). The range\n"
        "limit: 2 * num * den * (floor(sqrt(num/den)) + 1)^2 < 2^128 after reducing num/den.");
}

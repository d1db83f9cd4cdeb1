// The dpcore._core extension: one entry point that registers every binding file and maps
// the kernels' C++ exceptions onto the Python classes in dpcore.errors.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

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
void bind_sliced_wasserstein(py::module_& m);
void bind_csv(py::module_& m);

[[noreturn]] void raise_type_error(const std::string& message);

namespace {

py::object& dpcore_type_error() {
  static py::object cls;
  return cls;
}

// "ndarray, list, str" for the arguments of a call (types only: the values can be data).
std::string type_names(const py::args& args, const py::kwargs& kwargs, std::size_t skip) {
  std::string out;
  for (std::size_t i = skip; i < args.size(); ++i)
    out += (out.empty() ? "" : ", ") + std::string(py::str(py::type::of(args[i]).attr("__name__")));
  for (auto item : kwargs)
    out += (out.empty() ? "" : ", ") + std::string(py::str(item.first)) + "=" +
           std::string(py::str(py::type::of(item.second).attr("__name__")));
  return out;
}

// The signatures listed in pybind11's multi-line "incompatible arguments" message, joined
// into one line. Only the part before "Invoked with:" is read: the repr of the arguments that
// follows can hold any text (an array's repr has its own indented lines).
std::string signatures(const std::string& full) {
  const std::string message = full.substr(0, full.find("\nInvoked with"));
  std::string out;
  std::size_t pos = 0;
  while ((pos = message.find("\n    ", pos)) != std::string::npos) {
    const std::size_t dot = message.find(". ", pos);
    if (dot == std::string::npos) break;
    const std::size_t end = std::min(message.find('\n', dot), message.size());
    out += (out.empty() ? "" : " | ") + message.substr(dot + 2, end - dot - 2);
    pos = end;
  }
  return out;
}

// numpy's forcecast would turn a complex array into its real part (with only a warning) and a
// string or object array into whatever float() makes of it: refuse them by type up front. A
// misaligned array (an offset view of a buffer) is refused too: pybind11 passes one whose
// dtype and order already match uncopied, and the kernels read and write whole values where
// the compiler may assume their alignment (undefined behaviour; a fault where a vector load
// demands it). Arrays inside a sequence argument of any kind (a list, a tuple, a deque: the
// bindings' sequence casters take them all), to a depth of three (gather_codes' columns,
// calibrate's (clique, potential) pairs), are checked the same way.
void check_arrays(const py::args& args, const py::kwargs& kwargs, const std::string& name,
                  std::size_t skip) {
  // path: the indices into the argument, named only when a check fails (a call's lists can
  // hold thousands of items)
  std::vector<std::size_t> path;
  auto where = [&](const std::string& which) {
    std::string out = name + "(): " + which;
    for (std::size_t i : path) out += "[" + std::to_string(i) + "]";
    return out;
  };
  std::function<void(py::handle, const std::string&)> check = [&](py::handle value,
                                                                   const std::string& which) {
    if (py::isinstance<py::array>(value)) {
      const auto array = py::reinterpret_borrow<py::array>(value);
      if (std::string("biuf").find(array.dtype().kind()) == std::string::npos)
        raise_type_error(where(which) + " must be a real numeric array, got dtype " +
                         std::string(py::str(value.attr("dtype"))));
      if (!(array.flags() & py::detail::npy_api::NPY_ARRAY_ALIGNED_))
        throw dpcore::InvalidArgument(where(which) +
                                      " must be an aligned array (an offset view of a buffer "
                                      "is not; a copy is)");
    } else if (path.size() < 3 && py::isinstance<py::sequence>(value) &&
               !py::isinstance<py::str>(value) && !py::isinstance<py::bytes>(value) &&
               !PyByteArray_Check(value.ptr())) {
      path.push_back(0);
      for (py::handle item : value) {
        check(item, which);
        ++path.back();
      }
      path.pop_back();
    }
  };
  for (std::size_t i = skip; i < args.size(); ++i)
    check(args[i], "argument " + std::to_string(i - skip + 1));
  for (auto item : kwargs) check(item.second, std::string(py::str(item.first)));
}

// pybind11's dispatcher raises a bare, multi-line TypeError ("f(): incompatible function
// arguments ...") when an argument has the wrong Python type, before any exception
// translator can run. `f` is replaced by a function with the same name and docstring that
// re-raises exactly that error as a one-line DpcoreTypeError; every other error passes as is.
py::cpp_function guarded(py::object f, const std::string& name, py::handle cls) {
  const std::size_t skip = cls ? 1 : 0;  // a method's self is not an argument to report
  auto call = [f, name, skip](const py::args& args, const py::kwargs& kwargs) -> py::object {
    check_arrays(args, kwargs, name, skip);
    try {
      return f(*args, **kwargs);
    } catch (py::error_already_set& e) {
      const std::string message = py::str(e.value());
      if (e.type().ptr() == PyExc_TypeError && message == "len() of unsized object") {
        // pybind11's list caster takes a 0-d array for a sequence, then len() fails.
        const std::string text = name + "(): got a 0-d array where a sequence is required; got (" +
                                 type_names(args, kwargs, skip) + ")";
        PyErr_SetString(dpcore_type_error().ptr(), text.c_str());
        throw py::error_already_set();
      }
      if (e.type().ptr() != PyExc_TypeError ||
          message.find("(): incompatible ") == std::string::npos)
        throw;
      const std::string text = message.substr(0, message.find(". The following")) +
                               "; expected " + signatures(message) + "; got (" +
                               type_names(args, kwargs, skip) + ")";
      PyErr_SetString(dpcore_type_error().ptr(), text.c_str());
      throw py::error_already_set();
    }
  };
  py::options options;
  options.disable_function_signatures();  // the original docstring already starts with them
  const std::string doc = py::getattr(f, "__doc__", py::str("")).is_none()
                              ? std::string()
                              : std::string(py::str(f.attr("__doc__")));
  if (cls) return py::cpp_function(call, py::name(name.c_str()), py::is_method(cls),
                                   py::doc(doc.c_str()));
  return py::cpp_function(call, py::name(name.c_str()), py::doc(doc.c_str()));
}

// Wraps every public function of `m` and every public method and constructor of its classes.
void guard_argument_types(py::module_& m) {
  for (auto item : py::dict(m.attr("__dict__"))) {
    const std::string name = py::str(item.first);
    if (name.rfind("_", 0) == 0) continue;
    py::handle value = item.second;
    if (PyCFunction_Check(value.ptr())) {
      m.attr(name.c_str()) = guarded(py::reinterpret_borrow<py::object>(value), name, {});
    } else if (PyType_Check(value.ptr())) {
      // A class made only by the kernels (CalibratedTree) has pybind11's slot __init__,
      // which raises a bare TypeError; it gets one that says so as DpcoreTypeError.
      const py::dict members = value.attr("__dict__");
      if (!members.contains("__init__") ||
          !PyInstanceMethod_Check(py::object(members["__init__"]).ptr())) {
        const std::string text = name + " cannot be constructed from Python arguments";
        value.attr("__init__") = py::cpp_function(
            [text](const py::args&, const py::kwargs&) { raise_type_error(text); },
            py::name("__init__"), py::is_method(value));
      }
      for (auto member : py::dict(value.attr("__dict__"))) {
        const std::string method = py::str(member.first);
        if ((method.rfind("_", 0) == 0 && method != "__init__") ||
            !PyInstanceMethod_Check(member.second.ptr()))
          continue;
        py::object fn = py::reinterpret_borrow<py::object>(
            PyInstanceMethod_GET_FUNCTION(member.second.ptr()));
        value.attr(method.c_str()) = guarded(fn, method, value);
      }
    }
  }
}

// A message on one line: values quoted in C++ messages (a method name, an attribute name) can
// hold control characters, and a Python error message is one line (Python's repr escapes).
std::string one_line(const char* text) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (const char* c = text; *c != '\0'; ++c) {
    const auto byte = static_cast<unsigned char>(*c);
    if (byte == '\n') out += "\\n";
    else if (byte == '\r') out += "\\r";
    else if (byte == '\t') out += "\\t";
    else if (byte < 0x20 || byte == 0x7f) { out += "\\x"; out += hex[byte >> 4]; out += hex[byte & 15]; }
    else out += *c;
  }
  return out;
}

}  // namespace

// For the binding files: raise dpcore.errors.DpcoreTypeError with `message`.
[[noreturn]] void raise_type_error(const std::string& message) {
  PyErr_SetString(dpcore_type_error().ptr(), one_line(message.c_str()).c_str());
  throw py::error_already_set();
}

PYBIND11_MODULE(_core, m) {
  m.doc() = "dpcore compiled kernels (C++17). Use the Python API in dpcore, not this module.";

  // Translate to the classes dpcore.errors defines, so Python code has one set of types.
  py::module_ errors = py::module_::import("dpcore.errors");
  static py::object invalid_argument = errors.attr("InvalidArgumentError");
  static py::object domain_error = errors.attr("DomainError");
  static py::object too_large = errors.attr("TableTooLargeError");
  dpcore_type_error() = errors.attr("DpcoreTypeError");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const dpcore::DomainError& e) {
      PyErr_SetString(domain_error.ptr(), one_line(e.what()).c_str());
    } catch (const dpcore::TableTooLarge& e) {
      PyErr_SetString(too_large.ptr(), one_line(e.what()).c_str());
    } catch (const dpcore::InvalidArgument& e) {
      PyErr_SetString(invalid_argument.ptr(), one_line(e.what()).c_str());
    } catch (const dpcore::Error& e) {
      PyErr_SetString(invalid_argument.ptr(), one_line(e.what()).c_str());
    } catch (const py::reference_cast_error&) {
      // A None (or a foreign object) where a bound C++ object is required by reference.
      PyErr_SetString(dpcore_type_error().ptr(), "argument must be a dpcore._core object, got None");
    } catch (const py::cast_error& e) {
      // A Python value (e.g. a callback's return) that does not convert to the C++ type.
      PyErr_SetString(dpcore_type_error().ptr(), one_line(e.what()).c_str());
    } catch (const std::length_error& e) {
      PyErr_SetString(too_large.ptr(), ("allocation too large: " + one_line(e.what())).c_str());
    }
  });

  bind_marginals(m);
  bind_factor(m);
  bind_junction_tree(m);
  bind_calibration(m);
  bind_estimation(m);
  bind_sampling(m);
  bind_noise(m);
  bind_sliced_wasserstein(m);
  bind_csv(m);
  guard_argument_types(m);
}

// Binding of the sliced Wasserstein kernels: read-only inputs are viewed as C-ordered float64
// (copied only when they are not), arrays the kernels update in place must already be
// C-ordered, writeable float64 of the right shape; the GIL is released while computing.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dpcore/errors.hpp"
#include "dpcore/sliced_wasserstein.hpp"

namespace py = pybind11;

[[noreturn]] void raise_type_error(const std::string& message);  // module.cpp

namespace {

using Doubles = py::array_t<double, py::array::c_style | py::array::forcecast>;

std::string type_name(py::handle obj) { return py::str(py::type::of(obj).attr("__name__")); }

// A read-only float64 C-ordered view of a real numeric numpy array of `ndim` dimensions.
Doubles as_doubles(py::handle obj, const std::string& what, int ndim) {
  if (!py::isinstance<py::array>(obj))
    raise_type_error(what + " must be a numpy array, got " + type_name(obj));
  const char kind = py::reinterpret_borrow<py::array>(obj).dtype().kind();
  if (kind != 'f' && kind != 'i' && kind != 'u')
    raise_type_error(what + " must be a real numeric array, got dtype kind '" +
                     std::string(1, kind) + "'");
  Doubles out = Doubles::ensure(obj);
  if (!out) throw py::error_already_set();
  if (out.ndim() != ndim)
    throw dpcore::InvalidArgument(what + " must be " + std::to_string(ndim) +
                                  "-dimensional, got " + std::to_string(out.ndim()) +
                                  " dimensions");
  return out;
}

// The particles as a matrix: a float64 array in C or Fortran order is read in place (PrivPGD
// keeps Fortran order: a marginal reads two contiguous columns); anything else is copied.
struct Particles {
  py::array keep;
  dpcore::ParticleMatrix matrix;
};

Particles as_particles(py::handle obj, const std::string& what) {
  if (!py::isinstance<py::array>(obj))
    raise_type_error(what + " must be a numpy array, got " + type_name(obj));
  auto array = py::reinterpret_borrow<py::array>(obj);
  const char kind = array.dtype().kind();
  if (kind != 'f' && kind != 'i' && kind != 'u')
    raise_type_error(what + " must be a real numeric array, got dtype kind '" +
                     std::string(1, kind) + "'");
  if (array.ndim() != 2)
    throw dpcore::InvalidArgument(what + " must be 2-dimensional, got " +
                                  std::to_string(array.ndim()) + " dimensions");
  const bool f_order = (array.flags() & py::array::f_style) && !(array.flags() & py::array::c_style);
  if (!array.dtype().is(py::dtype::of<double>()) ||
      !(array.flags() & (py::array::c_style | py::array::f_style))) {
    if (f_order || !(array.flags() & py::array::c_style))
      array = py::array_t<double, py::array::f_style | py::array::forcecast>::ensure(array);
    else
      array = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(array);
  }
  const py::ssize_t m = array.shape(0), d = array.shape(1);
  const bool c_order = array.flags() & py::array::c_style;
  dpcore::ParticleMatrix matrix;
  matrix.data = static_cast<double*>(const_cast<void*>(array.data()));
  matrix.rows = m;
  matrix.cols = d;
  matrix.row_stride = c_order ? d : 1;
  matrix.col_stride = c_order ? 1 : m;
  return {array, matrix};
}

// An array the kernel writes into: float64, writeable, with the particles' shape and strides.
double* writable(py::handle obj, const std::string& what, const py::array& like) {
  if (!py::isinstance<py::array>(obj))
    raise_type_error(what + " must be a numpy float64 array, got " + type_name(obj));
  auto array = py::reinterpret_borrow<py::array>(obj);
  if (!array.dtype().is(py::dtype::of<double>()) || !array.writeable())
    throw dpcore::InvalidArgument(what + " must be a writeable float64 array");
  if (array.ndim() != 2 || array.shape(0) != like.shape(0) || array.shape(1) != like.shape(1) ||
      array.strides(0) != like.strides(0) || array.strides(1) != like.strides(1))
    throw dpcore::InvalidArgument(what + " must have the particles' shape (" +
                                  std::to_string(like.shape(0)) + ", " +
                                  std::to_string(like.shape(1)) + ") and memory order");
  return static_cast<double*>(array.mutable_data());
}

std::int64_t as_index(py::handle item, const std::string& what) {
  if (PyBool_Check(item.ptr()) || !PyIndex_Check(item.ptr()))
    raise_type_error(what + " must be an integer, got " + type_name(item));
  const long long value = py::int_(py::reinterpret_borrow<py::object>(item)).cast<long long>();
  if (value < 0 || value > INT32_MAX)
    throw dpcore::InvalidArgument(what + " must be in [0, 2^31), got " + std::to_string(value));
  return value;
}

py::list as_list(py::handle seq, const std::string& what) {
  if (!PySequence_Check(seq.ptr()) || PyUnicode_Check(seq.ptr()) ||
      py::isinstance<py::array>(seq))
    raise_type_error(what + " must be a list or tuple, got " + type_name(seq));
  return py::list(py::reinterpret_borrow<py::object>(seq));
}

double sliced_wasserstein(py::handle particles_obj, py::handle pairs_obj, py::handle tables_obj,
                          py::handle directions_obj, py::handle grad_obj, int threads) {
  const Particles particles = as_particles(particles_obj, "particles");
  const py::list pairs = as_list(pairs_obj, "pairs");
  const py::list tables = as_list(tables_obj, "tables");
  if (pairs.size() != tables.size())
    throw dpcore::InvalidArgument("pairs and tables must have the same length, got " +
                                  std::to_string(pairs.size()) + " and " +
                                  std::to_string(tables.size()));
  std::vector<Doubles> keep;
  std::vector<dpcore::GridTarget> targets;
  for (std::size_t t = 0; t < pairs.size(); ++t) {
    const py::list pair = as_list(pairs[t], "pairs entries");
    if (pair.size() != 2)
      throw dpcore::InvalidArgument("pairs entries must be (i, j), got length " +
                                    std::to_string(pair.size()));
    keep.push_back(as_doubles(tables[t], "tables entries", 2));
    dpcore::GridTarget g;
    g.attr_i = static_cast<int>(as_index(pair[0], "attribute"));
    g.attr_j = static_cast<int>(as_index(pair[1], "attribute"));
    g.size_i = keep.back().shape(0);
    g.size_j = keep.back().shape(1);
    g.weights = keep.back().data();
    targets.push_back(g);
  }
  const Doubles directions = as_doubles(directions_obj, "directions", 3);
  if (directions.shape(0) != static_cast<py::ssize_t>(targets.size()) ||
      directions.shape(2) != 2)
    throw dpcore::InvalidArgument("directions must have shape (targets, K, 2) = (" +
                                  std::to_string(targets.size()) + ", K, 2)");
  double* grad = grad_obj.is_none() ? nullptr : writable(grad_obj, "grad", particles.keep);
  py::gil_scoped_release release;
  return dpcore::sliced_wasserstein(particles.matrix, targets, directions.data(),
                                    directions.shape(1), grad, threads);
}

void particle_adam_step(py::handle x_obj, py::handle grad_obj, py::handle avg_obj,
                        py::handle sq_obj, py::handle columns_obj, std::int64_t step,
                        double learning_rate, double beta1, double beta2, double eps, double keep,
                        std::uint64_t seed, int threads) {
  const Particles xs = as_particles(x_obj, "x");
  if (xs.keep.ptr() != x_obj.ptr())
    throw dpcore::InvalidArgument("x must be a writeable float64 array in C or Fortran order");
  double* x = writable(x_obj, "x", xs.keep);
  double* grad = writable(grad_obj, "grad", xs.keep);
  double* avg = writable(avg_obj, "exp_avg", xs.keep);
  double* sq = writable(sq_obj, "exp_avg_sq", xs.keep);
  if (x == grad || x == avg || x == sq || grad == avg || grad == sq || avg == sq)
    throw dpcore::InvalidArgument("x, grad, exp_avg and exp_avg_sq must be distinct arrays");
  std::vector<int> columns;
  for (py::handle c : as_list(columns_obj, "columns"))
    columns.push_back(static_cast<int>(as_index(c, "column")));
  dpcore::AdamOptions options;
  options.learning_rate = learning_rate;
  options.beta1 = beta1;
  options.beta2 = beta2;
  options.eps = eps;
  options.keep = keep;
  options.seed = seed;
  py::gil_scoped_release release;
  dpcore::particle_adam_step(xs.matrix, grad, avg, sq, columns, step, options, threads);
}

py::array_t<std::int64_t> snap_to_grid(py::handle particles_obj, py::handle sizes_obj) {
  const Particles particles = as_particles(particles_obj, "particles");
  std::vector<std::int64_t> sizes;
  for (py::handle s : as_list(sizes_obj, "sizes")) {
    if (PyBool_Check(s.ptr()) || !PyIndex_Check(s.ptr()))
      raise_type_error("sizes entries must be integers, got " + type_name(s));
    sizes.push_back(py::int_(py::reinterpret_borrow<py::object>(s)).cast<std::int64_t>());
  }
  py::array_t<std::int64_t> codes({particles.matrix.rows, particles.matrix.cols});
  std::int64_t* out = codes.mutable_data();
  {
    py::gil_scoped_release release;
    dpcore::snap_to_grid(particles.matrix, sizes, out);
  }
  return codes;
}

}  // namespace

void bind_sliced_wasserstein(py::module_& m) {
  m.attr("SLICED_KEY_BITS") = dpcore::kSlicedKeyBits;
  m.def("sliced_wasserstein", &sliced_wasserstein, py::arg("particles"), py::arg("pairs"),
        py::arg("tables"), py::arg("directions"), py::kw_only(), py::arg("grad") = py::none(),
        py::arg("threads") = 0,
        "Sum over targets of the mean over K directions of W2^2 between the projected m x d\n"
        "particles (in [0, 1]) on columns pairs[t] and the 2-D grid distribution tables[t]\n"
        "(cell centres (a + 0.5) / k). directions: (targets, K, 2). grad: optional m x d\n"
        "float64 array the gradient is added to.");
  m.def("particle_adam_step", &particle_adam_step, py::arg("x"), py::arg("grad"),
        py::arg("exp_avg"), py::arg("exp_avg_sq"), py::arg("columns"), py::arg("step"),
        py::kw_only(), py::arg("learning_rate") = 0.1, py::arg("beta1") = 0.9,
        py::arg("beta2") = 0.999, py::arg("eps") = 1e-8, py::arg("keep") = 1.0,
        py::arg("seed") = 0, py::arg("threads") = 0,
        "One sparse Adam step on columns of x (m x d float64, updated in place, clipped to\n"
        "[0, 1]); each non-zero gradient entry is kept with probability keep; grad's entries in\n"
        "columns are reset to 0.");
  m.def("snap_to_grid", &snap_to_grid, py::arg("particles"), py::arg("sizes"),
        "int64 codes min(floor(x * size), size - 1) of m x d particles in [0, 1].");
}

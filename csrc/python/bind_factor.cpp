// Bindings for the factor kernels: numpy arrays in, numpy arrays out. Axes are positions in
// the array (the Python Factor maps attribute names to axes).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "dpcore/domain.hpp"
#include "dpcore/errors.hpp"
#include "dpcore/factor.hpp"

namespace py = pybind11;

namespace {

using Array = py::array_t<double, py::array::c_style | py::array::forcecast>;

std::vector<std::int64_t> shape_of(const Array& a) {
  std::vector<std::int64_t> shape;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) shape.push_back(static_cast<std::int64_t>(a.shape(i)));
  return shape;
}

Array marginalize_array(const Array& values, const std::vector<int>& keep, bool log) {
  const std::vector<std::int64_t> shape = shape_of(values);
  std::vector<dpcore::AttrId> axes(shape.size());
  for (std::size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<dpcore::AttrId>(i);
  dpcore::check_attr_ids(keep, static_cast<int>(shape.size()), "kept axes");
  std::vector<std::int64_t> out_shape;
  std::vector<py::ssize_t> out_dims;
  for (int k : keep) {
    out_shape.push_back(shape[static_cast<std::size_t>(k)]);
    out_dims.push_back(static_cast<py::ssize_t>(shape[static_cast<std::size_t>(k)]));
  }
  const std::uint64_t out_cells = dpcore::checked_cell_count(out_shape);
  const dpcore::StrideMap map = dpcore::make_stride_map(axes, shape, keep, out_shape);
  Array out(out_dims);
  double* dst = out.mutable_data();
  const double* src = values.data();
  {
    py::gil_scoped_release release;
    dpcore::marginalize(src, map, dst, out_cells, log);
  }
  return out;
}

}  // namespace

void bind_factor(py::module_& m) {
  m.def("marginalize", &marginalize_array, py::arg("values"), py::arg("keep"),
        py::arg("log") = false,
        "Sum (log=False) or log-sum-exp (log=True) of `values` over the axes not in `keep`;\n"
        "the result's axes are `keep` in the given order.");
  m.def(
      "logsumexp",
      [](const Array& values) {
        return dpcore::logsumexp(values.data(), static_cast<std::uint64_t>(values.size()));
      },
      py::arg("values"), "Stable log(sum(exp(values))).");
  m.def(
      "checked_cell_count",
      [](const std::vector<std::int64_t>& shape) { return dpcore::checked_cell_count(shape); },
      py::arg("shape"),
      "Product of shape; InvalidArgumentError for sizes < 1, TableTooLargeError over the cap.");
  m.def("max_table_cells", &dpcore::max_table_cells, "Cap on the cells of one dense table.");
  m.def("set_max_table_cells", &dpcore::set_max_table_cells, py::arg("cells"),
        "Set the cap on the cells of one dense table; returns the previous cap.");
}

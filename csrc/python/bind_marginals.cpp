// Binding of the marginal counting kernel: numpy arrays are viewed in place (any integer
// dtype, any strides), output tables are allocated as numpy arrays, and the GIL is released
// while counting.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dpcore/errors.hpp"
#include "dpcore/marginals.hpp"
#include "dpcore/scores.hpp"

namespace py = pybind11;

[[noreturn]] void raise_type_error(const std::string& message);  // module.cpp

namespace {

std::string type_name(py::handle obj) { return py::str(py::type::of(obj).attr("__name__")); }

std::int64_t as_int64(py::handle item, const std::string& what) {
  // Accept Python ints and numpy integers (anything with __index__), not floats, bools or
  // arrays; messages name the type only (a repr can be data, or many lines).
  PyObject* index = (PyBool_Check(item.ptr()) || !PyIndex_Check(item.ptr()))
                        ? nullptr
                        : PyNumber_Index(item.ptr());
  if (index == nullptr) {
    PyErr_Clear();
    raise_type_error(what + " must be an integer, got " + type_name(item));
  }
  const py::object number = py::reinterpret_steal<py::object>(index);
  const long long value = PyLong_AsLongLong(number.ptr());
  if (value == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    throw dpcore::InvalidArgument(what + " must fit in 64 bits, got " +
                                  std::string(py::str(number)));
  }
  return value;
}

// The items of a Python sequence with a length; anything else (a str, a 0-d array, an
// iterator) is a DpcoreTypeError naming `what`.
std::vector<py::object> sequence_items(py::handle seq, const std::string& what,
                                       const std::string& rule) {
  const Py_ssize_t n = (!PySequence_Check(seq.ptr()) || PyUnicode_Check(seq.ptr()))
                           ? -1
                           : PySequence_Size(seq.ptr());
  if (n < 0) {
    PyErr_Clear();
    raise_type_error(what + " must be " + rule + ", got " + type_name(seq));
  }
  std::vector<py::object> out;
  out.reserve(static_cast<std::size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PySequence_GetItem(seq.ptr(), i);
    if (item == nullptr) throw py::error_already_set();
    out.push_back(py::reinterpret_steal<py::object>(item));
  }
  return out;
}

std::vector<std::int64_t> as_int64_list(py::handle seq, const std::string& what) {
  std::vector<std::int64_t> out;
  for (const py::object& item : sequence_items(seq, what, "a sequence of integers"))
    out.push_back(as_int64(item, what + " entries"));
  return out;
}

std::vector<std::vector<int>> as_subsets(py::handle seq) {
  std::vector<std::vector<int>> out;
  for (const py::object& subset :
       sequence_items(seq, "subsets", "a sequence of sequences of column indices")) {
    std::vector<int> cols;
    for (std::int64_t c : as_int64_list(subset, "subset")) {
      if (c < 0 || c > INT32_MAX)
        throw dpcore::InvalidArgument("attribute index must be >= 0, got " + std::to_string(c));
      cols.push_back(static_cast<int>(c));
    }
    out.push_back(std::move(cols));
  }
  return out;
}

dpcore::CodeType code_type(const py::dtype& dtype) {
  const char kind = dtype.kind();
  const auto size = dtype.itemsize();
  if (kind == 'i') {
    if (size == 1) return dpcore::CodeType::Int8;
    if (size == 2) return dpcore::CodeType::Int16;
    if (size == 4) return dpcore::CodeType::Int32;
    if (size == 8) return dpcore::CodeType::Int64;
  } else if (kind == 'u') {
    if (size == 1) return dpcore::CodeType::UInt8;
    if (size == 2) return dpcore::CodeType::UInt16;
    if (size == 4) return dpcore::CodeType::UInt32;
    if (size == 8) return dpcore::CodeType::UInt64;
  }
  raise_type_error("records must be an integer array, got dtype " +
                   std::string(py::str(static_cast<const py::handle&>(dtype))));
}

// Returns the array to keep alive (a native-byte-order copy only when needed) and its view.
std::pair<py::array, dpcore::RecordsView> view_records(py::handle obj) {
  if (!py::isinstance<py::array>(obj))
    raise_type_error("records must be a numpy integer array, got " + type_name(obj));
  auto array = py::reinterpret_borrow<py::array>(obj);
  const py::dtype dtype = array.dtype();
  (void)code_type(dtype);
  if (array.ndim() != 2)
    throw dpcore::InvalidArgument("records must be 2-dimensional (rows x columns), got " +
                                  std::to_string(array.ndim()) + " dimensions");
  if (dtype.attr("isnative").cast<bool>() == false)
    array = array.attr("astype")(dtype.attr("newbyteorder")("="));
  dpcore::RecordsView view;
  view.data = array.data();
  view.type = code_type(array.dtype());
  view.rows = array.shape(0);
  view.cols = array.shape(1);
  view.row_stride = array.strides(0);
  view.col_stride = array.strides(1);
  return {array, view};
}

dpcore::CountOptions make_options(py::handle names, std::uint64_t max_cells, int threads) {
  dpcore::CountOptions options;
  options.max_cells = max_cells;
  options.threads = threads;
  if (names.is_none()) return options;
  for (const py::object& name : sequence_items(names, "names", "a sequence of strings")) {
    if (!PyUnicode_Check(name.ptr()))
      raise_type_error("names entries must be strings, got " + type_name(name));
    options.column_names.push_back(py::str(name));
  }
  return options;
}

py::list count_marginals(py::handle records, py::handle sizes_obj, py::handle subsets_obj,
                         py::handle weights_obj, py::handle names, std::uint64_t max_cells,
                         int threads) {
  auto [array, view] = view_records(records);
  const std::vector<std::int64_t> sizes = as_int64_list(sizes_obj, "sizes");
  const std::vector<std::vector<int>> subsets = as_subsets(subsets_obj);
  const dpcore::CountOptions options = make_options(names, max_cells, threads);

  dpcore::WeightsView weights;
  py::array_t<double, py::array::c_style> weight_array;
  if (!weights_obj.is_none()) {
    if (!py::isinstance<py::array>(weights_obj))
      raise_type_error("weights must be a numpy float array, got " + type_name(weights_obj));
    const char kind = py::reinterpret_borrow<py::array>(weights_obj).dtype().kind();
    if (kind != 'f' && kind != 'i' && kind != 'u')
      raise_type_error("weights must be a real numeric array, got dtype kind '" +
                       std::string(1, kind) + "'");
    weight_array = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(
        weights_obj);
    if (weight_array.ndim() != 1)
      throw dpcore::InvalidArgument("weights must be 1-dimensional, got " +
                                    std::to_string(weight_array.ndim()) + " dimensions");
    weights.data = weight_array.data();
    weights.size = weight_array.shape(0);
  }

  // Sizes and caps are checked before any table is allocated.
  if (static_cast<std::int64_t>(sizes.size()) != view.cols)
    throw dpcore::InvalidArgument("sizes must have one entry per records column (" +
                                  std::to_string(view.cols) + "), got " +
                                  std::to_string(sizes.size()));
  for (std::size_t c = 0; c < sizes.size(); ++c)
    if (sizes[c] < 1)
      throw dpcore::InvalidArgument("attribute size must be >= 1, got " +
                                    std::to_string(sizes[c]) + " for column " +
                                    std::to_string(c));
  (void)dpcore::batch_cells(sizes, subsets, max_cells);
  py::list tables;
  std::vector<double*> outputs;
  for (const auto& subset : subsets) {
    std::vector<py::ssize_t> shape;
    for (int a : subset) shape.push_back(static_cast<py::ssize_t>(sizes[std::size_t(a)]));
    py::array_t<double> table(shape);
    outputs.push_back(table.mutable_data());
    tables.append(table);
  }
  {
    py::gil_scoped_release release;
    dpcore::count_marginals_into(view, sizes, subsets, outputs, weights, options);
  }
  return tables;
}

void validate_codes(py::handle records, py::handle sizes_obj, py::handle names, int threads) {
  auto [array, view] = view_records(records);
  const std::vector<std::int64_t> sizes = as_int64_list(sizes_obj, "sizes");
  const dpcore::CountOptions options = make_options(names, 0, threads);
  py::gil_scoped_release release;
  dpcore::validate_codes(view, sizes, options);
}

using Int64Array = py::array_t<std::int64_t, py::array::c_style>;
using DoubleArray = py::array_t<double, py::array::c_style>;

// Arrays of other integer dtypes (and lists) are converted by pybind11, floats refused; a
// non-contiguous one is copied; they are checked against each other before any cell is read.
py::tuple grid_l1(const Int64Array& cells, const DoubleArray& ref, double grid,
                  const Int64Array& sizes) {
  if (cells.ndim() != 1 || ref.ndim() != 1 || sizes.ndim() != 1)
    throw dpcore::InvalidArgument("grid_l1 takes 1-D cells, reference and sizes");
  if (cells.shape(0) != ref.shape(0))
    throw dpcore::InvalidArgument("cells and reference must have the same length, got " +
                                  std::to_string(cells.shape(0)) + " and " +
                                  std::to_string(ref.shape(0)));
  const auto k = static_cast<std::uint64_t>(sizes.shape(0));
  Int64Array out(sizes.shape(0));
  py::array_t<std::uint8_t> overflow(sizes.shape(0));
  {
    py::gil_scoped_release release;   // the sizes are checked against the cells by the kernel
    dpcore::grid_l1(cells.data(), ref.data(), static_cast<std::uint64_t>(cells.shape(0)), grid,
                    sizes.data(), k, out.mutable_data(), overflow.mutable_data());
  }
  return py::make_tuple(out, overflow.attr("astype")("bool"));
}

double max_abs_finite(const DoubleArray& values) {
  py::gil_scoped_release release;
  return dpcore::max_abs_finite(values.data(), static_cast<std::uint64_t>(values.size()));
}

double copy_max_abs_finite(const DoubleArray& src, const py::array& dst) {
  // dst: a writable, C-contiguous float64 array of src's size that does not overlap it, taken
  // as it is (never a converted copy, which would swallow the writes)
  const auto n = static_cast<std::uint64_t>(src.size());
  if (!dst.dtype().is(py::dtype::of<double>()) || !(dst.flags() & py::array::c_style) ||
      !dst.writeable())
    throw dpcore::InvalidArgument("dst must be a writable C-contiguous float64 array");
  if (dst.ndim() != 1 || static_cast<std::uint64_t>(dst.size()) != n)
    throw dpcore::InvalidArgument("dst must be 1-D with " + std::to_string(n) + " values, got " +
                                  std::to_string(dst.size()) + " in " +
                                  std::to_string(dst.ndim()) + " dimension(s)");
  const double* s = src.data();
  double* d = static_cast<double*>(const_cast<py::array&>(dst).mutable_data());
  if (n != 0 && s < d + n && d < s + n)
    throw dpcore::InvalidArgument("dst must not overlap src");
  py::gil_scoped_release release;
  return dpcore::copy_max_abs_finite(s, d, n);
}

}  // namespace

void bind_marginals(py::module_& m) {
  m.attr("MAX_CELLS_LIMIT") = dpcore::kMaxCellsLimit;
  m.def("count_marginals", &count_marginals, py::arg("records"), py::arg("sizes"),
        py::arg("subsets"), py::arg("weights") = py::none(), py::kw_only(),
        py::arg("names") = py::none(), py::arg("max_cells") = 0,
        py::arg("threads") = 0,
        "Count one float64 table per subset of column indices (shaped by the subset's sizes,\n"
        "in the order given) over an N x d integer array of codes (any integer dtype, any\n"
        "strides, read in place). weights: optional float array of length N. names: optional\n"
        "column names for error messages. max_cells caps the batch's total cells (0: the\n"
        "process-wide max_table_cells()).");
  m.def("validate_codes", &validate_codes, py::arg("records"), py::arg("sizes"), py::kw_only(),
        py::arg("names") = py::none(), py::arg("threads") = 0,
        "Raise DomainError naming the column, row and value of the first code outside\n"
        "[0, size) in an N x d integer array.");
  m.def("grid_l1", &grid_l1, py::arg("cells"), py::arg("reference"), py::arg("grid"),
        py::arg("sizes"),
        "Per segment of `sizes` cells: sum |cells - rint(grid * reference)| as int64 (exact),\n"
        "and a bool array flagging segments whose sum would overflow int64 (value 0 there).\n"
        "cells int64 and reference float64, contiguous; |cells| and |grid * reference| < 2^60.");
  m.def("copy_max_abs_finite", &copy_max_abs_finite, py::arg("src"), py::arg("dst"),
        "Copy src into dst (float64, same size, writable, C-contiguous, not overlapping) and\n"
        "return max |v| over the values, +inf when a value is NaN or infinite (one pass).");
  m.def("max_abs_finite", &max_abs_finite, py::arg("values"),
        "max |v| over a contiguous float64 array, +inf when a value is NaN or infinite.");
}

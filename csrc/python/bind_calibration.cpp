// Bindings for the Calibrator: Private-PGM's inner loop, one call per iteration with flat
// vectors in and out. Attributes are AttrIds; dpcore/inference/oracle.py maps names to ids.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "dpcore/calibration.hpp"
#include "dpcore/errors.hpp"

namespace py = pybind11;
using dpcore::AttrId;
using dpcore::Calibrator;
using dpcore::JunctionTree;

namespace {

using Array = py::array_t<double, py::array::c_style | py::array::forcecast>;

// run() and spread(): a flat vector of `in` values in (named `what` in the error), a fresh
// one of `out` values written by fn(in, out) without the GIL.
template <class F>
py::array_t<double> flat_call(const Array& values, std::uint64_t in, std::uint64_t out,
                              const char* what, F&& fn) {
  if (values.ndim() != 1 || static_cast<std::uint64_t>(values.size()) != in)
    throw dpcore::InvalidArgument(std::string(what) + " must be a flat vector of " +
                                  std::to_string(in) + " values, got shape with " +
                                  std::to_string(values.size()) + " values and " +
                                  std::to_string(values.ndim()) + " axes");
  py::array_t<double> result(static_cast<py::ssize_t>(out));
  {
    py::gil_scoped_release release;
    fn(values.data(), result.mutable_data());
  }
  return result;
}

}  // namespace

void bind_calibration(py::module_& m) {
  py::class_<Calibrator>(m, "Calibrator",
                         "A junction tree compiled for repeated calibration: flat log-potentials "
                         "in, flat query marginals out.")
      .def(py::init([](std::shared_ptr<JunctionTree> tree,
                       std::vector<std::vector<AttrId>> potentials,
                       std::vector<std::vector<AttrId>> queries) {
             return std::make_unique<Calibrator>(std::move(tree), std::move(potentials),
                                                 std::move(queries));
           }),
           py::arg("tree"), py::arg("potentials"), py::arg("queries"))
      .def_property_readonly("potential_cells", &Calibrator::potential_cells)
      .def_property_readonly("query_cells", &Calibrator::query_cells)
      .def(
          "run",
          [](Calibrator& c, const Array& potentials) {
            return flat_call(potentials, c.potential_cells(), c.query_cells(), "potentials",
                             [&](const double* in, double* out) { c.run(in, out); });
          },
          py::arg("potentials"),
          "Calibrate; returns the concatenated query marginals (each summing to 1).")
      .def(
          "spread",
          [](Calibrator& c, const Array& values) {
            return flat_call(values, c.query_cells(), c.potential_cells(), "query values",
                             [&](const double* in, double* out) { c.spread(in, out); });
          },
          py::arg("values"),
          "The transpose of the query map: query values broadcast into the first potential "
          "containing each query, summed.")
      .def("calibrated", [](const Calibrator& c) { return c.calibrated(); },
           "The calibrated tree of the last run (beliefs, separator marginals, log-partition).");
}

// Bindings for the per-group samplers (Algorithm 7 of papers/nist-mst.txt and i.i.d. draws),
// exposed so tests can check them directly. Whole-record sampling is CalibratedTree.sample
// (bind_junction_tree.cpp).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "dpcore/errors.hpp"
#include "dpcore/sampling.hpp"

namespace py = pybind11;

void bind_sampling(py::module_& m) {
  m.def(
      "sample_group",
      [](const py::array_t<double, py::array::c_style | py::array::forcecast>& p, std::int64_t m,
         const std::string& method, std::uint64_t seed) {
        if (p.ndim() != 1)
          throw dpcore::InvalidArgument("probabilities must be a 1-d array, got " +
                                        std::to_string(p.ndim()) + " dimensions");
        if (method != "round" && method != "sample")
          throw dpcore::InvalidArgument("method must be 'round' or 'sample', got '" + method + "'");
        const auto k = static_cast<std::size_t>(p.size());
        dpcore::check_probabilities(p.data(), k);
        if (m < 0)
          throw dpcore::InvalidArgument("number of draws must be >= 0, got " + std::to_string(m));
        (void)dpcore::record_cells(m, 1);  // before the output is allocated
        py::array_t<std::int64_t> out(static_cast<py::ssize_t>(m));
        dpcore::Rng rng(seed);
        if (method == "round")
          dpcore::round_group(p.data(), k, m, rng, out.mutable_data());
        else
          dpcore::sample_group(p.data(), k, m, rng, out.mutable_data());
        return out;
      },
      py::arg("p"), py::arg("m"), py::arg("method"), py::arg("seed"),
      "m values in [0, len(p)) drawn from p by randomized rounding or i.i.d. sampling; p must\n"
      "be finite, >= 0 and not all zero.");
}

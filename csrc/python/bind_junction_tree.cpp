// Bindings for junction trees and calibrated trees. Attributes are AttrIds (domain
// positions); dpcore/junction_tree.py maps names to ids.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dpcore/domain.hpp"
#include "dpcore/errors.hpp"
#include "dpcore/junction_tree.hpp"
#include "dpcore/sampling.hpp"

namespace py = pybind11;
using dpcore::AttrId;
using dpcore::CalibratedTree;
using dpcore::Factor;
using dpcore::JunctionTree;

namespace {

using Array = py::array_t<double, py::array::c_style | py::array::forcecast>;

py::array_t<double> to_array(const Factor& f) {
  std::vector<py::ssize_t> dims(f.shape().begin(), f.shape().end());
  py::array_t<double> out(dims);
  std::copy(f.values().begin(), f.values().end(), out.mutable_data());
  return out;
}

Factor to_factor(const JunctionTree& t, const std::vector<AttrId>& attrs, const Array& values) {
  dpcore::check_attr_ids(attrs, t.num_attrs(), "log-potential attributes");
  const std::vector<std::int64_t> shape = t.shape_of(attrs);
  if (values.ndim() != static_cast<py::ssize_t>(attrs.size()))
    throw dpcore::InvalidArgument("log-potential values must have " +
                                  std::to_string(attrs.size()) + " axes, got " +
                                  std::to_string(values.ndim()));
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (values.shape(static_cast<py::ssize_t>(i)) != shape[i])
      throw dpcore::InvalidArgument(
          "log-potential axis " + std::to_string(i) + " (attribute " + std::to_string(attrs[i]) +
          ") must have size " + std::to_string(shape[i]) + ", got " +
          std::to_string(values.shape(static_cast<py::ssize_t>(i))));
  std::vector<double> v(values.data(), values.data() + values.size());
  return Factor(attrs, shape, std::move(v));
}

}  // namespace

namespace {

// Records drawn column by column (dpcore::sample_columns), laid out row-major as T: the caller
// picks the compact code type, so no n x d int64 table is ever allocated.
// Blocks of `block` rows, block k drawn with seeds[k], into one n x d array: one workspace
// for all blocks (its memory is allocated, and faulted in, once), each block's codes written
// straight into its rows.
template <typename T>
py::array_t<T> records_array(const dpcore::CalibratedTree& c, std::int64_t n) {
  const auto& shape = c.tree().shape();
  for (std::size_t a = 0; a < shape.size(); ++a)
    if (static_cast<std::uint64_t>(shape[a]) - 1 > std::numeric_limits<T>::max())
      throw dpcore::InvalidArgument("attribute " + std::to_string(a) + " has " +
                                    std::to_string(shape[a]) + " values: too many for the dtype");
  (void)dpcore::record_cells(n, c.tree().num_attrs());  // before allocating
  return py::array_t<T>({static_cast<py::ssize_t>(n),
                         static_cast<py::ssize_t>(c.tree().num_attrs())});
}

template <typename T>
py::array_t<T> sampled_blocks(const dpcore::CalibratedTree& c, std::int64_t n,
                              dpcore::SampleMethod how, const std::vector<std::uint64_t>& seeds,
                              std::int64_t block) {
  if (block < 1)
    throw dpcore::InvalidArgument("block must be >= 1, got " + std::to_string(block));
  const std::int64_t blocks = n / block + (n % block != 0);
  if (static_cast<std::int64_t>(seeds.size()) != blocks)
    throw dpcore::InvalidArgument(std::to_string(n) + " rows in blocks of " +
                                  std::to_string(block) + " need " + std::to_string(blocks) +
                                  " seeds, got " + std::to_string(seeds.size()));
  const auto d = static_cast<std::size_t>(c.tree().num_attrs());
  py::array_t<T> out = records_array<T>(c, n);
  T* data = out.mutable_data();
  {
    py::gil_scoped_release release;
    dpcore::SampleWorkspace workspace;
    for (std::int64_t k = 0; k < blocks; ++k) {
      const std::int64_t start = k * block, rows = std::min(block, n - start);
      dpcore::columns_to_rows(dpcore::sample_columns(c, rows, how, seeds[std::size_t(k)],
                                                     workspace),
                              static_cast<std::size_t>(rows), data + std::size_t(start) * d);
    }
  }
  return out;
}

template <typename T>
py::array_t<T> sampled(const dpcore::CalibratedTree& c, std::int64_t n, dpcore::SampleMethod how,
                       std::uint64_t seed) {
  py::array_t<T> out = records_array<T>(c, n);
  T* data = out.mutable_data();
  {
    py::gil_scoped_release release;
    dpcore::columns_to_rows(dpcore::sample_columns(c, n, how, seed), static_cast<std::size_t>(n),
                            data);
  }
  return out;
}

dpcore::SampleMethod sample_method(const std::string& method) {
  if (method == "round") return dpcore::SampleMethod::kRound;
  if (method == "sample") return dpcore::SampleMethod::kSample;
  throw dpcore::InvalidArgument("method must be 'round' or 'sample', got '" + method + "'");
}

}  // namespace

void bind_junction_tree(py::module_& m) {
  py::class_<JunctionTree, std::shared_ptr<JunctionTree>>(
      m, "JunctionTree", "Junction tree over attribute ids 0..d-1 with the given sizes.")
      .def(py::init<std::vector<std::int64_t>, std::vector<std::vector<AttrId>>>(),
           py::arg("shape"), py::arg("cliques"))
      .def_property_readonly("shape", &JunctionTree::shape)
      .def_property_readonly("cliques", &JunctionTree::cliques)
      .def_property_readonly("input_cliques", &JunctionTree::input_cliques)
      .def_property_readonly("edges", &JunctionTree::edges)
      .def_property_readonly("order", &JunctionTree::order)
      .def("parent", &JunctionTree::parent, py::arg("clique"))
      .def("separator", &JunctionTree::separator, py::arg("clique"))
      .def_property_readonly("size", &JunctionTree::size)
      .def_property_readonly("size_mb", &JunctionTree::size_mb)
      .def("hypothetical_size_mb", &JunctionTree::hypothetical_size_mb, py::arg("extra_cliques"))
      .def(
          "hypothetical_sizes_mb",
          [](const JunctionTree& t, const std::vector<std::vector<std::vector<AttrId>>>& batch) {
            py::gil_scoped_release release;
            return t.hypothetical_sizes_mb(batch);
          },
          py::arg("extra_clique_sets"),
          "hypothetical_size_mb for each list of extra cliques, in one call.")
      .def("containing_clique", &JunctionTree::containing_clique, py::arg("attrs"))
      .def(
          "calibrate",
          [](std::shared_ptr<JunctionTree> self,
             const std::vector<std::pair<std::vector<AttrId>, Array>>& potentials) {
            std::vector<Factor> factors;
            factors.reserve(potentials.size());
            for (const auto& p : potentials) factors.push_back(to_factor(*self, p.first, p.second));
            py::gil_scoped_release release;
            return dpcore::calibrate(std::move(self), factors);
          },
          py::arg("log_potentials"),
          "Sum-product calibration; log_potentials is a list of (attribute ids, array).");

  py::class_<CalibratedTree>(m, "CalibratedTree", "Calibrated clique beliefs of a junction tree.")
      .def_property_readonly(
          "tree",
          [](const CalibratedTree& c) { return std::const_pointer_cast<JunctionTree>(c.tree_ptr()); })
      .def_property_readonly("log_partition", &CalibratedTree::log_partition)
      .def_property_readonly("beliefs",
                             [](const CalibratedTree& c) {
                               py::list out;
                               // in the tree's clique order, as Python's beliefs are
                               const auto& cliques = c.tree().cliques();
                               for (std::size_t i = 0; i < cliques.size(); ++i) {
                                 const Factor& f = c.beliefs()[i];
                                 out.append(to_array(f.attrs() == cliques[i]
                                                         ? f
                                                         : f.transpose(cliques[i])));
                               }
                               return out;
                             })
      .def(
          "project",
          [](const CalibratedTree& c, const std::vector<AttrId>& attrs) {
            Factor f;
            {
              py::gil_scoped_release release;
              f = c.project(attrs);
            }
            return to_array(f);
          },
          py::arg("attrs"))
      .def(
          "project_many",
          [](const CalibratedTree& c, const std::vector<std::vector<AttrId>>& attrs_list,
             bool by_source) {
            std::vector<Factor> fs;
            {
              py::gil_scoped_release release;
              fs = c.project_many(attrs_list, by_source);
            }
            py::list out;
            for (const Factor& f : fs) out.append(to_array(f));
            return out;
          },
          py::arg("attrs_list"), py::arg("by_source") = false)
      .def(
          "project_flat",
          [](const CalibratedTree& c, const std::vector<std::vector<AttrId>>& attrs_list,
             bool by_source, const std::vector<std::int64_t>& starts, std::int64_t size) {
            // project_many's marginals written into one zeroed flat vector of `size` cells,
            // query i's (row-major) from starts[i]: the caller's list of many small queries
            // gets one array, not one array object (and one copy) a query
            if (starts.size() != attrs_list.size())
              throw dpcore::InvalidArgument("starts must hold one offset per query, got " +
                                            std::to_string(starts.size()) + " for " +
                                            std::to_string(attrs_list.size()));
            if (size < 0) throw dpcore::InvalidArgument("size must be >= 0, got " + std::to_string(size));
            if (std::uint64_t(size) > dpcore::max_table_cells())
              throw dpcore::TableTooLarge("size must be at most " +
                                          std::to_string(dpcore::max_table_cells()) +
                                          " cells, got " + std::to_string(size));
            // each query's cells, and the queries by start: they must fit and not overlap
            const JunctionTree& tree = c.tree();
            std::vector<std::int64_t> cells(attrs_list.size());
            for (std::size_t i = 0; i < attrs_list.size(); ++i) {
              dpcore::check_attr_ids(attrs_list[i], tree.num_attrs(), "query");
              double n = 1.0;
              for (std::int64_t e : tree.shape_of(attrs_list[i])) n *= double(e);
              if (n > double(size))
                throw dpcore::InvalidArgument("query " + std::to_string(i) + " must fit in " +
                                              std::to_string(size) + " cells");
              cells[i] = std::int64_t(n);
            }
            std::vector<std::size_t> by_start(attrs_list.size());
            for (std::size_t i = 0; i < by_start.size(); ++i) by_start[i] = i;
            std::sort(by_start.begin(), by_start.end(),
                      [&](std::size_t x, std::size_t y) { return starts[x] < starts[y]; });
            std::int64_t end = 0;
            for (std::size_t i : by_start) {
              if (starts[i] < end || starts[i] > size - cells[i])
                throw dpcore::InvalidArgument(
                    "query " + std::to_string(i) + "'s " + std::to_string(cells[i]) +
                    " cells must fit from " + std::to_string(starts[i]) + " in " +
                    std::to_string(size) + " cells without overlapping another's");
              end = starts[i] + cells[i];
            }
            py::array_t<double> out(size);
            double* data = out.mutable_data();
            {
              py::gil_scoped_release release;
              // each query's values straight into its place (no Factor and copy a query)
              std::vector<double*> dest(attrs_list.size());
              std::int64_t at = 0;  // zeros between the queries' cells
              for (std::size_t i : by_start) {
                std::fill(data + at, data + starts[i], 0.0);
                dest[i] = data + starts[i];
                at = starts[i] + cells[i];
              }
              std::fill(data + at, data + size, 0.0);
              c.project_many_into(attrs_list, by_source, dest.data());
            }
            return out;
          },
          py::arg("attrs_list"), py::arg("by_source"), py::arg("starts"), py::arg("size"),
          "project_many's marginals in one flat vector of `size` cells (zeros elsewhere),\n"
          "query i's from starts[i].")
      .def(
          "sample",
          [](const CalibratedTree& c, std::int64_t n, const std::string& method,
             std::uint64_t seed, const std::string& dtype) -> py::array {
            const dpcore::SampleMethod how = sample_method(method);
            if (dtype == "uint8") return sampled<std::uint8_t>(c, n, how, seed);
            if (dtype == "uint16") return sampled<std::uint16_t>(c, n, how, seed);
            if (dtype == "uint32") return sampled<std::uint32_t>(c, n, how, seed);
            if (dtype == "int64") return sampled<std::int64_t>(c, n, how, seed);
            throw dpcore::InvalidArgument("dtype must be 'uint8', 'uint16', 'uint32' or 'int64', "
                                          "got '" + dtype + "'");
          },
          py::arg("n"), py::arg("method"), py::arg("seed"), py::arg("dtype") = "int64",
          "n x num_attrs codes drawn from the model, as `dtype` (one that holds every\n"
          "attribute's codes: checked).")
      .def(
          "sample_blocks",
          [](const CalibratedTree& c, std::int64_t n, const std::string& method,
             const std::vector<std::uint64_t>& seeds, std::int64_t block,
             const std::string& dtype) -> py::array {
            const dpcore::SampleMethod how = sample_method(method);
            if (dtype == "uint8") return sampled_blocks<std::uint8_t>(c, n, how, seeds, block);
            if (dtype == "uint16") return sampled_blocks<std::uint16_t>(c, n, how, seeds, block);
            if (dtype == "uint32") return sampled_blocks<std::uint32_t>(c, n, how, seeds, block);
            if (dtype == "int64") return sampled_blocks<std::int64_t>(c, n, how, seeds, block);
            throw dpcore::InvalidArgument("dtype must be 'uint8', 'uint16', 'uint32' or 'int64', "
                                          "got '" + dtype + "'");
          },
          py::arg("n"), py::arg("method"), py::arg("seeds"), py::arg("block"),
          py::arg("dtype") = "int64",
          "n x num_attrs codes in blocks of `block` rows, block k drawn as\n"
          "sample(rows, method, seeds[k], dtype) draws it (one seed a block), into one array.");
}

#include "dpcore/domain.hpp"

#include <atomic>
#include <limits>
#include <unordered_set>

#include "dpcore/errors.hpp"

namespace dpcore {

namespace {
std::atomic<std::uint64_t> g_max_cells{std::uint64_t{1} << 30};
}  // namespace

std::uint64_t max_table_cells() { return g_max_cells.load(std::memory_order_relaxed); }

std::uint64_t set_max_table_cells(std::uint64_t cells) {
  if (cells < 1) throw InvalidArgument("max_table_cells must be >= 1, got 0");
  return g_max_cells.exchange(cells);
}

std::uint64_t checked_cell_count(const std::vector<std::int64_t>& shape) {
  std::uint64_t cells = 1;
  bool overflow = false;
  for (std::int64_t s : shape) {
    if (s < 1) throw InvalidArgument("attribute size must be >= 1, got " + std::to_string(s));
    const auto u = static_cast<std::uint64_t>(s);
    if (cells > std::numeric_limits<std::uint64_t>::max() / u) overflow = true;
    cells = overflow ? cells : cells * u;
  }
  if (overflow)
    throw TableTooLarge("table cell count must fit in 64 bits, got a product that overflows");
  const std::uint64_t cap = max_table_cells();
  if (cells > cap)
    throw TableTooLarge("table cell count must be <= " + std::to_string(cap) + ", got " +
                        std::to_string(cells));
  return cells;
}

double cell_count_estimate(const std::vector<std::int64_t>& shape) {
  double cells = 1.0;
  for (std::int64_t s : shape) cells *= static_cast<double>(s);
  return cells;
}

Domain::Domain(std::vector<std::string> attrs, std::vector<std::int64_t> shape)
    : attrs_(std::move(attrs)), shape_(std::move(shape)) {
  if (attrs_.size() != shape_.size())
    throw InvalidArgument("domain needs one size per attribute, got " +
                          std::to_string(attrs_.size()) + " names and " +
                          std::to_string(shape_.size()) + " sizes");
  std::unordered_set<std::string> seen;
  for (std::size_t i = 0; i < attrs_.size(); ++i) {
    if (attrs_[i].empty()) throw InvalidArgument("attribute names must be non-empty");
    if (!seen.insert(attrs_[i]).second)
      throw InvalidArgument("attribute names must be unique, got '" + attrs_[i] + "' twice");
    if (shape_[i] < 1)
      throw InvalidArgument("size of attribute '" + attrs_[i] + "' must be >= 1, got " +
                            std::to_string(shape_[i]));
  }
}

std::int64_t Domain::size_of(AttrId id) const {
  if (id < 0 || id >= num_attrs())
    throw InvalidArgument("attribute id must be in [0, " + std::to_string(num_attrs()) +
                          "), got " + std::to_string(id));
  return shape_[static_cast<std::size_t>(id)];
}

AttrId Domain::index_of(const std::string& name) const {
  for (std::size_t i = 0; i < attrs_.size(); ++i)
    if (attrs_[i] == name) return static_cast<AttrId>(i);
  throw InvalidArgument("attribute must be in the domain, got unknown '" + name + "'");
}

std::vector<std::int64_t> Domain::shape_of(const std::vector<AttrId>& ids) const {
  check_attr_ids(ids, num_attrs(), "attribute ids");
  std::vector<std::int64_t> out;
  out.reserve(ids.size());
  for (AttrId id : ids) out.push_back(shape_[static_cast<std::size_t>(id)]);
  return out;
}

std::uint64_t Domain::cells(const std::vector<AttrId>& ids) const {
  return checked_cell_count(shape_of(ids));
}

void check_attr_ids(const std::vector<AttrId>& ids, int num_attrs, const char* what) {
  std::vector<bool> seen(static_cast<std::size_t>(num_attrs > 0 ? num_attrs : 0), false);
  for (AttrId id : ids) {
    if (id < 0 || id >= num_attrs)
      throw InvalidArgument(std::string(what) + ": attribute id must be in [0, " +
                            std::to_string(num_attrs) + "), got " + std::to_string(id));
    if (seen[static_cast<std::size_t>(id)])
      throw InvalidArgument(std::string(what) + ": attribute ids must be distinct, got " +
                            std::to_string(id) + " twice");
    seen[static_cast<std::size_t>(id)] = true;
  }
}

std::string attrs_text(const std::vector<AttrId>& attrs) {
  std::string out = "(";
  for (std::size_t i = 0; i < attrs.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(attrs[i]);
  }
  return out + ")";
}

}  // namespace dpcore

// Synthetic data from an integer-coded CSV with no Python: the C++ service path.
//
//   synthesize_csv data.csv [--domain domain.json] [--rows N] [--seed S]
//                  [--method round|sample] [--out synthetic.csv]
//
// 1. Reads the header and integer codes. Attribute sizes come from --domain (the
//    {"column": size} JSON file), else from "<stem>-domain.json" beside the CSV, else from the
//    data (max code + 1); the program says which.
// 2. Counts every 1- and 2-way marginal in one batched kernel call.
// 3. Fits the Chow-Liu tree (maximum spanning tree on empirical mutual information) and its
//    exact model: log-potentials log p(root) and log p(child | parent) per tree edge, so the
//    calibrated model is the data's tree distribution (log-partition 0, edge marginals equal
//    to the data's).
// 4. Samples records from the calibrated junction tree and reports how well the synthetic
//    data's 2-way marginals match (total variation distance). Not private: this shows the
//    kernels; the private mechanisms live in the Python package.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "dpcore/errors.hpp"
#include "dpcore/factor.hpp"
#include "dpcore/junction_tree.hpp"
#include "dpcore/marginals.hpp"
#include "dpcore/sampling.hpp"

namespace {

struct Table {
  std::vector<std::string> names;
  std::vector<std::int64_t> codes;  // row-major
  std::int64_t rows = 0;
};

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

Table read_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  Table t;
  std::string line;
  if (!std::getline(in, line)) throw std::runtime_error(path + ": empty file, no header");
  if (!line.empty() && line.back() == '\r') line.pop_back();
  t.names = split(line);
  std::int64_t line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const auto cells = split(line);
    if (cells.size() != t.names.size())
      throw std::runtime_error(path + ": line " + std::to_string(line_no) + " has " +
                               std::to_string(cells.size()) + " fields, the header has " +
                               std::to_string(t.names.size()));
    for (std::size_t j = 0; j < cells.size(); ++j) {
      char* end = nullptr;
      const long long v = std::strtoll(cells[j].c_str(), &end, 10);
      if (cells[j].empty() || *end != '\0')
        throw std::runtime_error(path + ": column '" + t.names[j] + "', line " +
                                 std::to_string(line_no) + ": '" + cells[j] +
                                 "' is not an integer code");
      t.codes.push_back(v);
    }
    ++t.rows;
  }
  return t;
}

// Reads {"column": size, ...}: just the string keys and integer values this format holds.
std::vector<std::int64_t> read_domain(const std::string& path,
                                      const std::vector<std::string>& names) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::int64_t> sizes;
  for (const auto& name : names) {
    const std::string key = "\"" + name + "\"";
    const auto at = text.find(key);
    if (at == std::string::npos)
      throw std::runtime_error(path + ": no size for column '" + name + "'");
    const auto colon = text.find(':', at + key.size());
    sizes.push_back(std::strtoll(text.c_str() + colon + 1, nullptr, 10));
  }
  return sizes;
}

bool file_exists(const std::string& path) { return std::ifstream(path).good(); }

double mutual_information(const std::vector<double>& joint, const std::vector<double>& pa,
                          const std::vector<double>& pb, double n) {
  double mi = 0.0;
  const std::size_t sb = pb.size();
  for (std::size_t i = 0; i < pa.size(); ++i)
    for (std::size_t j = 0; j < sb; ++j) {
      const double c = joint[i * sb + j];
      if (c > 0) mi += c / n * std::log(c * n / (pa[i] * pb[j]));
    }
  return mi;
}

double total_variation(const std::vector<double>& a, const std::vector<double>& b) {
  double sa = 0, sb = 0, tv = 0;
  for (double x : a) sa += x;
  for (double x : b) sb += x;
  for (std::size_t i = 0; i < a.size(); ++i) tv += std::fabs(a[i] / sa - b[i] / sb);
  return tv / 2;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int run(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s data.csv [--domain domain.json] [--rows N] [--seed S] "
                 "[--method round|sample] [--out synthetic.csv]\n",
                 argv[0]);
    return 2;
  }
  const std::string csv = argv[1];
  std::string domain_path, out_path, method_name = "round";
  std::int64_t rows = -1;
  std::uint64_t seed = 0;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) throw std::runtime_error("missing value after " + arg);
    const std::string value = argv[++i];
    if (arg == "--domain") domain_path = value;
    else if (arg == "--rows") rows = std::strtoll(value.c_str(), nullptr, 10);
    else if (arg == "--seed") seed = std::strtoull(value.c_str(), nullptr, 10);
    else if (arg == "--method") method_name = value;
    else if (arg == "--out") out_path = value;
    else throw std::runtime_error("unknown option " + arg);
  }
  if (method_name != "round" && method_name != "sample")
    throw std::runtime_error("--method must be round or sample, got " + method_name);

  auto t0 = std::chrono::steady_clock::now();
  const Table data = read_csv(csv);
  const auto d = static_cast<int>(data.names.size());
  std::printf("read %lld records x %d attributes from %s (%.0f ms)\n",
              static_cast<long long>(data.rows), d, csv.c_str(), ms_since(t0));
  if (domain_path.empty()) {
    const auto dot = csv.rfind('.');
    const std::string guess = csv.substr(0, dot) + "-domain.json";
    if (file_exists(guess)) domain_path = guess;
  }
  std::vector<std::int64_t> sizes;
  if (!domain_path.empty()) {
    sizes = read_domain(domain_path, data.names);
    std::printf("attribute sizes from %s\n", domain_path.c_str());
  } else {
    sizes.assign(static_cast<std::size_t>(d), 1);
    for (std::int64_t r = 0; r < data.rows; ++r)
      for (int j = 0; j < d; ++j)
        sizes[std::size_t(j)] = std::max(sizes[std::size_t(j)],
                                         data.codes[std::size_t(r * d + j)] + 1);
    std::printf("attribute sizes from the data (max code + 1; no domain file found)\n");
  }
  if (rows < 0) rows = data.rows;

  // 1- and 2-way marginals, one batched call.
  const auto records = dpcore::records_view(data.codes.data(), data.rows, d);
  std::vector<std::vector<int>> subsets;
  for (int a = 0; a < d; ++a) subsets.push_back({a});
  std::vector<std::pair<int, int>> pairs;
  for (int a = 0; a < d; ++a)
    for (int b = a + 1; b < d; ++b) {
      subsets.push_back({a, b});
      pairs.emplace_back(a, b);
    }
  dpcore::CountOptions options;
  options.column_names = data.names;
  t0 = std::chrono::steady_clock::now();
  const auto tables = dpcore::count_marginals(records, sizes, subsets, {}, options);
  std::printf("counted %zu marginals in %.2f ms\n", subsets.size(), ms_since(t0));

  // Chow-Liu tree: Prim's maximum spanning tree on mutual information.
  const double n = static_cast<double>(std::max<std::int64_t>(data.rows, 1));
  std::vector<std::vector<double>> mi(std::size_t(d), std::vector<double>(std::size_t(d), 0.0));
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const auto [a, b] = pairs[k];
    mi[std::size_t(a)][std::size_t(b)] = mi[std::size_t(b)][std::size_t(a)] = mutual_information(
        tables[std::size_t(d) + k], tables[std::size_t(a)], tables[std::size_t(b)], n);
  }
  std::vector<int> parent(std::size_t(d), -1);
  std::vector<char> in_tree(std::size_t(d), 0);
  std::vector<double> best(std::size_t(d), -1.0);
  std::vector<int> order;
  if (d > 0) best[0] = 0.0;
  for (int step = 0; step < d; ++step) {
    int next = -1;
    for (int v = 0; v < d; ++v)
      if (!in_tree[std::size_t(v)] && (next < 0 || best[std::size_t(v)] > best[std::size_t(next)]))
        next = v;
    in_tree[std::size_t(next)] = 1;
    order.push_back(next);
    for (int v = 0; v < d; ++v)
      if (!in_tree[std::size_t(v)] && mi[std::size_t(next)][std::size_t(v)] > best[std::size_t(v)]) {
        best[std::size_t(v)] = mi[std::size_t(next)][std::size_t(v)];
        parent[std::size_t(v)] = next;
      }
  }

  // The tree model: log p(root) + sum over edges of log p(child | parent).
  auto pair_index = [&](int a, int b) {
    for (std::size_t k = 0; k < pairs.size(); ++k)
      if (pairs[k] == std::make_pair(std::min(a, b), std::max(a, b))) return std::size_t(d) + k;
    throw std::logic_error("pair not counted");
  };
  std::vector<dpcore::Factor> potentials;
  std::vector<std::vector<dpcore::AttrId>> cliques;
  for (int v : order) {
    const int p = parent[std::size_t(v)];
    if (p < 0) {  // root
      std::vector<double> logp;
      for (double c : tables[std::size_t(v)]) logp.push_back(std::log(c / n));
      potentials.emplace_back(std::vector<dpcore::AttrId>{v}, std::vector<std::int64_t>{sizes[std::size_t(v)]}, logp);
      continue;
    }
    const auto lo = std::min(p, v), hi = std::max(p, v);
    const auto& joint = tables[pair_index(p, v)];  // over (lo, hi)
    const auto& parent_counts = tables[std::size_t(p)];
    const std::int64_t s_hi = sizes[std::size_t(hi)];
    std::vector<double> logc(joint.size());
    for (std::size_t cell = 0; cell < joint.size(); ++cell) {
      const auto parent_code = std::size_t(p == lo ? cell / std::size_t(s_hi) : cell % std::size_t(s_hi));
      const double np = parent_counts[parent_code];
      logc[cell] = np > 0 ? std::log(joint[cell] / np) : 0.0;  // unseen parent value: uniform
    }
    potentials.emplace_back(std::vector<dpcore::AttrId>{lo, hi},
                            std::vector<std::int64_t>{sizes[std::size_t(lo)], s_hi}, logc);
    cliques.push_back({lo, hi});
  }

  t0 = std::chrono::steady_clock::now();
  auto tree = std::make_shared<const dpcore::JunctionTree>(sizes, cliques);
  const dpcore::CalibratedTree model = dpcore::calibrate(tree, potentials);
  std::printf("junction tree: %zu cliques, %llu cells (%.3f MB); calibrated in %.2f ms, "
              "log-partition %.2e (0 for the exact tree model)\n",
              tree->cliques().size(), static_cast<unsigned long long>(tree->size()),
              tree->size_mb(), ms_since(t0), model.log_partition());
  double worst_edge = 0.0;
  for (const auto& c : cliques) {
    const auto belief = model.project(c);
    worst_edge = std::max(worst_edge, total_variation(belief.values(), tables[pair_index(c[0], c[1])]));
  }
  std::printf("model vs data on the %zu tree edges: max total variation %.2e\n", cliques.size(),
              worst_edge);

  const auto method =
      method_name == "round" ? dpcore::SampleMethod::kRound : dpcore::SampleMethod::kSample;
  t0 = std::chrono::steady_clock::now();
  const auto synthetic = dpcore::sample_records(model, rows, method, seed);
  std::printf("sampled %lld records (%s, seed %llu) in %.2f ms\n", static_cast<long long>(rows),
              method_name.c_str(), static_cast<unsigned long long>(seed), ms_since(t0));

  const auto synth_view = dpcore::records_view(synthetic.data(), rows, d);
  const auto synth_tables = dpcore::count_marginals(synth_view, sizes, subsets, {}, options);
  double tv_sum = 0.0, tv_max = 0.0, tv_edges = 0.0;
  for (std::size_t k = 0; k < pairs.size(); ++k) {
    const double tv = total_variation(synth_tables[std::size_t(d) + k], tables[std::size_t(d) + k]);
    tv_sum += tv;
    tv_max = std::max(tv_max, tv);
  }
  for (const auto& c : cliques)
    tv_edges += total_variation(synth_tables[pair_index(c[0], c[1])], tables[pair_index(c[0], c[1])]);
  std::printf("synthetic vs data, 2-way marginals: mean TV %.4f, max TV %.4f; "
              "tree edges mean TV %.4f\n",
              pairs.empty() ? 0.0 : tv_sum / double(pairs.size()), tv_max,
              cliques.empty() ? 0.0 : tv_edges / double(cliques.size()));

  if (!out_path.empty()) {
    const std::string tmp = out_path + ".tmp";
    {
      std::ofstream out(tmp);
      for (int j = 0; j < d; ++j) out << (j ? "," : "") << data.names[std::size_t(j)];
      out << "\n";
      for (std::int64_t r = 0; r < rows; ++r) {
        for (int j = 0; j < d; ++j) out << (j ? "," : "") << synthetic[std::size_t(r * d + j)];
        out << "\n";
      }
      if (!out) throw std::runtime_error("could not write " + tmp);
    }
    if (std::rename(tmp.c_str(), out_path.c_str()) != 0)
      throw std::runtime_error("could not rename " + tmp + " to " + out_path);
    std::printf("wrote %s\n", out_path.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

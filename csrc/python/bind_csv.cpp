// Bindings for the CSV splitter and formatter (dpcore.csvblocks' reader, dpcore.encoding's
// table writer).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "dpcore/code_csv.hpp"
#include "dpcore/csv.hpp"
#include "dpcore/errors.hpp"

namespace py = pybind11;

[[noreturn]] void raise_type_error(const std::string& message);

namespace {

// A NumPy array of integers or booleans that int64 holds exactly (no uint64: values past
// 2^63 - 1 would wrap).
bool integer_array(const py::handle& obj) {
  if (!py::isinstance<py::array>(obj)) return false;
  const py::dtype dtype = py::reinterpret_borrow<py::array>(obj).dtype();
  return dtype.kind() == 'i' || dtype.kind() == 'b' || (dtype.kind() == 'u' && dtype.itemsize() < 8);
}

// The positions as a NumPy array that owns the vector (no copy).
py::array_t<std::int32_t> own(std::vector<std::int32_t>&& positions) {
  auto* heap = new std::vector<std::int32_t>(std::move(positions));
  py::capsule owner(heap, [](void* p) { delete static_cast<std::vector<std::int32_t>*>(p); });
  return py::array_t<std::int32_t>(static_cast<py::ssize_t>(heap->size()), heap->data(), owner);
}

std::string_view bytes_of(const py::buffer& data, py::buffer_info* info) {
  *info = data.request();
  if (info->ndim != 1 || info->itemsize != 1 || (info->size > 1 && info->strides[0] != 1))
    throw dpcore::InvalidArgument("data must be a contiguous 1-d buffer of bytes");
  return {static_cast<const char*>(info->ptr), static_cast<std::size_t>(info->size)};
}

char one_byte(const std::string& sep) {
  if (sep.size() != 1)
    throw dpcore::InvalidArgument("the delimiter must be one byte, got " +
                                  std::to_string(sep.size()));
  return sep[0];
}

// A split's outcome for Python: ("plain", rows, [(positions, texts[, first])]), ("not plain",
// 0, None), ("ragged", line, None) or ("not utf-8", column, None).
py::tuple block_tuple(dpcore::CsvSplit status, std::size_t row, dpcore::CsvBlock& block,
                      bool with_first) {
  if (status == dpcore::CsvSplit::kNotPlain) return py::make_tuple("not plain", 0, py::none());
  if (status == dpcore::CsvSplit::kRagged) return py::make_tuple("ragged", row, py::none());
  py::list out;
  for (std::size_t j = 0; j < block.index.size(); ++j) {
    py::list texts;
    for (std::string_view t : block.texts[j]) {
      PyObject* s = PyUnicode_DecodeUTF8(t.data(), static_cast<py::ssize_t>(t.size()), "strict");
      if (s == nullptr) {             // not UTF-8: a status, like a ragged line
        PyErr_Clear();
        return py::make_tuple("not utf-8", j, py::none());
      }
      texts.append(py::reinterpret_steal<py::str>(s));
    }
    py::array_t<std::int32_t> positions = own(std::move(block.index[j]));
    if (with_first)
      out.append(py::make_tuple(positions, texts, block.first[j]));
    else
      out.append(py::make_tuple(positions, texts));
  }
  return py::make_tuple("plain", block.rows, out);
}

// CodeCsvFormat::format for codes of the array's dtype (strides in elements).
template <typename T>
std::size_t format_codes(const dpcore::CodeCsvFormat& self, const py::array& codes,
                         const std::vector<const double*>& uniform, char* out,
                         std::size_t capacity) {
  const auto itemsize = static_cast<py::ssize_t>(sizeof(T));
  if (codes.strides(0) % itemsize != 0 || codes.strides(1) % itemsize != 0)
    throw dpcore::InvalidArgument("codes must be strided in whole elements");
  return self.format(static_cast<const T*>(codes.data()), static_cast<std::size_t>(codes.shape(0)),
                     codes.strides(0) / itemsize, codes.strides(1) / itemsize, uniform, out,
                     capacity);
}

std::vector<double> doubles(const py::handle& obj, const std::string& what) {
  if (obj.is_none()) return {};
  const auto a = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(obj);
  if (!a || a.ndim() != 1)
    throw dpcore::InvalidArgument(what + " must be a 1-d array of numbers");
  return std::vector<double>(a.data(), a.data() + a.size());
}

// gather_codes for an output of T: every table's codes are checked to fit T, every position
// to lie in its table, before anything is written.
using GatherPositions = py::array_t<std::int32_t, py::array::c_style>;
using GatherTable = py::array_t<std::int64_t, py::array::c_style>;

template <typename T>
void gather_into(const std::vector<GatherPositions>& positions,
                 const std::vector<GatherTable>& tables, const std::vector<bool>& direct,
                 py::array& out) {
  const std::size_t columns = positions.size();
  const std::size_t rows = columns == 0 ? 0 : std::size_t(positions[0].size());
  constexpr auto top = static_cast<std::uint64_t>(std::numeric_limits<T>::max());
  std::vector<const std::int32_t*> pos(columns);
  std::vector<const std::int64_t*> table(columns);
  for (std::size_t j = 0; j < columns; ++j) {
    const GatherTable& t = tables[j];
    const auto size = static_cast<std::int64_t>(t.size());
    for (std::int64_t k = 0; k < size; ++k)
      if (t.data()[k] < 0 || static_cast<std::uint64_t>(t.data()[k]) > top)
        throw dpcore::InvalidArgument("column " + std::to_string(j) + ": code " +
                                      std::to_string(t.data()[k]) + " does not fit the output");
    const std::int32_t* p = positions[j].data();
    for (std::size_t r = 0; r < rows; ++r) {
      const bool bad = p[r] >= 0 ? (direct[j] ? std::uint64_t(p[r]) > top : p[r] >= size)
                                 : !direct[j] || -std::int64_t(p[r]) - 1 >= size;
      if (bad)
        throw dpcore::InvalidArgument("column " + std::to_string(j) + ", row " +
                                      std::to_string(r) + ": position " + std::to_string(p[r]) +
                                      " outside its table of " + std::to_string(size));
    }
    pos[j] = p;
    table[j] = t.data();
  }
  T* o = static_cast<T*>(out.mutable_data());
  // A tile of rows at a time (its rows of output stay in the L1 cache), column by column
  // within it: a column's positions, table and kind are held in registers for the tile. Row
  // by row, each byte stored (T = uint8: a char, which may alias anything) made the compiler
  // reload the column's pointers and its bit of `direct` for every field.
  constexpr std::size_t kTile = 256;
  for (std::size_t r0 = 0; r0 < rows; r0 += kTile) {
    const std::size_t r1 = std::min(rows, r0 + kTile);
    for (std::size_t j = 0; j < columns; ++j) {
      const std::int32_t* const pj = pos[j];
      const std::int64_t* const tj = table[j];
      T* oj = o + r0 * columns + j;
      if (direct[j]) {
        for (std::size_t r = r0; r < r1; ++r, oj += columns) {
          const std::int32_t p = pj[r];
          *oj = p >= 0 ? static_cast<T>(p) : static_cast<T>(tj[-std::int64_t(p) - 1]);
        }
      } else {
        for (std::size_t r = r0; r < r1; ++r, oj += columns) *oj = static_cast<T>(tj[pj[r]]);
      }
    }
  }
}

}  // namespace

void bind_csv(py::module_& m) {
  m.def(
      "split_csv",
      [](const py::buffer& data, const std::string& sep, std::size_t columns) -> py::tuple {
        const char delimiter = one_byte(sep);
        py::buffer_info info;
        const std::string_view text = bytes_of(data, &info);
        dpcore::CsvBlock block;
        std::size_t row = 0;
        // The GIL stays held: the buffer may be writable, and no Python code may change it
        // between the split's line count and its scan.
        const dpcore::CsvSplit status = dpcore::split_csv(text, delimiter, columns, &block, &row);
        return block_tuple(status, row, block, false);
      },
      py::arg("data"), py::arg("sep"), py::arg("columns"),
      "Split whole CSV lines (bytes; no quoting) into `columns` fields a line: (\"plain\",\n"
      "rows, [(positions int32, distinct texts)] a column), (\"not plain\", 0, None) for a\n"
      "quote, a bare carriage return or an empty line, (\"ragged\", line, None) for a line\n"
      "with another field count, (\"not utf-8\", column, None) for a text that is not UTF-8.");
  py::class_<dpcore::CsvSplitter>(
      m, "CsvSplitter",
      "split_csv for the blocks of one file in order, each column keeping its distinct texts\n"
      "from block to block (up to `keep` a column; past that a column starts afresh at the\n"
      "next block): a text is new once a file, not once a block.")
      .def(py::init([](const std::string& sep, std::size_t columns, std::size_t keep) {
             return dpcore::CsvSplitter(one_byte(sep), columns, keep);
           }),
           py::arg("sep"), py::arg("columns"), py::arg("keep"))
      .def(
          "split",
          [](dpcore::CsvSplitter& self, const py::buffer& data) -> py::tuple {
            py::buffer_info info;
            const std::string_view text = bytes_of(data, &info);
            dpcore::CsvBlock block;
            std::size_t row = 0;
            // The GIL stays held (as for split_csv): neither the buffer nor this splitter's
            // tables can be changed by another thread during the split.
            const dpcore::CsvSplit status = self.split(text, &block, &row);
            py::tuple out = block_tuple(status, row, block, true);
            // a text that is not UTF-8 fails the block: as after any failed split, the
            // next starts afresh (the text must not pass as known in a later block)
            if (std::string(py::str(out[0])) != "plain") self.reset();
            return out;
          },
          py::arg("data"),
          "The next block of whole lines: (\"plain\", rows, [(positions int32, new texts,\n"
          "first)] a column), where the new texts take positions first, first + 1, ... after\n"
          "the column's texts kept from earlier blocks (first == 0: none kept), or the\n"
          "statuses of split_csv (after which the next split starts afresh). Copies what it\n"
          "keeps: the buffer may be reused.")
      .def("reset", &dpcore::CsvSplitter::reset,
           "Drop every column's texts: the next split starts afresh.")
      .def(
          "set_integer_steps",
          [](dpcore::CsvSplitter& self, std::size_t column, const std::vector<std::int64_t>& starts,
             const std::vector<std::int32_t>& codes, std::int64_t last) {
            self.set_integer_steps(column, starts, codes, last);
          },
          py::arg("column"), py::arg("starts"), py::arg("codes"), py::arg("last"),
          "From the next split on, a field of `column` that is a decimal integer written the\n"
          "one way (optional '-', 1 to 18 digits, no leading zero, not \"-0\") with a value x\n"
          "in starts[0]..last gets codes[i] for the last i with starts[i] <= x, without a\n"
          "text lookup; the column's other fields get -(position + 1) (their texts as\n"
          "before). Empty starts: off.");
  m.def(
      "gather_codes",
      [](const py::list& positions, const py::list& tables, const std::vector<bool>& direct,
         py::array out) {
        using Positions = GatherPositions;
        using Table = GatherTable;
        const std::size_t columns = positions.size();
        if (tables.size() != columns || direct.size() != columns)
          throw dpcore::InvalidArgument("gather_codes: positions, tables and direct differ in "
                                        "length");
        std::vector<Positions> pos;
        std::vector<Table> tab;
        for (std::size_t j = 0; j < columns; ++j) {
          if (!py::isinstance<Positions>(positions[j]) ||
              py::reinterpret_borrow<py::array>(positions[j]).ndim() != 1)
            throw dpcore::InvalidArgument("gather_codes: positions must be 1-d int32 arrays");
          if (!py::isinstance<Table>(tables[j]) ||
              py::reinterpret_borrow<py::array>(tables[j]).ndim() != 1)
            throw dpcore::InvalidArgument("gather_codes: tables must be 1-d int64 arrays");
          pos.push_back(py::reinterpret_borrow<Positions>(positions[j]));
          tab.push_back(py::reinterpret_borrow<Table>(tables[j]));
          if (pos[j].size() != pos[0].size())
            throw dpcore::InvalidArgument("gather_codes: the columns differ in rows");
        }
        const py::ssize_t rows = columns == 0 ? 0 : pos[0].size();
        if (out.ndim() != 2 || out.shape(0) != rows || out.shape(1) != py::ssize_t(columns) ||
            !(out.flags() & py::array::c_style) || !out.writeable())
          throw dpcore::InvalidArgument("gather_codes: out must be a writable C-contiguous "
                                        "array of rows x columns");
        // the checks before the writes hold only if the writes cannot change what was checked
        const auto* lo = static_cast<const char*>(out.data());
        const auto* hi = lo + out.nbytes();
        auto overlaps = [&](const py::array& a) {
          const auto* b = static_cast<const char*>(a.data());
          return a.nbytes() > 0 && b < hi && lo < b + a.nbytes();
        };
        for (std::size_t j = 0; j < columns; ++j)
          if (overlaps(pos[j]) || overlaps(tab[j]))
            throw dpcore::InvalidArgument("gather_codes: out shares memory with a position or "
                                          "table array");
        const py::dtype dt = out.dtype();
        const bool native = dt.byteorder() == '=' || dt.byteorder() == '|';
        const char kind = dt.kind();
        const auto size = dt.itemsize();
        if (native && kind == 'u' && size == 1) gather_into<std::uint8_t>(pos, tab, direct, out);
        else if (native && kind == 'u' && size == 2) gather_into<std::uint16_t>(pos, tab, direct, out);
        else if (native && kind == 'u' && size == 4) gather_into<std::uint32_t>(pos, tab, direct, out);
        else if (native && kind == 'i' && size == 8) gather_into<std::int64_t>(pos, tab, direct, out);
        else throw dpcore::InvalidArgument("gather_codes: out must be uint8, uint16, uint32 or int64");
      },
      py::arg("positions"), py::arg("tables"), py::arg("direct"), py::arg("out"),
      "Fill out (rows x columns, C order; uint8/16/32 or int64) from a split block: column j\n"
      "row r is tables[j][positions[j][r]], or where direct[j], positions[j][r] itself when\n"
      "it is >= 0 and tables[j][-p - 1] when it is negative (CsvSplitter.set_integer_steps).\n"
      "Positions int32, tables int64 (1-d, C order). Everything is checked before a write.");
  using Int64s = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;
  using Flags = py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>;
  m.def(
      "format_csv",
      [](const py::list& columns, const std::string& sep, const std::string& eol,
         const std::string& missing) {
        std::vector<dpcore::CsvColumn> cols;
        std::vector<Int64s> keep;       // the (possibly converted) arrays outlive the loop
        std::vector<Flags> keep_flags;
        keep.reserve(columns.size());
        keep_flags.reserve(columns.size());
        py::ssize_t n = -1;
        for (std::size_t j = 0; j < columns.size(); ++j) {
          if (!py::isinstance<py::tuple>(columns[j]) || py::len(columns[j]) != 3)
            raise_type_error("column " + std::to_string(j) +
                             " must be a tuple (array, labels or None, mask or None)");
          const auto item = columns[j].cast<py::tuple>();
          if (!integer_array(item[0]) || !(item[2].is_none() || integer_array(item[2])))
            raise_type_error("column " + std::to_string(j) +
                             ": values and mask must be NumPy arrays of integers or booleans");
          keep.push_back(item[0].cast<Int64s>());
          const Int64s& data = keep.back();
          if (data.ndim() != 1 || (n >= 0 && data.size() != n))
            throw dpcore::InvalidArgument("column " + std::to_string(j) +
                                          " must be a 1-d array as long as the first");
          n = data.size();
          dpcore::CsvColumn c;
          c.data = data.data();
          c.integers = item[1].is_none();
          if (!c.integers) {
            if (!py::isinstance<py::list>(item[1]))
              raise_type_error("column " + std::to_string(j) + ": labels must be a list of str");
            for (const auto label : item[1].cast<py::list>()) {
              if (!py::isinstance<py::str>(label))
                raise_type_error("column " + std::to_string(j) + ": labels must be str");
              Py_ssize_t size = 0;
              const char* utf8 = PyUnicode_AsUTF8AndSize(label.ptr(), &size);
              if (utf8 == nullptr) {     // a lone surrogate: no UTF-8 text
                PyErr_Clear();
                throw dpcore::InvalidArgument("column " + std::to_string(j) +
                                              ": a label is not encodable as UTF-8");
              }
              c.labels.emplace_back(utf8, static_cast<std::size_t>(size));
            }
          }
          if (!item[2].is_none()) {
            if (!c.integers)
              throw dpcore::InvalidArgument("column " + std::to_string(j) +
                                            ": a mask goes with integers (labels mark a missing "
                                            "field by a negative position)");
            keep_flags.push_back(item[2].cast<Flags>());
            if (keep_flags.back().ndim() != 1 || keep_flags.back().size() != n)
              throw dpcore::InvalidArgument("column " + std::to_string(j) +
                                            ": the mask must be as long as the values");
            c.missing = keep_flags.back().data();
          }
          cols.push_back(std::move(c));
        }
        const std::size_t rows = n < 0 ? 0 : static_cast<std::size_t>(n);
        // The GIL stays held from sizing to writing: the arrays are the caller's, and no
        // Python code may change a position or a number's width between the two passes.
        const std::size_t size = dpcore::csv_text_size(cols, rows, sep, eol, missing);
        // the text goes straight into the bytes object (no zero-filled string, no copy)
        PyObject* out = PyBytes_FromStringAndSize(
            nullptr, static_cast<py::ssize_t>(size + dpcore::kCsvTextSlack));
        if (out == nullptr) throw py::error_already_set();
        {
          auto owner = py::reinterpret_steal<py::object>(out);   // freed if writing throws
          dpcore::write_csv_text(cols, rows, sep, eol, missing, PyBytes_AS_STRING(out));
          owner.release();
        }
        // drop the slack the fixed-size copies wrote over (a fresh object: resizable)
        if (_PyBytes_Resize(&out, static_cast<py::ssize_t>(size)) != 0)
          throw py::error_already_set();
        return py::reinterpret_steal<py::bytes>(out);
      },
      py::arg("columns"), py::arg("sep"), py::arg("eol"), py::arg("missing"),
      "CSV rows (UTF-8 bytes) from columns (values, labels, mask) of NumPy integer arrays:\n"
      "with labels, values are positions in them (negative: the missing text); without,\n"
      "integers (where mask is set: the missing text). Fields joined by sep, rows ended by\n"
      "eol; nothing is quoted.");
  py::class_<dpcore::CodeCsvFormat>(
      m, "CodeCsvFormat",
      "Codes straight to CSV rows (dpcore.codecsv): columns is a list of (texts, lo, width),\n"
      "one a column: a code below len(lo) is drawn, the field lo[c] + floor(u * width[c]) with\n"
      "u the row's uniform draw (lo and width None: none drawn); any other code c is texts[c].\n"
      "Fields are joined by sep, rows ended by eol; nothing is quoted.")
      .def(py::init([](const py::list& columns, const std::string& sep, const std::string& eol) {
             std::vector<dpcore::CodeFieldFormat> formats;
             for (std::size_t j = 0; j < columns.size(); ++j) {
               const std::string where = "column " + std::to_string(j);
               if (!py::isinstance<py::tuple>(columns[j]) || py::len(columns[j]) != 3)
                 raise_type_error(where + " must be a tuple (texts, lo or None, width or None)");
               const auto item = columns[j].cast<py::tuple>();
               if (!py::isinstance<py::list>(item[0]))
                 raise_type_error(where + ": texts must be a list of str");
               dpcore::CodeFieldFormat f;
               for (const auto text : item[0].cast<py::list>()) {
                 if (!py::isinstance<py::str>(text)) raise_type_error(where + ": texts must be str");
                 Py_ssize_t size = 0;
                 const char* utf8 = PyUnicode_AsUTF8AndSize(text.ptr(), &size);
                 if (utf8 == nullptr) {     // a lone surrogate: no UTF-8 text
                   PyErr_Clear();
                   throw dpcore::InvalidArgument(where + ": a text is not encodable as UTF-8");
                 }
                 f.texts.emplace_back(utf8, static_cast<std::size_t>(size));
               }
               f.lo = doubles(item[1], where + ": lo");
               f.width = doubles(item[2], where + ": width");
               formats.push_back(std::move(f));
             }
             return dpcore::CodeCsvFormat(formats, sep, eol);
           }),
           py::arg("columns"), py::arg("sep"), py::arg("eol"))
      .def_property_readonly("max_row_bytes", &dpcore::CodeCsvFormat::max_row_bytes,
                             "The most bytes a row takes (format needs rows x this + slack).")
      .def_property_readonly("drawn_columns", &dpcore::CodeCsvFormat::drawn_columns)
      .def_property_readonly_static(
          "slack", [](const py::object&) { return dpcore::CodeCsvFormat::kSlack; })
      .def(
          "format",
          [](const dpcore::CodeCsvFormat& self, const py::array& codes, const py::list& uniform,
             const py::buffer& out) -> std::size_t {
            if (codes.ndim() != 2 || static_cast<std::size_t>(codes.shape(1)) != self.columns())
              throw dpcore::InvalidArgument("codes must be an N x " +
                                            std::to_string(self.columns()) + " array");
            const auto n = codes.shape(0);
            std::vector<py::array_t<double>> keep;
            std::vector<const double*> draws;
            for (const auto u : uniform) {
              const auto a = py::array_t<double, py::array::c_style>::ensure(u);
              if (!a || a.ndim() != 1 || a.size() < n)
                throw dpcore::InvalidArgument("each uniform draw array must be a 1-d float64 "
                                              "array of at least the rows' count");
              keep.push_back(a);
              draws.push_back(a.data());
            }
            py::buffer_info info;
            try {
              info = out.request(true);
            } catch (py::error_already_set&) {      // read-only (bytes, a read-only view)
              throw dpcore::InvalidArgument("out must be a writable contiguous buffer of bytes");
            }
            if (info.ndim != 1 || info.itemsize != 1 || (info.size > 1 && info.strides[0] != 1))
              throw dpcore::InvalidArgument("out must be a writable contiguous buffer of bytes");
            char* dest = static_cast<char*>(info.ptr);
            const auto capacity = static_cast<std::size_t>(info.size);
            // The GIL stays held: the codes, draws and buffer are the caller's.
            const py::dtype dtype = codes.dtype();
            // the kernel reads native integers: a byte-swapped view would be read as other
            // codes (a misaligned one is refused for every binding, module.cpp)
            if (dtype.byteorder() == '>')
              throw dpcore::InvalidArgument("codes must be in native byte order");
            if (dtype.kind() == 'u' && dtype.itemsize() == 1)
              return format_codes<std::uint8_t>(self, codes, draws, dest, capacity);
            if (dtype.kind() == 'u' && dtype.itemsize() == 2)
              return format_codes<std::uint16_t>(self, codes, draws, dest, capacity);
            if (dtype.kind() == 'u' && dtype.itemsize() == 4)
              return format_codes<std::uint32_t>(self, codes, draws, dest, capacity);
            if (dtype.kind() == 'u' && dtype.itemsize() == 8)
              return format_codes<std::uint64_t>(self, codes, draws, dest, capacity);
            if (dtype.kind() == 'i' && dtype.itemsize() == 8)
              return format_codes<std::int64_t>(self, codes, draws, dest, capacity);
            raise_type_error("codes must be unsigned integers or int64, got dtype " +
                             std::string(py::str(dtype)));
          },
          py::arg("codes"), py::arg("uniform"), py::arg("out"),
          "Write the rows of `codes` (N x columns) into `out` (a writable buffer of at least\n"
          "N x max_row_bytes + slack bytes); `uniform`: one float64 array of N draws per drawn\n"
          "column, in column order. Returns the bytes written.");
}

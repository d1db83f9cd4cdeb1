#include "dpcore/csv.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>

#include "dpcore/errors.hpp"

namespace dpcore {

namespace {

// Characters of v in decimal (with its sign).
std::size_t decimal_width(std::int64_t v) {
  if (v == std::numeric_limits<std::int64_t>::min()) return 20;
  std::size_t width = v < 0 ? 2 : 1;
  std::uint64_t u = v < 0 ? std::uint64_t(-v) : std::uint64_t(v);
  while (u >= 10) {
    u /= 10;
    ++width;
  }
  return width;
}

}  // namespace

void format_csv(const std::vector<CsvColumn>& columns, std::size_t n, const std::string& sep,
                const std::string& eol, const std::string& missing_text, std::string* out) {
  if (columns.empty() || n == 0) return;
  // First pass: check every label position and size the text exactly, so it is written
  // through a pointer into one allocation of what it needs (a long label used once costs
  // its own bytes, not a row's worth of them in every row).
  std::size_t total = n * (eol.size() + sep.size() * (columns.size() - 1));
  for (std::size_t j = 0; j < columns.size(); ++j) {
    const CsvColumn& c = columns[j];
    for (std::size_t r = 0; r < n; ++r) {
      const std::int64_t v = c.data[r];
      if (c.integers) {
        total += c.missing != nullptr && c.missing[r] != 0 ? missing_text.size()
                                                             : decimal_width(v);
      } else if (v < 0) {
        total += missing_text.size();
      } else if (static_cast<std::size_t>(v) < c.labels.size()) {
        total += c.labels[static_cast<std::size_t>(v)].size();
      } else {
        throw InvalidArgument("column " + std::to_string(j) + ", row " + std::to_string(r) +
                              ": label position " + std::to_string(v) + " outside 0.." +
                              std::to_string(c.labels.size()) + " - 1");
      }
    }
  }
  const std::size_t start = out->size();
  out->resize(start + total);
  char* p = out->data() + start;
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t j = 0; j < columns.size(); ++j) {
      const CsvColumn& c = columns[j];
      if (j > 0) {
        std::memcpy(p, sep.data(), sep.size());
        p += sep.size();
      }
      const std::int64_t v = c.data[r];
      const std::string* text = &missing_text;
      if (c.integers) {
        if (c.missing == nullptr || c.missing[r] == 0) {
          p = std::to_chars(p, p + 20, v).ptr;
          continue;
        }
      } else if (v >= 0) {
        text = &c.labels[static_cast<std::size_t>(v)];
      }
      std::memcpy(p, text->data(), text->size());
      p += text->size();
    }
    std::memcpy(p, eol.data(), eol.size());
    p += eol.size();
  }
}

namespace {

// A 64-bit hash of a short text (fields are mostly a few bytes long): 8 bytes at a time, the
// tail read as two overlapping words (no byte-by-byte load, which stalls store forwarding).
std::uint64_t text_hash(std::string_view text) {
  constexpr std::uint64_t kMul = 0x9E3779B97F4A7C15ULL;
  const char* p = text.data();
  std::size_t left = text.size();
  std::uint64_t h = left * kMul;
  for (; left >= 8; p += 8, left -= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 31;
  }
  if (left > 0) {
    std::uint64_t w;
    if (left >= 4) {
      std::uint32_t a, b;
      std::memcpy(&a, p, 4);
      std::memcpy(&b, p + left - 4, 4);
      w = (std::uint64_t{a} << 32) | b;
    } else {
      w = (std::uint64_t{static_cast<unsigned char>(p[0])} << 16) |
          (std::uint64_t{static_cast<unsigned char>(p[left / 2])} << 8) |
          static_cast<unsigned char>(p[left - 1]);
    }
    h = (h ^ w) * kMul;
    h ^= h >> 31;
  }
  return h * kMul;
}

// Distinct texts of one column: open addressing, positions in order of first sight. A slot
// keeps the hash and (up to kInline bytes) the text itself, so a lookup reads one slot, not
// the text's first occurrence somewhere in a block of megabytes.
class TextIndex {
 public:
  explicit TextIndex(std::vector<std::string_view>* texts) : texts_(texts) { resize(64); }

  std::int32_t position(std::string_view text) {
    const std::uint64_t h = text_hash(text);
    for (std::size_t i = h >> shift_;; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.position < 0) {
        if (texts_->size() >= std::size_t(std::numeric_limits<std::int32_t>::max()))
          throw InvalidArgument("a CSV block column holds more than 2^31 - 1 distinct texts");
        slot.hash = h;
        slot.position = static_cast<std::int32_t>(texts_->size());
        slot.size = static_cast<std::uint32_t>(std::min(text.size(), kInline + 1));
        std::memcpy(slot.bytes, text.data(), std::min(text.size(), kInline));
        texts_->push_back(text);
        if (texts_->size() * 2 > slots_.size()) rehash();
        return static_cast<std::int32_t>(texts_->size() - 1);
      }
      if (slot.hash != h) continue;
      if (slot.size <= kInline) {
        if (slot.size == text.size() && std::memcmp(slot.bytes, text.data(), slot.size) == 0)
          return slot.position;
      } else if ((*texts_)[std::size_t(slot.position)] == text) {
        return slot.position;
      }
    }
  }

 private:
  static constexpr std::size_t kInline = 16;
  struct Slot {
    std::uint64_t hash;
    std::int32_t position;
    std::uint32_t size;        // the text's size, kInline + 1 for any longer text
    char bytes[kInline];
  };

  void resize(std::size_t size) {   // a power of two; the hash's top bits pick the slot
    Slot empty{};
    empty.position = -1;
    slots_.assign(size, empty);
    mask_ = size - 1;
    shift_ = 64;
    for (std::size_t s = size; s > 1; s >>= 1) --shift_;
  }

  void rehash() {
    std::vector<Slot> old;
    old.swap(slots_);
    resize(old.size() * 2);
    for (const Slot& slot : old) {
      if (slot.position < 0) continue;
      std::size_t i = slot.hash >> shift_;
      while (slots_[i].position >= 0) i = (i + 1) & mask_;
      slots_[i] = slot;
    }
  }

  std::vector<std::string_view>* texts_;
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  int shift_ = 64;
};

}  // namespace

CsvSplit split_csv(std::string_view data, char sep, std::size_t columns, CsvBlock* out,
                   std::size_t* row) {
  if (columns == 0) throw InvalidArgument("a CSV block needs at least one column");
  if (columns > kMaxColumns)
    throw InvalidArgument("a CSV block has at most " + std::to_string(kMaxColumns) +
                          " columns, got " + std::to_string(columns));
  out->index.assign(columns, {});
  out->texts.assign(columns, {});
  out->rows = 0;
  // A quote, or a carriage return that does not end a line: not for this reader.
  if (data.find('"') != std::string_view::npos) return CsvSplit::kNotPlain;
  for (std::size_t cr = data.find('\r'); cr != std::string_view::npos;
       cr = data.find('\r', cr + 1))
    if (cr + 1 >= data.size() || data[cr + 1] != '\n') return CsvSplit::kNotPlain;
  const std::size_t lines_guess = static_cast<std::size_t>(
      std::count(data.begin(), data.end(), '\n')) + 1;
  if (lines_guess > std::size_t(std::numeric_limits<std::int32_t>::max()))
    throw InvalidArgument("a CSV block holds more than 2^31 - 1 lines");
  std::vector<TextIndex> index;
  index.reserve(columns);
  for (std::size_t j = 0; j < columns; ++j) {
    out->index[j].reserve(lines_guess);
    index.emplace_back(&out->texts[j]);
  }
  std::size_t pos = 0, line = 0;
  while (pos < data.size()) {
    std::size_t end = data.find('\n', pos);
    if (end == std::string_view::npos) end = data.size();
    std::size_t stop = end;
    if (stop > pos && data[stop - 1] == '\r') --stop;
    if (stop == pos) return CsvSplit::kNotPlain;      // an empty line
    std::string_view rest = data.substr(pos, stop - pos);
    for (std::size_t j = 0; j < columns; ++j) {
      const std::size_t cut = j + 1 < columns ? rest.find(sep) : rest.size();
      if (cut == std::string_view::npos || (j + 1 == columns && rest.find(sep) !=
                                                                  std::string_view::npos)) {
        *row = line;
        return CsvSplit::kRagged;
      }
      out->index[j].push_back(index[j].position(rest.substr(0, cut)));
      rest.remove_prefix(std::min(cut + 1, rest.size()));
    }
    ++line;
    pos = end + 1;
  }
  out->rows = line;
  return CsvSplit::kPlain;
}

}  // namespace dpcore

#include "dpcore/csv.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <deque>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

std::size_t csv_text_size(const std::vector<CsvColumn>& columns, std::size_t n,
                          const std::string& sep, const std::string& eol,
                          const std::string& missing_text) {
  if (columns.empty() || n == 0) return 0;
  // Check every label position and size the text exactly, so it is written through a
  // pointer into one allocation of what it needs (a long label used once costs its own
  // bytes, not a row's worth of them in every row).
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
  return total;
}

namespace {

// Texts to copy into the CSV, each followed by kCsvTextSlack readable bytes, so a text of
// up to that many bytes is copied by one fixed-size memcpy (two 8-byte moves) rather than
// a call with a variable size; the bytes past its end are overwritten by what follows.
class PaddedTexts {
 public:
  std::size_t add(std::string_view text) {
    const std::size_t at = bytes_.size();
    bytes_.append(text.data(), text.size());
    bytes_.append(kCsvTextSlack, '\0');
    spans_.push_back({at, text.size()});
    return spans_.size() - 1;
  }
  std::size_t count() const { return spans_.size(); }
  const char* data(std::size_t k) const { return bytes_.data() + spans_[k].first; }
  std::size_t size(std::size_t k) const { return spans_[k].second; }

 private:
  std::string bytes_;
  std::vector<std::pair<std::size_t, std::size_t>> spans_;
};

inline char* put(char* p, const char* text, std::size_t size) {
  if (size <= kCsvTextSlack)
    std::memcpy(p, text, kCsvTextSlack);
  else
    std::memcpy(p, text, size);
  return p + size;
}

}  // namespace

void write_csv_text(const std::vector<CsvColumn>& columns, std::size_t n, const std::string& sep,
                    const std::string& eol, const std::string& missing_text, char* p) {
  if (columns.empty() || n == 0) return;
  PaddedTexts texts;
  const std::size_t sep_k = texts.add(sep), eol_k = texts.add(eol);
  const std::size_t missing_k = texts.add(missing_text);
  std::vector<std::size_t> first(columns.size(), 0);   // a column's first label in `texts`
  for (std::size_t j = 0; j < columns.size(); ++j) {
    if (columns[j].integers) continue;
    first[j] = texts.count();
    for (const std::string& label : columns[j].labels) texts.add(label);
  }
  const char* sep_text = texts.data(sep_k);
  const std::size_t sep_size = texts.size(sep_k);
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t j = 0; j < columns.size(); ++j) {
      const CsvColumn& c = columns[j];
      if (j > 0) p = put(p, sep_text, sep_size);
      const std::int64_t v = c.data[r];
      std::size_t k = missing_k;
      if (c.integers) {
        if (c.missing == nullptr || c.missing[r] == 0) {
          p = std::to_chars(p, p + 20, v).ptr;
          continue;
        }
      } else if (v >= 0) {
        k = first[j] + static_cast<std::size_t>(v);
      }
      p = put(p, texts.data(k), texts.size(k));
    }
    p = put(p, texts.data(eol_k), texts.size(eol_k));
  }
}

void format_csv(const std::vector<CsvColumn>& columns, std::size_t n, const std::string& sep,
                const std::string& eol, const std::string& missing_text, std::string* out) {
  const std::size_t total = csv_text_size(columns, n, sep, eol, missing_text);
  const std::size_t start = out->size();
  out->resize(start + total + kCsvTextSlack);
  write_csv_text(columns, n, sep, eol, missing_text, out->data() + start);
  out->resize(start + total);
}

namespace {

// The per-field steps are small and called from two or three places each: GCC left them as
// calls (a push/pop frame a field, ~10% of the split); inlining them keeps the field loop
// in registers.
#if defined(__GNUC__) || defined(__clang__)
#define DPCORE_INLINE inline __attribute__((always_inline))
#define DPCORE_INLINE_LAMBDA __attribute__((always_inline))
#else
#define DPCORE_INLINE inline
#define DPCORE_INLINE_LAMBDA
#endif

// The first 16 bytes of a field, zero-padded: the slot's key (with the size) and the hash's
// input. A field that starts 16 bytes or more before the block's end is read by two
// unaligned 8-byte loads and masked (no byte loop, no memcmp call); one near the end is
// copied first, so nothing past the block is read.
struct Head {
  std::uint64_t w0 = 0, w1 = 0;
};

// kHeadMask[k]: the mask keeping a word's first min(k, 8) bytes (little-endian), k in 0..16;
// a head's two masks are table loads, not branches on the field's size (sizes vary field by
// field: a branch on them is mispredicted often).
struct HeadMasks {
  std::uint64_t m[17];
  constexpr HeadMasks() : m() {
    for (int k = 0; k <= 16; ++k)
      m[k] = k >= 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * k)) - 1;
  }
};
constexpr HeadMasks kHeadMask{};

// Masking keeps a word's first bytes in memory only on a little-endian machine; elsewhere
// every head is copied.
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
constexpr bool kLittleEndian = true;
#else
constexpr bool kLittleEndian = false;
#endif

DPCORE_INLINE Head head_of(const char* p, std::size_t size, const char* end) {
  Head h;
  if (kLittleEndian && end - p >= 16) {
    std::memcpy(&h.w0, p, 8);
    std::memcpy(&h.w1, p + 8, 8);
    const std::size_t k = size < 16 ? size : 16;
    h.w0 &= kHeadMask.m[k];
    h.w1 &= kHeadMask.m[k > 8 ? k - 8 : 0];    // a conditional move
  } else {
    char tmp[16] = {};
    std::memcpy(tmp, p, std::min<std::size_t>(size, 16));
    std::memcpy(&h.w0, tmp, 8);
    std::memcpy(&h.w1, tmp + 8, 8);
  }
  return h;
}

// A 64-bit hash of a text from its head and size (and, past 16 bytes, the rest, 8 bytes at
// a time); the table picks a slot by the top bits. A head's two words are multiplied side
// by side (the top bits of a product depend on every bit of the word), not one after the
// other: most fields are 16 bytes or less, and a chain of three products was the latency
// before each lookup's load. Equal hashes are only a filter: a hit compares size and head.
DPCORE_INLINE std::uint64_t text_hash(const Head& head, const char* p, std::size_t size,
                                      const char* end) {
  constexpr std::uint64_t kMul = 0x9E3779B97F4A7C15ULL;
  std::uint64_t h = (head.w0 * kMul) ^ ((head.w1 + size * 0xC2B2AE3D27D4EB4FULL) *
                                        0xBF58476D1CE4E5B9ULL);
  if (size > 16) {
    for (std::size_t i = 16; i < size; i += 8) {
      // the next word of the text, zero-padded: one load and a mask where 8 bytes are
      // readable (a variable-size copy compiled to a byte loop), else copied
      std::uint64_t w = 0;
      const std::size_t k = std::min<std::size_t>(8, size - i);
      if (kLittleEndian && end - (p + i) >= 8) {
        std::memcpy(&w, p + i, 8);
        w &= kHeadMask.m[k];
      } else {
        std::memcpy(&w, p + i, k);
      }
      h = (h ^ w ^ (h >> 31)) * kMul;
    }
    h = (h ^ (h >> 32)) * kMul;
  }
  return h;
}

// Distinct texts of one column: open addressing, positions in order of first sight. A slot
// keeps the hash, the size and the text's first 16 bytes, so a lookup reads one slot, not
// the text's first occurrence somewhere in a block of megabytes (a longer text is compared
// there too, past its head).
//
// With `copy`, the index keeps its own copy of each text (the splitter of a whole file keeps
// texts from block to block, after the block that held them is gone); without, the texts
// are views into the block.
class TextIndex {
 public:
  explicit TextIndex(bool copy) : copy_(copy) { resize(64); }

  std::size_t size() const { return texts_.size(); }
  const std::vector<std::string_view>& texts() const { return texts_; }
  std::vector<std::string_view> take_texts() { return std::move(texts_); }

  void clear() {
    texts_.clear();
    store_.clear();
    resize(64);
  }

  // The head and hash of the text at p (hashed before the lookup, so a batch of fields can
  // have their slots fetched while others are looked up).
  DPCORE_INLINE static Head key(const char* p, std::size_t size, const char* end,
                                std::uint64_t* hash) {
    const Head head = head_of(p, size, end);
    *hash = text_hash(head, p, size, end);
    return head;
  }

  void prefetch(std::uint64_t hash) const {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(&slots_[hash >> shift_]);
#else
    (void)hash;
#endif
  }

  DPCORE_INLINE std::int32_t position(const char* p, std::size_t size, const Head& head,
                                      std::uint64_t h) {
    for (std::size_t i = h >> shift_;; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (slot.position < 0) return insert(slot, h, head, p, size);
      // one branch for the four words (a hit is the common case)
      if (((slot.hash ^ h) | (slot.size ^ size) | (slot.head.w0 ^ head.w0) |
           (slot.head.w1 ^ head.w1)) == 0 &&
          (size <= 16 || std::memcmp(texts_[std::size_t(slot.position)].data() + 16,
                                     p + 16, size - 16) == 0))
        return slot.position;
    }
  }

 private:
  struct Slot {
    std::uint64_t hash;
    std::int32_t position;
    std::uint32_t size;
    Head head;
  };

  // out of line: a text is new once a file, found many times
#if defined(__GNUC__) || defined(__clang__)
  __attribute__((noinline))
#endif
  std::int32_t insert(Slot& slot, std::uint64_t h, const Head& head, const char* p,
                      std::size_t size) {
    if (texts_.size() >= std::size_t(std::numeric_limits<std::int32_t>::max()))
      throw InvalidArgument("a CSV block column holds more than 2^31 - 1 distinct texts");
    if (size > std::numeric_limits<std::uint32_t>::max())
      throw InvalidArgument("a CSV field is longer than 2^32 - 1 bytes");
    slot.hash = h;
    slot.position = static_cast<std::int32_t>(texts_.size());
    slot.size = static_cast<std::uint32_t>(size);
    slot.head = head;
    if (copy_) {
      store_.emplace_back(p, size);       // a deque: earlier copies stay where they are
      texts_.emplace_back(store_.back());
    } else {
      texts_.emplace_back(p, size);
    }
    if (texts_.size() * 2 > slots_.size()) rehash();
    return static_cast<std::int32_t>(texts_.size() - 1);
  }

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

  bool copy_;
  std::vector<std::string_view> texts_;
  std::deque<std::string> store_;
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  int shift_ = 64;
};

// Bit k set where p[k] is `sep` or a line feed, for the 64 bytes at p (SSE2 where the
// compiler targets it, a byte loop otherwise). Reading all the structure of a stretch at
// once lets the splitter walk field ends by bit scans instead of a search call a field.
inline std::uint64_t ends_mask(const char* p, char sep) {
#if defined(__SSE2__)
  const __m128i vs = _mm_set1_epi8(sep), vn = _mm_set1_epi8('\n');
  std::uint64_t m = 0;
  for (int k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    const int bits = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, vs), _mm_cmpeq_epi8(v, vn)));
    m |= std::uint64_t(static_cast<std::uint16_t>(bits)) << (16 * k);
  }
  return m;
#else
  std::uint64_t m = 0;
  for (int k = 0; k < 64; ++k)
    if (p[k] == sep || p[k] == '\n') m |= std::uint64_t{1} << k;
  return m;
#endif
}

// A column's integer fast path (CsvSplitter::set_integer_steps): the code of a field that is
// a decimal integer written the one way, from a step function over its value.
struct IntegerSteps {
  std::vector<std::int64_t> starts;   // strictly increasing; empty: off
  std::vector<std::int32_t> codes;    // codes[i] for starts[i] <= x < starts[i + 1]
  std::int64_t last = 0;              // the largest value taken
  // The range in at most kBuckets buckets of 2^shift values: a bucket's code where all its
  // values share one (no start inside it), else -1. A value's code is then one load from a
  // table in the cache (16 KiB); only a value in a bucket a start cuts (a few dozen of
  // them for a few dozen steps) takes the binary search. Adult's fnlwgt: 1.5 million values,
  // 32 steps: 1,450 buckets of 1,024.
  static constexpr std::size_t kBuckets = 4096;
  std::vector<std::int32_t> buckets;
  int shift = 0;

  bool on() const { return !starts.empty(); }

  std::size_t step_of(std::int64_t v) const {   // the last start <= v (v >= starts[0])
    // without branches on the data (a value's step is not predictable)
    const std::int64_t* at = starts.data();
    for (std::size_t n = starts.size(); n > 1;) {
      const std::size_t half = n / 2;
      at = at[half] <= v ? at + half : at;
      n -= half;
    }
    return std::size_t(at - starts.data());
  }

  void prepare() {
    buckets.clear();
    shift = 0;
    if (starts.empty()) return;
    const std::uint64_t range = std::uint64_t(last) - std::uint64_t(starts.front());
    while ((range >> shift) >= kBuckets) ++shift;
    buckets.resize(std::size_t(range >> shift) + 1);
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      const std::int64_t v0 = starts.front() + std::int64_t(std::uint64_t(b) << shift);
      const std::int64_t v1 = std::min<std::int64_t>(
          last, v0 + std::int64_t((std::uint64_t{1} << shift) - 1));
      const std::size_t k = step_of(v0);
      buckets[b] = step_of(v1) == k ? codes[k] : -1;
    }
  }

  // The field's code, or -1 when it is not such an integer or lies outside the steps (it
  // is then looked up as a text). At most 18 digits: no overflow, and the value is exact in
  // a double, so the caller's encoder (which parses floats) saw the same number.
  DPCORE_INLINE std::int32_t code(const char* p, std::size_t size) const {
    const std::size_t sign = size > 0 && p[0] == '-' ? 1 : 0;
    const std::size_t digits = size - sign;
    if (digits == 0 || digits > 18) return -1;
    if (p[sign] == '0' && (digits > 1 || sign == 1)) return -1;   // "007", "-0": texts
    std::int64_t v = 0;
    for (std::size_t i = sign; i < size; ++i) {
      const unsigned d = unsigned(static_cast<unsigned char>(p[i])) - unsigned('0');
      if (d > 9) return -1;
      v = v * 10 + std::int64_t(d);
    }
    if (sign) v = -v;
    if (v < starts.front() || v > last) return -1;
    const std::int32_t c =
        buckets[std::size_t((std::uint64_t(v) - std::uint64_t(starts.front())) >> shift)];
    return c >= 0 ? c : codes[step_of(v)];
  }
};

// What split_lines needs to know of a block before it splits: its line feeds (to size the
// rows) and whether it holds a quote or a carriage return. One pass (SSE2 on x86-64: 16
// bytes a step, line feeds counted in byte lanes summed every 255 steps) instead of three.
struct BlockBytes {
  std::size_t lines = 0;
  bool quote = false, cr = false;
};

inline BlockBytes scan_block(const char* p, std::size_t n) {
  BlockBytes b;
  std::size_t i = 0;
#if defined(__SSE2__) && defined(__x86_64__)
  const __m128i vn = _mm_set1_epi8('\n'), vq = _mm_set1_epi8('"'), vr = _mm_set1_epi8('\r');
  const __m128i zero = _mm_setzero_si128();
  __m128i any_q = zero, any_r = zero;
  while (i + 16 <= n) {
    __m128i counts = zero;                      // at most 255 a lane
    const std::size_t stop = std::min(n - 15, i + 255 * 16);
    for (; i < stop; i += 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
      counts = _mm_sub_epi8(counts, _mm_cmpeq_epi8(v, vn));
      any_q = _mm_or_si128(any_q, _mm_cmpeq_epi8(v, vq));
      any_r = _mm_or_si128(any_r, _mm_cmpeq_epi8(v, vr));
    }
    const __m128i sums = _mm_sad_epu8(counts, zero);
    b.lines += std::size_t(_mm_cvtsi128_si64(sums)) +
               std::size_t(_mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums)));
  }
  b.quote = _mm_movemask_epi8(any_q) != 0;
  b.cr = _mm_movemask_epi8(any_r) != 0;
#endif
  for (; i < n; ++i) {
    b.lines += p[i] == '\n';
    b.quote = b.quote || p[i] == '"';
    b.cr = b.cr || p[i] == '\r';
  }
  return b;
}

inline int lowest_bit(std::uint64_t m) {
#if defined(__GNUC__) || defined(__clang__)
  return __builtin_ctzll(m);
#else
  int k = 0;
  while (!(m & 1)) m >>= 1, ++k;
  return k;
#endif
}

void check_split_arguments(char sep, std::size_t columns) {
  if (columns == 0) throw InvalidArgument("a CSV block needs at least one column");
  if (columns > kMaxColumns)
    throw InvalidArgument("a CSV block has at most " + std::to_string(kMaxColumns) +
                          " columns, got " + std::to_string(columns));
  if (sep == '\n' || sep == '\r' || sep == '"')
    throw InvalidArgument("the delimiter cannot be a line feed, a carriage return or a quote");
}

// The split itself, into out->index (positions from each column's index; with `steps`, a
// column whose steps are on gets codes and -(position + 1), CsvSplitter::set_integer_steps);
// out->texts is left to the caller.
CsvSplit split_lines(std::string_view data, char sep, std::vector<TextIndex>& index,
                     const std::vector<IntegerSteps>* steps, CsvBlock* out,
                     std::size_t* row) {
  const std::size_t columns = index.size();
  std::vector<const IntegerSteps*> fast(columns, nullptr);
  if (steps != nullptr)
    for (std::size_t j = 0; j < columns; ++j)
      if ((*steps)[j].on()) fast[j] = &(*steps)[j];
  out->index.assign(columns, {});
  out->texts.assign(columns, {});
  out->first.assign(columns, 0);
  out->rows = 0;
  // A quote, or a carriage return that does not end a line: not for this reader.
  const BlockBytes bytes = scan_block(data.data(), data.size());
  if (bytes.quote) return CsvSplit::kNotPlain;
  if (bytes.cr)
    for (std::size_t cr = data.find('\r'); cr != std::string_view::npos;
         cr = data.find('\r', cr + 1))
      if (cr + 1 >= data.size() || data[cr + 1] != '\n') return CsvSplit::kNotPlain;
  const std::size_t lines_guess = bytes.lines + 1;
  if (lines_guess > std::size_t(std::numeric_limits<std::int32_t>::max()))
    throw InvalidArgument("a CSV block holds more than 2^31 - 1 lines");
  for (std::size_t j = 0; j < columns; ++j) out->index[j].resize(lines_guess);
  const char* base = data.data();
  const char* end = base + data.size();
  const std::size_t n = data.size();
  std::vector<std::int32_t*> dst(columns);      // each column's rows (no vector per write)
  for (std::size_t j = 0; j < columns; ++j) dst[j] = out->index[j].data();
  // A field is looked up as soon as it is found: a small table (a categorical column's few
  // dozen texts) is in the cache, and a numeric column's integers skip the table (steps).
  // A column whose table is large when the block starts (many distinct texts, no steps)
  // misses the cache on most lookups: its fields wait in a batch, whose slots are fetched
  // ahead (hash first, then the lookups), so the misses overlap.
  constexpr std::size_t kInlineTexts = 1024;    // 32 KiB of slots
  std::vector<char> batched(columns, 0);
  for (std::size_t j = 0; j < columns; ++j) batched[j] = index[j].size() > kInlineTexts;
  struct Field {
    std::size_t start, size, line, column;
    std::uint64_t hash;
    Head head;
  };
  std::vector<Field> fields(1024);
  std::size_t filled = 0;     // fields of the batch so far
  auto flush = [&]() {
    for (std::size_t k = 0; k < filled; ++k) {
      Field& f = fields[k];
      f.head = TextIndex::key(base + f.start, f.size, end, &f.hash);
      index[f.column].prefetch(f.hash);
    }
    for (std::size_t k = 0; k < filled; ++k) {   // in order: positions in order of sight
      const Field& f = fields[k];
      const std::int32_t at = index[f.column].position(base + f.start, f.size, f.head, f.hash);
      dst[f.column][f.line] = fast[f.column] != nullptr ? -at - 1 : at;
    }
    filled = 0;
  };
  // The field [s, s + size) of the current line, column j.
  auto emit = [&](std::size_t j, std::size_t s, std::size_t size,
                  std::size_t line) DPCORE_INLINE_LAMBDA {
    if (line >= lines_guess)                    // the rows were sized by the line count
      throw InvalidArgument("the CSV block changed while it was being split (more lines "
                            "than counted)");
    const char* p = base + s;
    if (fast[j] != nullptr) {
      const std::int32_t code = fast[j]->code(p, size);
      if (code >= 0) {                          // no text, no lookup
        dst[j][line] = code;
        return;
      }
    }
    if (batched[j]) {
      fields[filled++] = Field{s, size, line, j, 0, {}};
      if (filled == fields.size()) flush();
      return;
    }
    std::uint64_t hash;
    const Head head = TextIndex::key(p, size, end, &hash);
    const std::int32_t at = index[j].position(p, size, head, hash);
    dst[j][line] = fast[j] != nullptr ? -at - 1 : at;
  };
  std::size_t start = 0;      // where the current field starts
  std::size_t field = 0;      // the current field's column in its line
  std::size_t line = 0;
  // One field end at e (a delimiter, or a line feed: line_end; e == n: the last line's
  // missing end). Returns false, with `status` set, at an empty line or a ragged one.
  CsvSplit status = CsvSplit::kPlain;
  auto field_end = [&](std::size_t e, bool line_end) DPCORE_INLINE_LAMBDA -> bool {
    if (!line_end) {
      if (field + 1 >= columns) {               // more fields than columns
        *row = line;
        status = CsvSplit::kRagged;
        return false;
      }
      emit(field, start, e - start, line);
      ++field;
      start = e + 1;
      return true;
    }
    std::size_t stop = e;
    if (stop > start && base[stop - 1] == '\r') --stop;
    if (field == 0 && stop == start) {          // an empty line
      status = CsvSplit::kNotPlain;
      return false;
    }
    if (field + 1 != columns) {                 // fewer fields than columns
      *row = line;
      status = CsvSplit::kRagged;
      return false;
    }
    emit(field, start, stop - start, line);
    field = 0;
    ++line;
    start = e + 1;
    return true;
  };
  std::size_t chunk = 0;
  for (; chunk + 64 <= n; chunk += 64) {
    for (std::uint64_t m = ends_mask(base + chunk, sep); m != 0; m &= m - 1) {
      const std::size_t e = chunk + std::size_t(lowest_bit(m));
      if (!field_end(e, base[e] == '\n')) return status;
    }
  }
  for (std::size_t e = chunk; e < n; ++e)       // the last bytes, one at a time
    if ((base[e] == '\n' || base[e] == sep) && !field_end(e, base[e] == '\n')) return status;
  // a last line without its end (it may end in a delimiter: then its last field is empty)
  if ((start < n || field > 0) && !field_end(n, true)) return status;
  flush();
  for (std::size_t j = 0; j < columns; ++j) out->index[j].resize(line);
  out->rows = line;
  return CsvSplit::kPlain;
}

}  // namespace

CsvSplit split_csv(std::string_view data, char sep, std::size_t columns, CsvBlock* out,
                   std::size_t* row) {
  check_split_arguments(sep, columns);
  std::vector<TextIndex> index;
  index.reserve(columns);
  for (std::size_t j = 0; j < columns; ++j) index.emplace_back(false);
  const CsvSplit status = split_lines(data, sep, index, nullptr, out, row);
  if (status == CsvSplit::kPlain)
    for (std::size_t j = 0; j < columns; ++j) out->texts[j] = index[j].take_texts();
  return status;
}

struct CsvSplitter::Columns {
  std::vector<TextIndex> index;
  std::vector<IntegerSteps> steps;
};

CsvSplitter::CsvSplitter(char sep, std::size_t columns, std::size_t keep)
    : sep_(sep), keep_(keep), columns_(std::make_unique<Columns>()) {
  check_split_arguments(sep, columns);
  columns_->index.reserve(columns);
  for (std::size_t j = 0; j < columns; ++j) columns_->index.emplace_back(true);
  columns_->steps.resize(columns);
}

void CsvSplitter::set_integer_steps(std::size_t column, std::vector<std::int64_t> starts,
                                    std::vector<std::int32_t> codes, std::int64_t last) {
  if (column >= columns_->steps.size())
    throw InvalidArgument("column " + std::to_string(column) + " outside 0.." +
                          std::to_string(columns_->steps.size()) + " - 1");
  if (starts.size() != codes.size())
    throw InvalidArgument("integer steps: " + std::to_string(starts.size()) + " starts but " +
                          std::to_string(codes.size()) + " codes");
  for (std::size_t i = 1; i < starts.size(); ++i)
    if (starts[i] <= starts[i - 1])
      throw InvalidArgument("integer steps: the starts must increase strictly");
  for (const std::int32_t c : codes)
    if (c < 0) throw InvalidArgument("integer steps: a code is negative");
  if (!starts.empty() && last < starts.front())
    throw InvalidArgument("integer steps: the last value lies before the first start");
  // The parser reads at most 18 digits, so no value reaches 10^18; bounding the range keeps
  // the bucket arithmetic of prepare() inside int64.
  constexpr std::int64_t kLimit = 1000000000000000000;  // 10^18
  for (const std::int64_t v : starts)
    if (v <= -kLimit || v >= kLimit) throw InvalidArgument("integer steps: a start is beyond 10^18");
  if (!starts.empty() && (last <= -kLimit || last >= kLimit))
    throw InvalidArgument("integer steps: the last value is beyond 10^18");
  IntegerSteps& s = columns_->steps[column];
  s.starts = std::move(starts);
  s.codes = std::move(codes);
  s.last = last;
  s.prepare();
}

CsvSplitter::~CsvSplitter() = default;
CsvSplitter::CsvSplitter(CsvSplitter&&) noexcept = default;
CsvSplitter& CsvSplitter::operator=(CsvSplitter&&) noexcept = default;

void CsvSplitter::reset() {
  for (TextIndex& column : columns_->index) column.clear();
}

CsvSplit CsvSplitter::split(std::string_view data, CsvBlock* out, std::size_t* row) {
  std::vector<TextIndex>& index = columns_->index;
  std::vector<std::size_t> first(index.size());
  for (std::size_t j = 0; j < index.size(); ++j) {
    if (index[j].size() > keep_) index[j].clear();   // too many to keep: start afresh
    first[j] = index[j].size();
  }
  CsvSplit status;
  try {
    status = split_lines(data, sep_, index, &columns_->steps, out, row);
  } catch (...) {
    reset();      // a split cut short by an error leaves nothing kept: start afresh
    throw;
  }
  if (status != CsvSplit::kPlain) {
    reset();      // what the failed block added is not the caller's: start afresh
    return status;
  }
  out->first = first;
  for (std::size_t j = 0; j < index.size(); ++j) {
    const auto& texts = index[j].texts();
    out->texts[j].assign(texts.begin() + std::ptrdiff_t(first[j]), texts.end());
  }
  return status;
}

}  // namespace dpcore

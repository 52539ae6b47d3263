// Parsing and validating a safetensors header. The JSON is read with a SAX handler that
// knows the schema, so a hostile header is rejected at its first unexpected token and
// never becomes a large generic JSON tree (a 100 MiB header of "[[],[],..." would
// otherwise cost gigabytes): memory stays proportional to the entries accepted.
#include <algorithm>
#include <bit>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "detail/safetensors_layout.h"
#include "qkv/base/error.h"
#include "qkv/base/utf8.h"
#include "qkv/io/safetensors.h"

// Every message starts with the file; `source` is in scope wherever these are used.
#define QKV_BAD_FILE(...) QKV_THROW(IoError, "safetensors file '", source, "': ", __VA_ARGS__)
#define QKV_CHECK_FILE(cond, ...) \
  QKV_CHECK(cond, IoError, "safetensors file '", source, "': ", __VA_ARGS__)

namespace qkv::io::detail {
namespace {

using Json = nlohmann::json;

// An entry as written, before its values are checked against each other.
struct RawEntry {
  std::string name;
  std::optional<std::string> dtype;
  std::optional<std::vector<std::uint64_t>> shape, data_offsets;
};

std::string list_str(const std::vector<std::uint64_t>& v) {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << ']';
  return os.str();
}

// SAX handler for {"__metadata__": {str: str}, name: {"dtype": str, "shape": [uint...],
// "data_offsets": [uint, uint]}, ...}. Anything else stops the parse with `error` set.
class HeaderHandler final : public nlohmann::json_sax<Json> {
 public:
  std::vector<RawEntry> entries;
  std::map<std::string, std::string> metadata;
  std::string error;         // a schema violation, already phrased
  std::string syntax_error;  // the JSON parser's own message

  bool null() override { return unexpected("null"); }
  bool boolean(bool) override { return unexpected("a boolean"); }
  bool number_integer(number_integer_t v) override {
    if (v >= 0) return number_unsigned(std::uint64_t(v));  // "-0"
    if (state_ == State::Shape) return fail("shape has the negative dimension ", v);
    return unexpected("a negative number");
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (state_ != State::Shape && state_ != State::Offsets) return unexpected("a number");
    list_->push_back(v);
    return true;
  }
  bool number_float(number_float_t, const string_t& token) override {
    if (state_ == State::Shape || state_ == State::Offsets)
      return fail(key_, " holds ", token, ", not an integer (or one too large for 64 bits)");
    return unexpected("a number");
  }
  bool string(string_t& s) override {
    if (state_ == State::MetadataValue) {
      metadata[key_] = std::move(s);
      state_ = State::Metadata;
      return true;
    }
    if (state_ != State::EntryValue || key_ != "dtype") return unexpected("a string");
    entries.back().dtype = std::move(s);
    state_ = State::Entry;
    return true;
  }
  bool binary(binary_t&) override { return unexpected("binary data"); }

  bool start_object(std::size_t) override;
  bool key(string_t& k) override;
  bool end_object() override;
  bool start_array(std::size_t) override;
  bool end_array() override;
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    syntax_error = e.what();
    return false;
  }

 private:
  // Where the parse is; the order matters to fail(): from Entry on, a tensor is current.
  enum class State {
    Start,
    Done,
    Root,
    RootValue,
    Metadata,
    MetadataValue,
    Entry,
    EntryValue,
    Shape,
    Offsets
  };

  template <class... Args>
  bool fail(const Args&... args) {
    std::ostringstream os;
    if (state_ >= State::Entry) os << "tensor \"" << entries.back().name << "\": ";
    (os << ... << args);
    error = os.str();
    return false;
  }
  bool unexpected(const char* what);

  State state_ = State::Start;
  std::string key_;
  std::set<std::string> names_, entry_keys_;
  std::vector<std::uint64_t>* list_ = nullptr;
};

bool HeaderHandler::unexpected(const char* what) {
  switch (state_) {
    case State::Start:
      return fail("the header is ", what, ", not a JSON object");
    case State::RootValue:
      if (key_ == "__metadata__")
        return fail("__metadata__ must be an object mapping strings to strings, not ", what);
      return fail("tensor \"", key_, "\": the entry must be an object with dtype, shape and ",
                  "data_offsets, not ", what);
    case State::MetadataValue:
      return fail("__metadata__ value of \"", key_, "\" must be a string, not ", what);
    case State::EntryValue:
      if (key_ == "dtype") return fail("dtype must be a string such as \"F32\", not ", what);
      return fail(key_, " must be a list of non-negative integers, not ", what);
    case State::Shape:
    case State::Offsets:
      return fail(key_, " must be a list of non-negative integers, but holds ", what);
    default:
      return fail("unexpected ", what, " in the header");
  }
}

bool HeaderHandler::start_object(std::size_t) {
  if (state_ == State::Start) {
    state_ = State::Root;
  } else if (state_ == State::RootValue && key_ == "__metadata__") {
    state_ = State::Metadata;
  } else if (state_ == State::RootValue) {
    entries.push_back(RawEntry{.name = key_});
    entry_keys_.clear();
    state_ = State::Entry;
  } else {
    return unexpected("an object");
  }
  return true;
}

bool HeaderHandler::key(string_t& k) {
  key_ = k;
  if (state_ == State::Root) {
    if (!names_.insert(k).second) {
      if (k == "__metadata__") return fail("__metadata__ appears twice");
      return fail("duplicate tensor name \"", k, "\"");
    }
    state_ = State::RootValue;
  } else if (state_ == State::Metadata) {
    if (metadata.count(k)) return fail("__metadata__ has the key \"", k, "\" twice");
    state_ = State::MetadataValue;
  } else {  // State::Entry: keys are the only events there besides end_object
    if (k != "dtype" && k != "shape" && k != "data_offsets")
      return fail("unknown key \"", k, "\" (an entry has exactly dtype, shape and data_offsets)");
    if (!entry_keys_.insert(k).second) return fail("key \"", k, "\" appears twice");
    state_ = State::EntryValue;
  }
  return true;
}

bool HeaderHandler::end_object() {
  if (state_ == State::Entry) {
    for (const char* k : {"dtype", "shape", "data_offsets"})
      if (!entry_keys_.count(k))
        return fail("missing key \"", k, "\" (an entry has dtype, shape and data_offsets)");
  }
  // Only the root, __metadata__ and entries are objects; the root's end ends the header.
  state_ = state_ == State::Root ? State::Done : State::Root;
  return true;
}

bool HeaderHandler::start_array(std::size_t) {
  if (state_ != State::EntryValue || key_ == "dtype") return unexpected("a list");
  RawEntry& e = entries.back();
  list_ = &(key_ == "shape" ? e.shape : e.data_offsets).emplace();
  state_ = key_ == "shape" ? State::Shape : State::Offsets;
  return true;
}

bool HeaderHandler::end_array() {
  state_ = State::Entry;
  return true;
}

// Checks one entry's values against each other and the data section's size.
TensorEntry check_entry(RawEntry raw, std::uint64_t data_size, std::string_view source) {
  TensorEntry e{.name = std::move(raw.name)};
  if (*raw.dtype == "F32") {
    e.dtype = DType::F32;
  } else if (*raw.dtype == "F64") {
    e.dtype = DType::F64;
  } else {
    QKV_BAD_FILE("tensor \"", e.name, "\": dtype \"", *raw.dtype,
                 "\" is not supported; qkv supports F32 and F64 (convert the tensor, e.g. "
                 "with PyTorch's .float())");
  }
  const std::vector<std::uint64_t>& dims = *raw.shape;
  QKV_CHECK_FILE(dims.size() <= std::size_t(kMaxRank), "tensor \"", e.name, "\": shape ",
                 list_str(dims), " has rank ", dims.size(), "; qkv supports at most ", kMaxRank);
  std::uint64_t numel = 1;
  for (std::uint64_t d : dims) {
    QKV_CHECK_FILE(d <= std::uint64_t(INT64_MAX) && !__builtin_mul_overflow(numel, d, &numel),
                   "tensor \"", e.name, "\": shape ", list_str(dims),
                   " has more elements than 64 bits can count");
    e.shape.push_back(std::int64_t(d));
  }
  std::uint64_t bytes = 0;
  QKV_CHECK_FILE(!__builtin_mul_overflow(numel, std::uint64_t(dtype_size(e.dtype)), &bytes),
                 "tensor \"", e.name, "\": ", *raw.dtype, " ", list_str(dims),
                 " needs more bytes than 64 bits can count");
  const std::vector<std::uint64_t>& off = *raw.data_offsets;
  QKV_CHECK_FILE(off.size() == 2, "tensor \"", e.name, "\": data_offsets ", list_str(off),
                 " must be two integers [begin, end]");
  e.begin = off[0];
  e.end = off[1];
  QKV_CHECK_FILE(e.begin <= e.end, "tensor \"", e.name, "\": data_offsets ", list_str(off),
                 " begin after they end");
  QKV_CHECK_FILE(e.end - e.begin == bytes, "tensor \"", e.name, "\": data_offsets ", list_str(off),
                 " span ", e.end - e.begin, " bytes, but ", *raw.dtype, " ", list_str(dims),
                 " needs ", bytes);
  QKV_CHECK_FILE(e.end <= data_size, "tensor \"", e.name, "\": data_offsets ", list_str(off),
                 " reach past the end of the data section (", data_size,
                 " bytes; is the file truncated?)");
  return e;
}

// The spec requires the tensors to cover the data section exactly: no overlap (two
// tensors sharing bytes), no hole and no trailing bytes (room to hide data in).
void check_coverage(const std::vector<TensorEntry>& tensors, std::uint64_t data_size,
                    std::string_view source) {
  std::uint64_t covered = 0;
  const TensorEntry* previous = nullptr;
  for (const TensorEntry& t : tensors) {
    QKV_CHECK_FILE(t.begin >= covered, "tensors \"", previous ? previous->name : "", "\" and \"",
                   t.name, "\" overlap: [", previous ? previous->begin : 0, ", ", covered,
                   ") and [", t.begin, ", ", t.end, ")");
    QKV_CHECK_FILE(t.begin == covered, "bytes [", covered, ", ", t.begin,
                   ") of the data section belong to no tensor (a hole before tensor \"", t.name,
                   "\")");
    covered = t.end;
    previous = &t;
  }
  QKV_CHECK_FILE(covered == data_size, data_size - covered,
                 " trailing bytes after the last tensor (the data section is ", data_size,
                 " bytes, the tensors cover ", covered, ")");
}

}  // namespace

std::uint64_t parse_header_length(std::span<const std::byte, 8> prefix, std::uint64_t file_size,
                                  std::string_view source) {
  static_assert(std::endian::native == std::endian::little, "safetensors is little-endian");
  std::uint64_t n = 0;
  std::memcpy(&n, prefix.data(), 8);
  QKV_CHECK_FILE(n != 0, "the header length (first 8 bytes) is 0");
  QKV_CHECK_FILE(n <= kMaxSafetensorsHeaderBytes, "the header length ", n, " exceeds the limit of ",
                 kMaxSafetensorsHeaderBytes,
                 " bytes (100 MiB); this is not a safetensors file or it is corrupt");
  QKV_CHECK_FILE(n <= file_size - 8, "the header length ", n, " exceeds the ", file_size - 8,
                 " bytes that follow it (is the file truncated?)");
  return n;
}

SafetensorsLayout parse_header(std::string_view header, std::uint64_t data_size,
                               std::string_view source) {
  if (const size_t bad = utf8::first_invalid(header); bad != std::string_view::npos)
    QKV_BAD_FILE("the header is not valid UTF-8 (byte ", bad, " of the header)");
  // JSON has no place for a raw NUL, and nlohmann's lexer would take one for the end of
  // the input, silently ignoring whatever follows it.
  if (const std::size_t nul = header.find('\0'); nul != std::string_view::npos)
    QKV_BAD_FILE("the header is not valid JSON: it holds a NUL byte (byte ", nul,
                 " of the header; pad with spaces)");
  QKV_CHECK_FILE(!header.empty() && header.front() == '{', "the header must begin with '{'");
  HeaderHandler handler;
  if (!Json::sax_parse(header.begin(), header.end(), &handler)) {
    QKV_CHECK_FILE(handler.error.empty(), handler.error);
    QKV_BAD_FILE("the header is not valid JSON: ", handler.syntax_error);
  }
  SafetensorsLayout layout;
  layout.metadata = std::move(handler.metadata);
  layout.tensors.reserve(handler.entries.size());
  for (RawEntry& raw : handler.entries)
    layout.tensors.push_back(check_entry(std::move(raw), data_size, source));
  // File order; several empty tensors may share an offset, then header order decides.
  std::stable_sort(layout.tensors.begin(), layout.tensors.end(),
                   [](const TensorEntry& a, const TensorEntry& b) {
                     return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
                   });
  check_coverage(layout.tensors, data_size, source);
  return layout;
}

}  // namespace qkv::io::detail

#include "detail/metadata.h"

#include <charconv>
#include <cstdio>
#include <system_error>

#include "qkv/base/error.h"

namespace qkv::train::detail {
namespace {

template <class T>
T parse(const std::string& text, const std::string& key, const std::filesystem::path& file,
        const char* what) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  QKV_CHECK(ec == std::errc() && ptr == end && !text.empty(), IoError, file.string(),
            ": metadata key '", key, "' is not ", what, ": '", text, "'");
  return value;
}

}  // namespace

std::string format_double(double value) {
  char buf[40];
  const int n = std::snprintf(buf, sizeof buf, "%.17g", value);
  return std::string(buf, size_t(n));
}

std::string format_list(const std::vector<uint64_t>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + std::to_string(values[i]);
  return out;
}

const std::string& get_string(const Metadata& m, const std::string& key,
                              const std::filesystem::path& file) {
  const auto it = m.find(key);
  QKV_CHECK(it != m.end(), IoError, file.string(), ": metadata key '", key,
            "' is missing (not written by this version of qkv, or damaged)");
  return it->second;
}

int64_t get_int(const Metadata& m, const std::string& key, const std::filesystem::path& file) {
  return parse<int64_t>(get_string(m, key, file), key, file, "an integer");
}

uint64_t get_uint(const Metadata& m, const std::string& key, const std::filesystem::path& file) {
  return parse<uint64_t>(get_string(m, key, file), key, file, "a non-negative integer");
}

double get_double(const Metadata& m, const std::string& key, const std::filesystem::path& file) {
  return parse<double>(get_string(m, key, file), key, file, "a number");
}

std::vector<uint64_t> get_list(const Metadata& m, const std::string& key,
                               const std::filesystem::path& file) {
  const std::string& text = get_string(m, key, file);
  std::vector<uint64_t> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    out.push_back(parse<uint64_t>(text.substr(start, comma - start), key, file,
                                  "a list of non-negative integers"));
    start = comma + 1;
    QKV_CHECK(comma == text.size() || start < text.size(), IoError, file.string(),
              ": metadata key '", key, "' ends with a comma");
  }
  return out;
}

}  // namespace qkv::train::detail

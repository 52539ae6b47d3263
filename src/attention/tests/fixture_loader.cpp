#include "fixture_loader.h"

#include <charconv>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

#include "qkv/base/error.h"

namespace qkv::attention::testing {
namespace {

// Splits on blanks (spaces, tabs, a trailing '\r').
std::vector<std::string_view> tokens_of(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) ++i;
    const size_t begin = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t' && s[i] != '\r') ++i;
    if (i > begin) out.push_back(s.substr(begin, i - begin));
  }
  return out;
}

bool parse_int(std::string_view tok, int64_t& out) {
  const char* end = tok.data() + tok.size();
  const auto r = std::from_chars(tok.data(), end, out);
  return r.ec == std::errc() && r.ptr == end && out >= 0;
}

bool parse_double(std::string_view tok, double& out) {
  // from_chars rejects a leading '+', accepts inf/nan, and ignores the locale.
  const char* end = tok.data() + tok.size();
  const auto r = std::from_chars(tok.data(), end, out);
  return r.ec == std::errc() && r.ptr == end;
}

}  // namespace

Fixture parse_fixture(std::string_view text, const std::string& source) {
  Fixture fixture;
  int64_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    const std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;

    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos || line[first] == '#') continue;

    const size_t colon = line.find(':');
    QKV_CHECK(colon != std::string_view::npos, IoError, source, ":", line_no,
              ": expected 'name dims... : values...', found no ':'");
    const std::vector<std::string_view> head = tokens_of(line.substr(0, colon));
    const std::vector<std::string_view> values = tokens_of(line.substr(colon + 1));
    QKV_CHECK(!head.empty(), IoError, source, ":", line_no, ": missing tensor name before ':'");
    const std::string name(head[0]);
    QKV_CHECK(head.size() - 1 <= size_t(kMaxRank), IoError, source, ":", line_no, ": tensor '",
              name, "' has rank ", head.size() - 1, " > ", kMaxRank);

    std::vector<int64_t> dims;
    for (size_t i = 1; i < head.size(); ++i) {
      int64_t d = 0;
      QKV_CHECK(parse_int(head[i], d), IoError, source, ":", line_no, ": tensor '", name,
                "': bad dimension '", head[i], "' (expected a non-negative integer)");
      dims.push_back(d);
    }
    const Shape shape{std::span<const int64_t>(dims)};
    QKV_CHECK(int64_t(values.size()) == shape.numel(), IoError, source, ":", line_no, ": tensor '",
              name, "' of shape ", shape, " needs ", shape.numel(), " values, found ",
              values.size());

    std::vector<double> data(values.size());
    for (size_t i = 0; i < values.size(); ++i)
      QKV_CHECK(parse_double(values[i], data[i]), IoError, source, ":", line_no, ": tensor '", name,
                "': bad value '", values[i], "' at index ", i);

    QKV_CHECK(fixture.find(name) == fixture.end(), IoError, source, ":", line_no,
              ": duplicate tensor '", name, "'");
    fixture.emplace(name, Tensor::from(shape, std::span<const double>(data)));
  }
  return fixture;
}

Fixture load_fixture(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  QKV_CHECK(in.good(), IoError, path, ": cannot open fixture file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  QKV_CHECK(!in.bad(), IoError, path, ": read error");
  return parse_fixture(buffer.str(), path);
}

const Tensor& fixture_tensor(const Fixture& fixture, const std::string& name,
                             const std::string& source) {
  const auto it = fixture.find(name);
  QKV_CHECK(it != fixture.end(), IoError, source, ": no tensor '", name, "' in the fixture");
  return it->second;
}

}  // namespace qkv::attention::testing

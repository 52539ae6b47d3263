// Every kind of malformed safetensors file must raise IoError naming the file, the
// tensor where there is one, and the exact problem.
#include <cstring>

#include "io_test_util.h"
#include "qkv/io/safetensors.h"

namespace qkv::io {
namespace {

using test::throws_exactly;

// The 8-byte little-endian length `n`, then `rest`.
std::vector<std::byte> with_length(std::uint64_t n, std::string_view rest) {
  std::string s(8, '\0');
  std::memcpy(s.data(), &n, 8);
  s += rest;
  return test::to_bytes(s);
}

// A file with header `json` (its real length) and `data_size` zero bytes of data.
std::vector<std::byte> file_with(std::string_view json, std::size_t data_size) {
  return with_length(json.size(), std::string(json) + std::string(data_size, '\0'));
}

::testing::AssertionResult rejects(const std::vector<std::byte>& bytes,
                                   std::vector<std::string> fragments) {
  fragments.push_back("safetensors file 'bad.safetensors': ");
  return throws_exactly<IoError>([&] { parse_safetensors(bytes, "bad.safetensors"); }, fragments);
}

// One valid entry "a": f32[2] at [0, 8).
constexpr std::string_view kA = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";

TEST(SafetensorsMalformed, TheValidBaseCaseLoads) {
  EXPECT_NO_THROW(parse_safetensors(file_with("{" + std::string(kA) + "}", 8)));
}

TEST(SafetensorsMalformed, FileShorterThan8Bytes) {
  EXPECT_TRUE(rejects(test::to_bytes("\x01\x02\x03"), {"only 3 bytes", "8-byte header length"}));
  EXPECT_TRUE(rejects({}, {"only 0 bytes"}));
}

TEST(SafetensorsMalformed, HeaderLengthZero) {
  EXPECT_TRUE(rejects(with_length(0, "{}"), {"header length (first 8 bytes) is 0"}));
}

TEST(SafetensorsMalformed, HeaderLengthBeyondTheFile) {
  EXPECT_TRUE(rejects(with_length(100, "{}        "),
                      {"header length 100 exceeds the 10 bytes that follow", "truncated"}));
}

TEST(SafetensorsMalformed, HeaderLengthOver100MiB) {
  EXPECT_TRUE(rejects(with_length((100u << 20) + 1, "{}"),
                      {"header length 104857601 exceeds the limit of 104857600 bytes"}));
  EXPECT_TRUE(rejects(with_length(UINT64_MAX, "{}"), {"exceeds the limit"}));
}

TEST(SafetensorsMalformed, HeaderNotUtf8) {
  EXPECT_TRUE(rejects(file_with("{\"a\xff\":1}", 0), {"not valid UTF-8 (byte 3 of the header)"}));
  // Overlong "/" and an encoded surrogate are invalid UTF-8 too.
  EXPECT_TRUE(rejects(file_with("{\"\xc0\xaf\":1}", 0), {"not valid UTF-8"}));
  EXPECT_TRUE(rejects(file_with("{\"\xed\xa0\x80\":1}", 0), {"not valid UTF-8"}));
}

TEST(SafetensorsMalformed, HeaderNotJson) {
  EXPECT_TRUE(rejects(file_with(R"({"a": )", 0), {"the header is not valid JSON", "parse error"}));
  EXPECT_TRUE(rejects(file_with("{} x", 0), {"not valid JSON"}));
  // NUL is neither padding nor JSON (nlohmann's lexer alone would stop reading there).
  EXPECT_TRUE(rejects(file_with(std::string_view("{}\0\0", 4), 0), {"NUL byte (byte 2"}));
  EXPECT_TRUE(rejects(file_with(std::string_view("{}\0{\"hidden\":1}", 15), 0), {"NUL byte"}));
}

TEST(SafetensorsMalformed, HeaderNotAnObject) {
  EXPECT_TRUE(rejects(file_with("[1, 2]", 0), {"must begin with '{'"}));
  EXPECT_TRUE(rejects(file_with(R"("text")", 0), {"must begin with '{'"}));
  EXPECT_TRUE(rejects(file_with(" {}", 0), {"must begin with '{'"}));
}

TEST(SafetensorsMalformed, EntryNotAnObject) {
  EXPECT_TRUE(rejects(file_with(R"({"a":[0,8]})", 8), {"tensor \"a\"", "must be an object"}));
  EXPECT_TRUE(rejects(file_with(R"({"a":null})", 8), {"tensor \"a\"", "not null"}));
}

TEST(SafetensorsMalformed, EntryMissingAKey) {
  EXPECT_TRUE(rejects(file_with(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", 8),
                      {"tensor \"a\"", "missing key \"dtype\""}));
  EXPECT_TRUE(rejects(file_with(R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", 8),
                      {"tensor \"a\"", "missing key \"shape\""}));
  EXPECT_TRUE(rejects(file_with(R"({"a":{"dtype":"F32","shape":[2]}})", 8),
                      {"tensor \"a\"", "missing key \"data_offsets\""}));
}

TEST(SafetensorsMalformed, EntryWithAnUnknownKey) {
  EXPECT_TRUE(
      rejects(file_with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"extra":1}})", 8),
              {"tensor \"a\"", "unknown key \"extra\""}));
}

TEST(SafetensorsMalformed, EntryWithARepeatedKey) {
  EXPECT_TRUE(rejects(
      file_with(R"({"a":{"dtype":"F32","dtype":"F64","shape":[2],"data_offsets":[0,8]}})", 8),
      {"tensor \"a\"", "key \"dtype\" appears twice"}));
}

TEST(SafetensorsMalformed, UnsupportedDtype) {
  EXPECT_TRUE(rejects(file_with(R"({"a":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}})", 8),
                      {"tensor \"a\"", "dtype \"BF16\" is not supported", "F32 and F64"}));
}

TEST(SafetensorsMalformed, DtypeNotAString) {
  EXPECT_TRUE(rejects(file_with(R"({"a":{"dtype":4,"shape":[2],"data_offsets":[0,8]}})", 8),
                      {"tensor \"a\"", "dtype must be a string"}));
}

TEST(SafetensorsMalformed, ShapeNotAList) {
  EXPECT_TRUE(rejects(file_with(R"({"a":{"dtype":"F32","shape":2,"data_offsets":[0,8]}})", 8),
                      {"tensor \"a\"", "shape must be a list of non-negative integers"}));
  EXPECT_TRUE(rejects(file_with(R"({"a":{"dtype":"F32","shape":[[2]],"data_offsets":[0,8]}})", 8),
                      {"tensor \"a\"", "shape must be a list", "holds a list"}));
}

TEST(SafetensorsMalformed, ShapeWithANegativeDimension) {
  EXPECT_TRUE(rejects(file_with(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8),
                      {"tensor \"a\"", "negative dimension -2"}));
}

TEST(SafetensorsMalformed, ShapeWithANonInteger) {
  EXPECT_TRUE(rejects(file_with(R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", 8),
                      {"tensor \"a\"", "shape holds 2.0, not an integer"}));
  EXPECT_TRUE(rejects(file_with(R"({"a":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}})", 8),
                      {"tensor \"a\"", "holds a string"}));
}

TEST(SafetensorsMalformed, ShapeOfTooHighRank) {
  EXPECT_TRUE(rejects(
      file_with(R"({"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,2],"data_offsets":[0,8]}})", 8),
      {"tensor \"a\"", "has rank 9", "at most 8"}));
}

TEST(SafetensorsMalformed, ShapeProductOverflows) {
  EXPECT_TRUE(rejects(
      file_with(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8),
      {"tensor \"a\"", "shape [4294967296, 4294967296] has more elements than 64 bits"}));
  // Fits as an element count, not as a byte count.
  EXPECT_TRUE(rejects(
      file_with(R"({"a":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,8]}})", 8),
      {"tensor \"a\"", "needs more bytes than 64 bits"}));
  // A dimension beyond int64 is refused even when another one is 0.
  EXPECT_TRUE(rejects(
      file_with(R"({"a":{"dtype":"F32","shape":[0,9223372036854775808],"data_offsets":[0,0]}})", 0),
      {"tensor \"a\"", "more elements than 64 bits"}));
}

TEST(SafetensorsMalformed, DataOffsetsNotTwoIntegers) {
  EXPECT_TRUE(rejects(file_with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8),
                      {"tensor \"a\"", "data_offsets [0] must be two integers"}));
  EXPECT_TRUE(rejects(file_with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,8]}})", 8),
                      {"tensor \"a\"", "data_offsets [0, 8, 8] must be two integers"}));
  EXPECT_TRUE(rejects(file_with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":["0",8]}})", 8),
                      {"tensor \"a\"", "data_offsets must be a list", "holds a string"}));
  EXPECT_TRUE(rejects(file_with(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[-1,8]}})", 8),
                      {"tensor \"a\"", "negative number"}));
}

TEST(SafetensorsMalformed, DataOffsetsReversed) {
  EXPECT_TRUE(rejects(file_with(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", 8),
                      {"tensor \"a\"", "data_offsets [8, 0] begin after they end"}));
}

TEST(SafetensorsMalformed, ByteCountDisagreesWithShape) {
  EXPECT_TRUE(rejects(file_with(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
                      {"tensor \"a\"", "span 8 bytes, but F32 [3] needs 12"}));
}

TEST(SafetensorsMalformed, DataOffsetsOutOfRange) {
  EXPECT_TRUE(rejects(file_with("{" + std::string(kA) + "}", 4),
                      {"tensor \"a\"", "reach past the end of the data section (4 bytes"}));
}

TEST(SafetensorsMalformed, OverlappingTensors) {
  const std::string json =
      "{" + std::string(kA) + R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  EXPECT_TRUE(rejects(file_with(json, 12), {"tensors \"a\" and \"b\" overlap", "[4, 12)"}));
}

TEST(SafetensorsMalformed, HoleBetweenTensors) {
  const std::string json =
      "{" + std::string(kA) + R"(,"b":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}})";
  EXPECT_TRUE(rejects(file_with(json, 16),
                      {"bytes [8, 12) of the data section belong to no tensor", "\"b\""}));
  EXPECT_TRUE(rejects(file_with(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8),
                      {"bytes [0, 4) of the data section belong to no tensor"}));
}

TEST(SafetensorsMalformed, DuplicateTensorNames) {
  const std::string json =
      "{" + std::string(kA) + R"(,"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})";
  EXPECT_TRUE(rejects(file_with(json, 16), {"duplicate tensor name \"a\""}));
}

TEST(SafetensorsMalformed, MetadataNotAStringToStringObject) {
  EXPECT_TRUE(rejects(file_with(R"({"__metadata__":"v"})", 0),
                      {"__metadata__ must be an object mapping strings to strings"}));
  EXPECT_TRUE(rejects(file_with(R"({"__metadata__":{"epoch":3}})", 0),
                      {"__metadata__ value of \"epoch\" must be a string, not a number"}));
  EXPECT_TRUE(rejects(file_with(R"({"__metadata__":{"k":{"x":"y"}}})", 0),
                      {"__metadata__ value of \"k\" must be a string, not an object"}));
  EXPECT_TRUE(rejects(file_with(R"({"__metadata__":{"k":"1","k":"2"}})", 0),
                      {"__metadata__ has the key \"k\" twice"}));
  EXPECT_TRUE(rejects(file_with(R"({"__metadata__":{},"__metadata__":{}})", 0),
                      {"__metadata__ appears twice"}));
}

TEST(SafetensorsMalformed, TrailingBytesAfterTheLastTensor) {
  EXPECT_TRUE(rejects(file_with("{" + std::string(kA) + "}", 12),
                      {"4 trailing bytes after the last tensor", "data section is 12 bytes"}));
  EXPECT_TRUE(rejects(file_with("{}", 1), {"1 trailing bytes"}));
}

TEST(SafetensorsMalformed, DeeplyNestedJsonIsRejectedWithoutRecursion) {
  const std::string deep = R"({"a":{"dtype":"F32","shape":)" + std::string(1'000'000, '[');
  EXPECT_TRUE(rejects(file_with(deep, 0), {"tensor \"a\"", "holds a list"}));
}

TEST(SafetensorsMalformed, LoadFromDiskNamesThePath) {
  test::ScratchDir dir;
  const auto path = dir / "model.safetensors";
  const std::vector<std::byte> bytes = file_with("{" + std::string(kA) + "}", 4);
  ::qkv::testing::write_file(path, test::to_string(bytes));
  EXPECT_TRUE(throws_exactly<IoError>(
      [&] { load_safetensors(path); },
      {"safetensors file '" + path.string() + "'", "tensor \"a\"", "reach past the end"}));
}

}  // namespace
}  // namespace qkv::io

// safetensors writing and reading: round trips, byte-exact output against the spec,
// determinism, and the writer's own argument checks.
#include <cmath>
#include <cstring>
#include <limits>

#include "io_test_util.h"
#include "qkv/io/fault_injection.h"
#include "qkv/io/safetensors.h"

namespace qkv::io {
namespace {

using test::ScratchDir;
using test::throws_exactly;
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Same dtype, shape and bits (NaN payloads and -0.0 included).
::testing::AssertionResult same_bits(const Tensor& expected, const Tensor& actual) {
  if (expected.dtype() != actual.dtype() || !(expected.shape() == actual.shape()))
    return ::testing::AssertionFailure() << describe(expected) << " vs " << describe(actual);
  const Tensor e = expected.contiguous();
  const std::size_t bytes = std::size_t(e.numel()) * dtype_size(e.dtype());
  if (bytes > 0 && std::memcmp(e.view().raw_data(), actual.view().raw_data(), bytes) != 0)
    return ::testing::AssertionFailure() << "values differ for " << describe(expected);
  return ::testing::AssertionSuccess();
}

Tensor iota(const Shape& shape, DType dtype, double scale) {
  Tensor t = Tensor::empty(shape, DType::F64);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = scale * double(i) - 1.5;
  return t.to(dtype);
}

NamedTensors sample_tensors() {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> special = {std::nanf(""), -0.0f, inf, -inf, 1e-45f, 3.4e38f};
  return {{"encoder.weight", iota({2, 3}, DType::F32, 0.25)},
          {"encoder.bias", iota({4}, DType::F64, 1.0 / 3.0)},
          {"scalar", Tensor::full({}, 2.5, DType::F32)},
          {"empty", Tensor::zeros({0, 5}, DType::F64)},
          {"special", Tensor::from({6}, special)},
          {"transposed", iota({3, 4}, DType::F32, 1.0).transpose(0, 1)},
          {"unicodé ✓", iota({1, 1, 2}, DType::F64, 2.0)}};
}

const std::map<std::string, std::string> kMetadata = {
    {"config", R"({"layers": 2, "attention": "additive"})"},
    {"vocab", "spm.model"},
    {"note", "line\nbreak \"quoted\" ünï"}};

TEST(Safetensors, RoundTripsF32AndF64InFileOrder) {
  ScratchDir dir;
  const NamedTensors tensors = sample_tensors();
  ASSERT_FALSE(tensors[5].second.is_contiguous());  // the strided case is really strided
  save_safetensors(dir / "m.safetensors", tensors, kMetadata);
  const SafetensorsFile file = load_safetensors(dir / "m.safetensors");
  ASSERT_EQ(file.tensors.size(), tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(file.tensors[i].first, tensors[i].first);
    EXPECT_TRUE(same_bits(tensors[i].second, file.tensors[i].second)) << tensors[i].first;
    EXPECT_TRUE(file.tensors[i].second.is_contiguous());
  }
  EXPECT_EQ(file.metadata, kMetadata);
  ASSERT_NE(file.find("scalar"), nullptr);
  EXPECT_EQ(file.find("scalar")->rank(), 0);
  EXPECT_EQ(file.find("absent"), nullptr);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"m.safetensors"});
}

TEST(Safetensors, SameInputGivesIdenticalBytes) {
  ScratchDir dir;
  save_safetensors(dir / "a", sample_tensors(), kMetadata);
  save_safetensors(dir / "b", sample_tensors(), kMetadata);
  const std::string a = ::qkv::testing::read_file(dir / "a");
  EXPECT_EQ(a, ::qkv::testing::read_file(dir / "b"));
  EXPECT_EQ(a, test::to_string(serialize_safetensors(sample_tensors(), kMetadata)));
}

TEST(Safetensors, StridedViewIsWrittenLikeItsContiguousCopy) {
  const Tensor base = iota({3, 4}, DType::F64, 1.0);
  const Tensor strided = base.transpose(0, 1).slice(0, 1, 3);
  ASSERT_FALSE(strided.is_contiguous());
  EXPECT_EQ(serialize_safetensors({{"t", strided}}),
            serialize_safetensors({{"t", strided.clone()}}));
}

// The file for {"b": f32[2] = {1, -2}, "a": f64[] = 0.5} with {"format": "pt"}, built by
// hand from the spec: u64 LE header length, the compact JSON header the reference
// implementation writes (metadata first, tensors in data order), spaces up to a multiple
// of 8, then the little-endian data.
TEST(Safetensors, TinyFileMatchesTheSpecByteForByte) {
  const std::string json = R"({"__metadata__":{"format":"pt"},)"
                           R"("b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("a":{"dtype":"F64","shape":[],"data_offsets":[8,16]}})";
  ASSERT_EQ(json.size(), 138u);
  const std::string header = json + std::string(6, ' ');  // 144 = 18 * 8
  std::string expected("\x90\0\0\0\0\0\0\0", 8);          // 144, little-endian
  expected += header;
  expected += std::string("\x00\x00\x80\x3f", 4);                  // 1.0f
  expected += std::string("\x00\x00\x00\xc0", 4);                  // -2.0f
  expected += std::string("\x00\x00\x00\x00\x00\x00\xe0\x3f", 8);  // 0.5
  ASSERT_EQ(expected.size(), 168u);

  const NamedTensors tensors = {{"b", Tensor::from({2}, std::vector<float>{1.0f, -2.0f})},
                                {"a", Tensor::full({}, 0.5, DType::F64)}};
  EXPECT_EQ(test::to_string(serialize_safetensors(tensors, {{"format", "pt"}})), expected);

  const SafetensorsFile file = parse_safetensors(test::to_bytes(expected));
  ASSERT_EQ(file.tensors.size(), 2u);
  EXPECT_EQ(file.tensors[0].first, "b");
  EXPECT_TRUE(same_bits(tensors[0].second, file.tensors[0].second));
  EXPECT_TRUE(same_bits(tensors[1].second, file.tensors[1].second));
}

TEST(Safetensors, NoMetadataAndNoTensors) {
  const std::vector<std::byte> none = serialize_safetensors({});
  EXPECT_EQ(test::to_string(none), std::string("\x08\0\0\0\0\0\0\0{}      ", 16));
  const SafetensorsFile file = parse_safetensors(none);
  EXPECT_TRUE(file.tensors.empty());
  EXPECT_TRUE(file.metadata.empty());
  const std::string one = test::to_string(serialize_safetensors({{"x", Tensor::zeros({1})}}));
  EXPECT_EQ(one.substr(8, 6), R"({"x":{)");  // no "__metadata__" key when there is none
}

TEST(Safetensors, HeaderIsPaddedToAMultipleOf8) {
  for (std::size_t len = 1; len <= 9; ++len) {
    const std::string name(len, 'n');
    const std::string file = test::to_string(serialize_safetensors({{name, Tensor::zeros({1})}}));
    std::uint64_t n = 0;
    std::memcpy(&n, file.data(), 8);
    EXPECT_EQ(n % 8, 0u) << name;
    const std::string header = file.substr(8, std::size_t(n));
    const std::size_t end = header.rfind('}');
    EXPECT_EQ(header.find_first_not_of(' ', end + 1), std::string::npos) << header;
    EXPECT_LT(header.size() - end - 1, 8u);
  }
}

// Other writers may order keys and tensors differently and pad with any whitespace.
TEST(Safetensors, ReadsHeadersInAnyKeyOrder) {
  const std::string json =
      R"({"second":{"data_offsets":[4,12],"shape":[1],"dtype":"F64"},)"
      "\n"
      R"( "first" : { "shape" : [ ], "dtype" : "F32", "data_offsets" : [ 0 , 4 ] },)"
      R"("__metadata__":{}, "none":{"dtype":"F32","shape":[0,3],"data_offsets":[12,12]}})"
      "\n\t ";
  std::string bytes(8, '\0');
  const std::uint64_t n = json.size();
  std::memcpy(bytes.data(), &n, 8);
  bytes += json;
  const float one = 1.0f;
  const double two = 2.0;
  bytes.append(reinterpret_cast<const char*>(&one), 4);
  bytes.append(reinterpret_cast<const char*>(&two), 8);
  const SafetensorsFile file = parse_safetensors(test::to_bytes(bytes));
  ASSERT_EQ(file.tensors.size(), 3u);
  EXPECT_EQ(file.tensors[0].first, "first");  // data order, not header order
  EXPECT_EQ(file.tensors[1].first, "second");
  EXPECT_EQ(file.tensors[2].first, "none");
  EXPECT_EQ(file.tensors[0].second.data<float>()[0], 1.0f);
  EXPECT_EQ(file.tensors[1].second.data<double>()[0], 2.0);
  EXPECT_EQ(file.tensors[2].second.shape(), (Shape{0, 3}));
}

TEST(Safetensors, SaveRejectsBadNamesAndTensors) {
  ScratchDir dir;
  const auto path = dir / "m.safetensors";
  const Tensor t = Tensor::zeros({2});
  EXPECT_TRUE(throws_exactly<ValueError>(
      [&] {
        save_safetensors(path, {{"a", t}, {"a", t}});
      },
      {"duplicate tensor name \"a\""}));
  EXPECT_TRUE(throws_exactly<ValueError>(
      [&] {
        save_safetensors(path, {{"__metadata__", t}});
      },
      {"\"__metadata__\" is reserved"}));
  EXPECT_TRUE(throws_exactly<ValueError>(
      [&] {
        save_safetensors(path, {{"u", Tensor()}});
      },
      {"tensor \"u\" is undefined"}));
  EXPECT_TRUE(throws_exactly<ValueError>(
      [&] {
        save_safetensors(path, {{"bad\xff", t}});
      },
      {"tensor name is not valid UTF-8"}));
  EXPECT_TRUE(throws_exactly<ValueError>(
      [&] {
        save_safetensors(path, {}, {{"k", "\xc0\xaf"}});
      },
      {"metadata value of \"k\" is not valid UTF-8"}));
  EXPECT_TRUE(dir.entries().empty());  // nothing was written
}

TEST(Safetensors, FailedSaveKeepsThePreviousModel) {
  ScratchDir dir;
  const auto path = dir / "m.safetensors";
  const NamedTensors old_model = {{"w", iota({3}, DType::F32, 1.0)}};
  save_safetensors(path, old_model);
  for (std::int64_t step = 1; step <= 3; ++step) {  // create, write, fsync
    testing::FailNthWrite fail(step);
    EXPECT_THROW(save_safetensors(path, sample_tensors(), kMetadata), IoError);
  }
  const SafetensorsFile file = load_safetensors(path);
  ASSERT_EQ(file.tensors.size(), 1u);
  EXPECT_TRUE(same_bits(old_model[0].second, file.tensors[0].second));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"m.safetensors"});
}

TEST(Safetensors, LoadNamesAMissingFileOrADirectory) {
  ScratchDir dir;
  EXPECT_TRUE(throws_exactly<IoError>([&] { load_safetensors(dir / "absent.safetensors"); },
                                      {(dir / "absent.safetensors").string(), "No such file"}));
  EXPECT_TRUE(throws_exactly<IoError>([&] { load_safetensors(dir.path()); },
                                      {dir.path().string(), "is a directory"}));
}

}  // namespace
}  // namespace qkv::io

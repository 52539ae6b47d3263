// Damaged files: every truncation of a valid file and every single-byte corruption must
// give a typed qkv::Error or a valid result, never a crash (ASan/UBSan runs check the
// "never" part), and a file never yields more tensor bytes than it holds.
#include <cstring>

#include "io_test_util.h"
#include "qkv/io/safetensors.h"

namespace qkv::io {
namespace {

// A small valid file whose last tensor is not empty (so every truncation is invalid).
std::vector<std::byte> sample_file() {
  const Tensor a = Tensor::from({2, 2}, std::vector<float>{1, 2, 3, 4});
  const Tensor b = Tensor::from({3}, std::vector<double>{0.5, -1, 7});
  return serialize_safetensors({{"a", a}, {"empty", Tensor::zeros({0, 3})}, {"b", b}},
                               {{"format", "pt"}});
}

TEST(SafetensorsTruncation, EveryPrefixRaisesIoError) {
  const std::vector<std::byte> file = sample_file();
  ASSERT_NO_THROW(parse_safetensors(file));
  for (std::size_t len = 0; len < file.size(); ++len) {
    const std::span<const std::byte> prefix(file.data(), len);
    EXPECT_TRUE(test::throws_exactly<IoError>([&] { parse_safetensors(prefix, "cut"); },
                                              {"safetensors file 'cut'"}))
        << "truncated to " << len << " of " << file.size() << " bytes";
  }
}

TEST(SafetensorsTruncation, EveryTruncatedFileOnDiskRaisesIoError) {
  const std::vector<std::byte> file = sample_file();
  test::ScratchDir dir;
  for (std::size_t len = 0; len < file.size(); ++len) {
    // A new file each time: rewriting one with O_TRUNC makes ext4 flush it on close.
    const auto path = dir / ("cut" + std::to_string(len) + ".safetensors");
    ::qkv::testing::write_file(path, test::to_string(file).substr(0, len));
    EXPECT_TRUE(test::throws_exactly<IoError>([&] { load_safetensors(path); }, {path.string()}))
        << "truncated to " << len << " bytes";
  }
}

TEST(SafetensorsTruncation, EverySingleByteCorruptionIsAnErrorOrAValidFile) {
  const std::vector<std::byte> file = sample_file();
  const unsigned char replacements[] = {0x00, 0xff, '"', '{', '}', '[', '9', '-', ' ', 0x80};
  int loaded = 0, rejected = 0;
  for (std::size_t i = 0; i < file.size(); ++i) {
    for (unsigned char r : replacements) {
      std::vector<std::byte> bad = file;
      bad[i] = std::byte{r};
      try {
        const SafetensorsFile f = parse_safetensors(bad);
        std::uint64_t bytes = 0;
        for (const auto& [name, t] : f.tensors) bytes += std::uint64_t(t.numel()) * 4;
        EXPECT_LE(bytes, bad.size());
        ++loaded;
      } catch (const Error&) {
        ++rejected;
      }
    }
  }
  EXPECT_GT(loaded, 0);  // corrupt data bytes still load: the format has no checksum
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace qkv::io

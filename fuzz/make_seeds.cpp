// Writes the seed corpora of the fuzz targets into DIR/<target>/ (fuzz/corpus in the
// repository; fuzz/make_seeds.sh runs this): a handful of small valid inputs each, and
// slightly broken variants of them, so the fuzzer starts inside the formats instead of
// having to discover a safetensors header or a model config by chance.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "qkv/io/safetensors.h"
#include "qkv/models/seq2seq.h"
#include "qkv/train/checkpoint.h"
#include "qkv/train/optimizer.h"

namespace {

namespace fs = std::filesystem;
using namespace qkv;

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// A string literal with its embedded NUL bytes (without the terminating one).
template <size_t N>
std::string lit(const char (&s)[N]) {
  return std::string(s, N - 1);
}

void write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

// `bytes` and variants of it: cut in the middle, cut before the data ends, and with the
// last float32 of the data section set to NaN.
void write_with_variants(const fs::path& dir, const std::string& name, const std::string& bytes) {
  write(dir / (name + ".safetensors"), bytes);
  write(dir / (name + "_half.safetensors"), bytes.substr(0, bytes.size() / 2));
  write(dir / (name + "_short.safetensors"), bytes.substr(0, bytes.size() - 4));
  std::string nan = bytes;
  nan.replace(nan.size() - 4, 4, lit("\x00\x00\xc0\x7f"));
  write(dir / (name + "_nan.safetensors"), nan);
}

models::ModelConfig tiny(models::ModelType type, models::AttentionKind attention,
                         models::CellType cell) {
  models::ModelConfig c;
  c.type = type;
  c.attention = attention;
  c.cell = cell;
  c.vocab_size = 8;
  c.dim_emb = 4;
  c.dim_rnn = 4;
  c.enc_depth = 1;
  c.dec_depth = 1;
  c.heads = 2;
  c.dim_ffn = 8;
  c.max_positions = 16;
  return c;
}

std::string as_string(const std::vector<std::byte>& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

void safetensors_seeds(const fs::path& dir) {
  const Tensor a = Tensor::from(Shape({2, 3}), std::vector<float>{1, 2, 3, 4, 5, 6});
  const Tensor b = Tensor::from(Shape({2}), std::vector<double>{-1.5, 0.25});
  const Tensor scalar = Tensor::from(Shape{}, std::vector<float>{7});
  const Tensor empty = Tensor::zeros(Shape({0, 3}));
  write_with_variants(dir, "two_tensors",
                      as_string(io::serialize_safetensors({{"a", a}, {"b", b}}, {{"k", "v"}})));
  write(dir / "scalar_and_empty.safetensors",
        as_string(io::serialize_safetensors({{"s", scalar}, {"e", empty}})));
  write(dir / "no_tensors.safetensors", as_string(io::serialize_safetensors({}, {{"k", "v"}})));
  // Hand-made: overlapping offsets, and an unknown dtype.
  auto raw = [](const std::string& header, size_t data_bytes) {
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[size_t(i)] = char((header.size() >> (8 * i)) & 0xff);
    return out + header + std::string(data_bytes, '\x01');
  };
  write(dir / "overlap.safetensors",
        raw(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
            R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
            12));
  write(dir / "bf16.safetensors",
        raw(R"({"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})", 4));
}

void model_seeds(const fs::path& scratch, const fs::path& model_dir, const fs::path& state_dir) {
  using models::AttentionKind;
  using models::CellType;
  using models::ModelType;
  const std::map<std::string, models::ModelConfig> configs = {
      {"transformer", tiny(ModelType::Transformer, AttentionKind::ScaledDot, CellType::Lstm)},
      {"rnn_additive_gru", tiny(ModelType::Rnn, AttentionKind::Additive, CellType::Gru)},
      {"rnn_none_lstm", tiny(ModelType::Rnn, AttentionKind::None, CellType::Lstm)},
  };
  for (const auto& [name, config] : configs) {
    const auto model = models::make_model(config, 1);
    const fs::path model_path = scratch / "model.safetensors";
    train::save_model(*model, model_path, "vocab.spm", 3);
    write_with_variants(model_dir, name, read_all(model_path));

    train::Adam adam(model->parameters().numel(), train::AdamOptions{});
    train::TrainProgress progress;
    progress.update = 3;
    progress.tokens_seen = 40;
    progress.model_seed = 1;
    progress.best_valid_loss = 2.5;
    const fs::path state_path = scratch / "train_state.safetensors";
    train::save_train_state(state_path, progress, *model, adam);
    write_with_variants(state_dir, name, read_all(state_path));
  }
}

// The corpus target's first byte is a mode (see fuzz_corpus.cpp).
void corpus_seeds(const fs::path& dir) {
  const std::string text = "Ein Hund läuft.\nA dog runs.\n\n  \nZwei Männer\tlachen.\n";
  write(dir / "plain", lit("\x00") + text);
  write(dir / "gzip", "\x01" + text);
  write(dir / "crlf_bom", lit("\x00\xEF\xBB\xBF") + "one\r\ntwo\r\nthree");
  write(dir / "invalid_utf8", lit("\x02ok\n\xC0\xAF overlong\n\xED\xA0\x80 surrogate\n"));
  write(dir / "control_chars", lit("\x02tab\tok\nbell\x07\nnul\x00x\n"));
  write(dir / "too_long", "\x06short\nthis line is longer than sixteen bytes\nok\n");
  write(dir / "parallel",
        "\x0a"
        "a b\nc d\n\n\xff"
        "x y\nz\nw\n");
  write(dir / "parallel_mismatch",
        "\x08one\ntwo\nthree\n\xff"
        "uno\n");
  // A gzip stream cut short, stored raw (mode 0): the reader sees the magic bytes.
  write(dir / "truncated_gzip",
        lit("\x00\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xf3\x48\xcd\xc9"));
}

// The BLEU target's first two bytes are options (see fuzz_bleu.cpp).
void bleu_seeds(const fs::path& dir) {
  write(dir / "one_ref", lit("\x00\x00") +
                             "The cat sat on the mat.\nThe cat is on the mat.\n"
                             "It's 3.5 km - \"far\", isn't it?\nIt is 3.5 km away.\n");
  write(dir / "two_refs_chrf",
        lit("\x00\x04") + "Ein kleiner Hund.\nEin Hund.\nDer kleine Hund.\n");
  write(dir / "none_tokenizer_floor",
        lit("\x0b\x02") + "a b c d\na b d c\n&amp;quot; x\n&quot; x\n");
  write(dir / "empty_ref", lit("\x00\x00") + "hello\n\n");
  write(dir / "unicode_space", lit("\x30\x08") +
                                   "a\xC2\xA0"
                                   "b\xE3\x80\x80"
                                   "c\na b c\n");
  write(dir / "invalid_utf8", lit("\x00\x00") + "ab\xff\nab\n");
}

void config_seeds(const fs::path& dir) {
  write(dir / "valid.yml",
        "dim-emb: 256\nlearn-rate: 1e-4\nresume: true\ntrain-sets: [a.en, b.de]\n"
        "valid-metrics:\n  - bleu\n  - chrf\ntype: rnn\nafter: 5e,30m\nmodel: \"m/x.st\"\n");
  write(dir / "empty.yml", "");
  write(dir / "comments_only.yml", "# nothing here\n");
  write(dir / "bad_indent.yml", "dim-emb: 256\n  learn-rate: 1\n");
  write(dir / "unknown_key.yml", "dim-embd: 256\n");
  write(dir / "duplicate.yml", "shift: -3\nshift: 4\n");
  write(dir / "anchors.yml", "name: &n run1\nmodel: *n\ntrain-sets: [*n, b]\n");
  write(dir / "wrong_kinds.yml", "dim-emb: [1, 2]\nresume: maybe\nlabel-smoothing: 2\n");
  write(dir / "quoted.yml", "name: 'it''s: a \"name\"'\noffset: -.inf\nafter: 10m\n");
  write(dir / "flow_map.yml", "{dim-emb: 8, type: s2s, train-sets: []}\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR (fuzz/corpus)\n", argv[0]);
    return 2;
  }
  const fs::path out = argv[1];
  const fs::path scratch = fs::temp_directory_path() / "qkv-make-seeds";
  fs::create_directories(scratch);
  safetensors_seeds(out / "fuzz_safetensors");
  model_seeds(scratch, out / "fuzz_model_file", out / "fuzz_train_state");
  corpus_seeds(out / "fuzz_corpus");
  bleu_seeds(out / "fuzz_bleu");
  config_seeds(out / "fuzz_config");
  fs::remove_all(scratch);
  return 0;
}

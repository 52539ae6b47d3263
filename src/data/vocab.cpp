// Vocab: a thin, checked wrapper over sentencepiece::SentencePieceProcessor. Ids are
// validated here because SentencePiece's IdToPiece/Decode abort or misbehave on ids
// outside the vocabulary.
#include "qkv/data/vocab.h"

#include <sentencepiece_processor.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <type_traits>

#include "qkv/base/error.h"
#include "qkv/base/hash.h"

namespace qkv::data {

static_assert(std::is_same_v<int, int32_t>, "SentencePiece ids are int");

namespace {
constexpr std::string_view kWordMarker = "\xE2\x96\x81";  // U+2581 ▁
}  // namespace

struct Vocab::Impl {
  sentencepiece::SentencePieceProcessor sp;
  std::vector<uint8_t> starts_word;  // [size] 1 iff the piece begins with ▁
  std::vector<uint8_t> special;      // [size] 1 for control pieces (<pad>, <s>, </s>)
  int32_t size = 0, pad = -1, unk = -1, bos = -1, eos = -1;
};

Vocab Vocab::load(const std::filesystem::path& path) {
  const std::string name = path.string();
  std::error_code ec;
  QKV_CHECK(!std::filesystem::is_directory(path, ec), IoError, name,
            " is a directory; expected a SentencePiece .model file");
  std::ifstream in(path, std::ios::binary);
  QKV_CHECK(in.good(), IoError, "cannot open vocabulary ", name,
            ": no such file or no permission; train one with train_vocab (qkv vocab)");
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  QKV_CHECK(!in.bad(), IoError, "cannot read vocabulary ", name);
  return from_serialized(bytes, name);
}

Vocab Vocab::from_serialized(std::string_view bytes, std::string_view origin) {
  auto impl = std::make_shared<Impl>();
  const auto status = impl->sp.LoadFromSerializedProto(bytes);
  QKV_CHECK(status.ok() && impl->sp.GetPieceSize() > 0, IoError, origin,
            " is not a valid SentencePiece model (", status.message(),
            "); train one with train_vocab (qkv vocab)");
  Impl& v = *impl;
  v.size = v.sp.GetPieceSize();
  v.pad = v.sp.pad_id();
  v.unk = v.sp.unk_id();
  v.bos = v.sp.bos_id();
  v.eos = v.sp.eos_id();
  const std::pair<int32_t, const char*> required[] = {{v.pad, "<pad> (pad_id)"},
                                                      {v.unk, "<unk> (unk_id)"},
                                                      {v.bos, "<s> (bos_id)"},
                                                      {v.eos, "</s> (eos_id)"}};
  for (const auto& [id, what] : required)
    QKV_CHECK(id >= 0 && id < v.size, IoError, origin, " has no ", what,
              " piece; qkv needs <pad>, <unk>, <s> and </s>: train the vocabulary with "
              "train_vocab (qkv vocab)");
  v.starts_word.resize(static_cast<size_t>(v.size));
  v.special.resize(static_cast<size_t>(v.size));
  for (int32_t id = 0; id < v.size; ++id) {
    v.special[static_cast<size_t>(id)] = v.sp.IsControl(id) ? 1 : 0;
    v.starts_word[static_cast<size_t>(id)] =
        !v.sp.IsControl(id) && v.sp.IdToPiece(id).starts_with(kWordMarker) ? 1 : 0;
  }
  return Vocab(std::move(impl));
}

void Vocab::check_id(int32_t id) const {
  QKV_CHECK(id >= 0 && id < impl_->size, IndexError, "token id ", id,
            " is outside the vocabulary [0, ", impl_->size, ")");
}

std::vector<int32_t> Vocab::encode(std::string_view text) const {
  std::vector<int> ids;
  const auto status = impl_->sp.Encode(text, &ids);
  QKV_CHECK(status.ok(), ValueError, "SentencePiece could not encode \"", text,
            "\": ", status.message());
  return ids;
}

std::vector<std::string> Vocab::encode_pieces(std::string_view text) const {
  std::vector<std::string> pieces;
  const auto status = impl_->sp.Encode(text, &pieces);
  QKV_CHECK(status.ok(), ValueError, "SentencePiece could not encode \"", text,
            "\": ", status.message());
  return pieces;
}

std::string Vocab::decode(std::span<const int32_t> ids) const {
  for (int32_t id : ids) check_id(id);
  std::string text;
  const auto status = impl_->sp.Decode(std::vector<int>(ids.begin(), ids.end()), &text);
  QKV_CHECK(status.ok(), ValueError, "SentencePiece could not decode ", ids.size(),
            " ids: ", status.message());
  return text;
}

std::vector<std::string> Vocab::pieces(std::span<const int32_t> ids) const {
  std::vector<std::string> out;
  out.reserve(ids.size());
  for (int32_t id : ids) out.push_back(piece(id));
  return out;
}

std::string Vocab::piece(int32_t id) const {
  check_id(id);
  return impl_->sp.IdToPiece(id);
}

int32_t Vocab::id_of(std::string_view piece) const {
  return impl_->sp.PieceToId(piece);
}

bool Vocab::starts_word(int32_t id) const {
  check_id(id);
  return impl_->starts_word[static_cast<size_t>(id)] != 0;
}

std::vector<int32_t> Vocab::word_ids(std::span<const int32_t> ids) const {
  std::vector<int32_t> out;
  out.reserve(ids.size());
  int32_t word = -1;
  for (int32_t id : ids) {
    check_id(id);
    const auto i = static_cast<size_t>(id);
    if (impl_->special[i] != 0) {
      out.push_back(-1);
      continue;
    }
    if (word < 0 || impl_->starts_word[i] != 0) ++word;
    out.push_back(word);
  }
  return out;
}

int32_t Vocab::size() const noexcept {
  return impl_->size;
}
int32_t Vocab::pad_id() const noexcept {
  return impl_->pad;
}
int32_t Vocab::unk_id() const noexcept {
  return impl_->unk;
}
int32_t Vocab::bos_id() const noexcept {
  return impl_->bos;
}
int32_t Vocab::eos_id() const noexcept {
  return impl_->eos;
}
std::string Vocab::serialized() const {
  return impl_->sp.serialized_model_proto();
}
std::string Vocab::fingerprint() const {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(fnv1a_64(serialized())));
  return std::string("fnv1a64:") + hex;
}

}  // namespace qkv::data

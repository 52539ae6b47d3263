#include "qkv/data/vocab.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "data_test_util.h"
#include "qkv/base/error.h"
#include "qkv/base/rng.h"
#include "qkv/data/batcher.h"
#include "qkv/data/parallel_corpus.h"

namespace qkv::data {
namespace {

using testing::read_file;
using testing::test_dir;
using testing::throws_with;
using testing::write_file;
using testing::write_gzip;

const std::vector<std::string> kEnglish = {
    "the",  "a",    "man",   "woman", "dog",    "cat",   "runs",  "sits",  "on",    "in",
    "red",  "blue", "small", "big",   "street", "park",  "with",  "ball",  "two",   "young",
    "girl", "boy",  "plays", "near",  "water",  "grass", "white", "black", "shirt", "hat"};
const std::vector<std::string> kGerman = {
    "der",     "eine",  "Mann",   "Frau",  "Hund",   "Katze", "läuft", "sitzt",    "auf",  "im",
    "rote",    "blaue", "kleine", "große", "Straße", "Park",  "mit",   "Ball",     "zwei", "junge",
    "Mädchen", "Junge", "spielt", "nahe",  "Wasser", "Gras",  "weiße", "schwarze", "Hemd", "Hut"};

// n sentences of 3..10 words drawn with qkv's Rng (fixed seed).
std::string synthetic(const std::vector<std::string>& words, int n, uint64_t stream) {
  Rng rng(42, stream);
  std::string text;
  for (int i = 0; i < n; ++i) {
    const uint64_t len = 3 + rng.uniform_int(8);
    for (uint64_t j = 0; j < len; ++j)
      text += (j ? " " : "") + words[rng.uniform_int(words.size())];
    text += ".\n";
  }
  return text;
}

constexpr int32_t kVocabSize = 96;

// One training shared by the tests that only read the model (keeps the suite fast).
class VocabTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // One directory per process: ctest runs each test of the suite as its own process,
    // in parallel, and they must not rewrite each other's model while it is read.
    dir_ = new std::filesystem::path(std::filesystem::path(::testing::TempDir()) / "qkv_data_test" /
                                     ("VocabShared." + std::to_string(::getpid())));
    std::filesystem::create_directories(*dir_);
    src_ =
        new std::filesystem::path(write_gzip(*dir_ / "train.en.gz", synthetic(kEnglish, 300, 1)));
    tgt_ = new std::filesystem::path(write_file(*dir_ / "train.de", synthetic(kGerman, 300, 2)));
    model_ = new std::filesystem::path(*dir_ / "joint.model");
    train_vocab({*src_, *tgt_}, kVocabSize, *model_);
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    std::filesystem::remove_all(*dir_, ignored);
    for (auto* p : {dir_, src_, tgt_, model_}) delete p;
  }
  static std::filesystem::path* dir_;
  static std::filesystem::path* src_;
  static std::filesystem::path* tgt_;
  static std::filesystem::path* model_;
};
std::filesystem::path* VocabTest::dir_ = nullptr;
std::filesystem::path* VocabTest::src_ = nullptr;
std::filesystem::path* VocabTest::tgt_ = nullptr;
std::filesystem::path* VocabTest::model_ = nullptr;

TEST_F(VocabTest, SpecialIdsAndPiecesAreFixed) {
  const Vocab v = Vocab::load(*model_);
  EXPECT_EQ(v.size(), kVocabSize);
  EXPECT_EQ(v.pad_id(), 0);
  EXPECT_EQ(v.unk_id(), 1);
  EXPECT_EQ(v.bos_id(), 2);
  EXPECT_EQ(v.eos_id(), 3);
  EXPECT_EQ(v.pieces(std::vector<int32_t>{0, 1, 2, 3}),
            (std::vector<std::string>{"<pad>", "<unk>", "<s>", "</s>"}));
  EXPECT_EQ(v.id_of("</s>"), 3);
  EXPECT_EQ(v.id_of("no such piece"), v.unk_id());
}

TEST_F(VocabTest, EncodeDecodeRoundTripsOnBothLanguages) {
  const Vocab v = Vocab::load(*model_);
  for (const std::string s :
       {"the young girl plays with a red ball.", "zwei junge Mädchen spielt im Park nahe Wasser.",
        "a big dog sits near the white cat."}) {
    const std::vector<int32_t> ids = v.encode(s);
    ASSERT_FALSE(ids.empty());
    for (int32_t id : ids) {
      EXPECT_GT(id, 3) << "no special id inside encoded text";
      EXPECT_LT(id, v.size());
    }
    EXPECT_EQ(v.decode(ids), s);
  }
  // Specials decode to nothing, so a decoder's output decodes with BOS/EOS/pad in it.
  std::vector<int32_t> framed = {2};
  for (int32_t id : v.encode("two dogs.")) framed.push_back(id);
  framed.insert(framed.end(), {3, 0, 0});
  EXPECT_EQ(v.decode(framed), "two dogs.");
}

TEST_F(VocabTest, WordStartsFollowTheMarker) {
  const Vocab v = Vocab::load(*model_);
  const std::vector<int32_t> ids = v.encode("the woman runs.");
  const std::vector<std::string> pieces = v.pieces(ids);
  ASSERT_EQ(pieces, v.encode_pieces("the woman runs."));
  std::vector<int32_t> framed = {v.bos_id()};
  framed.insert(framed.end(), ids.begin(), ids.end());
  framed.push_back(v.eos_id());
  const std::vector<int32_t> words = v.word_ids(framed);
  ASSERT_EQ(words.size(), framed.size());
  EXPECT_EQ(words.front(), -1);
  EXPECT_EQ(words.back(), -1);
  EXPECT_EQ(words[1], 0);
  int32_t expected = -1;
  for (size_t i = 0; i < ids.size(); ++i) {
    const bool marker = pieces[i].starts_with("\xE2\x96\x81");
    EXPECT_EQ(v.starts_word(ids[i]), marker) << pieces[i];
    if (marker || expected < 0) ++expected;
    EXPECT_EQ(words[i + 1], expected) << pieces[i];
  }
  EXPECT_EQ(words[words.size() - 2], 2) << "three words: the / woman / runs.";
  EXPECT_FALSE(v.starts_word(v.bos_id()));
}

TEST_F(VocabTest, OutOfRangeIdsAreIndexErrors) {
  const Vocab v = Vocab::load(*model_);
  EXPECT_TRUE(throws_with<IndexError>(
      [&] {
        v.decode(std::vector<int32_t>{4, kVocabSize});
      },
      {"token id 96", "[0, 96)"}));
  EXPECT_TRUE(throws_with<IndexError>([&] { v.piece(-1); }, {"token id -1"}));
  EXPECT_TRUE(throws_with<IndexError>([&] { v.word_ids(std::vector<int32_t>{1000}); }, {"1000"}));
}

TEST_F(VocabTest, SerializedBytesLoadToTheSameVocabulary) {
  const Vocab v = Vocab::load(*model_);
  EXPECT_EQ(v.serialized(), read_file(*model_));
  const Vocab w = Vocab::from_serialized(v.serialized(), "checkpoint");
  EXPECT_EQ(w.encode("the man runs."), v.encode("the man runs."));
}

// The fingerprint is of the file's bytes: the same vocabulary loaded twice agrees, another
// one of the same size does not.
TEST_F(VocabTest, FingerprintIdentifiesTheModelBytes) {
  const Vocab v = Vocab::load(*model_);
  EXPECT_EQ(v.fingerprint(), Vocab::from_serialized(v.serialized(), "copy").fingerprint());
  EXPECT_EQ(v.fingerprint().size(), std::string("fnv1a64:").size() + 16);
  const auto dir = test_dir();
  train_vocab({*src_, *tgt_}, kVocabSize, dir / "other.model", {.seed = 9, .max_sentences = 200});
  const Vocab other = Vocab::load(dir / "other.model");
  ASSERT_EQ(other.size(), v.size());
  EXPECT_NE(other.fingerprint(), v.fingerprint());
}

TEST_F(VocabTest, SameSeedGivesTheSameModelBytes) {
  const auto dir = test_dir();
  train_vocab({*src_, *tgt_}, kVocabSize, dir / "again.model");
  EXPECT_EQ(read_file(dir / "again.model"), read_file(*model_));
}

TEST_F(VocabTest, SampledTrainingIsSeededAndReproducible) {
  const auto dir = test_dir();
  const VocabTrainOptions seven{.seed = 7, .max_sentences = 120};
  const VocabTrainReport r = train_vocab({*src_, *tgt_}, 64, dir / "a.model", seven);
  train_vocab({*src_, *tgt_}, 64, dir / "b.model", seven);
  train_vocab({*src_, *tgt_}, 64, dir / "c.model", {.seed = 8, .max_sentences = 120});
  EXPECT_EQ(r.sentences, 120);
  EXPECT_EQ(read_file(dir / "a.model"), read_file(dir / "b.model"));
  EXPECT_NE(read_file(dir / "a.model"), read_file(dir / "c.model"));
}

TEST_F(VocabTest, ReportCountsSentencesPerFile) {
  const auto dir = test_dir();
  const auto extra = write_file(dir / "extra.txt", "the dog.\n\n  \nthe cat.\n");
  const VocabTrainReport r = train_vocab({*src_, *tgt_, extra}, kVocabSize, dir / "m.model");
  EXPECT_EQ(r.sentences, 602);
  EXPECT_EQ(r.skipped_blank, 2);
  ASSERT_EQ(r.files.size(), 3u);
  EXPECT_TRUE(r.files[0].gzip);
  EXPECT_EQ(r.files[2].lines, 4);
}

TEST_F(VocabTest, TooLargeVocabularyIsAConfigErrorWithSentencePiecesMessage) {
  const auto dir = test_dir();
  EXPECT_TRUE(throws_with<ConfigError>(
      [&] { train_vocab({*src_}, 5000, dir / "big.model"); },
      {"vocab_size 5000", "Vocabulary size too high", "choose a smaller vocab_size"}));
  EXPECT_FALSE(std::filesystem::exists(dir / "big.model"));
  EXPECT_TRUE(throws_with<ConfigError>([&] { train_vocab({*src_}, 4, dir / "m.model"); },
                                       {"vocab_size must be > 4"}));
  EXPECT_TRUE(throws_with<ConfigError>([&] { train_vocab({}, 64, dir / "m.model"); },
                                       {"no training files"}));
}

TEST(VocabTrain, InvalidLinesFollowThePolicy) {
  const auto dir = test_dir();
  std::string text = synthetic(kEnglish, 100, 3);
  text += "bad \xED\xA0\x80 line\n";
  const auto path = write_file(dir / "bad.en", text);
  EXPECT_TRUE(throws_with<ValueError>([&] { train_vocab({path}, 48, dir / "m.model"); },
                                      {path.string() + ":101:", "surrogate U+D800"}));
  EXPECT_FALSE(std::filesystem::exists(dir / "m.model"));
  const VocabTrainReport r =
      train_vocab({path}, 48, dir / "m.model", {.read = {.invalid = InvalidLines::Skip}});
  EXPECT_EQ(r.sentences, 100);
  EXPECT_EQ(r.files.at(0).invalid, 1);
  EXPECT_EQ(Vocab::load(dir / "m.model").size(), 48);
}

TEST(VocabTrain, BlankAndOverlongLinesAreLeftOutAndCounted) {
  const auto dir = test_dir();
  const std::string text = synthetic(kEnglish, 100, 5);
  // A 1 MiB repetitive line (within the reader's limit) took SentencePiece minutes.
  std::string periodic;
  for (int i = 0; i < (1 << 17); ++i) periodic += "red dog ";
  const auto hostile = write_file(dir / "hostile.en", " \t\n" + periodic + "\n" + text + "\n");
  const VocabTrainReport r = train_vocab({hostile}, 48, dir / "hostile.model");
  EXPECT_EQ(r.sentences, 100);
  EXPECT_EQ(r.skipped_blank, 2);
  EXPECT_EQ(r.skipped_long, 1);
  EXPECT_EQ(r.files.at(0).kept, 103);  // read as valid lines; only the vocabulary leaves them out
  // The vocabulary is exactly the one of the text without those lines.
  train_vocab({write_file(dir / "clean.en", text)}, 48, dir / "clean.model");
  EXPECT_EQ(read_file(dir / "hostile.model"), read_file(dir / "clean.model"));
  // The limit is an option.
  const VocabTrainReport small =
      train_vocab({hostile}, 48, dir / "small.model", {.max_sentence_bytes = 40});
  EXPECT_GT(small.skipped_long, 1);
  EXPECT_EQ(small.sentences + small.skipped_long + small.skipped_blank, 103);
  EXPECT_TRUE(throws_with<ConfigError>(
      [&] { train_vocab({hostile}, 48, dir / "m.model", {.max_sentence_bytes = 0}); },
      {"max sentence bytes"}));
}

TEST(VocabTrain, NoUsableSentenceIsAConfigError) {
  const auto dir = test_dir();
  const auto blank = write_file(dir / "blank.txt", "\n  \n");
  EXPECT_TRUE(throws_with<ConfigError>([&] { train_vocab({blank}, 16, dir / "m.model"); },
                                       {"no usable sentence", blank.string()}));
}

TEST(VocabTrain, MissingInputOrUnwritableOutputIsAnIoError) {
  const auto dir = test_dir();
  EXPECT_TRUE(throws_with<IoError>([&] { train_vocab({dir / "nope"}, 16, dir / "m.model"); },
                                   {(dir / "nope").string()}));
  const auto text = write_file(dir / "t.txt", synthetic(kEnglish, 50, 4));
  EXPECT_TRUE(throws_with<IoError>(
      [&] { train_vocab({text}, 32, dir / "no_such_dir" / "m.model"); }, {"no_such_dir"}));
}

TEST(VocabLoad, MissingDirectoryOrGarbageIsAnIoErrorNamingTheFile) {
  const auto dir = test_dir();
  EXPECT_TRUE(throws_with<IoError>([&] { Vocab::load(dir / "missing.model"); },
                                   {(dir / "missing.model").string()}));
  EXPECT_TRUE(throws_with<IoError>([&] { Vocab::load(dir); }, {dir.string(), "directory"}));
  for (const char* bytes : {"", "this is not a model\n", "\x0a\x05hello\x12\x00"}) {
    const auto path = write_file(dir / "garbage.model", bytes);
    EXPECT_TRUE(throws_with<IoError>([&] { Vocab::load(path); },
                                     {path.string(), "not a valid SentencePiece model"}))
        << bytes;
  }
}

TEST_F(VocabTest, TokenizeEncodesBothSidesAndKeepsLineNumbers) {
  const Vocab v = Vocab::load(*model_);
  const auto dir = test_dir();
  const ParallelCorpus corpus =
      read_parallel_corpus(write_file(dir / "s", "the dog.\n\na cat.\n"),
                           write_file(dir / "t", "der Hund.\nx\neine Katze.\n"));
  const TokenizedCorpus t = tokenize(corpus, v);
  ASSERT_EQ(t.source.size(), 2u);
  EXPECT_EQ(t.source[1], v.encode("a cat."));
  EXPECT_EQ(t.target[0], v.encode("der Hund."));
  EXPECT_EQ(t.line_numbers, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(t.stats.skipped_empty, 1);
  EXPECT_EQ(t.stats.kept, 2);
}

}  // namespace
}  // namespace qkv::data

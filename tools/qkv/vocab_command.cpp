// qkv vocab: one joint SentencePiece model trained on the source and target corpora.
#include <iostream>

#include "command.h"
#include "qkv/cli/options.h"
#include "qkv/data/vocab.h"

namespace qkv::tool {
namespace {

cli::OptionSet vocab_options() {
  cli::OptionSet o;
  o.add_list("train-sets", {},
             "Training corpora (plain or .gz) to learn the subwords from, "
             "usually the source and the target file.")
      .required()
      .metavar("FILE");
  o.add_int("vocab-size", 8000, "Number of pieces, including <pad>, <unk>, <s>, </s>.")
      .range(5, 1000000);
  o.add_path("output", std::nullopt, "Where to write the SentencePiece model.")
      .alias('o')
      .required()
      .metavar("FILE");
  o.add_enum("subword", {"unigram", "bpe"}, "unigram",
             "Subword algorithm: unigram language model or byte-pair encoding.");
  o.add_double("character-coverage", 1.0,
               "Share of characters the pieces must cover (1 for alphabetic scripts, 0.9995 "
               "for CJK); the rest become <unk>.")
      .range(0.5, 1.0);
  o.add_int("max-sentences", 0, "Train on a seeded sample of this many sentences (0: all).")
      .range(0, 1e12);
  o.add_int("seed", 1111, "Seed of the sample and of SentencePiece.").range(0, 4294967295.0);
  o.add_switch("skip-invalid", "Skip lines with invalid UTF-8 (counted) instead of stopping.");
  return o;
}

int vocab(const cli::ParsedOptions& p, std::span<const char* const> /*args*/) {
  std::vector<std::filesystem::path> files;
  for (const std::string& f : p.get_list("train-sets")) files.emplace_back(f);
  data::VocabTrainOptions train;
  train.model = p.get<std::string>("subword") == "bpe" ? data::SubwordModel::Bpe
                                                       : data::SubwordModel::Unigram;
  train.seed = static_cast<uint32_t>(p.get<int64_t>("seed"));
  train.character_coverage = p.get<double>("character-coverage");
  train.max_sentences = p.get<int64_t>("max-sentences");
  if (p.get<bool>("skip-invalid")) train.read.invalid = data::InvalidLines::Skip;
  const auto output = p.get<std::filesystem::path>("output");
  const data::VocabTrainReport r =
      data::train_vocab(files, static_cast<int32_t>(p.get<int64_t>("vocab-size")), output, train);
  // train_vocab logs the summary line itself; add what was read from each file.
  for (size_t i = 0; i < r.files.size() && i < files.size(); ++i)
    std::cerr << r.files[i].describe(files[i]) << "\n";
  return kExitOk;
}

}  // namespace

int vocab_main(int argc, const char* const* argv) {
  return run_subcommand({"vocab", vocab_options, vocab,
                         "Trains one joint SentencePiece vocabulary on the training corpora "
                         "(source and target together)."},
                        argc, argv);
}

}  // namespace qkv::tool

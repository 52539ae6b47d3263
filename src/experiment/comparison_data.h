// Private to comparison.cpp: what a comparison reads once and every variant shares, and
// the report's notes that describe the run.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "qkv/experiment/comparison.h"
#include "qkv/train/trainer.h"

namespace qkv::experiment {

struct ComparisonData {
  train::TrainingData training;  // vocabulary, training pairs, validation set (optional)
  TestSet test;
  std::string train_description;  // "29000 pairs from train.en.gz / train.de.gz"
  std::string valid_description;  // "" without validation
};

// The test set, the vocabulary (spec.vocab, else trained once into out/vocab.spm, or with
// spec.reuse the out/vocab.spm an earlier run trained), the training pairs and the
// validation set, each cut to spec.max_sentences pairs when > 0. Progress lines on `log`.
ComparisonData load_comparison_data(const ComparisonSpec& spec, std::ostream& log);

// The report's notes: the command, the data, what every variant shares, the machine and
// what each column means.
std::vector<std::string> comparison_notes(const ComparisonSpec& spec, const ComparisonData& data);

}  // namespace qkv::experiment

// `qkv demo`, the README's main job, as a ComparisonSpec: on Multi30k En->De (shipped in
// data/multi30k), the RNN without attention, the RNN with Bahdanau attention and a
// Transformer trained within one time budget, each translating the test set, with the HTML
// report. Small models (128-wide, a 4000-piece vocabulary) so that in ~4.4 minutes on 2
// cores an RNN sees the training data about three times and the 3-layer Transformer about
// once; so short a run underfits, hence no dropout, a constant learning rate after a short
// warmup, and 2048-token batches for more updates.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "qkv/experiment/comparison.h"

namespace qkv::experiment {

inline constexpr const char* kDemoVariants = "rnn:none,rnn:additive,transformer";

struct DemoSettings {
  // Total budget: 90% trains the three models (a third each), the rest builds the
  // vocabulary, translates the test set and writes the report.
  double minutes = 15;
  std::filesystem::path out = "qkv-demo";  // replaced if it holds an earlier demo
  // Multi30k: train.{en,de}.gz and test_2016_flickr.{en,de}.gz.
  std::filesystem::path data;
  int64_t max_sentences = 0;  // > 0: only the first N training and test pairs
  int64_t threads = 2;
  int64_t beam_size = 5;  // the test set's search
  double normalize = 0.6;
  friend bool operator==(const DemoSettings&, const DemoSettings&) = default;
};

// The comparison the demo runs. FieldIoError naming {data} when a Multi30k file is
// missing there.
ComparisonSpec demo_spec(const DemoSettings& demo);

}  // namespace qkv::experiment

// Flag groups that several `qkv` commands take, each flag declared here once with one
// default and one help text: the worker threads, the search, the decoding batch, the
// decoding length limit and the model to decode with. A command declares a group with one call and
// reads it with one.
//
// Left out on purpose: `qkv demo --threads` defaults to 2 (the 2-core machine its budget
// is timed on), `qkv serve --threads` counts decoding workers, `qkv gradflow --mini-batch`
// is a training forward/backward batch, and `qkv train --max-length` (and gradflow's)
// filters training pairs (experiment::TrainSettings::max_length).
#pragma once

#include <cstdint>

namespace qkv::cli {

class OptionSet;
class ParsedOptions;

// --threads N: worker threads; 0: QKV_NUM_THREADS or all cores.
void add_threads_option(OptionSet& o);
// Sizes the thread pool from --threads when it is > 0.
void apply_threads_option(const ParsedOptions& p);

// The default of --max-length-factor: a translation has at most factor x source tokens + 5.
inline constexpr double kMaxLengthFactor = 2;

struct SearchValues {
  int64_t beam_size = 5;
  double normalize = 0.6;
  double max_length_factor = kMaxLengthFactor;  // the default where the flag is left out
};

// --beam-size (-b) and --normalize, and --max-length-factor up to `max_length_factor` when
// it is > 0: `qkv attend` draws a heatmap cell per source x target token, so it caps the
// factor at 3 where translate allows 1000; `qkv compare` takes no factor.
void add_search_options(OptionSet& o, double max_length_factor = 1000);
// --beam-size, --normalize and --max-length-factor as given (or defaulted).
SearchValues search_values(const ParsedOptions& p);

// The default of --max-length for the decoding commands (translate, score, attend).
inline constexpr int64_t kDecodeMaxLength = 1000;
// --max-length N, in [1, `max`]: inputs with more subword tokens are not decoded.
// `qkv attend` caps it at 1000 (its heatmaps), the others at 10^7.
void add_max_length_option(OptionSet& o, int64_t max = 10'000'000);

// --mini-batch N: sentences (pairs, for score) decoded together.
void add_mini_batch_option(OptionSet& o);

// --model DIR (-m), required: the trained model a decoding command loads.
void add_model_option(OptionSet& o);

}  // namespace qkv::cli

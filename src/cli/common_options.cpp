#include "qkv/cli/common_options.h"

#include "qkv/base/thread_pool.h"
#include "qkv/cli/options.h"

namespace qkv::cli {

void add_threads_option(OptionSet& o) {
  o.add_int("threads", 0, "Worker threads (0: QKV_NUM_THREADS or all cores).").range(0, 256);
}

void apply_threads_option(const ParsedOptions& p) {
  if (p.get<int64_t>("threads") > 0) set_num_threads(int(p.get<int64_t>("threads")));
}

void add_search_options(OptionSet& o, double max_length_factor) {
  const SearchValues d;
  o.add_int("beam-size", d.beam_size, "Hypotheses kept per sentence (1: greedy search).")
      .alias('b')
      .range(1, 1000);
  o.add_double("normalize", d.normalize,
               "Length normalisation α: finished translations are ranked by log p / length^α.")
      .range(0, 10);
  if (max_length_factor > 0)
    o.add_double("max-length-factor", kMaxLengthFactor,
                 "A translation has at most factor × source tokens + 5 tokens.")
        .range(0, max_length_factor);
}

SearchValues search_values(const ParsedOptions& p) {
  return {.beam_size = p.get<int64_t>("beam-size"),
          .normalize = p.get<double>("normalize"),
          .max_length_factor = p.declares("max-length-factor") ? p.get<double>("max-length-factor")
                                                               : kMaxLengthFactor};
}

void add_max_length_option(OptionSet& o, int64_t max) {
  o.add_int("max-length", kDecodeMaxLength,
            "Inputs with more subword tokens (on either side, for pairs) are not decoded: an "
            "empty output line and a warning.")
      .range(1, double(max));
}

void add_mini_batch_option(OptionSet& o) {
  o.add_int("mini-batch", 32, "Sentences (or pairs) decoded together.").range(1, 100000);
}

void add_model_option(OptionSet& o) {
  o.add_path("model", std::nullopt,
             "Model directory written by `qkv train` (its model.safetensors), or a model file "
             "(e.g. DIR/model.best.safetensors).")
      .alias('m')
      .required()
      .metavar("DIR");
}

}  // namespace qkv::cli

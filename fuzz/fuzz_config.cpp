// The YAML config file of src/cli: an OptionSet with one option of every kind parses
// `-c FILE` with the input bytes as FILE. What it accepts must round-trip:
// ParsedOptions::dump_yaml() written back and parsed gives the same values.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "qkv/cli/budget.h"
#include "qkv/cli/options.h"

namespace {

using namespace qkv;

cli::OptionSet make_options() {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  cli::OptionSet s;
  s.add_int("dim-emb", 512, "Size of the embedding vectors.").range(1, 65536);
  s.add_int("shift", 0, "A signed offset.");
  s.add_double("learn-rate", 3e-4, "Adam's step size.").range(0, kInf);
  s.add_double("label-smoothing", 0.1, "Smoothing.").range(0, 1);
  s.add_double("offset", std::nullopt, "Any finite number.");
  s.add_string("name", "run", "A name for the logs.");
  s.add_path("model", std::nullopt, "The model file.").alias('m');
  s.add_switch("resume", "Continue from the last checkpoint.");
  s.add_list("train-sets", {}, "Training corpora.");
  s.add_list("valid-metrics", {"cross-entropy", "bleu"}, "Validation metrics.");
  s.add_enum("type", {"transformer", "s2s", "rnn"}, "transformer", "The architecture.");
  s.add_validated("after", "0", cli::budget_validator(), "When to stop training.");
  return s;
}

// Every option's value as text, so two parses can be compared; "<none>" when unset.
std::vector<std::string> values(const cli::OptionSet& set, const cli::ParsedOptions& p) {
  std::vector<std::string> out;
  for (const cli::Option& o : set.options()) {
    if (o.name() == "config" || o.name() == "help") continue;
    if (!p.has(o.name())) {
      out.push_back("<none>");
      continue;
    }
    switch (o.type()) {
      case cli::OptionType::Int64:
        out.push_back(std::to_string(p.get<int64_t>(o.name())));
        break;
      case cli::OptionType::Double: {
        const double v = p.get<double>(o.name());
        if (!std::isfinite(v)) fuzz::invariant_failed("a non-finite double was accepted");
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.17g", v);
        out.push_back(buf);
        break;
      }
      case cli::OptionType::Switch:
        out.push_back(p.get<bool>(o.name()) ? "true" : "false");
        break;
      case cli::OptionType::StringList: {
        std::string joined = "[";
        for (const std::string& v : p.get_list(o.name()))
          joined += std::to_string(v.size()) + ":" + v;
        out.push_back(joined + "]");
        break;
      }
      default:
        out.push_back(p.get<std::string>(o.name()));
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const cli::OptionSet set = make_options();
  const std::string path = fuzz::write_scratch("config.yml", fuzz::as_text(data, size)).string();
  fuzz::expect_only_qkv_errors([&] {
    const cli::ParsedOptions first = set.parse(std::vector<std::string>{"-c", path});
    const std::string dumped = first.dump_yaml();
    const std::string again = fuzz::write_scratch("again.yml", dumped).string();
    cli::ParsedOptions second;
    try {
      second = set.parse(std::vector<std::string>{"-c", again});
    } catch (const qkv::Error& e) {
      std::fprintf(stderr, "dump_yaml wrote:\n%s\nwhich parses as: %s\n", dumped.c_str(), e.what());
      fuzz::invariant_failed("dump_yaml() output does not parse back");
    }
    if (values(set, first) != values(set, second)) {
      std::fprintf(stderr, "dump_yaml wrote:\n%s\n", dumped.c_str());
      fuzz::invariant_failed("dump_yaml() does not round-trip the values");
    }
  });
  return 0;
}

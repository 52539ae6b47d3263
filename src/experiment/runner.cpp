#include "qkv/experiment/runner.h"

#include <chrono>
#include <filesystem>

#include "qkv/experiment/resources.h"
#include "qkv/experiment/samples.h"
#include "qkv/train/checkpoint.h"

namespace qkv::experiment {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Training throughput from update time alone. The trainer calls on_update right after an
// update and before the validation or checkpoint that update may trigger, so the time
// between two calls is pure update time unless the earlier update triggered one of them;
// those intervals are left out (tokens and time alike).
struct UpdateTimer {
  Clock::time_point last = Clock::now();
  bool clean = true;
  double seconds = 0;
  int64_t tokens = 0;
};

std::vector<BucketResult> buckets_of(const std::vector<eval::LengthBucket>& by_length) {
  std::vector<BucketResult> out;
  for (const eval::LengthBucket& b : by_length) {
    BucketResult r{.label = b.label, .sentences = b.count};
    if (b.bleu) r.bleu = b.bleu->score;
    if (b.chrf) r.chrf = b.chrf->score;
    out.push_back(std::move(r));
  }
  return out;
}

// Trains; fills the training fields of `r`.
void train_variant(const VariantPlan& plan, const train::TrainingData& data, VariantResult& r,
                   std::ostream* log) {
  train::TrainerOptions options = plan.trainer;
  UpdateTimer timer;
  const bool validates = data.valid.has_value() && options.valid_freq > 0;
  const auto user_hook = options.on_update;
  options.on_update = [&, user_hook](const train::UpdateRecord& u) {
    if (timer.clean) {
      timer.seconds += seconds_since(timer.last);
      timer.tokens += u.src_tokens + u.tgt_tokens;
    }
    timer.clean = !(validates && u.update % options.valid_freq == 0) &&
                  !(options.save_freq > 0 && u.update % options.save_freq == 0);
    if (user_hook) user_hook(u);
    timer.last = Clock::now();
  };
  train::Trainer trainer(plan.config, data, options);
  r.parameters = trainer.model().parameters().numel();
  r.config = models::to_json(plan.config);
  if (log != nullptr)
    *log << plan.label << " training " << r.parameters << " parameters: " << r.config << "\n"
         << std::flush;
  timer.last = Clock::now();
  const train::TrainSummary s = trainer.run();
  r.updates = s.progress.update;
  r.epochs = int64_t(s.progress.position.epoch);
  r.stop_reason = std::string(train::to_string(s.reason));
  r.train_seconds = s.progress.wall_seconds;
  r.train_tokens = s.progress.tokens_seen;
  r.best_valid_loss = s.progress.best_valid_loss;
  r.train_tokens_per_second =
      timer.tokens > 0 && timer.seconds > 0
          ? double(timer.tokens) / timer.seconds
          : (r.train_seconds > 0 ? double(r.train_tokens) / r.train_seconds : 0.0);
}

}  // namespace

VariantOutcome run_variant(const VariantPlan& plan, const train::TrainingData& data,
                           const TestSet& test, const EvalSettings& settings, std::ostream* log) {
  const Clock::time_point start = Clock::now();
  VariantOutcome out;
  VariantResult& r = out.result;
  r.name = plan.variant.name;
  r.model_dir = plan.trainer.model_dir.string();
  r.peak_rss_per_variant = reset_peak_rss();
  train_variant(plan, data, r, log);

  // Evaluate what was saved, as a user would load it.
  const fs::path dir = plan.trainer.model_dir;
  const bool best = r.best_valid_loss.has_value() && fs::exists(dir / train::kBestModelFile);
  r.evaluated_file = best ? train::kBestModelFile : train::kModelFile;
  train::LoadedModel loaded = train::load_model(dir / r.evaluated_file);
  if (log != nullptr)
    *log << plan.label << " translating " << test.sources.size() << " test sentences with "
         << r.evaluated_file << " ("
         << (settings.search.beam_size == 1 ? std::string("greedy")
                                            : "beam " + std::to_string(settings.search.beam_size))
         << ")\n"
         << std::flush;
  TestTranslation translated =
      translate_sentences(*loaded.model, data.vocab, test.sources, settings.search);
  const TestScores scores = score_translations(test, translated.hypotheses);
  r.test_sentences = int64_t(test.sources.size());
  r.test_skipped = translated.skipped;
  r.bleu = scores.bleu.score;
  r.chrf = scores.chrf.score;
  r.bleu_line = scores.bleu.format(2, true);
  r.chrf_line = scores.chrf.format(2, true);
  r.by_length = buckets_of(scores.by_length);
  r.decode_seconds = translated.seconds;
  r.decode_sentences_per_second =
      translated.seconds > 0 ? double(test.sources.size()) / translated.seconds : 0.0;
  for (const size_t line : settings.sample_lines) {
    if (line >= test.sources.size()) continue;
    auto map = attention_sample(*loaded.model, data.vocab, test.sources[line], settings.search,
                                plan.variant.name + ", test sentence " + std::to_string(line + 1));
    if (!map) continue;
    out.samples.push_back(std::move(*map));
    out.sample_lines.push_back(line);
  }
  out.hypotheses = std::move(translated.hypotheses);
  r.peak_rss_bytes = peak_rss_bytes();
  r.wall_seconds = seconds_since(start);
  if (log != nullptr)
    *log << plan.label << " " << r.bleu_line << "\n"
         << plan.label << " " << r.chrf_line << "\n"
         << std::flush;
  return out;
}

}  // namespace qkv::experiment

#include "qkv/experiment/runner.h"

#include <chrono>
#include <filesystem>

#include "qkv/experiment/attention_entropy.h"
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
    if (b.bleu_ci) {
      r.bleu_low = b.bleu_ci->low;
      r.bleu_high = b.bleu_ci->high;
    }
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

namespace {

// Loads the model `r` describes from plan.trainer.model_dir and fills the test fields of
// `out` (and its samples). `start`: when this variant's work began (wall time).
void evaluate_into(const VariantPlan& plan, const data::Vocab& vocab, const TestSet& test,
                   const EvalSettings& settings, std::ostream* log, Clock::time_point start,
                   VariantOutcome& out) {
  VariantResult& r = out.result;
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
      translate_sentences(*loaded.model, vocab, test.sources, settings.search);
  const TestScores scores = score_translations(test, translated.hypotheses, settings.bootstrap);
  r.test_sentences = int64_t(test.sources.size());
  r.test_skipped = translated.skipped;
  r.bleu = scores.bleu.score;
  r.chrf = scores.chrf.score;
  r.bleu_line = scores.bleu.format(2, true);
  r.chrf_line = scores.chrf.format(2, true);
  if (scores.bleu_ci) {
    r.bleu_low = scores.bleu_ci->low;
    r.bleu_high = scores.bleu_ci->high;
  }
  r.by_length = buckets_of(scores.by_length);
  r.decode_seconds = translated.seconds;
  r.decode_sentences_per_second =
      translated.seconds > 0 ? double(test.sources.size()) / translated.seconds : 0.0;
  for (const size_t line : settings.sample_lines) {
    if (line >= test.sources.size()) continue;
    auto map = attention_sample(*loaded.model, vocab, test.sources[line], settings.search,
                                plan.variant.name + ", test sentence " + std::to_string(line + 1));
    if (!map) continue;
    out.samples.push_back(std::move(*map));
    out.sample_lines.push_back(line);
  }
  out.hypotheses = std::move(translated.hypotheses);
  if (settings.entropy) {
    if (log != nullptr && plan.variant.attends())
      *log << plan.label << " attention entropy on the test references\n" << std::flush;
    const std::optional<AttentionEntropy> h = attention_entropy(
        *loaded.model, vocab, test.sources, test.references, settings.search.mini_batch);
    if (h) {
      r.attention_entropy = h->mean;
      r.attention_entropy_uniform = h->uniform;
    }
  }
  r.peak_rss_bytes = peak_rss_bytes();
  r.wall_seconds += seconds_since(start);
  if (log != nullptr) {
    *log << plan.label << " " << r.bleu_line << "\n" << plan.label << " " << r.chrf_line << "\n";
    if (r.attention_entropy)
      *log << plan.label << " attention entropy " << *r.attention_entropy << " nats (uniform "
           << *r.attention_entropy_uniform << ")\n";
    *log << std::flush;
  }
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
  evaluate_into(plan, data.vocab, test, settings, log, start, out);
  return out;
}

VariantOutcome evaluate_variant(const VariantPlan& plan, VariantResult trained,
                                const data::Vocab& vocab, const TestSet& test,
                                const EvalSettings& settings, std::ostream* log) {
  const Clock::time_point start = Clock::now();
  VariantOutcome out;
  out.result = std::move(trained);
  VariantResult& r = out.result;
  r.name = plan.variant.name;
  r.model_dir = plan.trainer.model_dir.string();
  r.peak_rss_per_variant = reset_peak_rss();
  // Wall time: the earlier run's training plus this evaluation.
  r.wall_seconds = r.train_seconds;
  evaluate_into(plan, vocab, test, settings, log, start, out);
  return out;
}

}  // namespace qkv::experiment

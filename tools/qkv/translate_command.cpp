// qkv translate: stdin -> stdout, one translation per input line, always; beam search.
#include <chrono>
#include <iostream>

#include "command.h"
#include "decode_support.h"
#include "qkv/base/format.h"
#include "qkv/base/plural.h"
#include "qkv/cli/common_options.h"
#include "qkv/cli/options.h"
#include "qkv/cli/progress.h"
#include "qkv/decode/alignment.h"
#include "qkv/decode/translator.h"

namespace qkv::tool {
namespace {

namespace fs = std::filesystem;

cli::OptionSet translate_options() {
  cli::OptionSet o;
  cli::add_model_option(o);
  cli::add_search_options(o);
  o.add_double("coverage-penalty", 0,
               "Coverage penalty β (Wu et al. 2016): favours translations that attend to every "
               "source token. Needs a model with attention.")
      .range(0, 100);
  cli::add_max_length_option(o);
  o.add_int("n-best", std::nullopt,
            "Write the N best translations of each line, in Moses format: "
            "`id ||| translation ||| score` (id: the 0-based line index, as Moses counts; "
            "warnings name 1-based lines). The score ranks the list: log p / length^α "
            "(--normalize) plus the coverage penalty, so it is not `qkv score`'s raw sum.")
      .range(1, 1000)
      .metavar("N");
  cli::add_mini_batch_option(o);
  o.add_int("maxi-batch", 10,
            "Mini-batches read ahead and sorted by length, so batches hold similar lengths.")
      .range(1, 10000);
  cli::add_threads_option(o);
  cli::add_progress_option(o);
  o.add_enum("alignment", {"hard", "soft"}, std::nullopt,
             "Append ` ||| ` and word alignments from attention: hard = Pharaoh `s-t` pairs "
             "(0-based words), soft = per target word its source-word weights "
             "(comma-separated; rows separated by spaces).");
  o.add_int("alignment-layer", -1,
            "Transformer: the decoder layer whose cross-attention aligns (0-based; -1: last).")
      .range(-1, 1000);
  o.add_int("alignment-head", -1,
            "Transformer: the attention head that aligns (0-based; -1: the mean over heads).")
      .range(-1, 1000);
  return o;
}

// The search the flags ask for, checked against the model (decode::validate: FieldErrors
// that run_guarded names by their flags) before any input is read.
decode::BeamSearchOptions search_options(const cli::ParsedOptions& p,
                                         const models::ModelConfig& c) {
  decode::BeamSearchOptions o;
  const cli::SearchValues search = cli::search_values(p);
  o.beam_size = search.beam_size;
  o.normalize = search.normalize;
  o.max_length_factor = search.max_length_factor;
  o.coverage_penalty = p.get<double>("coverage-penalty");
  if (p.has("n-best")) o.n_best = p.get<int64_t>("n-best");
  QKV_CHECK(models::attends(c) || !p.has("alignment"), ConfigError, "--alignment ",
            p.get<std::string>("alignment"),
            ": the model is an rnn without attention, which aligns nothing");
  o.keep_attention = p.has("alignment");
  o.attention = {p.get<int64_t>("alignment-layer"), p.get<int64_t>("alignment-head")};
  decode::validate(o, c);
  return o;
}

struct Job {
  const cli::ParsedOptions& flags;
  const decode::Translator& translator;
  decode::TranslateOptions options;
  int64_t sentence_id = 0;  // 0-based id of the next input line (n-best)
  int64_t translated = 0, skipped = 0;
};

decode::TranslateOptions translate_options(const cli::ParsedOptions& p,
                                           const models::ModelConfig& c) {
  decode::TranslateOptions o;
  o.search = search_options(p, c);
  o.max_length = p.get<int64_t>("max-length");
  o.mini_batch = p.get<int64_t>("mini-batch");
  // Only an n-best list shows scores; beam 1 without them takes the greedy path.
  o.scores = p.has("n-best");
  o.memory_advice = "reduce --beam-size, --mini-batch, --max-length-factor or --max-length";
  return o;
}

// The ` ||| alignment` suffix of one hypothesis ("" without --alignment).
std::string alignment_suffix(const Job& job, const std::vector<int32_t>& source,
                             const decode::TranslatedHypothesis& h) {
  if (!job.flags.has("alignment")) return {};
  const auto words = decode::word_attention(job.translator.vocab(), source, h.tokens, h.attention);
  const bool hard = job.flags.get<std::string>("alignment") == "hard";
  return " ||| " + (hard ? decode::hard_alignment(words) : decode::soft_alignment(words));
}

// The output line(s) of one input line: its translation, or its n-best list.
std::string format_output(const Job& job, int64_t id, const decode::SentenceResult* result) {
  const bool nbest = job.flags.has("n-best");
  const bool aligned = job.flags.has("alignment");
  if (result == nullptr)  // a skipped line
    return nbest ? std::to_string(id) + " |||  ||| -inf" + (aligned ? " ||| " : "") : "";
  std::string out;
  for (size_t i = 0; i < (nbest ? result->hypotheses.size() : 1); ++i) {
    const decode::TranslatedHypothesis& h = result->hypotheses[i];
    if (i > 0) out += '\n';
    if (nbest)
      out += std::to_string(id) + " ||| " + h.text + " ||| " + format_fixed(h.score, 6);
    else
      out += h.text;
    out += alignment_suffix(job, result->source, h);
  }
  return out;
}

// Why a line gives an empty output: its reading problem, else the driver's reason.
std::optional<std::string> skip_message(const data::Line& line, const decode::SentenceResult& r) {
  if (auto problem = data::line_problem(line, kMaxLineBytes)) return problem;
  if (r.skipped == decode::SkipReason::TooLong)
    return std::to_string(r.token_count) + " subword tokens, more than the " +
           std::to_string(r.token_limit) + " this model translates (--max-length)";
  if (!r.ok()) return decode::describe(r.skipped, r.token_count, r.token_limit);
  return std::nullopt;
}

// Translates one chunk of input lines and writes their outputs in order.
void translate_chunk(Job& job, const std::vector<data::Line>& lines) {
  std::vector<std::string> texts;
  for (const data::Line& line : lines)  // an unreadable line is blank here: skipped
    texts.push_back(line.status == data::LineStatus::Ok ? line.text : std::string());
  const std::vector<decode::SentenceResult> results = job.translator.translate(texts, job.options);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (const auto problem = skip_message(lines[i], results[i])) {
      warn_line("translate", lines[i].number, *problem);
      ++job.skipped;
    }
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    const bool ok = results[i].ok();
    std::cout << format_output(job, job.sentence_id++, ok ? &results[i] : nullptr) << '\n';
    job.translated += ok ? 1 : 0;
  }
  std::cout.flush();
  QKV_CHECK(std::cout.good(), IoError, "writing the translations (stdout) failed");
}

int translate(const cli::ParsedOptions& p, std::span<const char* const> /*args*/) {
  cli::apply_threads_option(p);
  const decode::Translator tr = load_translator(p.get<fs::path>("model"));
  const models::ModelConfig& c = tr.model().config();
  Job job{p, tr, translate_options(p, c)};
  std::cerr << "loaded " << tr.file().string() << " (" << models::to_string(c.type) << ", update "
            << tr.info().update << "); beam size " << job.options.search.beam_size << "\n";
  const auto start = std::chrono::steady_clock::now();
  data::StreamLineReader reader(std::cin, kMaxLineBytes);
  const auto chunk = size_t(p.get<int64_t>("mini-batch") * p.get<int64_t>("maxi-batch"));
  std::vector<data::Line> lines;
  cli::Progress progress("qkv translate", "line", cli::progress_interval(p), cli::stdin_file_size(),
                         std::cerr);
  int64_t consumed = 0;  // input bytes, for the share done
  // A chunk is what is there: a slow writer (a pipe, a person) gets each line's
  // translation before it sends the next, instead of at the end of input.
  while (const size_t bytes = data::read_available(reader, lines, chunk, kMaxChunkBytes)) {
    translate_chunk(job, lines);
    consumed += int64_t(bytes);
    progress.update(job.sentence_id, consumed);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cerr << "translated " << count_of(job.translated, "line");
  if (job.skipped > 0)
    std::cerr << ", " << job.skipped << " skipped ("
              << (job.skipped == 1 ? "an empty output line" : "empty output lines") << ")";
  std::cerr << " in " << format_fixed(seconds, 2) << " s\n";
  return kExitOk;
}

}  // namespace

int translate_main(int argc, const char* const* argv) {
  return run_subcommand(
      {"translate", translate_options, translate,
       "Translates stdin to stdout with beam search, one line per input line, always: a "
       "line that cannot be translated (empty, invalid UTF-8, too long) gives an empty line "
       "and a warning on stderr."},
      argc, argv);
}

}  // namespace qkv::tool

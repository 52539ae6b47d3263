// qkv attend: each input sentence's translation and where the decoder looked at each step,
// as a terminal heatmap and optionally as SVG / PNG files.
#include <algorithm>
#include <cctype>
#include <iostream>

#include "command.h"
#include "decode_support.h"
#include "qkv/base/plural.h"
#include "qkv/cli/common_options.h"
#include "qkv/cli/options.h"
#include "qkv/cli/progress.h"
#include "qkv/decode/alignment.h"
#include "qkv/decode/attention_views.h"
#include "qkv/decode/translator.h"
#include "qkv/io/atomic_file.h"

namespace qkv::tool {
namespace {

namespace fs = std::filesystem;

// "last" / "all" / N for --layer, "avg" / "all" / N for --head: refused at parsing.
cli::Validator view_validator(std::string_view named) {
  return [named = std::string(named)](const std::string& value, const std::string& where) {
    QKV_CHECK(decode::is_view_spec(value, named), ConfigError, where, " ", value, ": must be ",
              named, ", all, or a 0-based index");
  };
}

cli::OptionSet attend_options() {
  cli::OptionSet o;
  cli::add_model_option(o);
  o.add_path("svg", std::nullopt,
             "Write one SVG heatmap per sentence into this directory (created; a name ending "
             "in .svg or .png is refused).")
      .metavar("DIR");
  o.add_path("png", std::nullopt,
             "Write one PNG heatmap per sentence into this directory (created; a name ending "
             "in .svg or .png is refused).")
      .metavar("DIR");
  o.add_switch("pieces",
               "Show the subword pieces the model reads and writes (▁ marks a word start) "
               "instead of words.");
  o.add_switch("merge-subwords",
               "Show words: source pieces of a word summed, target pieces averaged (the "
               "default; kept for scripts that pass it).");
  o.add_validated("layer", "last", view_validator("last"),
                  "Transformer: the decoder layer whose cross-attention is shown "
                  "(0-based, last, or all).");
  o.add_validated("head", "avg", view_validator("avg"),
                  "Transformer: the attention head shown (0-based, avg: their mean, or all).");
  // A heatmap is for reading: at most 1000 source tokens and 3 × that + 5 target tokens,
  // about 3·10^6 cells (an SVG of ~170 bytes a cell: 0.5 GB at the extremes, measured
  // 118 MB and 2.6 s for 591 × 1187 cells). The length limit is translate's, so attend
  // shows every line translate translates (the default 1000 used to be 100 here).
  cli::add_search_options(o, 3);
  cli::add_max_length_option(o, 1000);
  o.add_int("width", 100, "Terminal columns for the heatmap (0: unlimited).").range(0, 100000);
  o.add_switch("color", "Colour the terminal heatmap (ANSI 256 colours) instead of shading it.");
  cli::add_threads_option(o);
  cli::add_progress_option(o);
  return o;
}

std::vector<decode::AttentionView> views(const cli::ParsedOptions& p,
                                         const models::ModelConfig& c) {
  QKV_CHECK(models::attends(c), ConfigError, "--model ", p.get<fs::path>("model").string(),
            ": an rnn without attention has no attention to show");
  return decode::attention_views(p.get<std::string>("layer"), p.get<std::string>("head"), c);
}

// --svg/--png name directories (one file per line and head): a path that names a file
// (`--png out.png`) is refused, instead of becoming a directory called out.png.
void make_dir(const cli::ParsedOptions& p, const char* flag) {
  if (!p.has(flag)) return;
  const fs::path dir = p.get<fs::path>(flag);
  std::string ext = dir.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  std::error_code ec;
  QKV_CHECK(fs::is_directory(dir, ec) ||
                (ext != ".png" && ext != ".svg" && ext != ".jpg" && ext != ".jpeg"),
            ConfigError, "--", flag, " ", dir.string(),
            ": expects a directory, which gets one file per sentence (line-1.", flag, ", line-2.",
            flag, ", ...); give a directory name, e.g. --", flag, " ",
            (dir.parent_path() / dir.stem()).string());
  fs::create_directories(p.get<fs::path>(flag), ec);
  QKV_CHECK(!ec, IoError, "--", flag, " ", p.get<fs::path>(flag).string(),
            ": cannot create the directory: ", ec.message());
}

// The search attend runs: one sentence at a time, scores kept (the EOS step's row).
decode::TranslateOptions attend_search(const cli::ParsedOptions& p) {
  decode::TranslateOptions o;
  const cli::SearchValues s = cli::search_values(p);
  o.search = {
      .beam_size = s.beam_size, .normalize = s.normalize, .max_length_factor = s.max_length_factor};
  o.max_length = p.get<int64_t>("max-length");
  o.mini_batch = 1;
  o.memory_advice = "reduce --beam-size, --max-length-factor or --max-length";
  return o;
}

// Shows (and writes) the attention of a translated sentence for every selection.
void show_attention(const cli::ParsedOptions& p, const decode::Translator& tr,
                    const std::vector<decode::AttentionView>& shown, const data::Line& line,
                    const decode::SentenceResult& r) {
  const decode::TranslatedHypothesis& h = r.hypotheses[0];
  std::cout << h.text << "\n";
  for (const decode::AttentionView& s : shown) {
    std::vector<float> rows = tr.attention(r, h, s.which);
    rows.resize(h.token_log_probs.size() * r.source.size());  // a cut hypothesis has no EOS step
    viz::AttentionMap map =
        decode::token_attention(tr.vocab(), r.source, h.tokens, rows, !p.get<bool>("pieces"));
    map.title = "line " + std::to_string(line.number) + (s.title.empty() ? "" : ": " + s.title);
    std::cout << viz::render_terminal(map, {.max_width = int(p.get<int64_t>("width")),
                                            .color = p.get<bool>("color")})
              << "\n";
    const std::string stem = "line-" + std::to_string(line.number) + s.suffix;
    if (p.has("svg")) {
      const std::string svg = viz::render_svg(map);
      io::write_file_atomically(p.get<fs::path>("svg") / (stem + ".svg"),
                                std::as_bytes(std::span(svg.data(), svg.size())));
    }
    if (!p.has("png")) continue;
    // A long sentence pair can exceed what a PNG holds (viz/heatmap.h: 32768 px a side,
    // 2^26 pixels): that line gets no PNG and a warning; the other lines still get theirs.
    try {
      viz::write_png(p.get<fs::path>("png") / (stem + ".png"), map);
    } catch (const ResourceError& e) {
      warn_line("attend", line.number, e.what(), "no PNG written");
    }
  }
}

// Why a line is skipped, as the warning says it (nullopt: it was translated).
std::optional<std::string> skip_message(const cli::ParsedOptions& p, const models::ModelConfig& c,
                                        const data::Line& line, const decode::SentenceResult& r) {
  if (auto problem = data::line_problem(line, kMaxLineBytes)) return problem;
  if (r.skipped != decode::SkipReason::TooLong)
    return r.ok() ? std::nullopt
                  : std::optional(decode::describe(r.skipped, r.token_count, r.token_limit));
  return std::to_string(r.token_count) + " subword tokens, more than the " +
         std::to_string(r.token_limit) + " attend shows (--max-length" +
         (r.token_limit < p.get<int64_t>("max-length")
              ? ", capped by the model's max_positions " + std::to_string(c.max_positions)
              : std::string()) +
         ")";
}

int attend(const cli::ParsedOptions& p, std::span<const char* const> /*args*/) {
  cli::apply_threads_option(p);
  QKV_CHECK(!(p.get<bool>("pieces") && p.get<bool>("merge-subwords")), ConfigError,
            "--pieces and --merge-subwords ask for opposite things: give one (words are the "
            "default)");
  const decode::Translator tr = load_translator(p.get<fs::path>("model"));
  const models::ModelConfig& c = tr.model().config();
  const std::vector<decode::AttentionView> shown = views(p, c);
  make_dir(p, "svg");
  make_dir(p, "png");
  const decode::TranslateOptions search = attend_search(p);
  data::StreamLineReader reader(std::cin, kMaxLineBytes);
  data::Line line;
  int64_t shown_lines = 0, consumed = 0;
  cli::Progress progress("qkv attend", "line", cli::progress_interval(p), cli::stdin_file_size(),
                         std::cerr);
  while (reader.next(line)) {
    consumed += int64_t(line.text.size()) + 1;
    progress.update(line.number - 1, consumed);
    const std::vector<std::string> text = {line.status == data::LineStatus::Ok ? line.text : ""};
    const decode::SentenceResult r = tr.translate(text, search)[0];
    if (const auto problem = skip_message(p, c, line, r)) {
      warn_line("attend", line.number, *problem, "skipped");
      std::cout << "\n" << std::flush;
      continue;
    }
    show_attention(p, tr, shown, line, r);
    ++shown_lines;
    // Each sentence's heatmap as soon as it is drawn (a pipe's stdout is block-buffered).
    std::cout.flush();
    QKV_CHECK(std::cout.good(), IoError, "writing to stdout failed");
  }
  std::cout.flush();
  QKV_CHECK(std::cout.good(), IoError, "writing to stdout failed");
  std::cerr << "showed the attention of " << count_of(shown_lines, "sentence");
  if (p.has("svg")) std::cerr << "; SVG files in " << p.get<fs::path>("svg").string();
  if (p.has("png")) std::cerr << "; PNG files in " << p.get<fs::path>("png").string();
  std::cerr << "\n";
  return kExitOk;
}

}  // namespace

int attend_main(int argc, const char* const* argv) {
  return run_subcommand(
      {"attend", attend_options, attend,
       "Translates each stdin line and shows where the decoder looked at each step: a "
       "heatmap in the terminal (target tokens down, source tokens across), and SVG/PNG "
       "files with --svg/--png (per layer and head with --layer all / --head all)."},
      argc, argv);
}

}  // namespace qkv::tool

// The comparison's tables, chart and report, and the files they are written to.
#include "qkv/experiment/results.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "csv_field.h"
#include "qkv/base/error.h"
#include "qkv/base/format.h"
#include "qkv/experiment/finding.h"
#include "qkv/io/atomic_file.h"

namespace qkv::experiment {
namespace {

using detail::csv_field;

namespace fs = std::filesystem;

// "-" for a value that was not measured (NaN), as the table's other empty cells.
std::string fixed(double v, int decimals) {
  return std::isfinite(v) ? format_fixed(v, decimals) : "-";
}

// Shortest text that reads back to the same double (CSV keeps full precision).
std::string exact(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return {buf, r.ptr};
}

std::string human_count(int64_t n) {
  if (n >= 1'000'000) return fixed(double(n) / 1e6, 2) + "M";
  if (n >= 10'000) return fixed(double(n) / 1e3, 1) + "k";
  return std::to_string(n);
}

std::string human_bytes(int64_t bytes) {
  if (bytes <= 0) return "-";
  const double mib = double(bytes) / (1024.0 * 1024.0);
  return mib >= 10240 ? fixed(mib / 1024.0, 1) + " GiB" : fixed(mib, 0) + " MiB";
}

std::string human_duration(double seconds) {
  const auto total = int64_t(std::llround(std::max(0.0, seconds)));
  const int64_t h = total / 3600, m = total % 3600 / 60, s = total % 60;
  std::string out;
  if (h > 0) out += std::to_string(h) + "h";
  if (h > 0 || m > 0) out += (h > 0 && m < 10 ? "0" : "") + std::to_string(m) + "m";
  out += (total >= 60 && s < 10 ? "0" : "") + std::to_string(s) + "s";
  return out;
}

std::string optional_exact(const std::optional<double>& v) {
  return v ? exact(*v) : "";
}

// The buckets of the first variant that hold test sentences (every variant is scored on
// the same test set, so they share them).
std::vector<size_t> filled_buckets(const Comparison& c) {
  std::vector<size_t> out;
  if (c.variants.empty()) return out;
  const std::vector<BucketResult>& b = c.variants.front().by_length;
  for (size_t i = 0; i < b.size(); ++i)
    if (b[i].sentences > 0) out.push_back(i);
  return out;
}

std::optional<double> bucket_bleu(const VariantResult& v, size_t i) {
  return i < v.by_length.size() ? v.by_length[i].bleu : std::nullopt;
}

bool looks_numeric(const std::string& s) {
  return !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) ||
                        (s.size() > 1 && (s[0] == '-' || s[0] == '+') &&
                         std::isdigit(static_cast<unsigned char>(s[1]))));
}

// Display width in code points (the labels here are ASCII or Latin text).
size_t width(const std::string& s) {
  size_t n = 0;
  for (const char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  return n;
}

void write_text(const fs::path& path, const std::string& text) {
  io::write_file_atomically(path, std::as_bytes(std::span(text.data(), text.size())));
}

std::string read_text(const fs::path& path) {
  const std::vector<std::byte> b = io::read_file(path, uint64_t{1} << 30);
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

}  // namespace

std::string to_csv(const Comparison& c) {
  std::vector<std::string> labels;
  if (!c.variants.empty())
    for (const BucketResult& b : c.variants.front().by_length) labels.push_back(b.label);
  std::string out =
      "variant,model_dir,parameters,updates,epochs,stop_reason,train_seconds,train_tokens,"
      "train_tokens_per_second,best_valid_loss,test_sentences,test_skipped,bleu,chrf,bleu_low,"
      "bleu_high";
  for (const std::string& l : labels)
    out += ",sentences " + csv_field(l) + ",bleu " + csv_field(l) + ",chrf " + csv_field(l) +
           ",bleu_low " + csv_field(l) + ",bleu_high " + csv_field(l);
  out +=
      ",attention_entropy,attention_entropy_uniform,decode_seconds,decode_sentences_per_second,"
      "peak_rss_bytes,wall_seconds\n";
  for (const VariantResult& v : c.variants) {
    out += csv_field(v.name) + "," + csv_field(v.model_dir) + "," + std::to_string(v.parameters) +
           "," + std::to_string(v.updates) + "," + std::to_string(v.epochs) + "," +
           csv_field(v.stop_reason) + "," + exact(v.train_seconds) + "," +
           std::to_string(v.train_tokens) + "," + exact(v.train_tokens_per_second) + "," +
           optional_exact(v.best_valid_loss) + "," + std::to_string(v.test_sentences) + "," +
           std::to_string(v.test_skipped) + "," + exact(v.bleu) + "," + exact(v.chrf) + "," +
           optional_exact(v.bleu_low) + "," + optional_exact(v.bleu_high);
    for (size_t i = 0; i < labels.size(); ++i) {
      const bool has = i < v.by_length.size();
      out += "," + (has ? std::to_string(v.by_length[i].sentences) : std::string()) + "," +
             (has ? optional_exact(v.by_length[i].bleu) : "") + "," +
             (has ? optional_exact(v.by_length[i].chrf) : "") + "," +
             (has ? optional_exact(v.by_length[i].bleu_low) : "") + "," +
             (has ? optional_exact(v.by_length[i].bleu_high) : "");
    }
    out += "," + optional_exact(v.attention_entropy) + "," +
           optional_exact(v.attention_entropy_uniform) + "," + exact(v.decode_seconds) + "," +
           exact(v.decode_sentences_per_second) + "," + std::to_string(v.peak_rss_bytes) + "," +
           exact(v.wall_seconds) + "\n";
  }
  return out;
}

viz::ReportTable summary_table(const Comparison& c) {
  viz::ReportTable t;
  // Interval and entropy columns only when some variant has them (older files, runs
  // without --bootstrap, a comparison of rnn:none alone).
  const bool with_ci = std::any_of(c.variants.begin(), c.variants.end(),
                                   [](const VariantResult& v) { return v.bleu_low.has_value(); });
  const bool with_entropy =
      std::any_of(c.variants.begin(), c.variants.end(),
                  [](const VariantResult& v) { return v.attention_entropy.has_value(); });
  t.columns = {"variant", "BLEU"};
  if (with_ci) t.columns.emplace_back("BLEU 95% CI");
  t.columns.emplace_back("chrF2");
  const std::vector<size_t> buckets = filled_buckets(c);
  for (const size_t i : buckets) {
    const BucketResult& b = c.variants.front().by_length[i];
    t.columns.push_back("BLEU " + b.label + " (n=" + std::to_string(b.sentences) + ")");
  }
  if (with_entropy) t.columns.emplace_back("attn entropy (uniform)");
  for (const char* col : {"updates", "train tok/s", "decode sent/s", "params", "peak RSS", "wall"})
    t.columns.emplace_back(col);
  for (const VariantResult& v : c.variants) {
    std::vector<std::string> row = {v.name, fixed(v.bleu, 2)};
    if (with_ci)
      row.push_back(v.bleu_low && v.bleu_high ? fixed(*v.bleu_low, 2) + "-" + fixed(*v.bleu_high, 2)
                                              : "-");
    row.push_back(fixed(v.chrf, 2));
    for (const size_t i : buckets) {
      const std::optional<double> b = bucket_bleu(v, i);
      row.push_back(b ? fixed(*b, 2) : "-");
    }
    if (with_entropy)
      row.push_back(v.attention_entropy && v.attention_entropy_uniform
                        ? fixed(*v.attention_entropy, 2) + " (" +
                              fixed(*v.attention_entropy_uniform, 2) + ")"
                        : "-");
    row.push_back(std::to_string(v.updates));
    row.push_back(fixed(v.train_tokens_per_second, 0));
    row.push_back(fixed(v.decode_sentences_per_second, 1));
    row.push_back(human_count(v.parameters));
    row.push_back(human_bytes(v.peak_rss_bytes));
    row.push_back(human_duration(v.wall_seconds));
    t.rows.push_back(std::move(row));
  }
  return t;
}

std::string format_table(const viz::ReportTable& t) {
  std::vector<size_t> w(t.columns.size(), 0);
  for (size_t i = 0; i < t.columns.size(); ++i) w[i] = width(t.columns[i]);
  for (const auto& row : t.rows)
    for (size_t i = 0; i < row.size() && i < w.size(); ++i) w[i] = std::max(w[i], width(row[i]));
  const auto line = [&](const std::vector<std::string>& cells, bool header) {
    std::string out;
    for (size_t i = 0; i < cells.size() && i < w.size(); ++i) {
      const std::string pad(w[i] - width(cells[i]), ' ');
      // Every column but the variant's holds numbers: right-aligned, headers too.
      const bool right = i > 0 && (header || looks_numeric(cells[i]));
      out += (i ? "  " : "") + (right ? pad + cells[i] : cells[i] + pad);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(t.columns, true);
  size_t total = 0;
  for (const size_t x : w) total += x;
  out += std::string(total + 2 * (w.empty() ? 0 : w.size() - 1), '-') + "\n";
  for (const auto& row : t.rows) out += line(row, false);
  return out;
}

viz::BucketChart bleu_chart(const Comparison& c) {
  QKV_CHECK(!c.variants.empty(), ValueError, "BLEU chart: the comparison has no variants");
  viz::BucketChart chart;
  chart.title = "BLEU by source length (test set)";
  bool whiskers = false;
  const std::vector<size_t> buckets = filled_buckets(c);
  QKV_CHECK(!buckets.empty(), ValueError, "BLEU chart: no length bucket holds a test sentence");
  for (const size_t i : buckets) {
    chart.buckets.push_back(c.variants.front().by_length[i].label);
    chart.counts.push_back(c.variants.front().by_length[i].sentences);
  }
  for (const VariantResult& v : c.variants) {
    QKV_CHECK(v.by_length.size() == c.variants.front().by_length.size(), ValueError,
              "BLEU chart: ", v.name, " has ", v.by_length.size(), " length buckets, ",
              c.variants.front().name, " has ", c.variants.front().by_length.size());
    viz::ChartSeries s{.name = v.name};
    bool any_ci = false;
    for (const size_t i : buckets) {
      s.values.push_back(bucket_bleu(v, i));
      const BucketResult& b = v.by_length[i];
      if (b.bleu && b.bleu_low && b.bleu_high) {
        s.ci.push_back(viz::Interval{.low = *b.bleu_low, .high = *b.bleu_high});
        any_ci = true;
      } else {
        s.ci.push_back(std::nullopt);
      }
    }
    if (!any_ci) s.ci.clear();
    whiskers = whiskers || any_ci;
    chart.series.push_back(std::move(s));
  }
  if (whiskers) chart.title += "; whiskers: 95% bootstrap interval";
  return chart;
}

viz::Report make_report(const Comparison& c, std::vector<viz::AttentionMap> samples) {
  viz::Report r;
  r.title = c.title;
  r.finding = finding(c);
  r.notes = c.notes;
  r.table = summary_table(c);
  if (!c.variants.empty() && !filled_buckets(c).empty()) r.chart = bleu_chart(c);
  r.samples = std::move(samples);
  return r;
}

void write_results(const fs::path& dir, const Comparison& c,
                   const std::vector<viz::AttentionMap>& samples) {
  write_text(dir / kCompareJson, to_json(c));
  write_text(dir / kCompareCsv, to_csv(c));
  write_text(dir / kSamplesJson, samples_to_json(samples));
  if (!c.variants.empty() && !filled_buckets(c).empty())
    write_text(dir / kChartSvg, viz::render_chart(bleu_chart(c)));
}

void write_report(const fs::path& dir, const fs::path& output) {
  std::error_code ec;
  const fs::path json = dir / kCompareJson;
  QKV_CHECK(fs::exists(json, ec), IoError, "--compare ", dir.string(), ": no ", kCompareJson,
            " there; run `qkv compare --out ", dir.string(), "` first");
  const Comparison c = comparison_from_json(read_text(json), json.string());
  std::vector<viz::AttentionMap> samples;
  const fs::path sample_file = dir / kSamplesJson;
  if (fs::exists(sample_file, ec))
    samples = samples_from_json(read_text(sample_file), sample_file.string());
  write_text(output, viz::render_report(make_report(c, std::move(samples))));
}

}  // namespace qkv::experiment

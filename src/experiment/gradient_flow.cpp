// Gradient norms by source position: one tapped forward, one backward, the taps' grads.
#include "qkv/experiment/gradient_flow.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "csv_field.h"
#include "qkv/autograd/functions.h"
#include "qkv/base/error.h"
#include "qkv/base/format.h"

namespace qkv::experiment {
namespace {

using autograd::Variable;
using detail::csv_field;

// Evaluation mode for the measurement, the caller's mode afterwards (also on error).
class EvalMode {
 public:
  explicit EvalMode(models::Seq2Seq& model) : model_(model), was_training_(model.training()) {
    model_.set_training(false);
  }
  ~EvalMode() { model_.set_training(was_training_); }
  EvalMode(const EvalMode&) = delete;
  EvalMode& operator=(const EvalMode&) = delete;

 private:
  models::Seq2Seq& model_;
  bool was_training_;
};

// Σ_b mean_t CE(logits[b, t], tgt_out[b, t]) over b's real target positions: each
// sentence's own loss, so its gradient is the one it would get alone.
Variable sentence_losses(const Variable& logits, const Tensor& tgt_out, int64_t pad_id) {
  const int64_t batch = tgt_out.dim(0), width = tgt_out.dim(1);
  ops::CrossEntropyOptions options;
  options.ignore_index = pad_id;
  Variable total;
  for (int64_t b = 0; b < batch; ++b) {
    const Tensor targets = tgt_out.slice(0, b, b + 1).contiguous().reshape({width});
    const Variable loss = autograd::cross_entropy(autograd::select(logits, 0, b), targets, options);
    total = total.defined() ? autograd::add(total, loss) : loss;
  }
  return total;
}

// g [B, Ts, D] as float64 (zeros when the loss did not reach the Variable).
Tensor grad_f64(const Variable& v) {
  if (!v.grad().defined()) return Tensor::zeros(v.value().shape(), DType::F64);
  return v.grad().to(DType::F64).contiguous();
}

// Adds the rnn bridge's gradient to the output site: final state 0 is the forward half
// of h at each row's last token, final state 1 the backward half at its first token.
void add_bridge_grads(Tensor& g, const models::EncoderTaps& taps,
                      std::span<const int64_t> lengths) {
  if (taps.final_states.size() < 2) return;
  const int64_t ts = g.dim(1), d = g.dim(2), h = d / 2;
  double* out = g.data<double>();
  for (int half = 0; half < 2; ++half) {
    const Tensor f = grad_f64(taps.final_states[size_t(half)]);  // [B, H]
    QKV_CHECK(f.dim(1) == h, InternalError, "gradient flow: final state ", describe(f),
              " is not half of the memory's ", d, " features");
    const double* in = f.data<double>();
    for (size_t b = 0; b < lengths.size(); ++b) {
      const int64_t j = half == 0 ? lengths[b] - 1 : 0;
      double* row = out + (int64_t(b) * ts + j) * d + half * h;
      for (int64_t k = 0; k < h; ++k) row[k] += in[int64_t(b) * h + k];
    }
  }
}

std::string number(double v) {
  return format_significant(v, 9);
}

}  // namespace

std::string_view to_string(GradientSite site) noexcept {
  return site == GradientSite::EncoderInput ? "input" : "output";
}

GradientSite parse_gradient_site(std::string_view text, std::string_view flag) {
  if (text == "input") return GradientSite::EncoderInput;
  if (text == "output") return GradientSite::EncoderOutput;
  QKV_THROW(ConfigError, flag, ": '", text, "' is not a gradient site; use input or output");
}

std::vector<std::vector<double>> source_gradient_norms(models::Seq2Seq& model,
                                                       const data::Batch& batch,
                                                       GradientSite site) {
  QKV_CHECK(batch.tgt_in.defined() && batch.tgt_out.defined(), ValueError,
            "gradient flow: the batch has no target sentences (the loss needs them)");
  const DType dtype = model.parameters().dtype();
  const Tensor src = batch.src.dtype() == dtype ? batch.src : batch.src.to(dtype);
  const Tensor tgt_in = batch.tgt_in.dtype() == dtype ? batch.tgt_in : batch.tgt_in.to(dtype);
  const Tensor tgt_out = batch.tgt_out.dtype() == dtype ? batch.tgt_out : batch.tgt_out.to(dtype);
  const EvalMode eval(model);
  models::EncoderTaps taps;
  try {
    const Variable logits =
        model.forward_train_tapped(src, batch.src_lengths, tgt_in, batch.tgt_lengths, taps);
    autograd::backward(sentence_losses(logits, tgt_out, model.config().pad_id));
  } catch (...) {
    autograd::clear_tape();  // a failed forward leaves entries behind; backward clears its own
    model.parameters().zero_grad();
    throw;
  }
  model.parameters().zero_grad();

  Tensor g;
  if (site == GradientSite::EncoderInput) {
    g = grad_f64(taps.input);
  } else {
    g = grad_f64(taps.memory).clone();  // clone: the bridge's share is added in place
    add_bridge_grads(g, taps, batch.src_lengths);
  }
  const int64_t ts = g.dim(1), d = g.dim(2);
  const double* p = g.data<double>();
  std::vector<std::vector<double>> norms(batch.src_lengths.size());
  for (size_t b = 0; b < norms.size(); ++b) {
    for (int64_t j = 0; j < batch.src_lengths[b]; ++j) {
      const double* row = p + (int64_t(b) * ts + j) * d;
      double sq = 0;
      for (int64_t k = 0; k < d; ++k) sq += row[k] * row[k];
      norms[b].push_back(std::sqrt(sq));
    }
  }
  return norms;
}

std::vector<std::vector<double>> gradient_norms(models::Seq2Seq& model,
                                                const data::TokenizedCorpus& pairs,
                                                GradientSite site, int64_t mini_batch) {
  QKV_CHECK(pairs.target.size() == pairs.source.size(), ValueError,
            "gradient flow: ", pairs.source.size(), " source sentences but ", pairs.target.size(),
            " targets (the loss needs a translation of each)");
  QKV_CHECK(mini_batch >= 1, ValueError, "gradient flow: mini-batch ", mini_batch, " < 1");
  const models::ModelConfig& c = model.config();
  data::BatchOptions options;
  options.pad_id = int32_t(c.pad_id);
  options.bos_id = int32_t(c.bos_id);
  options.eos_id = int32_t(c.eos_id);
  std::vector<std::vector<double>> out;
  out.reserve(pairs.source.size());
  for (size_t begin = 0; begin < pairs.source.size(); begin += size_t(mini_batch)) {
    const size_t end = std::min(pairs.source.size(), begin + size_t(mini_batch));
    std::vector<int64_t> indices(end - begin);
    std::iota(indices.begin(), indices.end(), int64_t(begin));
    for (std::vector<double>& row :
         source_gradient_norms(model, data::make_batch(pairs, indices, options), site))
      out.push_back(std::move(row));
  }
  return out;
}

PositionProfile profile_by_position(std::span<const std::vector<double>> norms) {
  size_t longest = 0;
  for (const std::vector<double>& row : norms) longest = std::max(longest, row.size());
  std::vector<double> sum(longest, 0.0);
  PositionProfile p;
  p.sentences.assign(longest, 0);
  for (size_t s = 0; s < norms.size(); ++s) {
    for (size_t j = 0; j < norms[s].size(); ++j) {
      const double v = norms[s][j];
      QKV_CHECK(std::isfinite(v) && v >= 0, ValueError, "gradient flow: sentence ", s, " position ",
                j + 1, " has gradient norm ", v, " (not a finite value >= 0)");
      sum[j] += v;
      ++p.sentences[j];
    }
  }
  p.mean_norm.resize(longest);
  for (size_t j = 0; j < longest; ++j) p.mean_norm[j] = sum[j] / double(p.sentences[j]);
  return p;
}

std::string gradient_csv(std::span<const GradientSeries> series) {
  std::string out = "model,position,sentences,mean_grad_norm\n";
  for (const GradientSeries& s : series)
    for (size_t j = 0; j < s.profile.mean_norm.size(); ++j)
      out += csv_field(s.name) + "," + std::to_string(j + 1) + "," +
             std::to_string(s.profile.sentences[j]) + "," + number(s.profile.mean_norm[j]) + "\n";
  return out;
}

viz::BucketChart gradient_chart(std::span<const GradientSeries> series, std::string title,
                                int64_t max_buckets) {
  QKV_CHECK(!series.empty(), ValueError, "gradient chart: no series");
  QKV_CHECK(max_buckets >= 1, ValueError, "gradient chart: max_buckets ", max_buckets, " < 1");
  size_t positions = 1;
  bool same_counts = true;
  for (const GradientSeries& s : series) {
    positions = std::max(positions, s.profile.mean_norm.size());
    same_counts = same_counts && s.profile.sentences == series[0].profile.sentences;
  }
  const size_t width = (positions + size_t(max_buckets) - 1) / size_t(max_buckets);
  viz::BucketChart chart;
  chart.title = std::move(title);
  chart.x_label = "source position (subword tokens, EOS last)";
  chart.y_label = "mean gradient norm";
  chart.kind = viz::ChartKind::Line;
  for (size_t first = 0; first < positions; first += width) {
    const size_t last = std::min(positions, first + width);  // exclusive
    chart.buckets.push_back(last - first == 1
                                ? std::to_string(first + 1)
                                : std::to_string(first + 1) + "-" + std::to_string(last));
    if (same_counts)
      chart.counts.push_back(
          first < series[0].profile.sentences.size() ? series[0].profile.sentences[first] : 0);
  }
  for (const GradientSeries& s : series) {
    viz::ChartSeries line;
    line.name = s.name;
    for (size_t first = 0; first < positions; first += width) {
      double sum = 0;
      int64_t n = 0;
      for (size_t j = first; j < std::min(positions, first + width); ++j) {
        if (j >= s.profile.mean_norm.size()) break;
        sum += s.profile.mean_norm[j] * double(s.profile.sentences[j]);
        n += s.profile.sentences[j];
      }
      line.values.push_back(n > 0 ? std::optional<double>(sum / double(n)) : std::nullopt);
    }
    chart.series.push_back(std::move(line));
  }
  // Room for each bucket's labels ("61-63", "n=100"): about 48 px.
  chart.width = std::max(chart.width, 160 + 48 * int(chart.buckets.size()));
  return chart;
}

}  // namespace qkv::experiment

// compare.json and samples.json: written by `qkv compare`, read back by `qkv report`.
// Reading is strict (a missing key or a wrong type is an IoError naming the file and the
// key), since a half-read file would make a report that silently shows wrong numbers.
#include <nlohmann/json.hpp>

#include "qkv/base/error.h"
#include "qkv/experiment/results.h"

namespace qkv::experiment {
namespace {

using Json = nlohmann::json;

Json optional_number(const std::optional<double>& v) {
  return v ? Json(*v) : Json(nullptr);
}

Json bucket_json(const BucketResult& b) {
  return {{"label", b.label},
          {"sentences", b.sentences},
          {"bleu", optional_number(b.bleu)},
          {"chrf", optional_number(b.chrf)},
          {"bleu_low", optional_number(b.bleu_low)},
          {"bleu_high", optional_number(b.bleu_high)}};
}

Json variant_json(const VariantResult& v) {
  Json buckets = Json::array();
  for (const BucketResult& b : v.by_length) buckets.push_back(bucket_json(b));
  return {{"name", v.name},
          {"model_dir", v.model_dir},
          {"evaluated_file", v.evaluated_file},
          {"config", Json::parse(v.config.empty() ? "{}" : v.config)},
          {"parameters", v.parameters},
          {"updates", v.updates},
          {"epochs", v.epochs},
          {"stop_reason", v.stop_reason},
          {"train_seconds", v.train_seconds},
          {"train_tokens", v.train_tokens},
          {"train_tokens_per_second", v.train_tokens_per_second},
          {"best_valid_loss", optional_number(v.best_valid_loss)},
          {"test_sentences", v.test_sentences},
          {"test_skipped", v.test_skipped},
          {"bleu", v.bleu},
          {"chrf", v.chrf},
          {"bleu_line", v.bleu_line},
          {"chrf_line", v.chrf_line},
          {"bleu_low", optional_number(v.bleu_low)},
          {"bleu_high", optional_number(v.bleu_high)},
          {"attention_entropy", optional_number(v.attention_entropy)},
          {"attention_entropy_uniform", optional_number(v.attention_entropy_uniform)},
          {"by_length", buckets},
          {"decode_seconds", v.decode_seconds},
          {"decode_sentences_per_second", v.decode_sentences_per_second},
          {"peak_rss_bytes", v.peak_rss_bytes},
          {"peak_rss_per_variant", v.peak_rss_per_variant},
          {"wall_seconds", v.wall_seconds}};
}

// Strict access: `where` is the key path for messages ("variants[1].bleu").
class Reader {
 public:
  explicit Reader(std::string_view origin) : origin_(origin) {}

  const Json& at(const Json& obj, const std::string& key, const std::string& where) const {
    QKV_CHECK(obj.is_object(), IoError, origin_, ": ", where, " is not a JSON object");
    const auto it = obj.find(key);
    QKV_CHECK(it != obj.end(), IoError, origin_, ": key '", path(where, key),
              "' is missing; was the file written by `qkv compare`?");
    return *it;
  }
  std::string string(const Json& obj, const std::string& key, const std::string& where) const {
    const Json& v = at(obj, key, where);
    QKV_CHECK(v.is_string(), IoError, origin_, ": key '", path(where, key), "' must be a string");
    return v.get<std::string>();
  }
  double number(const Json& obj, const std::string& key, const std::string& where) const {
    const Json& v = at(obj, key, where);
    QKV_CHECK(v.is_number(), IoError, origin_, ": key '", path(where, key), "' must be a number");
    return v.get<double>();
  }
  int64_t integer(const Json& obj, const std::string& key, const std::string& where) const {
    const Json& v = at(obj, key, where);
    QKV_CHECK(v.is_number_integer(), IoError, origin_, ": key '", path(where, key),
              "' must be an integer");
    return v.get<int64_t>();
  }
  bool boolean(const Json& obj, const std::string& key, const std::string& where) const {
    const Json& v = at(obj, key, where);
    QKV_CHECK(v.is_boolean(), IoError, origin_, ": key '", path(where, key),
              "' must be true or false");
    return v.get<bool>();
  }
  std::optional<double> maybe_number(const Json& obj, const std::string& key,
                                     const std::string& where) const {
    const Json& v = at(obj, key, where);
    if (v.is_null()) return std::nullopt;
    QKV_CHECK(v.is_number(), IoError, origin_, ": key '", path(where, key),
              "' must be a number or null");
    return v.get<double>();
  }
  // A key added after the first release (intervals, entropy): absent or null -> unset,
  // so comparisons written by an earlier qkv still read.
  std::optional<double> later_number(const Json& obj, const std::string& key,
                                     const std::string& where) const {
    QKV_CHECK(obj.is_object(), IoError, origin_, ": ", where, " is not a JSON object");
    if (!obj.contains(key)) return std::nullopt;
    return maybe_number(obj, key, where);
  }
  const Json& array(const Json& obj, const std::string& key, const std::string& where) const {
    const Json& v = at(obj, key, where);
    QKV_CHECK(v.is_array(), IoError, origin_, ": key '", path(where, key), "' must be a list");
    return v;
  }
  std::vector<std::string> strings(const Json& obj, const std::string& key,
                                   const std::string& where) const {
    std::vector<std::string> out;
    const Json& list = array(obj, key, where);
    for (size_t i = 0; i < list.size(); ++i) {
      QKV_CHECK(list[i].is_string(), IoError, origin_, ": key '", path(where, key), "[", i,
                "]' must be a string");
      out.push_back(list[i].get<std::string>());
    }
    return out;
  }
  static std::string path(const std::string& where, const std::string& key) {
    return where.empty() ? key : where + "." + key;
  }
  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
};

Json parse(std::string_view text, std::string_view origin) {
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    QKV_THROW(IoError, origin, ": not valid JSON (", e.what(), ")");
  }
}

VariantResult read_variant(const Reader& r, const Json& j, const std::string& where) {
  VariantResult v;
  v.name = r.string(j, "name", where);
  v.model_dir = r.string(j, "model_dir", where);
  v.evaluated_file = r.string(j, "evaluated_file", where);
  const Json& config = r.at(j, "config", where);
  QKV_CHECK(config.is_object(), IoError, r.origin(), ": key '", where,
            ".config' must be an object");
  v.config = config.empty() ? std::string() : config.dump();
  v.parameters = r.integer(j, "parameters", where);
  v.updates = r.integer(j, "updates", where);
  v.epochs = r.integer(j, "epochs", where);
  v.stop_reason = r.string(j, "stop_reason", where);
  v.train_seconds = r.number(j, "train_seconds", where);
  v.train_tokens = r.integer(j, "train_tokens", where);
  v.train_tokens_per_second = r.number(j, "train_tokens_per_second", where);
  v.best_valid_loss = r.maybe_number(j, "best_valid_loss", where);
  v.test_sentences = r.integer(j, "test_sentences", where);
  v.test_skipped = r.integer(j, "test_skipped", where);
  v.bleu = r.number(j, "bleu", where);
  v.chrf = r.number(j, "chrf", where);
  v.bleu_line = r.string(j, "bleu_line", where);
  v.chrf_line = r.string(j, "chrf_line", where);
  v.bleu_low = r.later_number(j, "bleu_low", where);
  v.bleu_high = r.later_number(j, "bleu_high", where);
  v.attention_entropy = r.later_number(j, "attention_entropy", where);
  v.attention_entropy_uniform = r.later_number(j, "attention_entropy_uniform", where);
  const Json& buckets = r.array(j, "by_length", where);
  for (size_t i = 0; i < buckets.size(); ++i) {
    const std::string at = where + ".by_length[" + std::to_string(i) + "]";
    v.by_length.push_back({.label = r.string(buckets[i], "label", at),
                           .sentences = r.integer(buckets[i], "sentences", at),
                           .bleu = r.maybe_number(buckets[i], "bleu", at),
                           .chrf = r.maybe_number(buckets[i], "chrf", at),
                           .bleu_low = r.later_number(buckets[i], "bleu_low", at),
                           .bleu_high = r.later_number(buckets[i], "bleu_high", at)});
  }
  v.decode_seconds = r.number(j, "decode_seconds", where);
  v.decode_sentences_per_second = r.number(j, "decode_sentences_per_second", where);
  v.peak_rss_bytes = r.integer(j, "peak_rss_bytes", where);
  v.peak_rss_per_variant = r.boolean(j, "peak_rss_per_variant", where);
  v.wall_seconds = r.number(j, "wall_seconds", where);
  return v;
}

}  // namespace

std::string to_json(const Comparison& c) {
  Json variants = Json::array();
  for (const VariantResult& v : c.variants) variants.push_back(variant_json(v));
  const Json j = {{"title", c.title}, {"notes", c.notes}, {"variants", variants}};
  return j.dump(2) + "\n";
}

Comparison comparison_from_json(std::string_view json, std::string_view origin) {
  const Json j = parse(json, origin);
  const Reader r(origin);
  Comparison c;
  c.title = r.string(j, "title", "");
  c.notes = r.strings(j, "notes", "");
  const Json& variants = r.array(j, "variants", "");
  for (size_t i = 0; i < variants.size(); ++i)
    c.variants.push_back(read_variant(r, variants[i], "variants[" + std::to_string(i) + "]"));
  return c;
}

std::string samples_to_json(const std::vector<viz::AttentionMap>& samples) {
  Json list = Json::array();
  for (const viz::AttentionMap& m : samples)
    list.push_back(
        {{"title", m.title}, {"source", m.source}, {"target", m.target}, {"weights", m.weights}});
  return Json{{"samples", list}}.dump(1) + "\n";
}

std::vector<viz::AttentionMap> samples_from_json(std::string_view json, std::string_view origin) {
  const Json j = parse(json, origin);
  const Reader r(origin);
  const Json& list = r.array(j, "samples", "");
  std::vector<viz::AttentionMap> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = "samples[" + std::to_string(i) + "]";
    viz::AttentionMap m;
    m.title = r.string(list[i], "title", where);
    m.source = r.strings(list[i], "source", where);
    m.target = r.strings(list[i], "target", where);
    const Json& weights = r.array(list[i], "weights", where);
    for (size_t k = 0; k < weights.size(); ++k) {
      QKV_CHECK(weights[k].is_number(), IoError, origin, ": key '", where, ".weights[", k,
                "]' must be a number");
      m.weights.push_back(weights[k].get<float>());
    }
    try {
      viz::validate(m);
    } catch (const ValueError& e) {
      QKV_THROW(IoError, origin, ": ", where, ": ", e.what());
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace qkv::experiment

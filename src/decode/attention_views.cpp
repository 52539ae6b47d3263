#include "qkv/decode/attention_views.h"

#include "qkv/base/error.h"
#include "qkv/base/field_error.h"

namespace qkv::decode {
namespace {

// Indices 0..n-1 for "all", `default_index` for the named default (n-1 for "last", -1 for
// "avg"), else the index, checked against n.
std::vector<int64_t> resolve(std::string_view spec, std::string_view field, std::string_view named,
                             std::string_view noun, int64_t n, int64_t default_index) {
  QKV_CHECK(is_view_spec(spec, named), FieldError, "{", field, "} ", spec, ": must be ", named,
            ", all, or a 0-based index");
  if (spec == "all") {
    std::vector<int64_t> all(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) all[size_t(i)] = i;
    return all;
  }
  if (spec == named) return {default_index};
  const int64_t i = std::stoll(std::string(spec));
  QKV_CHECK(i < n, FieldError, "{", field, "} ", spec, ": the model has ", n, " ", noun, " (0..",
            n - 1, ")");
  return {i};
}

}  // namespace

bool is_view_spec(std::string_view spec, std::string_view named) {
  const bool number = !spec.empty() && spec.size() < 6 &&
                      spec.find_first_not_of("0123456789") == std::string_view::npos;
  return number || spec == named || spec == "all";
}

std::vector<AttentionView> attention_views(std::string_view layer, std::string_view head,
                                           const models::ModelConfig& c) {
  QKV_CHECK(models::attends(c), InternalError, "attention_views: the model does not attend");
  if (c.type != models::ModelType::Transformer) {
    resolve(layer, "layer", "last", "attention layer in an rnn", 1, 0);
    resolve(head, "head", "avg", "attention head in an rnn", 1, -1);
    return {{{0, -1}, "", ""}};
  }
  std::vector<AttentionView> out;
  for (const int64_t l :
       resolve(layer, "layer", "last", "decoder layers", c.dec_depth, c.dec_depth - 1))
    for (const int64_t h : resolve(head, "head", "avg", "heads", c.heads, -1)) {
      const std::string name = h < 0 ? "avg" : std::to_string(h);
      out.push_back({{l, h},
                     "layer " + std::to_string(l) + ", head " + name,
                     ".layer-" + std::to_string(l) + ".head-" + name});
    }
  if (out.size() == 1) out[0].suffix.clear();
  return out;
}

}  // namespace qkv::decode

#include "detail/indices.h"

#include <cmath>
#include <string>

#include "detail/checks.h"

namespace qkv::ops::detail {
namespace {

// "[1, 2]": the multi-index of flat row-major position `flat` in `shape`.
std::string multi_index(const Shape& shape, int64_t flat) {
  std::string out = "]";
  for (int i = shape.rank() - 1; i >= 0; --i) {
    const int64_t d = shape[i];
    out.insert(0, std::to_string(d == 0 ? 0 : flat % d));
    if (i > 0) out.insert(0, ", ");
    flat = d == 0 ? 0 : flat / d;
  }
  return "[" + out;
}

int32_t checked_index(double v, int64_t position, const TensorView& ids, const IndexRule& rule) {
  QKV_CHECK(std::isfinite(v) && v == std::trunc(v), ValueError, rule.op, ": ", rule.what, " ", v,
            " at position ", position, " (index ", multi_index(ids.shape(), position), ") of ",
            describe(ids), " is not an integer");
  const bool allowed = rule.also_allowed && v == double(*rule.also_allowed);
  QKV_CHECK(allowed || (v >= 0 && v < double(rule.upper)), IndexError, rule.op, ": ", rule.what,
            " ", int64_t(v), " at position ", position, " (index ",
            multi_index(ids.shape(), position), ") of ", describe(ids), " is outside [0, ",
            rule.upper, ")");
  return int32_t(v);
}

}  // namespace

std::vector<int32_t> to_indices(const TensorView& ids, const IndexRule& rule) {
  QKV_CHECK(rule.upper <= INT32_MAX, ValueError, rule.op, ": range ", rule.upper,
            " exceeds int32 ids");
  QKV_CHECK(
      !rule.also_allowed || (*rule.also_allowed >= INT32_MIN && *rule.also_allowed <= INT32_MAX),
      ValueError, rule.op, ": ", *rule.also_allowed, " does not fit int32");
  const ContiguousInput c(ids);
  std::vector<int32_t> out(size_t(ids.numel()));
  visit_dtype(ids.dtype(), [&]<class T>() {
    const T* p = c.data<T>();
    for (int64_t i = 0; i < ids.numel(); ++i)
      out[size_t(i)] = checked_index(double(p[i]), i, ids, rule);
  });
  return out;
}

}  // namespace qkv::ops::detail

// experiment::finding: the comparison's result in one line.
#include "qkv/experiment/finding.h"

#include <algorithm>
#include <vector>

#include "qkv/base/format.h"

namespace qkv::experiment {
namespace {

// How `best` compares with `other`: a ratio when it is large enough to read as one.
std::string versus(const VariantResult& best, const VariantResult& other) {
  const std::string who = other.name + " (" + format_fixed(other.bleu, 2) + ")";
  if (other.bleu > 0 && best.bleu / other.bleu >= 1.1)
    return format_fixed(best.bleu / other.bleu, 2) + "\u00D7 " + who;
  return "+" + format_fixed(best.bleu - other.bleu, 2) + " BLEU over " + who;
}

bool intervals_overlap(const VariantResult& a, const VariantResult& b) {
  return a.bleu_low && a.bleu_high && b.bleu_low && b.bleu_high && *a.bleu_low <= *b.bleu_high &&
         *b.bleu_low <= *a.bleu_high;
}

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i)
    out += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return out;
}

}  // namespace

std::string finding(const Comparison& comparison) {
  if (comparison.variants.empty()) return "";
  std::vector<const VariantResult*> ranked;
  for (const VariantResult& v : comparison.variants) ranked.push_back(&v);
  std::stable_sort(
      ranked.begin(), ranked.end(),
      [](const VariantResult* a, const VariantResult* b) { return a->bleu > b->bleu; });
  const VariantResult& best = *ranked.front();
  if (best.bleu <= 0) return "no variant scored above 0 BLEU on the test set";
  if (ranked.size() == 1) return best.name + ": " + format_fixed(best.bleu, 2) + " BLEU";
  std::vector<std::string> tied = {best.name};
  size_t next = 1;
  while (next < ranked.size() && format_fixed(ranked[next]->bleu, 2) == format_fixed(best.bleu, 2))
    tied.push_back(ranked[next++]->name);
  std::string line = tied.size() > 1
                         ? joined(tied) + " tie for best: " + format_fixed(best.bleu, 2) + " BLEU"
                         : best.name + " is best: " + format_fixed(best.bleu, 2) + " BLEU";
  std::vector<std::string> others;
  for (size_t i = next; i < ranked.size(); ++i) others.push_back(versus(best, *ranked[i]));
  if (!others.empty()) line += ", " + joined(others);
  if (next < ranked.size() && tied.size() == 1 && intervals_overlap(best, *ranked[next]))
    line += "; the 95% intervals of " + best.name + " and " + ranked[next]->name +
            " overlap, so this test set does not settle their order";
  return line;
}

}  // namespace qkv::experiment

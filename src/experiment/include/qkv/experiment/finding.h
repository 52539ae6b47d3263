// The one line that says what a comparison found, computed from its results, for the
// top of the report and under the table `qkv compare` prints.
#pragma once

#include <string>

#include "qkv/experiment/results.h"

namespace qkv::experiment {

// "rnn:additive is best: 30.77 BLEU, 1.49× transformer (20.65) and 2.29× rnn:none
// (13.41)". The variants by test BLEU; a ratio where the other scored above 0 and it is at
// least 1.1×, else the difference in BLEU ("+0.40 BLEU over X"); when the runner-up's 95%
// interval overlaps the best one's, the line says this test set does not settle their
// order. Ties name every best variant. Empty for a comparison without variants.
std::string finding(const Comparison& comparison);

}  // namespace qkv::experiment

// sacreBLEU's default BLEU tokenizer "13a", which reproduces mteval-v13a.pl (WMT's
// official scorer). Reference: sacrebleu/tokenizers/tokenizer_13a.py and tokenizer_re.py
// (sacreBLEU 2.x); our own implementation of the same steps:
//   1. remove "<skipped>", join "-\n" line breaks, turn other '\n' into spaces;
//   2. unescape &quot; &amp; &lt; &gt; (in that order, once each: "&amp;quot;" -> "&quot;");
//   3. pad with one space at each end, then four regex substitutions, each a left-to-right
//      scan with non-overlapping matches exactly as Python's re.sub:
//        ([{-~[-` -&(-+:-@/])  -> " \1 "    ASCII punctuation except ' , - . is split off
//        ([^0-9])([.,])         -> "\1 \2 "  period/comma not preceded by a digit
//        ([.,])([^0-9])         -> " \1 \2"  period/comma not followed by a digit
//        ([0-9])(-)             -> "\1 \2 "  dash preceded by a digit
//   4. ' '.join(line.split()): Unicode whitespace (str.isspace, e.g. U+00A0, U+3000)
//      separates tokens; one ASCII space between tokens, none at the ends.
// Only ASCII punctuation is split: "“Hallo”," -> "“Hallo” ,". Non-ASCII digits are not
// digits for [0-9]. A consumed character cannot start the next match, so "x,,5" ->
// "x , ,5" as in sacreBLEU.
#pragma once

#include <string>
#include <string_view>

namespace qkv::eval {

// The 13a tokenization of one line (UTF-8): tokens separated by single spaces. Like
// sacreBLEU's Tokenizer13a.__call__ it does not strip a trailing "-\n" first (BLEU
// does: corpus_bleu() rstrips each segment before tokenizing).
// Throws ValueError when `line` is not valid UTF-8.
std::string tokenize_13a(std::string_view line);

}  // namespace qkv::eval

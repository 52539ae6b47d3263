// The 13a tokenizer against sacreBLEU's definition: expected strings follow the steps of
// sacrebleu/tokenizers/tokenizer_13a.py and the four regexes of tokenizer_re.py (as
// Python's re.sub applies them); the sentences marked so come from sacreBLEU's tests.
#include "qkv/eval/tokenize_13a.h"

#include <gtest/gtest.h>

#include "qkv/base/error.h"

namespace qkv::eval {
namespace {

TEST(Tokenize13a, SplitsFinalPeriodButNotApostrophe) {
  // test/test_bleu.py, _hyps (the README example).
  EXPECT_EQ(tokenize_13a("The dog bit the man."), "The dog bit the man .");
  EXPECT_EQ(tokenize_13a("It wasn't surprising."), "It wasn't surprising .");
  EXPECT_EQ(tokenize_13a("The man had just bitten him."), "The man had just bitten him .");
}

TEST(Tokenize13a, KeepsPeriodsAndCommasBetweenDigits) {
  EXPECT_EQ(tokenize_13a("3.5 million, 1,000 people paid $5.00/hr."),
            "3.5 million , 1,000 people paid $ 5.00 / hr .");
  EXPECT_EQ(tokenize_13a("x.y"), "x . y");
}

TEST(Tokenize13a, SplitsDashOnlyAfterADigit) {
  EXPECT_EQ(tokenize_13a("a-b 1-2 x-5 -3 9- end"), "a-b 1 - 2 x-5 -3 9 - end");
}

TEST(Tokenize13a, ConsumedCharacterCannotStartTheNextMatch) {
  // re.sub scans left to right without overlap: in "x,,5" regex 2 consumes "x,", so the
  // second comma (followed by a digit) stays attached.
  EXPECT_EQ(tokenize_13a("x,,5 and 7.,8"), "x , ,5 and 7 . , 8");
  EXPECT_EQ(tokenize_13a("U.S.A. e.g., Mr. Smith..."), "U . S . A . e . g . , Mr . Smith . . .");
}

TEST(Tokenize13a, SplitsEveryAsciiPunctuationOfTheFirstClass) {
  EXPECT_EQ(tokenize_13a("(hi) [x] {y} <z> a|b ~c^d_e`f @g #h %i *j +k =l ;m :n ?o !p"),
            "( hi ) [ x ] { y } < z > a | b ~ c ^ d _ e ` f @ g # h % i * j + k = l ; m : n ? "
            "o ! p");
}

TEST(Tokenize13a, UnescapesQuotAmpLtGtOnceInOrder) {
  // &amp;quot; -> &quot; (the &quot; pass already ran); other entities and case stay.
  EXPECT_EQ(tokenize_13a("&quot;Hi&quot; &amp; &lt;b&gt; &amp;quot; &QUOT; &amp"),
            "\" Hi \" & < b > & quot ; & QUOT ; & amp");
}

TEST(Tokenize13a, DropsSkippedAndJoinsHyphenatedLineBreaks) {
  EXPECT_EQ(tokenize_13a("<skipped> end"), "end");
  EXPECT_EQ(tokenize_13a("line-\nbreak and\nnewline"), "linebreak and newline");
  EXPECT_EQ(tokenize_13a("trailing-\n"), "trailing");
}

TEST(Tokenize13a, LeavesUnicodePunctuationAttached) {
  // Only ASCII punctuation is in 13a's classes; a non-ASCII character is [^0-9].
  EXPECT_EQ(tokenize_13a("„Hallo“, sagte er — „schön!“"), "„Hallo“ , sagte er — „schön ! “");
  // test/test_api.py, test_api_get_data: the wmt19/google/ar en-de reference.
  EXPECT_EQ(tokenize_13a("Walisische Abgeordnete befürchten als ,Idioten’ dazustehen."),
            "Walisische Abgeordnete befürchten als , Idioten’ dazustehen .");
  // test/test_sentence_bleu.py, REF.
  EXPECT_EQ(tokenize_13a("producţia de zahăr brut se exprimă în zahăr alb;"),
            "producţia de zahăr brut se exprimă în zahăr alb ;");
  EXPECT_EQ(tokenize_13a("ümlaut.Ärger,5 ü,Ä"), "ümlaut . Ärger , 5 ü , Ä");
}

TEST(Tokenize13a, OnlyAsciiDigitsAreDigits) {
  // Arabic-Indic and fullwidth digits are [^0-9] for sacreBLEU's regexes.
  EXPECT_EQ(tokenize_13a("٣.٥ and ３.５ and 3.5"), "٣ . ٥ and ３ . ５ and 3.5");
}

TEST(Tokenize13a, UnicodeWhitespaceSeparatesTokens) {
  // str.split(): NBSP, ideographic space, tab and em space split; U+200B (not isspace) not.
  EXPECT_EQ(tokenize_13a("a\u00a0b\u3000c\td\u2003e\u200bf"), "a b c d e\u200bf");
  EXPECT_EQ(tokenize_13a("  "), "");
  EXPECT_EQ(tokenize_13a(""), "");
}

TEST(Tokenize13a, InvalidUtf8IsAValueError) {
  EXPECT_THROW(tokenize_13a("ok \xC3("), ValueError);
  EXPECT_THROW(tokenize_13a("\xED\xA0\x80"), ValueError);              // a UTF-16 surrogate
  EXPECT_THROW(tokenize_13a("\xC0\xAF"), ValueError);                  // overlong '/'
  EXPECT_THROW(tokenize_13a("\xF4\x90\x80\x80"), ValueError);          // above U+10FFFF
  EXPECT_EQ(tokenize_13a("\xF0\x9F\x98\x80."), "\xF0\x9F\x98\x80 .");  // U+1F600 is fine
}

}  // namespace
}  // namespace qkv::eval

#include "qkv/serve/request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace qkv::serve {
namespace {

// The status and field parse_translate_request refuses `body` with.
std::pair<int, std::string> refusal(std::string_view body, const Limits& limits = {}) {
  try {
    parse_translate_request(body, limits);
  } catch (const RequestError& e) {
    return {e.status(), e.field()};
  }
  return {200, "(accepted)"};
}

TEST(TranslateRequest, ParsesLibreTranslatesFields) {
  const TranslateRequest r = parse_translate_request(
      R"({"q": "A dog.", "source": "en", "target": "de", "format": "text", "api_key": "k"})", {});
  EXPECT_EQ(r.q, std::vector<std::string>{"A dog."});
  EXPECT_FALSE(r.q_is_list);
  EXPECT_EQ(r.source, "en");
  EXPECT_EQ(r.target, "de");
  EXPECT_EQ(r.api_key, "k");
  EXPECT_EQ(r.beam_size, 5);  // qkv translate's default
  EXPECT_FALSE(r.wants_details());
}

TEST(TranslateRequest, ParsesQkvsOwnFields) {
  const TranslateRequest r = parse_translate_request(
      R"({"q": ["a", "b c"], "model": "t", "beam_size": 4, "n_best": 2, "alignment": "soft",
          "alignment_layer": 0, "alignment_head": 1, "attention": true, "scores": true})",
      {});
  EXPECT_EQ(r.q, (std::vector<std::string>{"a", "b c"}));
  EXPECT_TRUE(r.q_is_list);
  EXPECT_EQ(r.model, "t");
  EXPECT_EQ(r.beam_size, 4);
  EXPECT_EQ(r.n_best, 2);
  EXPECT_EQ(r.alignment, "soft");
  EXPECT_EQ(r.alignment_layer, 0);
  EXPECT_EQ(r.alignment_head, 1);
  EXPECT_TRUE(r.attention && r.scores && r.wants_details());
}

TEST(TranslateRequest, MalformedJsonIs400) {
  EXPECT_EQ(refusal(R"({"q": "a",)"), std::pair(400, std::string()));
  EXPECT_EQ(refusal(""), std::pair(400, std::string()));
  EXPECT_EQ(refusal(R"(["q"])"), std::pair(400, std::string()));  // not an object
}

TEST(TranslateRequest, InvalidUtf8NamesTheFieldItIsIn) {
  EXPECT_EQ(refusal("{\"q\": \"caf\xC3\"}"), std::pair(400, std::string("q")));
  EXPECT_EQ(refusal("{\"q\": [\"ok\", \"\xFF\"]}"), std::pair(400, std::string("q[1]")));
  EXPECT_EQ(refusal("{\"q\": \"a\", \"source\": \"\xED\xA0\x80\"}"),  // a surrogate
            std::pair(400, std::string("source")));
}

TEST(TranslateRequest, TheErrorMessageIsValidJsonEvenForInvalidBytes) {
  try {
    parse_translate_request("{\"q\": \"\xFF\xFE\"}", {});
    FAIL() << "accepted";
  } catch (const RequestError& e) {
    const auto j = nlohmann::json::parse(error_body(e.what(), e.field()));
    EXPECT_EQ(j.at("field"), "q");
    EXPECT_NE(j.at("error").get<std::string>().find("malformed JSON in field 'q'"),
              std::string::npos);
  }
}

TEST(TranslateRequest, ControlCharactersInASentenceAre400) {
  EXPECT_EQ(refusal(R"({"q": ["a", "b\u0000c"]})"), std::pair(400, std::string("q[1]")));
  EXPECT_EQ(refusal(R"({"q": "two\nlines"})"), std::pair(400, std::string("q")));
}

TEST(TranslateRequest, WrongTypesNameTheField) {
  EXPECT_EQ(refusal(R"({"q": 3})"), std::pair(400, std::string("q")));
  EXPECT_EQ(refusal(R"({"q": ["a", 3]})"), std::pair(400, std::string("q[1]")));
  EXPECT_EQ(refusal(R"({"q": "a", "source": 1})"), std::pair(400, std::string("source")));
  EXPECT_EQ(refusal(R"({"q": "a", "beam_size": "5"})"), std::pair(400, std::string("beam_size")));
  EXPECT_EQ(refusal(R"({"q": "a", "beam_size": 2.5})"), std::pair(400, std::string("beam_size")));
  EXPECT_EQ(refusal(R"({"q": "a", "attention": 1})"), std::pair(400, std::string("attention")));
  EXPECT_EQ(refusal(R"({"q": "a", "alignment": true})"), std::pair(400, std::string("alignment")));
}

TEST(TranslateRequest, BadValuesNameTheField) {
  EXPECT_EQ(refusal(R"({"source": "en"})"), std::pair(400, std::string("q")));  // missing
  EXPECT_EQ(refusal(R"({"q": "a", "beam_size": 0})"), std::pair(400, std::string("beam_size")));
  EXPECT_EQ(refusal(R"({"q": "a", "beam_size": 33})"), std::pair(400, std::string("beam_size")));
  EXPECT_EQ(refusal(R"({"q": "a", "beam_size": 18446744073709551615})"),
            std::pair(400, std::string("beam_size")));
  EXPECT_EQ(refusal(R"({"q": "a", "beam_size": 2, "n_best": 3})"),
            std::pair(400, std::string("n_best")));
  EXPECT_EQ(refusal(R"({"q": "a", "alignment": "fuzzy"})"),
            std::pair(400, std::string("alignment")));
  EXPECT_EQ(refusal(R"({"q": "a", "alignment_layer": -2})"),
            std::pair(400, std::string("alignment_layer")));
  EXPECT_EQ(refusal(R"({"q": "a", "format": "html"})"), std::pair(400, std::string("format")));
}

TEST(TranslateRequest, UnknownFieldsAreRefusedByName) {
  EXPECT_EQ(refusal(R"({"q": "a", "beamsize": 3})"), std::pair(400, std::string("beamsize")));
}

TEST(TranslateRequest, SizesPastTheLimitsAre413) {
  const Limits limits{.body_bytes = 200, .sentences = 2, .sentence_bytes = 10};
  EXPECT_EQ(refusal(R"({"q": ")" + std::string(300, 'a') + R"("})", limits),
            std::pair(413, std::string()));
  EXPECT_EQ(refusal(R"({"q": ["a", "b", "c"]})", limits), std::pair(413, std::string("q")));
  EXPECT_EQ(refusal(R"({"q": ["a", "eleven char"]})", limits), std::pair(413, std::string("q[1]")));
  EXPECT_EQ(refusal(R"({"q": ["a", "ten chars."]})", limits),
            std::pair(200, std::string("(accepted)")));
}

TEST(ScoreRequest, PairsMustHaveTheSameShape) {
  const ScoreRequest r = parse_score_request(R"({"q": ["a", "b"], "translation": ["x", ""]})", {});
  EXPECT_EQ(r.translation, (std::vector<std::string>{"x", ""}));
  auto field = [](std::string_view body) {
    try {
      parse_score_request(body, {});
    } catch (const RequestError& e) {
      return e.field();
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(field(R"({"q": ["a", "b"], "translation": ["x"]})"), "translation");
  EXPECT_EQ(field(R"({"q": "a", "translation": ["x"]})"), "translation");
  EXPECT_EQ(field(R"({"q": "a"})"), "translation");
  EXPECT_EQ(field(R"({"q": "a", "translation": "x", "beam_size": 2})"), "beam_size");
}

}  // namespace
}  // namespace qkv::serve

// serve::Service on the compatibility models of tests/compat: every answer equals what a
// separately loaded Translator gives with qkv translate's options, alone and batched across
// concurrent requests; refusals carry their status and field; shutdown answers what is in.
#include "qkv/serve/service.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "qkv/decode/alignment.h"
#include "qkv/decode/translator.h"

namespace qkv::serve {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

const fs::path kModels = fs::path(QKV_COMPAT_DIR) / "models";

std::vector<std::string> sentences() {
  std::ifstream in(fs::path(QKV_COMPAT_DIR) / "input.en");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

ServiceOptions two_models(int workers = 2) {
  ServiceOptions o;
  o.models = {{"transformer", kModels / "transformer"}, {"en-de", kModels / "rnn-additive"}};
  o.workers = workers;
  o.batch_window = 20ms;
  return o;
}

// qkv translate's defaults: beam 5, normalise 0.6, at most 1000 source tokens.
std::vector<std::string> reference(const fs::path& model, const std::vector<std::string>& in) {
  const decode::Translator tr = decode::Translator::load(model);
  decode::TranslateOptions o;
  o.max_length = 1000;
  o.scores = false;
  std::vector<std::string> out;
  for (const decode::SentenceResult& r : tr.translate(in, o))
    out.push_back(r.ok() ? r.hypotheses[0].text : "");
  return out;
}

json body_of(const Reply& r) {
  return json::parse(r.body);
}

TEST(LanguagePair, TwoCodesJoinedByADash) {
  using Pair = std::pair<std::string, std::string>;
  EXPECT_EQ(language_pair("en-de"), (Pair{"en", "de"}));
  EXPECT_EQ(language_pair("eng-deu"), (Pair{"eng", "deu"}));
  for (const char* other : {"transformer", "en-de-x", "EN-DE", "e-de", "en-", "-de", "en_de"})
    EXPECT_EQ(language_pair(other), Pair{}) << other;
}

TEST(Service, TranslatesAsTheTranslatorDoesForAStringAndAList) {
  Service s(two_models());
  const auto in = sentences();
  const auto expected = reference(kModels / "transformer", in);
  const Reply one = s.translate(json{{"q", in[0]}}.dump());
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(body_of(one).at("translatedText"), expected[0]);
  const Reply all = s.translate(json{{"q", in}, {"model", "transformer"}}.dump());
  ASSERT_EQ(all.status, 200) << all.body;
  EXPECT_EQ(body_of(all).at("translatedText"), json(expected));
  const Reply none = s.translate(R"({"q": [], "scores": true})");
  ASSERT_EQ(none.status, 200) << none.body;
  EXPECT_EQ(body_of(none), json::parse(R"({"translatedText": [], "details": []})"));
  // The rnn, chosen by its name's language pair.
  const Reply rnn = s.translate(json{{"q", in}, {"source", "en"}, {"target", "de"}}.dump());
  ASSERT_EQ(rnn.status, 200) << rnn.body;
  EXPECT_EQ(body_of(rnn).at("translatedText"), json(reference(kModels / "rnn-additive", in)));
}

TEST(Service, ConcurrentRequestsAreBatchedAndAnsweredAsAlone) {
  ServiceOptions o = two_models();
  o.batch_window = 200ms;  // wide, so the threads' requests surely meet
  Service s(o);
  const auto in = sentences();
  const auto expected = reference(kModels / "transformer", in);
  constexpr int kThreads = 6, kRounds = 3;
  std::vector<std::vector<std::string>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        const size_t i = size_t(t * kRounds + round) % in.size();
        const Reply r = s.translate(json{{"q", in[i]}}.dump());
        got[size_t(t)].push_back(r.status == 200
                                     ? body_of(r).at("translatedText").get<std::string>()
                                     : "HTTP " + std::to_string(r.status));
      }
    });
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t)
    for (int round = 0; round < kRounds; ++round)
      EXPECT_EQ(got[size_t(t)][size_t(round)], expected[size_t(t * kRounds + round) % in.size()]);
  // Some batch held more than one request's sentence.
  const std::string metrics = s.metrics().body;
  const auto value = [&](const std::string& name) {
    const size_t at = metrics.find("\n" + name + " ");
    return at == std::string::npos ? -1 : std::stoll(metrics.substr(at + name.size() + 2));
  };
  EXPECT_LT(value("qkv_batch_sentences_bucket{le=\"1\"}"), value("qkv_batch_sentences_count"))
      << metrics;
  EXPECT_EQ(value("qkv_sentences_total"), kThreads * kRounds);
}

TEST(Service, AlignmentScoresAndAttentionAreTheLibrarys) {
  Service s(two_models());
  const auto in = sentences();
  const Reply r = s.translate(
      json{{"q", in[1]}, {"alignment", "hard"}, {"attention", true}, {"scores", true}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json hyp = body_of(r).at("details").at("hypotheses").at(0);

  const decode::Translator tr = decode::Translator::load(kModels / "transformer");
  decode::TranslateOptions o;
  o.max_length = 1000;
  o.search.keep_attention = true;
  const std::vector<std::string> one{in[1]};
  const auto results = tr.translate(one, o);
  const decode::TranslatedHypothesis& h = results[0].hypotheses[0];
  EXPECT_EQ(hyp.at("text"), h.text);
  EXPECT_EQ(hyp.at("alignment"), decode::hard_alignment(decode::word_attention(
                                     tr.vocab(), results[0].source, h.tokens, h.attention)));
  EXPECT_DOUBLE_EQ(hyp.at("log_prob").get<double>(), h.log_prob);
  const decode::AttentionMaps maps = tr.attention_maps(results[0], h);
  const json& a = hyp.at("attention");
  EXPECT_EQ(a.at("source_tokens"), json(maps.source_tokens));
  EXPECT_EQ(a.at("target_tokens"), json(maps.target_tokens));
  const json& w = a.at("weights");
  ASSERT_EQ(int64_t(w.size()), maps.layers);
  ASSERT_EQ(int64_t(w.at(0).size()), maps.heads);
  ASSERT_EQ(w.at(0).at(0).size(), maps.target_tokens.size());
  const size_t l = size_t(maps.layers - 1), hd = 1, t = 2, src = 1;
  const size_t rows = maps.target_tokens.size(), cols = maps.source_tokens.size();
  EXPECT_FLOAT_EQ(w.at(l).at(hd).at(t).at(src).get<float>(),
                  maps.weights[((l * size_t(maps.heads) + hd) * rows + t) * cols + src]);
}

TEST(Service, NBestAndSoftAlignmentAsTheCli) {
  Service s(two_models());
  const Reply r = s.translate(json{
      {"q", {sentences()[0]}},
      {"n_best", 3},
      {"alignment", "soft"},
      {"model", "en-de"}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json d = body_of(r).at("details").at(0);
  ASSERT_EQ(d.at("hypotheses").size(), 3u);
  EXPECT_NE(d.at("hypotheses").at(0).at("alignment").get<std::string>().find(','),
            std::string::npos);
}

TEST(Service, ScoresAsTheTranslatorDoes) {
  Service s(two_models());
  const Reply r = s.score(
      json{{"q", {"A dog runs.", "A man."}}, {"translation", {"Ein Hund läuft.", ""}}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const decode::Translator tr = decode::Translator::load(kModels / "transformer");
  const std::vector<std::string> src{"A dog runs.", "A man."}, tgt{"Ein Hund läuft.", ""};
  const auto expected = tr.score(src, tgt, {.max_length = 1000});
  const json scores = body_of(r).at("scores");
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_DOUBLE_EQ(scores.at(i).at("log_prob").get<double>(), expected[i].log_prob);
    EXPECT_EQ(scores.at(i).at("tokens"), expected[i].token_log_probs.size());
  }
}

TEST(Service, RefusalsNameTheField) {
  Service s(two_models(1));
  auto field = [](const Reply& r) { return body_of(r).value("field", ""); };
  Reply r = s.translate(R"({"q": "a", "model": "nope"})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(field(r), "model");
  r = s.translate(R"({"q": "a", "source": "fr", "target": "de"})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(field(r), "source");
  r = s.translate(R"({"q": "a", "alignment": "hard", "alignment_layer": 9})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(field(r), "alignment_layer");
  r = s.translate(R"({"q": "a", "alignment": "hard", "model": "en-de", "alignment_head": 1})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(field(r), "alignment_head");
  EXPECT_EQ(s.translate("{").status, 400);
  EXPECT_EQ(s.translate(R"({"q": "a"})").status, 200);  // still serving
}

TEST(Service, AnApiKeyIsNeededEverywhereButHealth) {
  ServiceOptions o = two_models(1);
  o.api_key = "secret";
  Service s(o);
  EXPECT_EQ(s.translate(R"({"q": "a"})").status, 401);
  EXPECT_EQ(s.translate(R"({"q": "a", "api_key": "wrong"})").status, 401);
  EXPECT_EQ(s.translate("{", "").status, 401);  // no hints about the body without a key
  EXPECT_EQ(s.translate(R"({"q": "a", "api_key": "secret"})").status, 200);
  EXPECT_EQ(s.translate(R"({"q": "a"})", "secret").status, 200);
  EXPECT_EQ(s.score(R"({"q": "a", "translation": "b"})").status, 401);
  EXPECT_EQ(s.models().status, 401);
  EXPECT_EQ(s.models("secret").status, 200);
  EXPECT_EQ(s.metrics().status, 401);
  EXPECT_EQ(s.refuse_without_key("")->status, 401);  // the page
  EXPECT_FALSE(s.refuse_without_key("secret").has_value());
  EXPECT_EQ(s.health().status, 200);
}

TEST(Service, ModelsListsNamesPairsAndConfigs) {
  Service s(two_models(1));
  const json m = body_of(s.models());
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].at("name"), "transformer");
  EXPECT_TRUE(m[0].at("source").is_null());
  EXPECT_EQ(m[0].at("type"), "transformer");
  EXPECT_EQ(m[1].at("source"), "en");
  EXPECT_EQ(m[1].at("target"), "de");
  EXPECT_EQ(m[1].at("config").at("attention"), "additive");
}

TEST(Service, ARequestNotAnsweredInTimeIs504AndTheQueueBound503) {
  ServiceOptions o = two_models(1);
  o.batch_window = 5s;  // nothing is decoded within the timeout
  o.timeout = 300ms;
  o.queue_capacity = 1;
  Service s(o);
  std::vector<Reply> replies(3);
  std::thread a([&] { replies[0] = s.translate(R"({"q": "a"})"); });
  std::this_thread::sleep_for(100ms);
  std::thread b([&] { replies[1] = s.translate(R"({"q": "b", "beam_size": 2})"); });
  std::this_thread::sleep_for(50ms);
  replies[2] = s.translate(R"({"q": "c", "beam_size": 2})");
  a.join();
  b.join();
  EXPECT_EQ(replies[0].status, 504);
  // One sentence fits: whichever of b and c found the queue full has 503 and Retry-After.
  int full = 0;
  for (const Reply& r : replies)
    if (r.status == 503) {
      ++full;
      ASSERT_EQ(r.headers.size(), 1u);
      EXPECT_EQ(r.headers[0], (std::pair<std::string, std::string>{"Retry-After", "1"}));
    }
  EXPECT_GE(full, 1);
  s.shutdown();  // the timed-out jobs are never decoded: quick
}

TEST(Service, ShutdownAnswersWhatIsQueuedAndRefusesTheRest) {
  ServiceOptions o = two_models(1);
  o.batch_window = 1s;
  Service s(o);
  std::vector<Reply> replies(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < replies.size(); ++i)
    threads.emplace_back([&, i] { replies[i] = s.translate(json{{"q", sentences()[i]}}.dump()); });
  std::this_thread::sleep_for(200ms);  // all four are waiting in the 1 s window
  s.shutdown();                        // which shutdown does not wait out
  for (std::thread& t : threads) t.join();
  for (const Reply& r : replies) EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(s.translate(R"({"q": "a"})").status, 503);
  EXPECT_EQ(s.health().status, 503);
}

TEST(Service, ErrorsOfTheBindingAreJsonAndCountedUnderFewLabels) {
  Service s(two_models(1));
  Reply r = s.transport_error(404, "GET", "/nope/1");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(body_of(r).at("error"), "no such endpoint: GET /nope/1");
  s.transport_error(404, "GET", "/nope/2");
  r = s.transport_error(413, "POST", "/translate");
  EXPECT_NE(body_of(r).at("error").get<std::string>().find("larger than the"), std::string::npos);
  const std::string metrics = s.metrics().body;
  EXPECT_NE(metrics.find("endpoint=\"other\",status=\"404\"} 2"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("endpoint=\"/translate\",status=\"413\"} 1"), std::string::npos)
      << metrics;
  EXPECT_EQ(metrics.find("/nope"), std::string::npos) << metrics;
}

TEST(ModelSpec, NameEqualsPathOrTheDirectorysName) {
  EXPECT_EQ(parse_model_spec("en-de=runs/m").name, "en-de");
  EXPECT_EQ(parse_model_spec("en-de=runs/m").path, "runs/m");
  EXPECT_EQ(parse_model_spec("runs/en-fr/").name, "en-fr");
  EXPECT_EQ(parse_model_spec("runs/en-fr/model.best.safetensors").name, "en-fr");
  EXPECT_EQ(parse_model_spec("runs/en-fr/model.best.safetensors").path,
            "runs/en-fr/model.best.safetensors");
  EXPECT_EQ(parse_model_spec("/").name, "model");
}

}  // namespace
}  // namespace qkv::serve

#include "pipeline_test_util.h"

#include "qkv/data/parallel_corpus.h"
#include "qkv/data/vocab.h"

namespace qkv::train::testing {

TinyCorpus tiny_corpus(int pairs, uint64_t seed) {
  return qkv::testing::tiny_corpus(pairs, seed, {.rng_stream = 5});
}

TrainingData tiny_task(const std::filesystem::path& dir, int train_pairs, int vocab_size) {
  const TinyCorpus train = tiny_corpus(train_pairs, 1), valid = tiny_corpus(12, 2);
  write_lines(dir / "train.src", train.source);
  write_lines(dir / "train.tgt", train.target);
  write_lines(dir / "valid.src", valid.source);
  write_lines(dir / "valid.tgt", valid.target);
  data::train_vocab({dir / "train.src", dir / "train.tgt"}, vocab_size, dir / "tiny.spm");
  TrainingData d{.vocab = data::Vocab::load(dir / "tiny.spm")};
  d.train = std::make_shared<data::TokenizedCorpus>(
      data::tokenize(data::read_parallel_corpus(dir / "train.src", dir / "train.tgt"), d.vocab));
  d.valid = make_validation_set(data::read_parallel_corpus(dir / "valid.src", dir / "valid.tgt"),
                                d.vocab);
  return d;
}

models::ModelConfig tiny_transformer(int64_t vocab_size, double dropout) {
  models::ModelConfig c;
  c.type = models::ModelType::Transformer;
  c.vocab_size = vocab_size;
  c.dim_emb = 16;
  c.enc_depth = 1;
  c.dec_depth = 1;
  c.heads = 2;
  c.dim_ffn = 32;
  c.dropout = dropout;
  c.max_positions = 64;
  return c;
}

models::ModelConfig tiny_rnn(int64_t vocab_size, double dropout) {
  models::ModelConfig c;
  c.type = models::ModelType::Rnn;
  c.attention = models::AttentionKind::Additive;
  c.cell = models::CellType::Gru;
  c.vocab_size = vocab_size;
  c.dim_emb = 12;
  c.dim_rnn = 16;
  c.enc_depth = 1;
  c.dec_depth = 1;
  c.dropout = dropout;
  return c;
}

TrainerOptions tiny_options(const std::filesystem::path& dir, int64_t updates) {
  TrainerOptions o;
  o.model_dir = dir;
  o.batch.mini_batch_words = 48;
  o.batch.max_length = 20;
  o.seed = 3;
  o.schedule = {.kind = LrSchedule::Constant, .learning_rate = 3e-3, .warmup = 0};
  o.label_smoothing = 0.1;
  o.after.updates = updates;
  return o;
}

std::vector<float> parameter_values(const models::Seq2Seq& model) {
  const Tensor v = model.parameters().values();
  return {v.data<float>(), v.data<float>() + v.numel()};
}

}  // namespace qkv::train::testing

// Hand-made malformed model files and training states, each applied to a real small saved
// file and loaded with load_model / load_train_state: every kind must be rejected with
// the typed error of the contract in checkpoint.h (IoError / ConfigError / ValueError),
// naming the file and, where there is one, the tensor or metadata key. Then every
// truncation of a small model file and of a small training state. The safetensors-level
// cases in src/io/tests go through the reader alone; these go through the model loaders,
// so the config, tensor-matching and finiteness layers above the reader are covered too.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeline_test_util.h"
#include "qkv/base/rng.h"
#include "qkv/io/atomic_file.h"
#include "qkv/io/safetensors.h"
#include "qkv/train/checkpoint.h"

namespace qkv::train {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::byte>;
using Json = nlohmann::ordered_json;

// A small model: an rnn with Bahdanau attention (GRU), every parameter kind of the rnn,
// about 2 KiB of values, so that every byte of it can be cut below.
models::ModelConfig tiny_config() {
  models::ModelConfig c = testing::tiny_rnn(7, 0.0);
  c.dim_emb = 4;
  c.dim_rnn = 3;
  return c;
}

// The pristine files every kind starts from, and names to aim at.
struct Pristine {
  Bytes model, state;
  std::string first, middle, last;  // parameter names: first, one in the middle, last
};

const Pristine& pristine() {
  static const Pristine p = [] {
    const fs::path dir = fs::path(::testing::TempDir()) / "qkv_malformed_pristine";
    fs::create_directories(dir);
    const auto model = models::make_model(tiny_config(), 5);
    save_model(*model, dir / kModelFile, kVocabFile, 7);
    Adam adam(model->parameters().numel(), AdamOptions{});
    Rng rng(4);
    for (float& m : adam.first_moment()) m = rng.normal();
    for (float& v : adam.second_moment()) v = rng.uniform();
    adam.set_step_count(3);
    TrainProgress progress;
    progress.update = 3;
    progress.model_seed = 5;
    save_train_state(dir / kTrainStateFile, progress, *model, adam);
    const std::vector<nn::Parameter>& params = model->parameters().parameters();
    Pristine out{io::read_file(dir / kModelFile, 1 << 20),
                 io::read_file(dir / kTrainStateFile, 1 << 20), params.front().name,
                 params[params.size() / 2].name, params.back().name};
    fs::remove_all(dir);
    return out;
  }();
  return p;
}

// --- Byte-level editing: [u64 length][header][data] ---

uint64_t header_length(const Bytes& b) {
  uint64_t n = 0;
  std::memcpy(&n, b.data(), 8);
  return n;
}
std::string header_of(const Bytes& b) {
  return {reinterpret_cast<const char*>(b.data()) + 8, size_t(header_length(b))};
}
Bytes data_of(const Bytes& b) {
  return {b.begin() + 8 + ptrdiff_t(header_length(b)), b.end()};
}
// `length` (default: the header's size), the header, the data.
Bytes join(const std::string& header, const Bytes& data, std::optional<uint64_t> length = {}) {
  // One buffer filled by memcpy (GCC 12 warns falsely on vector::insert of bytes here).
  Bytes out(8 + header.size() + data.size());
  const uint64_t n = length.value_or(header.size());
  std::memcpy(out.data(), &n, 8);
  if (!header.empty()) std::memcpy(out.data() + 8, header.data(), header.size());
  if (!data.empty()) std::memcpy(out.data() + 8 + header.size(), data.data(), data.size());
  return out;
}
// The header parsed, edited by `fn` and written back (spaces to a multiple of 8, as the
// reference writer pads).
Bytes edit_json(const Bytes& b, const std::function<void(Json&)>& fn) {
  Json j = Json::parse(header_of(b));
  fn(j);
  std::string text = j.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');
  return join(text, data_of(b));
}
// The file parsed, its tensors or metadata edited by `fn`, and serialized again: a
// well-formed safetensors file whose content is wrong for the model.
Bytes edit_file(const Bytes& b, const std::function<void(io::SafetensorsFile&)>& fn) {
  io::SafetensorsFile f = io::parse_safetensors(b);
  fn(f);
  return io::serialize_safetensors(f.tensors, f.metadata);
}
Tensor& tensor(io::SafetensorsFile& f, const std::string& name) {
  for (auto& [n, t] : f.tensors)
    if (n == name) return t;
  throw std::runtime_error("no tensor " + name);
}
// The model config in the metadata, edited as JSON.
Bytes edit_config(const Bytes& b, const std::function<void(nlohmann::json&)>& fn) {
  return edit_file(b, [&](io::SafetensorsFile& f) {
    nlohmann::json c = nlohmann::json::parse(f.metadata.at("config"));
    fn(c);
    f.metadata["config"] = c.dump();
  });
}
Bytes with_prefix_length(Bytes b, uint64_t n) {
  std::memcpy(b.data(), &n, 8);
  return b;
}
Bytes appended(Bytes b, size_t n) {
  b.resize(b.size() + n, std::byte{0});
  return b;
}

// --- The table ---

enum class Loader { Model, State };

struct Kind {
  std::string name;
  Loader loader;
  // Writes the malformed file (or makes a directory) at `path`.
  std::function<void(const fs::path& path)> make;
  std::string error;                   // "IoError", "ConfigError" or "ValueError"
  std::vector<std::string> fragments;  // besides the path
};

void write_bytes(const fs::path& path, const Bytes& b) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

std::function<void(const fs::path&)> bytes(std::function<Bytes(const Pristine&)> fn) {
  return [fn](const fs::path& path) { write_bytes(path, fn(pristine())); };
}

std::vector<Kind> model_kinds() {
  const Pristine& p = pristine();
  const std::string first = p.first, middle = p.middle, last = p.last;
  const auto entry = [](Json& j, const std::string& name) -> Json& { return j[name]; };
  std::vector<Kind> k;
  const auto add = [&](std::string name, std::function<Bytes(const Pristine&)> fn,
                       std::string error, std::vector<std::string> fragments) {
    k.push_back({std::move(name), Loader::Model, bytes(std::move(fn)), std::move(error),
                 std::move(fragments)});
  };
  // The file itself.
  k.push_back({"empty file",
               Loader::Model,
               [](const fs::path& path) { write_bytes(path, {}); },
               "IoError",
               {"only 0 bytes"}});
  k.push_back({"a directory, not a file",
               Loader::Model,
               [](const fs::path& path) { fs::create_directory(path); },
               "IoError",
               {"is a directory"}});
  // The 8-byte header length.
  add("header length too big (past the end)",
      [](const Pristine& q) { return with_prefix_length(q.model, q.model.size()); }, "IoError",
      {"header length", "exceeds the"});
  add("header length over the 100 MiB limit",
      [](const Pristine& q) { return with_prefix_length(q.model, uint64_t{1} << 40); }, "IoError",
      {"exceeds the limit"});
  add("header length too small (cuts the JSON)",
      [](const Pristine& q) {
        const std::string h = header_of(q.model);
        return with_prefix_length(q.model, h.find_last_not_of(' '));
      },
      "IoError", {"not valid JSON"});
  add("header length zero", [](const Pristine& q) { return with_prefix_length(q.model, 0); },
      "IoError", {"header length (first 8 bytes) is 0"});
  // The header's JSON.
  add("header not JSON",
      [](const Pristine& q) {
        return join(std::string(header_of(q.model).size(), 'x'), data_of(q.model));
      },
      "IoError", {"must begin with '{'"});
  add("header not an object",
      [](const Pristine& q) {
        std::string h = "[1, 2, 3]";
        h.resize(header_of(q.model).size(), ' ');
        return join(h, data_of(q.model));
      },
      "IoError", {"must begin with '{'"});
  add("JSON with trailing garbage",
      [](const Pristine& q) {
        std::string h = header_of(q.model);
        h.resize(h.find_last_not_of(' ') + 1);
        return join(h + " {}", data_of(q.model));
      },
      "IoError", {"not valid JSON"});
  add("header not UTF-8",
      [=](const Pristine& q) {
        std::string h = header_of(q.model);
        h[h.find(middle) + 1] = char(0xC3);
        return join(h, data_of(q.model));
      },
      "IoError", {"not valid UTF-8"});
  add("NUL byte in the header",
      [](const Pristine& q) {
        std::string h = header_of(q.model);
        h.back() = '\0';
        return join(h, data_of(q.model));
      },
      "IoError", {"NUL byte"});
  add("duplicated tensor name",
      [=](const Pristine& q) {
        const Json j = Json::parse(header_of(q.model));
        std::string h = j.dump();
        h.insert(h.size() - 1, ",\"" + middle + "\":" + j[middle].dump());
        return join(h, data_of(q.model));
      },
      "IoError", {"duplicate tensor name", middle});
  // dtype.
  add("dtype F64 (consistent offsets)",
      [=](const Pristine& q) {
        return edit_file(q.model, [&](io::SafetensorsFile& f) {
          tensor(f, middle) = tensor(f, middle).to(DType::F64);
        });
      },
      "IoError", {middle, "is f64, expected f32"});
  add("dtype I32",
      [=](const Pristine& q) {
        return edit_json(q.model, [&](Json& j) { entry(j, middle)["dtype"] = "I32"; });
      },
      "IoError", {middle, "dtype \"I32\" is not supported"});
  add("dtype unknown",
      [=](const Pristine& q) {
        return edit_json(q.model, [&](Json& j) { entry(j, middle)["dtype"] = "Q7"; });
      },
      "IoError", {middle, "dtype \"Q7\""});
  // shape.
  add("shape product overflows 64 bits ([2^40, 2^40])",
      [=](const Pristine& q) {
        return edit_json(q.model, [&](Json& j) {
          entry(j, middle)["shape"] = {uint64_t{1} << 40, uint64_t{1} << 40};
        });
      },
      "IoError", {middle, "more elements than 64 bits can count"});
  add("shape byte size overflows 64 bits ([2^31, 2^31] F32)",
      [=](const Pristine& q) {
        return edit_json(q.model, [&](Json& j) {
          entry(j, middle)["shape"] = {uint64_t{1} << 31, uint64_t{1} << 31};
        });
      },
      "IoError", {middle, "needs more bytes than 64 bits can count"});
  add("negative shape",
      [=](const Pristine& q) {
        return edit_json(q.model, [&](Json& j) { entry(j, middle)["shape"] = {-3, 4}; });
      },
      "IoError", {middle, "negative dimension -3"});
  add("non-integer shape",
      [=](const Pristine& q) {
        return edit_json(q.model, [&](Json& j) { entry(j, middle)["shape"] = {2.5}; });
      },
      "IoError", {middle, "not an integer"});
  add("a huge tensor claimed in a tiny file ([2^28, 16] F32 = 16 GiB)",
      [=](const Pristine& q) {
        return edit_json(q.model, [&](Json& j) {
          entry(j, first)["shape"] = {uint64_t{1} << 28, 16};
          entry(j, first)["data_offsets"] = {0, uint64_t{1} << 34};
        });
      },
      "IoError", {first, "reach past the end of the data section"});
  // data_offsets.
  const auto shift = [](Json& e, int64_t by_begin, int64_t by_end) {
    e["data_offsets"] = {e["data_offsets"][0].get<int64_t>() + by_begin,
                         e["data_offsets"][1].get<int64_t>() + by_end};
  };
  add("offsets out of range",
      [=](const Pristine& q) {
        const auto size = int64_t(data_of(q.model).size());
        return edit_json(q.model, [&](Json& j) { shift(entry(j, last), size, size); });
      },
      "IoError", {last, "reach past the end of the data section"});
  add("offsets overlapping",
      [=](const Pristine& q) {
        return edit_json(q.model, [&](Json& j) { shift(entry(j, middle), -4, -4); });
      },
      "IoError", {middle, "overlap"});
  add("offsets with a gap",
      [=](const Pristine& q) {
        return appended(edit_json(q.model, [&](Json& j) { shift(entry(j, last), 4, 4); }), 4);
      },
      "IoError", {last, "belong to no tensor"});
  add("offsets reversed",
      [=](const Pristine& q) {
        return edit_json(q.model, [&](Json& j) {
          Json& o = entry(j, middle)["data_offsets"];
          o = {o[1], o[0]};
        });
      },
      "IoError", {middle, "begin after they end"});
  add("offsets not matching shape x dtype",
      [=](const Pristine& q) {
        return edit_json(q.model, [&](Json& j) { shift(entry(j, middle), 0, -4); });
      },
      "IoError", {middle, "bytes, but F32"});
  add("offsets not two integers",
      [=](const Pristine& q) {
        return edit_json(q.model, [&](Json& j) { entry(j, middle)["data_offsets"].push_back(9); });
      },
      "IoError", {middle, "must be two integers"});
  add("data section longer than the offsets cover",
      [](const Pristine& q) { return appended(q.model, 12); }, "IoError", {"12 trailing bytes"});
  // Tensors against the model the config describes.
  add("tensor missing",
      [=](const Pristine& q) {
        return edit_file(q.model, [&](io::SafetensorsFile& f) {
          std::erase_if(f.tensors, [&](const auto& t) { return t.first == middle; });
        });
      },
      "IoError", {middle, "is missing"});
  add("extra tensor",
      [](const Pristine& q) {
        return edit_file(q.model, [](io::SafetensorsFile& f) {
          f.tensors.emplace_back("decoder.stray", Tensor::zeros({3}));
        });
      },
      "IoError", {"unexpected tensor 'decoder.stray'"});
  add("tensor with the wrong shape for the config",
      [=](const Pristine& q) {
        return edit_file(q.model, [&](io::SafetensorsFile& f) {
          Tensor& t = tensor(f, middle);
          t = t.reshape({t.numel()});
        });
      },
      "IoError", {middle, "has shape"});
  add("NaN weight",
      [=](const Pristine& q) {
        return edit_file(q.model, [&](io::SafetensorsFile& f) {
          tensor(f, middle).data<float>()[1] = std::numeric_limits<float>::quiet_NaN();
        });
      },
      "ValueError", {middle, "nan at element 1"});
  add("Inf weight",
      [=](const Pristine& q) {
        return edit_file(q.model, [&](io::SafetensorsFile& f) {
          tensor(f, last).data<float>()[0] = -std::numeric_limits<float>::infinity();
        });
      },
      "ValueError", {last, "-inf at element 0"});
  // The metadata and the config in it.
  add("metadata value not a string",
      [](const Pristine& q) {
        return edit_json(q.model, [](Json& j) { j["__metadata__"]["update"] = 7; });
      },
      "IoError", {"__metadata__ value of \"update\" must be a string"});
  add("metadata 'update' not an integer",
      [](const Pristine& q) {
        return edit_file(q.model, [](io::SafetensorsFile& f) { f.metadata["update"] = "7x"; });
      },
      "IoError", {"'update' is not an integer"});
  add("config metadata missing",
      [](const Pristine& q) {
        return edit_file(q.model, [](io::SafetensorsFile& f) { f.metadata.erase("config"); });
      },
      "ConfigError", {"no model config"});
  add("config not JSON",
      [](const Pristine& q) {
        return edit_file(q.model,
                         [](io::SafetensorsFile& f) { f.metadata["config"] = "{\"type\": rnn"; });
      },
      "ConfigError", {"model config", "malformed JSON"});
  add("config of the wrong type (string size)",
      [](const Pristine& q) {
        return edit_config(q.model, [](nlohmann::json& c) { c["dim_emb"] = "4"; });
      },
      "ConfigError", {"\"dim_emb\" must be an integer"});
  add("config of the wrong type (fractional size)",
      [](const Pristine& q) {
        return edit_config(q.model, [](nlohmann::json& c) { c["dim_rnn"] = 3.5; });
      },
      "ConfigError", {"\"dim_rnn\" must be an integer"});
  add("config with an unknown model type",
      [](const Pristine& q) {
        return edit_config(q.model, [](nlohmann::json& c) { c["type"] = "cnn"; });
      },
      "ConfigError", {"type \"cnn\" is not one of"});
  add("config of another model (a transformer's)",
      [](const Pristine& q) {
        return edit_file(q.model, [](io::SafetensorsFile& f) {
          models::ModelConfig t = testing::tiny_transformer(7, 0.0);
          t.dim_emb = 4;
          t.dim_ffn = 4;
          f.metadata["config"] = models::to_json(t);
        });
      },
      "IoError", {"model config"});
  add("config with a vocabulary size mismatch",
      [](const Pristine& q) {
        return edit_config(q.model, [](nlohmann::json& c) { c["vocab_size"] = 9; });
      },
      "IoError", {"encoder.embeddings.weight", "has shape [7, 4]", "needs [9, 4]"});
  add("config describing a 1 GiB model (tiny file)",
      [](const Pristine& q) {
        return edit_config(q.model, [](nlohmann::json& c) {
          c["vocab_size"] = 1 << 16;
          c["dim_emb"] = 1 << 12;
        });
      },
      "IoError", {"('config') describes", "the model is not built"});
  add("config describing a 4 TiB model (tiny file)",
      [](const Pristine& q) {
        return edit_config(q.model, [](nlohmann::json& c) {
          c["vocab_size"] = 1 << 20;
          c["dim_emb"] = 1 << 20;
        });
      },
      "IoError", {"('config') describes", "the model is not built"});
  add("config with a huge position table",
      [](const Pristine& q) {
        return edit_config(q.model,
                           [](nlohmann::json& c) { c["max_positions"] = int64_t{1} << 40; });
      },
      "ConfigError", {"max_positions = 1099511627776 exceeds"});
  return k;
}

// Training states: what load_train_state adds on top of the model checks.
std::vector<Kind> state_kinds() {
  const std::string first = pristine().first;
  std::vector<Kind> k;
  const auto add = [&](std::string name, std::function<Bytes(const Pristine&)> fn,
                       std::string error, std::vector<std::string> fragments) {
    k.push_back({std::move(name), Loader::State, bytes(std::move(fn)), std::move(error),
                 std::move(fragments)});
  };
  const auto edit = [](const std::function<void(io::SafetensorsFile&)>& fn) {
    return [fn](const Pristine& q) { return edit_file(q.state, fn); };
  };
  add("state: Adam moment missing", edit([=](io::SafetensorsFile& f) {
        std::erase_if(f.tensors, [&](const auto& t) { return t.first == "adam.v." + first; });
      }),
      "IoError", {"adam.v." + first, "is missing"});
  add("state: NaN Adam moment", edit([=](io::SafetensorsFile& f) {
        tensor(f, "adam.m." + first).data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
      }),
      "ValueError", {"adam.m." + first});
  add("state: negative second moment",
      edit([=](io::SafetensorsFile& f) { tensor(f, "adam.v." + first).data<float>()[2] = -1; }),
      "ValueError", {"adam.v." + first, "-1 at element 2", "never negative"});
  add("state: metadata key missing",
      edit([](io::SafetensorsFile& f) { f.metadata.erase("data.fingerprint"); }), "IoError",
      {"'data.fingerprint' is missing"});
  add("state: adam_step out of range",
      edit([](io::SafetensorsFile& f) { f.metadata["adam_step"] = "99"; }), "IoError",
      {"'adam_step' = 99"});
  add("state: not a training state (a model file)", [](const Pristine& q) { return q.model; },
      "IoError", {"not a qkv training state"});
  add("state: config describing a 4 TiB model", edit([](io::SafetensorsFile& f) {
        nlohmann::json c = nlohmann::json::parse(f.metadata.at("config"));
        c["vocab_size"] = 1 << 20;
        c["dim_emb"] = 1 << 20;
        f.metadata["config"] = c.dump();
      }),
      "IoError", {"('config') describes", "3 values each"});
  return k;
}

std::string error_type(const std::exception& e) {
  if (dynamic_cast<const IoError*>(&e)) return "IoError";
  if (dynamic_cast<const ConfigError*>(&e)) return "ConfigError";
  if (dynamic_cast<const ValueError*>(&e)) return "ValueError";
  if (dynamic_cast<const ResourceError*>(&e)) return "ResourceError";
  if (dynamic_cast<const Error*>(&e)) return "qkv::Error";
  return "std::exception (untyped)";
}

void load(Loader loader, const fs::path& path) {
  if (loader == Loader::Model)
    load_model(path);
  else
    load_train_state(path, AdamOptions{});
}

// What loading `path` throws: {type, message}; {"none", ""} when it loads.
std::pair<std::string, std::string> outcome(Loader loader, const fs::path& path) {
  try {
    load(loader, path);
  } catch (const std::exception& e) {
    return {error_type(e), e.what()};
  }
  return {"none", ""};
}

TEST(MalformedModel, ThePristineFilesLoad) {
  const fs::path dir = testing::test_dir();
  write_bytes(dir / "model.safetensors", pristine().model);
  write_bytes(dir / "state.safetensors", pristine().state);
  EXPECT_EQ(load_model(dir / "model.safetensors").info.config, tiny_config());
  EXPECT_EQ(load_train_state(dir / "state.safetensors", AdamOptions{}).adam.step_count(), 3);
}

TEST(MalformedModel, EveryKindIsATypedErrorNamingTheFileAndTheTensorOrKey) {
  const fs::path dir = testing::test_dir();
  std::vector<Kind> kinds = model_kinds();
  for (Kind& s : state_kinds()) kinds.push_back(std::move(s));
  ASSERT_GE(kinds.size(), 26u);
  int rejected = 0;
  for (size_t i = 0; i < kinds.size(); ++i) {
    const Kind& kind = kinds[i];
    const fs::path path = dir / ("kind" + std::to_string(i) + ".safetensors");
    kind.make(path);
    const auto [type, message] = outcome(kind.loader, path);
    std::cout << "[kind] " << kind.name << " | " << type << " | "
              << message.substr(0, std::min<size_t>(message.size(), 150)) << "\n";
    EXPECT_EQ(type, kind.error) << kind.name << ": " << message;
    EXPECT_NE(message.find(path.string()), std::string::npos) << kind.name << ": " << message;
    for (const std::string& f : kind.fragments)
      EXPECT_NE(message.find(f), std::string::npos)
          << kind.name << ": '" << f << "' not in: " << message;
    rejected += type == kind.error ? 1 : 0;
  }
  std::cout << "[kinds] " << rejected << " of " << kinds.size()
            << " malformed kinds rejected with the contract's typed error\n";
}

// Cuts the file `full` at every byte through `loader`: each must be an IoError naming it.
void expect_every_truncation_rejected(const Bytes& full, Loader loader, const char* what) {
  const fs::path path = testing::test_dir() / "cut.safetensors";
  write_bytes(path, full);
  size_t rejected = 0;
  // Longest first, each cut shrinking the file in place: rewriting it from empty every
  // time makes ext4 flush it to disk each time (auto_da_alloc), 4 ms a cut.
  for (size_t n = full.size(); n-- > 0;) {
    fs::resize_file(path, n);
    const auto [type, message] = outcome(loader, path);
    const bool ok = type == "IoError" && message.find(path.string()) != std::string::npos;
    EXPECT_TRUE(ok) << what << " cut at byte " << n << ": " << type << ": " << message;
    rejected += ok ? 1 : 0;
  }
  std::cout << "[truncation] " << what << ": " << rejected << " of " << full.size()
            << " cuts rejected with IoError\n";
  EXPECT_EQ(rejected, full.size());
}

TEST(MalformedModel, EveryTruncationOfAModelFileIsAnIoError) {
  expect_every_truncation_rejected(pristine().model, Loader::Model, "model file");
}

TEST(MalformedModel, EveryTruncationOfATrainingStateIsAnIoError) {
  expect_every_truncation_rejected(pristine().state, Loader::State, "training state");
}

}  // namespace
}  // namespace qkv::train

// Model files: a trained Seq2Seq on disk, loadable without the trainer.
//
//   DIR/model.safetensors        every parameter by name, float32; metadata: the ModelConfig
//                                as JSON ("config"), the qkv version, the vocabulary file
//                                name and its VocabStamp ("vocab_fingerprint",
//                                "vocab_size", "vocab_{pad,unk,bos,eos}_id"), the update
//                                it was saved at. Loads on its own
//                                (translation) and from Python (safetensors, numpy).
//   DIR/model.best.safetensors   the same, for the best validation score so far.
//   DIR/vocab.spm                the SentencePiece model the ids refer to.
//
// Written with io::save_safetensors (temporary file, fsync, rename): a crash leaves the
// previous file whole. Nothing non-finite is ever written: saving checks first and throws.
//
// Loading validates against the model config before anything is used: a tensor missing
// or extra, a dtype or shape that differs, a non-finite value, broken config JSON. Errors
// name the file and the tensor or key:
//   IoError      unreadable or malformed file (truncated, bad header, ...), a tensor
//                missing or extra, a dtype or shape that differs from the config's model,
//                a config describing a model over twice the size of the file's tensors
//                (refused before that model is built: a file cannot make qkv allocate far
//                more than its own size);
//   ConfigError  the config JSON is malformed or out of range (e.g. max_positions above
//                kMaxPositionsLimit), or belongs to another model;
//   ValueError   a non-finite value (NaN/Inf) in a parameter.
// The training state (optimizer moments, progress) is train's: qkv/train/checkpoint.h.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "qkv/models/seq2seq.h"

namespace qkv::models {

inline constexpr const char* kModelFile = "model.safetensors";
inline constexpr const char* kBestModelFile = "model.best.safetensors";
inline constexpr const char* kVocabFile = "vocab.spm";

// "0.1.0": the version written into every file.
std::string qkv_version();

// Which vocabulary a model was trained with. The size alone is not enough: a vocab.spm
// replaced by another of the same size loads and translates into garbage. The loader
// that has the vocabulary compares (decode/vocab_stamp.h); models never read it.
struct VocabStamp {
  std::string fingerprint;  // data::Vocab::fingerprint(), e.g. "fnv1a64:0123456789abcdef"
  int64_t size = 0;
  int64_t pad_id = 0, unk_id = 0, bos_id = 0, eos_id = 0;
  bool operator==(const VocabStamp&) const = default;
};

// What a model file says about itself besides its tensors.
struct ModelFileInfo {
  ModelConfig config;
  std::string qkv_version;
  std::string vocab_file;  // relative to the model file's directory
  int64_t update = 0;      // training update it was saved at (0: not from training)
  // nullopt: a file written before stamps (qkv 0.1.0 before this field) or elsewhere.
  std::optional<VocabStamp> vocab_stamp;
};

// Writes every parameter of `model` (each once; tied names are stored under the name
// that owns them) to `path` as float32, with the metadata above (the config is taken from
// the model; the vocabulary's stamp when given: training always gives it). ValueError
// naming the parameter and element if any value is NaN/Inf, and then nothing is written;
// IoError if writing fails (the previous file stays).
void save_model(const Seq2Seq& model, const std::filesystem::path& path,
                const std::string& vocab_file = kVocabFile, int64_t update = 0,
                const std::optional<VocabStamp>& vocab_stamp = std::nullopt);

// The metadata of a model file, its config validated (ConfigError naming the file).
ModelFileInfo read_model_info(const std::filesystem::path& path);

// A model built from the config stored in `path`, with the file's parameters (see the
// errors above). `seed` seeds the model's dropout (initial values are all overwritten).
struct LoadedModel {
  std::unique_ptr<Seq2Seq> model;
  ModelFileInfo info;
};
LoadedModel load_model(const std::filesystem::path& path, uint64_t seed = 0);

// Copies the parameters stored in `path` into `model`, whose config must equal the
// file's (ConfigError otherwise). Validates everything before writing into the model, so
// on error the model is unchanged. Returns the file's info.
ModelFileInfo load_parameters(Seq2Seq& model, const std::filesystem::path& path);

// Where a model path leads: a directory holding kModelFile, a file, or nothing usable.
// Lets a front end word its own error (naming its flag) before load_model_path throws.
enum class ModelPathKind { File, Directory, DirectoryWithoutModel, Missing };
ModelPathKind model_path_kind(const std::filesystem::path& path);

// `path` itself for a file, path / kModelFile for a model directory; IoError naming the
// path when neither exists.
std::filesystem::path model_file_at(const std::filesystem::path& path);

}  // namespace qkv::models

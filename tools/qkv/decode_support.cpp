#include "decode_support.h"

#include <iostream>

#include "qkv/base/error.h"

namespace qkv::tool {

namespace fs = std::filesystem;

fs::path checked_model_path(const fs::path& path) {
  switch (models::model_path_kind(path)) {
    case models::ModelPathKind::DirectoryWithoutModel:
      QKV_THROW(IoError, "--model ", path.string(), ": no ", models::kModelFile,
                " in this directory; train one with `qkv train --model ", path.string(),
                "` or pass a model file");
    case models::ModelPathKind::Missing:
      QKV_THROW(IoError, "--model ", path.string(), ": no such model directory or file");
    case models::ModelPathKind::File:
    case models::ModelPathKind::Directory:
      break;
  }
  return path;
}

decode::Translator load_translator(const fs::path& path) {
  return decode::Translator::load(checked_model_path(path));
}

void warn_line(std::string_view command, int64_t line, std::string_view what,
               std::string_view outcome) {
  std::cerr << "qkv " << command << ": warning: line " << line << ": " << what << "; " << outcome
            << "\n";
}

}  // namespace qkv::tool

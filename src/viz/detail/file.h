// Private: replacing a file through a temporary file and a rename.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>

namespace qkv::viz::detail {

// Writes `bytes` to "<path>.tmp.<pid>" in the same directory, fsyncs it and renames it
// over `path`, so a reader sees the old file or the complete new one. On failure the
// temporary file is removed and IoError names `path`, the step and the system's reason.
void replace_file(const std::filesystem::path& path, std::span<const uint8_t> bytes);

}  // namespace qkv::viz::detail

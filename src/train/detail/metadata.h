// Reading and writing the plain values of safetensors metadata (a string -> string map):
// integers in decimal, doubles with 17 significant digits (they read back bit-exactly),
// lists comma-separated. Every read names the file and key when it fails.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace qkv::train::detail {

using Metadata = std::map<std::string, std::string>;

std::string format_double(double value);
std::string format_list(const std::vector<uint64_t>& values);

// IoError "FILE: metadata key 'KEY' is missing" / "... is not an integer: 'x'".
const std::string& get_string(const Metadata& m, const std::string& key,
                              const std::filesystem::path& file);
int64_t get_int(const Metadata& m, const std::string& key, const std::filesystem::path& file);
uint64_t get_uint(const Metadata& m, const std::string& key, const std::filesystem::path& file);
double get_double(const Metadata& m, const std::string& key, const std::filesystem::path& file);
std::vector<uint64_t> get_list(const Metadata& m, const std::string& key,
                               const std::filesystem::path& file);

}  // namespace qkv::train::detail

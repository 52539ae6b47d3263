#include "qkv/base/memory.h"

#include <malloc.h>

#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <system_error>

#include "qkv/base/aligned.h"
#include "qkv/base/error.h"
#include "qkv/base/field_error.h"

namespace qkv {
namespace {

constexpr const char* kEnvLimit = "QKV_MEMORY_LIMIT";

// The first integer in `path`, or 0 when it is absent, unreadable or "max" (no limit).
std::uint64_t read_limit_file(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text)) return 0;
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() ? value : 0;
}

// A cgroup limit of the whole container: v2 first, then v1. v1 reports "no limit" as a
// number near 2^63, which is larger than any physical memory and so never chosen.
std::uint64_t cgroup_limit() {
  if (const std::uint64_t v2 = read_limit_file("/sys/fs/cgroup/memory.max")) return v2;
  return read_limit_file("/sys/fs/cgroup/memory/memory.limit_in_bytes");
}

MemoryLimit compute_limit() {
  MemoryLimit limit{physical_memory_bytes(), "physical memory"};
  const auto lower = [&](std::uint64_t bytes, const char* source) {
    if (bytes > 0 && (limit.bytes == 0 || bytes < limit.bytes)) limit = {bytes, source};
  };
  lower(cgroup_limit(), "the cgroup memory limit");
  if (const char* env = std::getenv(kEnvLimit); env != nullptr && *env != '\0')
    lower(parse_memory_size(env, kEnvLimit), kEnvLimit);
  return limit;
}

}  // namespace

const MemoryLimit& memory_limit() {
  static const MemoryLimit limit = compute_limit();
  return limit;
}

std::uint64_t parse_memory_size(std::string_view text, std::string_view what) {
  const auto bad = [&]() {
    QKV_THROW(ConfigError, what, "='", text,
              "' is not a memory size: use bytes or a number with K, M, G or T (binary units), "
              "e.g. 512M or 1.5G");
  };
  double number = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(begin, end, number, std::chars_format::fixed);
  if (ec != std::errc() || ptr == begin || !std::isfinite(number) || number <= 0) bad();
  std::string_view unit(ptr, std::size_t(end - ptr));
  double scale = 1;
  if (!unit.empty()) {
    const char u = char(std::toupper(static_cast<unsigned char>(unit.front())));
    const std::string_view units = "KMGT";
    const std::size_t power = units.find(u);
    if (power != std::string_view::npos) {
      scale = std::ldexp(1.0, 10 * int(power + 1));
      unit.remove_prefix(1);
    }
  }
  if (!unit.empty() && unit != "B" && unit != "iB" && unit != "b") bad();
  const double bytes = std::floor(number * scale);
  if (bytes < 1 || bytes > std::ldexp(1.0, 62)) bad();
  return std::uint64_t(bytes);
}

std::string format_bytes(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  int unit = 0;
  while (std::fabs(bytes) >= 1024 && unit < 8) {
    bytes /= 1024;
    ++unit;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[unit]);
  return buf;
}

bool keep_freed_memory_for_reuse() noexcept {
  // INT_MAX: mallopt takes an int; ~2 GiB of free heap top before glibc trims it.
  const bool no_mmap = mallopt(M_MMAP_MAX, 0) == 1;
  return mallopt(M_TRIM_THRESHOLD, INT_MAX) == 1 && no_mmap;
}

void check_memory(double bytes, std::string_view what, std::string_view remedy) {
  const MemoryLimit& limit = memory_limit();
  if (limit.bytes == 0 || bytes <= double(limit.bytes)) return;
  QKV_THROW(FieldResourceError, what, " needs about ", format_bytes(bytes), ", more than the ",
            format_bytes(double(limit.bytes)), " qkv may use (", limit.source, "); ", remedy);
}

}  // namespace qkv

#include "qkv/experiment/resources.h"

#include <malloc.h>
#include <sys/resource.h>

#include <fstream>
#include <sstream>
#include <string>

namespace qkv::experiment {

bool reset_peak_rss() {
  // Freed memory that malloc keeps would otherwise count towards the next phase's
  // baseline (and so its peak): the earlier phase's model and optimizer are gone.
  malloc_trim(0);
  std::ofstream clear("/proc/self/clear_refs");
  if (!clear) return false;
  clear << "5";
  clear.flush();
  return clear.good();
}

int64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (!line.starts_with("VmHWM:")) continue;
    std::istringstream in(line.substr(6));
    int64_t kib = 0;
    if (in >> kib) return kib * 1024;
  }
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0) return int64_t(usage.ru_maxrss) * 1024;  // KiB on Linux
  return 0;
}

}  // namespace qkv::experiment

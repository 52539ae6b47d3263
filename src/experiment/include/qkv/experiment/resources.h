// What a phase of a run costs besides time: the peak resident memory of this process.
#pragma once

#include <cstdint>

namespace qkv::experiment {

// Starts a new peak-memory measurement: returns freed heap to the system (malloc_trim)
// and resets the kernel's high-water mark (VmHWM) to the current resident size by
// writing "5" to /proc/self/clear_refs (Linux >= 4.0). False when that is refused (no
// /proc, an old kernel): peak_rss_bytes() then counts from the start of the process.
bool reset_peak_rss();

// The peak resident memory in bytes since the last successful reset_peak_rss() (else
// since the process started): VmHWM of /proc/self/status, or getrusage's ru_maxrss
// where /proc is unavailable; 0 when neither is.
int64_t peak_rss_bytes();

}  // namespace qkv::experiment

// A test hook of gemm_portable(): pretend that no thread can have its packing buffer, so
// that the fallback (each block by ref::gemm) runs. Private to src/kernels and its tests.
#pragma once

namespace qkv::kernels::detail {

void deny_gemm_portable_buffers_for_testing(bool deny) noexcept;

}  // namespace qkv::kernels::detail

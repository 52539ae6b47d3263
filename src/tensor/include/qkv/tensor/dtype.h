// Element types. Compute is float32; float64 runs the reference kernels (gradient
// checks). bf16 is meant to arrive as a storage type: callers name a DType, never a
// C++ type, so adding one does not change their code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace qkv {

enum class DType : uint8_t { F32, F64 };

constexpr std::size_t dtype_size(DType t) noexcept {
  return t == DType::F64 ? 8 : 4;
}
constexpr std::string_view dtype_name(DType t) noexcept {
  return t == DType::F64 ? "f64" : "f32";
}

template <class T>
inline constexpr bool kIsDTypeScalar = false;
template <>
inline constexpr bool kIsDTypeScalar<float> = true;
template <>
inline constexpr bool kIsDTypeScalar<double> = true;

template <class T>
requires kIsDTypeScalar<T>
inline constexpr DType dtype_of = std::is_same_v<T, double> ? DType::F64 : DType::F32;

}  // namespace qkv

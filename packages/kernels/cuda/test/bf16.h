// bf16 on the host, for the op tests and the device check (plain C++17, no
// CUDA, no emulator): round to nearest even (no NaN in the data), and widen.
#pragma once

#include <cstdint>
#include <cstring>

namespace ot_test {

inline std::uint16_t to_bf16(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

inline double from_bf16(std::uint16_t b) {
  const std::uint32_t u = std::uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace ot_test

// Shared by the fuzz targets: the entry point every target defines, and a cursor that splits one
// fuzz input into the pieces a target needs (a choice byte, then the rest), so a corpus file stays
// a plain byte string that the replay runner and libFuzzer both read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace ib::fuzz {

class Input {
 public:
  Input(const uint8_t* data, size_t size)
      : rest_(reinterpret_cast<const char*>(data), size) {}
  /// The next byte (0 when none is left), consumed.
  uint8_t byte() {
    if (rest_.empty()) return 0;
    const auto b = static_cast<uint8_t>(rest_.front());
    rest_.remove_prefix(1);
    return b;
  }
  /// Everything not consumed yet.
  std::string_view rest() const { return rest_; }

 private:
  std::string_view rest_;
};

}  // namespace ib::fuzz

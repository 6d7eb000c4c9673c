// SHA-256 (FIPS 180-4), small and dependency-free: used for recipe fingerprints, where a crypto
// library would be a heavy dependency for hashing a few hundred bytes.
#pragma once

#include <string>
#include <string_view>

namespace ib::recipe {

/// The SHA-256 digest of `data` as 64 lowercase hex characters.
std::string sha256_hex(std::string_view data);

}  // namespace ib::recipe

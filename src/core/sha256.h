// SHA-256 (FIPS 180-4) through OpenSSL's libcrypto (EVP interface): recipe and server-configuration
// fingerprints are sha256 over canonical JSON, so they match what Python's hashlib computes.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace ib {

/// The SHA-256 digest of `data` as 64 lowercase hex characters.
///
/// Never fails for valid input: libcrypto's digest calls fail only when the library itself is
/// broken (no SHA-256 implementation loaded, out of memory). That is not an input error a caller
/// could handle, so such a failure prints the OpenSSL error to stderr and aborts the process
/// rather than returning an Expected that every fingerprint caller would have to thread through.
std::string sha256_hex(std::string_view data);

/// The raw 32-byte digest (for seeds drawn from a hash: agentic prompt synthesis). Same failure
/// behaviour as sha256_hex.
std::array<unsigned char, 32> sha256_digest(std::string_view data);

}  // namespace ib

#include "core/sha256.h"

#include <openssl/err.h>
#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>

namespace ib {

namespace {

[[noreturn]] void die(const char* what) {
  char reason[256] = "no OpenSSL error queued";
  if (const unsigned long e = ERR_get_error(); e != 0) ERR_error_string_n(e, reason, sizeof reason);
  std::fprintf(stderr, "inferbench: fatal: libcrypto SHA-256 failed in %s: %s\n", what, reason);
  std::abort();
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  // A default string_view has data() == nullptr; hand libcrypto a valid pointer either way.
  const void* bytes = data.empty() ? static_cast<const void*>("") : data.data();
  if (EVP_Digest(bytes, data.size(), digest, &size, EVP_sha256(), nullptr) != 1) {
    die("EVP_Digest");
  }
  if (size != 32) die("EVP_Digest (unexpected digest size)");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(2 * size, '\0');
  for (unsigned int i = 0; i < size; ++i) {
    out[2 * i] = kHex[digest[i] >> 4];
    out[2 * i + 1] = kHex[digest[i] & 0x0f];
  }
  return out;
}

}  // namespace ib

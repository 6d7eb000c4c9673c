#include "core/sha256.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/opensslv.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

namespace ib {

namespace {

[[noreturn]] void die(const char* what) {
  char reason[256] = "no OpenSSL error queued";
  if (const unsigned long e = ERR_get_error(); e != 0) ERR_error_string_n(e, reason, sizeof reason);
  std::fprintf(stderr, "inferbench: fatal: libcrypto SHA-256 failed in %s: %s\n", what, reason);
  std::abort();
}

}  // namespace

std::array<unsigned char, 32> sha256_digest(std::string_view data) {
  // Fetched once, and one context per thread: EVP_Digest with EVP_sha256() looks the algorithm
  // up and allocates a context on every call, which is most of the cost of a short input (prompt
  // synthesis hashes one short key per 64-token block).
#if OPENSSL_VERSION_MAJOR >= 3
  static const EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
#else
  static const EVP_MD* const md = EVP_sha256();
#endif
  if (md == nullptr) die("EVP_MD_fetch");
  thread_local const std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(),
                                                                            EVP_MD_CTX_free);
  if (ctx == nullptr) die("EVP_MD_CTX_new");
  std::array<unsigned char, 32> out;
  unsigned int size = 0;
  if (EVP_DigestInit_ex(ctx.get(), md, nullptr) != 1) die("EVP_DigestInit_ex");
  // A default string_view has data() == nullptr; hand libcrypto a valid pointer either way.
  const void* bytes = data.empty() ? static_cast<const void*>("") : data.data();
  if (EVP_DigestUpdate(ctx.get(), bytes, data.size()) != 1) die("EVP_DigestUpdate");
  if (EVP_MD_size(md) != 32) die("EVP_DigestFinal_ex (unexpected digest size)");
  if (EVP_DigestFinal_ex(ctx.get(), out.data(), &size) != 1) die("EVP_DigestFinal_ex");
  return out;
}

std::string sha256_hex(std::string_view data) {
  const auto digest = sha256_digest(data);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(2 * digest.size(), '\0');
  for (size_t i = 0; i < digest.size(); ++i) {
    out[2 * i] = kHex[digest[i] >> 4];
    out[2 * i + 1] = kHex[digest[i] & 0x0f];
  }
  return out;
}

}  // namespace ib

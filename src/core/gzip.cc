#include "core/gzip.h"

#include <fmt/format.h>
#include <zlib.h>

namespace ib {

namespace {
constexpr int kGzipWindow = 15 + 16;  // 32 KiB window, gzip header and trailer
}  // namespace

Expected<std::string> gzip_compress(std::string_view data) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, kGzipWindow, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    return Error{"gzip: cannot initialize zlib"};
  }
  std::string out;
  out.resize(deflateBound(&z, static_cast<uLong>(data.size())) + 32);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  const size_t written = out.size() - z.avail_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return Error{fmt::format("gzip: compression failed ({})", rc)};
  out.resize(written);
  return out;
}

Expected<std::string> gzip_decompress(std::string_view gz) {
  std::string out;
  size_t pos = 0;
  while (pos < gz.size()) {
    z_stream z{};
    if (inflateInit2(&z, kGzipWindow) != Z_OK) return Error{"gzip: cannot initialize zlib"};
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data() + pos));
    z.avail_in = static_cast<uInt>(gz.size() - pos);
    char buf[1 << 15];
    int rc = Z_OK;
    while (rc == Z_OK) {
      z.next_out = reinterpret_cast<Bytef*>(buf);
      z.avail_out = sizeof buf;
      rc = inflate(&z, Z_NO_FLUSH);
      out.append(buf, sizeof buf - z.avail_out);
      if (rc == Z_BUF_ERROR && z.avail_in == 0) break;
    }
    const size_t used = (gz.size() - pos) - z.avail_in;
    inflateEnd(&z);
    if (rc != Z_STREAM_END) return Error{"gzip: the data is not a complete gzip stream"};
    pos += used;
  }
  return out;
}

}  // namespace ib

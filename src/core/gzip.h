// gzip (RFC 1952) in memory, with zlib: raw telemetry samples are kept compressed in the run
// folder (`zcat` reads them).
#pragma once

#include <string>
#include <string_view>

#include "core/expected.h"

namespace ib {

/// The gzip file form of `data` (default compression level).
Expected<std::string> gzip_compress(std::string_view data);
/// The data of a gzip file (several members are concatenated, as gunzip does).
Expected<std::string> gzip_decompress(std::string_view gz);

}  // namespace ib

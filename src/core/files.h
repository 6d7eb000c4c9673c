// File helpers: whole-file reads and atomic writes (results are never left half-written).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "core/expected.h"

namespace ib {

/// Reads a whole file. Error names the path and the OS reason.
Expected<std::string> read_file(const std::filesystem::path& path);

/// Writes `content` to `path` atomically: a temporary file in the same folder, fsync, rename.
/// Creates missing parent folders. What is already there decides how: a symbolic link is followed
/// (its target is replaced, the link kept); a character device or a named pipe (/dev/null,
/// /dev/stdout, a FIFO) is written through, never replaced (a FIFO nobody reads is an error); a
/// folder, socket or block device is refused. Error names the path and the OS reason.
Status write_file_atomic(const std::filesystem::path& path, std::string_view content);

/// Absolute path of the running executable (/proc/self/exe).
std::filesystem::path self_executable();

}  // namespace ib

#include "core/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

namespace ib {

Expected<std::string> read_file(const std::filesystem::path& path) {
  // POSIX reads: a stream's read error (a /proc file whose process just ended) is an exception in
  // libstdc++'s filebuf or, through operator<<, a silently short result.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error(fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return io_error(fmt::format("{}: read error: {}", path.string(), std::strerror(err)));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

namespace {

namespace fs = std::filesystem;

// Writes all of `content` to `fd`; errno's text on failure.
std::optional<std::string> write_all(int fd, std::string_view content) {
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::string(std::strerror(errno));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return std::nullopt;
}

// A character device or a FIFO (/dev/null, /dev/stdout, a named pipe): written through, never
// replaced. A FIFO nobody reads is an error, not a hang.
Status write_through(const fs::path& path, bool fifo, std::string_view content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | (fifo ? O_NONBLOCK : 0));
  if (fd < 0) {
    if (fifo && errno == ENXIO) {
      return io_error(fmt::format("{}: a named pipe that nobody reads", path.string()));
    }
    return io_error(fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
  }
  if (fifo) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  const auto failed = write_all(fd, content);
  ::close(fd);
  if (failed) return io_error(fmt::format("{}: write failed: {}", path.string(), *failed));
  return Status::Ok();
}

// The file a path names once its symbolic links are followed (a dangling link names the file
// it would create).
Expected<fs::path> follow_links(const fs::path& path) {
  fs::path target = path;
  struct stat st {};
  for (int hops = 0; ::lstat(target.c_str(), &st) == 0 && S_ISLNK(st.st_mode); ++hops) {
    if (hops == 40) {
      return io_error(fmt::format("{}: too many levels of symbolic links", path.string()));
    }
    std::error_code ec;
    const fs::path next = fs::read_symlink(target, ec);
    if (ec) return io_error(fmt::format("{}: {}", target.string(), ec.message()));
    target = next.is_absolute() ? next : target.parent_path() / next;
  }
  return target;
}

// Temporary file, fsync, rename over `path`.
Status replace_atomically(const fs::path& path, std::string_view content) {
  std::error_code ec;
  if (path.has_parent_path()) {
    fs::create_directories(path.parent_path(), ec);
    if (ec) {
      return io_error(fmt::format("{}: cannot create folder: {}", path.string(), ec.message()));
    }
  }
  std::string tmp = path.string() + fmt::format(".tmp.{}", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error(fmt::format("{}: cannot create: {}", tmp, std::strerror(errno)));
  if (const auto failed = write_all(fd, content)) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return io_error(fmt::format("{}: write failed: {}", tmp, *failed));
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return io_error(fmt::format("{}: fsync/close failed: {}", tmp, std::strerror(err)));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return io_error(fmt::format("{}: rename failed: {}", path.string(), std::strerror(err)));
  }
  return Status::Ok();
}

}  // namespace

Status write_file_atomic(const std::filesystem::path& path, std::string_view content) {
  auto target = follow_links(path);
  if (!target) return target.error();
  struct stat st {};
  if (::stat(target->c_str(), &st) != 0) return replace_atomically(*target, content);
  if (S_ISREG(st.st_mode)) return replace_atomically(*target, content);
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
    return write_through(*target, S_ISFIFO(st.st_mode), content);
  }
  if (S_ISDIR(st.st_mode)) {
    return io_error(fmt::format("{}: is a folder; name a file to write", path.string()));
  }
  return io_error(fmt::format("{}: not a regular file (a socket or block device): not replaced",
                              path.string()));
}

std::filesystem::path self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path("inferbench") : p;
}

}  // namespace ib

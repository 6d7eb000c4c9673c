// A fresh temporary folder, removed with everything in it at destruction (tests, scratch work).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace ib {

class TempDir {
 public:
  /// Creates <tmp>/<prefix>-XXXXXX. An empty path() means the folder could not be created.
  explicit TempDir(std::string_view prefix = "inferbench") {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / (std::string(prefix) + "-XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace ib

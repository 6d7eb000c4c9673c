#include "sim/env.h"

#include <algorithm>
#include <cstdlib>
#include <mutex>

namespace ib::sim {

namespace {

struct EnvReads {
  std::mutex mutex;
  std::vector<std::string> names;
};

EnvReads& reads() {
  static EnvReads r;
  return r;
}

}  // namespace

std::optional<std::string> sim_getenv(const char* name) {
  EnvReads& r = reads();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (std::find(r.names.begin(), r.names.end(), name) == r.names.end()) r.names.emplace_back(name);
  // Under the lock: getenv is not safe against concurrent setenv, and the only writers of our
  // variables are tests on this thread.
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::vector<std::string> env_reads() {
  EnvReads& r = reads();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.names;
}

bool env_was_read(const std::string& name) {
  EnvReads& r = reads();
  std::lock_guard<std::mutex> lock(r.mutex);
  return std::find(r.names.begin(), r.names.end(), name) != r.names.end();
}

void clear_env_reads() {
  EnvReads& r = reads();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.names.clear();
}

}  // namespace ib::sim

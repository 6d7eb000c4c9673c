// Test support: the PostgreSQL server the tests use (scripts/pg-up.sh; docs/store.md). Its URL is
// INFERBENCH_TEST_PG_URL, else the one pg-up.sh wrote to $PG_UP_DIR/url (/tmp/inferbench-pg/url).
// Without a server the tests skip, unless IB_REQUIRE_POSTGRES=1 (CI), where that is a failure.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "store/pg.h"

namespace ib::store {

inline std::optional<std::string> pg_test_server() {
  const char* url = std::getenv("INFERBENCH_TEST_PG_URL");
  if (url && *url) return std::string(url);
  const char* dir = std::getenv("PG_UP_DIR");
  std::ifstream in(std::string(dir && *dir ? dir : "/tmp/inferbench-pg") + "/url");
  std::string line;
  if (in && std::getline(in, line) && is_postgres_url(line)) return line;
  return std::nullopt;
}

inline bool pg_test_server_required() {
  const char* req = std::getenv("IB_REQUIRE_POSTGRES");
  return req != nullptr && std::string(req) == "1";
}

}  // namespace ib::store

/// `var` = the test server's URL; else the test skips (or fails under IB_REQUIRE_POSTGRES=1).
#define REQUIRE_POSTGRES(var)                                                                      \
  const auto var = ::ib::store::pg_test_server();                                                  \
  if (!var) {                                                                                      \
    if (::ib::store::pg_test_server_required()) FAIL() << "no test PostgreSQL (scripts/pg-up.sh)"; \
    GTEST_SKIP() << "no test PostgreSQL server (scripts/pg-up.sh; INFERBENCH_TEST_PG_URL)";        \
  }

// A PostgreSQL URL as a user gives it (--db postgresql://...), and the SQL placeholders the store
// translates (store/pg.h): no input may crash either, and a password in the URL never survives
// its redaction.
#include <cstdlib>
#include <string>

#include "fuzz_util.h"
#include "store/pg.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)ib::store::is_postgres_url(text);
  (void)ib::store::to_pg_placeholders(text);
  const std::string shown = ib::store::redact_pg_url(text);
  // user:PASSWORD@host with a password of its own: the redacted URL keeps none of it.
  const std::string url = "postgresql://u:" + std::string(text.substr(0, 40)) + "x9Q@h/db";
  if (url.find_first_of("@/?#", 15) == url.size() - 5) {
    const std::string r = ib::store::redact_pg_url(url);
    if (r.find("x9Q@") != std::string::npos) std::abort();
  }
  (void)shown;
  return 0;
}

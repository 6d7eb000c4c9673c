// A run folder's unstored.json (sweep/held_writes.h), which --resume reads: no input may crash
// the reader, and what it reads writes back to a file it reads the same.
#include <cstdlib>
#include <string>

#include "core/json_text.h"
#include "fuzz_util.h"
#include "sweep/held_writes.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto h = ib::sweep::held_writes_from_json(text, "unstored.json");
  if (!h) return 0;
  const std::string again = ib::json_text(ib::sweep::to_json(*h));
  auto back = ib::sweep::held_writes_from_json(again, "again");
  if (!back || back->writes.size() != h->writes.size() || back->run_id != h->run_id) std::abort();
  return 0;
}

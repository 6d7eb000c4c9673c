// The writes a sweep holds while its results database cannot be reached (docs/store.md, "When the
// database goes away"), and their file in the run folder, `unstored.json`: the sweep keeps
// measuring, holds each write in order, stores them once the database is back, and keeps the file
// until then, so that a run whose database stayed away (or whose sweep was killed meanwhile) loses
// nothing: `--resume` stores what the file holds before it measures anything.
//
// The file, rewritten whole (atomically) on every change:
//   {"inferbench_unstored": 1, "database": NAME, "run_id": ID, "run": RUN_NAME,
//    "writes": [ {"write": "config", "provisional_id": -1, "config": {...}},
//                {"write": "config_update", "config": {...}},
//                {"write": "point", "point": {...}, "timeslices": [...], "failure": {...}|null,
//                 "check_stored": false},
//                {"write": "failure", "failure": {...}} ]}
// Records are in their `inferbench show --json` form (store::to_json). A server configuration the
// database has not taken yet has a provisional id (negative): the records that name it are stored
// with the id the database gives it.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/expected.h"
#include "store/store.h"

namespace ib::sweep {

struct HeldWrite {
  enum class Kind { kConfig, kConfigUpdate, kPoint, kFailure };
  Kind kind = Kind::kPoint;
  store::ServerConfigRecord config;  // kConfig (its id provisional), kConfigUpdate
  store::PointRecord point;          // kPoint
  std::vector<store::TimesliceRecord> timeslices;
  std::optional<store::FailureRecord> failure;  // kPoint's failure row, or kFailure's
  /// A point that may be stored already (its --resume lookup failed): stored only when the run
  /// has no completed point of its identity.
  bool check_stored = false;
};

struct HeldWrites {
  std::string database;  // as database_name shows it
  int64_t run_id = 0;
  std::string run_name;
  std::vector<HeldWrite> writes;
};

boost::json::object to_json(const HeldWrites& h);
/// The file's text back; errors name `source`, the write and the field
/// ("runs/x/unstored.json: writes[2].point.concurrency: not an integer").
Expected<HeldWrites> held_writes_from_json(std::string_view text, const std::string& source);

/// How many of `writes` are points.
size_t held_points(const std::vector<HeldWrite>& writes);

}  // namespace ib::sweep

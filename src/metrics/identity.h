// What a measurement is, beside the change under test (DESIGN.md §5 "Compare like with like"):
// one list of identity fields, one type that holds their values, and one confounders() that
// `verify`, `tune`, `compare` and `report` all use, so that they name a difference alike.
#pragma once

#include <array>
#include <boost/json.hpp>
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ib::metrics {

enum class IdentityField {
  kModel,
  kImage,
  kHardware,
  kEngine,
  kEngineVersion,
  kPrecision,
  kSpecDecoding,
  kParallelism,
  kRunner,
  kWorkload,
  kToolVersion,
  kHost,
  kTimeScale,
  kValidity,
};

struct IdentityFieldInfo {
  IdentityField field;
  std::string_view key;    // JSON and options: "engine_version"
  std::string_view title;  // tables and prose: "engine version"
  /// A difference in it makes a comparison "confounded" (not evidence for the change) unless
  /// the user accepts it: another model, image or hardware is another measurement.
  bool confounding;
  /// Whether confounders() looks at it: the parallelism is shown but is the recipe's own (the
  /// config key pairs the sides; a different parallelism is the change, not beside it).
  bool compared;
};

/// Every identity field, in the order they are listed wherever they are shown.
inline constexpr std::array<IdentityFieldInfo, 14> kIdentityFields{{
    {IdentityField::kModel, "model", "model", true, true},
    {IdentityField::kImage, "image", "image", true, true},
    {IdentityField::kHardware, "hardware", "hardware", true, true},
    {IdentityField::kEngine, "engine", "engine", false, true},
    {IdentityField::kEngineVersion, "engine_version", "engine version", false, true},
    {IdentityField::kPrecision, "precision", "precision", false, true},
    {IdentityField::kSpecDecoding, "spec_decoding", "spec decoding", false, true},
    {IdentityField::kParallelism, "parallelism", "parallelism", false, false},
    {IdentityField::kRunner, "runner", "runner", false, true},
    {IdentityField::kWorkload, "workload", "workload", false, true},
    {IdentityField::kToolVersion, "tool_version", "tool version", false, true},
    {IdentityField::kHost, "host", "host", false, true},
    {IdentityField::kTimeScale, "time_scale", "time scale", false, true},
    {IdentityField::kValidity, "validity", "validity", false, true},
}};

const IdentityFieldInfo& field_info(IdentityField f);
/// By key ("engine_version"), title ("engine version") or the recipe's kebab-case spelling
/// ("engine-version"; "framework" is the engine); nullopt when it names no identity field.
std::optional<IdentityField> identity_field(std::string_view name);

/// One measurement's identity: a value per field, "" where it is not known.
class Identity {
 public:
  const std::string& get(IdentityField f) const { return values_[index(f)]; }
  void set(IdentityField f, std::string value) { values_[index(f)] = std::move(value); }
  bool operator==(const Identity&) const = default;

  /// The known fields under their keys ("engine_version"), in list order; with `unknown`, every
  /// field (unknown ones as "").
  boost::json::object to_json(bool unknown = false) const;
  /// The inverse of to_json; also reads the kebab-case keys of older files
  /// ("engine-version", "framework"). Keys that name no identity field are ignored.
  static Identity from_json(const boost::json::object& o);

 private:
  static size_t index(IdentityField f) { return static_cast<size_t>(f); }
  std::array<std::string, kIdentityFields.size()> values_{};
};

/// A server configuration's identity, the one derivation that `verify`, `tune`, `compare` and
/// `report` share: from its recipe row (the matrix's fields: model, image, framework, precision,
/// runner, hardware, spec-decoding, parallelism) and the settings its server showed (engine,
/// engine-version, hardware). Hardware: the row's `hardware` (a runners file), else the setting
/// `hardware` (serve-sim), else the runner label. Spec decoding is "none" unless the row says.
Identity config_identity(const boost::json::object& row, const boost::json::object& settings);

/// "TP8", "TP8 EP8 DPA"; disaggregated: "P2xTP4 D1xTP8" (workers x parallelism per role).
std::string parallelism_of(const boost::json::object& row);

/// One identity field whose known values differ between two sides.
struct Confounder {
  IdentityField field;
  std::set<std::string> base, head;  // the known values seen on each side
  bool confounding = false;          // field_info(field).confounding
  bool accepted = false;             // the user accepted it (compare --accept-confounder)

  std::string_view key() const { return field_info(field).key; }
  std::string_view title() const { return field_info(field).title; }
  /// "engine version: 0.10.1 vs 0.11.0" (a side's values joined by ", "; none known: "unknown").
  std::string text() const;
  boost::json::object to_json() const;
  /// The inverse of to_json; also reads the "FIELD: A vs B" text older files stored. nullopt
  /// when it names no identity field.
  static std::optional<Confounder> from_json(const boost::json::value& v);
};

/// The fields of `fields` whose sets of known values differ between the base side and the head
/// side (each side: the identities of its measurements), in list order. A field unknown on both
/// sides is no confounder; known on one side only, it is (the other side's value cannot be
/// shown to be the same).
std::vector<Confounder> confounders(const std::vector<Identity>& base,
                                    const std::vector<Identity>& head,
                                    const std::set<IdentityField>& skip = {});

}  // namespace ib::metrics

#include "sim/hardware.h"

#include <boost/beast/core/string.hpp>

#include <algorithm>
#include <array>
#include <cctype>

namespace ib::sim {

namespace {


// Sources (docs/perf-model.md "Hardware" has the links):
//  H100/H200: NVIDIA H100 and H200 datasheets (SXM): dense BF16 989 TFLOPS, FP8 1979 TFLOPS
//    (the datasheets quote twice that "with sparsity"); NVLink 4 900 GB/s bidirectional.
//  B200/B300: NVIDIA HGX B200/B300 specifications as tabulated by G. Lockwood: dense BF16 2.25,
//    FP8 4.5, FP4 9 (B200) and ~13 (B300) PFLOPS; NVLink 5 1.8 TB/s bidirectional.
//  MI300X/MI325X: AMD Instinct datasheets: BF16 1307.4, FP8 2614.9 TFLOPS dense; 7 Infinity
//    Fabric links of 128 GB/s bidirectional each (896 GB/s).
//  MI355X: AMD Instinct MI355X: BF16 2.5, FP8 5.0, FP4 10 PFLOPS dense; 288 GB HBM3E at 8 TB/s;
//    7 links of 153.6 GB/s bidirectional (1075 GB/s).
//  Board power (TDP), for serve-sim's --power-model: H100/H200 SXM 700 W (datasheets, "up to
//    700W"), B200 1000 W and B300 1100 W (HGX per-GPU figures), MI300X 750 W, MI325X 1000 W,
//    MI355X 1400 W (AMD Instinct datasheets).
// clang-format off
constexpr std::array<HardwareSpec, 7> kPresets = {{
    {"H100", "sm90", Vendor::kNvidia, 80, 3.35, 989, 1979, 0, Fabric::kSwitch, 450, 8, 700, "NVIDIA H100 80GB HBM3"},
    {"H200", "sm90", Vendor::kNvidia, 141, 4.8, 989, 1979, 0, Fabric::kSwitch, 450, 8, 700, "NVIDIA H200"},
    {"B200", "sm100", Vendor::kNvidia, 180, 8.0, 2250, 4500, 9000, Fabric::kSwitch, 900, 8, 1000, "NVIDIA B200"},
    {"B300", "sm103", Vendor::kNvidia, 288, 8.0, 2250, 4500, 13000, Fabric::kSwitch, 900, 8, 1100, "NVIDIA B300"},
    {"MI300X", "gfx942", Vendor::kAmd, 192, 5.3, 1307.4, 2614.9, 0, Fabric::kMesh, 64, 8, 750, "AMD Instinct MI300X"},
    {"MI325X", "gfx942", Vendor::kAmd, 256, 6.0, 1307.4, 2614.9, 0, Fabric::kMesh, 64, 8, 1000, "AMD Instinct MI325X"},
    {"MI355X", "gfx950", Vendor::kAmd, 288, 8.0, 2516.6, 5033.2, 10066.3, Fabric::kMesh, 76.8,
     8, 1400, "AMD Instinct MI355X"},
}};
// clang-format on

}  // namespace

std::string_view to_string(Precision p) {
  switch (p) {
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp8:
      return "fp8";
    case Precision::kFp4:
      return "fp4";
  }
  return "bf16";
}

std::optional<Precision> parse_precision(std::string_view text) {
  for (std::string_view s : {"bf16", "bfloat16", "auto"}) {
    if (boost::beast::iequals(text, s)) return Precision::kBf16;
  }
  for (std::string_view s : {"fp8", "float8"}) {
    if (boost::beast::iequals(text, s)) return Precision::kFp8;
  }
  for (std::string_view s : {"fp4", "mxfp4", "nvfp4"}) {
    if (boost::beast::iequals(text, s)) return Precision::kFp4;
  }
  return std::nullopt;
}

double bytes_per_weight(Precision p) {
  switch (p) {
    case Precision::kBf16:
      return 2.0;
    case Precision::kFp8:
      return 1.0;
    case Precision::kFp4:
      return 0.5 + 1.0 / 32.0;
  }
  return 2.0;
}

double HardwareSpec::peak_flops(Precision p) const {
  switch (compute_precision(p)) {
    case Precision::kFp4:
      return fp4_tflops * 1e12;
    case Precision::kFp8:
      return fp8_tflops * 1e12;
    case Precision::kBf16:
      return bf16_tflops * 1e12;
  }
  return bf16_tflops * 1e12;
}

Precision HardwareSpec::compute_precision(Precision p) const {
  if (p == Precision::kFp4 && fp4_tflops <= 0) return Precision::kBf16;
  if (p == Precision::kFp8 && fp8_tflops <= 0) return Precision::kBf16;
  return p;
}

double HardwareSpec::collective_bytes_per_s(int n) const {
  if (n <= 1) return link_gb_s * 1e9;
  if (fabric == Fabric::kSwitch) return link_gb_s * 1e9;
  return link_gb_s * 1e9 * std::min(n - 1, gpus_per_node - 1);
}

double HardwareSpec::memory_bytes() const {
  return memory_gib * 1024.0 * 1024.0 * 1024.0;
}

std::span<const HardwareSpec> hardware_presets() {
  return kPresets;
}

const HardwareSpec* find_hardware(std::string_view name) {
  for (const HardwareSpec& h : kPresets) {
    if (boost::beast::iequals(h.name, name)) return &h;
  }
  return nullptr;
}

std::string hardware_names() {
  std::string out;
  for (const HardwareSpec& h : kPresets) {
    if (!out.empty()) out += ", ";
    out += h.name;
  }
  return out;
}

}  // namespace ib::sim

// Accelerator presets of the performance model: memory, bandwidth, peak dense throughput per
// precision and the scale-up fabric, from vendors' public specifications. Every number and its
// source is listed in docs/perf-model.md "Hardware".
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ib::sim {

enum class Vendor { kNvidia, kAmd };

/// Numeric format of weights (and of the GEMMs that use them when the hardware supports it).
enum class Precision { kBf16, kFp8, kFp4 };

/// "bf16", "fp8", "fp4".
std::string_view to_string(Precision p);
/// Parses "bf16" (also "bfloat16", "auto"), "fp8", "fp4" (also "mxfp4", "nvfp4"); nullopt else.
std::optional<Precision> parse_precision(std::string_view text);
/// Bytes per stored weight including block scales: BF16 2, FP8 1 (per-block scales are
/// negligible), FP4 0.53125 (4 bits plus one 8-bit scale per 32 values, as MXFP4).
double bytes_per_weight(Precision p);

/// How GPUs of one node reach each other.
enum class Fabric {
  kSwitch,  // NVLink through NVSwitch: every GPU has its full link bandwidth to any set of peers
  kMesh,    // AMD Infinity Fabric: one point-to-point link per peer pair (fully connected)
};

struct HardwareSpec {
  std::string_view name;  // preset name, e.g. "H200"
  std::string_view arch;  // "sm90", "sm100", "sm103", "gfx942", "gfx950"
  Vendor vendor;
  double memory_gib;   // HBM capacity per GPU
  double hbm_tb_s;     // peak HBM bandwidth, 1e12 bytes/s
  double bf16_tflops;  // peak dense (no sparsity) tensor throughput, 1e12 FLOP/s
  double fp8_tflops;
  double fp4_tflops;  // 0: no FP4 tensor cores (FP4 weights are dequantized to BF16)
  Fabric fabric;
  double link_gb_s;   // kSwitch: per GPU, one direction; kMesh: per peer link, one direction
  int gpus_per_node;  // GPUs in one scale-up domain (largest tensor-parallel size)
  double tdp_w;       // board power limit (TDP), watts
  std::string_view product;  // the name the driver reports (nvidia-smi name, DCGM modelName)

  /// Peak dense throughput for GEMMs on weights of precision `p`, in FLOP/s: FP4 falls back to
  /// BF16 where there are no FP4 units (weight-only dequantization, as Marlin-style kernels do).
  double peak_flops(Precision p) const;
  /// The precision the GEMMs of weights `p` run at (p, or BF16 when unsupported).
  Precision compute_precision(Precision p) const;
  /// One-direction bandwidth (bytes/s) a GPU has to the other `n - 1` GPUs of a collective over
  /// `n` GPUs: the NVSwitch port, or the sum of its n - 1 mesh links.
  double collective_bytes_per_s(int n) const;
  /// Memory capacity in bytes.
  double memory_bytes() const;
};

/// Every hardware preset, in documentation order.
std::span<const HardwareSpec> hardware_presets();

/// The preset named `name` (case-insensitive), or nullptr.
const HardwareSpec* find_hardware(std::string_view name);

/// "H100, H200, ..." for error messages and --help.
std::string hardware_names();

}  // namespace ib::sim

#!/usr/bin/env python3
"""Writes the telemetry fixtures of this folder (README.md says what each one is).

The files imitate the documented output formats of nvidia-smi and amd-smi; no GPU produced them.
Values are deterministic (a fixed seed), so rerunning the script reproduces the files byte for
byte. Run from anywhere: python3 tests/data/telemetry/make_fixtures.py
"""

import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))


def nvidia_power(gpu, i, rng):
    # Idle for two samples, a ramp over two, then load with a little noise per GPU.
    idle = 118.0 + 3.0 * gpu
    load = 640.0 - 6.0 * gpu
    if i < 2:
        base = idle
    elif i < 4:
        base = idle + (load - idle) * (i - 1) / 3.0
    else:
        base = load
    return base + rng.uniform(-8.0, 8.0)


def nvidia_rows(iterations, skip, rng, na=None):
    """(seconds after 22:11:00.000, gpu, cells) per row; `skip` drops iterations (a stall)."""
    rows = []
    for i in range(iterations):
        if i in skip:
            continue
        t = i * 1.002  # nvidia-smi -l 1 drifts by a few ms per loop
        for gpu in range(8):
            p = nvidia_power(gpu, i, rng)
            util = 0 if i < 2 else 100 - (rng.random() < 0.2) * rng.randint(1, 6)
            mem = 76231 + 40 * gpu if i >= 1 else 520
            clock = 1980 if i >= 2 else 345
            temp = 34 + gpu % 3 + (i // 4 if i >= 2 else 0)
            power_cell = "[N/A]" if na and na(gpu, i) else f"{p:.2f} W"
            rows.append((t, gpu, [power_cell, f"{util} %", f"{mem} MiB", f"{clock} MHz", f"{temp}"]))
    return rows


def stamp(seconds):
    whole = int(seconds)
    ms = round((seconds - whole) * 1000)
    return f"2026/07/03 22:11:{whole:02d}.{ms:03d}"


def write_nvidia(name, rows, nounits=False):
    header = "timestamp, index, power.draw [W], utilization.gpu [%], memory.used [MiB], " \
             "clocks.current.sm [MHz], temperature.gpu"
    lines = [header]
    for n, (t, gpu, cells) in enumerate(rows):
        if nounits:
            cells = [c.split(" ")[0] if not c.startswith("[") else c for c in cells]
        lines.append(", ".join([stamp(t), str(gpu)] + cells))
    with open(os.path.join(HERE, name), "w", newline="") as f:
        f.write("\n".join(lines) + "\n")


def main():
    rng = random.Random(13)
    write_nvidia("nvidia_smi_8gpu.csv", nvidia_rows(21, set(), rng))
    rng = random.Random(14)
    # Iterations 8 to 11 missing: samples at 7.014 s and then 12.024 s, a 5.010 s gap.
    write_nvidia("nvidia_smi_gap.csv", nvidia_rows(21, {8, 9, 10, 11}, rng))
    rng = random.Random(15)
    # GPU 5 reports [N/A] for three samples in the middle; written with --format=csv,nounits.
    rows = nvidia_rows(21, set(), rng, na=lambda gpu, i: gpu == 5 and 9 <= i <= 11)
    write_nvidia("nvidia_smi_na_power.csv", rows, nounits=True)

    # amd-smi metric -p -u -E -w 1 --csv on 8 MI300X: to stdout every iteration prints its own
    # header and rows (csv.DictWriter, \r\n line ends) and print() adds an empty line.
    rng = random.Random(16)
    t0 = 1783116660  # 2026-07-03 22:11:00 UTC
    header = ("timestamp,gpu,socket_power,gfx_voltage,soc_voltage,mem_voltage,throttle_status,"
              "power_management,gfx_activity,umc_activity,mm_activity,total_energy_consumption")
    energy = [4183520.5 + 977.25 * g for g in range(8)]
    last = [None] * 8
    out = []
    for i in range(21):
        block = [header]
        for gpu in range(8):
            p = (160 + 4 * gpu if i < 2 else 712 - 5 * gpu) + rng.randint(-9, 9)
            if last[gpu] is not None:
                # The accumulator counts the real (continuous) energy; 1 Hz samples of it differ
                # from the trapezoid of the sampled power by about a percent.
                energy[gpu] += (last[gpu] + p) / 2.0 * 1.0 * (1 + rng.uniform(0.005, 0.015))
            last[gpu] = p
            act = 0 if i < 2 else rng.randint(92, 100)
            umc = 0 if i < 2 else rng.randint(20, 45)
            block.append(f"{t0 + i},{gpu},{p},N/A,N/A,N/A,N/A,ENABLED,{act},{umc},0,"
                         f"{energy[gpu]:.3f}")
        out.append("\r\n".join(block) + "\r\n\n")
    with open(os.path.join(HERE, "amd_smi_metric.csv"), "w", newline="") as f:
        f.write("".join(out))


if __name__ == "__main__":
    main()

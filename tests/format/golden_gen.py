#!/usr/bin/env python3
"""Golden data for tests/format/golden_test.cpp, computed with ml_dtypes and numpy (independent
implementations of float8_e4m3fn, float4_e2m1fn, bfloat16 and IEEE float16).

usage: golden_gen.py OUTPUT_PATH

Output (little-endian):
  b"FP4KGLD1"
  u64 n_inputs, u64 n_special       (the first n_special inputs are the hand-picked boundary values,
                                     the rest are random)
  f32[n_inputs]   inputs
  u8 [n_inputs]   ml_dtypes float8_e4m3fn bytes of astype()
  u8 [n_inputs]   ml_dtypes float4_e2m1fn 4-bit codes of astype()
  u16[n_inputs]   ml_dtypes bfloat16 bits of astype()
  u16[n_inputs]   numpy float16 bits of astype()
  f32[256]        float8_e4m3fn code -> float32
  f32[16]         float4_e2m1fn code -> float32
  f32[65536]      bfloat16 bits -> float32
  f32[65536]      float16 bits -> float32
Exit status 3 (and a message) when numpy or ml_dtypes cannot be imported.
"""
import struct
import sys

try:
    import numpy as np
    import ml_dtypes
except ImportError as e:  # the C++ test turns this into a skip
    print(f"golden_gen.py: cannot import numpy/ml_dtypes: {e}", file=sys.stderr)
    sys.exit(3)

F32 = np.float32


def with_neighbours(values, ulps=2):
    """values and their float32 neighbours up to `ulps` steps either way, both signs."""
    v = np.asarray(values, dtype=F32)
    out = [v]
    up, down = v.copy(), v.copy()
    for _ in range(ulps):
        up = np.nextafter(up, F32(np.inf), dtype=F32)
        down = np.nextafter(down, F32(-np.inf), dtype=F32)
        out += [up, down]
    allv = np.concatenate(out)
    return np.concatenate([allv, -allv])


def grid_points(grid):
    """A sorted grid of non-negative values -> the grid values and every midpoint (exact in f32)."""
    g = np.asarray(sorted(set(float(x) for x in grid)), dtype=np.float64)
    mids = (g[:-1] + g[1:]) / 2
    both = np.concatenate([g, mids])
    assert np.all(both.astype(F32).astype(np.float64) == both), "midpoint not exact in float32"
    return both.astype(F32)


def special_inputs(rng):
    parts = []
    # E4M3: every finite non-negative value, every midpoint, the saturation region.
    e4m3 = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(F32)
    e4m3_pos = e4m3[(e4m3 >= 0) & np.isfinite(e4m3)]
    parts.append(with_neighbours(grid_points(list(e4m3_pos) + [480.0, 512.0])))
    parts.append(with_neighbours([2.0**-12, 2.0**-11, 2.0**-10, 2.0**-9, 1.5 * 2.0**-10, 2.0**-6, 2.0**-7,
                                  416.0, 432.0, 440.0, 448.0, 456.0, 464.0, 472.0, 480.0, 496.0, 500.0,
                                  1024.0, 65504.0], ulps=4))
    parts.append(np.linspace(400.0, 520.0, 2401, dtype=F32))
    parts.append(-np.linspace(400.0, 520.0, 2401, dtype=F32))
    # E2M1: every value, every midpoint (0.25, 0.75, ..., 5), the region around 6 and beyond.
    parts.append(with_neighbours(grid_points([0, 0.5, 1, 1.5, 2, 3, 4, 6, 8]), ulps=3))
    parts.append(with_neighbours([5.0, 6.0, 6.5, 7.0, 7.5, 12.0], ulps=3))
    parts.append(np.linspace(4.5, 8.0, 1401, dtype=F32))
    parts.append(-np.linspace(4.5, 8.0, 1401, dtype=F32))
    parts.append(np.linspace(-1.0, 1.0, 2001, dtype=F32))
    # BF16 ties: every exponent, random upper bits, lower 16 bits at / around the half-way point.
    bits = []
    for exp in range(0, 255):
        for upper in rng.integers(0, 128, size=4):
            for low in (0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF):
                bits.append((exp << 23) | (int(upper) << 16) | low)
        for upper in (0, 1, 126, 127):  # the even/odd choices at both ends of the mantissa
            for low in (0x7FFF, 0x8000, 0x8001):
                bits.append((exp << 23) | (upper << 16) | low)
    b = np.array(bits, dtype=np.uint32)
    parts.append(b.view(F32))
    parts.append((b | np.uint32(0x80000000)).view(F32))
    # FP16: every finite value and every midpoint (incl. subnormals, 65504 -> 65520 overflow boundary).
    h = np.arange(0x7C00, dtype=np.uint16).view(np.float16).astype(F32)
    parts.append(with_neighbours(grid_points(list(h) + [65536.0]), ulps=1))
    # IEEE specials.
    specials = np.array([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
                         0x7F800001, 0xFF800001, 0x7FBFFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 0x7FA00000,
                         0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF,
                         0x3F800000, 0xBF800000], dtype=np.uint32).view(F32)
    parts.append(specials)
    return np.concatenate(parts).astype(F32)


def random_inputs(rng):
    uniform_bits = rng.integers(0, 2**32, size=500_000, dtype=np.uint64).astype(np.uint32).view(F32)
    mag = np.exp2(rng.uniform(-14.0, 12.0, size=500_000))
    sign = np.where(rng.integers(0, 2, size=500_000) == 1, -1.0, 1.0)
    log_uniform = (mag * sign).astype(F32)
    small = rng.uniform(-8.0, 8.0, size=100_000).astype(F32)
    return np.concatenate([uniform_bits, log_uniform, small])


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    rng = np.random.default_rng(20240611)
    special = special_inputs(rng)
    x = np.concatenate([special, random_inputs(rng)]).astype(F32)
    with np.errstate(all="ignore"):
        import warnings
        warnings.simplefilter("ignore")
        e4m3 = x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
        e2m1 = x.astype(ml_dtypes.float4_e2m1fn).view(np.uint8) & np.uint8(0xF)
        bf16 = x.astype(ml_dtypes.bfloat16).view(np.uint16)
        fp16 = x.astype(np.float16).view(np.uint16)
        dec_e4m3 = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(F32)
        dec_e2m1 = np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn).astype(F32)
        dec_bf16 = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(ml_dtypes.bfloat16).astype(F32)
        dec_fp16 = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(F32)
    with open(sys.argv[1], "wb") as f:
        f.write(b"FP4KGLD1")
        f.write(struct.pack("<QQ", x.size, special.size))
        for arr in (x, e4m3, e2m1, bf16, fp16, dec_e4m3, dec_e2m1, dec_bf16, dec_fp16):
            f.write(np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes())
    return 0


if __name__ == "__main__":
    sys.exit(main())

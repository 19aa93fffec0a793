"""fio's status as its server sends it: FIO_NET_CMD_TS frames, decoded exactly.

With `--status-interval` a fio server sends its client, every interval,
each job's cumulative `struct thread_stat` (stat.h): IO counts, bytes,
runtime, CPU time and the latency histogram, as one TS frame per job
(server.c, fio_server_send_ts), little-endian, a packed C struct whose
layout is fixed per protocol version (server.h, FIO_SERVER_VER, in every
frame's header). fio's client keeps them until the test ends; iofleet's
relay reads them as they pass (fleet/fio_link/live_rounds.py), so a fleet
test has each host's rounds while it runs, the same figures as the
client's final JSON document (checked bucket for bucket on recorded
frames: tests/fixtures/status_frames).
"""

from __future__ import annotations

import struct

import numpy as np

from .status import JobStatus, Totals

# thread_stat's fields up to the last one read here (stat.h of fio 3.33):
# (name, bytes). `sync_stat` is __attribute__((aligned(8))) in a packed
# struct: it starts at the next multiple of 8.
_IO_STAT = 56  # struct io_stat: max, min, samples (u64), mean, S (fio_fp64_t, 16 bytes each)
_PLAT_NR = 29 * 64  # FIO_IO_U_PLAT_NR: latency histogram buckets
_FIELDS_97 = [
    ("name", 128), ("verror", 128), ("error", 4), ("thread_number", 4), ("groupid", 4), ("pid", 4),
    ("description", 256), ("members", 4), ("unified_rw_rep", 4), ("disable_prio_stat", 4),
    ("sync_stat", _IO_STAT), ("clat_stat", 3 * _IO_STAT), ("slat_stat", 3 * _IO_STAT), ("lat_stat", 3 * _IO_STAT),
    ("bw_stat", 3 * _IO_STAT), ("iops_stat", 3 * _IO_STAT),
    ("usr_time", 8), ("sys_time", 8), ("ctx", 8), ("minf", 8), ("majf", 8),
    ("clat_percentiles", 4), ("lat_percentiles", 4), ("slat_percentiles", 4), ("pad", 4),
    ("percentile_precision", 8), ("percentile_list", 20 * 16),
    ("io_u_map", 7 * 8), ("io_u_submit", 7 * 8), ("io_u_complete", 7 * 8),
    ("io_u_lat_n", 10 * 8), ("io_u_lat_u", 10 * 8), ("io_u_lat_m", 12 * 8),
    ("io_u_plat", 3 * 3 * _PLAT_NR * 8),  # [FIO_LAT_CNT: slat, clat, lat][read, write, trim][bucket]
    ("io_u_sync_plat", _PLAT_NR * 8), ("total_io_u", 4 * 8), ("short_io_u", 3 * 8), ("drop_io_u", 3 * 8),
    ("total_submit", 8), ("total_complete", 8), ("io_bytes", 3 * 8), ("runtime", 3 * 8), ("total_run_time", 8),
]
# fio 3.36 (version 101) added `uint64_t job_start` after groupid; nothing
# else changed before total_run_time up to fio 3.42 (version 120).
_FIELDS_101 = _FIELDS_97[:5] + [("job_start", 8)] + _FIELDS_97[5:]


def _offsets(fields: list[tuple[str, int]]) -> dict[str, int]:
    out, at = {}, 0
    for name, size in fields:
        if name == "sync_stat":
            at = -(-at // 8) * 8
        out[name] = at
        at += size
    out["end"] = at
    return out


# Server protocol version → offsets; the fio releases that speak it.
LAYOUTS = {version: _offsets(_FIELDS_97) for version in (97, 99, 100)}  # fio 3.33 – 3.35
LAYOUTS |= {version: _offsets(_FIELDS_101) for version in (101, 103, 107, 111, 113, 120)}  # fio 3.36 – 3.42
SUPPORTED = "fio 3.33 to 3.42: protocol versions 97 to 120"

_FIO_CLAT, _FIO_LAT = 1, 2


def _bucket_values() -> np.ndarray:
    """Each histogram bucket's value in ns, as fio's json+ names it
    (stat.c, plat_idx_to_val: the middle of the bucket's range)."""
    idx = np.arange(_PLAT_NR, dtype=np.int64)
    error_bits = np.maximum((idx >> 6) - 1, 0)
    middle = (1 << (error_bits + 6)) + ((idx % 64) * 2 + 1) * (1 << error_bits) // 2
    return np.where(idx < 128, idx, middle)


_VALUES = _bucket_values()
_U64 = struct.Struct("<Q")
_SAMPLES_MEAN = struct.Struct("<Qd")  # io_stat's samples, then mean's IEEE 754 bits (pack754 of a double)


def decode_job(payload: bytes, version: int) -> JobStatus:
    """One TS frame's job figures (read and write), as fio's JSON status
    gives them: IOs, bytes, total-latency samples and sum, and the latency
    histogram fio's json+ prints (total latency with lat_percentiles, else
    completion latency). Raises ValueError for an unknown version or a
    frame too short for its layout."""
    at = LAYOUTS.get(version)
    if at is None:
        raise ValueError(f"fio server protocol version {version} is not one iofleet decodes "
                         f"(it decodes {SUPPORTED})")
    if len(payload) < at["end"]:
        raise ValueError(f"a status frame of {len(payload)} bytes, shorter than version {version}'s "
                         f"{at['end']} bytes")
    kind = _FIO_LAT if _u32(payload, at["lat_percentiles"]) else _FIO_CLAT
    plat = np.frombuffer(payload, dtype="<u8", count=3 * 3 * _PLAT_NR, offset=at["io_u_plat"])
    totals = []
    for ddir in (0, 1):  # read, write
        samples, mean = _SAMPLES_MEAN.unpack_from(payload, at["lat_stat"] + ddir * _IO_STAT + 16)
        counts = plat[(kind * 3 + ddir) * _PLAT_NR:(kind * 3 + ddir + 1) * _PLAT_NR]
        used = np.flatnonzero(counts)
        totals.append(Totals(ios=_u64(payload, at["total_io_u"] + 8 * ddir),
                             io_bytes=_u64(payload, at["io_bytes"] + 8 * ddir),
                             lat_n=samples, lat_sum_ns=mean * samples,
                             bins=dict(zip(_VALUES[used].tolist(), counts[used].tolist()))))
    name = payload[:128].split(b"\0", 1)[0].decode(errors="replace")
    cpu_ms = _u64(payload, at["usr_time"]) + _u64(payload, at["sys_time"])
    return JobStatus(name, _u64(payload, at["total_run_time"]), totals[0], totals[1], float(cpu_ms))


def _u64(payload: bytes, offset: int) -> int:
    return _U64.unpack_from(payload, offset)[0]


def _u32(payload: bytes, offset: int) -> int:
    return struct.unpack_from("<I", payload, offset)[0]

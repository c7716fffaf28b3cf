"""One gzip file from a small head and a body compressed on its own, before the head
was known. Pure.

A bundle's first line (its manifest) holds the hash of everything after it, so the
body is written first, compressed as it goes, and the manifest last. Gzip allows a
deflate stream to be cut where a compressor flushed to a byte boundary and another one
to be appended (what ``pigz`` does to compress in parallel): the head is compressed and
sync-flushed, the body's own deflate stream follows, and the file's trailer holds the
CRC-32 of both together, which ``crc32_combine`` works out from the CRC of each without
reading either again. The result is one ordinary gzip member that every reader takes,
and the body is compressed exactly once.
"""

from __future__ import annotations

import struct
import zlib

# Magic, deflate, no flags, no time (so the same content gives the same bytes), no
# extra flags, operating system "unknown".
HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
# Raw deflate (no zlib or gzip framing of its own): the framing is written here.
_RAW = -zlib.MAX_WBITS
_POLY = 0xEDB88320  # CRC-32's polynomial, bit-reflected, as zlib uses it


class Deflater:
    """A raw deflate stream with the CRC-32 and the length of what went in."""

    def __init__(self, level: int) -> None:
        self._compressor = zlib.compressobj(level, zlib.DEFLATED, _RAW)
        self.crc = 0
        self.size = 0

    def compress(self, data: bytes) -> bytes:
        self.crc = zlib.crc32(data, self.crc)
        self.size += len(data)
        return self._compressor.compress(data)

    def finish(self) -> bytes:
        """The rest of the stream, ending with its final block."""
        return self._compressor.flush(zlib.Z_FINISH)


def head(data: bytes, level: int) -> tuple[bytes, int]:
    """The gzip header and ``data`` deflated, flushed to a byte boundary without a final
    block (a body's stream may follow), and ``data``'s CRC-32."""
    compressor = zlib.compressobj(level, zlib.DEFLATED, _RAW)
    packed = compressor.compress(data) + compressor.flush(zlib.Z_SYNC_FLUSH)
    return HEADER + packed, zlib.crc32(data)


def trailer(crc: int, size: int) -> bytes:
    """The gzip trailer: CRC-32 and length (modulo 2**32) of everything uncompressed."""
    return struct.pack("<II", crc & 0xFFFFFFFF, size & 0xFFFFFFFF)


def _multiply(a: int, b: int) -> int:
    """``a`` times ``b`` modulo the CRC polynomial, both as reflected 32-bit values."""
    mask = 1 << 31
    product = 0
    while True:
        if a & mask:
            product ^= b
            if a & (mask - 1) == 0:
                return product
        mask >>= 1
        b = (b >> 1) ^ _POLY if b & 1 else b >> 1


def _powers() -> tuple[int, ...]:
    """x**(2**k) modulo the polynomial, for k in 0..31."""
    found = []
    power = 1 << 30  # x**1
    for _ in range(32):
        found.append(power)
        power = _multiply(power, power)
    return tuple(found)


_X_TO_2_TO_K = _powers()


def _x_to_8n(n: int) -> int:
    """x**(8n) modulo the polynomial: shifting a CRC past ``n`` bytes of zeros."""
    power = 1 << 31  # x**0
    k = 3  # 8n = n * 2**3
    while n:
        if n & 1:
            power = _multiply(_X_TO_2_TO_K[k & 31], power)
        n >>= 1
        k += 1
    return power


def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """The CRC-32 of A followed by B, from A's CRC, B's CRC and B's length in bytes
    (zlib's ``crc32_combine``, which Python's zlib does not offer)."""
    return _multiply(_x_to_8n(len2), crc1 & 0xFFFFFFFF) ^ (crc2 & 0xFFFFFFFF)

"""One gzip member from a head compressed last and a body compressed first
(``memory.core.gzip_splice``): what a bundle file is made of."""

from __future__ import annotations

import gzip
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory.core.gzip_splice import Deflater, crc32_combine, head, trailer


@given(st.binary(max_size=300), st.binary(max_size=3000))
def test_the_crc_of_two_parts_is_the_crc_of_the_whole(first: bytes, second: bytes) -> None:
    assert crc32_combine(zlib.crc32(first), zlib.crc32(second), len(second)) == zlib.crc32(
        first + second
    )


def test_the_crc_combines_across_a_long_second_part() -> None:
    second = bytes(range(256)) * 5000  # longer than any power-of-two table shortcut
    assert crc32_combine(zlib.crc32(b"x"), zlib.crc32(second), len(second)) == zlib.crc32(
        b"x" + second
    )


def splice(first: bytes, second: bytes, level: int = 6) -> bytes:
    deflater = Deflater(level)
    body = deflater.compress(second) + deflater.finish()
    start, crc = head(first, level)
    whole = crc32_combine(crc, deflater.crc, deflater.size)
    return start + body + trailer(whole, len(first) + deflater.size)


@given(st.binary(min_size=1, max_size=500), st.binary(max_size=5000), st.sampled_from([1, 6, 9]))
def test_a_head_and_a_body_compressed_apart_read_as_one_gzip_member(
    first: bytes, second: bytes, level: int
) -> None:
    data = splice(first, second, level)
    assert gzip.decompress(data) == first + second
    # One member: a single-member reader reads it all, with nothing left over.
    reader = zlib.decompressobj(16 + zlib.MAX_WBITS)
    assert reader.decompress(data) == first + second
    assert reader.eof
    assert reader.unused_data == b""


def test_the_same_content_gives_the_same_bytes() -> None:
    assert splice(b"head\n", b"body\n" * 1000) == splice(b"head\n", b"body\n" * 1000)
    assert splice(b"head\n", b"x")[4:8] == b"\0\0\0\0"  # no modification time


def test_a_changed_byte_fails_the_readers_check() -> None:
    data = bytearray(splice(b"head\n", b"body\n" * 100))
    data[-6] ^= 0xFF  # inside the CRC
    with pytest.raises(gzip.BadGzipFile, match="CRC"):
        gzip.decompress(bytes(data))

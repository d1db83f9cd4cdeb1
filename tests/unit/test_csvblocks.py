"""The plain-CSV block reader (dpcore.csvblocks): blocks of whole lines read into one reused
buffer, whatever the block size (lines longer than it, a last line without its end), and the
views released once the next block is asked for."""
from __future__ import annotations

import pytest

from dpcore import csvblocks


def _body(text: bytes) -> bytes:
    """The data lines as the reader must give them: after the header, the last one ended."""
    body = text.split(b"\n", 1)[1] if b"\n" in text else b""
    return body if not body or body.endswith(b"\n") else body + b"\n"


@pytest.mark.parametrize("block_bytes", [1, 2, 3, 7, 16, 1 << 20])
@pytest.mark.parametrize("text", [
    b"h\n", b"h\nab,c\n", b"h\nab,c", b"h\nx\nyy\nzzz\n" + b"w" * 40 + b"\nq",
    b"h\r\na,b\r\nc,d\r\n", b"h\n" + b"".join(b"%d,%d\n" % (i, i * i) for i in range(500))])
def test_blocks_are_the_lines_whatever_the_block_size(tmp_path, text, block_bytes):
    path = tmp_path / "t.csv"
    path.write_bytes(text)
    got = []
    for block in csvblocks._line_blocks(path, block_bytes):
        assert isinstance(block, memoryview) and block.readonly
        data = bytes(block)
        assert data.endswith(b"\n") and data.count(b"\n") >= 1
        got.append(data)
    assert b"".join(got) == _body(text)


def test_a_kept_view_is_released_when_the_next_block_is_read(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b"h\n" + b"a,b\n" * 10)
    blocks = csvblocks._line_blocks(path, 8)
    first = next(blocks)
    assert bytes(first) == b"a,b\na,b\n"
    next(blocks)
    with pytest.raises(ValueError):         # the buffer now holds other bytes
        bytes(first)


def test_split_block_copies_what_it_keeps(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b"x,y\n" + b"".join(b"v%d,w%d\n" % (i % 3, i % 5) for i in range(40)))
    frames = list(csvblocks.iter_csv_blocks(path, ",", ["x", "y"], block_bytes=16))
    import pandas as pd
    whole = pd.concat(frames, ignore_index=True).astype(object)
    assert whole["x"].tolist() == [f"v{i % 3}" for i in range(40)]
    assert whole["y"].tolist() == [f"w{i % 5}" for i in range(40)]


SCHEMA = {"missing_values": ["", "NA"], "columns": {
    "c": {"type": "categorical", "categories": ["a", "b", "c", "d"], "missing": "code"},
    "n": {"type": "numeric", "lower": 0, "upper": 1000, "bins": 7, "missing": "code"}}}


def _text(rows: list[tuple[str, str]]) -> bytes:
    return ("c,n\n" + "".join(f"{c},{n}\n" for c, n in rows)).encode()


def _outcome(read):
    try:
        return read().tolist()
    except Exception as err:   # noqa: BLE001 - compared, not swallowed
        return type(err).__name__, str(err), getattr(err, "row", None)


@pytest.mark.parametrize("keep", [0, 6, 1 << 17])   # shared by the 2 columns
@pytest.mark.parametrize("block_bytes", [8, 64, 1 << 20])
@pytest.mark.parametrize("bad", [None, (150, "c", "zz"), (151, "n", "x"), (3, "n", "2000")])
def test_block_codes_are_the_frames_codes_and_errors(tmp_path, monkeypatch, keep, block_bytes,
                                                     bad):
    """Codes from texts kept across blocks (or dropped past `keep`) equal the per-block
    frames' codes; a bad value in a later block is reported at its row, as pandas does."""
    import numpy as np
    from dpcore.encoding import read_codes
    from dpcore.schema import Schema
    schema = Schema.from_dict(SCHEMA)
    rng = np.random.default_rng(1)
    rows = [(str(rng.choice(["a", "b", "c", "d", "", "NA"])), str(int(rng.integers(0, 900))))
            for _ in range(200)]
    if bad is not None:
        row, column, value = bad
        rows[row - 1] = (value, rows[row - 1][1]) if column == "c" else (rows[row - 1][0], value)
    path = tmp_path / "t.csv"
    path.write_bytes(_text(rows))
    monkeypatch.setattr(csvblocks, "KEEP_TEXTS", keep)
    monkeypatch.setattr(csvblocks, "CSV_BLOCK_BYTES", block_bytes)
    want = _outcome(lambda: read_codes(path, schema, engine="pandas"))
    assert _outcome(lambda: read_codes(path, schema, engine="compiled")) == want
    if bad is None:
        frames = csvblocks.iter_csv_blocks(path, ",", ["c", "n"], block_bytes=block_bytes)
        from dpcore.encoding import encode_frame
        offset, parts = 0, []
        for frame in frames:
            parts.append(encode_frame(frame, schema, row_offset=offset))
            offset += len(frame)
        assert np.concatenate(parts).tolist() == want


@pytest.mark.parametrize("guess", [0, 1, 37, 100, 199, 200, 201, 5000, None])
@pytest.mark.parametrize("block_bytes", [8, 64, 1 << 20])
def test_read_codes_gathers_the_blocks_whatever_the_row_guess(tmp_path, monkeypatch, guess,
                                                              block_bytes):
    """read_codes copies the blocks into one array sized by a guess of the row count: a guess
    too small (the rest concatenated), exact or too large gives the blocks' rows in order,
    and the result owns or views only what it needs."""
    import numpy as np
    from dpcore import encoding
    from dpcore.schema import Schema
    schema = Schema.from_dict(SCHEMA)
    rng = np.random.default_rng(2)
    rows = [(str(rng.choice(["a", "b", "c", "d", "", "NA"])), str(int(rng.integers(0, 900))))
            for _ in range(200)]
    path = tmp_path / "t.csv"
    path.write_bytes(_text(rows))
    monkeypatch.setattr(csvblocks, "CSV_BLOCK_BYTES", block_bytes)
    want = np.concatenate(list(encoding.iter_codes(path, schema)))
    if guess is not None:
        monkeypatch.setattr(encoding, "_row_guess", lambda _, columns: guess)
    else:
        assert encoding._row_guess(path, 2) >= 200   # the real guess: ~10% above the lines
    got = encoding.read_codes(path, schema)
    assert got.dtype == want.dtype and got.shape == want.shape == (200, 2)
    assert got.tolist() == want.tolist()
    assert got.base is None or got.base.shape[0] == 200   # a small table: no big block held


def test_row_guess_is_zero_where_it_cannot_tell(tmp_path):
    from dpcore.encoding import _row_guess
    assert _row_guess(tmp_path / "missing.csv", 2) == 0
    (tmp_path / "empty.csv").write_bytes(b"")
    assert _row_guess(tmp_path / "empty.csv", 2) == 0
    (tmp_path / "t.parquet").write_bytes(b"x\n" * 10)
    assert _row_guess(tmp_path / "t.parquet", 2) == 0
    assert _row_guess(tmp_path, 2) == 0


def test_row_guess_never_exceeds_the_rows_the_file_can_hold(tmp_path):
    # review 15b: short lines first, long ones after: the guess from the first MiB was many
    # times the rows, one np.empty of that size
    from dpcore.encoding import _row_guess
    path = tmp_path / "t.csv"
    path.write_bytes(b"a,b\n" + b"1,2\n" * 300_000 + (b"x" * 5000 + b",y\n") * 2000)
    assert _row_guess(path, 2) <= path.stat().st_size // 2 + 1

"""Codes straight to CSV (dpcore.codecsv): Synthesizer.write's compiled decode-and-format pass
gives the bytes of the DataFrame path it replaces (decode_codes, then write_table), for every
column kind it takes, whatever the block, buffer and chunk sizes; and it declines (the old path
writes) whatever pandas must format."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpcore import _core, codecsv, junction_tree
from dpcore.encoding import write_table
from dpcore.errors import DpcoreError, InvalidArgumentError
from dpcore.schema import Schema
from mechanisms.synthesizer import MST, Independent

SCHEMA = {"missing_values": ["", "NA"], "columns": {
    "age": {"type": "numeric", "lower": 0, "upper": 99, "bins": 10, "integer": True},
    "job": {"type": "categorical", "categories": ["a", "b", "c"], "other": "other",
            "missing": "code"},
    "city": {"type": "categorical", "categories": ["x", "y é", "中"]},
    "hours": {"type": "numeric", "bins": [-5, 0, 1, 40, 1000000], "integer": True,
              "missing": "code"},
    "mid": {"type": "numeric", "lower": -7, "upper": 30, "bins": 4, "integer": True,
            "decode": "midpoint", "missing": "code"}}}


def _frame(n: int = 600, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.integers(0, 100, n).astype(str),
        "job": rng.choice(["a", "b", "c", "zz", "NA"], n),
        "city": rng.choice(["x", "y é", "中"], n),
        "hours": np.where(rng.random(n) < 0.1, "", rng.integers(-5, 1000000, n).astype(str)),
        "mid": np.where(rng.random(n) < 0.2, "NA", rng.integers(-7, 31, n).astype(str))})


def _old_write(synth, path, n, seed, sep=",", missing="?"):
    """Synthesizer.write before the compiled pass: decoded chunks, then write_table."""
    return write_table(synth._chunks(n, seed, 500_000, categorical=True), path,
                       missing_token=missing, sep=sep)


@pytest.fixture(scope="module")
def fitted():
    return MST(epsilon=2.0, delta=1e-6, seed=4, progress=False).fit(_frame(), SCHEMA)


@pytest.mark.parametrize("block", [7, 1 << 20])
@pytest.mark.parametrize("buffer_bytes", [1, 300, 4 << 20])
@pytest.mark.parametrize("n,seed", [(None, None), (1, 5), (1000, 9), (2345, 0)])
def test_write_has_the_decoded_tables_bytes(tmp_path, monkeypatch, fitted, block,
                                            buffer_bytes, n, seed):
    monkeypatch.setattr(junction_tree, "SAMPLE_BLOCK", block)
    monkeypatch.setattr(codecsv, "BUFFER_BYTES", buffer_bytes)
    assert codecsv.csv_plan(fitted.schema_, "?", ",") is not None     # the compiled pass
    rows = fitted.write(tmp_path / "new.csv", n, seed=seed, missing_token="?")
    # n=None: the fit's own table, decoded with the fit's seed; else the explicit seed
    old = _old_write(fitted, tmp_path / "old.csv", n, seed)
    assert rows == old
    got, want = (tmp_path / "new.csv").read_bytes(), (tmp_path / "old.csv").read_bytes()
    assert got == want and got.count(b"\n") == rows + 1


@pytest.mark.parametrize("sep,missing", [(";", ""), ("\t", "NA"), ("|", "é")])
def test_other_delimiters_and_missing_tokens(tmp_path, fitted, sep, missing):
    fitted.write(tmp_path / "new.csv", 500, seed=2, sep=sep, missing_token=missing)
    _old_write(fitted, tmp_path / "old.csv", 500, 2, sep=sep, missing=missing)
    assert (tmp_path / "new.csv").read_bytes() == (tmp_path / "old.csv").read_bytes()


def test_without_a_seed_each_write_draws_fresh_rows(tmp_path):
    synth = Independent(epsilon=2.0, delta=1e-6, progress=False).fit(_frame(), SCHEMA)
    synth.write(tmp_path / "a.csv", 3000)
    synth.write(tmp_path / "b.csv", 3000)
    a, b = (pd.read_csv(tmp_path / f, dtype=str, keep_default_na=False) for f in ("a.csv", "b.csv"))
    assert len(a) == len(b) == 3000 and not a.equals(b)
    assert set(a["job"]) <= {"a", "b", "c", "other", ""}
    assert set(a["city"]) <= {"x", "y é", "中"}
    ages = a["age"].astype(int)
    assert ages.between(0, 99).all() and ages.nunique() > 10       # drawn inside the bins


@pytest.mark.parametrize("change", [
    {"score": {"type": "numeric", "bins": [0.0, 0.5, 1.0]}},               # floats: pandas
    {"city": {"type": "categorical", "categories": ["x", "y,z"]}},         # a delimiter
    {"city": {"type": "categorical", "categories": ["x", 'say "y"']}},     # a quote
    {"city": {"type": "categorical", "categories": ["x", "y\r"]}},         # a line break
])
def test_tables_pandas_must_format_are_declined_and_written_as_before(tmp_path, change):
    spec = {"missing_values": ["", "NA"], "columns": {**SCHEMA["columns"], **change}}
    schema = Schema.from_dict(spec)
    assert codecsv.csv_plan(schema, "?", ",") is None
    rng = np.random.default_rng(1)
    data = _frame(300)
    for name, col in change.items():
        data[name] = rng.choice(col.get("categories", ["0.25", "0.75"]), len(data))
    synth = Independent(epsilon=2.0, delta=1e-6, seed=1, progress=False).fit(data, spec)
    synth.write(tmp_path / "new.csv", 400, seed=3, missing_token="?")
    _old_write(synth, tmp_path / "old.csv", 400, 3)
    assert (tmp_path / "new.csv").read_bytes() == (tmp_path / "old.csv").read_bytes()


def test_plan_declines_what_it_cannot_write(fitted):
    schema = fitted.schema_
    assert codecsv.csv_plan(schema, "a,b", ",") is None               # missing token quoted
    with pytest.raises(InvalidArgumentError, match="delimiter"):
        codecsv.csv_plan(schema, "?", "ab")
    one = Schema.from_dict({"columns": {"c": {"type": "categorical", "categories": ["a"]}}})
    assert codecsv.csv_plan(one, "", ",") is None                     # pandas quotes "" alone
    codes = Schema.from_dict({"columns": {"a": {"type": "code", "size": 3},
                                          "b": {"type": "code", "size": 2 ** 40}}})
    assert codecsv.csv_plan(codes, "", ",") is None                   # too many texts


def _reference(columns, sep, eol, codes, uniform):
    """The rows a plain Python formatter makes (NumPy's doubles for the drawn values)."""
    lines = []
    for r, row in enumerate(codes.tolist()):
        fields, q = [], 0
        for (texts, lo, width), c in zip(columns, row):
            if lo is not None and c < len(lo):
                value = np.float64(lo[c]) + np.floor(np.float64(uniform[q][r]) * width[c])
                fields.append(str(int(value)))
            else:
                fields.append(texts[c])
            q += lo is not None
        lines.append(sep.join(fields) + eol)
    return "".join(lines).encode("utf-8")


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64, np.int64])
def test_format_is_the_plain_python_rows(dtype):
    rng = np.random.default_rng(5)
    lo = np.array([-(2.0 ** 61), -3.0, 0.0, 1e15])
    width = np.array([1.0, 7.0, 1.0, 2.0 ** 61])
    columns = [(["", "", "", "", "NA"], lo, width), (["a", "é" * 20, "中", ""], None, None),
               (["", "x"], np.array([5.0]), np.array([10.0]))]
    fmt = _core.CodeCsvFormat(columns, ";", "\r\n")
    assert fmt.drawn_columns == 2
    codes = np.stack([rng.integers(0, 5, 300), rng.integers(0, 4, 300),
                      rng.integers(0, 2, 300)], axis=1).astype(dtype)
    uniform = [rng.random(300), rng.random(300)]
    uniform[0][:3] = [0.0, 1.0 - 2 ** -53, 0.5]
    buffer = bytearray(300 * fmt.max_row_bytes + fmt.slack)
    size = fmt.format(codes, uniform, buffer)
    assert bytes(buffer[:size]) == _reference(columns, ";", "\r\n", codes, uniform)
    strided = np.asfortranarray(codes)[::2]                          # any strides
    size = fmt.format(strided, [u[::2].copy() for u in uniform], buffer)
    assert bytes(buffer[:size]) == _reference(columns, ";", "\r\n", strided,
                                              [u[::2] for u in uniform])


def test_format_refuses_bad_codes_short_buffers_and_bad_columns():
    fmt = _core.CodeCsvFormat([(["a", "b"], None, None), (["x"], None, None)], ",", "\n")
    buffer = bytearray(10 * fmt.max_row_bytes + fmt.slack)
    with pytest.raises(InvalidArgumentError, match="column 1, row 1: code 3 outside"):
        fmt.format(np.array([[0, 0], [1, 3]], dtype=np.uint8), [], buffer)
    with pytest.raises(InvalidArgumentError, match="code -1 outside"):
        fmt.format(np.array([[-1, 0]]), [], buffer)
    with pytest.raises(InvalidArgumentError, match="output buffer"):
        fmt.format(np.zeros((11, 2), dtype=np.uint8), [], buffer)
    with pytest.raises(InvalidArgumentError, match="draws"):
        fmt.format(np.zeros((1, 2), dtype=np.uint8), [np.zeros(1)], buffer)
    with pytest.raises(DpcoreError):
        fmt.format(np.zeros((1, 2), dtype=np.float64), [], buffer)
    with pytest.raises(DpcoreError):
        fmt.format(np.zeros((1, 2), dtype=np.uint8), [], bytes(100))     # read-only
    for lo, width in [([math.inf], [1.0]), ([0.0], [0.5]), ([2.0 ** 62], [1.0]),
                      ([0.0], [math.nan])]:
        with pytest.raises(InvalidArgumentError, match="drawn bin"):
            _core.CodeCsvFormat([(["", "m"], np.array(lo), np.array(width)), (["x"], None, None)],
                                ",", "\n")
    with pytest.raises(InvalidArgumentError, match="more drawn bins"):
        _core.CodeCsvFormat([([""], np.zeros(2), np.ones(2))], ",", "\n")
    with pytest.raises(InvalidArgumentError, match="at least one column"):
        _core.CodeCsvFormat([], ",", "\n")
    assert fmt.format(np.zeros((0, 2), dtype=np.uint8), [], bytearray(0)) == 0


@pytest.mark.parametrize("u", [1e17, -1e17, 1.0, -0.25, math.inf, -math.inf, math.nan])
def test_format_refuses_a_draw_outside_the_unit_interval(u):
    # review 15b: the row budget holds values in [lo, lo + width]; a draw outside [0, 1) wrote
    # a wider number past the buffer (heap overflow from Python)
    fmt = _core.CodeCsvFormat([(["", "m"], np.array([0.0]), np.array([3.0])),
                               (["x"], None, None)], ",", "\n")
    buffer = bytearray(4 * fmt.max_row_bytes + fmt.slack)
    codes = np.zeros((4, 2), dtype=np.uint8)
    draws = np.array([0.5, 0.0, u, 0.99])
    with pytest.raises(InvalidArgumentError, match="row 2: a uniform draw must lie in"):
        fmt.format(codes, [draws], buffer)
    assert fmt.format(codes, [np.array([0.5, 0.0, 0.999, 0.25])], buffer) > 0


def test_no_chunk_writes_nothing_and_an_empty_chunk_the_header(tmp_path, fitted):
    """As write_table: no frames, an empty file; a frame of no rows, the header alone."""
    plan = codecsv.csv_plan(fitted.schema_, "?", ",")
    for chunks, want in [([], b""), ([np.zeros((0, 5), dtype=np.uint8)], plan.header)]:
        with open(tmp_path / "t.csv", "wb") as fh:
            assert codecsv.write_codes_csv(plan, chunks, fh, seed=1, total=0) == 0
        assert (tmp_path / "t.csv").read_bytes() == want
    write_table([], tmp_path / "old.csv")
    assert (tmp_path / "old.csv").read_bytes() == b""


def test_format_refuses_byte_swapped_or_misaligned_codes():
    # review 15b: a '>u2' code 256 was read as code 1 (native order)
    fmt = _core.CodeCsvFormat([(["a", "b"], None, None), (["x"], None, None)], ",", "\n")
    buffer = bytearray(10 * fmt.max_row_bytes + fmt.slack)
    swapped = np.array([[1, 0]], dtype=">u2")
    offset = np.frombuffer(bytes(17), dtype=np.uint8)[1:].view(np.uint16).reshape(4, 2)
    for codes, rule in ((swapped, "native byte order"), (offset, "aligned array")):
        with pytest.raises(InvalidArgumentError, match=rule):
            fmt.format(codes, [], buffer)
    assert bytes(buffer[:fmt.format(np.array([[1, 0]], dtype="<u2"), [], buffer)]) == b"b,x\n"


def test_narrow_signed_codes_are_written_as_any_others(fitted):
    # review 15b: int8/int16/int32 codes raised TypeError where the old writer took any integers
    import io
    from dpcore import codecsv
    codes = np.asarray(fitted.sample_codes(50, seed=3)).astype(np.int64)
    plan = codecsv.csv_plan(fitted.schema_, "", ",")
    assert plan is not None
    outs = []
    for dtype in (np.int64, np.int32, np.int16, np.int8):
        fh = io.BytesIO()
        assert codecsv.write_codes_csv(plan, [codes.astype(dtype)], fh, seed=5, total=50) == 50
        outs.append(fh.getvalue())
    assert all(out == outs[0] for out in outs[1:])

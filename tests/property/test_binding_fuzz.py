"""Every function and method of dpcore._core, called with generated arguments (valid, boundary
and hostile: huge and negative ints, NaN, wrong dtypes and shapes, empty, 0-d and
non-contiguous arrays), returns a correct result or raises a one-line dpcore error.

CASES maps each bound name to a hypothesis strategy of calls; a test checks that CASES covers
the whole extension, so a new binding cannot skip the harness. bench/fuzz_binding.py runs the
same cases with a large budget.
"""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcore import _core
from dpcore.errors import DpcoreError

HUGE_INTS = [-1, -(2**31) - 1, 2**31, 2**32, 2**63 - 1, 2**63, 2**64, 2**70, -(2**70)]


@st.composite
def hostile_arrays(draw):
    """Arrays of every awkward kind: dtypes, 0-d, empty, non-contiguous, broadcast, NaN,
    misaligned."""
    kind = draw(st.sampled_from(["float", "int", "bool", "complex", "object", "str", "0d",
                                 "empty", "strided", "transposed", "broadcast", "nan",
                                 "misaligned"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=1, max_size=3)))
    base = rng.standard_normal(shape)
    return {
        "float": base,
        "int": rng.integers(-3, 5, size=shape),
        "bool": base > 0,
        "complex": base + 1j,
        "object": np.array([None, "x"], dtype=object),
        "str": np.array(["a", "b"]),
        "0d": np.array(draw(st.floats(allow_nan=True))),
        "empty": np.zeros((0,) + shape[1:]),
        "strided": rng.standard_normal((2 * shape[0] + 1,) + shape[1:])[::2],
        "transposed": rng.standard_normal(shape[::-1]).T,
        "broadcast": np.broadcast_to(np.float64(0.5), (1 << 16,) + shape[1:]),
        "nan": np.full(shape, np.nan),
        # an offset view of a buffer: float64 values one byte off their alignment
        "misaligned": np.frombuffer(bytearray(base.nbytes + 1), np.float64, base.size,
                                    1).reshape(shape),
    }[kind]


# A value of the wrong type or out of every range.
HOSTILE = st.one_of(
    st.sampled_from(HUGE_INTS + [None, True, "", "x", b"x", 1.5, -0.0, math.nan, math.inf,
                                 -math.inf, 1j, object(), [], [[]], [None], ["a"], [2**70], [-1],
                                 {}, ()]),
    st.integers(), st.floats(), st.text(max_size=3), hostile_arrays())


def either(valid):
    """Mostly valid values, sometimes hostile ones."""
    return st.one_of(valid, valid, HOSTILE)


small_ints = st.integers(-2, 6)
id_lists = st.lists(small_ints, max_size=4)


@st.composite
def trees(draw):
    d = draw(st.integers(1, 4))
    shape = draw(st.lists(st.integers(1, 4), min_size=d, max_size=d))
    cliques = draw(st.lists(st.lists(st.integers(0, d - 1), min_size=1, max_size=3, unique=True),
                            max_size=4))
    return _core.JunctionTree(shape, cliques)


@st.composite
def calibrated_trees(draw):
    tree = draw(trees())
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    potentials = [(c, rng.standard_normal(tuple(tree.shape[a] for a in c))) for c in tree.cliques]
    return tree.calibrate(potentials)


@st.composite
def calibrators(draw):
    tree = draw(trees())
    return _core.Calibrator(tree, list(tree.cliques), list(tree.cliques))


@st.composite
def records(draw):
    rows, cols = draw(st.integers(0, 30)), draw(st.integers(0, 4))
    dtype = draw(st.sampled_from([np.int8, np.uint8, np.int32, np.int64, np.uint64, ">i4"]))
    codes = np.random.default_rng(draw(st.integers(0, 99))).integers(-1, 5, size=(rows, cols))
    codes = codes.astype(dtype)
    return codes[::-1] if draw(st.booleans()) else codes


def call(fn, *args, **kwargs):
    """fn's result, or None when it raised a dpcore error; any other exception fails."""
    try:
        return fn(*args, **kwargs)
    except DpcoreError as e:
        assert str(e) and "\n" not in str(e), f"error message must be one line: {e!r}"
        return None


def _check_grid_l1(cells, ref, grid, sizes):
    got = call(_core.grid_l1, cells, ref, grid, sizes)
    if got is not None:   # the exact sums, or a flag where one would leave int64
        l1, overflow = got
        c = np.asarray(cells).ravel().tolist()
        r = np.asarray(ref, dtype=np.float64).ravel().tolist()
        at = 0
        for k, n in enumerate(np.asarray(sizes).ravel().tolist()):
            want = sum(abs(int(a) - int(np.rint(grid * b))) for a, b in zip(c[at:at + n], r[at:at + n]))
            assert (overflow[k] and l1[k] == 0) or (not overflow[k] and int(l1[k]) == want)
            at += n


def _check_parent(tree, c):
    got = call(tree.parent, c)
    if isinstance(c, int) and 0 <= c < len(tree.cliques):
        assert got == dict((child, parent) for parent, child in tree.edges).get(c, -1)
        assert call(tree.separator, c) is not None
    elif not isinstance(c, bool) and isinstance(c, int):
        assert got is None  # out of range: refused, never garbage


def _check_project_flat(tree, attrs_list, by_source, starts, size):
    out = call(tree.project_flat, attrs_list, by_source, starts, size)
    if out is not None:   # every query in its place, zeros elsewhere
        want = tree.project_many(attrs_list, bool(by_source))
        assert out.shape == (size,)
        seen = np.zeros(size, dtype=bool)
        for s, v in zip(starts, want):
            np.testing.assert_array_equal(out[s:s + v.size], v.ravel())
            assert not seen[s:s + v.size].any()
            seen[s:s + v.size] = True
        assert not out[~seen].any()


def _check_sample_group(p, m, method, seed):
    out = call(_core.sample_group, p, m, method, seed)
    if out is not None:
        q = np.asarray(p, dtype=float)
        assert q.ndim == 1 and np.isfinite(q).all() and (q >= 0).all() and q.sum() > 0
        assert out.shape == (m,) and ((0 <= out) & (out < len(q))).all()
        assert (q[out] > 0).all()


def _logsumexp(values, axis):
    """Reference log-sum-exp over `axis` (a tuple, maybe empty), stable for huge values."""
    if values.size == 0:
        return np.log(np.exp(values).sum(axis=axis))
    top = np.max(values, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    return np.log(np.exp(values - top).sum(axis=axis)) + np.squeeze(top, axis=axis)


def _check_marginalize(values, keep, log):
    out = call(_core.marginalize, values, keep, log)
    if out is not None and isinstance(values, np.ndarray) and values.dtype.kind == "f":
        drop = tuple(i for i in range(values.ndim) if i not in keep)
        with np.errstate(all="ignore"):
            ref = _logsumexp(values, drop) if log else values.sum(axis=drop)
            ref = np.transpose(ref, np.argsort(np.argsort(keep))) if len(keep) > 1 else ref
            assert np.allclose(out, ref, equal_nan=True)


def _check_cell_count(shape):
    got = call(_core.checked_cell_count, shape)
    if got is not None:
        assert got == math.prod(shape) <= _core.max_table_cells()


def _check_set_max(cells):
    before = _core.max_table_cells()
    try:
        previous = call(_core.set_max_table_cells, cells)
        assert previous in (None, before)
    finally:
        _core.set_max_table_cells(before)


def _check_sample(model, n, method, seed, dtype="int64"):
    out = call(model.sample, n, method, seed, dtype)
    if out is not None:
        assert out.shape == (n, len(model.tree.shape)) and out.dtype == np.dtype(dtype)
        assert ((0 <= out) & (out < np.array(model.tree.shape))).all()
        again = model.sample(n, method, seed)   # the same draws whatever the dtype
        assert np.array_equal(out.astype(np.int64), again)


def _check_sample_blocks(model, n, method, seeds, block, dtype="int64"):
    out = call(model.sample_blocks, n, method, seeds, block, dtype)
    if out is not None:     # block k is sample(rows, method, seeds[k]) (same dtype)
        assert out.shape == (n, len(model.tree.shape)) and out.dtype == np.dtype(dtype)
        assert len(seeds) == -(-n // block)
        for k, s in enumerate(seeds):
            rows = min(block, n - k * block)
            assert np.array_equal(out[k * block:k * block + rows], model.sample(rows, method, s,
                                                                                 dtype))


def _check_split_csv(data, sep, columns):
    out = call(_core.split_csv, data, sep, columns)
    if out is not None:
        assert out[0] in ("plain", "not plain", "ragged", "not utf-8")
    if out is not None and out[0] == "plain":
        status, rows, parts = out
        assert len(parts) == columns
        for positions, texts in parts:
            assert len(positions) == rows and all(0 <= p < len(texts) for p in positions)


def _check_splitter(blocks, sep, columns, keep):
    """CsvSplitter over blocks: each plain block's texts are split_csv's, read through the
    texts the splitter kept (positions past them are the block's new texts)."""
    splitter = call(_core.CsvSplitter, sep, columns, keep)
    if splitter is None:
        return
    kept = [[] for _ in range(columns)]
    for data in blocks:
        out = call(splitter.split, data)
        whole = call(_core.split_csv, data, sep, columns)
        assert (out is None) == (whole is None)
        if out is None:
            continue
        assert out[:2] == whole[:2] or (out[0] == whole[0] != "plain")
        if out[0] != "plain":
            kept = [[] for _ in range(columns)]     # the next block starts afresh
            continue
        for j, ((positions, new, first), (wpos, wtexts)) in enumerate(zip(out[2], whole[2])):
            if first == 0:
                kept[j] = []
            assert first == len(kept[j]) and (first == 0 or first <= keep)
            kept[j] += new
            assert [kept[j][p] for p in positions] == [wtexts[p] for p in wpos]


def _check_integer_steps(column, starts, codes, last, cells):
    """set_integer_steps refuses a bad table (a typed error) and otherwise gives each canonical
    integer in range its step's code (brute force), every other cell its text."""
    import bisect
    import re
    splitter = _core.CsvSplitter(",", 2, 8)
    ok = call(lambda: splitter.set_integer_steps(column, starts, codes, last) or True)
    typed = all(isinstance(v, int) and not isinstance(v, bool) and abs(v) < 2**31
                for v in [column, last, *(starts if isinstance(starts, list) else [None]),
                          *(codes if isinstance(codes, list) else [None])])
    if not typed:
        return
    valid = (0 <= column < 2 and len(starts) == len(codes) and all(c >= 0 for c in codes)
             and all(a < b for a, b in zip(starts, starts[1:]))
             and (not starts or last >= starts[0]))
    assert bool(ok) == valid
    if not ok:
        return
    status, rows, parts = splitter.split("".join(
        f"{c},z\n" if column == 0 else f"z,{c}\n" for c in cells).encode())
    assert status == "plain" and rows == len(cells)
    positions, texts, _ = parts[column]
    for cell, p in zip(cells, positions.tolist()):
        whole = re.fullmatch(r"-?[1-9][0-9]{0,17}|0", cell) is not None
        if starts and whole and starts[0] <= int(cell) <= last:
            assert p == codes[bisect.bisect_right(starts, int(cell)) - 1]
        elif starts:
            assert p < 0 and texts[~p] == cell
        else:
            assert p >= 0 and texts[p] == cell


@st.composite
def gather_args(draw):
    rows, cols = draw(st.integers(0, 5)), draw(st.integers(0, 3))
    positions = [np.array(draw(st.lists(st.integers(-4, 4), min_size=rows, max_size=rows)),
                          dtype=np.int32) for _ in range(cols)]
    tables = [np.array(draw(st.lists(st.integers(-1, 300), max_size=4)), dtype=np.int64)
              for _ in range(cols)]
    direct = draw(st.lists(st.booleans(), min_size=cols, max_size=cols))
    dtype = draw(st.sampled_from([np.uint8, np.uint16, np.uint32, np.int64, np.int32]))
    out = np.full((rows, cols), 7, dtype=dtype)
    return positions, tables, direct, out


def _check_gather(positions, tables, direct, out):
    """gather_codes against a Python loop; refused (typed, nothing written) exactly when a
    position or a code does not fit."""
    before = out.copy() if isinstance(out, np.ndarray) else None
    ok = call(lambda: _core.gather_codes(positions, tables, direct, out) or True)
    if not (isinstance(out, np.ndarray) and isinstance(positions, list)
            and isinstance(tables, list) and isinstance(direct, list)
            and all(isinstance(p, np.ndarray) for p in positions + tables)):
        return
    if not ok:
        assert out.tobytes() == before.tobytes()        # the same bytes (NaN included)
    if out.dtype not in (np.uint8, np.uint16, np.uint32, np.int64):
        assert not ok
        return
    top = np.iinfo(out.dtype).max
    rows = len(positions[0]) if positions else 0
    if not (out.ndim == 2 and out.shape == (rows, len(positions)) and out.flags.c_contiguous
            and all(len(p) == rows and p.dtype == np.int32 for p in positions)
            and all(t.dtype == np.int64 for t in tables) and len(tables) == len(positions)
            and len(direct) == len(positions)):
        assert not ok or out.size == 0
        return
    want = np.zeros(out.shape, dtype=np.int64)
    valid = True
    for j, (pos, table, d) in enumerate(zip(positions, tables, direct)):
        valid &= bool(((table >= 0) & (table <= top)).all())
        for r, p in enumerate(pos.tolist()):
            if p >= 0 and d:
                valid &= p <= top
                want[r, j] = p
            elif 0 <= (~p if p < 0 else p) < len(table) and (d or p >= 0):
                want[r, j] = table[~p if p < 0 else p]
            else:
                valid = False
    assert bool(ok) == valid
    if ok:
        assert out.astype(np.int64).tolist() == want.tolist()


def _check_format_csv(columns, sep, eol, missing):
    out = call(_core.format_csv, columns, sep, eol, missing)
    if out is not None:     # the rows a plain Python formatter makes of the same columns
        rows = len(columns[0][0]) if columns else 0
        lines = []
        for r in range(rows):
            fields = []
            for values, labels, mask in columns:
                v = int(values[r])
                if labels is None:
                    fields.append(missing if mask is not None and mask[r] else str(v))
                else:
                    fields.append(missing if v < 0 else labels[v])
            lines.append(sep.join(fields) + eol)
        assert out == "".join(lines).encode("utf-8")


# Two columns: codes 0..1 drawn in [0, 0] and [-2, 0], code 2 "m"; then "a", "bé", "".
_CODE_FORMAT = _core.CodeCsvFormat([(["", "", "m"], np.array([0.0, -2.0]), np.array([1.0, 3.0])),
                                    (["a", "bé", ""], None, None)], ",", "\n")


def _check_format_codes(codes, uniform, size):
    out = bytearray(size) if isinstance(size, int) and 0 <= size < 1 << 20 else size
    got = call(_CODE_FORMAT.format, codes, uniform, out)
    if got is not None and isinstance(out, bytearray):
        assert got <= len(out)
    if got is not None:     # the rows a plain Python formatter makes of the same codes
        lines = []
        for r, (c, d) in enumerate(np.asarray(codes).tolist()):
            first = "m" if c == 2 else str(int([0.0, -2.0][c] + math.floor(
                float(uniform[0][r]) * [1.0, 3.0][c])))
            lines.append(f"{first},{['a', 'bé', ''][d]}\n")
        assert bytes(out[:got]) == "".join(lines).encode("utf-8")


def _check_project(model, attrs):
    out = call(model.project, attrs)
    if out is not None:
        assert math.isclose(float(out.sum()), 1.0, rel_tol=1e-9)


def _check_fit(calibrator, n_slope, total, extra, max_iters, tol, callback):
    if calibrator is None:
        return call(_core.fit, None, [], [], total, 0.0, extra, [], max_iters, tol, 1.0, False,
                    callback)
    q, p = calibrator.query_cells, calibrator.potential_cells
    slope = np.zeros(q if n_slope is None else n_slope)
    call(_core.fit, calibrator, slope, np.full(q, 1.0 / max(q, 1)), total, 0.0, extra,
         np.zeros(p), max_iters, tol, 1.0, False, callback)


@st.composite
def clouds(draw):
    """Particles in [0, 1] (C or Fortran order), sometimes hostile."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    x = rng.random((draw(st.integers(0, 5)), draw(st.integers(0, 4))))
    return draw(st.sampled_from([x, np.asfortranarray(x), x * 3 - 1]))


def _check_sliced(x, pairs, tables, directions, with_grad, threads):
    grad = np.zeros_like(x) if with_grad and isinstance(x, np.ndarray) and x.dtype == float else None
    out = call(_core.sliced_wasserstein, x, pairs, tables, directions, grad=grad, threads=threads)
    if out is not None:
        assert math.isfinite(out) and out >= 0


def _check_adam(x, columns, step, keep):
    if not (isinstance(x, np.ndarray) and x.dtype == float and x.ndim == 2):
        return call(_core.particle_adam_step, x, x, x, x, columns, step, keep=keep)
    x = x.copy(order="K")
    before = np.isnan(x)      # a hostile cloud may hold NaN already: the step adds none
    g, a, q = np.ones_like(x), np.zeros_like(x), np.zeros_like(x)
    call(_core.particle_adam_step, x, g, a, q, columns, step, keep=keep)
    assert not (np.isnan(x) & ~before).any()


CALLBACKS = st.sampled_from([None, lambda *a: None, lambda *a: "x", lambda *a: True, 3, "f"])

# name -> strategy of zero-argument thunks (each one call with the harness's checks).
CASES = {
    "JunctionTree": st.builds(lambda s, c: lambda: call(_core.JunctionTree, s, c),
                              either(st.lists(st.integers(-1, 5) | st.sampled_from(HUGE_INTS),
                                              max_size=4)),
                              either(st.lists(id_lists, max_size=3))),
    "JunctionTree.parent": st.builds(lambda t, c: lambda: _check_parent(t, c), trees(),
                                     either(st.integers(-3, 6) | st.sampled_from(HUGE_INTS))),
    "JunctionTree.separator": st.builds(lambda t, c: lambda: call(t.separator, c), trees(),
                                        either(st.integers(-3, 6) | st.sampled_from(HUGE_INTS))),
    "JunctionTree.containing_clique": st.builds(
        lambda t, a: lambda: call(t.containing_clique, a), trees(), either(id_lists)),
    "JunctionTree.hypothetical_size_mb": st.builds(
        lambda t, a: lambda: call(t.hypothetical_size_mb, a), trees(),
        either(st.lists(id_lists, max_size=3))),
    "JunctionTree.hypothetical_sizes_mb": st.builds(
        lambda t, a: lambda: call(t.hypothetical_sizes_mb, a), trees(),
        either(st.lists(st.lists(id_lists, max_size=2), max_size=2))),
    "JunctionTree.calibrate": st.builds(
        lambda t, a, v: lambda: call(t.calibrate, [(a, v)]), trees(), either(id_lists),
        hostile_arrays()),
    "JunctionTree.properties": st.builds(
        lambda t: lambda: [getattr(t, n) for n in
                           ("shape", "cliques", "input_cliques", "edges", "order", "size",
                            "size_mb")], trees()),
    "CalibratedTree": st.builds(lambda args: lambda: call(_core.CalibratedTree, *args),
                                st.lists(HOSTILE, max_size=3)),
    "CalibratedTree.project": st.builds(lambda m, a: lambda: _check_project(m, a),
                                        calibrated_trees(), either(id_lists)),
    "CalibratedTree.project_many": st.builds(
        lambda m, a: lambda: call(m.project_many, a), calibrated_trees(),
        either(st.lists(id_lists, max_size=3))),
    "CalibratedTree.project_flat": st.builds(
        lambda m, a, b, s, n: lambda: _check_project_flat(m, a, b, s, n), calibrated_trees(),
        either(st.lists(id_lists, max_size=3)), either(st.booleans()),
        either(st.lists(st.integers(-2, 40) | st.sampled_from(HUGE_INTS), max_size=3)),
        either(st.integers(-2, 80) | st.sampled_from(HUGE_INTS))),
    "CalibratedTree.sample": st.builds(
        lambda m, n, how, s, t: lambda: _check_sample(m, n, how, s, t), calibrated_trees(),
        either(st.integers(-2, 40) | st.sampled_from(HUGE_INTS)),
        either(st.sampled_from(["round", "sample", "other"])),
        either(st.integers(0, 2**64 - 1)),
        st.sampled_from(["int64", "uint8", "uint16", "uint32", "int8", "float64"])),
    "CalibratedTree.sample_blocks": st.builds(
        lambda m, n, how, s, b, t: lambda: _check_sample_blocks(m, n, how, s, b, t),
        calibrated_trees(), either(st.integers(-2, 40)),
        either(st.sampled_from(["round", "sample", "other"])),
        either(st.lists(st.integers(0, 2**64 - 1), max_size=6)), either(st.integers(-1, 12)),
        st.sampled_from(["int64", "uint8", "uint16", "uint32", "int8"])),
    "split_csv": st.builds(
        lambda d, sep, k: lambda: _check_split_csv(d, sep, k),
        either(st.binary(max_size=40) | st.text(alphabet="ab,;\n\r\"é", max_size=30).map(
            lambda t: t.encode("utf-8")) | st.binary(min_size=2, max_size=40).map(
            lambda b: memoryview(b)[::2])),             # a strided buffer: refused
        either(st.sampled_from([",", ";", "", ",,"])), either(st.integers(-1, 4))),
    "CsvSplitter": st.builds(
        lambda sep, k, keep: lambda: call(_core.CsvSplitter, sep, k, keep),
        either(st.sampled_from([",", ";", "", "\n", ",,"])), either(st.integers(-1, 4)),
        either(st.integers(-1, 3))),
    "CsvSplitter.split": st.builds(
        lambda blocks, sep, k, keep: lambda: _check_splitter(blocks, sep, k, keep),
        st.lists(either(st.text(alphabet="ab,;\n\r\"é", max_size=30).map(
            lambda t: t.encode("utf-8")) | st.binary(max_size=12)), max_size=4),
        st.sampled_from([",", ";"]), st.integers(1, 3), st.integers(0, 3)),
    "CsvSplitter.set_integer_steps": st.builds(
        lambda c, s, k, last, cells: lambda: _check_integer_steps(c, s, k, last, cells),
        either(st.integers(-1, 2)), either(st.lists(st.integers(-30, 30), max_size=5)),
        either(st.lists(st.integers(-1, 9), max_size=5)), either(st.integers(-40, 40)),
        st.lists(st.integers(-50, 50).map(str) | st.sampled_from(
            ["007", "-0", "+1", "1.0", "", " 1", "-", "1" * 19, "x"]), min_size=1, max_size=8)),
    "gather_codes": st.builds(
        lambda a, hostile: lambda: _check_gather(*(a if hostile is None else
                                                   a[:hostile[0]] + (hostile[1],) +
                                                   a[hostile[0] + 1:])),
        gather_args(), st.none() | st.tuples(st.integers(0, 3), HOSTILE)),
    "CsvSplitter.reset": st.builds(
        lambda k: lambda: _core.CsvSplitter(",", k, 1).reset(), st.integers(1, 3)),
    "format_csv": st.builds(
        lambda c, sep, eol, miss: lambda: _check_format_csv(c, sep, eol, miss),
        either(st.lists(either(st.tuples(
            either(st.lists(st.integers(-3, 5), min_size=2, max_size=2).map(np.array)),
            st.one_of(st.none(), st.lists(st.text(max_size=3), max_size=4)),
            st.one_of(st.none(), st.just(np.array([True, False]))))), max_size=3)),
        either(st.sampled_from([",", ";;", ""])), either(st.sampled_from(["\n", "\r\n"])),
        either(st.text(max_size=2))),
    "CodeCsvFormat": st.builds(
        lambda c, sep, eol: lambda: call(_core.CodeCsvFormat, c, sep, eol),
        either(st.lists(either(st.tuples(
            either(st.lists(st.text(max_size=3), max_size=4)),
            st.one_of(st.none(), hostile_arrays(), st.just(np.array([0.0, -2.0]))),
            st.one_of(st.none(), hostile_arrays(), st.just(np.array([1.0, 3.0]))))),
            max_size=3)),
        either(st.sampled_from([",", ";;", ""])), either(st.sampled_from(["\n", "\r\n"]))),
    "CodeCsvFormat.format": st.builds(
        lambda codes, uniform, size: lambda: _check_format_codes(codes, uniform, size),
        st.one_of(records(), HOSTILE), either(st.lists(hostile_arrays(), max_size=2)),
        either(st.integers(0, 400))),
    "CodeCsvFormat.properties": st.builds(
        lambda: lambda: (_CODE_FORMAT.max_row_bytes, _CODE_FORMAT.drawn_columns,
                         _CODE_FORMAT.slack)),
    "CalibratedTree.properties": st.builds(
        lambda m: lambda: (m.tree, m.log_partition, m.beliefs), calibrated_trees()),
    "Calibrator": st.builds(lambda t, p, q: lambda: call(_core.Calibrator, t, p, q),
                            st.one_of(trees(), HOSTILE), either(st.lists(id_lists, max_size=3)),
                            either(st.lists(id_lists, max_size=3))),
    "Calibrator.run": st.builds(lambda c, v: lambda: call(c.run, v), calibrators(),
                                hostile_arrays()),
    "Calibrator.spread": st.builds(lambda c, v: lambda: call(c.spread, v), calibrators(),
                                   hostile_arrays()),
    "Calibrator.calibrated": st.builds(
        lambda c, run: lambda: (run and c.run(np.zeros(c.potential_cells)), call(c.calibrated)),
        calibrators(), st.booleans()),
    "Calibrator.properties": st.builds(lambda c: lambda: (c.potential_cells, c.query_cells),
                                       calibrators()),
    "fit": st.builds(lambda c, n, total, extra, it, tol, cb:
                     lambda: _check_fit(c, n, total, extra, it, tol, cb),
                     st.one_of(calibrators(), st.just(None)),
                     st.one_of(st.none(), st.integers(0, 3)),
                     either(st.floats(0.5, 10)), st.one_of(st.none(), CALLBACKS),
                     either(st.integers(-1, 3)), either(st.floats(0, 1)), CALLBACKS),
    "sample_group": st.builds(lambda p, m, how, s: lambda: _check_sample_group(p, m, how, s),
                              either(st.lists(st.floats(-1, 10) | st.sampled_from(
                                  [0.0, math.nan, math.inf]), max_size=5).map(np.array)),
                              either(st.integers(-2, 50) | st.sampled_from(HUGE_INTS)),
                              either(st.sampled_from(["round", "sample", "x"])),
                              either(st.integers(0, 2**64 - 1))),
    "marginalize": st.builds(lambda v, k, log: lambda: _check_marginalize(v, k, log),
                             hostile_arrays(), either(id_lists), either(st.booleans())),
    "logsumexp": st.builds(lambda v: lambda: call(_core.logsumexp, v), HOSTILE),
    "grid_l1": st.builds(lambda c, r, g, s: lambda: _check_grid_l1(c, r, g, s),
                         either(st.lists(st.integers(-2**61, 2**61), max_size=6).map(
                             lambda v: np.array(v, dtype=np.int64))),
                         either(st.lists(st.floats(allow_nan=True, allow_infinity=True),
                                         max_size=6).map(np.array)),
                         either(st.sampled_from([1.0, 2.0 ** 20])),
                         either(st.lists(st.integers(-1, 6), max_size=3).map(
                             lambda v: np.array(v, dtype=np.int64)))),
    "max_abs_finite": st.builds(lambda v: lambda: call(_core.max_abs_finite, v), HOSTILE),
    "copy_max_abs_finite": st.builds(lambda v, d: lambda: call(_core.copy_max_abs_finite, v, d),
                                     HOSTILE, either(st.integers(0, 6).map(np.zeros))),
    "checked_cell_count": st.builds(lambda s: lambda: _check_cell_count(s),
                                    either(st.lists(st.integers(-1, 2**40) | st.sampled_from(
                                        HUGE_INTS), max_size=4))),
    "max_table_cells": st.just(lambda: call(_core.max_table_cells)),
    "set_max_table_cells": st.builds(lambda c: lambda: _check_set_max(c),
                                     either(st.integers(-1, 2**40) | st.sampled_from(HUGE_INTS))),
    "count_marginals": st.builds(
        lambda r, sizes, subsets, w, names, cells, threads:
        lambda: call(_core.count_marginals, r, sizes, subsets, w, names=names, max_cells=cells,
                     threads=threads),
        either(records()), either(st.lists(st.integers(-1, 5), max_size=4)),
        either(st.lists(id_lists, max_size=3)), st.one_of(st.none(), hostile_arrays()),
        st.one_of(st.none(), HOSTILE, st.lists(st.text(max_size=2), max_size=4)),
        either(st.integers(0, 10**4)), either(st.integers(-1, 2))),
    "validate_codes": st.builds(
        lambda r, sizes, names: lambda: call(_core.validate_codes, r, sizes, names=names),
        either(records()), either(st.lists(st.integers(-1, 5), max_size=4)),
        st.one_of(st.none(), HOSTILE)),
    # Exact noise (bind_noise.cpp): types and signs only; counts stay small here.
    "sliced_wasserstein": st.builds(
        lambda x, p, t, d, g, th: lambda: _check_sliced(x, p, t, d, g, th),
        either(clouds()), either(st.lists(either(st.tuples(small_ints, small_ints)), max_size=3)),
        either(st.lists(either(st.builds(lambda a, b: np.ones((a, b)), st.integers(0, 3),
                                         st.integers(0, 3))), max_size=3)),
        either(st.builds(lambda t, k: np.ones((t, k, 2)) / np.sqrt(2), st.integers(0, 3),
                         st.integers(0, 3))),
        st.booleans(), either(st.integers(-1, 3))),
    "particle_adam_step": st.builds(
        lambda x, c, s, k: lambda: _check_adam(x, c, s, k), either(clouds()), either(id_lists),
        either(st.integers(-1, 3)), either(st.floats(-0.5, 1.5))),
    "snap_to_grid": st.builds(lambda x, s: lambda: call(_core.snap_to_grid, x, s),
                              either(clouds()), either(st.lists(small_ints, max_size=4))),
    "discrete_gaussian": st.builds(
        lambda n, d, count, seed: lambda: call(_core.discrete_gaussian, n, d, count, seed),
        either(st.integers(-2, 10**6)), either(st.integers(-2, 10**3)),
        st.integers(-2, 20) | st.sampled_from([None, 1.5, "3", -(2**70)]),
        st.one_of(st.none(), st.integers(0, 2**64 - 1), HOSTILE)),
}


def covered_names():
    """Every public name of dpcore._core that can be called (or read) from Python."""
    names = set()
    for name in dir(_core):
        obj = getattr(_core, name)
        if name.startswith("_") or not callable(obj):
            continue
        names.add(name)
        if isinstance(obj, type):
            for member in dir(obj):
                attr = getattr(obj, member)
                if member.startswith("_"):
                    continue
                names.add(f"{name}.{member}" if callable(attr) else f"{name}.properties")
    return names


@pytest.fixture(autouse=True)
def small_table_cap():
    """Hostile sizes below the default cap (2^30 cells) are legal but take gigabytes and
    minutes; a small cap keeps every generated call cheap and exercises the cap's refusals."""
    before = _core.set_max_table_cells(1 << 16)
    yield
    _core.set_max_table_cells(before)


def test_cases_cover_every_binding():
    assert covered_names() == set(CASES)


FUZZ = settings(max_examples=25, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                       HealthCheck.data_too_large])


@pytest.mark.parametrize("name", sorted(CASES))
@FUZZ
@given(data=st.data())
def test_binding_returns_a_result_or_a_dpcore_error(name, data):
    data.draw(CASES[name], label=name)()


def test_gather_codes_refuses_an_out_that_is_also_its_input():
    # review 16b: positions checked before the writes could be overwritten by them when they
    # were views of out (a read outside its table, a crash)
    n = 64
    out = np.zeros((n, 2), np.uint32)
    flat = out.view(np.int32).reshape(-1)
    tables = [np.array([0x7fffffff], dtype=np.int64)] * 2
    with pytest.raises(ValueError, match="shares memory"):
        _core.gather_codes([flat[n:2 * n], flat[0:n]], tables, [False, False], out)
    assert not out.any()
    wide = np.zeros((1, 1), dtype=np.dtype("longlong"))      # int64 under another name
    _core.gather_codes([np.array([0], np.int32)], [np.array([5], np.int64)], [False], wide)
    assert wide.tolist() == [[5]]

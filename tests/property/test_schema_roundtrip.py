"""Round trips: codes -> decode -> encode is the identity for every schema, decoding method
and seed; schema -> JSON -> schema is the identity; encoding agrees with a brute-force bin
search."""
import numpy as np
import pandas as pd
from hypothesis import given, settings, strategies as st

from dpcore.encoding import decode_codes, encode_frame
from dpcore.schema import CategoricalColumn, CodeColumn, NumericColumn, Schema, category_key


@st.composite
def numeric_columns(draw, name):
    integer = draw(st.booleans())
    if integer:
        points = sorted(draw(st.sets(st.integers(-1000, 1000), min_size=2, max_size=8)))
    else:
        points = sorted(draw(st.sets(st.floats(-1e6, 1e6, allow_nan=False, width=32),
                                     min_size=2, max_size=8)))
    edges = [float(p) for p in points]
    if draw(st.booleans()):  # a top-coded point bin
        edges.append(edges[-1])
    return NumericColumn(name, tuple(edges), integer,
                         draw(st.sampled_from(["error", "clip"])),
                         draw(st.sampled_from(["error", "code"])),
                         draw(st.sampled_from(["uniform", "midpoint"])))


# Lone surrogates are not text a file can hold (the schema refuses them); digits are frequent so
# that numeric labels ("7", "0.5") are drawn often.
LABELS = st.text(st.one_of(st.sampled_from("0123456789.-e"),
                           st.characters(blacklist_characters="\x00",
                                         blacklist_categories=("Cs",))),
                 min_size=1, max_size=4)


@st.composite
def categorical_columns(draw, name):
    # Labels that are the same number ("7", "07") are one category, so they are drawn unique
    # by category_key.
    cats = draw(st.lists(LABELS, min_size=1, max_size=6, unique_by=category_key))
    other = draw(st.one_of(st.none(), LABELS.filter(
        lambda o: category_key(o) not in {category_key(c) for c in cats})))
    return CategoricalColumn(name, tuple(cats), other, draw(st.sampled_from(["error", "code"])))


@st.composite
def schemas(draw):
    n = draw(st.integers(1, 4))
    cols = []
    for j in range(n):
        kind = draw(st.sampled_from(["num", "cat", "code"]))
        if kind == "num":
            cols.append(draw(numeric_columns(f"c{j}")))
        elif kind == "cat":
            cols.append(draw(categorical_columns(f"c{j}")))
        else:
            cols.append(CodeColumn(f"c{j}", draw(st.integers(1, 300))))
    encoded = all(isinstance(c, CodeColumn) for c in cols)
    # The missing token must not collide with a category: labels never contain "\x00".
    tokens = () if encoded else ("\x00",)
    return Schema(cols, missing_values=tokens)


@settings(max_examples=100, deadline=None)
@given(schemas(), st.integers(0, 40), st.integers(0, 2**32 - 1),
       st.sampled_from([None, "uniform", "midpoint"]))
def test_decode_then_encode_is_identity(schema, rows, seed, method):
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, c.size, rows) for c in schema.columns], axis=1)
    frame = decode_codes(codes, schema, seed=seed, method=method)
    assert list(frame.columns) == list(schema.names)
    for col in schema.columns:
        if isinstance(col, NumericColumn) and col.integer:
            assert pd.api.types.is_integer_dtype(frame[col.name].dtype)
    # Through strings too, as a CSV would carry them.
    as_text = frame.astype(object).where(frame.notna(), None)
    for again in (frame, as_text.map(lambda v: v if v is None else str(v))):
        assert np.array_equal(encode_frame(again, schema), codes)


@settings(max_examples=100, deadline=None)
@given(schemas())
def test_json_roundtrip(schema):
    assert Schema.from_dict(schema.to_dict()) == schema


@settings(max_examples=100, deadline=None)
@given(numeric_columns("x"), st.lists(st.floats(-2e6, 2e6, allow_nan=False), max_size=30))
def test_numeric_encoding_matches_brute_force(col, values):
    if col.integer:
        values = [float(round(v)) for v in values]
    inside = [v for v in values if col.lower <= v <= col.upper]
    if not inside:
        return
    codes = encode_frame(pd.DataFrame({"x": inside}), Schema([col]))[:, 0]
    for v, k in zip(inside, codes):
        e = col.edges
        last = col.bins - 1
        hits = [b for b in range(col.bins)
                if e[b] <= v and (v < e[b + 1] or (b == last and v <= e[b + 1]))]
        assert k == hits[0]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-10**6, 10**6), min_size=1, max_size=8, unique=True),
       st.lists(st.integers(0, 7), max_size=20))
def test_numeric_categories_encode_alike_from_text_ints_and_floats(numbers, picks):
    col = CategoricalColumn("x", tuple(str(n) for n in numbers))
    values = [numbers[p % len(numbers)] for p in picks]
    schema = Schema([col])
    expected = [p % len(numbers) for p in picks]
    for frame in (pd.DataFrame({"x": [str(v) for v in values]}, dtype=object),
                  pd.DataFrame({"x": [f"{v}.0" for v in values]}, dtype=object),
                  pd.DataFrame({"x": np.array(values, dtype=np.int64)}),
                  pd.DataFrame({"x": np.array(values, dtype=np.float64)})):
        assert encode_frame(frame, schema)[:, 0].tolist() == expected

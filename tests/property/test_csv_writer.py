"""The compiled CSV writer (dpcore._core.format_csv behind encoding._plain_csv) gives pandas'
bytes, for any frame of the column kinds it takes (int64, nullable Int64, texts as object or
category), and declines (None) whatever pandas must quote or format itself."""
import csv
import os

import numpy as np
import pandas as pd
from hypothesis import given, settings, strategies as st

from dpcore import encoding

# Texts from a small alphabet with the delimiter, a quote and line breaks in it (drawn often),
# and non-ASCII letters: every kind of field the writer must either match or decline.
TEXTS = st.text(alphabet=st.sampled_from(list("ab é7-.,;\"\n\r") + ["中"]), max_size=4)


@st.composite
def columns(draw, rows):
    kind = draw(st.sampled_from(["int64", "Int64", "object", "category"]))
    if kind == "int64":
        return np.array(draw(st.lists(st.integers(-2 ** 63, 2 ** 63 - 1), min_size=rows,
                                      max_size=rows)), dtype=np.int64)
    if kind == "Int64":
        return pd.array(draw(st.lists(st.none() | st.integers(-2 ** 63, 2 ** 63 - 1),
                                      min_size=rows, max_size=rows)), dtype="Int64")
    labels = draw(st.lists(st.none() | TEXTS, min_size=rows, max_size=rows))
    return pd.Categorical(labels) if kind == "category" else pd.Series(labels, dtype=object)


@st.composite
def frames(draw):
    rows = draw(st.integers(0, 12))
    width = draw(st.integers(2, 5))
    return pd.DataFrame({f"c{j}": draw(columns(rows)) for j in range(width)})


@settings(max_examples=300, deadline=None)
@given(frames(), st.sampled_from([",", ";", "\t", "|"]), st.sampled_from(["", "?", "NA", "é"]),
       st.booleans())
def test_the_compiled_writer_gives_pandas_bytes_or_declines(frame, sep, missing, header):
    expected = frame.to_csv(None, index=False, header=header, na_rep=missing,
                            sep=sep).encode("utf-8")
    data = encoding._plain_csv(frame, missing, sep, header=header)
    if data is not None:
        assert data == expected
    else:   # declined only for a field (or name) pandas quotes
        special = (sep, '"', "\n", "\r")
        texts = [v for c in frame.columns if frame[c].dtype in (object, "category")
                 for v in frame[c].dropna()]
        assert any(any(x in str(t) for x in special) for t in texts + [missing])


@settings(max_examples=100, deadline=None)
@given(frames())
def test_write_table_is_pandas_bytes_whatever_the_path(tmp_path_factory, frame):
    path = tmp_path_factory.mktemp("w") / "t.csv"
    encoding.write_table([frame, frame], path, missing_token="?")
    # a bare carriage return is quoted (pandas' minimal quoting leaves it bare: the file would
    # not read back), by quoting every text of such a table
    quoting = csv.QUOTE_NONNUMERIC if encoding._has_cr(frame, "?") else csv.QUOTE_MINIMAL
    once = frame.to_csv(None, index=False, na_rep="?", quoting=quoting)
    again = frame.to_csv(None, index=False, header=False, na_rep="?", quoting=quoting)
    assert path.read_bytes() == (once + again).encode("utf-8")
    assert os.linesep in once

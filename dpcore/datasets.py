"""Bundled public datasets, reachable without a path: ``frame, schema = dpcore.datasets.adult()``.

Each dataset is a folder of ``dpcore/data`` holding ``<name>-raw.csv`` (raw values), its public
``schema.json`` and a README with provenance and licence. They are public benchmarks for demos
and tests; a schema for sensitive data must come from public knowledge, not from its records.

>>> names()
['adult']
>>> frame, schema = adult()
>>> frame.shape, schema.names[:3]
((48842, 15), ('age', 'workclass', 'fnlwgt'))
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from dpcore.errors import InvalidArgumentError
from dpcore.schema import Schema

DATA_DIR = Path(__file__).resolve().parent / "data"


def names() -> list[str]:
    """The bundled datasets."""
    return sorted(p.name for p in DATA_DIR.iterdir() if (p / "schema.json").is_file())


def paths(name: str) -> tuple[Path, Path]:
    """``(data CSV, schema JSON)`` of a bundled dataset."""
    if name not in names():
        raise InvalidArgumentError(f"dataset must be one of {names()}, got {name!r}")
    folder = DATA_DIR / name
    return next(folder.glob("*-raw.csv")), folder / "schema.json"


def load(name: str) -> tuple[pd.DataFrame, Schema]:
    """A bundled dataset's raw values (every field as text, as in its CSV) and its schema."""
    data, schema_path = paths(name)
    schema = Schema.load(schema_path)
    frame = pd.read_csv(data, dtype=str, keep_default_na=False, na_filter=False)
    return frame, schema


def adult() -> tuple[pd.DataFrame, Schema]:
    """UCI Adult (48,842 rows, 15 columns; CC BY 4.0; see dpcore/data/adult/README.md)."""
    return load("adult")

"""Regenerate schema.json from the public Adult metadata (adult-meta.json of the dpcore data
kit). Run: python make_schema.py /path/to/adult-meta.json > schema.json

The metadata's categories and bin edges are the public discretisation used across the
Private-PGM / AIM literature; we translate them into the dpcore schema format unchanged, so
the encoded bundled data equals the kit's integer-coded adult.csv column for column.
"""
import json
import sys

RAW_NAMES = {"income>50K": "income"}  # the raw CSV's header for the label column


def translate(meta: dict) -> dict:
    columns = {}
    for name, col in meta["columns"].items():
        missing = "error" if col["missing_code"] is None else "code"
        if col["kind"] == "categorical":
            labels = [c for c in col["labels"] if c != "<missing>"]
            spec = {"type": "categorical", "categories": labels, "missing": missing}
        elif col["kind"] == "numeric-bins":
            spec = {"type": "numeric", "integer": True, "bins": [int(e) for e in col["edges"]],
                    "out_of_bounds": "error", "missing": missing, "decode": "uniform"}
        elif col["kind"] == "numeric-ordinal":
            values = [int(v) for v in col["labels"]]
            assert values == list(range(values[0], values[-1] + 1))
            spec = {"type": "numeric", "integer": True, "lower": values[0],
                    "upper": values[-1], "bins": len(values), "missing": missing}
        else:
            raise ValueError(f"unknown kind {col['kind']!r}")
        columns[RAW_NAMES.get(name, name)] = spec
    return {"format": "dpcore-schema", "version": 1,
            "description": "UCI Adult (48842 rows), public discretisation from the dpcore "
                           "data kit's adult-meta.json; '?' marks a missing value.",
            "missing_values": ["?"], "columns": columns}


if __name__ == "__main__":
    print(json.dumps(translate(json.load(open(sys.argv[1]))), indent=1))

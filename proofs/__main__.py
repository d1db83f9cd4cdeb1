"""`python -m proofs [name ...]`: run the claims and print a (claim, status) table."""
import sys

from . import MODULES, format_table, run


def main(argv=None) -> int:
    names = (argv if argv is not None else sys.argv[1:]) or list(MODULES)
    unknown = [n for n in names if n not in MODULES]
    if unknown:
        print(f"unknown proof(s): {', '.join(unknown)}; known: {', '.join(MODULES)}", file=sys.stderr)
        return 2
    results = [run(n) for n in names]
    print(format_table(results))
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

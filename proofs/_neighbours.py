"""Small datasets and their add/remove-one neighbours, for checks that run the real curator."""
import itertools
import random
from contextlib import contextmanager

import numpy as np


def records_of(domain):
    """Every possible record (one code per attribute) of a small domain."""
    return [list(r) for r in itertools.product(*(range(n) for n in domain.shape))]


def neighbour_pairs(domain, rng: random.Random, datasets: int, max_rows: int = 4):
    """(D, D') record arrays differing by one added record, for random D; removing one record
    is the same pair read the other way round, so every check uses both directions."""
    pool = records_of(domain)
    for _ in range(datasets):
        rows = [rng.choice(pool) for _ in range(rng.randint(0, max_rows))]
        for extra in pool:
            yield (np.array(rows, dtype=np.int64).reshape(-1, len(domain)),
                   np.array(rows + [extra], dtype=np.int64))


@contextmanager
def patched(module, name, value):
    """Temporarily replace module.name (used to observe what the real code computes)."""
    old = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, old)

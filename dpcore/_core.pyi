"""Type stub of the compiled extension dpcore._core (csrc/python/*.cpp).

Use the Python API in dpcore (Domain, Dataset, Factor, JunctionTree, ...); this module is
its engine. Attributes are named by position (0-based ids in domain order). Errors are the
classes of dpcore.errors: InvalidArgumentError, DomainError, TableTooLargeError (ValueError)
and DpcoreTypeError (TypeError).
"""
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

# -- marginals (bind_marginals.cpp) ----------------------------------------------------------
MAX_CELLS_LIMIT: int

def count_marginals(
    records: npt.NDArray[np.integer],
    sizes: Sequence[int],
    subsets: Sequence[Sequence[int]],
    weights: npt.ArrayLike | None = None,
    *,
    names: Sequence[str] | None = None,
    max_cells: int = 0,
    threads: int = 0,
) -> list[npt.NDArray[np.float64]]: ...
def validate_codes(
    records: npt.NDArray[np.integer],
    sizes: Sequence[int],
    *,
    names: Sequence[str] | None = None,
    threads: int = 0,
) -> None: ...
def grid_l1(
    cells: npt.NDArray[np.int64],
    reference: npt.NDArray[np.float64],
    grid: float,
    sizes: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]: ...
def max_abs_finite(values: npt.NDArray[np.float64]) -> float: ...
def copy_max_abs_finite(src: npt.NDArray[np.float64], dst: npt.NDArray[np.float64]) -> float: ...

# -- factors and table caps (bind_factor.cpp) ------------------------------------------------
def marginalize(
    values: npt.NDArray[np.float64], keep: Sequence[int], log: bool = False
) -> npt.NDArray[np.float64]: ...
def logsumexp(values: npt.NDArray[np.float64]) -> float: ...
def checked_cell_count(shape: Sequence[int]) -> int: ...
def max_table_cells() -> int: ...
def set_max_table_cells(cells: int) -> int: ...

# -- junction trees (bind_junction_tree.cpp) -------------------------------------------------
class JunctionTree:
    def __init__(self, shape: Sequence[int], cliques: Sequence[Sequence[int]]) -> None: ...
    @property
    def shape(self) -> list[int]: ...
    @property
    def cliques(self) -> list[list[int]]: ...
    @property
    def input_cliques(self) -> list[list[int]]: ...
    @property
    def edges(self) -> list[tuple[int, int]]: ...
    @property
    def order(self) -> list[int]: ...
    def parent(self, clique: int) -> int: ...
    def separator(self, clique: int) -> list[int]: ...
    @property
    def size(self) -> int: ...
    @property
    def size_mb(self) -> float: ...
    def hypothetical_size_mb(self, extra_cliques: Sequence[Sequence[int]]) -> float: ...
    def hypothetical_sizes_mb(
        self, extra_clique_sets: Sequence[Sequence[Sequence[int]]]
    ) -> list[float]: ...
    def containing_clique(self, attrs: Sequence[int]) -> int: ...
    def calibrate(
        self, log_potentials: Sequence[tuple[Sequence[int], npt.NDArray[np.float64]]]
    ) -> CalibratedTree: ...

class CalibratedTree:
    @property
    def tree(self) -> JunctionTree: ...
    @property
    def log_partition(self) -> float: ...
    @property
    def beliefs(self) -> list[npt.NDArray[np.float64]]: ...
    def project(self, attrs: Sequence[int]) -> npt.NDArray[np.float64]: ...
    def project_many(
        self, attrs_list: Sequence[Sequence[int]], by_source: bool = False
    ) -> list[npt.NDArray[np.float64]]: ...
    def project_flat(
        self, attrs_list: Sequence[Sequence[int]], by_source: bool, starts: Sequence[int],
        size: int
    ) -> npt.NDArray[np.float64]: ...
    def sample(
        self, n: int, method: str, seed: int, dtype: str = "int64"
    ) -> npt.NDArray[Any]: ...
    def sample_blocks(
        self, n: int, method: str, seeds: Sequence[int], block: int, dtype: str = "int64"
    ) -> npt.NDArray[Any]: ...

# -- calibration (bind_calibration.cpp) -----------------------------------------------------
class Calibrator:
    def __init__(
        self,
        tree: JunctionTree,
        potentials: Sequence[Sequence[int]],
        queries: Sequence[Sequence[int]],
    ) -> None: ...
    @property
    def potential_cells(self) -> int: ...
    @property
    def query_cells(self) -> int: ...
    def run(self, potentials: npt.ArrayLike) -> npt.NDArray[np.float64]: ...
    def spread(self, values: npt.ArrayLike) -> npt.NDArray[np.float64]: ...
    def calibrated(self) -> CalibratedTree: ...

# -- estimation (bind_estimation.cpp) -------------------------------------------------------
def fit(
    calibrator: Calibrator,
    slope: npt.ArrayLike,
    target: npt.ArrayLike,
    total: float,
    constant: float,
    extra: Callable[[npt.NDArray[np.float64], npt.NDArray[np.float64]], float] | None,
    theta: npt.ArrayLike,
    max_iters: int,
    tol: float,
    smoothness: float,
    accelerated: bool,
    callback: Callable[[int, float], object] | None,
) -> tuple[npt.NDArray[np.float64], list[float], int, bool, int]: ...

# -- sampling (bind_sampling.cpp) ------------------------------------------------------------
def sample_group(
    p: npt.ArrayLike, m: int, method: str, seed: int
) -> npt.NDArray[np.int64]: ...

# -- CSV text (bind_csv.cpp) --------------------------------------------------------------
def split_csv(
    data: bytes | bytearray | memoryview, sep: str, columns: int
) -> tuple[str, int, list[tuple[npt.NDArray[np.int32], list[str]]] | None]: ...
class CsvSplitter:
    def __init__(self, sep: str, columns: int, keep: int) -> None: ...
    def split(
        self, data: bytes | bytearray | memoryview
    ) -> tuple[str, int, list[tuple[npt.NDArray[np.int32], list[str], int]] | None]: ...
    def reset(self) -> None: ...
    def set_integer_steps(
        self, column: int, starts: list[int], codes: list[int], last: int
    ) -> None: ...
def gather_codes(
    positions: list[npt.NDArray[np.int32]], tables: list[npt.NDArray[np.int64]],
    direct: list[bool], out: npt.NDArray[np.unsignedinteger] | npt.NDArray[np.int64]
) -> None: ...
def format_csv(
    columns: list[tuple[npt.NDArray[np.integer], list[str] | None,
                        npt.NDArray[np.bool_] | None]],
    sep: str, eol: str, missing: str
) -> bytes: ...
class CodeCsvFormat:
    def __init__(
        self,
        columns: list[tuple[list[str], npt.NDArray[np.float64] | None,
                            npt.NDArray[np.float64] | None]],
        sep: str, eol: str
    ) -> None: ...
    @property
    def max_row_bytes(self) -> int: ...
    @property
    def drawn_columns(self) -> int: ...
    @property
    def slack(self) -> int: ...
    def format(
        self, codes: npt.NDArray[np.integer], uniform: list[npt.NDArray[np.float64]],
        out: bytearray | memoryview
    ) -> int: ...

# -- exact noise (bind_noise.cpp) ------------------------------------------------------------
def discrete_gaussian(
    sigma_sq_num: int, sigma_sq_den: int, count: int, key: bytes, nonce: int = 0
) -> npt.NDArray[np.int64]: ...

# -- sliced Wasserstein, PrivPGD (bind_sliced_wasserstein.cpp) -------------------------------
SLICED_KEY_BITS: int

def sliced_wasserstein(
    particles: npt.NDArray[np.float64],
    pairs: Sequence[Sequence[int]],
    tables: Sequence[npt.ArrayLike],
    directions: npt.ArrayLike,
    *,
    grad: npt.NDArray[np.float64] | None = ...,
    threads: int = ...,
) -> float: ...
def particle_adam_step(
    x: npt.NDArray[np.float64],
    grad: npt.NDArray[np.float64],
    exp_avg: npt.NDArray[np.float64],
    exp_avg_sq: npt.NDArray[np.float64],
    columns: Sequence[int],
    step: int,
    *,
    learning_rate: float = ...,
    beta1: float = ...,
    beta2: float = ...,
    eps: float = ...,
    keep: float = ...,
    seed: int = ...,
    threads: int = ...,
) -> None: ...
def snap_to_grid(particles: npt.ArrayLike, sizes: Sequence[int]) -> npt.NDArray[np.int64]: ...

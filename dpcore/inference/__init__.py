"""Private-PGM inference: estimate a graphical model from noisy marginal measurements.

``Measurement`` describes one release, ``estimate`` fits a ``GraphicalModel`` (NIST-MST paper
Sec. 4.2; McKenna, Sheldon & Miklau, ICML 2019), ``independent_model`` is the 1-way baseline.
"""
from dpcore.inference.estimation import METHODS, EstimationResult, check_first_step, estimate
from dpcore.inference.independent import independent_model
from dpcore.inference.measurement import Measurement, estimate_total
from dpcore.inference.model import GraphicalModel
from dpcore.inference.zeros import StructuralZero

__all__ = ["METHODS", "EstimationResult", "GraphicalModel", "Measurement", "check_first_step",
           "estimate",
           "StructuralZero", "estimate_total", "independent_model"]

"""Statistics for AgentFloor runs: which model can serve which tier, how sure we are, at what cost.

Entry point: :func:`aggregate` (records + model metadata -> :class:`Summary`). The building
blocks are importable for reuse and testing; every result type is a frozen dataclass that
serialises deterministically via ``to_jsonable``/``Summary.to_json``.
"""

from .aggregate import SCHEMA_VERSION, ModelInfo, Summary, aggregate
from .bootstrap import RatioCI, mean_ci, ratio_ci, resample_weights
from .breakdown import FailureBreakdown, compute_breakdown
from .cost import CostStats, compute_cost, pareto_front
from .judge import JudgeStats, compute_judge
from .multiplicity import holm
from .paired import PairedSection, PairedTest, compare_to_reference, mcnemar_exact, paired_compare
from .recipes import DEFAULT_TARGETS_PCT, Recipe, deployment_recipes, size_order
from .records import OVERALL, TIERS, RunTable, build_table
from .reliability import KPoint, ReliabilityCurve, compute_reliability, pass_at_k, pass_hat_k
from .serialize import dumps, to_jsonable
from .tcr import TcrEstimate, compute_tcr

__all__ = [
    "DEFAULT_TARGETS_PCT", "OVERALL", "SCHEMA_VERSION", "TIERS",
    "CostStats", "FailureBreakdown", "JudgeStats", "KPoint", "ModelInfo", "PairedSection", "PairedTest", "RatioCI", "Recipe",
    "ReliabilityCurve", "RunTable", "Summary", "TcrEstimate",
    "aggregate", "build_table", "compare_to_reference", "compute_breakdown", "compute_cost", "compute_judge", "compute_reliability",
    "compute_tcr", "deployment_recipes", "dumps", "holm", "mcnemar_exact", "mean_ci", "paired_compare",
    "pareto_front", "pass_at_k", "pass_hat_k", "ratio_ci", "resample_weights", "size_order", "to_jsonable",
]

"""Databases to datasets, splits by workload, metrics, and offline train/evaluate.

Importing this package does not import TVM; the functions that need it do so lazily.
"""

from costlab.data.database import (
    Database,
    DatabaseRecord,
    DatabaseWorkload,
    LineIssue,
    Progress,
    ReadSummary,
    make_context,
    read_database,
)
from costlab.data.dataset import (
    COLUMNS,
    DatasetSummary,
    build_dataset,
    dataset_features,
    extract_features,
    load_dataset,
    load_metadata,
)
from costlab.data.metrics import (
    RankingMetrics,
    convergence_auc,
    kendall_tau,
    pairwise_accuracy,
    peak_score,
    ranking_metrics,
    t90,
    t95,
    top_k_score,
    trials_to_reach,
)
from costlab.data.offline import CrossValResult, EvalResult, TrainResult, cross_validate, evaluate_model, train_model
from costlab.data.splits import (
    SPLIT_KINDS,
    Split,
    holdout_split,
    kfold_by_workload,
    leave_one_family_out,
    leave_one_task_out,
    make_splits,
)

__all__ = [
    "COLUMNS",
    "CrossValResult",
    "Database",
    "DatabaseRecord",
    "DatabaseWorkload",
    "DatasetSummary",
    "EvalResult",
    "LineIssue",
    "Progress",
    "RankingMetrics",
    "ReadSummary",
    "SPLIT_KINDS",
    "Split",
    "TrainResult",
    "build_dataset",
    "convergence_auc",
    "cross_validate",
    "dataset_features",
    "evaluate_model",
    "extract_features",
    "holdout_split",
    "kendall_tau",
    "kfold_by_workload",
    "leave_one_family_out",
    "leave_one_task_out",
    "load_dataset",
    "load_metadata",
    "make_context",
    "make_splits",
    "pairwise_accuracy",
    "peak_score",
    "ranking_metrics",
    "read_database",
    "t90",
    "t95",
    "top_k_score",
    "train_model",
    "trials_to_reach",
]

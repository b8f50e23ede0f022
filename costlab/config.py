"""The experiment config: pydantic schema, YAML loading and dotted overrides.

This is the only module that turns user input into typed objects. Every error is a
:class:`CostlabError` naming the file, the field and the value.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from costlab.errors import CostlabError
from costlab.targets import usable_cores


def _leaf_types(annotation) -> set:
    """The types an annotation admits, through unions, lists and Annotated (Any and Literal kept as is)."""
    args = get_args(annotation)
    if get_origin(annotation) is Literal or not args:
        return {annotation}
    return set().union(*(_leaf_types(a) for a in args))


MAX_COUNT = 2**31 - 1  # MetaSchedule takes trials and sizes as 32-bit integers
MAX_TIMEOUT_S = 1e6  # about 11.6 days; Python's timers overflow near 9.2e9 s


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # .inf overflowed timeouts, tied every kappa score

    @field_validator("*", mode="before")
    @classmethod
    def _no_booleans_for_numbers(cls, value, info):
        """YAML's ``true`` is not a count or a rate: pydantic would read it as 1 (``trials: true``)."""
        leaves = _leaf_types(cls.model_fields[info.field_name].annotation)
        if bool in leaves or Any in leaves or not leaves & {int, float}:
            return value
        if isinstance(value, bool) or (isinstance(value, list) and any(isinstance(v, bool) for v in value)):
            raise ValueError("must be a number, not true or false")
        return value


class WorkloadSpec(_Strict):
    name: str
    params: dict[str, Any] = Field(default_factory=dict)
    space: Literal["default", "cuda-tensorcore"] | None = Field(
        None, description="design space for this workload; default: search.space")


class CostModelSpec(_Strict):
    """One cost model of the comparison. A bare string in YAML means ``{name: ...}``."""

    name: str
    label: str | None = Field(None, max_length=100, description="name shown in MLflow and used as a directory name; defaults to name")
    params: dict[str, Any] = Field(default_factory=dict, description="the model's hyper-parameters")
    features: str | None = Field(None, min_length=1, description="feature extractor(s), e.g. analysis+trace")
    pretrained: str | None = Field(None, min_length=1, description="a saved model file to warm-start from")
    pretrain_on: str | None = Field(
        None, min_length=1, description="a dataset directory: at session start, train the model on it without the tuned "
                          "workload (a leave-one-task-out warm start), then go on as with pretrained")
    pretrain_rows: int | None = Field(
        None, ge=2, description="with pretrain_on: train on at most this many rows, the same number from each "
                                "other workload where they allow, drawn by the session's seed")
    pretrain_family: bool | Literal["related", "group", "measured"] = Field(
        False, description="with pretrain_on: train only on the other workloads of the tuned one's operator family "
                           "(the dataset's family column), or on every other workload when it has none; 'related': "
                           "when it has none, on those of the related families first; 'group': on the family and "
                           "the related families together (costlab.data.pretraining_set); 'measured': on the family "
                           "whose model ranks the first measured batch best (costlab.models.measured_warm_start)")
    pretrain_tuned: bool = Field(
        False, description="with pretrain_on: also train on the dataset's rows of the tuned workload itself (measured "
                           "on another machine or target): a transfer, not a leave-one-task-out warm start")
    frozen: bool = Field(False, description="keep the pretrained model as is (no online update)")
    warm: Literal["finetune", "blend"] = Field(
        "finetune", description="with pretrained: fine-tune it on the task's measurements, or keep it and blend "
                                "it with a model of the task alone (costlab.models.warm_blend)")
    blend_samples: int = Field(64, ge=1, description="warm: blend: task samples at which both models weigh one half")
    kappa: float = Field(0.0, ge=0.0, description="optimism: score = mean + kappa * spread")
    retrain_growth: float = Field(
        0.0, ge=0.0, description="retrain only when data grew by this fraction (0: every iteration)"
    )
    tvm_scores: Literal["ordered", "raw"] = Field(
        "ordered", description="how a costlab model's scores reach MetaSchedule, which sets every score below 0 "
                               "to 0: 'ordered' maps them above 0 in the same order (costlab.search.adapter."
                               "tvm_scores); 'raw' hands them as they are, so those below 0 tie (every costlab run "
                               "before 2026-12-02)")

    @field_validator("label")
    @classmethod
    def _safe_label(cls, value: str | None) -> str | None:
        if value is not None and (not re.fullmatch(r"[A-Za-z0-9_.+\-]+", value) or value in (".", "..")):
            raise ValueError("a label names MLflow runs and the session's directory: use letters, digits, "
                             "'_', '-', '+' and '.' only")
        return value

    @property
    def display_name(self) -> str:
        return self.label or self.name

    @property
    def warm_started(self) -> bool:
        """It starts from a trained model: a saved one, or one trained on a dataset at session start."""
        return bool(self.pretrained or self.pretrain_on)


class SearchSpec(_Strict):
    trials: int = Field(32, ge=1, le=MAX_COUNT, description="measured trials per (workload, model, seed)")
    trials_per_iter: int = Field(16, ge=1, le=MAX_COUNT)
    population_size: int = Field(512, ge=2, le=MAX_COUNT)
    genetic_num_iters: int = Field(4, ge=1, le=MAX_COUNT)
    genetic_mutate_prob: float = Field(0.85, ge=0.0, le=1.0)
    init_measured_ratio: float = Field(0.2, ge=0.0, le=1.0)
    eps_greedy: float = Field(0.05, ge=0.0, le=1.0)
    num_tuning_cores: int | Literal["all"] = Field(
        1, description="threads of the evolutionary search: 1 makes it reproducible; all: every core of "
                       "this machine (a CUDA search batch can take minutes on one)")
    space: Literal["default", "cuda-tensorcore"] = Field(
        "default", description="design space: the target's default rules, or tensor-core rules (fp16 CUDA)")

    @field_validator("num_tuning_cores")
    @classmethod
    def _at_least_one_core(cls, value):
        if value != "all" and value < 1:
            raise ValueError("must be at least 1, or all")
        return value

    @property
    def tuning_cores(self) -> int:
        """``num_tuning_cores`` as a number of threads (``all``: this machine's usable cores)."""
        return usable_cores() if self.num_tuning_cores == "all" else self.num_tuning_cores


class RunnerSpec(_Strict):
    kind: Literal["local", "rpc"] = "local"
    tracker: str | None = Field(None, description="HOST:PORT of a TVM RPC tracker")
    key: str | None = Field(None, description="the device key the RPC servers registered")
    timeout_s: float = Field(30.0, gt=0, le=MAX_TIMEOUT_S, description="local: seconds one candidate's measurement may take")
    session_timeout_s: float = Field(60.0, gt=0, le=MAX_TIMEOUT_S, description="rpc: seconds one candidate's RPC session (upload, "
                                                              "load, measurement) may take")
    queue_timeout_s: float = Field(600.0, gt=0, le=MAX_TIMEOUT_S, description="rpc: seconds a measurement may wait for a server "
                                                             "beyond session_timeout_s before the run stops")
    workers: int | None = Field(None, ge=1, description="rpc: measurements at once; default: the servers "
                                                        "registered under key when a session starts")

    @model_validator(mode="after")
    def _rpc_needs_tracker(self):
        if self.kind == "rpc":
            if not self.tracker or not re.fullmatch(r"[^:\s]+:\d+", self.tracker):
                raise ValueError(f"rpc runner needs tracker: HOST:PORT, got {self.tracker!r}")
            if not 1 <= self.tracker_host_port[1] <= 65535:
                raise ValueError(f"the tracker's port must be 1..65535, got {self.tracker!r}")
            if not self.key:
                raise ValueError("rpc runner needs key: the RPC servers' device key")
        # each limit is read by one kind of runner only: set for the other, it would change nothing
        if self.kind == "rpc" and "timeout_s" in self.model_fields_set:
            raise ValueError("timeout_s limits the local runner; an rpc runner's limit is session_timeout_s")
        for rpc_limit in ("session_timeout_s", "queue_timeout_s"):
            if self.kind == "local" and rpc_limit in self.model_fields_set:
                raise ValueError(f"{rpc_limit} limits an rpc runner's sessions; the local runner's limit is timeout_s")
        if self.kind == "local" and self.workers is not None:
            raise ValueError("workers is an rpc runner's number of measurements at once; the local runner "
                             "measures one at a time")
        return self

    @property
    def tracker_host_port(self) -> tuple[str, int]:
        host, port = str(self.tracker).rsplit(":", 1)
        return host, int(port)


class BuilderSpec(_Strict):
    timeout_s: float = Field(60.0, gt=0, le=MAX_TIMEOUT_S)
    workers: int | None = Field(None, ge=1, description="default: all cores")


class MeasureSpec(_Strict):
    number: int = Field(3, ge=1)
    repeat: int = Field(1, ge=1)
    min_repeat_ms: int = Field(20, ge=0)
    reduce: Literal["mean", "min"] = Field(
        "mean", description="how a trial's `repeat` timings become its latency: their mean (MetaSchedule's "
        "reading of every record), or the fastest, which the runner then records as the trial's only timing")


class MlflowSpec(_Strict):
    tracking_uri: str = Field("sqlite:///mlflow.db", min_length=1)
    experiment: str | None = Field(None, min_length=1, max_length=256,  # MLflow's SQL stores' column
                                   description="defaults to the config's name")


class ExperimentConfig(_Strict):
    name: str = Field(..., min_length=1, max_length=200)  # a folder's name (runs/<name>), and MLflow's
    target: Union[str, dict[str, Any]] = "cpu"
    workload_files: list[str] = Field(default_factory=list)
    workloads: list[WorkloadSpec] = Field(..., min_length=1)
    cost_models: list[CostModelSpec] = Field(..., min_length=1)
    seeds: list[Annotated[int, Field(ge=0, le=2**32 - 1)]] = Field(default_factory=lambda: [0], min_length=1)
    search: SearchSpec = Field(default_factory=SearchSpec)
    builder: BuilderSpec = Field(default_factory=BuilderSpec)
    runner: RunnerSpec = Field(default_factory=RunnerSpec)
    measure: MeasureSpec = Field(default_factory=MeasureSpec)
    mlflow: MlflowSpec = Field(default_factory=MlflowSpec)
    work_dir: str | None = Field(None, min_length=1, description="where tuning databases go; default runs/<name>")

    @field_validator("cost_models", mode="before")
    @classmethod
    def _names_to_specs(cls, value):
        if isinstance(value, list):
            return [{"name": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("seeds")
    @classmethod
    def _distinct_seeds(cls, value: list[int]) -> list[int]:
        if twice := sorted({s for s in value if value.count(s) > 1}):
            raise ValueError(f"seed {twice[0]} is given twice; give each seed once (a combination given "
                             "twice is one run, counted twice)")
        return value

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+", value) or value in (".", ".."):
            raise ValueError("the name is the default work_dir (runs/<name>): use letters, digits, '_', '-' and "
                             "'.' only, and not '.' or '..'")
        return value

    @property
    def experiment_name(self) -> str:
        return self.mlflow.experiment or self.name

    @property
    def work_path(self) -> Path:
        return Path(self.work_dir or f"runs/{self.name}")


def _parse_override(text: str, label: str, example: str) -> tuple[list[str], Any]:
    if "=" not in text:
        raise CostlabError(f"{label} {text!r} is not of the form KEY=VALUE (KEY dotted, e.g. {example})")
    key, raw = text.split("=", 1)
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_\-]*(\.[A-Za-z0-9_\-]+)*", key):
        raise CostlabError(f"{label} {text!r}: {key!r} is not a dotted key")
    try:
        value = yaml.load(raw, Loader=_UniqueKeyLoader) if raw != "" else ""
    except yaml.YAMLError as err:
        split = " (the shell split it at a space: quote the whole override)" if raw.rstrip().endswith((",", "[", "{")) else ""
        raise CostlabError(f"{label} {text!r}: value {raw!r} is not valid YAML{split}: "
                           f"{' '.join(str(err).split())}") from None
    return key.split("."), value


def apply_overrides(data: dict, overrides: list[str], label: str = "override",
                    example: str = "search.trials=64") -> dict:
    """Set ``a.b.c=value`` entries (value parsed as YAML) into a nested dict. A mapping value
    merges into a mapping already there (``search={trials: 64}`` keeps the block's other keys,
    as ``search.trials=64`` does); any other value replaces it. An error names the entry as
    ``label`` (``--param``) and shows ``example`` of a good one. A key given twice is an error,
    as it is in a file (the last one would win without a word)."""
    given: dict[tuple, str] = {}  # each key an override set (a mapping's leaves), and that override
    for text in overrides:
        path, value = _parse_override(text, label, example)
        leaves = _leaf_paths(tuple(path), value)
        for leaf in leaves:
            for earlier, earlier_text in given.items():
                if leaf[:len(earlier)] == earlier or earlier[:len(leaf)] == leaf:  # the same key, or inside it
                    raise CostlabError(f"{label} {text!r}: {'.'.join(min(leaf, earlier, key=len))} is given twice "
                                       f"(also {earlier_text!r}); give each key once")
        given.update(dict.fromkeys(leaves, text))
        node = data
        for i, part in enumerate(path[:-1]):
            child = node.get(part) if isinstance(node, dict) else None
            if child is None:
                child = {}
                node[part] = child
            if not isinstance(child, dict):
                hint = (f"; it is a list: give it whole, e.g. {'.'.join(path[:i + 1])}=[...]"
                        if isinstance(child, list) else "")
                raise CostlabError(f"{label} {text!r}: {'.'.join(path[:i + 1])} is not a mapping{hint}")
            node = child
        old = node.get(path[-1])
        node[path[-1]] = _merged(old, value) if isinstance(old, dict) and isinstance(value, dict) else value
    return data


def _leaf_paths(path: tuple, value) -> list[tuple]:
    """The keys ``path=value`` sets: a mapping's leaves, else the path itself."""
    if isinstance(value, dict) and value:
        return [leaf for key, inner in value.items() for leaf in _leaf_paths((*path, str(key)), inner)]
    return [path]


def _merged(old: dict, new: dict) -> dict:
    """``old`` with ``new``'s keys set in it, mappings in both merged the same way."""
    out = dict(old)
    for key, value in new.items():
        out[key] = _merged(out[key], value) if isinstance(out.get(key), dict) and isinstance(value, dict) else value
    return out


# how pydantic names the member of a union type (``bool | Literal[...]``) an error is about
_UNION_MEMBER = re.compile(r"(str|int|float|bool|none|(dict|list|literal)\[.*\])")
_SHOULD_BE = "Input should be "


def _format_validation_error(source: str, err: ValidationError) -> str:
    """One line per field: the errors of a union's members (``target.str``, ``target.dict[str,any]``)
    are one line of the field, each member's wish joined by "or"."""
    fields: dict[str, tuple[list[str], object]] = {}
    for e in err.errors():
        loc = [str(p) for p in e["loc"]]
        if len(loc) > 1 and _UNION_MEMBER.fullmatch(loc[-1]):
            loc = loc[:-1]
        field = ".".join(loc) or "(top level)"
        fields.setdefault(field, ([], e.get("input")))[0].append(e["msg"])
    lines = []
    for field, (messages, value) in fields.items():
        if len(messages) > 1 and all(m.startswith(_SHOULD_BE) for m in messages):
            messages = [_SHOULD_BE + "; or ".join(m[len(_SHOULD_BE):] for m in messages)]
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        lines.append(f"{source}: field {field}: {'; '.join(messages)} (value: {shown})")
    return "\n".join(lines)


def _check_names(cfg: ExperimentConfig, source: str, base_dir: Path) -> None:
    from costlab.models import MODELS
    from costlab.workloads import WORKLOADS, build_workload, load_workload_file, workload_params

    for i, path in enumerate(cfg.workload_files):
        p = Path(path) if Path(path).is_absolute() else base_dir / path
        try:
            load_workload_file(p)
        except CostlabError as err:
            raise CostlabError(f"{source}: field workload_files.{i}: {err}") from None
        cfg.workload_files[i] = str(p)
    for i, w in enumerate(cfg.workloads):
        if w.name not in WORKLOADS:
            raise CostlabError(
                f"{source}: field workloads.{i}.name: unknown workload (value: {w.name!r}); "
                f"valid: {', '.join(WORKLOADS.names())}"
            )
        try:
            workload_params(w.name, w.params)
            build_workload(w.name, w.params)  # TE only, milliseconds: bad values fail here, not mid-run
        except CostlabError as err:
            raise CostlabError(f"{source}: field workloads.{i}.params: {err}") from None
    _check_distinct_workloads(cfg, source)
    for i, m in enumerate(cfg.cost_models):
        if failure := MODELS.load_failure(m.name):
            raise CostlabError(f"{source}: field cost_models.{i}.name: {failure}")
        if m.name not in MODELS:
            raise CostlabError(
                f"{source}: field cost_models.{i}.name: unknown cost model (value: {m.name!r}); "
                f"valid: {', '.join(MODELS.names())}"
            )
        _check_model_params(m, f"{source}: field cost_models.{i}.params")
        _check_trains_online(m, f"{source}: field cost_models.{i}")
        if m.pretrained:
            p = Path(m.pretrained) if Path(m.pretrained).is_absolute() else base_dir / m.pretrained
            if not p.exists():
                raise CostlabError(f"{source}: field cost_models.{i}.pretrained: no such file or model directory (value: {m.pretrained!r})")
            m.pretrained = str(p)
            _check_pretrained_holds(p, m, f"{source}: field cost_models.{i}.pretrained")
        if m.pretrain_on:
            p = Path(m.pretrain_on) if Path(m.pretrain_on).is_absolute() else base_dir / m.pretrain_on
            if not (p / "dataset.json").is_file():
                what = "not a costlab dataset (no dataset.json in it)" if p.is_dir() else "no such directory"
                raise CostlabError(f"{source}: field cost_models.{i}.pretrain_on: {what}; `costlab dataset build "
                                   f"--db DB --out DIR` builds one (value: {m.pretrain_on!r})")
            m.pretrain_on = str(p)
            if m.pretrained:
                raise CostlabError(f"{source}: field cost_models.{i}.pretrain_on: give pretrained or pretrain_on, "
                                   f"not both (value: {m.pretrain_on!r})")
        if m.pretrain_rows is not None and not m.pretrain_on:
            raise CostlabError(f"{source}: field cost_models.{i}.pretrain_rows: needs pretrain_on "
                               f"(value: {m.pretrain_rows})")
        if m.pretrain_family and not m.pretrain_on:
            raise CostlabError(f"{source}: field cost_models.{i}.pretrain_family: needs pretrain_on "
                               f"(value: {'true' if m.pretrain_family is True else repr(m.pretrain_family)})")
        if m.pretrain_tuned:
            _check_pretrain_tuned(m, cfg.workloads, f"{source}: field cost_models.{i}.pretrain_tuned")
        if m.pretrain_family == "measured" and (m.frozen or m.warm == "blend" or m.pretrain_rows is not None):
            raise CostlabError(f"{source}: field cost_models.{i}.pretrain_family: 'measured' chooses a family on the "
                               "first measured batch and then fine-tunes on all its rows; it excludes frozen, "
                               "warm: blend and pretrain_rows (value: 'measured')")
        if m.name == "tvm-xgb" and (m.warm_started or m.frozen or m.warm != "finetune"):
            raise CostlabError(f"{source}: field cost_models.{i}.name: 'tvm-xgb' is TVM's own XGBModel, which "
                               "starts untrained; pretrained, pretrain_on, frozen and warm need a costlab model "
                               "(for example xgb or lgbm) (value: 'tvm-xgb')")
        ignored = [f for f in ("features", "retrain_growth", "blend_samples") if f in m.model_fields_set]
        if m.name == "tvm-xgb" and ignored:
            raise CostlabError(f"{source}: field cost_models.{i}.{ignored[0]}: 'tvm-xgb' is TVM's own XGBModel, which "
                               f"reads TVM's per-store features and retrains every batch; {', '.join(ignored)} "
                               f"appl{'ies' if len(ignored) == 1 else 'y'} to costlab models "
                               f"(value: {getattr(m, ignored[0])!r})")
        if "blend_samples" in m.model_fields_set and m.warm != "blend":
            raise CostlabError(f"{source}: field cost_models.{i}.blend_samples: applies to warm: blend only "
                               f"(value: {m.blend_samples})")
        if m.name == "tvm-xgb" and "tvm_scores" in m.model_fields_set:
            raise CostlabError(f"{source}: field cost_models.{i}.tvm_scores: 'tvm-xgb' is TVM's own XGBModel, whose "
                               f"scores reach MetaSchedule as they are; tvm_scores applies to costlab models "
                               f"(value: {m.tvm_scores!r})")
        if m.warm == "blend" and not m.warm_started:
            raise CostlabError(f"{source}: field cost_models.{i}.warm: 'blend' needs pretrained or pretrain_on (value: 'blend')")
        if m.warm == "blend" and m.frozen:
            raise CostlabError(f"{source}: field cost_models.{i}.warm: 'blend' trains online; it excludes frozen: true")
        if m.frozen and not m.warm_started:
            raise CostlabError(f"{source}: field cost_models.{i}.frozen: true needs pretrained or pretrain_on "
                               "(an untrained frozen model would score at random all run)")
        if m.kappa > 0 and (m.warm == "blend" or not hasattr(MODELS.factory(m.name), "predict_with_spread")):
            raise CostlabError(
                f"{source}: field cost_models.{i}.kappa: optimism needs a model with a spread "
                f"(an ensemble, not blended) (value: {m.kappa}); {m.name!r}"
                f"{' with warm: blend' if m.warm == 'blend' else ''} would ignore it")
        if m.features:
            from costlab.data.offline import check_features_fit_model

            try:
                check_features_fit_model(m.name, m.features)
            except CostlabError as err:
                raise CostlabError(f"{source}: field cost_models.{i}.features: {err}") from None
    for i, m in enumerate(cfg.cost_models):
        if m.label and m.label != m.name and m.label in MODELS:
            raise CostlabError(f"{source}: field cost_models.{i}.label: {m.label!r} is another registered model's "
                               f"name: its runs would be read as {m.label}'s (by costlab compare's baseline too); "
                               f"give model {m.name!r} a label of its own (value: {m.label!r})")
    labels = [m.display_name.casefold() for m in cfg.cost_models]  # a folder each: one on macOS for Rnd and rnd
    dupes = sorted({m.display_name for m in cfg.cost_models if labels.count(m.display_name.casefold()) > 1})
    if dupes:
        raise CostlabError(f"{source}: field cost_models: duplicate model {dupes[0]!r} (labels are compared ignoring "
                           f"case: each names a session folder); give each a distinct label")
    from costlab.targets import make_target

    try:
        target = make_target(cfg.target)  # TVM's own check of a target dict, milliseconds
    except CostlabError as err:
        raise CostlabError(f"{source}: field target: {err}") from None
    if target.kind.name == "llvm" and "num-cores" not in target.attrs:
        raise CostlabError(f"{source}: field target: MetaSchedule tunes a CPU target for its 'num-cores', which "
                           f"this one lacks (value: {cfg.target!r}); e.g. {{kind: llvm, mcpu: <this CPU>, "
                           f"num-cores: 2}}, or the preset 'cpu'")
    _check_llvm_cpus(target, cfg.target, source)
    for where, space in [("search.space", cfg.search.space),
                         *((f"workloads.{i}.space", w.space) for i, w in enumerate(cfg.workloads))]:
        if space is not None and space.startswith("cuda") and target.kind.name != "cuda":
            raise CostlabError(f"{source}: field {where}: {space!r} is a CUDA design space, and the target is "
                               f"{target.kind.name!r}")
    from costlab.filenames import check_output_dir

    check_output_dir(cfg.work_path, f"{source}: field work_dir", try_writing=False)  # run and --dry-run write-test it


def _check_distinct_workloads(cfg: ExperimentConfig, source: str) -> None:
    """Each workload once, each in its own session directory. A workload given twice (its params
    in another order, or a default spelled out) is one run per model and seed, counted twice;
    two workloads whose keys differ only in characters a file name cannot hold, or in case, would
    share a session directory and its tuning database."""
    from costlab.filenames import safe_file_name
    from costlab.workloads import workload_key

    first: dict[str, tuple[int, str]] = {}
    for i, w in enumerate(cfg.workloads):
        key = workload_key(w.name, w.params)
        folder = safe_file_name(key).casefold()  # one folder on a case-insensitive file system (macOS, Windows)
        if (seen := first.get(folder)) is not None:
            j, other = seen
            if other == key:
                raise CostlabError(f"{source}: field workloads.{i}: the same workload as workloads.{j} "
                                   f"(value: {key!r}); give each workload once")
            raise CostlabError(
                f"{source}: field workloads.{i}: its session directory, {safe_file_name(key)!r}, would be "
                f"workloads.{j}'s ({other!r}) (value: {key!r}); make their string params differ in a "
                "letter or digit")
        first[folder] = (i, key)


def _check_pretrain_tuned(m: CostModelSpec, workloads: list, where: str) -> None:
    """``pretrain_tuned`` needs ``pretrain_on`` (not ``measured``), and a dataset that holds every
    workload of the config: without its rows, the transfer would silently not happen."""
    import pandas as pd

    from costlab.workloads import workload_key

    if not m.pretrain_on or m.pretrain_family == "measured":
        raise CostlabError(f"{where}: needs pretrain_on, with pretrain_family other than 'measured' (value: true)")
    records = Path(m.pretrain_on) / "records.parquet"
    try:
        held = pd.read_parquet(records, columns=["workload_key", "workload_hash"])
    except (OSError, ValueError, KeyError) as err:
        raise CostlabError(f"{where}: cannot read the dataset's workloads from {records}: {err} (value: true)") from None
    keys = set(held["workload_key"])
    missing = [w for w in workloads if workload_key(w.name, w.params) not in keys]
    if missing:  # a database costlab did not write names its workloads by structural hash
        from costlab.workloads import build_workload, structural_hash

        hashes = set(held["workload_hash"].astype(str))
        missing = [workload_key(w.name, w.params) for w in missing
                   if structural_hash(build_workload(w.name, w.params)) not in hashes]
    if missing:
        raise CostlabError(f"{where}: the dataset {m.pretrain_on} holds no rows of {', '.join(missing)}, so there "
                           "is nothing of the tuned workload to train on (value: true)")


def _check_trains_online(m: CostModelSpec, where: str) -> None:
    """A tuning session trains its model after each measured batch with ``update()``: a plug-in
    without one failed there, after its first batch; it can only be tuned frozen."""
    from costlab.models import MODELS, CostModel

    if m.name == "tvm-xgb" or m.frozen:
        return
    factory = MODELS.factory(m.name)
    if isinstance(factory, type) and getattr(factory, "update", None) is CostModel.update:
        raise CostlabError(f"{where}: cost model {m.name!r} ({factory.__module__}.{factory.__qualname__}) does not "
                           f"implement update(), which a tuning session calls after each measured batch; implement "
                           f"it, or tune a pretrained one with frozen: true (value: {m.name!r})")


def _check_model_params(m: CostModelSpec, where: str) -> None:
    """The params of a config's model entry, checked before any tuning starts."""
    from costlab.models import MODELS, check_model_params

    if not m.params:  # a plug-in is still built once, so that one that cannot be (say, no predict) stops here
        if m.name != "tvm-xgb" and not MODELS.factory(m.name).__module__.startswith("costlab."):
            try:
                check_model_params(m.name, {})
            except CostlabError as err:
                raise CostlabError(f"{where}: {err}") from None
        return
    if m.name == "tvm-xgb":
        raise CostlabError(f"{where}: 'tvm-xgb' in tuning is TVM's own XGBModel with TVM's settings; it takes "
                           f"no params (value: {m.params})")
    if m.pretrained and m.warm != "blend":
        raise CostlabError(f"{where}: a pretrained model keeps the hyper-parameters it was saved with; params "
                           f"apply with pretrain_on, or to the online model of warm: blend (value: {m.params})")
    try:
        check_model_params(m.name, m.params)
    except CostlabError as err:
        raise CostlabError(f"{where}: {err}") from None


def config_from_dict(data: Any, source: str = "<config>", overrides: list[str] | None = None,
                     base_dir: Path | None = None) -> ExperimentConfig:
    """The experiment config that ``data`` (a mapping, as a YAML config file holds) describes,
    checked as :func:`load_config` checks a file; ``source`` names it in messages, ``overrides``
    are ``KEY=VALUE`` strings as on the command line."""
    if not isinstance(data, dict):
        raise CostlabError(f"{source}: the config must be a YAML mapping, got {type(data).__name__}")
    try:
        data = apply_overrides(data, overrides or [])
    except CostlabError as err:
        raise CostlabError(f"{source}: {err}") from None
    required = [name for name, field in ExperimentConfig.model_fields.items() if field.is_required()]
    if data and not any(name in data for name in required):  # another file: say so, not each field
        held = ", ".join(map(str, list(data)[:6])) + (", ..." if len(data) > 6 else "")
        raise CostlabError(f"{source}: not a costlab experiment config: it has none of the fields "
                           f"{', '.join(required)} (its fields: {held})")
    try:
        cfg = ExperimentConfig.model_validate(data)
        _check_names(cfg, source, base_dir or Path.cwd())
    except ValidationError as err:
        raise CostlabError(_blame_overrides(_format_validation_error(source, err), source, overrides)) from None
    except CostlabError as err:
        raise CostlabError(_blame_overrides(str(err), source, overrides)) from None
    return cfg


def _blame_overrides(message: str, source: str, overrides: list[str] | None) -> str:
    """``message`` with each ``SOURCE: field F: ...`` line whose field F an override set
    saying so: ``SOURCE, override 'F=V': field F: ...`` (the value is not in the file)."""
    by_key = {text.split("=", 1)[0]: text for text in overrides or []}
    lines = []
    for line in message.split("\n"):
        if by_key and (found := re.match(rf"{re.escape(source)}: field (\S+?):", line)):
            field = found.group(1)
            for key, text in by_key.items():
                if field == key or field.startswith(key + ".") or key.startswith(field + "."):
                    line = f"{source}, override {text!r}{line[len(source):]}"
                    break
        lines.append(line)
    return "\n".join(lines)


def _check_llvm_cpus(target, spec, source: str) -> None:
    """An ``mcpu`` LLVM does not know (a typo) makes it tune for a generic CPU, saying so only
    in its own error lines at every build: refused at load, for the target and a CUDA host."""
    from tvm.target import codegen

    for where, part in (("target", target), ("target host", target.host)):
        if part is None or part.kind.name != "llvm" or "mcpu" not in part.attrs:
            continue
        mcpu = str(part.attrs["mcpu"])
        triple = str(part.attrs["mtriple"]) if "mtriple" in part.attrs else codegen.llvm_get_system_triple()
        if not codegen.llvm_is_valid_cpu(mcpu, triple):
            raise CostlabError(f"{source}: field {where}: LLVM knows no CPU {mcpu!r} for {triple} (value: {spec!r}); "
                               f"this machine's is {codegen.llvm_get_system_cpu()!r}")


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, but a key given twice in one mapping is an error (PyYAML keeps the
    last one without a word: a second ``search:`` block would replace the first)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor`: the keys it brings may be set again
                continue
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, (list, dict)):  # PyYAML's own check comes later, as a TypeError (a traceback)
                raise yaml.constructor.ConstructorError(
                    None, None, f"a key must be a name or a number, not a {type(key).__name__}: {key!r}",
                    key_node.start_mark)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} is given twice in one mapping", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def load_config(path: str | Path, overrides: list[str] | None = None) -> ExperimentConfig:
    """Read, override and validate an experiment YAML file."""
    path = Path(path)
    if not path.is_file():
        raise CostlabError(f"config file {path} " + ("is a directory, not a YAML file" if path.is_dir() else "does not exist"))
    try:
        data = yaml.load(path.read_text(), Loader=_UniqueKeyLoader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or " ".join(str(err).split())
        raise CostlabError(f"{path}: broken YAML{where}: {problem}") from None
    except UnicodeDecodeError as err:
        raise CostlabError(f"{path}: not a text file: {err}") from None
    return config_from_dict(data, str(path), overrides, base_dir=Path.cwd())


def loggable_config(cfg: ExperimentConfig) -> dict:
    """The config as JSON-able data for MLflow and messages: the tracking URI's password, if it
    has one, shown as ``***`` (give it in MLFLOW_TRACKING_PASSWORD, or a database's own way)."""
    from costlab.tracking import redact_uri

    data = cfg.model_dump(mode="json")
    data["mlflow"]["tracking_uri"] = redact_uri(data["mlflow"]["tracking_uri"])
    return data


def config_to_yaml(cfg: ExperimentConfig) -> str:
    """The config as logged with its parent run (:func:`loggable_config`)."""
    return yaml.safe_dump(loggable_config(cfg), sort_keys=False)


def flatten(data: dict, prefix: str = "") -> dict[str, str]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": "1"}``, for MLflow params."""
    out: dict[str, str] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flatten(value, name + "."))
        else:
            out[name] = str(value)
    return out


def _check_pretrained_holds(model_dir: Path, m: "CostModelSpec", where: str) -> None:
    """A saved costlab model directory must hold a model of the configured name, saved with
    the configured features (if any). A plug-in's model may be in its own format."""
    from costlab.models import MODELS
    from costlab.models._common import META_FILE, read_meta
    from costlab.models.warm_blend import META_FILE as WARM_BLEND_META

    if (model_dir / WARM_BLEND_META).is_file():
        raise CostlabError(f"{where}: a blended session model (value: {str(model_dir)!r}); "
                           f"point it at its 'pretrained' or 'online' subdirectory")
    if not (model_dir / META_FILE).is_file():
        if MODELS.factory(m.name).__module__.startswith("costlab."):  # a built-in always writes one
            raise CostlabError(f"{where}: not a saved costlab model directory (no {META_FILE} in it) "
                               f"(value: {str(model_dir)!r}); costlab train --out writes one")
        return  # a plug-in model's own format: its load() checks it
    try:
        meta = read_meta(model_dir, m.name)
    except CostlabError as err:
        raise CostlabError(f"{where}: {err}") from None
    saved_with = (meta.get("features") or {}).get("extractor")
    if m.features and saved_with and m.features != saved_with:
        raise CostlabError(f"{where}: the model was trained on {saved_with!r} features, and features is "
                           f"{m.features!r}; leave features out to use the model's own")
    from costlab.models import load_model

    try:  # its files, read once here: a damaged one failed every combination of the run, one after another
        load_model(model_dir)
    except CostlabError as err:
        raise CostlabError(f"{where}: {err}") from None

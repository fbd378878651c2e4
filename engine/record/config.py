"""A run's configuration (`RunConfig`: what the driver runs, as the manifest records it) and its result.

The command line (engine/cli/resolve.py) builds a RunConfig from flags, a frozen pre-registration or
a run to resume (the manifest's `config` is its `as_dict()`); workers and Ray shards get it pickled.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from engine.policies.factory import PolicySpec
from prereg.rundir.rows import BASE_VARIANT, counted_variant, decision_variants, episode_job, variant_of
from prereg.rundir.status import GateSpec


@dataclass
class RunConfig:
    run_id: str
    arm: str
    policy: PolicySpec
    seeds: list[int]
    episode_seconds: float = 30.0
    workers: int = 1
    video_draw: str = "0"  # "auto" | "0" first episode of each worker | "none" | "all" | "seeds:1,5"
    batch_wait_ms: float = 20.0  # the shortest wait to fill a batch ...
    batch_wait_max_ms: float = 1000.0  # ... and the longest, however slow the workers' chunks are
    gates: GateSpec = field(default_factory=GateSpec)
    gpus: int | None = None  # GPUs held; None = 1 when the policy runs on CUDA, else 0
    render_size: int = 224
    video_size: int | None = None  # pixels a side of each filmed view (front | wrist); None = render_size
    prereg: dict | None = None  # {id, sha256, path} when launched from a frozen document
    ray: dict | None = None  # {address, shards, gpus_per_shard, dashboard}: run the seeds on a Ray cluster
    record_predicts: bool = False  # predicts.jsonl: one line per served observation (engine/record/predict_trail.py)
    env: str = "boat-on-disk"  # the scene and task (engine.envs); a manifest from before envs ran this one
    arms: list[dict] | None = None  # a comparison run: [{"arm": A, "policy": {...}}, {"arm": B, ...}]
    comparison: dict | None = None  # ... and its registered comparison (prereg.stats.comparison.ComparisonSpec.as_dict())
    pass_env: list[str] = field(default_factory=list)  # variables passed to the workers by name (engine/process/environ.py)
    success_field: str = "success"  # what the plan reads as a success: every count, summary and decision of the run
    # a crossed design (issue 48): every seed also runs on each of these registered visual variants (their names,
    # in the plan's order; `base`, the scene as declared, always runs and is not listed). A variant is declared
    # in the env file or inline in the plan (`variant_declarations`: name -> its declaration, as an env file's).
    variants: list[str] = field(default_factory=list)
    variant_declarations: dict = field(default_factory=dict)
    read_variant: str = "base"  # the variant every count, summary and decision of the run reads
    pool_cameras: bool = False  # the pooled read also averages the camera variants (else they are read apart)
    camera_variants: list[str] = field(default_factory=list)  # those that move a camera (filled at launch)
    variant_sha256: dict = field(default_factory=dict)  # name -> its declaration's sha256 (filled at launch)

    def arm_policies(self) -> list[tuple[str | None, PolicySpec]]:
        """(arm, policy) per arm a worker may be handed: the comparison's two, or (None, the one policy)."""
        if not self.arms:
            return [(None, self.policy)]
        return [(a["arm"], PolicySpec.from_dict(a["policy"])) for a in self.arms]

    def arm_names(self) -> list[str] | None:
        return [a["arm"] for a in self.arms] if self.arms else None

    # -- an episode's identity (a job; its shape is prereg.rundir.rows.episode_job's, which a reader of
    # status.json uses too): the driver dispatches and resumes jobs, the pool names the ones in flight by them.

    def job(self, arm: str | None, variant: str | None, seed: int):
        """The job of the episode of `seed` on `arm` (a comparison's) and `variant` (None: `base`)."""
        return episode_job(arm, variant, seed, comparison=bool(self.arms), crossed=bool(self.variants))

    def job_of(self, row) -> object:
        """The job a row (a dict, or a prereg.rundir.row.Row) is the episode of."""
        return self.job(row.get("arm"), variant_of(row), row.get("seed"))

    def job_fields(self, job) -> tuple[str | None, str | None, int]:
        """(arm, variant, seed) of a job: arm None outside a comparison, variant None on `base` (a row's null)."""
        parts = list(job) if isinstance(job, (tuple, list)) else [job]
        seed = parts.pop()
        arm = parts.pop(0) if self.arms else None
        variant = parts.pop(0) if self.variants else None
        return arm, (None if variant == BASE_VARIANT else variant), seed

    def jobs(self) -> list:
        """Every episode of the run, in dispatch order: per seed in plan order, `base` then each variant in
        the plan's order, the arms interleaved within each (seed k: A base, B base, A v1, B v1, ...), so a
        seed's variants go out together, as a comparison's arms do."""
        arms = self.arm_names() or [None]
        variants = [BASE_VARIANT, *self.variants] if self.variants else [None]
        return [self.job(a, v, s) for s in self.seeds for v in variants for a in arms]

    @property
    def counted_variant(self) -> str | None:
        """The variant every count, summary and decision of the run reads (as Manifest.counted_variant reads it
        back: prereg.rundir.rows.counted_variant): the read variant in a crossed design (base when the decision
        reads the pooled rate), None (every row) for a run of the scene alone."""
        return counted_variant(self.variants, self.read_variant)

    def decision_variants(self) -> tuple[str, ...]:
        """The variants whose episodes the plan's decision reads (a crossed design): the pooled ones when it
        reads the pooled rate, else the read variant alone."""
        return decision_variants((BASE_VARIANT, *self.variants) if self.variants else (), self.read_variant,
                                 self.camera_variants, self.pool_cameras)

    def episodes_per_seed(self) -> int:
        """Episodes each planned seed runs: one per arm and variant (base included)."""
        return len(self.arms or [None]) * (1 + len(self.variants))

    def as_dict(self) -> dict:
        d = asdict(self)
        d["policy"] = self.policy.as_dict()
        d["gates"] = self.gates.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "RunConfig":
        d = dict(d)
        d["policy"] = PolicySpec.from_dict(d["policy"])
        d["gates"] = GateSpec.from_dict(d.get("gates"))
        known = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        return cls(**known)


@dataclass
class RunResult:
    state: str
    reason: str | None
    rows: list[dict]
    summary: dict


def comparison_record(spec) -> dict:
    """A ComparisonSpec as the config records it (JSON; `comparison_spec` reads it back on a resume)."""
    d = asdict(spec)
    d.pop("line", None)
    d["assumed_rates"] = list(spec.assumed_rates) if spec.assumed_rates is not None else None
    return d


def comparison_spec(d: dict):
    from prereg.document.comparison_spec import ComparisonSpec

    return ComparisonSpec.from_record(d)


def workers_for(workers: int, n_jobs: int) -> int:
    """No more workers than episodes to run (and at least one): the count the manifest records, the
    pool starts and the pace projects over. The one place this rule is written."""
    return max(1, min(int(workers), int(n_jobs)))

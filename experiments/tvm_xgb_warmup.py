"""When does TVM's XGBModel (costlab's `tvm-xgb` baseline) start ranking with its booster?

    python experiments/tvm_xgb_warmup.py

Feeds the model batches of 32 measured candidates of a small CPU GEMM (made-up latencies:
only the switch matters) and asks after each whether two predictions of the same 8
candidates agree. TVM 0.27's ``XGBModel.predict`` returns uniform random scores until
``data_size >= num_warmup_samples`` (100 by default), though its booster is trained from the
first batch. With 32 trials per batch, the evolutionary search therefore picks the first 4
batches (128 trials) with random scores.
"""

from __future__ import annotations

import numpy as np


def main() -> None:
    from tvm.s_tir.meta_schedule.cost_model import XGBModel
    from tvm.s_tir.meta_schedule.feature_extractor import PerStoreFeature
    from tvm.s_tir.meta_schedule.runner import RunnerResult

    from costlab.features.sampling import sample_candidates
    from costlab.workloads import build_workload

    batch, batches, n_probe = 32, 4, 8
    context, candidates = sample_candidates(build_workload("gemm", {"M": 64, "N": 64, "K": 64}),
                                            {"kind": "llvm", "num-cores": 2}, n_probe + batch * batches, seed=0)
    model = XGBModel(extractor=PerStoreFeature(), adaptive_training=True, num_tuning_cores=1)
    print(f"num_warmup_samples {model.num_warmup_samples}")
    rng = np.random.default_rng(0)
    probe = candidates[:n_probe]

    def agree() -> bool:
        return bool(np.allclose(model.predict(context, probe), model.predict(context, probe)))

    print(f"measured   0: booster no, two predictions agree: {agree()}")
    for i in range(batches):
        part = candidates[n_probe + i * batch: n_probe + (i + 1) * batch]
        model.update(context, part, [RunnerResult(run_secs=[float(rng.uniform(1e-4, 1e-3))], error_msg=None)
                                     for _ in part])
        print(f"measured {model.data_size:3d}: booster {'yes' if model.booster is not None else 'no'}, "
              f"two predictions agree: {agree()}")


if __name__ == "__main__":
    main()

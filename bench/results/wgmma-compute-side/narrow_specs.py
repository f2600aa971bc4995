#!/usr/bin/env python3
"""Writes regen-specs/: the bundled database's wgmma specs narrowed to the cases whose kernel
has compute-side ablations (D = 128, one kv head per CTA, the TMA ring: not page 1, which the
cp.async ring reads, nor D = 64 / 256), so that measuring them again adds the compute side
(compute_only and the isolated stages) to every such bundled case. Run from the repository
root: python3 bench/results/wgmma-compute-side/narrow_specs.py"""
import json
import pathlib

HERE = pathlib.Path(__file__).parent
NOTE = (" Narrowed to mma = wgmma at D = 128 with the TMA ring (the cases whose kernel has a compute_only"
        " and isolated stages), measured again for their compute side (bench/results/wgmma-compute-side/).")


def has_compute_ablations(point):
    return point.get("head_dim", 128) == 128 and point.get("page_size", 16) != 1


for name in ["h200-cuda-wgmma", "h200-cuda-grid", "h200-cuda-wgmma-16bit", "h200-cuda-grid-k16v16"]:
    spec = json.loads(pathlib.Path(f"data/sweeps/{name}.json").read_text())
    spec["description"] += NOTE
    if "mma" in spec.get("axes", {}):
        spec["axes"]["mma"] = ["wgmma"]
    else:
        assert spec["base"]["mma"] == "wgmma", name
    if "points" in spec:
        spec["points"] = [p for p in spec["points"] if has_compute_ablations(p)]
    assert has_compute_ablations(spec["base"]), name
    (HERE / "regen-specs" / f"{name}.json").write_text(json.dumps(spec, indent=2) + "\n")

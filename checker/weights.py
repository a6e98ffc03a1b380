"""Load a reference module's weights into the candidate's module (which lives in its child).

Module katas grade by giving the candidate's module exactly the reference's weights.
`load_reference_weights` maps reference parameter names onto the candidate's and loads
them; when it cannot decide it raises AssertionError saying what it expected and found.
"""

from __future__ import annotations

import torch

from attnkata.checker.proxy import RemoteModule


def load_reference_weights(module: RemoteModule, reference: torch.nn.Module, *, case: str) -> dict[str, str]:
    """Copy `reference`'s parameters into `module`; returns {candidate name: reference name}.

    This version maps canonical names only (the names in each kata's contract)."""
    ref_state = dict(reference.state_dict())
    have = module.params
    mapping: dict[str, str] = {}
    for name, tensor in ref_state.items():
        if name not in have:
            raise AssertionError(
                f"{case}: your module has no parameter {name!r} of shape {tuple(tensor.shape)}; "
                f"it has: {', '.join(f'{n} {tuple(s)}' for n, s in have.items()) or 'no parameters'}")
        if tuple(have[name]) != tuple(tensor.shape):
            raise AssertionError(f"{case}: {name} should have shape {tuple(tensor.shape)}, yours has {tuple(have[name])}")
        mapping[name] = name
    module.load_state({c: ref_state[r] for c, r in mapping.items()})
    return mapping

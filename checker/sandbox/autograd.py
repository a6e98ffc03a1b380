"""Backpropagation helpers shared by the candidate's child, the graders and diagnosis."""

from __future__ import annotations

import torch


def backward(output: torch.Tensor, grad_output: torch.Tensor) -> None:
    """The same vector-Jacobian product as `output.backward(grad_output)`.

    Written as `<output, grad_output>.backward()` because `backward(grad)` checks the grad's
    shape through torch.fx's symbolic shapes, whose first use imports sympy: about a second
    in every fresh process (each candidate child, each `kata check`)."""
    (output * grad_output).sum().backward()

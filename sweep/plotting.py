"""The one way the sweep layer gets matplotlib: the non-interactive Agg backend (no display needed
on compute nodes or in CI), imported on first use so that commands that draw nothing do not pay
matplotlib's import time."""

from __future__ import annotations

__all__ = ["pyplot"]


def pyplot():
    """``matplotlib.pyplot`` with the Agg backend selected (PNG output, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt

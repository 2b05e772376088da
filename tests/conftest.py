"""Suite-wide pytest hooks: the last lines of a run say what was not checked."""

from __future__ import annotations

from collections import Counter
from importlib import metadata

# The independent oracles the cross-checks compare with (installed by the `test` extra).
ORACLES = ("jax", "jaxlib", "scipy")


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")


def _version(distribution: str) -> str:
    try:
        return f"{distribution} {metadata.version(distribution)}"
    except metadata.PackageNotFoundError:
        return f"{distribution} not installed"


def pytest_terminal_summary(terminalreporter) -> None:
    """Say which oracles the cross-checks ran against, and group the skipped tests by reason
    (a missing oracle such as JAX, a pending program), so that a run that passed says, next
    to its counts, which checks did not run."""
    terminalreporter.write_sep("=", "oracles: " + ", ".join(_version(name) for name in ORACLES))
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    reasons = Counter(_skip_reason(report) for report in skipped)
    terminalreporter.write_sep("=", f"not checked: {len(skipped)} skipped")
    for reason, count in reasons.most_common():
        terminalreporter.write_line(f"{count:5d}  {reason}")

"""Run a figure's papermill notebook, retrying only when its kernel fails to start.

Jupyter picks a kernel's ports by binding port 0 and releasing it; two kernels started at the
same moment by parallel figure jobs can draw the same port, and the loser dies before it answers
("Kernel died before replying to kernel_info").  That failure happens before any cell runs, so a
fresh start (new ports) is safe; an error inside the notebook is never retried.

    python -m ensemble_bandits.plotting.execute NOTEBOOK OUT name=value ...
"""
from __future__ import annotations

import sys
import time

KERNEL_START_FAILURES = ("Kernel died before replying to kernel_info", "Kernel didn't respond in")


def is_kernel_start_failure(exc: BaseException) -> bool:
    """True for the errors jupyter_client raises when a kernel never came up."""
    return isinstance(exc, RuntimeError) and any(text in str(exc) for text in KERNEL_START_FAILURES)


def run(notebook: str, out: str, parameters: dict, attempts: int = 3, execute=None) -> None:
    """Execute ``notebook`` into ``out`` with ``parameters`` (papermill, kernel ``python3``)."""
    if execute is None:
        import papermill

        execute = papermill.execute_notebook
    for attempt in range(1, attempts + 1):
        try:
            execute(notebook, out, parameters=parameters, kernel_name="python3", progress_bar=False,
                    log_output=False)
            return
        except Exception as exc:  # noqa: BLE001 -- re-raised unless it is a kernel start failure
            if attempt == attempts or not is_kernel_start_failure(exc):
                raise
            print(f"kernel failed to start ({exc}); attempt {attempt + 1} of {attempts}", file=sys.stderr)
            time.sleep(attempt)


def _parse(args: list[str]) -> tuple[str, str, dict]:
    if len(args) < 2 or any("=" not in a for a in args[2:]):
        raise SystemExit("usage: python -m ensemble_bandits.plotting.execute NOTEBOOK OUT name=value ...")
    return args[0], args[1], dict(a.split("=", 1) for a in args[2:])


if __name__ == "__main__":
    run(*_parse(sys.argv[1:]))

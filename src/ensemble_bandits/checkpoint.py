"""Checkpoints of a running simulation job, so that a job stopped at any round resumes from the round
it had reached, with the numbers an uninterrupted run gives (tests/test_checkpoint.py).

A job (a cell over a block of seeds, :func:`runner.simulate_columns`) plays its seeds in batches.  Its
checkpoint file holds the finished batches' run tables and the running batch's complete state: the
environment, the agent (weights, statistics, random streams at their positions), the regret record
and the last round played.  It is written atomically every ``every`` seconds of play and removed
when the run file is written.

File format: one line of JSON, the header (format, the job's identity -- cell key, algorithms stamp,
seed range, horizon: :func:`cells.identity_of` -- and the payload's length and SHA-256), then the
payload, a zlib-compressed pickle (level 1: about 3x smaller for a UCI cell's buffer).  Only a file whose header is this job's identity and whose payload has the
recorded length and hash is unpickled: another cell's, another seed range's or an older algorithms
version's checkpoint, or a damaged one, is refused with one line that names the file (delete it to
start the job afresh).  A checkpoint is a cache file of this machine's jobs, like a run file: never
read one from a source you do not trust (unpickling runs code).
"""
from __future__ import annotations

import hashlib
import importlib
import io
import json
import pickle
import sys
import time
import types
import zlib
from pathlib import Path

FORMAT = 2            # 2: the payload zlib-compressed; 1 (read still): the pickle as is


CHECKPOINT_MINUTES = 5.0    # a running job's state is saved this often (env EB_CHECKPOINT_MINUTES overrides)


class CheckpointError(ValueError):
    """A checkpoint file that is not this job's, or is damaged."""


class _Pickler(pickle.Pickler):
    """Pickles a module attribute (agents keep ``self.torch``) by its name."""

    def persistent_id(self, obj):
        return ("module", obj.__name__) if isinstance(obj, types.ModuleType) else None


class _Unpickler(pickle.Unpickler):
    def persistent_load(self, pid):
        kind, name = pid
        if kind != "module":
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")
        return importlib.import_module(name)


def dumps(obj) -> bytes:
    buf = io.BytesIO()
    _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buf.getvalue()


def loads(data: bytes):
    return _Unpickler(io.BytesIO(data)).load()


class Checkpoint:
    """The checkpoint file ``path`` of the job whose identity is ``identity`` (a JSON string,
    :func:`cells.identity_of`); ``every``: seconds of play between two writes."""

    def __init__(self, path, identity: str, every: float = 300.0):
        self.path, self.identity, self.every = Path(path), json.loads(str(identity)), float(every)
        self.done: dict = {}            # first seed of a finished batch -> its run table (columns)
        self.batch = None               # (seeds, env, agent, record, round) of the running batch
        self.spent = (0.0, 0.0)         # (wall, CPU) seconds earlier runs of the job played; None: not known
        self._last = time.perf_counter()
        self._clock = (self._last, time.process_time())

    def load(self) -> bool:
        """Read the file if there is one (False if not); a CheckpointError unless it is this job's."""
        if not self.path.exists():
            return False
        if not self.path.is_file():
            raise CheckpointError(f"checkpoint {self.path} is not a regular file: remove it")
        header, payload = _read(self.path)
        if not isinstance(header, dict) or header.get("format") not in (1, FORMAT):
            raise CheckpointError(f"checkpoint {self.path}: format {header.get('format') if isinstance(header, dict) else '?'}"
                                  f", expected {FORMAT}; delete it to start the job afresh")
        if header.get("identity") != self.identity:
            raise CheckpointError(f"checkpoint {self.path} is another job's ({_describe(header.get('identity'))}), "
                                  f"not this job's ({_describe(self.identity)}): stale or foreign; delete it to start "
                                  "the job afresh")
        if len(payload) != header.get("bytes") or hashlib.sha256(payload).hexdigest() != header.get("sha256"):
            raise CheckpointError(f"checkpoint {self.path} is damaged (its payload does not match its header's "
                                  "length and SHA-256): delete it to start the job afresh")
        state = loads(zlib.decompress(payload) if header["format"] == 2 else payload)
        self.done, self.batch = state["done"], state["batch"]
        self.spent = tuple(state["spent"]) if state.get("spent") is not None else None    # older files: not kept
        return True

    def due(self) -> bool:
        return time.perf_counter() - self._last >= self.every

    def spent_now(self):
        """(wall, CPU) seconds the job has played, earlier runs' and this process's since it made this
        object; None when the earlier runs' are not known (a checkpoint written before it kept them)."""
        if self.spent is None:
            return None
        return (self.spent[0] + time.perf_counter() - self._clock[0],
                self.spent[1] + time.process_time() - self._clock[1])

    def save(self, batch=None, spent="now") -> None:
        """Write the finished batches, ``batch`` (seeds, env, agent, record, round) and the seconds
        spent (default :meth:`spent_now`), atomically."""
        from .atomic import atomic_write

        self.batch = batch
        spent = self.spent_now() if spent == "now" else spent
        payload = zlib.compress(dumps({"done": self.done, "batch": batch, "spent": spent}), 1)
        header = {"format": FORMAT, "identity": self.identity, "bytes": len(payload),
                  "sha256": hashlib.sha256(payload).hexdigest()}

        def write(tmp):
            with open(tmp, "wb") as fh:
                fh.write(json.dumps(header, sort_keys=True).encode("utf-8") + b"\n")
                fh.write(payload)

        atomic_write(self.path, write)
        self._last = time.perf_counter()
        if batch is not None:
            print(f"  checkpoint: seeds {batch[0][0]}-{batch[0][-1]} at round {batch[4]} -> {self.path}",
                  file=sys.stderr, flush=True)

    def resume(self, seeds: list):
        """The saved state (env, agent, record, round) of the batch ``seeds``, or None."""
        if self.batch is not None and list(self.batch[0]) == list(seeds):
            return self.batch[1:]
        return None

    def finish(self, first: int, columns: dict) -> None:
        """Batch starting at seed ``first`` done: keep its run table (written at the next save)."""
        self.done[int(first)] = columns
        self.batch = None

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def _read(path: Path):
    """(header, payload) of checkpoint file ``path``; a CheckpointError when its header is unreadable."""
    with open(path, "rb") as fh:
        try:
            header = json.loads(fh.readline().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise CheckpointError(f"checkpoint {path} has no readable header: not a checkpoint of this "
                                  "project, or damaged; delete it to start the job afresh") from None
        return header, fh.read()


def _describe(identity) -> str:
    if not isinstance(identity, dict):
        return "no identity"
    return (f"cell {identity.get('key')}, seeds {identity.get('seeds')}, algorithms {identity.get('algorithms')!r}, "
            f"T={identity.get('horizon')}")


def adopt_runs(path, run_files: list) -> list:
    """Take the seeds other jobs of the same cell played (their run files ``run_files``, each with
    its ``cell.json`` beside it) as finished batches of the *stopped* job whose checkpoint is ``path``,
    so that a long cell's seeds can be played by several jobs side by side; the job, started again,
    then writes its run file from the checkpoint, with the numbers one job gives (a seed's numbers do
    not depend on how jobs split).  Only whole batches of the job (:func:`cells.job_batches`) not yet
    done are taken.  A CheckpointError unless the checkpoint is of this algorithms version, each run
    file is its cell's (key, algorithms version, horizon and seeds: :func:`tables.check_identity`)
    and some batch is taken.  Returns the seed lists taken, in order."""
    import numpy as np

    from .cells import algorithms_stamp, job_batches
    from .registry import cell_key
    from .tables import CacheError, read_run

    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} is not a file: nothing to take the seeds into")
    header = _read(path)[0]
    identity = header.get("identity") if isinstance(header, dict) else None
    if not isinstance(identity, dict) or not {"key", "seeds", "algorithms"} <= set(identity):
        raise CheckpointError(f"checkpoint {path} has no readable header: not a checkpoint of this project, or damaged")
    ckpt = Checkpoint(path, json.dumps(identity))
    ckpt.load()
    cell, played, costs, source = None, {}, {}, {}
    for run in map(Path, run_files):
        try:
            other = json.loads((run.parent / "cell.json").read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            raise CheckpointError(f"run file {run}: no readable cell.json beside it") from None
        if not isinstance(other, dict) or cell_key(other) != identity["key"]:
            raise CheckpointError(f"run file {run} is not a run of cell {identity['key']} (the checkpoint's)")
        if identity["algorithms"] != algorithms_stamp(other):
            raise CheckpointError(f"checkpoint {path} is of algorithms {identity['algorithms']!r}, this code gives "
                                  f"{algorithms_stamp(other)!r}: stale; delete it to start the job afresh")
        try:
            df = read_run(run, other)
        except CacheError as err:
            raise CheckpointError(str(err)) from None
        cell = other
        logged = _logged_seconds(run)
        for seed, rows in df.groupby("seed", sort=False):
            played[int(seed)] = {k: rows[k].to_numpy() for k in df.columns}
            source[int(seed)] = run
        costs[run] = logged
    taken, spent, used = [], ckpt.spent, set()
    for block, keep in job_batches(cell, list(range(*identity["seeds"]))) if cell else []:
        asked = block if keep is None else [block[i] for i in keep]
        if block[0] in ckpt.done or not set(asked) <= set(played):
            continue
        ckpt.done[block[0]] = {k: np.concatenate([played[s][k] for s in asked]) for k in played[asked[0]]}
        if ckpt.batch is not None and list(ckpt.batch[0]) == list(block):
            ckpt.batch = None
        taken.append(asked)
        used |= {source[s] for s in asked}
    for run in sorted(used):        # the other jobs' time counts as the job's: `timings` reads one log per run file
        spent = None if spent is None or costs[run] is None else (spent[0] + costs[run][0], spent[1] + costs[run][1])
    if not taken:
        raise CheckpointError(f"the run files hold no whole batch of the job {_describe(identity)} that its "
                              f"checkpoint {path} lacks: nothing to take")
    ckpt.save(ckpt.batch, spent)
    return taken


def _logged_seconds(run: Path):
    """(wall, CPU) seconds of the finished job that wrote run file ``run``
    (``<scale>/runs/<key>/seeds-<a>-<b>.npz``), from its log (``<scale>/logs/simulate/<key>-<a>-<b>.log``),
    or None when the log or its time is not there."""
    from .joblogs import logged_seconds

    log = run.parent.parent.parent / "logs" / "simulate" / f"{run.parent.name}-{run.stem[len('seeds-'):]}.log"
    found = logged_seconds(log)
    return None if found is None or found[1] is None else found[:2]


def job_checkpoint(path, identity: str, every: float | None = None) -> Checkpoint:
    """The checkpoint ``path`` of a simulate job of ``identity`` (:func:`cells.identity_of`), saved
    every ``every`` seconds (default :data:`CHECKPOINT_MINUTES`, or the environment's
    ``EB_CHECKPOINT_MINUTES``), loaded if the file exists and said so: a CheckpointError when the file
    is not this job's."""
    import os

    if every is None:
        every = 60.0 * float(os.environ.get("EB_CHECKPOINT_MINUTES", CHECKPOINT_MINUTES))
    ckpt = Checkpoint(path, identity, every)
    if ckpt.load():
        print(f"  resuming from {path}: {len(ckpt.done)} batch(es) done"
              + (f", seeds {ckpt.batch[0][0]}-{ckpt.batch[0][-1]} at round {ckpt.batch[4]}" if ckpt.batch else ""),
              file=sys.stderr, flush=True)
    return ckpt

"""Real datasets: what a data directory must hold, checks of it, downloads, and loaders.

The datasets the figures need ship with the repository under ``resources/data/`` (the default
``data_dir`` of the config; ``resources/data/README.md`` gives sources, licences and checksums), in
the layout ``<dataset>/<file>``.  Each file's SHA-256 is checked against the manifest below before
it is used.  A relative ``data_dir`` is resolved against the project root (the directory holding
the Snakefile), not against the current directory.  Datasets that are not shipped (Covertype) are
downloaded only when asked: :func:`fetch` gets the originals (UCI archive, the authors' GitHub
release) into a data directory, checks them the same way and never overwrites a file.
"""
from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .atomic import atomic_write


class DataError(RuntimeError):
    """A data directory or file is missing or is not the expected file."""


@dataclass(frozen=True)
class DataFile:
    path: str            # relative to the data directory
    sha256: str
    size: int | None     # bytes; None where the size is not documented
    url: str             # where fetch() gets it: a file URL, or a zip URL + "#" + member name


@dataclass(frozen=True)
class Dataset:
    name: str
    title: str
    page: str            # the dataset's home page (licence, citation)
    files: tuple[DataFile, ...]
    shipped: bool = True  # in the repository under resources/data/ (else fetched on request)


_UCI = "https://archive.ics.uci.edu/static/public"
DATASETS = {d.name: d for d in (
    Dataset("shuttle", "Statlog (Shuttle), UCI id 148", "https://archive.ics.uci.edu/dataset/148/statlog+shuttle", (
        DataFile("shuttle/shuttle.trn", "87b24ee9fb5137e1d417659cf905d84d0e15342bbaa60770f1ae83da1a38200a",
                 1_153_518, f"{_UCI}/148/statlog+shuttle.zip#shuttle.trn"),
        DataFile("shuttle/shuttle.tst", "f776934a628d9b94c482cb058a76ddaa63823e0f74aec065813c9dff3b89d661",
                 384_257, f"{_UCI}/148/statlog+shuttle.zip#shuttle.tst"))),
    Dataset("mushroom", "Mushroom, UCI id 73", "https://archive.ics.uci.edu/dataset/73/mushroom", (
        DataFile("mushroom/agaricus-lepiota.data", "e65d082030501a3ebcbcd7c9f7c71aa9d28fdfff463bf4cf4716a3fe13ac360e",
                 373_704, f"{_UCI}/73/mushroom.zip#agaricus-lepiota.data"),)),
    Dataset("adult", "Adult (Census Income), UCI id 2", "https://archive.ics.uci.edu/dataset/2/adult", (
        DataFile("adult/adult.data", "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
                 3_974_305, f"{_UCI}/2/adult.zip#adult.data"),
        DataFile("adult/adult.test", "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
                 2_003_153, f"{_UCI}/2/adult.zip#adult.test"))),
    Dataset("covertype", "Covertype, UCI id 31", "https://archive.ics.uci.edu/dataset/31/covertype", (
        DataFile("covertype/covtype.data.gz", "614360d0257557dd1792834a85a1cdebfadc3c4f30b011d56afee7ffb5b15771",
                 None, f"{_UCI}/31/covertype.zip#covtype.data.gz"),), shipped=False),
    Dataset("hate_speech_davidson", "Hate Speech and Offensive Language (Davidson et al. 2017)",
            "https://github.com/t-davidson/hate-speech-and-offensive-language", (
        DataFile("hate_speech_davidson/labeled_data.csv",
                 "fcb8bc7c68120ae4af04a5b9acd58585513ede11e1548ebf36a5c2040b6f6281", 2_546_446,
                 "https://raw.githubusercontent.com/t-davidson/hate-speech-and-offensive-language/"
                 "master/data/labeled_data.csv"),)),
)}


def check_names(names) -> None:
    unknown = [n for n in names if n not in DATASETS]
    if unknown:
        raise DataError(f"unknown dataset(s) {', '.join(map(repr, unknown))}; known: {', '.join(sorted(DATASETS))}")


def sha256(path: Path | str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


_VERIFIED: dict[tuple, bool] = {}  # (path, size, mtime) of files already checked in this process


DEFAULT_DATA_DIR = "resources/data"  # relative to the project root; holds the shipped datasets


def absolute(data_dir, base=None) -> Path:
    """``data_dir`` as an absolute, normalised path (``~`` expanded; symlinks kept).  A relative
    path is taken relative to ``base`` (the workflow passes the project root, the directory of the
    Snakefile), or to the current directory when ``base`` is None."""
    path = os.path.expanduser(str(data_dir))
    if base is not None and not os.path.isabs(path):
        path = os.path.join(os.path.expanduser(str(base)), path)
    return Path(os.path.abspath(path))


def config_data_dir(configfile, value=None) -> Path:
    """``data_dir`` of the config file ``configfile`` (``value`` if given, else the file's own, else
    :data:`DEFAULT_DATA_DIR`), relative paths resolved against the project root as Snakemake does."""
    from .paths import project_root
    from .registry import load_yaml

    if value is None:
        value = load_yaml(configfile).get("data_dir") or DEFAULT_DATA_DIR

    return absolute(value, base=project_root(Path(os.path.abspath(configfile)).parent) or Path.cwd())


def _how_to_get(ds: Dataset, data_dir: Path) -> str:
    shipped = (f"; {ds.name} ships with the repository in {DEFAULT_DATA_DIR}/{ds.name}/ (restore a changed "
               f"checkout with `git restore {DEFAULT_DATA_DIR}/{ds.name}`)" if ds.shipped else
               f"; {ds.name} is not shipped with the repository (fetched on request only)")
    return (f"get it with `python -m ensemble_bandits.cli data fetch {ds.name} --data-dir {data_dir}` "
            f"or by running Snakemake with --config data_fetch=true (needs network; source {ds.page}), or set data_dir in config/config.yaml "
            f"(or --config data_dir=DIR) to a directory holding {ds.name}/" + shipped)


def files(names, data_dir) -> list[str]:
    """Absolute paths of the files of datasets ``names`` (not checked)."""
    check_names(names)
    root = absolute(data_dir)
    return [str(root / f.path) for n in names for f in DATASETS[n].files]


def present(name: str, data_dir) -> bool:
    """Whether every file of dataset ``name`` exists in ``data_dir`` (contents not checked)."""
    check_names([name])
    return all(Path(p).is_file() for p in files([name], data_dir))


def verify(names, data_dir, base=None) -> list[str]:
    """Check that ``data_dir`` (relative to ``base``, see :func:`absolute`) holds every file of
    datasets ``names`` with the expected SHA-256; return their absolute paths.  Raises
    :class:`DataError` naming the directory or the file, the expected checksum, and how to get it."""
    check_names(names)
    root = absolute(data_dir, base)
    if not root.is_dir():
        raise DataError(f"data directory {root} does not exist (config data_dir={data_dir!s}); it must hold "
                        f"{', '.join(f.path for n in names for f in DATASETS[n].files)}. "
                        f"Point data_dir at the datasets (--config data_dir=DIR; the default, {DEFAULT_DATA_DIR} of the "
                        f"repository, holds the shipped ones) or fetch them (needs network): "
                        f"`python -m ensemble_bandits.cli data fetch {' '.join(names)} --data-dir {root}`, "
                        f"or run Snakemake with --config data_fetch=true")
    out = []
    for n in names:
        ds = DATASETS[n]
        for f in ds.files:
            p = root / f.path
            if not p.is_file():
                raise DataError(f"missing data file {p} (dataset {n}: {ds.title}; expected SHA-256 {f.sha256}); "
                                + _how_to_get(ds, root))
            st = p.stat()
            stamp = (str(p), st.st_size, st.st_mtime_ns)
            if not _VERIFIED.get(stamp):
                got = sha256(p)
                if got != f.sha256:
                    raise DataError(f"data file {p} has SHA-256 {got}, expected {f.sha256} (dataset {n}: {ds.title}, "
                                    f"{f.size if f.size is not None else '?'} bytes; this file is "
                                    f"{st.st_size} bytes): it is corrupt or a different version; replace it: "
                                    + _how_to_get(ds, root))
                _VERIFIED[stamp] = True
            out.append(str(p))
    return out


class DatasetsUnusable(RuntimeError):
    """Some datasets ``cli data`` was asked about are not usable (each already said on its own line)."""


def check_datasets(action: str, names, data_dir, configfile) -> None:
    """``cli data``: each dataset of ``names`` (default: all) checked (``action`` "check": SHA-256) or
    downloaded, then checked ("fetch") in ``data_dir`` (default: the config file's ``data_dir``), one
    line each: OK, FAIL, or ABSENT for an optional dataset not asked for by name and not there.
    A DatasetsUnusable naming those that failed."""
    from .registry import load_yaml

    asked, names = bool(names), list(names) or sorted(DATASETS)
    data_dir = data_dir or config_data_dir(configfile, load_yaml(configfile).get("data_dir"))  # relative: to the project root
    failed = []
    for name in names:
        if (action == "check" and not asked and not DATASETS[name].shipped
                and not any(Path(p).exists() for p in files([name], data_dir))):
            print(f"ABSENT {name}: not shipped with the repository and not in {data_dir} (optional; get it with "
                  f"`python -m ensemble_bandits.cli data fetch {name} --data-dir {data_dir}`, needs network)")
            continue
        try:
            if action == "fetch":
                fetch([name], data_dir, log=lambda msg: print(msg, file=sys.stderr))
            for path in verify([name], data_dir):
                print(f"OK    {name}: {path}")
        except DataError as err:
            failed.append(name)
            print(f"FAIL  {name}: {err}")
    if failed:
        raise DatasetsUnusable(f"{len(failed)} of {len(names)} dataset(s) not usable: {', '.join(failed)}")


def _download(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as r:  # noqa: S310 (https/file URLs from the manifest)
        return r.read()


def _member(archive: bytes, member: str) -> bytes:
    """``member`` of a zip archive, also when the archive nests it (a zip in the zip, or ``.Z``)."""
    with zipfile.ZipFile(io.BytesIO(archive)) as z:
        names = {Path(n).name: n for n in z.namelist()}
        if member in names:
            return z.read(names[member])
        if member + ".Z" in names:  # UCI ships some files compress(1)-ed; gzip -d reads that format
            return subprocess.run(["gzip", "-dc"], input=z.read(names[member + ".Z"]), capture_output=True,
                                  check=True).stdout
        for inner in (n for n in z.namelist() if n.endswith(".zip")):
            try:
                return _member(z.read(inner), member)
            except KeyError:
                continue
    raise KeyError(f"{member} is not in the downloaded archive")


def fetch(names, data_dir, log=print) -> list[str]:
    """Download datasets ``names`` into ``data_dir`` (files already there and correct are kept).
    Each file is checked against its SHA-256 before it is moved into place, atomically."""
    check_names(names)
    root = absolute(data_dir)
    cache: dict[str, bytes] = {}
    for n in names:
        for f in DATASETS[n].files:
            dest = root / f.path
            if dest.is_file():
                got = sha256(dest)
                if got != f.sha256:  # never overwrite a user's file
                    raise DataError(f"data file {dest} has SHA-256 {got}, expected {f.sha256}; not replaced: "
                                    f"move it away and fetch again")
                log(f"{dest}: present, checksum OK")
                continue
            url, _, member = f.url.partition("#")
            try:
                if url not in cache:
                    log(f"downloading {url}")
                    cache[url] = _download(url)
                blob = _member(cache[url], member) if member else cache[url]
            except (OSError, KeyError, zipfile.BadZipFile, subprocess.CalledProcessError) as err:
                raise DataError(f"cannot fetch {f.path} from {f.url}: {err}; download it by hand from "
                                f"{DATASETS[n].page} into {dest} (expected SHA-256 {f.sha256})") from None
            got = hashlib.sha256(blob).hexdigest()
            if got != f.sha256:
                raise DataError(f"downloaded {f.path} from {f.url} has SHA-256 {got}, expected {f.sha256}; "
                                f"not installed (the source may have changed)")
            atomic_write(dest, lambda tmp, blob=blob: Path(tmp).write_bytes(blob), suffix=".part")
            log(f"{dest}: installed, checksum OK")
    return verify(names, root)


# ---------------------------------------------------------------------------------------------
# Loaders: features X (n, d) float with categoricals ordinal-encoded and missing values -> -1, and
# labels y (n,) in 0..K-1, following the OpenML versions used by the Neural-TS code (glmes spec
# section 3.6): train and test files are concatenated, as OpenML serves them.


def _ordinal(column: np.ndarray) -> np.ndarray:
    """Ordinal codes of a string column (sorted categories); '?' (missing) -> NaN."""
    cats = sorted(set(column) - {"?"})
    code = {c: float(i) for i, c in enumerate(cats)}
    return np.array([code.get(v, np.nan) for v in column])


def _encode(rows: list[list[str]], numeric: set[int]) -> np.ndarray:
    cols = np.array(rows, dtype=object).T
    X = np.column_stack([np.where(c == "?", np.nan, c).astype(float) if j in numeric else _ordinal(c)
                         for j, c in enumerate(cols)])
    return np.nan_to_num(X, nan=-1.0)


def _labels(values) -> np.ndarray:
    classes = sorted(set(values))
    code = {c: i for i, c in enumerate(classes)}
    return np.array([code[v] for v in values], dtype=np.int64)


def _read_lines(path: str) -> list[str]:
    with open(path) as f:
        return [line.strip() for line in f if line.strip()]


def _load_shuttle(paths):
    rows = [line.split() for p in paths for line in _read_lines(p)]
    arr = np.array(rows, dtype=float)
    return arr[:, :-1], _labels(arr[:, -1].astype(int))


def _load_mushroom(paths):
    rows = [line.split(",") for line in _read_lines(paths[0])]
    return _encode([r[1:] for r in rows], numeric=set()), _labels([r[0] for r in rows])


_ADULT_NUMERIC = {0, 2, 4, 10, 11, 12}  # age, fnlwgt, education-num, capital-gain, capital-loss, hours-per-week


def _load_adult(paths):
    rows = [[v.strip() for v in line.split(",")] for p in paths for line in _read_lines(p)
            if not line.startswith("|")]
    return _encode([r[:-1] for r in rows], _ADULT_NUMERIC), _labels([r[-1].rstrip(".") for r in rows])


def _load_covertype(paths):
    arr = np.loadtxt(paths[0], delimiter=",", dtype=float)
    return arr[:, :-1], _labels(arr[:, -1].astype(int))


LOADERS = {"shuttle": _load_shuttle, "mushroom": _load_mushroom, "adult": _load_adult,
           "covertype": _load_covertype}


def load_classification(name: str, data_dir) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) of a UCI classification dataset, after checking its files."""
    if name not in LOADERS:
        raise DataError(f"no classification loader for {name!r}; known: {', '.join(sorted(LOADERS))}")
    return LOADERS[name](verify([name], data_dir))


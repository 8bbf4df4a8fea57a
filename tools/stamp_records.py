"""Give the committed records written before records carried hashes their ``archive_sha256`` (the
content hash of the archive committed beside them) and ``sha256`` (their own), as a claims job now
writes them, so that an archive or record edited later is refused when read (docs/design.md,
Archives).  Run it in a clean checkout, whose committed files are the ones to trust; each archive's
rows are checked first (as the workflow reads them), and a record that has its hashes is left as is:

    python tools/stamp_records.py            # figures/paper
    git diff --stat figures/paper/records    # two lines added per record
"""
import sys
from pathlib import Path

from ensemble_bandits import archive, records, registry


def stamp(folder: Path, scale: str = "paper", config_dir: str = "config") -> int:
    """Stamp the records under ``folder`` (figures/<scale>); the number stamped."""
    entries = registry.load_registry(config_dir)
    defaults = registry.load_yaml(Path(config_dir) / "config.yaml").get("scales", {})
    done = 0
    for path in sorted((folder / "records").glob("*.json")):
        record = records.read_record(path)
        if "sha256" in record:
            continue
        body = {k: v for k, v in record.items() if k != "archive_sha256"}
        data = folder / "archives" / f"{record['id']}.parquet"
        if data.exists():
            fig = registry.resolve(entries[record["id"]], scale, defaults)
            archive.read_cells(data, fig, archive.usable_keys(data, fig))      # its rows, checked
            body["archive_sha256"] = archive.content_sha256(data)
        records.write_record({**body, "sha256": records.record_sha256(body)}, path)
        records.read_record(path)
        done += 1
    return done


if __name__ == "__main__":
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "figures/paper")
    print(f"stamped {stamp(root)} record(s) under {root}/records")

"""Regenerate (or check) the library's shipped derivative code: ``make derivatives``.

The derivatives of `transpiler.numpy` / `nn` composites that the programs corpus, the
benchmarks and the examples reach are generated once here and shipped in
``transpiler/data/derivatives/`` (entries of the disk cache, keyed by the composites'
code: an edited composite simply misses and is transformed again). A fresh installation
then transforms only the user's own functions.

    python tests/programs/derivatives.py           # rewrite the bundle
    python tests/programs/derivatives.py --check   # exit 1 if it is not what the code makes
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def generate(cache: Path) -> dict[str, str]:
    """Transform the corpus, the benchmark and the example with an empty cache in `cache`;
    returns the library's entries as ``{file name: JSON text}``."""
    import transpiler as tp
    from tests.programs.corpus import PROGRAMS

    import ad  # tests/bench/ad.py
    for program in PROGRAMS:
        if not program.pending:
            tp.grad(program.fn, argnums=program.argnums, has_aux=program.has_aux).source
    tp.value_and_grad(ad.mlp_loss).source
    from transpiler.codegen.disk_cache import load_entry
    entries = {}
    for path in sorted((cache / "ad").glob("*/*.json")):
        record = load_entry(path)
        if record is not None and (record.get("module") or "").startswith("transpiler."):
            entries[path.name] = json.dumps(record, indent=1, sort_keys=True) + "\n"
    return entries


def main() -> int:
    with tempfile.TemporaryDirectory() as cache:
        # Before transpiler is imported: its config reads them once.
        os.environ["TRANSPILER_CACHE_DIR"] = cache
        os.environ["TRANSPILER_BUNDLED_DERIVATIVES"] = "0"
        sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "bench")]
        entries = generate(Path(cache))
    from transpiler.codegen.disk_cache import BUNDLE_DIR
    shipped = {p.name: p.read_text() for p in BUNDLE_DIR.glob("*.json")}
    if "--check" in sys.argv:
        stale = sorted(set(shipped) ^ set(entries)) + sorted(
            name for name in set(shipped) & set(entries) if shipped[name] != entries[name])
        if stale:
            print(f"{len(stale)} shipped derivative entries differ from what the code "
                  f"generates ({', '.join(stale[:3])} ...): run `make derivatives`")
            return 1
        print(f"{len(entries)} shipped derivative entries are current")
        return 0
    BUNDLE_DIR.mkdir(parents=True, exist_ok=True)
    for name in set(shipped) - set(entries):
        (BUNDLE_DIR / name).unlink()
    for name, text in entries.items():
        (BUNDLE_DIR / name).write_text(text)
    print(f"wrote {len(entries)} entries to {BUNDLE_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

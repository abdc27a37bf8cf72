"""Blind error of ``planner serve``: the published figures that were scored before the profiles saw them.

Since session 31 each new block of ``bench/published.yaml`` was scored with the profiles as shipped before
anything was fitted on it or changed because of it (``bench/published.md``: "Fresh held-out sources",
"Blind test, session 32", sessions 36-41). ``BLOCKS`` names each block by its header comment and the commit
whose code and profiles scored it: the commit the session's notes name, else the parent of the commit that
added the block (the code as it stood when the figures came in).

This script predicts each block again with that commit's code (a detached ``git worktree`` of it, imported in a
subprocess in place of the working tree's ``planner``, running that commit's ``bench/published.py`` on the
block's entries as they stand now: with the format fixes and exclusions made since, which change no
profile), and writes what the k-fold record holds (``published.accuracy_summary``: per regime, quantity and
engine, the points and the median and 90th percentile of |predicted / published − 1|) to
``profiles/engines/_blind.yaml``, which ``planner serve`` prints beside the k-fold's held-out error.

    python bench/blind.py [--write profiles/engines/_blind.yaml]

Needs git and the repository's history (not the network); a few minutes on two cores.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "bench") not in sys.path:
    sys.path.insert(0, str(ROOT / "bench"))

# (the header comment's start, the commit that scored the block, where that commit comes from)
BLOCKS = (
    ("# ---- Session 31 (2026-12-04)", "3f07c56", "parent of 6e47b6a, which merged the fresh file it was scored from"),
    ("# ---- Session 32 (2026-12-04)", "489577b", "parent of 0c1a1a2, which added the block"),
    ("# ---- Blind test, session 36 ", "b1b702e", "bench/published.md, session 36: 'Scored blind (as shipped at b1b702e)'"),
    ("# ---- Blind test, session 37 (Dec 5)", "84753c3", "parent of f99dcdf, which added the block"),
    ("# ---- Blind test, session 37, second block", "6e01606", "parent of c7d0686, which added the block"),
    ("# ---- Blind test, session 38 ", "752c1fc", "parent of ea9e7b5, which added the block (after the ring change, "
     "as bench/published.md says)"),
    ("# ---- Blind test, session 39 ", "3ee6300", "the block's header: 'scored with the profiles as shipped at 3ee6300'"),
    ("# ---- Blind test, session 40 (Dec 5)", "4569665", "the block's header: 'scored with the profiles as shipped at 4569665'"),
    ("# ---- Blind test, session 40, second block", "a4a8e8c", "the block's header: 'scored with the profiles as shipped at "
     "a4a8e8c'"),
    ("# ---- Blind test, session 41 (Dec 5)", "f96739a", "the block's header: 'scored with the profiles as shipped at f96739a'"),
    ("# ---- Blind test, session 41, second block", "74d5770", "the block's header: 'scored with the profiles as shipped at "
     "74d5770'"),
    ("# ---- Blind test, session 42 (Dec 5)", "f07a86e", "the block's header: 'scored with the profiles as shipped at f07a86e'"),
    ("# ---- Blind test, session 43 (Dec 5)", "c77b0a6", "the block's header: 'scored with the profiles as shipped at c77b0a6'"),
    ("# ---- Blind test, session 44 (Dec 5)", "018985e", "the block's header: 'scored with the profiles as shipped at 018985e'"),
    ("# ---- Blind test, session 46 (Dec 5)", "51e5130", "the block's header: 'scored with the profiles as shipped at 51e5130'"),
    ("# ---- Blind test, session 47 (Dec 5)", "04c89f4", "the block's header: 'scored with the profiles as shipped at 04c89f4'"),
    ("# ---- Blind test, session 48 (Dec 5)", "4950093", "the block's header: 'scored with the profiles as shipped at 4950093'"),
    ("# ---- Blind test, session 49 (Dec 6)", "ad7252b", "the block's header: 'scored with the profiles as shipped at ad7252b'"),
    ("# ---- Blind test, session 50 (Dec 6)", "07d0fb0", "the block's header: 'scored with the profiles as shipped at 07d0fb0'"),
    ("# ---- Blind test, session 51 (Dec 6)", "9f4d466", "the block's header: 'scored with the profiles as shipped at 9f4d466'"),
    ("# ---- Blind test, session 52 (Dec 6)", "27caa44", "the block's header: 'scored with the profiles as shipped at 27caa44'"),
    ("# ---- Blind test, session 53 (Dec 6)", "a03151d", "the block's header: 'scored with the profiles as shipped at a03151d'"),
    ("# ---- Blind test, session 54 (Dec 6)", "e068e61", "the block's header: 'scored with the profiles as shipped at e068e61'"),
    ("# ---- Blind test, session 55 (Dec 6)", "ad26d9a", "the block's header: 'scored with the profiles as shipped at ad26d9a'"),
    ("# ---- Blind test, session 56 (Dec 6)", "965c20e", "the block's header: 'scored with the profiles as shipped at 965c20e'"),
    ("# ---- Blind test, session 57 (Dec 6)", "6ab5d48", "the block's header: 'scored with the profiles as shipped at 6ab5d48'"),
    ("# ---- Blind test, session 60 (Dec 7)", "5b2d999", "the block's header: 'scored with the profiles as shipped at 5b2d999'"),
    ("# ---- Blind test, session 61 (Dec 7)", "a242c9e", "the block's header: 'scored with the profiles as shipped at a242c9e'"),
    ("# ---- Blind test, session 61, second block", "1888006", "the block's header: 'scored with the profiles as shipped at "
     "1888006'"),
    ("# ---- Blind test, session 62 (Dec 7)", "530fa22", "the block's header: 'scored with the profiles as shipped at 530fa22'"),
    ("# ---- Blind test, session 65 (Dec 7)", "b74c4fe", "the block's header: 'scored with the profiles as shipped at b74c4fe'"),
)

# run in the worktree: that commit's bench/published.py predicts the block's entries, one JSON row per point
DRIVER = r"""
import json, os, sys
from pathlib import Path
sys.path.insert(0, "bench")
import published as P
import planner
here = os.path.realpath(os.getcwd())
assert os.path.realpath(planner.__file__).startswith(here + os.sep), f"planner from {planner.__file__}, not {here}"
points, skipped = P.load_points(Path(sys.argv[1]), None)
rows = []
for p in points:
    if p.quantity not in P.TIMING:
        continue
    pred = p.predict()
    rows.append({"id": p.id, "engine": p.engine_name, "quantity": p.quantity, "regime": p.regime,
                 "published": p.value, "predicted": pred})
print(json.dumps({"rows": rows, "skipped": len(skipped)}))
"""


def split_blocks(text: str) -> list[tuple[str, str]]:
    """``[(header start, block text)]`` for each of ``BLOCKS`` found in the YAML text: from its header comment
    to the next ``# ---- `` header or the end. ``ValueError`` where a header is missing or found twice."""
    lines = text.splitlines(keepends=True)
    starts = [i for i, ln in enumerate(lines) if ln.startswith("# ---- ")]
    out = []
    for head, _, _ in BLOCKS:
        hits = [i for i in starts if lines[i].startswith(head)]
        if len(hits) != 1:
            raise ValueError(f"the data file has {len(hits)} headers starting {head!r}")
        i = hits[0]
        end = next((j for j in starts if j > i), len(lines))
        out.append((head, "".join(lines[i:end])))
    return out


def abs_error(pred, pub) -> float | None:
    """|predicted / published − 1|, or None where nothing was predicted (the deployment does not fit)."""
    return None if pred is None else abs(pred / pub - 1.0)


def record_rows(rows: list[dict]) -> list[tuple[str, str, str, float]]:
    """``published.accuracy_summary``'s rows ``(engine, quantity, regime, |error|)`` from the driver's, those
    predicted."""
    out = []
    for r in rows:
        e = abs_error(r["predicted"], r["published"])
        if e is not None:
            out.append((r["engine"], r["quantity"], r["regime"], e))
    return out


def run_block(commit: str, block_text: str, work: Path) -> dict:
    """The driver's output for ``block_text`` predicted by ``commit``'s code (a worktree under ``work``)."""
    tree = work / f"wt-{commit}"
    if not tree.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), commit], check=True)
    data = work / f"block-{commit}.yaml"
    data.write_text(block_text)
    # ``import planner`` finds the worktree's package (its planner/ folder, which joins the checkout's folders)
    # before the installed one
    env = {**os.environ, "PYTHONPATH": str(tree)}
    res = subprocess.run([sys.executable, "-c", DRIVER, str(data)], cwd=tree, env=env, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"{commit}: {res.stderr.strip().splitlines()[-1] if res.stderr.strip() else res.returncode}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    import statistics

    import yaml

    import published as pub

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT / "bench" / "published.yaml")
    ap.add_argument("--write", type=Path, help="write the record here (profiles/engines/_blind.yaml)")
    ap.add_argument("--rows", type=Path, help="also write every point's prediction here (JSON: block, commit, id, "
                    "engine, quantity, regime, published, predicted)")
    args = ap.parse_args(argv)
    try:
        blocks = split_blocks(args.data.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # missing, unreadable, or without the blocks' headers
        ap.error(f"--data {args.data}: {exc}")
    all_rows: list[dict] = []
    meta = []
    with tempfile.TemporaryDirectory(prefix="planner-blind-") as tmp:
        work = Path(tmp)
        try:
            for (head, text), (_, commit, why) in zip(blocks, BLOCKS):
                out = run_block(commit, text, work)
                rows = [{"block": head[7:].strip(), "commit": commit, **r} for r in out["rows"]]
                all_rows.extend(rows)
                errs = [e for *_, e in record_rows(rows)]
                med = f"{statistics.median(errs):.1%}" if errs else "-"
                print(f"{head[7:60]:55s} {commit}  {len(rows):4d} timing points, {len(errs):4d} predicted, "
                      f"median |error| {med}")
                meta.append({"block": head[7:].strip(), "commit": commit, "why": why, "timing_points": len(rows),
                             "predicted": len(errs)})
        finally:
            for (_, commit, _) in BLOCKS:
                tree = work / f"wt-{commit}"
                if tree.exists():
                    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    if args.rows:
        args.rows.write_text(json.dumps(all_rows, indent=0))
    rows = record_rows(all_rows)
    rec = pub.accuracy_summary(rows, command="python bench/blind.py --write profiles/engines/_blind.yaml",
                               date=datetime.date.today().isoformat(), points=len(rows))
    rec["blocks"] = meta
    print()
    print(f"{'regime':13s} {'quantity':20s} {'n':>5s} {'median':>8s} {'p90':>8s}")
    for regime in ("steady", "server_burst"):
        for q, e in rec[regime]["all"].items():
            print(f"{regime:13s} {q:20s} {e['n']:5d} {e['median']:8.1%} {e['p90']:8.1%}")
    if args.write:
        head = ("# Blind error of planner serve against published measurements: written by bench/blind.py, not edited by\n"
                "# hand. Each block of bench/published.yaml that was scored before the profiles saw it, predicted by the\n"
                "# code of the commit that scored it (blocks). median / p90: of |predicted / published - 1|.\n")
        args.write.write_text(head + yaml.safe_dump(rec, sort_keys=False, width=120))
        print(f"wrote {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

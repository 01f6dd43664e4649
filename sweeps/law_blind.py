"""The law's seven blind tests: AdamW cells off every grid the law was then fitted on, each cell
forecast (results/forecasts/law_blind*.csv) before any run; docs/findings.md, "The law, and how
well it predicts", compares them. `--test N` runs test N (sweep law_blind_N; 1: law_blind):
  python sweeps/law_blind.py --test N [--out DIR] [--shard i/n] [--dry-run]
  spamlang law compare results/forecasts/law_blind_N[.LAW].csv results/law_blind_N
"""

import argparse

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

SEQ_LEN = 2


def run(vocab_size: int, batch_size: int, updates: int) -> list:
    """(V, B, tokens) of return time V / B with `updates` per symbol: updates x V / B steps."""
    return [vocab_size, batch_size, updates * vocab_size * SEQ_LEN]


def blind_test(name: str, cells: dict, b2: list, lr: list, **base) -> Sweep:
    """Every cell (its linked axes `cells`) tied and untied, at 2 b2, 3 LRs (up to 2 more beyond
    an end where a cell's best sits) and 2 seeds; the base is the first cell."""
    first = {}
    for axis, values in cells.items():  # a linked axis' value is a list, another's a scalar
        first.update(zip(axis.split(","), values[0] if "," in axis else [values[0]]))
    common = dict(language="spam", seq_len=SEQ_LEN, log_every=32, checkpoint_every=512)
    return Sweep(
        name=name,
        base=TrainConfig(**{"eval_every": 128, **common, **base, **first}),
        axes={**cells, "tie_embeddings": [True, False], "b2": b2, "lr": lr, "seed": [0, 1]},
        bracket_lr=2,
    )


TESTS = {
    # D 48, 80; V 2,048 (R 128) and 8,192 (R 256, 512); 12 updates a symbol; 12 shards
    1: blind_test(
        "law_blind",
        {
            "preset": ["tiny-w48", "tiny-w80"],
            "vocab_size,batch_size,tokens": [
                run(2048, 16, 12),
                run(8192, 32, 12),
                run(8192, 16, 12),
            ],
        },
        b2=[0.97, 0.995],
        lr=[3e-3, 1e-2, 3e-2],
        eval_every=256,
    ),
    # D 96, 144; V 1,536 (R 128, 18 updates) and 3,072 (R 256, 384; 10 updates); 12 shards
    2: blind_test(
        "law_blind_2",
        {
            "preset": ["tiny-w96", "tiny-w144"],
            "vocab_size,batch_size,tokens": [
                run(1536, 12, 18),
                run(3072, 12, 10),
                run(3072, 8, 10),
            ],
        },
        b2=[0.98, 0.993],
        lr=[3e-3, 1e-2, 3e-2],
    ),
    # D 112, 160; V 2,560 at R 160 (14 updates) and 320 (10 updates); 8 shards
    3: blind_test(
        "law_blind_3",
        {
            "preset": ["tiny-w112", "tiny-w160"],
            "batch_size,tokens": [run(2560, 16, 14)[1:], run(2560, 8, 10)[1:]],
        },
        b2=[0.975, 0.997],
        lr=[1e-3, 3e-3, 1e-2],
        vocab_size=2560,
    ),
    # the format-3 law's test: D 176, 208; V 1,792 at R 112, 224; 12 updates; 8 shards
    4: blind_test(
        "law_blind_4",
        {
            "preset": ["tiny-w176", "tiny-w208"],
            "batch_size,tokens": [run(1792, 16, 12)[1:], run(1792, 8, 12)[1:]],
        },
        b2=[0.96, 0.985],
        lr=[1e-3, 3e-3, 1e-2],
        vocab_size=1792,
    ),
    # the format-4 law's test (c_DV): D 192, 240 at V 1,280 (D / V 0.15, 0.19), B 10, 5; 8 shards
    5: blind_test(
        "law_blind_5",
        {
            "preset": ["tiny-w192", "tiny-w240"],
            "batch_size,tokens": [run(1280, 10, 9)[1:], run(1280, 5, 9)[1:]],
        },
        b2=[0.94, 0.988],
        lr=[3e-4, 1e-3, 3e-3],
        vocab_size=1280,
    ),
    # the format-5 law's test (a_iD): D 272 at V 1,152 and D 48 at V 4,608; 8 updates; 8 shards
    6: blind_test(
        "law_blind_6",
        {
            "preset,vocab_size,batch_size,tokens": [
                ["tiny-w272", *run(1152, 12, 8)],
                ["tiny-w272", *run(1152, 6, 8)],
                ["tiny-w48", *run(4608, 16, 8)],
                ["tiny-w48", *run(4608, 9, 8)],
            ]
        },
        b2=[0.965, 0.992],
        lr=[3e-4, 1e-3, 3e-3],
    ),
    # the format-5 law's second: D 224 at V 1,824 and D 96 at V 5,632; 6 updates; 8 shards
    7: blind_test(
        "law_blind_7",
        {
            "preset,vocab_size,batch_size,tokens": [
                ["tiny-w224", *run(1824, 12, 6)],
                ["tiny-w224", *run(1824, 6, 6)],
                ["tiny-w96", *run(5632, 22, 6)],
                ["tiny-w96", *run(5632, 11, 6)],
            ]
        },
        b2=[0.955, 0.996],
        lr=[3e-4, 1e-3, 3e-3],
    ),
}
SWEEP = TESTS[1]  # what `spamlang sweep` and `spamlang law predict` read of this file

if __name__ == "__main__":
    parser = argparse.ArgumentParser(add_help=False)  # the rest are the sweep's own flags
    parser.add_argument("--test", type=int, choices=sorted(TESTS), default=1)
    known, rest = parser.parse_known_args()
    raise SystemExit(main(TESTS[known.test], rest))

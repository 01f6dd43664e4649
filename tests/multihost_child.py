"""One process of the multi-host test (tests/test_multihost.py); not a test module itself.

    python multihost_child.py --out DIR --expect-devices 4 \
        [--coordinator 127.0.0.1:PORT --num-processes 2 --process-id I] [--stop-after-step N]

Trains the test's config into DIR with `spamlang.train.run_training` (after
`jax.distributed.initialize` when --coordinator is given), then prints one line
`RESULT {json}` on stdout and exits with:

    0  the run finished (or was already finished)
    3  the run stopped early with `spamlang.train.Interrupted` (checkpointed)
    1  any other error (traceback on stderr)
    2  the JAX setup is not the expected one (process / device counts)

The JSON holds the process's index and counts, the result or the interrupted step, and every
file under DIR outside checkpoints/ that this process opened for writing, created, renamed
onto or removed (from a `sys.addaudithook` hook, so it sees whatever code does the writing):
the test checks that only process 0 touches the run files.
"""

import argparse
import json
import os
import sys
import traceback

EXIT_FINISHED, EXIT_ERROR, EXIT_SETUP, EXIT_INTERRUPTED = 0, 1, 2, 3

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def config():
    from spamlang.train import TrainConfig

    # 24 steps of 16 x 16 tokens; logs every 4, checkpoints every 8 (and at the stop step).
    # One layer: what is tested does not depend on depth, and compiling is most of the time.
    return TrainConfig(
        vocab_size=64,
        seq_len=16,
        batch_size=16,
        tokens=16 * 16 * 24,
        lr=1e-2,
        schedule="constant",
        warmup_frac=0.0,
        eval_sequences=16,
        log_every=4,
        checkpoint_every=8,
        model={"n_layers": 1},
    )


def watch_writes(out_dir: str) -> list:
    """Record [event, path relative to out_dir] for writes to out_dir outside checkpoints/."""
    root = os.path.realpath(out_dir)
    seen: list = []

    def rel(path):
        if isinstance(path, int) or path is None:
            return None
        try:
            full = os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return None
        if full != root and not full.startswith(root + os.sep):
            return None
        r = os.path.relpath(full, root)
        return None if r == "checkpoints" or r.startswith("checkpoints" + os.sep) else r

    def hook(event, args):
        if event == "open":
            path, flags = args[0], args[2]
            if isinstance(flags, int) and flags & _WRITE_FLAGS and rel(path) is not None:
                seen.append(["open", rel(path)])
        elif event == "os.rename":
            if rel(args[1]) is not None:
                seen.append(["rename", rel(args[1])])
        elif event == "os.remove":
            if rel(args[0]) is not None:
                seen.append(["remove", rel(args[0])])

    sys.addaudithook(hook)
    return seen


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--expect-devices", type=int, required=True)
    parser.add_argument("--coordinator", help="host:port of process 0 (multi-process only)")
    parser.add_argument("--num-processes", type=int, default=1)
    parser.add_argument("--process-id", type=int, default=0)
    parser.add_argument("--stop-after-step", type=int)
    args = parser.parse_args()

    import jax

    if args.coordinator:
        # Cross-process collectives on CPU (gloo is also jax 0.10's default; set it explicitly
        # so the test does not depend on that). Both before any backend is created.
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(
            coordinator_address=args.coordinator,
            num_processes=args.num_processes,
            process_id=args.process_id,
            initialization_timeout=120,
        )
    report = {
        "process_index": jax.process_index(),
        "process_count": jax.process_count(),
        "device_count": jax.device_count(),
        "local_device_count": jax.local_device_count(),
    }
    if (report["process_count"], report["process_index"], report["device_count"]) != (
        args.num_processes,
        args.process_id,
        args.expect_devices,
    ):
        print("RESULT " + json.dumps(report), flush=True)
        print(f"unexpected JAX setup: {report}", file=sys.stderr, flush=True)
        return EXIT_SETUP

    from spamlang.train import Interrupted, run_training

    writes = watch_writes(args.out)
    status = EXIT_FINISHED
    try:
        report["result"] = run_training(
            config(), args.out, quiet=False, stop_after_step=args.stop_after_step
        )
    except Interrupted as e:
        report["interrupted_step"] = e.step
        status = EXIT_INTERRUPTED
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        return EXIT_ERROR
    report["writes"] = list(writes)
    print("RESULT " + json.dumps(report), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())

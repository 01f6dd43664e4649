"""TensorBoard: one event-file folder per run, `<experiment>/tensorboard/<run name>`, written
with tensorboard's own writer (no TensorFlow); the config is the HParams session and result.json's
numeric columns are the scalars `result/<column>`.

Resuming: a (step, tag) pair is written once: the writer reads the run's event files at open and
writes only the pairs not there yet. Nothing is deleted or rewritten.
"""

from __future__ import annotations

import time
from pathlib import Path

from spamlang.errors import UserError
from spamlang.tracking import common
from spamlang.tracking.common import INSTALL, TrackerSpec, flat_config

FOLDER = "tensorboard"


def check(verify: bool = False) -> None:
    """UserError naming the extra when tensorboard cannot be imported."""
    try:
        import tensorboard.summary.writer.event_file_writer  # noqa: F401
    except ImportError as e:
        raise UserError(
            f"--tracker tensorboard needs tensorboard ({e}): {INSTALL['tensorboard']}"
        ) from None


class Writer(common.Writer):
    def __init__(self, spec: TrackerSpec, run_dir: Path, config, records: list, restored_step: int):
        check()
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        path = spec.root / FOLDER / run_dir.name
        self.written = _written(path)
        self.file = EventFileWriter(str(path), flush_secs=10)
        if not any(tag.startswith("_hparams_") for _, tag in self.written):
            self._summary(0, [_hparams_value(flat_config(config))])
        super().__init__(records)

    def finish(self, result: dict) -> None:
        super().finish(result)
        self.file.flush()

    def close(self) -> None:
        self.file.close()

    def log(self, step: int, values: dict) -> None:
        from tensorboard.compat.proto import summary_pb2

        new = [(tag, v) for tag, v in values.items() if (step, tag) not in self.written]
        if new:
            self.written.update((step, tag) for tag, _ in new)
            self._summary(
                step, [summary_pb2.Summary.Value(tag=tag, simple_value=v) for tag, v in new]
            )

    def _summary(self, step: int, values: list) -> None:
        from tensorboard.compat.proto import event_pb2, summary_pb2

        self.file.add_event(
            event_pb2.Event(
                wall_time=time.time(), step=step, summary=summary_pb2.Summary(value=values)
            )
        )


def _written(path: Path) -> set:  # {(step, tag)} already in the run's event files
    if not path.is_dir():
        return set()
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    seen = set()
    for file in sorted(path.glob("events.out.tfevents.*")):
        for event in EventFileLoader(str(file)).Load():
            seen.update((event.step, v.tag) for v in event.summary.value)
    return seen


def _hparams_value(hparams: dict):
    """The HParams plugin's session-start summary value, without tensorboard's TensorFlow import."""
    from tensorboard.compat.proto import summary_pb2
    from tensorboard.plugins.hparams import metadata, plugin_data_pb2

    info = plugin_data_pb2.SessionStartInfo(start_time_secs=time.time())
    for name, value in hparams.items():
        if isinstance(value, bool):
            info.hparams[name].bool_value = value
        elif isinstance(value, (int, float)):
            info.hparams[name].number_value = value
        else:
            info.hparams[name].string_value = str(value)
    return summary_pb2.Summary.Value(
        tag=metadata.SESSION_START_INFO_TAG,
        metadata=metadata.create_summary_metadata(
            plugin_data_pb2.HParamsPluginData(session_start_info=info)
        ),
        tensor=metadata.NULL_TENSOR,
    )

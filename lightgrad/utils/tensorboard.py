"""``torch.utils.tensorboard.SummaryWriter`` for lightgrad tensors, built on tensorboardX.

>>> from lightgrad.utils.tensorboard import SummaryWriter  # doctest: +SKIP
>>> with SummaryWriter("runs/exp1") as w:  # doctest: +SKIP
...     w.add_scalar("loss", loss, global_step=step)

The event files are tensorboardX's (the same TFRecord files of ``Event`` protobufs TensorBoard reads);
this class gives PyTorch's signatures and turns lightgrad tensors into NumPy arrays (``.detach()``,
``.numpy()``) before tensorboardX sees them. tensorboardX is an optional extra
(``pip install tensorboardX``, or ``pip install lightgrad[tensorboard]``), imported on the first
``SummaryWriter()``, so importing this module costs nothing. ``add_graph`` needs a TorchScript trace
of the model, which lightgrad has not: it raises NotImplementedError.
"""

from __future__ import annotations

from typing import Any

from ..dtypes import bfloat16
from ..tensor import Tensor

__all__ = ["SummaryWriter"]


def _tensorboardx() -> Any:
    try:
        import tensorboardX
    except ImportError as e:
        raise ImportError("lightgrad.utils.tensorboard.SummaryWriter writes its event files with tensorboardX, "
                          "which is not installed: pip install tensorboardX (or pip install lightgrad[tensorboard])"
                          ) from e
    return tensorboardX


def _np(x: Any) -> Any:
    """A tensor as a NumPy array (bfloat16, which NumPy lacks, as float32); anything else as it is."""
    if isinstance(x, Tensor):
        x = x.detach()
        return (x.float() if x.dtype == bfloat16 else x).numpy()
    return x


def _scalar(x: Any) -> Any:
    return x.item() if isinstance(x, Tensor) else x


class SummaryWriter:
    """Write TensorBoard event files into ``log_dir`` (default ``runs/DATETIME_HOSTNAME{comment}``)."""

    def __init__(self, log_dir: str | None = None, comment: str = "", purge_step: int | None = None,
                 max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = "") -> None:
        tbx = _tensorboardx()
        self._writer = tbx.SummaryWriter(logdir=log_dir, comment=comment, purge_step=purge_step,
                                         max_queue=max_queue, flush_secs=flush_secs, filename_suffix=filename_suffix)
        self.log_dir: str = self._writer.logdir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix

    def get_logdir(self) -> str:
        """The directory the event files are written to."""
        return self.log_dir

    def add_scalar(self, tag: str, scalar_value: Any, global_step: int | None = None, walltime: float | None = None,
                   new_style: bool = False, double_precision: bool = False) -> None:
        """Log one number (a Python number or a one-element tensor) under ``tag``."""
        self._writer.add_scalar(tag, float(_scalar(scalar_value)), global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict[str, Any], global_step: int | None = None,
                    walltime: float | None = None) -> None:
        """Log several numbers as one chart (each in its own ``main_tag_tag`` run directory)."""
        self._writer.add_scalars(main_tag, {k: float(_scalar(v)) for k, v in tag_scalar_dict.items()},
                                 global_step, walltime)

    def add_tensor(self, tag: str, tensor: Any, global_step: int | None = None, walltime: float | None = None) -> None:
        """Log a whole tensor's values (shown as text by TensorBoard)."""
        self._writer.add_text(tag, str(_np(tensor).tolist()), global_step, walltime)

    def add_histogram(self, tag: str, values: Any, global_step: int | None = None, bins: Any = "tensorflow",
                      walltime: float | None = None, max_bins: int | None = None) -> None:
        """Log the histogram of ``values`` (``bins``: "tensorflow", a NumPy bin rule or edges)."""
        self._writer.add_histogram(tag, _np(values), global_step, _np(bins), walltime, max_bins)

    def add_histogram_raw(self, tag: str, min: float, max: float, num: int, sum: float, sum_squares: float,  # noqa: A002
                          bucket_limits: Any, bucket_counts: Any, global_step: int | None = None,
                          walltime: float | None = None) -> None:
        """Log a histogram computed elsewhere (its statistics and buckets)."""
        self._writer.add_histogram_raw(tag, _scalar(min), _scalar(max), _scalar(num), _scalar(sum),
                                       _scalar(sum_squares), _np(bucket_limits), _np(bucket_counts),
                                       global_step, walltime)

    def add_image(self, tag: str, img_tensor: Any, global_step: int | None = None, walltime: float | None = None,
                  dataformats: str = "CHW") -> None:
        """Log an image: floats in [0, 1] or uint8, laid out as ``dataformats`` (CHW, HWC, HW)."""
        self._writer.add_image(tag, _np(img_tensor), global_step, walltime, dataformats=dataformats)

    def add_images(self, tag: str, img_tensor: Any, global_step: int | None = None, walltime: float | None = None,
                   dataformats: str = "NCHW") -> None:
        """Log a batch of images as one grid (``dataformats`` NCHW or NHWC)."""
        self._writer.add_images(tag, _np(img_tensor), global_step, walltime, dataformats=dataformats)

    def add_figure(self, tag: str, figure: Any, global_step: int | None = None, close: bool = True,
                   walltime: float | None = None) -> None:
        """Log a matplotlib figure (or a list of them) as an image."""
        self._writer.add_figure(tag, figure, global_step, close, walltime)

    def add_video(self, tag: str, vid_tensor: Any, global_step: int | None = None, fps: float = 4,
                  walltime: float | None = None) -> None:
        """Log a video, (N, T, C, H, W) (needs moviepy)."""
        self._writer.add_video(tag, _np(vid_tensor), global_step, fps, walltime)

    def add_audio(self, tag: str, snd_tensor: Any, global_step: int | None = None, sample_rate: int = 44100,
                  walltime: float | None = None) -> None:
        """Log a sound, (1, L) with values in [-1, 1]."""
        self._writer.add_audio(tag, _np(snd_tensor), global_step, sample_rate, walltime)

    def add_text(self, tag: str, text_string: str, global_step: int | None = None,
                 walltime: float | None = None) -> None:
        """Log a string (Markdown)."""
        self._writer.add_text(tag, text_string, global_step, walltime)

    def add_graph(self, model: Any, input_to_model: Any = None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """Not available: TensorBoard's graph is built from a TorchScript trace, which lightgrad lacks."""
        raise NotImplementedError("SummaryWriter.add_graph needs a TorchScript trace of the model (torch.jit.trace), "
                                  "which lightgrad does not have; log the model's structure with add_text(tag, "
                                  "str(model)) instead")

    def add_embedding(self, mat: Any, metadata: Any = None, label_img: Any = None, global_step: int | None = None,
                      tag: str = "default", metadata_header: Any = None) -> None:
        """Log points (N, D) for the projector, with optional labels and images."""
        self._writer.add_embedding(_np(mat), metadata, _np(label_img), global_step, tag, metadata_header)

    def add_pr_curve(self, tag: str, labels: Any, predictions: Any, global_step: int | None = None,
                     num_thresholds: int = 127, weights: Any = None, walltime: float | None = None) -> None:
        """Log a precision-recall curve of binary ``labels`` against ``predictions`` in [0, 1]."""
        self._writer.add_pr_curve(tag, _np(labels), _np(predictions), global_step, num_thresholds, _np(weights),
                                  walltime)

    def add_mesh(self, tag: str, vertices: Any, colors: Any = None, faces: Any = None, config_dict: Any = None,
                 global_step: int | None = None, walltime: float | None = None) -> None:
        """Log a 3-D point cloud or mesh, (B, N, 3) vertices."""
        self._writer.add_mesh(tag, _np(vertices), _np(colors), _np(faces), config_dict, global_step, walltime)

    def add_custom_scalars(self, layout: dict[str, Any]) -> None:
        """Lay out charts of scalars: {category: {chart: ["Multiline" or "Margin", [tags]]}}."""
        self._writer.add_custom_scalars(layout)

    def add_hparams(self, hparam_dict: dict[str, Any], metric_dict: dict[str, Any],
                    hparam_domain_discrete: dict[str, list[Any]] | None = None, run_name: str | None = None,
                    global_step: int | None = None) -> None:
        """Log a run's hyper-parameters and final metrics (in a sub-run ``run_name``, default the time)."""
        if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        hparams = {k: _scalar(v) for k, v in hparam_dict.items()}
        metrics = {k: float(_scalar(v)) for k, v in metric_dict.items()}
        self._writer.add_hparams(hparams, metrics, name=run_name, global_step=global_step)

    def flush(self) -> None:
        """Write what is pending to disk (every event added so far is in the files when it returns)."""
        # tensorboardX's flush does not wait for the events its writer thread has not taken off its
        # queue yet (PyTorch's does): stop that thread, which drains the queue, and start a new one
        for fw in (self._writer.all_writers or {}).values():
            ew: Any = getattr(fw, "event_writer", None)
            worker = getattr(ew, "_worker", None)
            if worker is not None and not getattr(ew, "_closed", True) and worker.is_alive():
                worker.stop()
                ew._worker = type(worker)(ew._event_queue, ew._ev_writer, ew._flush_secs)
                ew._worker.start()
        self._writer.flush()

    def close(self) -> None:
        """Flush and close the event files."""
        self._writer.close()

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

"""Datasets read from local files, shaped like torchvision's: ``MNIST`` and ``FashionMNIST``.

Nothing is downloaded: put the IDX files (``train-images-idx3-ubyte`` etc., optionally ``.gz``)
in ``root`` or in ``root/MNIST/raw`` (torchvision's layout). Samples are ``(image, label)`` with
the image a uint8 tensor of shape (28, 28) where torchvision gives a PIL image.

>>> train = lightgrad.datasets.MNIST("data", train=True)
>>> image, label = train[0]
"""

from __future__ import annotations

import gzip
import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from .tensor import Tensor, from_numpy
from .utils.data import Dataset

# IDX type codes (third byte of the magic number) and their big-endian NumPy dtypes
_IDX_DTYPES: dict[int, np.dtype] = {0x08: np.dtype(">u1"), 0x09: np.dtype(">i1"), 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
               0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


def read_idx(path: str | os.PathLike[str], expected_magic: int | None = None) -> np.ndarray:
    """An IDX file (gzip-compressed if the name ends in .gz) as a native-endian NumPy array.

    The 4-byte big-endian magic number is 0x0000 TT DD: TT the element type, DD the number of
    dims; DD big-endian uint32 sizes follow, then the elements.
    """
    path = os.fspath(path)
    opener: Any = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4:
        raise RuntimeError(f"{path}: not an IDX file: expected at least a 4-byte header, got {len(raw)} bytes")
    magic = int.from_bytes(raw[:4], "big")
    code, ndim = raw[2], raw[3]
    if expected_magic is not None and magic != expected_magic:
        raise RuntimeError(f"{path}: wrong IDX magic number: expected {expected_magic} (0x{expected_magic:08X}), "
                           f"got {magic} (0x{magic:08X})")
    if raw[0] != 0 or raw[1] != 0 or code not in _IDX_DTYPES or ndim == 0:
        raise RuntimeError(f"{path}: not an IDX file: bad magic number {magic} (0x{magic:08X})")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise RuntimeError(f"{path}: truncated IDX header: expected {header} bytes for {ndim} dims, got {len(raw)}")
    shape = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    dt = _IDX_DTYPES[code]
    expected = math.prod(shape) * dt.itemsize
    got = len(raw) - header
    if got != expected:
        raise RuntimeError(f"{path}: IDX size mismatch: header says shape {shape} ({expected} bytes of data), "
                           f"but the file holds {got} bytes of data")
    return np.frombuffer(raw, dt, offset=header).reshape(shape).astype(dt.newbyteorder("="))


class MNIST(Dataset[tuple[Any, Any]]):
    """The MNIST digits from local IDX files: ``MNIST(root, train=True, transform=None, target_transform=None)``.

    ``data`` is an (N, 28, 28) uint8 tensor, ``targets`` an (N,) int64 tensor; ``ds[i]`` is
    ``(transform(data[i]), target_transform(int(targets[i])))``.
    """

    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven",
               "8 - eight", "9 - nine"]
    IMAGES_MAGIC = 2051  # 0x00000803: unsigned bytes, 3 dims
    LABELS_MAGIC = 2049  # 0x00000801: unsigned bytes, 1 dim

    def __init__(self, root: str | os.PathLike[str], train: bool = True, transform: Callable[[Any], Any] | None = None,
                 target_transform: Callable[[Any], Any] | None = None, download: bool = False) -> None:
        self.root = os.path.expanduser(os.fspath(root))
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        prefix = "train" if train else "t10k"
        names = (f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte")
        images_path, labels_path = self._find(names, download)
        images = read_idx(images_path, self.IMAGES_MAGIC)
        labels = read_idx(labels_path, self.LABELS_MAGIC)
        if len(images) != len(labels):
            raise RuntimeError(f"{type(self).__name__}: {images_path} holds {len(images)} images but {labels_path} "
                               f"holds {len(labels)} labels")
        self.data: Tensor = from_numpy(images)
        self.targets: Tensor = from_numpy(labels.astype(np.int64))

    @property
    def raw_folder(self) -> str:
        """The folder the downloaded raw files live in: ``root/<class name>/raw``."""
        return os.path.join(self.root, type(self).__name__, "raw")

    @property
    def class_to_idx(self) -> dict[str, int]:
        """Each class name's label."""
        return {c: i for i, c in enumerate(self.classes)}

    def _find(self, names: tuple[str, ...], download: bool) -> list[str]:
        """The paths of ``names`` (plain or .gz) in raw_folder or root, the first folder holding all."""
        folders = [self.raw_folder, self.root]
        for folder in folders:
            paths = []
            for name in names:
                found = [p for p in (os.path.join(folder, name), os.path.join(folder, name + ".gz")) if os.path.isfile(p)]
                if not found:
                    break
                paths.append(found[0])
            else:
                return paths
        where = " or ".join(repr(f) for f in folders)
        files = " and ".join(names)
        if download:
            raise RuntimeError(f"{type(self).__name__}: lightgrad does not download datasets (download=True); "
                               f"place {files} (optionally .gz) in {where}")
        raise RuntimeError(f"{type(self).__name__}: dataset not found: expected {files} (optionally .gz) in {where}")

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        img, target = self.data[index], int(self.targets[index])
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        lines = [f"Dataset {type(self).__name__}", f"    Number of datapoints: {len(self)}",
                 f"    Root location: {self.root}", f"    Split: {'Train' if self.train else 'Test'}"]
        if self.transform is not None:
            lines.append(f"    Transform: {self.transform!r}")
        if self.target_transform is not None:
            lines.append(f"    Target transform: {self.target_transform!r}")
        return "\n".join(lines)


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST: MNIST's file format and layout (``root/FashionMNIST/raw``)."""

    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
               "Ankle boot"]

"""``lightgrad.hub``: hub models cannot be fetched (that would download and run a repository's code,
and PyTorch's hub models are PyTorch code), so ``load``, ``list``, ``help`` and the URL helpers raise
an error naming what to do instead; ``get_dir``/``set_dir`` work as PyTorch's."""

from __future__ import annotations

import os
from typing import Any

_ADVICE = ("lightgrad.hub.{fn} cannot fetch {what}: it would download and execute a repository's code, and "
           "lightgrad does not. Instead, define the model in Python with lightgrad.nn, download its weights "
           "yourself, and load them: model.load_state_dict(lightgrad.load('weights.pt')) (lightgrad.load reads "
           "PyTorch's .pt/.pth/.bin files and safetensors, without running code from them).")

_hub_dir: str | None = None


def get_dir() -> str:
    """The hub cache folder: set_dir's, else $TORCH_HOME/hub, else ~/.cache/torch/hub (PyTorch's rule)."""
    if _hub_dir is not None:
        return _hub_dir
    home = os.environ.get("TORCH_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.join(os.path.expanduser("~"), ".cache")), "torch")
    return os.path.join(os.path.expanduser(home), "hub")


def set_dir(d: str | os.PathLike[str]) -> None:
    """Set the hub cache folder."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def load(repo_or_dir: str, model: str, *args: Any, source: str = "github", trust_repo: Any = None,
         force_reload: bool = False, verbose: bool = True, skip_validation: bool = False, **kwargs: Any) -> Any:
    """Raises RuntimeError: hub models are code from a repository; see the message for what to do."""
    raise RuntimeError(_ADVICE.format(fn="load", what=f"'{model}' from '{repo_or_dir}'"))


def list(github: str, force_reload: bool = False, skip_validation: bool = False, trust_repo: Any = None,  # noqa: A001
         verbose: bool = True) -> Any:
    """Raises RuntimeError: lightgrad cannot run hub code (the message says what to do instead)."""
    raise RuntimeError(_ADVICE.format(fn="list", what=f"the entry points of '{github}'"))


def help(github: str, model: str, force_reload: bool = False, skip_validation: bool = False,  # noqa: A001
         trust_repo: Any = None) -> Any:
    """Raises RuntimeError: lightgrad cannot run hub code (the message says what to do instead)."""
    raise RuntimeError(_ADVICE.format(fn="help", what=f"the docstring of '{model}' from '{github}'"))


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location: Any = None, progress: bool = True,
                             check_hash: bool = False, file_name: str | None = None,
                             weights_only: bool = False) -> Any:
    """Raises RuntimeError: lightgrad does not download; fetch the file yourself and use lightgrad.load."""
    raise RuntimeError(f"lightgrad.hub.load_state_dict_from_url does not download ({url}): fetch the file yourself "
                       "and load it with lightgrad.load(path), which reads PyTorch's .pt/.pth/.bin files safely.")


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None, progress: bool = True) -> None:
    """Raises RuntimeError: lightgrad does not download (the message says what to do instead)."""
    raise RuntimeError(f"lightgrad.hub.download_url_to_file does not download ({url}): fetch the file with your "
                       "own tools.")

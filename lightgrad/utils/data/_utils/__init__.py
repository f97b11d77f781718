"""DataLoader internals, laid out as ``torch.utils.data._utils``: collate, fetch, worker."""

from . import collate, fetch, worker

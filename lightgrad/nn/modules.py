"""``torch.nn.modules``: PyTorch's layer files under its names, each one of lightgrad's layer
modules (``nn.modules.loss`` is ``nn.loss``, ``nn.modules.batchnorm`` is ``nn.norm``), and every
layer class, as ``torch.nn.modules.Linear``. Reached through the ``torch`` alias
(``from torch.nn.modules.loss import _Loss``) or as ``lightgrad.nn.modules.loss``.

>>> modules.loss._Loss is lightgrad.nn.loss._Loss
True
"""

from . import (activation, attention, container, conv, distance, dropout, embedding, lazy, linear, loss,  # noqa: F401
               module, norm, padding, pooling, rnn, transformer)
from .activation import *  # noqa: F403
from .attention import *  # noqa: F403
from .container import *  # noqa: F403
from .conv import *  # noqa: F403
from .distance import *  # noqa: F403
from .dropout import *  # noqa: F403
from .embedding import *  # noqa: F403
from .lazy import *  # noqa: F403
from .linear import *  # noqa: F403
from .loss import *  # noqa: F403
from .module import Module  # noqa: F401
from .norm import *  # noqa: F403
from .padding import *  # noqa: F403
from .pooling import *  # noqa: F403
from .rnn import *  # noqa: F403
from .transformer import *  # noqa: F403

# PyTorch's file names for the layers lightgrad keeps in a file of another name
batchnorm = instancenorm = normalization = norm
sparse = embedding
flatten = container
fold = conv
pixelshuffle = channelshuffle = padding
upsampling = pooling


"""Neural-network layers, losses and the Module system, as ``torch.nn``.

>>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)); net(lightgrad.randn(3, 4)).shape
lightgrad.Size([3, 2])
"""

from . import functional, init, parallel, parameter, utils
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
from .module import Module
from .norm import *  # noqa: F403
from .parallel import DataParallel
from .padding import *  # noqa: F403
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter
from .pooling import *  # noqa: F403
from .rnn import *  # noqa: F403
from .transformer import *  # noqa: F403
from . import modules  # (after the layers: torch.nn.modules, PyTorch's layer files by name)

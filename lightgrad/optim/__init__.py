"""Optimizers and learning-rate schedulers, as ``torch.optim``.

>>> opt = lightgrad.optim.Adam(model.parameters(), lr=1e-3)
>>> sched = lightgrad.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=100)
"""

from . import lr_scheduler, swa_utils
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam",
           "Rprop", "ASGD", "Adafactor", "LBFGS", "lr_scheduler"]

"""The demo: a small CNN learns scikit-learn's 8x8 handwritten digits.

Trains with a progress bar (loss, accuracy, steps/s), reports test accuracy, saves a checkpoint,
reloads it into a fresh model and checks both predict the same, and plots the training curves.

    make demo                                   # sets everything up and runs this
    python examples/digits_cnn.py [--epochs N] [--out DIR]
    FRAMEWORK=torch python examples/digits_cnn.py
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from common import framework, numpy_init

torch = framework()
nn = torch.nn
F = nn.functional


class DigitsCNN(nn.Module):
    def __init__(self, dropout: float = 0.25) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)     # (B, 16, 8, 8)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)    # (B, 32, 8, 8)
        self.pool = nn.MaxPool2d(2)                     # (B, 32, 4, 4)
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(32 * 4 * 4, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = self.pool(F.relu(self.conv2(x)))
        return self.fc(self.drop(x.flatten(1)))


def load_digits(seed: int = 0) -> tuple[np.ndarray, ...]:
    from sklearn.datasets import load_digits as sk_digits
    d = sk_digits()
    x = (d.images / 16.0).astype(np.float32)[:, None]   # (1797, 1, 8, 8) in [0, 1]
    y = d.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    x, y = x[order], y[order]
    n_test = 360
    return x[n_test:], y[n_test:], x[:n_test], y[:n_test]


def accuracy(model: nn.Module, x, y) -> float:
    model.eval()
    with torch.no_grad():
        pred = model(x).argmax(1)
    model.train()
    return float((pred == y).float().mean())


def main(epochs: int = 12, out: str = "out", log: bool = True, max_steps: int | None = None,
         deterministic: bool = False) -> dict[str, float]:
    """Train and report; ``deterministic`` turns off shuffling and dropout (whose random streams
    differ between frameworks) so that lightgrad and PyTorch can be compared step by step."""
    from tqdm import tqdm
    torch.manual_seed(0)
    xtr, ytr, xte, yte = (torch.tensor(a) for a in load_digits())
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xtr, ytr), batch_size=64,
                                         shuffle=not deterministic)
    model = DigitsCNN(dropout=0.0 if deterministic else 0.25)
    numpy_init(torch, model)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
    history: dict[str, list[float]] = {"train_loss": [], "train_acc": [], "test_acc": []}
    losses: list[float] = []
    start = time.perf_counter()
    steps = 0
    for epoch in range(epochs):
        # disable=None is tqdm's own rule: a bar on a terminal, none in a log file or pipe (where every
        # redraw would add a line of carriage returns); the epoch lines below are printed either way
        bar = tqdm(loader, desc=f"epoch {epoch + 1:2d}/{epochs}", disable=None if log else True, leave=False)
        seen = correct = 0
        total = 0.0
        for xb, yb in bar:
            logits = model(xb)
            loss = F.cross_entropy(logits, yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            steps += 1
            losses.append(loss.item())
            if max_steps is not None and steps >= max_steps:
                return {"losses": losses}  # type: ignore[dict-item]
            total += loss.item() * len(yb)
            correct += int((logits.argmax(1) == yb).sum())
            seen += len(yb)
            bar.set_postfix(loss=f"{total / seen:.3f}", acc=f"{correct / seen:.3f}",
                            steps_s=f"{steps / (time.perf_counter() - start):.0f}")
        sched.step()
        history["train_loss"].append(total / seen)
        history["train_acc"].append(correct / seen)
        history["test_acc"].append(accuracy(model, xte, yte))
        if log:
            print(f"epoch {epoch + 1:2d}  loss {total / seen:.4f}  train acc {correct / seen:.4f}  "
                  f"test acc {history['test_acc'][-1]:.4f}")
    elapsed = time.perf_counter() - start
    test_acc = history["test_acc"][-1]

    # checkpoint: save, reload into a fresh model, and check the predictions agree
    Path(out).mkdir(parents=True, exist_ok=True)
    ext = "safetensors" if torch.__name__ == "lightgrad" else "pt"
    ckpt = os.path.join(out, f"digits_cnn.{ext}")
    torch.save({"model": model.state_dict(), "epoch": epochs, "test_acc": test_acc}, ckpt)
    restored = DigitsCNN()
    state = torch.load(ckpt)
    restored.load_state_dict(state["model"])
    model.eval()
    restored.eval()
    with torch.no_grad():
        agree = bool((model(xte).argmax(1) == restored(xte).argmax(1)).all())
    if not agree:
        raise RuntimeError("the reloaded checkpoint predicts differently from the trained model")

    plot = os.path.join(out, "digits_cnn_curves.png")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.2))
        ep = np.arange(1, epochs + 1)
        a1.plot(ep, history["train_loss"], "o-")
        a1.set(xlabel="epoch", ylabel="training loss", title="loss")
        a2.plot(ep, history["train_acc"], "o-", label="train")
        a2.plot(ep, history["test_acc"], "s-", label="test")
        a2.set(xlabel="epoch", ylabel="accuracy", title="accuracy")
        a2.legend()
        fig.tight_layout()
        fig.savefig(plot, dpi=100)
    except ImportError:
        plot = "(matplotlib not installed: no plot)"
    if log:
        print(f"\ntest accuracy {test_acc:.4f} after {epochs} epochs, {steps} steps in {elapsed:.1f} s "
              f"({steps / elapsed:.0f} steps/s) on {torch.__name__}")
        print(f"checkpoint {ckpt}: reloaded, predictions agree")
        print(f"training curves: {plot}")
    return {"test_acc": test_acc, "seconds": elapsed, "agree": float(agree)}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--out", default="out")
    args = ap.parse_args()
    main(args.epochs, args.out)

"""Placeholder demo: a tiny autograd example (the digits CNN demo replaces it)."""

import lightgrad as torch

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
w = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
y = (x * w).sum()
y.backward()
print("y =", y.item())
print("dy/dx =", x.grad)
print("dy/dw =", w.grad)

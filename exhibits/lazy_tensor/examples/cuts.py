"""Six ways to cut the pending graph, one per line: `.item()`, `.cpu()`, `.to("cpu")`, `print`,
an `if` on a tensor (`bool`) and `.tolist()`. Each line that needs a value on the host makes
torch_xla compile (or reuse) and run what that value needs. Two Python numbers: the exponent `p` is baked into the
graph as a constant (a new `p`, a new graph hash), the multiplier `scale` is uploaded as device
data (a new `scale`, the same hash). Try the eager mode switch: a cut after every op."""

import torch


def f(x, w, p, scale):
    y = (x @ w).abs() ** p
    total = y.sum() * scale
    peak = y.max().item()
    first_row = y[0].cpu()
    last_row = y[-1].to("cpu")
    print(total)
    if total > peak:
        total = total - peak
    rows = y.sum(dim=1).tolist()
    return y.mean(dim=0) * scale + total / len(rows) + float(first_row.sum() + last_row.sum())


args = (
    torch.linspace(-1.0, 1.0, 12).reshape(4, 3),
    torch.linspace(0.5, -0.5, 15).reshape(3, 5),
    2,
    0.5,
)

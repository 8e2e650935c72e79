"""Outside-style (level2/gemm_cross_entropy): the classifier's GEMM stays the library's (nn.Linear, allowed beside
other work), one Triton program per row does the log-softmax and the cross-entropy terms, and the wrapper sums each
row's terms. Two allowances of the `standard` policy in one solution."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _ce_terms(z_ptr, t_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    z = tl.load(z_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    t = tl.load(t_ptr + row * n_cols + cols, mask=mask, other=0.0)
    m = tl.max(z, axis=0)
    lse = m + tl.log(tl.sum(tl.exp(z - m), axis=0))
    tl.store(out_ptr + row * n_cols + cols, tl.where(mask, -t * (z - lse), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x, target):
        logits = self.linear(x).contiguous()
        target = target.contiguous()
        rows, cols = logits.shape
        terms = torch.empty_like(logits)
        _ce_terms[(rows,)](logits, target, terms, cols, BLOCK=triton.next_power_of_2(cols))
        return terms.sum(dim=1)

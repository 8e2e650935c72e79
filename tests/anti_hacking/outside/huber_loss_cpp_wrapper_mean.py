"""Outside-style (level1/huber_loss, C++ load_inline: what the CPU backend builds): the extension is built in
`__init__` and kept on `self`; its C++ loop computes the elementwise Huber loss and the C++ wrapper returns the rows'
`.mean(1)`. (The static rules call a C++-only solution `no_kernel` - own kernels are CUDA or Triton - so the tests
judge it dynamically; huber_loss_cuda_wrapper_mean.py is its CUDA twin.)"""
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CPP_SRC = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor huber_rows(torch::Tensor pred, torch::Tensor target, double delta) {
    auto p = pred.contiguous();
    auto t = target.contiguous();
    auto loss = torch::empty_like(p);
    const float* pp = p.data_ptr<float>();
    const float* tp = t.data_ptr<float>();
    float* lp = loss.data_ptr<float>();
    const float d = static_cast<float>(delta);
    for (int64_t i = 0, n = p.numel(); i < n; ++i) {
        float a = std::fabs(pp[i] - tp[i]);
        lp[i] = a < d ? 0.5f * a * a : d * (a - 0.5f * d);
    }
    return loss.mean(1);
}
"""


class ModelNew(nn.Module):
    def __init__(self, delta):
        super().__init__()
        self.delta = float(delta)
        self.ext = load_inline(name="kg_outside_huber_rows", cpp_sources=CPP_SRC, functions=["huber_rows"],
                               verbose=False)

    def forward(self, pred, target):
        return self.ext.huber_rows(pred, target, self.delta)

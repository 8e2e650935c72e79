"""The generator's operator set (Kevin, appendix A.2): expensive main operators and the cheaper ones that follow.

A main operator (`MAINS`) draws its full-size preset and returns a `Piece` plus the starting `State` of the
tensor it produces. A follower (`FOLLOWERS`) looks at the `State` and returns a `Piece` (lines for `__init__`
and `forward`, new size globals), or None when it does not apply (a norm after the channels were reduced away,
a third pooling, ...). Each program computes on one tensor named `x`; `skip` holds the main operator's output
when a follower adds it back (a residual).

Sizes are per variant: "full" (H200), "cpu" and "alt" (tiny, for the Triton interpreter) and "full_alt".
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

VARIANTS = ("full", "cpu", "alt", "full_alt")
Sizes = dict[str, int]  # variant -> value


@dataclass
class State:
    """What the followers may rely on about `x`."""

    rank: int
    channel_dim: int | None  # 1 (N, C, ...) or -1 (features last); None once the channels were reduced
    channels: str | None  # the __init__ argument holding the channel count
    channel_sizes: Sizes = field(default_factory=dict)  # its value per variant
    spatial: int = 0  # trailing spatial dims that pooling may halve
    pools: int = 0
    main_shape: bool = True  # x still has the main operator's output shape


@dataclass
class Piece:
    name: str
    forward: list[str]
    init: list[str] = field(default_factory=list)
    globals: dict[str, Sizes] = field(default_factory=dict)  # new size globals (value per variant)
    constants: dict[str, int] = field(default_factory=dict)  # module globals that are not sizes (kernel_size)
    init_args: list[str] = field(default_factory=list)
    fwd_args: str = "x: torch.Tensor"
    inputs: str = ""
    needs_skip: bool = False


def full_alt(value: int) -> int:
    """A second full size: ~6 % smaller and odd, so it is no multiple of the first."""
    return max(1, value - max(1, value // 16)) | 1


def _sizes(names: tuple[str, ...], full: tuple[int, ...], cpu: tuple[int, ...], alt: tuple[int, ...]) -> dict[str, Sizes]:
    return {n: {"full": f, "cpu": c, "alt": a, "full_alt": full_alt(f)} for n, f, c, a in zip(names, full, cpu, alt)}


# ---------------------------------------------------------------------------------------------- main operators
def gemm(rng: random.Random) -> tuple[Piece, State]:
    full = rng.choice([(2048, 4096, 4096), (4096, 2048, 4096), (1024, 8192, 4096), (4096, 4096, 2048), (8192, 2048, 2048)])
    g = _sizes(("batch_size", "in_features", "out_features"), full, (32, 64, 48), (41, 53, 35))
    piece = Piece("gemm", ["x = self.linear(x)"], ["self.linear = nn.Linear(in_features, out_features)"], g,
                  init_args=["in_features", "out_features"], inputs="[torch.randn(batch_size, in_features)]")
    return piece, State(2, -1, "out_features", g["out_features"])


def bmm(rng: random.Random) -> tuple[Piece, State]:
    full = rng.choice([(128, 512, 1024, 512), (64, 1024, 512, 1024), (256, 256, 1024, 512), (32, 1024, 1024, 1024)])
    g = _sizes(("batch_size", "M", "K", "N"), full, (2, 32, 32, 32), (3, 29, 37, 27))
    piece = Piece("bmm", ["x = torch.bmm(a, b)"], [], g, init_args=["N"], fwd_args="a: torch.Tensor, b: torch.Tensor",
                  inputs="[torch.randn(batch_size, M, K), torch.randn(batch_size, K, N)]")
    return piece, State(3, -1, "N", g["N"])


def _conv(rng: random.Random, name: str, cls: str, names: tuple[str, ...], presets: list, cpu: tuple, alt: tuple,
          kernel: int, extra: str, spatial: int) -> tuple[Piece, State]:
    g = _sizes(names, rng.choice(presets), cpu, alt)
    dims = ", ".join(n for n in names if n != "out_channels")
    piece = Piece(name, ["x = self.conv(x)"], [f"self.conv = nn.{cls}(in_channels, out_channels, kernel_size{extra})"],
                  g, {"kernel_size": kernel}, ["in_channels", "out_channels", "kernel_size"],
                  inputs=f"[torch.randn({dims})]")
    return piece, State(2 + spatial, 1, "out_channels", g["out_channels"], spatial=spatial)


def conv2d(rng: random.Random) -> tuple[Piece, State]:
    kernel = rng.choice([3, 3, 5])
    pad = rng.choice(["", ", padding=kernel_size // 2"])
    presets = [(64, 32, 64, 128, 128), (32, 64, 128, 64, 64), (16, 16, 32, 256, 256), (32, 32, 64, 128, 128)]
    return _conv(rng, "conv2d", "Conv2d", ("batch_size", "in_channels", "out_channels", "height", "width"), presets,
                 (2, 3, 8, 16, 16), (3, 5, 7, 19, 17), kernel, pad, 2)


def conv_transpose2d(rng: random.Random) -> tuple[Piece, State]:
    presets = [(64, 64, 32, 64, 64), (32, 128, 64, 64, 64), (16, 32, 16, 128, 128)]
    return _conv(rng, "conv_transpose2d", "ConvTranspose2d", ("batch_size", "in_channels", "out_channels", "height",
                 "width"), presets, (2, 4, 4, 8, 8), (3, 5, 6, 9, 7), 4, ", stride=2, padding=1", 2)


def conv3d(rng: random.Random) -> tuple[Piece, State]:
    presets = [(16, 8, 16, 32, 64, 64), (8, 16, 32, 32, 48, 48), (4, 32, 32, 32, 64, 64)]
    return _conv(rng, "conv3d", "Conv3d", ("batch_size", "in_channels", "out_channels", "depth", "height", "width"),
                 presets, (2, 2, 4, 6, 8, 8), (3, 3, 5, 7, 9, 6), 3, "", 3)


def conv_transpose3d(rng: random.Random) -> tuple[Piece, State]:
    presets = [(16, 64, 32, 16, 32, 32), (8, 64, 64, 16, 32, 32)]
    return _conv(rng, "conv_transpose3d", "ConvTranspose3d", ("batch_size", "in_channels", "out_channels", "depth",
                 "height", "width"), presets, (2, 4, 3, 4, 4, 4), (3, 5, 2, 3, 5, 4), 3,
                 ", stride=2, padding=1, output_padding=1", 3)


def conv1d(rng: random.Random) -> tuple[Piece, State]:
    presets = [(32, 128, 256, 8192), (64, 64, 128, 16384), (16, 256, 256, 8192)]
    return _conv(rng, "conv1d", "Conv1d", ("batch_size", "in_channels", "out_channels", "length"), presets,
                 (2, 4, 8, 64), (3, 5, 7, 77), rng.choice([3, 5]), rng.choice(["", ", padding=kernel_size // 2"]), 1)


MAINS: dict[str, Callable[[random.Random], tuple[Piece, State]]] = {
    f.__name__: f for f in (gemm, bmm, conv2d, conv_transpose2d, conv3d, conv_transpose3d, conv1d)
}


# ---------------------------------------------------------------------------------------------- followers
@dataclass
class Ctx:
    """What a follower sees: the tensor's state, the sampler, and its own position `k` (for unique names)."""

    state: State
    rng: random.Random
    k: int


Follower = Callable[[Ctx], Piece | None]


def _unary(name: str, expr: str) -> Follower:
    def op(ctx: Ctx) -> Piece:
        return Piece(name, [f"x = {expr}"])

    op.__name__ = name
    return op


def _with_constant(name: str, template: str, choices: list) -> Follower:
    def op(ctx: Ctx) -> Piece:
        return Piece(name, ["x = " + template.format(*ctx.rng.choice(choices))])

    op.__name__ = name
    return op


def _param_shape(s: State) -> str:
    tail = ", 1" * (s.rank - 2) if s.channel_dim == 1 else ""
    return f"({s.channels}{tail})"


def bias_add(ctx: Ctx) -> Piece | None:
    s = ctx.state
    if s.channels is None:
        return None
    return Piece("bias_add", [f"x = x + self.bias{ctx.k}"],
                 [f"self.bias{ctx.k} = nn.Parameter(torch.randn{_param_shape(s)} * 0.5)"], init_args=[s.channels])


def scale_mul(ctx: Ctx) -> Piece | None:
    s = ctx.state
    if s.channels is None:
        return None
    return Piece("scale_mul", [f"x = x * self.scale{ctx.k}"],
                 [f"self.scale{ctx.k} = nn.Parameter(torch.rand{_param_shape(s)} * 2.0 + 0.5)"], init_args=[s.channels])


def residual_add(ctx: Ctx) -> Piece | None:
    if not ctx.state.main_shape:
        return None
    return Piece("residual_add", ["x = x + skip"], needs_skip=True)


def _reinit(attr: str, channels: str) -> list[str]:
    return ["with torch.no_grad():", f"    self.{attr}.weight.copy_(1.0 + 0.5 * torch.randn({channels}))",
            f"    self.{attr}.bias.copy_(0.5 * torch.randn({channels}))"]


def _norm(name: str, ctor: str, ctx: Ctx, affine: bool = True) -> Piece:
    attr, c = f"norm{ctx.k}", ctx.state.channels
    init = [f"self.{attr} = {ctor}"] + (_reinit(attr, c) if affine else [])
    return Piece(name, [f"x = self.{attr}(x)"], init, init_args=[c])


def batchnorm(ctx: Ctx) -> Piece | None:
    s = ctx.state
    if s.channels is None or (s.channel_dim == -1 and s.rank != 2):
        return None
    dims = 1 if s.rank <= 3 else s.rank - 2
    return _norm("batchnorm", f"nn.BatchNorm{dims}d({s.channels})", ctx)


def groupnorm(ctx: Ctx) -> Piece | None:
    s = ctx.state
    if s.channels is None or (s.channel_dim == -1 and s.rank != 2):
        return None
    groups = f"num_groups{ctx.k}"
    piece = _norm("groupnorm", f"nn.GroupNorm({groups}, {s.channels})", ctx)
    piece.globals = {groups: {v: _groups(s.channel_sizes[v]) for v in VARIANTS}}
    piece.init_args = [groups, s.channels]
    return piece


def _groups(channels: int) -> int:
    return next((g for g in (8, 6, 4, 3, 2) if channels % g == 0 and channels > g), 1)


def instancenorm(ctx: Ctx) -> Piece | None:
    s = ctx.state
    if s.channels is None or s.channel_dim != 1 or s.spatial == 0 or s.pools > 0:  # needs > 1 value a plane
        return None
    return _norm("instancenorm", f"nn.InstanceNorm{s.rank - 2}d({s.channels}, affine=True)", ctx)


def layernorm(ctx: Ctx) -> Piece | None:
    s = ctx.state
    if s.channels is None or s.channel_dim != -1:
        return None
    return _norm("layernorm", f"nn.LayerNorm({s.channels})", ctx)


def rmsnorm(ctx: Ctx) -> Piece | None:
    s = ctx.state
    if s.channels is None or s.channel_dim != -1:
        return None
    attr = f"norm{ctx.k}"
    return Piece("rmsnorm", [f"x = self.{attr}(x)"],
                 [f"self.{attr} = nn.RMSNorm({s.channels})", "with torch.no_grad():",
                  f"    self.{attr}.weight.copy_(1.0 + 0.5 * torch.randn({s.channels}))"], init_args=[s.channels])


def _over_channels(name: str, template: str, reduces: bool) -> Follower:
    def op(ctx: Ctx) -> Piece | None:
        s = ctx.state
        if s.channels is None:
            return None
        piece = Piece(name, ["x = " + template.format(d=s.channel_dim)])
        if reduces:
            s.channels, s.channel_dim, s.main_shape = None, None, False
        return piece

    op.__name__ = name
    return op


def _over_space(name: str, fn: str) -> Follower:
    def op(ctx: Ctx) -> Piece | None:
        s = ctx.state
        if s.spatial == 0:
            return None
        dims = tuple(range(s.rank - s.spatial, s.rank))
        s.spatial, s.main_shape = 0, False
        return Piece(name, [f"x = {fn}(x, dim={dims}, keepdim=True)"])

    op.__name__ = name
    return op


def _pool(name: str, cls: str) -> Follower:
    def op(ctx: Ctx) -> Piece | None:
        s = ctx.state
        if s.spatial == 0 or s.pools >= 2:
            return None
        s.pools, s.main_shape = s.pools + 1, False
        attr = f"pool{ctx.k}"
        return Piece(name, [f"x = self.{attr}(x)"], [f"self.{attr} = nn.{cls}{s.spatial}d(2)"])

    op.__name__ = name
    return op


F = "torch.nn.functional"
FOLLOWERS: dict[str, Follower] = {
    f.__name__: f
    for f in (
        _unary("relu", "torch.relu(x)"),
        _unary("gelu", f"{F}.gelu(x)"),
        _unary("gelu_tanh", f'{F}.gelu(x, approximate="tanh")'),
        _unary("silu", f"{F}.silu(x)"),
        _unary("sigmoid", "torch.sigmoid(x)"),
        _unary("tanh", "torch.tanh(x)"),
        _unary("mish", f"{F}.mish(x)"),
        _unary("hardswish", f"{F}.hardswish(x)"),
        _unary("hardsigmoid", f"{F}.hardsigmoid(x)"),
        _unary("elu", f"{F}.elu(x)"),
        _unary("selu", "torch.selu(x)"),
        _unary("softplus", f"{F}.softplus(x)"),
        _unary("softsign", f"{F}.softsign(x)"),
        _unary("square", "x * x"),
        _with_constant("leaky_relu", F + ".leaky_relu(x, negative_slope={})", [(0.01,), (0.05,), (0.1,), (0.2,)]),
        _with_constant("hardtanh", F + ".hardtanh(x, min_val={}, max_val={})", [(-1.0, 1.0), (-0.5, 0.5), (-2.0, 2.0)]),
        _with_constant("clamp", "torch.clamp(x, min={}, max={})", [(-0.5, 1.0), (0.0, 2.0), (-1.0, 0.25)]),
        _with_constant("add_const", "x + {}", [(0.5,), (1.0,), (-0.25,), (2.0,)]),
        _with_constant("sub_const", "x - {}", [(0.5,), (0.1,), (1.5,)]),
        _with_constant("mul_const", "x * {}", [(0.5,), (1.5,), (2.0,), (0.125,)]),
        _with_constant("div_const", "x / {}", [(2.0,), (3.0,), (0.75,)]),
        bias_add,
        scale_mul,
        residual_add,
        batchnorm,
        groupnorm,
        instancenorm,
        layernorm,
        rmsnorm,
        _over_channels("softmax", "torch.softmax(x, dim={d})", reduces=False),
        _over_channels("log_softmax", "torch.log_softmax(x, dim={d})", reduces=False),
        _over_channels("sum_channels", "torch.sum(x, dim={d}, keepdim=True)", reduces=True),
        _over_channels("mean_channels", "torch.mean(x, dim={d}, keepdim=True)", reduces=True),
        _over_channels("max_channels", "torch.amax(x, dim={d}, keepdim=True)", reduces=True),
        _over_channels("min_channels", "torch.amin(x, dim={d}, keepdim=True)", reduces=True),
        _over_channels("logsumexp_channels", "torch.logsumexp(x, dim={d}, keepdim=True)", reduces=True),
        _over_space("global_avgpool", "torch.mean"),
        _over_space("global_maxpool", "torch.amax"),
        _pool("maxpool", "MaxPool"),
        _pool("avgpool", "AvgPool"),
    )
}

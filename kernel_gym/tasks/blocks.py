"""The generator's level-3 compositions: whole blocks of several operators, as the level-3 suite has them.

A block is a token mixer (attention, a causal depthwise convolution, or a token-mixing MLP) and a channel mixer (an
MLP: GELU, tanh-GELU, squared ReLU, SwiGLU or GeGLU), each a sublayer with its norm (LayerNorm or an fp32-statistics
RMSNorm) and residual, wired in one of four ways:

    pre        x = x + f(norm(x))                  (Llama, GPT-2, ViT)
    post       x = norm(x + f(x))                  (BERT)
    sandwich   x = x + norm_b(f(norm_a(x)))        (Gemma 2)
    parallel   h = norm(x); x = x + f1(h) + f2(h)  (GPT-J, PaLM; one shared norm)

optionally two layers deep (token, channel, token, channel), with a per-channel layer scale on the residual branch
and a final norm. Attention is drawn among causal, bidirectional and sliding-window masks, multi-head or grouped-query
(two query heads a kv head), with or without the rotary embedding and a per-head RMS norm of q and k. Programs are
bf16 natively (their softmaxes and norm statistics in fp32, like the suite's), `KERNEL_GYM["level"]` 3.

Sizes come in presets, every variant explicit (`cpu`, `alt` tiny for the Triton interpreter, two full ones), so
heads divide the width, head dims stay even for rotary and the judged run stays inside the level-3 memory bound.
Everything is drawn from the given `random.Random`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

ROPE_BASE = 10000.0
# size presets: variant -> size global -> value (n_kv_heads is derived from n_heads and the group)
_TINY = {"cpu": {"batch_size": 2, "seq_len": 16, "d_model": 32, "n_heads": 4, "ffn_dim": 64, "window": 5,
                 "tok_dim": 24},
         "alt": {"batch_size": 1, "seq_len": 19, "d_model": 48, "n_heads": 6, "ffn_dim": 80, "window": 7,
                 "tok_dim": 20}}
_FULL = [
    ({"batch_size": 4, "seq_len": 1024, "d_model": 1024, "n_heads": 16, "ffn_dim": 4096, "window": 256, "tok_dim": 512},
     {"batch_size": 3, "seq_len": 1001, "d_model": 960, "n_heads": 12, "ffn_dim": 3840, "window": 250, "tok_dim": 500}),
    ({"batch_size": 2, "seq_len": 2048, "d_model": 1536, "n_heads": 12, "ffn_dim": 4096, "window": 512,
      "tok_dim": 1024},
     {"batch_size": 2, "seq_len": 1999, "d_model": 1280, "n_heads": 10, "ffn_dim": 3456, "window": 500, "tok_dim": 1000}),
    ({"batch_size": 8, "seq_len": 512, "d_model": 2048, "n_heads": 16, "ffn_dim": 5632, "window": 128, "tok_dim": 256},
     {"batch_size": 7, "seq_len": 509, "d_model": 1792, "n_heads": 14, "ffn_dim": 4864, "window": 127, "tok_dim": 250}),
]
_INIT_ORDER = ("seq_len", "d_model", "n_heads", "n_kv_heads", "ffn_dim", "window", "tok_dim")

_HELPERS = {
    "wide": ['def _wide(x: torch.Tensor) -> torch.Tensor:',
             '    """float32 for a bf16/fp16 tensor (softmax, norm statistics); float32/float64 stay as they are."""',
             '    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x'],
    "rmsnorm": ['def _rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:',
                '    """x / rms(x) * weight over the last dim, the statistics in float32."""',
                '    xf = _wide(x)',
                '    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * weight'],
    "rotary": ['def _rotary(x: torch.Tensor, base: float) -> torch.Tensor:',
               '    """Rotate the two halves of each head (batch, heads, seq, head_dim) by position-dependent angles."""',
               '    n, d = x.shape[-2], x.shape[-1]',
               '    inv_freq = base ** (-torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d)',
               '    angles = torch.outer(torch.arange(n, device=x.device, dtype=torch.float32), inv_freq)',
               '    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)',
               '    x1, x2 = x[..., : d // 2], x[..., d // 2 :]',
               '    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)'],
}
_HELPER_NEEDS = {"rmsnorm": ("wide",)}


@dataclass(frozen=True)
class Part:
    """One sublayer's computation f: its `__init__` lines and the body of its method `f{i}(self, h)` (`{i}` is the
    sublayer's index), the size globals it reads and the module helpers it calls."""

    name: str
    init: tuple[str, ...]
    body: tuple[str, ...]
    sizes: tuple[str, ...] = ()
    helpers: tuple[str, ...] = ()


# ---------------------------------------------------------------------------------------------- token mixers
def attention(rng: random.Random, mask: str | None = None, gqa: bool | None = None, rope: bool | None = None,
              qk_norm: bool | None = None) -> Part:
    """Attention with its projections; each option not given is drawn (mask: "causal", "full" or "window")."""
    mask = mask or rng.choice(["causal", "causal", "full", "window"])
    gqa = rng.random() < 0.5 if gqa is None else gqa
    rope = rng.random() < 0.6 if rope is None else rope
    qk_norm = rng.random() < 0.25 if qk_norm is None else qk_norm
    kv = "self.n_kv_heads" if gqa else "self.n_heads"
    init = ["self.wq{i} = nn.Linear(d_model, d_model, bias=False)",
            f"self.wk{{i}} = nn.Linear(d_model, {kv.replace('self.', '')} * (d_model // n_heads), bias=False)",
            f"self.wv{{i}} = nn.Linear(d_model, {kv.replace('self.', '')} * (d_model // n_heads), bias=False)",
            "self.wo{i} = nn.Linear(d_model, d_model, bias=False)"]
    body = ["b, n, _ = h.shape",
            "hd = self.d_model // self.n_heads",
            "q = self.wq{i}(h).view(b, n, self.n_heads, hd).transpose(1, 2)",
            f"k = self.wk{{i}}(h).view(b, n, {kv}, hd).transpose(1, 2)",
            f"v = self.wv{{i}}(h).view(b, n, {kv}, hd).transpose(1, 2)"]
    helpers = ["wide"]
    if qk_norm:
        init += ["self.q_norm{i} = nn.Parameter(1 + 0.1 * torch.randn(d_model // n_heads))",
                 "self.k_norm{i} = nn.Parameter(1 + 0.1 * torch.randn(d_model // n_heads))"]
        body += ["q, k = _rmsnorm(q, self.q_norm{i}), _rmsnorm(k, self.k_norm{i})"]
        helpers.append("rmsnorm")
    if rope:
        body += [f"q, k = _rotary(q, {ROPE_BASE}), _rotary(k, {ROPE_BASE})"]
        helpers.append("rotary")
    if gqa:
        body += ["group = self.n_heads // self.n_kv_heads",
                 "k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)"]
    body += ["s = _wide(torch.matmul(q, k.transpose(-1, -2)) * hd ** -0.5)"]
    if mask != "full":
        body += ["pos = torch.arange(n, device=h.device)", "offset = pos[:, None] - pos[None, :]"]
        hidden = "offset < 0" if mask == "causal" else "(offset < 0) | (offset >= self.window)"
        body += [f"s = s.masked_fill({hidden}, float(\"-inf\"))"]
    body += ["p = torch.softmax(s, dim=-1).to(h.dtype)",
             "return self.wo{i}(torch.matmul(p, v).transpose(1, 2).reshape(b, n, -1))"]
    sizes = ["d_model", "n_heads"] + (["n_kv_heads"] if gqa else []) + (["window"] if mask == "window" else [])
    name = f"{'gqa' if gqa else 'mha'}_{mask}" + ("_rope" if rope else "") + ("_qknorm" if qk_norm else "")
    return Part(name, tuple(init), tuple(body), tuple(sizes), tuple(helpers))


def causal_conv(rng: random.Random, gated: bool | None = None) -> Part:
    gated = rng.random() < 0.5 if gated is None else gated
    init = ["self.conv{i} = nn.Conv1d(d_model, d_model, 4, groups=d_model, padding=3)"]
    body = ["n = h.shape[1]", "y = F.silu(self.conv{i}(h.transpose(1, 2))[..., :n].transpose(1, 2))"]
    if gated:
        init += ["self.gate{i} = nn.Linear(d_model, d_model)"]
        body += ["y = y * torch.sigmoid(self.gate{i}(h))"]
    init += ["self.proj{i} = nn.Linear(d_model, d_model)"]
    body += ["return self.proj{i}(y)"]
    return Part("gated_conv" if gated else "causal_conv", tuple(init), tuple(body), ("d_model",))


def token_mlp(rng: random.Random) -> Part:
    init = ["self.tok_in{i} = nn.Linear(seq_len, tok_dim)", "self.tok_out{i} = nn.Linear(tok_dim, seq_len)"]
    body = ["return self.tok_out{i}(F.gelu(self.tok_in{i}(h.transpose(1, 2)))).transpose(1, 2)"]
    return Part("token_mlp", tuple(init), tuple(body), ("seq_len", "tok_dim"))


# ---------------------------------------------------------------------------------------------- channel mixers
_MLPS = {
    "gelu_mlp": (False, "F.gelu({})"),
    "gelu_tanh_mlp": (False, 'F.gelu({}, approximate="tanh")'),
    "relu2_mlp": (False, "torch.relu({}).square()"),
    "swiglu": (True, "F.silu({})"),
    "geglu": (True, "F.gelu({})"),
}


def mlp(rng: random.Random, name: str | None = None) -> Part:
    name = name or rng.choice(sorted(_MLPS))
    gated, act = _MLPS[name]
    bias = "False" if gated else "True"
    init = [f"self.fc_in{{i}} = nn.Linear(d_model, ffn_dim, bias={bias})"]
    if gated:
        init += ["self.fc_gate{i} = nn.Linear(d_model, ffn_dim, bias=False)"]
        inner = act.format("self.fc_gate{i}(h)") + " * self.fc_in{i}(h)"
    else:
        inner = act.format("self.fc_in{i}(h)")
    init += [f"self.fc_out{{i}} = nn.Linear(ffn_dim, d_model, bias={bias})"]
    return Part(name, tuple(init), (f"return self.fc_out{{i}}({inner})",), ("d_model", "ffn_dim"))


TOKEN_MIXERS = {"attention": attention, "causal_conv": causal_conv, "token_mlp": token_mlp}
TOKEN_WEIGHTS = {"attention": 6, "causal_conv": 2, "token_mlp": 1}
WIRINGS = ("pre", "pre", "post", "sandwich", "parallel")


@dataclass(frozen=True)
class Block:
    """A drawn composition: its wiring, norm kind, parts (token and channel mixers in order) and options."""

    wiring: str
    norm: str  # "layernorm" | "rmsnorm"
    parts: tuple[Part, ...]
    layer_scale: bool
    final_norm: bool
    preset: int

    @property
    def ops(self) -> tuple[str, ...]:
        head = f"{self.wiring}_{self.norm}" + ("_scaled" if self.layer_scale else "")
        return (head, *(p.name for p in self.parts), *(("final_norm",) if self.final_norm else ()))


def sample_block(rng: random.Random) -> Block:
    wiring = rng.choice(WIRINGS)
    layers = 1 if wiring == "parallel" or rng.random() < 0.7 else 2
    mixers = sorted(TOKEN_MIXERS)
    parts: list[Part] = []
    for _ in range(layers):
        token = rng.choices(mixers, weights=[TOKEN_WEIGHTS[m] for m in mixers])[0]
        parts += [TOKEN_MIXERS[token](rng), mlp(rng)]
    return Block(wiring, rng.choice(["layernorm", "rmsnorm"]), tuple(parts), rng.random() < 0.3,
                 wiring in ("pre", "parallel") and rng.random() < 0.5, rng.randrange(len(_FULL)))


def sizes_of(block: Block) -> dict[str, dict[str, int]]:
    """variant -> the size globals the block reads (grouped-query attention: two query heads a kv head)."""
    full, full_alt = _FULL[block.preset]
    variants = {"full": full, "cpu": _TINY["cpu"], "alt": _TINY["alt"], "full_alt": full_alt}
    used = {"batch_size", "seq_len", "d_model"} | {s for p in block.parts for s in p.sizes}
    out = {}
    for name, values in variants.items():
        sized = {**values, "n_kv_heads": values["n_heads"] // 2}
        out[name] = {k: sized[k] for k in ("batch_size", *_INIT_ORDER) if k in used}
    return out


def helpers_of(block: Block) -> list[str]:
    """The module helpers the block's source needs, each once, dependencies first."""
    wanted = {h for p in block.parts for h in p.helpers} | ({"rmsnorm"} if block.norm == "rmsnorm" else set())
    wanted |= {d for h in wanted for d in _HELPER_NEEDS.get(h, ())}
    return [h for h in _HELPERS if h in wanted]


def init_args(block: Block) -> list[str]:
    used = {s for p in block.parts for s in p.sizes} | {"d_model"}
    return [a for a in _INIT_ORDER if a in used]


# ---------------------------------------------------------------------------------------------- rendering
_WIRING_TEXT = {"pre": "x = x + f(norm(x))", "post": "x = norm(x + f(x))", "sandwich": "x = x + norm_b(f(norm_a(x)))",
                "parallel": "h = norm(x); x = x + f_token(h) + f_channel(h)"}


def _norm_init(block: Block, name: str) -> list[str]:
    if block.norm == "rmsnorm":
        return [f"self.{name} = nn.Parameter(1 + 0.1 * torch.randn(d_model))"]
    return [f"self.{name} = nn.LayerNorm(d_model)", f"nn.init.normal_(self.{name}.weight, 1.0, 0.1)",
            f"nn.init.normal_(self.{name}.bias, 0.0, 0.1)"]


def _norm(block: Block, name: str, x: str) -> str:
    return f"_rmsnorm({x}, self.{name})" if block.norm == "rmsnorm" else f"self.{name}({x})"


def _norm_names(block: Block, i: int) -> list[str]:
    if block.wiring == "parallel":
        return ["norm0"] if i == 0 else []
    return [f"norm{i}", f"norm{i}b"] if block.wiring == "sandwich" else [f"norm{i}"]


def _init_lines(block: Block) -> list[str]:
    args = init_args(block)
    lines = [f"def __init__(self, {', '.join(f'{a}: int' for a in args)}):", "    super().__init__()"]
    read = {a for a in args if any(f"self.{a}" in line for p in block.parts for line in p.body)}
    lines += [f"    self.{a} = {a}" for a in args if a in read]
    for i, part in enumerate(block.parts):
        lines += ["    " + line for name in _norm_names(block, i) for line in _norm_init(block, name)]
        lines += ["    " + line.replace("{i}", str(i)) for line in part.init]
        if block.layer_scale:
            lines += [f"    self.gamma{i} = nn.Parameter(0.5 + 0.1 * torch.randn(d_model))"]
    if block.final_norm:
        lines += ["    " + line for line in _norm_init(block, "norm_f")]
    return lines + ["    self.to(torch.bfloat16)"]


def _forward_lines(block: Block) -> list[str]:
    def branch(i: int, h: str) -> str:
        return ("self.gamma{i} * " if block.layer_scale else "").replace("{i}", str(i)) + f"self.f{i}({h})"

    lines = ["def forward(self, x: torch.Tensor) -> torch.Tensor:"]
    if block.wiring == "parallel":
        lines += [f"    h = {_norm(block, 'norm0', 'x')}", f"    x = x + {branch(0, 'h')} + {branch(1, 'h')}"]
    for i in range(len(block.parts) if block.wiring != "parallel" else 0):
        if block.wiring == "pre":
            lines += [f"    x = x + {branch(i, _norm(block, f'norm{i}', 'x'))}"]
        elif block.wiring == "post":
            lines += [f"    x = {_norm(block, f'norm{i}', f'x + {branch(i, chr(120))}')}"]
        else:
            lines += [f"    x = x + {_norm(block, f'norm{i}b', branch(i, _norm(block, f'norm{i}', 'x')))}"]
    if block.final_norm:
        lines += [f"    x = {_norm(block, 'norm_f', 'x')}"]
    return lines + ["    return x"]


def _method_lines(part: Part, i: int) -> list[str]:
    lines = [f"def f{i}(self, h: torch.Tensor) -> torch.Tensor:", f'    """{part.name}"""']
    return lines + ["    " + line.replace("{i}", str(i)) for line in part.body]


def _fmt(sizes: dict[str, int]) -> str:
    return "{" + ", ".join(f'"{k}": {v}' for k, v in sizes.items()) + "}"


def render_block(block: Block, sizes: dict[str, dict[str, int]]) -> str:
    """The KernelBench-format source of a block at `sizes` (variant -> size globals), bf16 natively."""
    chain = " -> ".join(block.ops)
    lines = [f'"""Generated level-3 task: {chain}."""', "import torch", "import torch.nn as nn",
             "import torch.nn.functional as F", ""]
    lines += [f"{k} = {v}" for k, v in sizes["full"].items()]
    lines += ["", "KERNEL_GYM = {"] + [f'    "{v}": {_fmt(sizes[v])},' for v in ("cpu", "alt", "full_alt")]
    lines += ['    "dtype": "bfloat16",', '    "level": 3,', "}", "", ""]
    for helper in helpers_of(block):
        lines += _HELPERS[helper] + ["", ""]
    doc = (f"{_WIRING_TEXT[block.wiring]} over {', '.join(p.name for p in block.parts)} (sampled by kernel-gym's "
           "task generator); softmax and norm statistics in float32.")
    lines += ["class Model(nn.Module):", f'    """{doc}"""', ""]
    members = [_init_lines(block), _forward_lines(block), *(_method_lines(p, i) for i, p in enumerate(block.parts))]
    for member in members:
        lines += ["    " + line for line in member] + [""]
    lines += ["", "def get_inputs():", "    return [torch.randn(batch_size, seq_len, d_model, dtype=torch.bfloat16)]",
              "", "", "def get_init_inputs():", f"    return [{', '.join(init_args(block))}]", ""]
    return "\n".join(lines)

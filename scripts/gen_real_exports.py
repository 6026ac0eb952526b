#!/usr/bin/python3
"""Generates tests/data/real_exports/*.onnx: fake-quantized networks exported by PyTorch.

The models are raw `torch.onnx.export` output (default constant folding, no onnxsim, no clean-up):
Constant nodes, the Identity nodes of torch's initializer de-duplication, Shape subgraphs and the
missing value_info are kept on purpose, since that is what users feed to axqc. The expected
findings of every model are in tests/data/real_exports/README.md and tests/unit/real_exports_test.cc.

Requirements (NOT needed by CI or by the tests; the generated models are committed):
    apt-get install -y python3-torch python3-torchvision python3-onnx
    (Debian 12: torch 1.13.1, torchvision 0.14.1, onnx 1.12). These packages are deliberately
    not in scripts/setup's package list.
Regenerate (Debian's interpreter, /usr/bin/python3, not a pyenv or venv one):
    /usr/bin/python3 scripts/gen_real_exports.py            # writes tests/data/real_exports/
    /usr/bin/python3 scripts/gen_real_exports.py --out DIR  # somewhere else
    /usr/bin/python3 scripts/gen_real_exports.py --list     # names and descriptions only
Deterministic: fixed seeds, random weights, nothing downloaded; the same torch build writes the same
bytes (checked by running it twice). After regenerating, re-run axqc on each model and update the
README and the expectation tables of tests/unit/real_exports_test.cc and (after `axqc fix`)
tests/unit/fix_real_exports_test.cc.

Kinds of model (see README.md for each one):
  spec_*    written to follow the ax quant spec as closely as torch's exporter allows: activations
            U8 per-tensor (S8 where the spec asks for symmetric), weights S8 symmetric per-channel
            (axis 0; axis 1 for ConvTranspose), FP32 biases, qparams as registered buffers (which
            become initializers), a Q/DQ on every operator edge;
  defect_*  a spec_* model with exactly one deliberate defect;
  manual_*  the same CNN written the way users usually write it (relu6, HardSwish at opset 13),
            qparams as buffers or as Python numbers (the latter become Constant nodes);
  vit_*     a small ViT-style block (patch embedding, LayerNorm, attention with MatMul and Softmax,
            GELU MLP, residual Adds) with manual fake-quant written to the spec, dynamic batch;
  eager_qat_*, fx_qat_*  torch.ao.quantization QAT (eager prepare_qat, FX prepare_qat_fx) with
            non-fused FakeQuantize modules, observers calibrated on random data and then disabled;
            the fake-quant graph is exported as it is (no convert).
"""

import argparse
import hashlib
import io
import math
import os
import sys
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

# torch.ao.quantization pieces are imported lazily in the QAT builders.

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "tests", "data", "real_exports")

QRANGE = {"u8": (0, 255), "s8": (-128, 127)}


# ---------------------------------------------------------------------------------------------
# Manual fake-quant building blocks


class ActFQ(nn.Module):
    """Per-tensor activation fake-quant whose qparams are calibrated once on random data.

    style "buffer": scale and zero_point are registered buffers (exported as initializers).
    style "number": they are Python numbers in forward (exported as Constant nodes).
    kind "u8": asymmetric over [min, max] (min clamped to <= 0); "s8": symmetric, zero_point 0.
    relu=True: the range starts at 0, so a U8 zero_point is 0 (spec 5.15).
    """

    def __init__(self, kind="u8", style="buffer", relu=False):
        super().__init__()
        self.kind, self.style, self.relu = kind, style, relu
        self.calibrating = True
        self.lo, self.hi = 0.0, 0.0
        self.register_buffer("scale", torch.tensor(1.0))
        self.register_buffer("zero_point", torch.tensor(0, dtype=torch.int32))
        self.s, self.z = 1.0, 0

    def finalize(self):
        lo, hi = min(self.lo, 0.0), max(self.hi, 1e-3)
        if self.relu:
            lo = 0.0
        if self.kind == "s8":
            s, z = max(-lo, hi) / 127.0, 0
        else:
            s = (hi - lo) / 255.0
            z = int(min(255, max(0, round(-lo / s))))
        # Round the scale to a float32 value so that buffers and Python numbers agree.
        self.s = float(torch.tensor(s, dtype=torch.float32))
        self.z = z
        self.scale.fill_(self.s)
        self.zero_point.fill_(self.z)
        self.calibrating = False

    def forward(self, x):
        if self.calibrating:
            self.lo = min(self.lo, float(x.min()))
            self.hi = max(self.hi, float(x.max()))
            return x
        qmin, qmax = QRANGE[self.kind]
        if self.style == "buffer":
            return torch.fake_quantize_per_tensor_affine(x, self.scale, self.zero_point, qmin, qmax)
        return torch.fake_quantize_per_tensor_affine(x, self.s, self.z, qmin, qmax)


class WeightFQ(nn.Module):
    """Fake-quant of a constant weight (or bias) tensor, qparams computed from its values.

    mode "pc_s8": per-channel symmetric S8 along `axis` (the spec's weight form);
         "pt_s8": per-tensor symmetric S8;  "pc_u8": per-channel asymmetric U8 along `axis`.
    style "buffer": scale/zero_point are buffers; "number": they are built in forward from Python
    lists / numbers (Constant nodes), as a hand-written script usually does.
    """

    def __init__(self, weight, mode="pc_s8", axis=0, style="buffer"):
        super().__init__()
        self.mode, self.axis, self.style = mode, axis, style
        w = weight.detach()
        if mode == "pt_s8":
            s = torch.clamp(w.abs().max() / 127.0, min=1e-8)
            scale, zp = s.reshape(()), torch.tensor(0, dtype=torch.int32)
        else:
            dims = [d for d in range(w.dim()) if d != axis]
            hi = torch.amax(w, dim=dims)
            lo = torch.amin(w, dim=dims)
            if mode == "pc_s8":
                scale = torch.clamp(torch.maximum(hi.abs(), lo.abs()) / 127.0, min=1e-8)
                zp = torch.zeros_like(scale, dtype=torch.int32)
            else:  # pc_u8
                lo, hi = torch.clamp(lo, max=0.0), torch.clamp(hi, min=0.0)
                scale = torch.clamp((hi - lo) / 255.0, min=1e-8)
                zp = torch.clamp(torch.round(-lo / scale), 0, 255).to(torch.int32)
        self.register_buffer("scale", scale.float())
        self.register_buffer("zero_point", zp)
        self.scale_list = [float(v) for v in scale.reshape(-1)]
        self.zp_list = [int(v) for v in zp.reshape(-1)]

    def forward(self, w):
        qmin, qmax = (0, 255) if self.mode == "pc_u8" else (-128, 127)
        if self.mode == "pt_s8":
            if self.style == "buffer":
                return torch.fake_quantize_per_tensor_affine(w, self.scale, self.zero_point, qmin,
                                                             qmax)
            return torch.fake_quantize_per_tensor_affine(w, self.scale_list[0], self.zp_list[0],
                                                         qmin, qmax)
        if self.style == "buffer":
            scale, zp = self.scale, self.zero_point
        else:
            scale = torch.tensor(self.scale_list, dtype=torch.float32)
            zp = torch.tensor(self.zp_list, dtype=torch.int32)
        return torch.fake_quantize_per_channel_affine(w, scale, zp, self.axis, qmin, qmax)


def randomize_bn(bn):
    with torch.no_grad():
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.2, 0.2)
        bn.running_mean.uniform_(-0.2, 0.2)
        bn.running_var.uniform_(0.5, 2.0)


def calibrate(model, inputs):
    """Runs `model` on `inputs` with every ActFQ recording its range, then fixes the qparams."""
    model.eval()
    with torch.no_grad():
        for x in inputs:
            model(x)
    for m in model.modules():
        if isinstance(m, ActFQ):
            m.finalize()


# ---------------------------------------------------------------------------------------------
# The CNN: Conv+BN+ReLU, depthwise Conv+ReLU(6), residual Add, ConvTranspose, HardSwish,
# GlobalAveragePool, Flatten, Linear (Gemm).


class SmallCNN(nn.Module):
    """defect: None, "weight_per_tensor", "weight_u8", "missing_qdq", "convtranspose_axis0"."""

    def __init__(self, style="buffer", relu6=False, defect=None):
        super().__init__()
        self.relu6, self.defect = relu6, defect
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        randomize_bn(self.bn)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.up = nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.fc = nn.Linear(4, 6)
        conv_mode = {"weight_per_tensor": "pt_s8", "weight_u8": "pc_u8"}.get(defect, "pc_s8")
        self.conv_wq = WeightFQ(self.conv.weight, conv_mode, 0, style)
        self.dw_wq = WeightFQ(self.dw.weight, "pc_s8", 0, style)
        up_axis = 0 if defect == "convtranspose_axis0" else 1
        self.up_wq = WeightFQ(self.up.weight, "pc_s8", up_axis, style)
        self.fc_wq = WeightFQ(self.fc.weight, "pc_s8", 0, style)
        self.fq_in = ActFQ("u8", style)
        self.fq_conv = ActFQ("u8", style, relu=True)
        self.fq_dw = ActFQ("u8", style, relu=True)
        self.fq_add = ActFQ("u8", style)
        self.fq_up = ActFQ("u8", style)
        self.fq_hs = ActFQ("u8", style)
        self.fq_gap = ActFQ("u8", style)
        self.fq_fc = ActFQ("u8", style)

    def forward(self, x):
        x = self.fq_in(x)
        y = F.conv2d(x, self.conv_wq(self.conv.weight), self.conv.bias, padding=1)
        y = self.fq_conv(F.relu(self.bn(y)))
        z = F.conv2d(y, self.dw_wq(self.dw.weight), self.dw.bias, padding=1, groups=8)
        z = F.relu6(z) if self.relu6 else F.relu(z)
        if self.defect != "missing_qdq":
            z = self.fq_dw(z)
        y = self.fq_add(y + z)
        y = F.conv_transpose2d(y, self.up_wq(self.up.weight), self.up.bias, stride=2)
        y = self.fq_up(y)
        y = self.fq_hs(F.hardswish(y))
        y = self.fq_gap(F.adaptive_avg_pool2d(y, 1))
        y = self.fq_gap(torch.flatten(y, 1))  # a passive exit shares its entry's parameters
        y = F.linear(y, self.fc_wq(self.fc.weight), self.fc.bias)
        return self.fq_fc(y)


def cnn_inputs(n=4):
    g = torch.Generator().manual_seed(1234)
    return [torch.randn(2, 3, 8, 8, generator=g) for _ in range(n)]


def build_cnn(style="buffer", relu6=False, defect=None):
    torch.manual_seed(0)
    m = SmallCNN(style, relu6, defect)
    calibrate(m, cnn_inputs())
    return m, (torch.randn(1, 3, 8, 8),), None


# ---------------------------------------------------------------------------------------------
# The ViT-style block, manual fake-quant written to the spec: MatMul inputs symmetric S8
# per-tensor, weights of MatMul S8 per-tensor (MatMul takes per-tensor only), biases through
# Q/DQ (a static Add operand), a Q/DQ on every operator edge, passive Reshape/Transpose exits
# re-quantized with their entry's parameters. GELU is F.gelu, which torch 1.13 exports as
# Div/Erf/Add/Mul/Mul with Constant operands (ONNX Gelu exists only from opset 20).


class ManualLinear(nn.Module):
    """x @ W^T + b written as a MatMul with a pre-transposed S8 weight and a quantized bias."""

    def __init__(self, cin, cout, style, out_kind="s8"):
        super().__init__()
        # timm's ViT initialisation: truncated normal weights (std 0.02), zero biases.
        self.wt = nn.Parameter(nn.init.trunc_normal_(torch.empty(cin, cout), std=0.02))  # [in, out]
        self.b = nn.Parameter(torch.zeros(cout))
        self.wq = WeightFQ(self.wt, "pt_s8", 0, style)
        self.fq_b = ActFQ("s8", style)
        self.fq_mm = ActFQ("s8", style)
        self.fq_out = ActFQ(out_kind, style)

    def forward(self, x):
        y = self.fq_mm(torch.matmul(x, self.wq(self.wt)))
        return self.fq_out(y + self.fq_b(self.b))


class ViTBlock(nn.Module):
    def __init__(self, style="buffer", dim=16, heads=2, mlp=32, patch=4, img=16):
        super().__init__()
        self.dim, self.heads = dim, heads
        tokens = (img // patch) ** 2
        self.patch = nn.Conv2d(3, dim, patch, stride=patch)
        self.patch_wq = WeightFQ(self.patch.weight, "pc_s8", 0, style)
        self.pos = nn.Parameter(nn.init.trunc_normal_(torch.empty(1, tokens, dim), std=0.02))
        self.fq_in = ActFQ("u8", style)
        self.fq_embed = ActFQ("s8", style)
        self.fq_pos = ActFQ("s8", style)
        self.fq_tok = ActFQ("s8", style)
        self.ln1 = nn.LayerNorm(dim)
        self.fq_ln1 = ActFQ("s8", style)
        self.q = ManualLinear(dim, dim, style)
        self.k = ManualLinear(dim, dim, style)
        self.v = ManualLinear(dim, dim, style)
        self.fq_attn = ActFQ("s8", style)
        self.fq_soft = ActFQ("s8", style)
        self.fq_ctx = ActFQ("s8", style)
        self.proj = ManualLinear(dim, dim, style)
        self.fq_res1 = ActFQ("s8", style)
        self.ln2 = nn.LayerNorm(dim)
        self.fq_ln2 = ActFQ("s8", style)
        self.fc1 = ManualLinear(dim, mlp, style, out_kind="u8")
        self.fq_gelu = ActFQ("s8", style)
        self.fc2 = ManualLinear(mlp, dim, style)
        self.fq_res2 = ActFQ("s8", style)
        with torch.no_grad():  # 1/sqrt(d) folded into the query weights: no static Mul operand
            self.q.wt.mul_(1.0 / math.sqrt(dim // heads))
            self.q.wq = WeightFQ(self.q.wt, "pt_s8", 0, style)

    def heads_split(self, t, fq):
        b = t.shape[0]
        t = t.reshape(b, -1, self.heads, self.dim // self.heads).permute(0, 2, 1, 3)
        return fq(t)  # passive exit re-quantized with the entry's parameters

    def forward(self, x):
        x = self.fq_in(x)
        t = F.conv2d(x, self.patch_wq(self.patch.weight), self.patch.bias, stride=4)
        t = self.fq_embed(t)
        t = self.fq_embed(t.flatten(2).transpose(1, 2))
        t = self.fq_tok(t + self.fq_pos(self.pos))
        # attention
        h = self.fq_ln1(self.ln1(t))
        q = self.heads_split(self.q(h), self.q.fq_out)
        k = self.k(h)
        k = self.k.fq_out(self.heads_split(k, self.k.fq_out).transpose(-2, -1))
        v = self.heads_split(self.v(h), self.v.fq_out)
        a = self.fq_soft(torch.softmax(self.fq_attn(torch.matmul(q, k)), dim=-1))
        c = self.fq_ctx(torch.matmul(a, v))
        c = self.fq_ctx(c.transpose(1, 2).reshape(c.shape[0], -1, self.dim))
        t = self.fq_res1(t + self.proj(c))
        # MLP
        h = self.fq_ln2(self.ln2(t))
        h = self.fq_gelu(F.gelu(self.fc1(h)))
        return self.fq_res2(t + self.fc2(h))


def build_vit(style="buffer"):
    torch.manual_seed(0)
    m = ViTBlock(style)
    g = torch.Generator().manual_seed(4321)
    calibrate(m, [torch.randn(2, 3, 16, 16, generator=g) for _ in range(4)])
    return m, (torch.randn(1, 3, 16, 16),), {"x": {0: "batch"}, "y": {0: "batch"}}


# ---------------------------------------------------------------------------------------------
# torch.ao.quantization QAT (eager and FX), exported without convert.


def qat_qconfig():
    """Activations quint8 per-tensor affine, weights qint8 per-channel symmetric along axis 0.

    Plain FakeQuantize (the fused FusedMovingAvgObsFakeQuantize of the default QAT qconfigs has
    no ONNX symbolic). This is what torch users get for a "U8 activations, S8 weights" setup.
    """
    from torch.ao.quantization import (FakeQuantize, MovingAverageMinMaxObserver,
                                       MovingAveragePerChannelMinMaxObserver, QConfig)
    act = FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                                 dtype=torch.quint8, qscheme=torch.per_tensor_affine)
    wt = FakeQuantize.with_args(observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128,
                                quant_max=127, dtype=torch.qint8,
                                qscheme=torch.per_channel_symmetric, ch_axis=0)
    return QConfig(activation=act, weight=wt)


def qat_calibrate_and_freeze(m, inputs):
    from torch.ao.quantization import disable_observer
    m.train()
    with torch.no_grad():
        for x in inputs:
            m(x)
    m.apply(disable_observer)
    m.eval()
    return m


class EagerQATNet(nn.Module):
    def __init__(self):
        super().__init__()
        from torch.ao.quantization import DeQuantStub, QuantStub
        self.quant, self.dequant = QuantStub(), DeQuantStub()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.relu2 = nn.ReLU()
        self.add = torch.nn.quantized.FloatFunctional()
        self.up = nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.hs = nn.Hardswish()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(4, 6)

    def forward(self, x):
        x = self.quant(x)
        y = self.relu(self.bn(self.conv(x)))
        z = self.relu2(self.dw(y))
        y = self.add.add(y, z)
        y = self.hs(self.up(y))
        y = self.pool(y).flatten(1)
        return self.dequant(self.fc(y))


def build_eager_qat():
    from torch.ao.quantization import fuse_modules_qat, prepare_qat
    torch.manual_seed(0)
    m = EagerQATNet()
    randomize_bn(m.bn)
    m.qconfig = qat_qconfig()
    m.train()
    fuse_modules_qat(m, [["conv", "bn", "relu"], ["dw", "relu2"]], inplace=True)
    prepare_qat(m, inplace=True)
    qat_calibrate_and_freeze(m, cnn_inputs())
    return m, (torch.randn(1, 3, 8, 8),), None


class FXNet(nn.Module):
    """torchvision's MobileNetV2 InvertedResidual (Conv-BN-ReLU6, depthwise, residual Add) with a
    ConvTranspose, HardSwish, pooling and a Linear head."""

    def __init__(self):
        super().__init__()
        from torchvision.models.mobilenetv2 import InvertedResidual
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.block = InvertedResidual(8, 8, 1, 2)
        self.up = nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.hs = nn.Hardswish()
        self.fc = nn.Linear(4, 6)
        for mod in self.modules():
            if isinstance(mod, nn.BatchNorm2d):
                randomize_bn(mod)

    def forward(self, x):
        y = self.block(F.relu(self.stem(x)))
        y = self.hs(self.up(y))
        y = F.adaptive_avg_pool2d(y, 1).flatten(1)
        return self.fc(y)


class FXTransformer(nn.Module):
    """A pre-norm transformer encoder block on [batch, tokens, dim] built from nn.Linear."""

    def __init__(self, dim=16, heads=2, mlp=32):
        super().__init__()
        self.heads, self.dim = heads, dim
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, mlp)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(mlp, dim)

    def forward(self, x):
        b, n, d = 1, 16, self.dim  # FX symbolic tracing: static shapes
        h = self.ln1(x)
        qkv = self.qkv(h).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        a = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * (d // self.heads) ** -0.5, dim=-1)
        c = torch.matmul(a, v).transpose(1, 2).reshape(b, n, d)
        x = x + self.proj(c)
        return x + self.fc2(self.act(self.fc1(self.ln2(x))))


def build_fx(net, example):
    from torch.ao.quantization import QConfigMapping
    from torch.ao.quantization.quantize_fx import prepare_qat_fx
    torch.manual_seed(0)
    m = net().train()
    pm = prepare_qat_fx(m, QConfigMapping().set_global(qat_qconfig()), (example,))
    g = torch.Generator().manual_seed(99)
    qat_calibrate_and_freeze(pm, [torch.randn(*example.shape, generator=g) for _ in range(4)])
    return pm, (torch.randn(*example.shape),), None


# ---------------------------------------------------------------------------------------------

MODELS = [
    # name, opset, builder, description
    ("spec_cnn_op17", 17, lambda: build_cnn("buffer"),
     "CNN written to the spec, buffer qparams (manual fake-quant)"),
    ("defect_weight_per_tensor_op17", 17, lambda: build_cnn("buffer", defect="weight_per_tensor"),
     "spec_cnn with the first Conv weight per-tensor S8"),
    ("defect_weight_u8_op17", 17, lambda: build_cnn("buffer", defect="weight_u8"),
     "spec_cnn with the first Conv weight per-channel asymmetric U8"),
    ("defect_missing_qdq_op17", 17, lambda: build_cnn("buffer", defect="missing_qdq"),
     "spec_cnn without the Q/DQ between depthwise Conv+Relu and the residual Add"),
    ("defect_convtranspose_axis0_op17", 17,
     lambda: build_cnn("buffer", defect="convtranspose_axis0"),
     "spec_cnn with the ConvTranspose weight per-channel along axis 0 (torch's default ch_axis)"),
    ("manual_cnn_buffers_op13", 13, lambda: build_cnn("buffer", relu6=True),
     "the CNN with relu6, buffer qparams, opset 13 (HardSwish -> HardSigmoid + Mul)"),
    ("manual_cnn_buffers_op17", 17, lambda: build_cnn("buffer", relu6=True),
     "the CNN with relu6, buffer qparams, opset 17"),
    ("manual_cnn_numbers_op13", 13, lambda: build_cnn("number", relu6=True),
     "the CNN with relu6, Python-number qparams, opset 13"),
    ("manual_cnn_numbers_op17", 17, lambda: build_cnn("number", relu6=True),
     "the CNN with relu6, Python-number qparams, opset 17"),
    ("vit_manual_buffers_op17", 17, lambda: build_vit("buffer"),
     "ViT-style block written to the spec, buffer qparams, dynamic batch, opset 17"),
    ("vit_manual_numbers_op17", 17, lambda: build_vit("number"),
     "ViT-style block written to the spec, Python-number qparams, dynamic batch, opset 17"),
    ("vit_manual_numbers_op13", 13, lambda: build_vit("number"),
     "ViT-style block, Python-number qparams, opset 13 (LayerNorm decomposed)"),
    ("eager_qat_cnn_op13", 13, build_eager_qat,
     "eager prepare_qat: fused ConvBnReLU2d, ConvReLU2d, FloatFunctional add, ConvTranspose, "
     "Hardswish, Linear"),
    ("fx_qat_cnn_op17", 17, lambda: build_fx(FXNet, torch.randn(1, 3, 8, 8)),
     "FX prepare_qat_fx: torchvision InvertedResidual, ConvTranspose, Hardswish, Linear"),
    ("fx_qat_transformer_op13", 13, lambda: build_fx(FXTransformer, torch.randn(1, 16, 16)),
     "FX prepare_qat_fx: transformer block (Linear, LayerNorm, MatMul, Softmax, GELU)"),
]


def export(model, args, opset, dynamic_axes):
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, f, opset_version=opset, input_names=["x"],
                          output_names=["y"], dynamic_axes=dynamic_axes)
    return f.getvalue()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--only", help="comma-separated model names")
    a = ap.parse_args()
    if a.list:
        for name, opset, _, desc in MODELS:
            print(f"{name}.onnx: {desc}")
        return 0
    only = set(a.only.split(",")) if a.only else None
    os.makedirs(a.out, exist_ok=True)
    torch.use_deterministic_algorithms(True)
    for name, opset, build, _ in MODELS:
        if only and name not in only:
            continue
        model, args, dyn = build()
        data = export(model, args, opset, dyn)
        if len(data) >= 1 << 20:
            raise SystemExit(f"{name}: {len(data)} bytes, over the 1 MB budget")
        path = os.path.join(a.out, name + ".onnx")
        with open(path, "wb") as fh:
            fh.write(data)
        print(f"{name + '.onnx':40s} {len(data):7d} bytes  sha256 {hashlib.sha256(data).hexdigest()[:16]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
